#!/usr/bin/env python3
"""Write a CDI spec in the shape another program writes, for a driver root (the fake driver).

    foreign-specs.py --root=ROOT --writer=WRITER --output=FILE [--version=V] [--format=json|yaml]
                     [--hook=PATH] [--claim-uid=UID] [--mps-dir=DIR]

WRITER:
  nvidia-ctk      `nvidia-ctk cdi generate --driver-root=ROOT` (toolkit 1.18): kind nvidia.com/gpu, devices
                  by index, by UUID and all; common edits: NVIDIA_CTK_LIBCUDA_DIR and
                  NVIDIA_VISIBLE_DEVICES=void, the control nodes by path, the driver's files as
                  ro,nosuid,nodev,rbind,rprivate mounts at their own paths, and createContainer hooks running
                  `nvidia-cdi-hook create-symlinks | enable-cuda-compat | update-ldcache |
                  disable-device-node-modification` with env NVIDIA_CTK_DEBUG=false.
  device-plugin   the Kubernetes device plugin's /var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json: the same
                  edits (nvcdi) under kind k8s.device-plugin.nvidia.com/gpu, devices by UUID and all; its
                  older hook form `nvidia-ctk hook SUBCOMMAND`.
  dra-base        NVIDIA's DRA kubelet plugin's k8s.gpu.nvidia.com-device_base.yaml: kind
                  k8s.gpu.nvidia.com/device, devices gpu-N, the same common edits.
  dra-claim       its k8s.gpu.nvidia.com-claim_UID.yaml for a claim that shares a GPU through MPS: kind
                  k8s.gpu.nvidia.com/claim, device UID-gpu-0 with CUDA_MPS_PIPE_DIRECTORY and the
                  claim's shm and pipe directories (under --mps-dir) bind-mounted.

--version names another driver version in every versioned path and argument (the files then do
not exist): the spec as it was before a driver upgrade.  The YAML is written as Go's CDI producer
writes it (a "---" line, keys sorted, strings quoted only where YAML would read them otherwise).
Only the standard (Debian) layout of the fake driver is supported.
"""
import argparse
import json
import os
import re
import sys

LIBDIR = "/usr/lib/x86_64-linux-gnu"
PROGRAMS = ["nvidia-cuda-mps-control", "nvidia-cuda-mps-server", "nvidia-debugdump", "nvidia-persistenced", "nvidia-smi"]
RO = ["ro", "nosuid", "nodev", "rbind", "rprivate"]


def driver_version(root):
    with open(os.path.join(root, "proc/driver/nvidia/version")) as f:
        m = re.search(r"Kernel Module(?: for [a-z0-9_]+)?\s+([0-9]+\.[0-9.]+)", f.read())
    if not m:
        sys.exit("foreign-specs: no driver version in %s/proc/driver/nvidia/version" % root)
    return m.group(1)


def gpus(root):
    """(minor, uuid) of each GPU, from /proc/driver/nvidia/gpus/*/information."""
    out = []
    base = os.path.join(root, "proc/driver/nvidia/gpus")
    for bus in sorted(os.listdir(base)):
        info = {}
        with open(os.path.join(base, bus, "information")) as f:
            for line in f:
                k, _, v = line.partition(":")
                info[k.strip()] = v.strip()
        out.append((int(info["Device Minor"]), info["GPU UUID"]))
    return sorted(out)


def common_edits(root, real, named, hook_path, hook_args0):
    """The common containerEdits of nvcdi for a driver root."""
    rel = lambda p: "/" + os.path.relpath(p, root)
    libdir = os.path.join(root, LIBDIR.lstrip("/"))
    mounts, links = [], []
    for name in sorted(os.listdir(libdir)):
        path = os.path.join(libdir, name)
        if not name.endswith(".so." + real) or os.path.islink(path):
            continue
        host = path.replace(real, named)
        mounts.append({"hostPath": host, "containerPath": rel(host), "options": RO})
    for name in sorted(os.listdir(libdir)):
        path = os.path.join(libdir, name)
        if os.path.islink(path) and os.readlink(path).endswith(".so." + real):
            links += ["--link", "%s::%s" % (os.readlink(path).replace(real, named), rel(path))]
    for prog in PROGRAMS:
        p = os.path.join(root, "usr/bin", prog)
        if os.path.exists(p):
            mounts.append({"hostPath": p, "containerPath": rel(p), "options": RO})
    fw = os.path.join(root, "lib/firmware/nvidia", real)
    if os.path.isdir(fw):
        for name in sorted(os.listdir(fw)):
            host = os.path.join(fw, name).replace(real, named)
            mounts.append({"hostPath": host, "containerPath": rel(host), "options": RO})
    for cfg in ["usr/share/vulkan/icd.d/nvidia_icd.json", "usr/share/glvnd/egl_vendor.d/10_nvidia.json"]:
        p = os.path.join(root, cfg)
        if os.path.exists(p):
            dst = "/etc/vulkan/icd.d/nvidia_icd.json" if "vulkan" in cfg else rel(p)
            mounts.append({"hostPath": p, "containerPath": dst, "options": RO})
    nodes = []
    for n in ["nvidia-uvm", "nvidia-uvm-tools", "nvidiactl"]:
        if os.path.exists(os.path.join(root, "dev", n)):
            nodes.append({"path": "/dev/" + n, "hostPath": os.path.join(root, "dev", n)})

    def hook(*args):
        return {"hookName": "createContainer", "path": hook_path, "args": hook_args0 + list(args),
                "env": ["NVIDIA_CTK_DEBUG=false"]}

    hooks = [hook("create-symlinks", *links),
             hook("enable-cuda-compat", "--host-driver-version=" + named),
             hook("update-ldcache", "--folder", LIBDIR),
             hook("disable-device-node-modification")]
    return {"env": ["NVIDIA_CTK_LIBCUDA_DIR=" + LIBDIR, "NVIDIA_VISIBLE_DEVICES=void"],
            "deviceNodes": nodes, "hooks": hooks, "mounts": mounts}


