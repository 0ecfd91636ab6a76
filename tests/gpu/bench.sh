#!/bin/bash
# GPU-machine benchmark, markdown.  Runs THERE as root from the repo root with .gpukit carried (see
# prepare.sh), after run.sh:  bash tests/gpu/run.sh; bash tests/gpu/bench.sh
#
# First the start-up table of bench/starts.sh (the same implementation as the CPU machine's
# bench/bench.sh): `runc run /bin/true` of a busybox + glibc image with its own ld.so.cache, in
# GH_BENCH_ROUNDS (default 31) rounds, every kind once per round in a new random order (seed
# GH_BENCH_SEED, printed), GH_BENCH_PAUSE (0.3) s before every start: no hook, a /bin/true hook,
# gpu-hook on a non-GPU container, the hook path with all GPUs (compute,utility), with
# NVIDIA_REQUIRE_CUDA=cuda>=12.0 on a warm and on a cold driver-state cache, and the CDI path (the
# spec of `gpu-cli cdi generate` applied by tests/helpers/cdi-apply.py, `gpu-cli cdi-hook` as
# createContainer hook); medians, p90, the difference to "no hook" within the same rounds; the phases
# gpu-hook and cdi-hook logged; peak RSS per kind.  Then medians and min/max of GH_BENCH_RUNS (default
# 15) runs of `gpu-cli configure` alone (timed inside a createRuntime hook), `gpu-cli info --fast`
# and `--nvml`, `nvidia-smi -L`; then the driver-state cache table (shuffled rounds, each kind followed
# by a plain start: the NVML after-effect); `gpu-cli info` from proc, the cache and NVML; the
# fingerprint's cost.  The cache files live in the test's temp dir, never in /run.  --local measures
# on a machine without a GPU (the GPU rows then say so); GH_BENCH_DRIVER_ROOT=DIR (with --local) runs
# the start-up table against that driver root, e.g. the fake driver's, to check this script on the
# CPU machine.  GH_BENCH_STARTS_ONLY=1 stops after the start-up table.
set -u
here=$(cd "$(dirname "$0")" && pwd)
LOCAL=0
[ "${1:-}" = --local ] && LOCAL=1
. "$here/kit.sh"
for d in "$REPO/bench" "$KIT/bench"; do [ -f "$d/starts.sh" ] && { . "$d/common.sh"; . "$d/starts.sh"; break; }; done
BS_APPLY=$REPO/tests/helpers/cdi-apply.py
[ -f "$BS_APPLY" ] || BS_APPLY=$KIT/tests/helpers/cdi-apply.py
[ "$(id -u)" -eq 0 ] || { echo "bench: needs root (runc)" >&2; exit 1; }

HAVE_GPU=0
[ -e /dev/nvidiactl ] && timeout 60 nvidia-smi -L >/dev/null 2>&1 && HAVE_GPU=1
if [ $HAVE_GPU = 0 ] && [ $LOCAL = 0 ]; then
        echo "bench: no NVIDIA GPU here (nvidia-smi -L fails); use --local to measure the rest" >&2
        exit 1
fi
NOGPU="no GPU here (--local)"
make_busybox_rootfs "$T/rootfs" || exit 1
# A bpffs at /sys/fs/bpf, as a host booted with systemd has (gpu-hook pins its device programs
# there, docs/performance.md): mounted with `gpu-cli setup bpffs` when missing, and unmounted again
# at the end, so the machine is left as it was.  GH_BENCH_BPFFS=as-is measures the host as it is.
BENCH_BPFFS="as found"
if [ "${GH_BENCH_BPFFS:-setup}" = setup ] && [ $HAVE_GPU = 1 ]; then
        case $("$GPU_CLI" setup bpffs 2>&1) in
        mounted*)
                BENCH_BPFFS="mounted for this run by gpu-cli setup bpffs (undone at the end)"
                bench_bpffs_undo() { _bench_saved_cleanup; "$GPU_CLI" setup bpffs --undo >/dev/null 2>&1; }
                eval "_bench_saved_cleanup() $(declare -f _gh_cleanup | tail -n +2)"
                trap bench_bpffs_undo EXIT
                ;;
        already*) BENCH_BPFFS="already mounted" ;;
        *) BENCH_BPFFS="none (gpu-cli setup bpffs failed)" ;;
        esac
fi

echo "# gpu-hook on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1 ||
        echo 'no GPU'), $(date -u +%Y-%m-%d)"
echo

bench_machine_info
echo "- bpffs at /sys/fs/bpf: $BENCH_BPFFS"
echo
START_ROOT=
[ $HAVE_GPU = 1 ] && START_ROOT=/
[ -n "${GH_BENCH_DRIVER_ROOT:-}" ] && START_ROOT=$GH_BENCH_DRIVER_ROOT
if [ -z "$START_ROOT" ]; then
        echo "## start-up: $NOGPU"
else
        make_busybox_rootfs "$T/rootfs-glibc" --glibc || exit 1
        echo "## start-up: runc run /bin/true, busybox + glibc image with its own ld.so.cache, driver root $START_ROOT"
        echo
        bench_starts "$START_ROOT" "$T/rootfs-glibc" "$([ "$START_ROOT" = / ] && echo /etc/ld.so.cache)"
        echo
        echo "## phases logged by gpu-hook (timings_us) and cdi-hook on those starts, medians in µs"
        echo
        bench_starts_phases
        echo
        echo "## peak RSS"
        echo
        bench_starts_rss "${GH_BENCH_RSS_RUNS:-5}"
fi
echo
# GH_BENCH_STARTS_ONLY=1: the start-up table, its phases and RSS, nothing after (a lease's minutes).
[ "${GH_BENCH_STARTS_ONLY:-0}" = 1 ] && exit 0

