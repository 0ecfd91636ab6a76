#!/usr/bin/env python3
"""Apply CDI devices to an OCI bundle's config.json, the way a CDI-aware runtime front end does.

    cdi-apply.py --spec FILE [--spec FILE]... [--accept-versions 0.3.0,0.4.0,0.5.0] BUNDLE DEVICE...

DEVICE is a fully qualified name, VENDOR/CLASS=NAME (nvidia.com/gpu=0).  For tests on a machine
without podman (the GPU machine): the rules are those of the CDI reference library
(container-device-interface, the version podman 4.3 uses):

- every device must resolve to exactly one spec (kind VENDOR/CLASS, a device NAME) or nothing is
  changed and the exit status is 1 ("unresolvable CDI devices");
- a spec's own containerEdits are applied once, before the first of its devices' edits, and
  devices' edits in the order given;
- env: each K=V replaces an existing K in process.env, else it is appended;
- deviceNodes: hostPath defaults to path; type/major/minor missing (or major 0) are taken from
  stat(hostPath); uid/gid default to process.user's when those are non-zero; an existing
  linux.devices entry with the same path is replaced; an allow rule (type, major, minor,
  permissions or "rwm") is appended to linux.resources.devices;
- mounts: an existing mount with the same destination is removed, the new one appended, then all
  mounts are sorted by the number of path components of their destination, then by destination;
- hooks: appended to hooks[hookName] (prestart, createRuntime, createContainer, startContainer,
  poststart, poststop).

Python 3 standard library only.
"""
import json
import os
import re
import stat
import sys

HOOK_NAMES = ("prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop")


def die(msg):
    print("cdi-apply: " + msg, file=sys.stderr)
    sys.exit(1)


def check_name(kind_or_name, what, pattern):
    if not re.fullmatch(pattern, kind_or_name):
        die("invalid %s %r" % (what, kind_or_name))


def load_spec(path, versions):
    with open(path) as f:
        spec = json.load(f)
    for key in ("cdiVersion", "kind", "devices"):
        if key not in spec:
            die("%s: no %r" % (path, key))
    if spec["cdiVersion"] not in versions:
        die("%s: cdiVersion %s is not one of %s" % (path, spec["cdiVersion"], ", ".join(versions)))
    vendor, _, cls = spec["kind"].partition("/")
    check_name(vendor, "vendor", r"[A-Za-z]([A-Za-z0-9_.-]*[A-Za-z0-9])?")
    check_name(cls, "class", r"[A-Za-z]([A-Za-z0-9_-]*[A-Za-z0-9])?")
    names = set()
    for d in spec["devices"]:
        check_name(d.get("name", ""), "device name", r"[A-Za-z0-9]([A-Za-z0-9_.:-]*[A-Za-z0-9])?")
        if d["name"] in names:
            die("%s: device %r defined twice" % (path, d["name"]))
        names.add(d["name"])
        if "containerEdits" not in d:
            die("%s: device %r has no containerEdits" % (path, d["name"]))
    return spec


def apply_env(config, env):
    penv = config.setdefault("process", {}).setdefault("env", [])
    for kv in env:
        key = kv.split("=", 1)[0]
        if "=" not in kv or not key:
            die("invalid environment variable %r" % kv)
        for i, e in enumerate(penv):
            if e.split("=", 1)[0] == key:
                penv[i] = kv
                break
        else:
            penv.append(kv)


