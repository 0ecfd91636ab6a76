#!/bin/bash
# Container-start overhead of gpu-hook on this CPU machine, with the fake driver (tests/fake-driver).
#
#   bash bench/bench.sh [BUILD_DIR]     (as root; default build dir: $GH_BUILD_DIR, else build)
#
# Prints markdown: the machine, then the start-up table of bench/starts.sh (`runc run /bin/true` in
# GH_BENCH_ROUNDS shuffled rounds, default 31, GH_BENCH_PAUSE s before every start, seed
# GH_BENCH_SEED: no hook, a /bin/true hook, gpu-hook on a non-GPU container, the hook path with all
# of the fake driver's 2 GPUs, with NVIDIA_REQUIRE_CUDA on a warm and a cold driver-state cache, and
# the CDI path; median, p90 and the difference to "no hook" within the same rounds), the phases
# gpu-hook and cdi-hook logged on those starts, peak RSS per kind; then `gpu-cli configure` alone for
# the 2-, 8- and 64-GPU profiles and the cost per extra GPU; the driver-state cache table (shuffled
# rounds, each kind followed by a plain start), `gpu-cli info` from proc, cache and NVML, and the
# fingerprint's cost.  Rows whose feature has not landed say "not landed".
set -u
here=$(cd "$(dirname "$0")" && pwd)
export GH_SOURCE_DIR=${GH_SOURCE_DIR:-$(dirname "$here")}
BUILD=${1:-${GH_BUILD_DIR:-$GH_SOURCE_DIR/build}}
export GH_BUILD_DIR=$(cd "$BUILD" 2>/dev/null && pwd) || { echo "bench: no build dir $BUILD; build first (meson setup $BUILD && ninja -C $BUILD)" >&2; exit 1; }
export GPU_CLI=$GH_BUILD_DIR/cli/gpu-cli GPU_HOOK=$GH_BUILD_DIR/hook/gpu-hook
. "$GH_SOURCE_DIR/tests/lib.sh"
. "$here/common.sh"
. "$here/starts.sh"

[ "$(id -u)" -eq 0 ] || { echo "bench: needs root (runc)" >&2; exit 1; }
have_cmd "$RUNC" || { echo "bench: runc is not installed" >&2; exit 1; }
[ -x "$GPU_CLI" ] && [ -x "$GPU_HOOK" ] || { echo "bench: no gpu-cli/gpu-hook in $GH_BUILD_DIR; build first" >&2; exit 1; }

make_busybox_rootfs "$T/rootfs" || exit 1
make_busybox_rootfs "$T/rootfs-glibc" --glibc || exit 1

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

echo "# gpu-hook container-start overhead, CPU machine, fake driver ($(date -u +%Y-%m-%d))"
echo
bench_machine_info
echo
if [ -z "${ROOTS[2]:-}" ]; then
        echo "no fake driver root: no start-up table"
else
        echo "## start-up: runc run /bin/true, busybox + glibc image with its own ld.so.cache, 2 fake GPUs"
        echo
        bench_starts "${ROOTS[2]}" "$T/rootfs-glibc"
        echo
        echo "Δ columns: the kind's time minus \"no hook\"'s; \"median of per-round differences\" pairs the two starts of the same round."
        echo
        echo "## phases logged by gpu-hook (timings_us) and cdi-hook on those starts, medians in µs"
        echo
        bench_starts_phases
        echo
        echo "## peak RSS"
        echo
        bench_starts_rss "${GH_BENCH_RSS_RUNS:-5}"
        echo
fi
echo "## gpu-cli configure alone"
echo

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
if [ -n "${ROOTS[2]:-}" ]; then
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