what="gpu-cli configure alone (--device=all --compute --utility)"
if [ $HAVE_GPU = 0 ]; then
        bench_note "$what" "$NOGPU"
else
        bench_write_configure_hook "$T/time-configure"
        make_bundle "$T/conf" "$T/rootfs" /bin/true
        bundle_add_hook "$T/conf" createRuntime "$T/time-configure" "$T/conf.samples" "$GPU_CLI" "$T/rootfs" \
                --device=all --compute --utility
        if bench_runc "$T/conf" && bench_samples_from "$T/conf.samples"; then
                bench_row "$what"
        else
                bench_note "$what" "failed: $BENCH_ERR"
        fi
fi

# The floor under every command row: starting a process at all (fork, exec, exit) from bash.
bench_measure "process start floor: /bin/true" cmd /bin/true
bench_measure "gpu-cli --version (gpu-cli start: its shared libraries, no work)" cmd "$GPU_CLI" --version
for mode in fast nvml; do
        if [ $HAVE_GPU = 0 ]; then
                bench_note "gpu-cli info --$mode" "$NOGPU"
        else
                bench_measure "gpu-cli info --$mode" cmd "$GPU_CLI" --no-cache info --$mode
        fi
done
if [ $HAVE_GPU = 1 ]; then
        bench_measure "nvidia-smi -L" cmd nvidia-smi -L
else
        bench_note "nvidia-smi -L" "$NOGPU"
fi

echo "## configure alone, gpu-cli and nvidia-smi"
echo
bench_print
echo

echo "## peak RSS of gpu-cli info (largest single process)"
echo
echo "| process | peak RSS |"
echo "|---|---:|"
rss_row() { echo "| $1 | $2 |"; }
kib() { awk -v k="$1" 'BEGIN { printf "%.1f MiB", k / 1024 }'; }
for mode in fast nvml; do
        if [ $HAVE_GPU = 0 ]; then
                rss_row "gpu-cli info --$mode" "$NOGPU"
        elif k=$(bench_rss "$GPU_CLI" --no-cache info --$mode); then
                rss_row "gpu-cli info --$mode" "$(kib "$k")"
        else
                rss_row "gpu-cli info --$mode" "failed"
        fi
done

# ---- driver-state cache ------------------------------------------------------------------------
echo
echo "## driver-state cache: CUDA images without NVML"
echo
if [ $HAVE_GPU = 0 ]; then
        echo "not measured: $NOGPU"
else
        STATE=$T/state/driver-state.json
        printf '{"cli": {"root": "/", "path": "%s", "ldcache": "/etc/ld.so.cache", "state-file": "%s"}, "log": {"file": "%s"}}\n' \
                "$GPU_CLI" "$STATE" "$T/gpu-hook.log" >"$T/gpu-hook-cache.json"
        bench_statecache_table "$T/gpu-hook-cache.json" "$T/gpu-hook-cache.json" "$STATE"
        bench_print_il
        echo
        BENCH_TABLE=() BENCH_BASELINE=""
        "$GPU_CLI" --state-file="$STATE" cache refresh >/dev/null
        bench_measure "gpu-cli info --fast (proc)" cmd "$GPU_CLI" --state-file="$STATE" info --fast
        bench_measure "gpu-cli info, warm cache" cmd "$GPU_CLI" --state-file="$STATE" info
        bench_measure "gpu-cli info --no-cache (NVML)" cmd "$GPU_CLI" --state-file="$STATE" info --no-cache
        if "$GPU_CLI" info --help 2>&1 | grep -q -- '--cuda-only'; then
                bench_measure "gpu-cli info --cuda-only (CUDA version from libcuda, no NVML, no cuInit)" cmd \
                        "$GPU_CLI" --state-file="$STATE" info --cuda-only
        fi
        bench_print
        echo
        # Item 3: is the CUDA version alone (libcuda's cuDriverGetVersion, no cuInit) markedly cheaper
        # than NVML for a cold cache, and does it leave no after-effect?  Each as a createRuntime hook
        # (the place it would run), each followed by a plain start.
        if "$GPU_CLI" info --help 2>&1 | grep -q -- '--cuda-only'; then
                BENCH_TABLE=() BENCH_BASELINE=""
                make_bundle "$T/il-base2" "$T/rootfs" /bin/true
                make_bundle "$T/il-libcuda" "$T/rootfs" /bin/true
                bundle_add_hook "$T/il-libcuda" createRuntime "$GPU_CLI" --no-cache info --cuda-only
                make_bundle "$T/il-nvml" "$T/rootfs" /bin/true
                bundle_add_hook "$T/il-nvml" createRuntime "$GPU_CLI" --no-cache info
                bench_interleave base:"$T/il-base2" libcuda:"$T/il-libcuda" after-libcuda:"$T/il-base2" \
                        nvml:"$T/il-nvml" after-nvml:"$T/il-base2"
                bench_il_row base "no hook (baseline)" baseline
                bench_il_row libcuda "hook: gpu-cli info --cuda-only (libcuda cuDriverGetVersion, no cuInit)"
                bench_il_row after-libcuda "  no hook, right after the one above"
                bench_il_row nvml "hook: gpu-cli --no-cache info (NVML)"
                bench_il_row after-nvml "  no hook, right after the one above"
                echo
                echo "### cold cache: the CUDA version from libcuda alone vs NVML"
                echo
                bench_print_il
                echo
        fi
        echo "driver-state $("$GPU_CLI" cache fingerprint --repeat=5000 2>&1)"
        echo
        echo "fingerprint inputs here:"
        "$GPU_CLI" cache fingerprint 2>&1 | cut -c1-160 | sed 's/^/    /'
fi
