#!/bin/bash
# GPU-machine benchmark, markdown.  Runs THERE as root from the repo root with .gpukit carried (see
# prepare.sh), after run.sh:  bash tests/gpu/run.sh; bash tests/gpu/bench.sh
#
# Medians and min/max of GH_BENCH_RUNS (default 15) runs after warm-up: `runc run /bin/true` without a
# hook (the baseline of the ratios), with gpu-hook on a non-GPU container and on a GPU container
# (compute,utility, all GPUs); `gpu-cli configure` alone (timed inside a createRuntime hook);
# `gpu-cli info --fast` and `--nvml`; `nvidia-smi -L`; peak RSS of gpu-hook and gpu-cli.  A row whose
# feature has not landed says "not landed".  Then the driver-state cache table: interleaved rounds
# (GH_BENCH_RUNS, default 21) of a plain start, gpu-hook with all GPUs, gpu-hook with
# NVIDIA_REQUIRE_CUDA=cuda>=12.0 on a warm and on a cold cache, each followed by a plain start (the
# NVML after-effect); `gpu-cli info` from proc, the cache and NVML; the fingerprint's cost.  The
# cache file lives in the test's temp dir, never in /run.  --local measures on a machine without a GPU (the GPU
# rows then say so).
set -u
here=$(cd "$(dirname "$0")" && pwd)
LOCAL=0
[ "${1:-}" = --local ] && LOCAL=1
. "$here/kit.sh"
for f in "$REPO/bench/common.sh" "$KIT/bench/common.sh"; do [ -f "$f" ] && { . "$f"; break; }; done
[ "$(id -u)" -eq 0 ] || { echo "bench: needs root (runc)" >&2; exit 1; }

HAVE_GPU=0
[ -e /dev/nvidiactl ] && timeout 60 nvidia-smi -L >/dev/null 2>&1 && HAVE_GPU=1
if [ $HAVE_GPU = 0 ] && [ $LOCAL = 0 ]; then
        echo "bench: no NVIDIA GPU here (nvidia-smi -L fails); use --local to measure the rest" >&2
        exit 1
fi
NOGPU="no GPU here (--local)"
make_busybox_rootfs "$T/rootfs" || exit 1
printf '{"cli": {"root": "/", "path": "%s", "ldcache": "/etc/ld.so.cache"}, "log": {"file": "%s"}}\n' \
        "$GPU_CLI" "$T/gpu-hook.log" >"$T/gpu-hook.json"

echo "# gpu-hook on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1 ||
        echo 'no GPU'), $(date -u +%Y-%m-%d), $(nproc) cores, $("$RUNC" --version | head -n 1)"
echo

bench_runc_baselines "$T/rootfs"

# hook_bundle NAME ENV...: a /bin/true bundle with gpu-hook as its createRuntime hook.
hook_bundle() {
        local b=$T/$1
        shift
        make_bundle "$b" "$T/rootfs" /bin/true
        bundle_add_hook "$b" createRuntime "$GPU_HOOK" "--config=$T/gpu-hook.json" createRuntime
        [ $# -gt 0 ] && bundle_set_env "$b" "$@"
        return 0
}
GPU_ENV=(NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=compute,utility)

hook_bundle nongpu
bench_measure "runc + gpu-hook, non-GPU container" runc "$T/nongpu"
if [ $HAVE_GPU = 1 ]; then
        hook_bundle gpu "${GPU_ENV[@]}"
        bench_measure "runc + gpu-hook, GPU container (all, compute,utility)" runc "$T/gpu"
else
        bench_note "runc + gpu-hook, GPU container (all, compute,utility)" "$NOGPU"
fi

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

echo "## start-up time"
echo
bench_print
echo

# Peak RSS: gpu-hook measured in its real place (the hook's path is GNU time wrapping it).
echo "## peak RSS (largest single process)"
echo
echo "| process | peak RSS |"
echo "|---|---:|"
rss_row() { echo "| $1 | $2 |"; }
kib() { awk -v k="$1" 'BEGIN { printf "%.1f MiB", k / 1024 }'; }
time_bin=${GH_TIME:-$(command -v /usr/bin/time 2>/dev/null)}
if [ $HAVE_GPU = 0 ]; then
        rss_row "gpu-hook, GPU container" "$NOGPU"
elif [ -z "$time_bin" ]; then
        rss_row "gpu-hook, GPU container" "no GNU time here"
else
        make_bundle "$T/rss" "$T/rootfs" /bin/true
        bundle_add_hook "$T/rss" createRuntime "$time_bin" -f %M -o "$T/hook.rss" \
                "$GPU_HOOK" "--config=$T/gpu-hook.json" createRuntime
        bundle_set_env "$T/rss" "${GPU_ENV[@]}"
        if run_runc "$T/rss" rss && [ -s "$T/hook.rss" ]; then
                rss_row "gpu-hook (and the gpu-cli it runs), GPU container" "$(kib "$(tail -n 1 "$T/hook.rss")")"
        else
                rss_row "gpu-hook, GPU container" "failed: $(printf '%s' "$RUN_STDERR" | tail -n 1 | head -c 200)"
        fi
fi
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