def node(root, minor):
    return {"path": "/dev/nvidia%d" % minor, "hostPath": os.path.join(root, "dev/nvidia%d" % minor)}


def build(a):
    root = os.path.abspath(a.root)
    real = driver_version(root)
    named = a.version or real
    hook_path = a.hook or ("/usr/bin/nvidia-ctk" if a.writer == "device-plugin" else "/usr/bin/nvidia-cdi-hook")
    args0 = ["nvidia-ctk", "hook"] if os.path.basename(hook_path) == "nvidia-ctk" else ["nvidia-cdi-hook"]
    g = gpus(root)
    allnodes = [node(root, m) for m, _ in g]
    if a.writer == "dra-claim":
        uid = a.claim_uid
        mps = a.mps_dir or "/var/lib/kubelet/plugins/gpu.nvidia.com/mps/%s-1a2b3" % uid
        rw = ["rw", "nosuid", "nodev", "bind"]
        return {"cdiVersion": "0.5.0", "kind": "k8s.gpu.nvidia.com/claim",
                "devices": [{"name": "%s-gpu-%d" % (uid, g[0][0]), "containerEdits": {
                    "env": ["CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps"],
                    "mounts": [{"hostPath": mps + "/shm", "containerPath": "/dev/shm", "options": rw},
                               {"hostPath": mps + "/pipe", "containerPath": "/tmp/nvidia-mps", "options": rw}]}}]}
    edits = common_edits(root, real, named, hook_path, args0)
    devices = []
    if a.writer == "nvidia-ctk":
        kind = "nvidia.com/gpu"
        for m, u in g:
            devices.append({"name": str(m), "containerEdits": {"deviceNodes": [node(root, m)]}})
            devices.append({"name": u, "containerEdits": {"deviceNodes": [node(root, m)]}})
        devices.append({"name": "all", "containerEdits": {"deviceNodes": allnodes}})
    elif a.writer == "device-plugin":
        kind = "k8s.device-plugin.nvidia.com/gpu"
        for m, u in g:
            devices.append({"name": u, "containerEdits": {"deviceNodes": [node(root, m)]}})
        devices.append({"name": "all", "containerEdits": {"deviceNodes": allnodes}})
    else:
        kind = "k8s.gpu.nvidia.com/device"
        for m, _ in g:
            devices.append({"name": "gpu-%d" % m, "containerEdits": {"deviceNodes": [node(root, m)]}})
    return {"cdiVersion": "0.5.0", "kind": kind, "devices": devices, "containerEdits": edits}


PLAIN_UNSAFE = re.compile(r"""^$|^[?:,\[\]{}#&*!|>'"%@`~ ]|^-( |$)|: | #|\s$|^(true|false|null|yes|no|on|off|y|n|~)$"""
                          r"""|^[-+]?([0-9][0-9_]*|[0-9]*\.[0-9]+)([eE][-+]?[0-9]+)?$|^0[xo]""", re.IGNORECASE)


def scalar(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if PLAIN_UNSAFE.search(v) or any(c in v for c in "\n\t\"\\") or v.startswith("- "):
        return json.dumps(v)
    return v


def yaml_lines(v, indent):
    pad = " " * indent
    if isinstance(v, dict):
        for k in sorted(v):
            x = v[k]
            if isinstance(x, (dict, list)) and x:
                yield "%s%s:" % (pad, k)
                # Go's yaml writes a sequence under a key at the key's own indentation
                yield from yaml_lines(x, indent if isinstance(x, list) else indent + 2)
            else:
                yield "%s%s: %s" % (pad, k, scalar(x) if not isinstance(x, (dict, list)) else json.dumps(x))
    else:
        for x in v:
            if isinstance(x, dict) and x:
                sub = list(yaml_lines(x, indent + 2))
                yield "%s- %s" % (pad, sub[0][indent + 2:])
                yield from sub[1:]
            elif isinstance(x, list) and x:
                sub = list(yaml_lines(x, indent + 2))
                yield "%s- %s" % (pad, sub[0][indent + 2:])
                yield from sub[1:]
            else:
                yield "%s- %s" % (pad, scalar(x))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--root", required=True)
    p.add_argument("--writer", required=True, choices=["nvidia-ctk", "device-plugin", "dra-base", "dra-claim"])
    p.add_argument("--output", required=True)
    p.add_argument("--version")
    p.add_argument("--format", choices=["json", "yaml"])
    p.add_argument("--hook")
    p.add_argument("--claim-uid", default="2f1c2a9e-7c1b-4d7e-9a51-3b0c8d1e6f42")
    p.add_argument("--mps-dir")
    a = p.parse_args()
    spec = build(a)
    fmt = a.format or ("yaml" if a.output.endswith(".yaml") else "json")
    if fmt == "json":
        text = json.dumps(spec, indent=2) + "\n"
    else:
        text = "---\n" + "\n".join(yaml_lines(spec, 0)) + "\n"
    with open(a.output, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
