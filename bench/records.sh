#!/bin/bash
# What a container record costs the start path (docs/metrics.md#container-records), on the fake driver.
#
#   bash bench/records.sh [BUILD_DIR]     (as root; GH_BENCH_RUNS rounds, default 21)
#
# Each round starts, in shuffled order with a fixed pause between starts, a GPU container (fake 2-GPU
# driver, NVIDIA_VISIBLE_DEVICES=all) through gpu-hook with records on (containers.dir on a tmpfs)
# and with records off (containers.dir ""), each carrying containerd's CRI annotations.
# Prints medians and p90 of the whole `runc run` and of the hook log's own `record` phase (the
# record's write and its /proc read, timed inside gpu-hook), and the difference of the medians.
set -u
here=$(cd "$(dirname "$0")" && pwd)
export GH_SOURCE_DIR=${GH_SOURCE_DIR:-$(dirname "$here")}
BUILD=${1:-${GH_BUILD_DIR:-$GH_SOURCE_DIR/build}}
export GH_BUILD_DIR=$(cd "$BUILD" 2>/dev/null && pwd) || { echo "records: no build dir $BUILD" >&2; exit 1; }
export GPU_CLI=$GH_BUILD_DIR/cli/gpu-cli GPU_HOOK=$GH_BUILD_DIR/hook/gpu-hook
. "$GH_SOURCE_DIR/tests/lib.sh"
[ "$(id -u)" -eq 0 ] || { echo "records: needs root (runc)" >&2; exit 1; }
RUNS=${GH_BENCH_RUNS:-21}

make_busybox_rootfs "$T/rootfs" >/dev/null || exit 1
bash "$GH_SOURCE_DIR/tests/fake-driver/make-root.sh" "$T/drv" >"$T/mkroot.log" 2>&1 || { cat "$T/mkroot.log"; exit 1; }
mkdir -p "$T_RUNC_ROOT"
# /run, where records live, is a tmpfs on systemd hosts: measure on one (/dev/shm), not on the
# disk the temp dir may be on.
RECDIR=$(mktemp -d /dev/shm/gh-bench-records.XXXXXX 2>/dev/null || echo "$T/records")
trap 'rm -rf "$RECDIR"; _gh_cleanup' EXIT
for kind in on off; do
        dir=$RECDIR/records
        [ $kind = off ] && dir=
        printf '{"cli": {"root": "%s", "path": "%s"}, "log": {"file": "%s"}, "containers": {"dir": "%s"}}\n' \
                "$T/drv" "$GPU_CLI" "$T/hook-$kind.log" "$dir" >"$T/config-$kind.json"
        make_bundle "$T/b-$kind" "$T/rootfs" /bin/true
        bundle_set_env "$T/b-$kind" NVIDIA_VISIBLE_DEVICES=all
        bundle_add_hook "$T/b-$kind" createRuntime "$GPU_HOOK" "--config=$T/config-$kind.json" createRuntime
        bundle_edit "$T/b-$kind" 'c["annotations"] = {"io.kubernetes.cri.sandbox-name": "trainer-0",
  "io.kubernetes.cri.sandbox-namespace": "ml", "io.kubernetes.cri.container-name": "worker"}'
done

start() { # KIND: one timed `runc run`, its wall time in microseconds on stdout
        local t0 t1
        t0=$(date +%s%N)
        "$RUNC" --root "$T_RUNC_ROOT" run -b "$T/b-$1" "rec-$1-$$" </dev/null >/dev/null 2>"$T/run.err" ||
                { cat "$T/run.err" >&2; return 1; }
        t1=$(date +%s%N)
        echo $(((t1 - t0) / 1000))
}
for i in $(seq "$RUNS"); do
        for kind in $(printf 'on\noff\n' | shuf --random-source=<(yes "$i")); do
                start "$kind" >>"$T/wall-$kind" || exit 1
                sleep 0.2
        done
done
"$GH_PYTHON" - "$T" <<'EOF'
import json, statistics, sys
t = sys.argv[1]
def q(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p * (len(v) - 1))))]
rows = {}
for kind in ("on", "off"):
    wall = [int(l) for l in open("%s/wall-%s" % (t, kind))]
    rec = [json.loads(l)["timings_us"].get("record", 0) for l in open("%s/hook-%s.log" % (t, kind))]
    rows[kind] = (wall, rec)
print("| records | runs | runc run median (us) | p90 | hook's record phase median (us) | p90 |")
print("|---|---|---|---|---|---|")
for kind in ("on", "off"):
    wall, rec = rows[kind]
    print("| %s | %d | %d | %d | %d | %d |" % (kind, len(wall), statistics.median(wall), q(wall, 0.9),
                                             statistics.median(rec), q(rec, 0.9)))
print()
print("difference of the medians (on - off): runc run %+d us, record phase %+d us" % (
    statistics.median(rows["on"][0]) - statistics.median(rows["off"][0]),
    statistics.median(rows["on"][1]) - statistics.median(rows["off"][1])))
EOF