def apply_device(config, d):
    path = d["path"]
    host = d.get("hostPath") or path
    typ, major, minor = d.get("type", ""), d.get("major", 0), d.get("minor", 0)
    if not (typ and (major != 0 or typ == "p")):
        st = os.stat(host)
        htyp = "c" if stat.S_ISCHR(st.st_mode) else "b" if stat.S_ISBLK(st.st_mode) else \
            "p" if stat.S_ISFIFO(st.st_mode) else None
        if htyp is None:
            die("CDI host device %r is not a device" % host)
        if typ and typ != htyp:
            die("CDI device (%r, %r), host type mismatch (%s, %s)" % (path, host, typ, htyp))
        typ = htyp
        if major == 0 and typ != "p":
            major, minor = os.major(st.st_rdev), os.minor(st.st_rdev)
    perms = d.get("permissions", "") or "rwm"
    if any(c not in "rwm" for c in perms):
        die("device %r: invalid permissions %r" % (path, perms))
    dev = {"path": path, "type": typ, "major": major, "minor": minor}
    if "fileMode" in d:
        dev["fileMode"] = d["fileMode"]
    user = config.get("process", {}).get("user", {})
    for k, uk in (("uid", "uid"), ("gid", "gid")):
        if k in d:
            dev[k] = d[k]
        elif user.get(uk, 0) > 0:
            dev[k] = user[uk]
    lnx = config.setdefault("linux", {})
    devices = [x for x in lnx.get("devices", []) if x.get("path") != path]
    devices.append(dev)
    lnx["devices"] = devices
    if typ in ("b", "c"):
        lnx.setdefault("resources", {}).setdefault("devices", []).append(
            {"allow": True, "type": typ, "major": major, "minor": minor, "access": perms})


def apply_edits(config, edits):
    if edits.get("env"):
        apply_env(config, edits["env"])
    for d in edits.get("deviceNodes") or []:
        apply_device(config, d)
    mounts = edits.get("mounts") or []
    if mounts:
        for m in mounts:
            om = {"destination": m["containerPath"], "source": m["hostPath"]}
            if m.get("options"):
                om["options"] = m["options"]
            if m.get("type"):
                om["type"] = m["type"]
            config["mounts"] = [x for x in config.get("mounts", []) if x["destination"] != om["destination"]]
            config["mounts"].append(om)
        config["mounts"].sort(key=lambda x: (os.path.normpath(x["destination"]).count("/"), x["destination"]))
    for h in edits.get("hooks") or []:
        if h.get("hookName") not in HOOK_NAMES:
            die("unknown hook name %r" % h.get("hookName"))
        oh = {"path": h["path"]}
        for k in ("args", "env", "timeout"):
            if k in h:
                oh[k] = h[k]
        config.setdefault("hooks", {}).setdefault(h["hookName"], []).append(oh)


def main(argv):
    specs, versions, rest = [], ["0.3.0", "0.4.0", "0.5.0"], []
    i = 0
    while i < len(argv):
        if argv[i] == "--spec":
            specs.append(argv[i + 1])
            i += 2
        elif argv[i] == "--accept-versions":
            versions = argv[i + 1].split(",")
            i += 2
        else:
            rest.append(argv[i])
            i += 1
    if not specs or len(rest) < 2:
        die("usage: cdi-apply.py --spec FILE [--spec FILE]... BUNDLE VENDOR/CLASS=NAME...")
    bundle, wanted = rest[0], rest[1:]
    loaded = [(p, load_spec(p, versions)) for p in specs]
    edits, seen, unresolved = [], set(), []
    for q in wanted:
        kind, _, name = q.partition("=")
        found = [(p, s, d) for p, s in loaded if s["kind"] == kind for d in s["devices"] if d["name"] == name]
        if len(found) != 1:
            unresolved.append(q)
            continue
        p, s, d = found[0]
        if p not in seen:
            seen.add(p)
            if s.get("containerEdits"):
                edits.append(s["containerEdits"])
        edits.append(d["containerEdits"])
    if unresolved:
        die("unresolvable CDI devices %s" % ", ".join(unresolved))
    cfg = os.path.join(bundle, "config.json")
    with open(cfg) as f:
        config = json.load(f)
    for e in edits:
        apply_edits(config, e)
    with open(cfg + ".tmp", "w") as f:
        json.dump(config, f, indent=2)
    os.rename(cfg + ".tmp", cfg)


if __name__ == "__main__":
    main(sys.argv[1:])
