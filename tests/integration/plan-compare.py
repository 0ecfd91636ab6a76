#!/usr/bin/env python3
"""Compares a plan (gpu-cli list --json) with what a container saw.

usage: plan-compare.py PLAN.json BASELINE.txt CONFIGURED.txt PROC.txt

BASELINE/CONFIGURED: the listing the container printed without and with the driver ("c PATH MAJ:MIN"
in hex, "f PATH", "l PATH TARGET", "s PATH", "d PATH", "o PATH"); PROC: the names under
/proc/driver/nvidia in the configured container.  Prints one line per difference; exits 1 if any.
"""
import json
import sys


def listing(path):
    out = {}
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split(" ", 2)
            if len(parts) < 2:
                continue
            kind, p = parts[0], parts[1]
            extra = parts[2] if len(parts) > 2 else ""
            if kind == "c":
                maj, mn = extra.split(":")
                extra = "%d:%d" % (int(maj, 16), int(mn, 16))
            out[p] = (kind, extra)
    return out


def main():
    plan = json.load(open(sys.argv[1]))
    base, conf = listing(sys.argv[2]), listing(sys.argv[3])
    proc = set(l.strip() for l in open(sys.argv[4]) if l.strip())
    want = {}
    for d in plan["devices"]:
        want[d["container_path"]] = ("c", "%d:%d" % (d["major"], d["minor"]))
    for sec in ("libraries", "binaries", "firmwares", "configs"):
        for e in plan.get(sec, []):
            want[e["container_path"]] = ("f", "")
    for e in plan["ipcs"]:
        want[e["container_path"]] = ("d" if e["type"] == "directory" else "s", "")
    for e in plan["links"]:
        want[e["container_path"]] = ("l", e["target"])
    if plan["ldcache"]:
        want["/etc/ld.so.cache"] = ("f", "")
    # The image's top-level links (/lib -> usr/lib): planned paths are seen through them.
    links = {p: t for p, (k, t) in base.items() if k == "l" and p.count("/") == 1 and not t.startswith("/")}

    def seen(p):
        top = "/" + p.split("/")[1]
        return "/" + links[top] + p[len(top):] if top in links and p != top else p

    want = {seen(p): v for p, v in want.items()}
    added = {p: v for p, v in conf.items() if base.get(p) != v}
    removed = sorted(p for p in base if p not in conf)
    bad = []
    for p in sorted(set(want) | set(added)):
        if p not in want and added[p][0] == "d":
            continue  # a parent directory created for a planned entry
        if p not in added and p in base and base[p] == want.get(p):
            continue  # already in the image as planned
        if want.get(p) != added.get(p):
            bad.append("%s: planned %s, container has %s" % (p, want.get(p), added.get(p)))
    for p in removed:
        bad.append("%s: in the image, gone after configure" % p)
    wproc = set(plan["proc"]["files"]) | set("gpus/" + b for b in plan["proc"]["gpus"])
    if plan["proc"]["masked"]:
        wproc.add("gpus")
    if wproc != proc:
        bad.append("/proc/driver/nvidia: planned %s, container has %s" % (sorted(wproc), sorted(proc)))
    for b in bad:
        print(b)
    print("compared %d planned entries" % len(want), file=sys.stderr)
    return 1 if bad else 0


sys.exit(main())
