#!/bin/bash
# Container-start overhead of gpu-hook on this CPU machine, with the fake driver (tests/fake-driver).
#
#   bash bench/bench.sh [BUILD_DIR]     (as root; default build dir: $GH_BUILD_DIR, else build)
#
# Prints a markdown table: medians (and min/max) of GH_BENCH_RUNS (default 15) runs of
#   - `runc run /bin/true` without a hook (the baseline of the ratios, measured in the same run),
#   - the same with gpu-hook as createRuntime hook on a non-GPU container and on a GPU container
#     (fake 2-GPU driver, NVIDIA_VISIBLE_DEVICES=all, compute,utility),
#   - `gpu-cli configure` alone for the 2-, 8- and 64-GPU profiles, and the cost per extra GPU;
# then the driver-state cache table (bench_statecache_table in common.sh: interleaved rounds, each
# a plain start, gpu-hook with all GPUs, NVIDIA_REQUIRE_CUDA on a warm and a cold cache, and a plain
# start right after each), `gpu-cli info` from proc, cache and NVML, and the fingerprint's cost.
# Rows whose feature has not landed say "not landed".
set -u
here=$(cd "$(dirname "$0")" && pwd)
export GH_SOURCE_DIR=${GH_SOURCE_DIR:-$(dirname "$here")}
BUILD=${1:-${GH_BUILD_DIR:-$GH_SOURCE_DIR/build}}
export GH_BUILD_DIR=$(cd "$BUILD" 2>/dev/null && pwd) || { echo "bench: no build dir $BUILD; build first (meson setup $BUILD && ninja -C $BUILD)" >&2; exit 1; }
export GPU_CLI=$GH_BUILD_DIR/cli/gpu-cli GPU_HOOK=$GH_BUILD_DIR/hook/gpu-hook
. "$GH_SOURCE_DIR/tests/lib.sh"
. "$here/common.sh"

[ "$(id -u)" -eq 0 ] || { echo "bench: needs root (runc)" >&2; exit 1; }
have_cmd "$RUNC" || { echo "bench: runc is not installed" >&2; exit 1; }
[ -x "$GPU_CLI" ] && [ -x "$GPU_HOOK" ] || { echo "bench: no gpu-cli/gpu-hook in $GH_BUILD_DIR; build first" >&2; exit 1; }

make_busybox_rootfs "$T/rootfs" || exit 1

# Fake driver roots, one per profile.
declare -A ROOTS
MAKE_ROOT=$GH_SOURCE_DIR/tests/fake-driver/make-root.sh
PROFILES=$GH_SOURCE_DIR/tests/fake-driver/profiles
for p in default:2 8gpu-mig:8 64gpu:64; do
        name=${p%%:*} n=${p##*:}
        if [ -f "$MAKE_ROOT" ] && [ -f "$PROFILES/$name.json" ] &&
                bash "$MAKE_ROOT" "$T/driver-$n" --profile "$PROFILES/$name.json" >"$T/make-root-$n.log" 2>&1; then
                ROOTS[$n]=$T/driver-$n
        else
                echo "bench: no fake driver root for $n GPUs ($(tail -n 1 "$T/make-root-$n.log" 2>/dev/null || echo "make-root.sh missing"))" >&2
        fi
done

echo "# gpu-hook container-start overhead, CPU machine, fake driver ($(date -u +%Y-%m-%d), $(nproc) cores, $("$RUNC" --version | head -n 1))"
echo

bench_runc_baselines "$T/rootfs"

# hook_bundle NAME ROOT ENV...: a /bin/true bundle with gpu-hook (config: cli.root=ROOT).
hook_bundle() {
        local b=$T/$1 root=$2
        shift 2
        make_bundle "$b" "$T/rootfs" /bin/true
        printf '{"cli": {"root": "%s", "path": "%s"}, "log": {"file": "%s"}}\n' "$root" "$GPU_CLI" "$T/gpu-hook.log" \
                >"$b/gpu-hook.json"
        bundle_add_hook "$b" createRuntime "$GPU_HOOK" "--config=$b/gpu-hook.json" createRuntime
        [ $# -gt 0 ] && bundle_set_env "$b" "$@"
        return 0
}

hook_bundle nongpu "${ROOTS[2]:-/}"
bench_measure "gpu-hook, non-GPU container" runc "$T/nongpu"
if [ -n "${ROOTS[2]:-}" ]; then
        hook_bundle gpu "${ROOTS[2]}" NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=compute,utility
        bench_measure "gpu-hook, GPU container (2 fake GPUs, all, compute,utility)" runc "$T/gpu"
else
        bench_note "gpu-hook, GPU container (2 fake GPUs)" "no fake driver root"
fi

declare -A CONF_MED
for n in 2 8 64; do
        what="gpu-cli configure alone, $n fake GPUs (all, compute,utility)"
        [ -n "${ROOTS[$n]:-}" ] || { bench_note "$what" "no fake driver root"; continue; }
        BENCH_CLI_GLOBAL="--root=${ROOTS[$n]}" bench_write_configure_hook "$T/time-configure-$n"
        make_bundle "$T/conf-$n" "$T/rootfs" /bin/true
        bundle_add_hook "$T/conf-$n" createRuntime "$T/time-configure-$n" "$T/conf-$n.samples" "$GPU_CLI" \
                "$T/rootfs" --device=all --compute --utility
        if bench_runc "$T/conf-$n" && bench_samples_from "$T/conf-$n.samples"; then
                bench_row "$what"
                CONF_MED[$n]=$BENCH_LAST_MEDIAN
        else
                bench_note "$what" "failed: ${BENCH_ERR//|/\\|}"
        fi
done

bench_print
if [ -n "${CONF_MED[2]:-}" ] && [ -n "${CONF_MED[64]:-}" ]; then
        echo
        awk -v a="${CONF_MED[2]}" -v b="${CONF_MED[64]}" \
                'BEGIN { printf "configure cost per extra GPU (64 vs 2 GPUs): %.2f ms\n", (b - a) / 62 / 1000 }'
fi

# ---- driver-state cache ------------------------------------------------------------------------
if [ $hook_ok = 1 ] && [ -n "${ROOTS[2]:-}" ]; then
        STATE=$T/state/driver-state.json
        printf '{"cli": {"root": "%s", "path": "%s", "state-file": "%s"}, "log": {"file": "%s"}}\n' \
                "${ROOTS[2]}" "$GPU_CLI" "$STATE" "$T/gpu-hook.log" >"$T/gpu-hook-cache.json"
        echo
        echo "## driver-state cache (2 fake GPUs; the fake NVML costs what a process start and dlopen cost, not what the real one does)"
        echo
        bench_statecache_table "$T/gpu-hook-cache.json" "$T/gpu-hook-cache.json" "$STATE"
        bench_print_il
        echo
        BENCH_TABLE=() BENCH_BASELINE=""
        "$GPU_CLI" --root="${ROOTS[2]}" --state-file="$STATE" cache refresh >/dev/null
        bench_measure "gpu-cli info --fast (proc)" cmd "$GPU_CLI" --root="${ROOTS[2]}" --state-file="$STATE" info --fast
        bench_measure "gpu-cli info, warm cache" cmd "$GPU_CLI" --root="${ROOTS[2]}" --state-file="$STATE" info
        bench_measure "gpu-cli info --no-cache (NVML)" cmd "$GPU_CLI" --root="${ROOTS[2]}" --state-file="$STATE" info --no-cache
        bench_print
        echo
        echo "driver-state $("$GPU_CLI" --root="${ROOTS[2]}" cache fingerprint --repeat=2000 2>&1)"
fi
