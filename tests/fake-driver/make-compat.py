#!/usr/bin/env python3
"""Put a CUDA forward-compatibility package into an image's root, as NVIDIA's CUDA images carry one.

    make-compat.py ROOTFS KIND [--artifacts DIR] [--host-file FILE] [--dir DIR] [--pid PID]

The package goes to /usr/local/cuda-X.Y/compat with /usr/local/cuda -> cuda-X.Y (a relative link,
as in NVIDIA's images): libcuda.so.VERSION (the fake libcuda reporting the newer CUDA it brings,
with the compatibility ELF note), libnvidia-ptxjitcompiler.so.VERSION, and their SONAME and
libcuda.so links.  --dir DIR puts the files in DIR instead (no cuda link).

KIND, the real packages built by meson (tests/fake-driver/meson.build, README.md):
  newer        590.44.01, note lists branch 580: preferred on the fake driver 580.95.05
  samebranch   580.105.08, note lists 580: preferred (same branch, newer)
  older        575.57.08, note lists up to 575: not preferred
  otherbranch  590.44.01, note lists 535,550,570,590 (not 580): not preferred
  nonote       590.44.01 without the note: preferred by the major-version rule (590 > 580)
  badnote      590.44.01 whose note is not JSON: not preferred
and the hostile ones (never preferred, never opened):
  link-out     libcuda.so.590.44.01 is a symlink to --host-file, a file outside the root
  link-in      libcuda.so.590.44.01 is a symlink to the real library elsewhere in the image
  directory    libcuda.so.590.44.01 is a directory
  proc-root    /usr/local/cuda/compat is a symlink to /proc/PID/root/usr/local/cuda/compat (--pid,
               default 1: a host process whose root holds a newer package, found by a resolver that
               follows the link on the host)
  two          two libcuda.so.X.Y files
Prints the compat directory (a container path).  Python 3 standard library only.
"""
import argparse
import os
import shutil
import sys

PACKAGES = {"newer": "590.44.01", "samebranch": "580.105.08", "older": "575.57.08",
            "otherbranch": "590.44.01", "nonote": "590.44.01", "badnote": "590.44.01"}
CUDA = {"590.44.01": "13.1", "580.105.08": "13.0", "575.57.08": "12.9"}


def artifacts_dir(given):
    for d in (given, os.environ.get("FAKE_DRIVER_DIR"),
              os.path.join(os.environ.get("GH_BUILD_DIR", ""), "tests/fake-driver")):
        if d and os.path.exists(os.path.join(d, "compat-newer-libcuda.so.590.44.01")):
            return d
    sys.exit("make-compat.py: no built compat libraries; run ninja or give --artifacts")


def install(art, kind, root, cdir, version):
    os.makedirs(root + cdir, exist_ok=True)
    for lib, soname in (("libcuda", "libcuda.so.1"), ("libnvidia-ptxjitcompiler", "libnvidia-ptxjitcompiler.so.1")):
        name = "%s.so.%s" % (lib, version)
        shutil.copy(os.path.join(art, "compat-%s-%s" % (kind, name)), root + cdir + "/" + name)
        os.chmod(root + cdir + "/" + name, 0o755)
        os.symlink(name, root + cdir + "/" + soname)
    os.symlink("libcuda.so.1", root + cdir + "/libcuda.so")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rootfs")
    ap.add_argument("kind")
    ap.add_argument("--artifacts")
    ap.add_argument("--host-file")
    ap.add_argument("--dir")
    ap.add_argument("--pid", default="1")
    a = ap.parse_args()
    art = artifacts_dir(a.artifacts)
    root = os.path.abspath(a.rootfs)
    kind = a.kind
    version = PACKAGES.get(kind, "590.44.01")
    if a.dir:
        cdir = a.dir
    else:
        top = "/usr/local/cuda-%s" % CUDA[version]
        cdir = top + "/compat"
        os.makedirs(root + "/usr/local", exist_ok=True)
        if not os.path.lexists(root + "/usr/local/cuda"):
            os.symlink(os.path.basename(top), root + "/usr/local/cuda")
    if kind in PACKAGES:
        install(art, kind, root, cdir, version)
    elif kind in ("link-out", "link-in", "directory", "two"):
        install(art, "newer", root, cdir, version)
        lib = root + cdir + "/libcuda.so." + version
        if kind == "two":
            shutil.copy(lib, root + cdir + "/libcuda.so.591.1.1")
        elif kind == "link-in":
            os.makedirs(root + "/opt/elsewhere", exist_ok=True)
            os.rename(lib, root + "/opt/elsewhere/libcuda.so." + version)
            # relative: it resolves inside the image however it is followed
            depth = cdir.strip("/").count("/") + 1
            os.symlink("../" * depth + "opt/elsewhere/libcuda.so." + version, lib)
        elif kind == "link-out":
            if not a.host_file:
                sys.exit("make-compat.py: link-out needs --host-file")
            os.remove(lib)
            os.symlink(a.host_file, lib)
        else:
            os.remove(lib)
            os.makedirs(lib)
    elif kind == "proc-root":
        if a.dir:
            sys.exit("make-compat.py: proc-root uses /usr/local/cuda/compat")
        os.makedirs(root + "/usr/local/cuda-13.1", exist_ok=True)
        os.symlink("/proc/%s/root/usr/local/cuda/compat" % a.pid, root + "/usr/local/cuda-13.1/compat")
    else:
        sys.exit("make-compat.py: unknown kind %r" % kind)
    print("/usr/local/cuda/compat" if not a.dir else cdir)


if __name__ == "__main__":
    main()
