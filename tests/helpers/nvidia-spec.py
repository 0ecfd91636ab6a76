#!/usr/bin/env python3
"""Write a CDI spec in NVIDIA's format (what `nvidia-ctk cdi generate` 1.18 writes) for a driver root.

    nvidia-spec.py --sample FILE --root DIR --hook PATH [--ctk] [--driver-root-arg] [--version V]
                   [--drop-hook NAME]... [--no-env] [--hook-env K=V]... [--output FILE]

The sample (tests/data/nvidia-ctk-1.18-h200.json, written by NVIDIA's tool on the GPU machine) gives
the structure: its common edits (env, device nodes, read-only bind mounts, the createContainer hooks
create-symlinks, enable-cuda-compat, update-ldcache --folder, disable-device-node-modification) and
one device per index, per UUID and `all`.  This script keeps that structure and rewrites it for DIR:

- --root /: the sample as written (the GPU machine, whose paths it names), only the hook path changed;
- another root (the fake driver, its "local" layout is the GPU machine's): every host path P becomes
  DIR/P (the driver version of DIR replaces the sample's), mounts whose file DIR lacks are dropped,
  so are links to libraries DIR lacks; the GPU devices are DIR's (proc/driver/nvidia/gpus).

--hook PATH replaces the hooks' path; args[0] stays "nvidia-cdi-hook" (with --ctk: path PATH,
args "nvidia-ctk", "hook", ...: the older specs' form).  --driver-root-arg adds gpu-hook's
`--driver-root=DIR` to every hook (only needed where /proc/driver/nvidia is not the host's: the
fake driver).  --no-env drops the hooks' env (a spec that gives its hooks none); --hook-env adds
K=V to each hook's env.  Python 3 standard library only.
"""
import argparse
import json
import os
import re
import sys

SAMPLE_VERSION = "580.159.04"


def read(path):
    with open(path) as f:
        return f.read()


def driver_version(root):
    text = read(os.path.join(root, "proc/driver/nvidia/version"))
    m = re.search(r"NVRM version:.*?\b(\d+\.\d+(?:\.\d+)?)\b", text)
    if not m:
        sys.exit("nvidia-spec: no NVRM version in %s/proc/driver/nvidia/version" % root)
    return m.group(1)


def gpus(root):
    """(index, minor, uuid) of DIR's GPUs, indexed in bus id order like NVML."""
    base = os.path.join(root, "proc/driver/nvidia/gpus")
    out = []
    for i, bus in enumerate(sorted(os.listdir(base))):
        info = read(os.path.join(base, bus, "information"))
        minor = int(re.search(r"Device Minor:\s*(\d+)", info).group(1))
        uuid = re.search(r"GPU UUID:\s*(\S+)", info).group(1)
        out.append((i, minor, uuid))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sample", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--hook", required=True)
    ap.add_argument("--ctk", action="store_true")
    ap.add_argument("--driver-root-arg", action="store_true")
    ap.add_argument("--drop-hook", action="append", default=[])
    ap.add_argument("--no-env", action="store_true")
    ap.add_argument("--hook-env", action="append", default=[])
    ap.add_argument("--output", default="-")
    a = ap.parse_args()
    spec = json.loads(read(a.sample))
    root = os.path.abspath(a.root)
    identity = root == "/"
    ver = SAMPLE_VERSION if identity else driver_version(root)

    def host(p):
        p = p.replace(SAMPLE_VERSION, ver)
        if identity:
            return p
        q = root + p
        # the sample's /usr/share files are under the driver's share/ in the local layout
        if not os.path.exists(q) and p.startswith("/usr/share/"):
            q2 = root + "/usr/local/nvidia/share/" + p[len("/usr/share/"):]
            if os.path.exists(q2):
                return q2
        return q

    edits = spec["containerEdits"]
    mounts = []
    for m in edits["mounts"]:
        hp = host(m["hostPath"])
        if not os.path.exists(hp):
            continue
        mounts.append(dict(m, hostPath=hp, containerPath=m["containerPath"].replace(SAMPLE_VERSION, ver)))
    edits["mounts"] = mounts
    mounted = {m["containerPath"] for m in mounts}

    for n in edits["deviceNodes"]:
        if not identity:
            n["hostPath"] = root + n["path"]
    edits["deviceNodes"] = [n for n in edits["deviceNodes"] if os.path.exists(n.get("hostPath", n["path"]))]

    hooks = []
    for h in edits["hooks"]:
        args = [x.replace(SAMPLE_VERSION, ver) for x in h["args"]]
        sub = args[1]
        if sub in a.drop_hook:
            continue
        if sub == "create-symlinks" and not identity:
            kept = []
            for i in range(2, len(args) - 1, 2):
                target, link = args[i + 1].split("::")
                d = os.path.dirname(link)
                full = os.path.normpath(os.path.join(d, target))
                # a link to a library of the driver, or to another link this hook makes
                if full in mounted or any(full == x.split("::")[1] for x in args[3::2]):
                    kept += ["--link", args[i + 1]]
            if not kept:
                continue
            args = args[:2] + kept
        rest = args[1:]
        if a.driver_root_arg and not identity:
            rest = ["--driver-root=" + root] + rest
        args = (["nvidia-ctk", "hook"] if a.ctk else [args[0]]) + rest
        nh = {"hookName": h["hookName"], "path": a.hook, "args": args}
        env = [] if a.no_env else list(h.get("env", []))
        env += a.hook_env
        if env:
            nh["env"] = env
        hooks.append(nh)
    edits["hooks"] = hooks
    edits["env"] = [e.replace(SAMPLE_VERSION, ver) for e in edits["env"]]

    if not identity:
        devs = []
        g = gpus(root)
        for idx, minor, uuid in g:
            node = {"path": "/dev/nvidia%d" % minor, "hostPath": root + "/dev/nvidia%d" % minor}
            devs.append({"name": str(idx), "containerEdits": {"deviceNodes": [node]}})
            devs.append({"name": uuid, "containerEdits": {"deviceNodes": [dict(node)]}})
        devs.append({"name": "all", "containerEdits": {"deviceNodes": [
            {"path": "/dev/nvidia%d" % m, "hostPath": root + "/dev/nvidia%d" % m} for _, m, _ in g]}})
        spec["devices"] = devs
    out = json.dumps(spec)
    if a.output == "-":
        print(out)
    else:
        with open(a.output + ".tmp", "w") as f:
            f.write(out)
        os.rename(a.output + ".tmp", a.output)


if __name__ == "__main__":
    main()
