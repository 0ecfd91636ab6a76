#!/bin/bash
# What gpu-runtime costs a container, on this CPU machine with the fake driver.
#
#   bash bench/runtime.sh [BUILD_DIR]     (as root; default build dir: $GH_BUILD_DIR, else build)
#
# Uses the engine-test copy of gpu-runtime (tests/engine/meson.build: its compiled-in configuration
# is in the build directory, written here under the same lock the tests take).  Rows:
#   - the wrapper alone: `/bin/true create --bundle B ID` vs `gpu-runtime create ...` execing
#     /bin/true, for a non-GPU bundle (read, decide, exec: the target is <= 1 ms) and a GPU bundle
#     (+ device lookup, rewrite of config.json), without and with a driver-state cache;
#   - whole starts: `runc run` of a /bin/true bundle directly (the baseline) and through gpu-runtime.
set -u
here=$(cd "$(dirname "$0")" && pwd)
export GH_SOURCE_DIR=${GH_SOURCE_DIR:-$(dirname "$here")}
BUILD=${1:-${GH_BUILD_DIR:-$GH_SOURCE_DIR/build}}
export GH_BUILD_DIR=$(cd "$BUILD" 2>/dev/null && pwd) || { echo "bench: no build dir $BUILD" >&2; exit 1; }
export GPU_CLI=$GH_BUILD_DIR/cli/gpu-cli GPU_HOOK=$GH_BUILD_DIR/hook/gpu-hook
export GH_ENGINE_CONFIG=$GH_BUILD_DIR/tests/engine/engine-config.json
RT=$GH_BUILD_DIR/tests/engine/gpu-runtime
. "$GH_SOURCE_DIR/tests/lib.sh"
. "$GH_SOURCE_DIR/tests/engine/engine.sh"
. "$here/common.sh"
[ "$(id -u)" -eq 0 ] || { echo "bench: needs root (runc)" >&2; exit 1; }
[ -x "$RT" ] || { echo "bench: no $RT; build first (ninja -C $GH_BUILD_DIR)" >&2; exit 1; }
BENCH_RUNS=${GH_BENCH_RUNS:-51}

engine_setup >/dev/null
echo "# gpu-runtime overhead, CPU machine, fake driver ($(date -u +%Y-%m-%d), $(nproc) cores, $("$RUNC" --version | head -n 1))"
echo

make_bundle "$T/plain" "$IMGROOT" /bin/true
make_bundle "$T/gpu" "$IMGROOT" /bin/true
bundle_set_env "$T/gpu" NVIDIA_VISIBLE_DEVICES=all
cp "$T/gpu/config.json" "$T/gpu.json"
engine_write_config '{"runtime": {"runtimes": ["/bin/true"]}}'

bench_measure "/bin/true create --bundle B ID (baseline of the wrapper rows)" cmd /bin/true create --bundle "$T/plain" id
BENCH_BASELINE=$BENCH_LAST_MEDIAN BENCH_BASELINE_WRAPPER=$BENCH_LAST_MEDIAN
bench_measure "gpu-runtime create, not a GPU container (execs /bin/true)" cmd "$RT" create --bundle "$T/plain" id
plain_med=$BENCH_LAST_MEDIAN
# A fresh copy of the GPU bundle each time: otherwise the second run finds the hook already there.
gpu_create() { cp "$T/gpu.json" "$T/gpu/config.json" && "$RT" create --bundle "$T/gpu" id; }
bench_measure "cp config.json (the next row's share)" cmd cp "$T/gpu.json" "$T/gpu/config.json"
bench_measure "cp + gpu-runtime create, GPU container (2 fake GPUs), no driver-state cache" cmd gpu_create
# With a driver-state cache ("state-file": the fake driver root has none by default; the host's
# driver has /run/gpu-hook/driver-state.json), the plan kept by the first create is used after it.
engine_write_config "{\"runtime\": {\"runtimes\": [\"/bin/true\"]}, \"cli\": {\"state-file\": \"$T/state.json\"}}"
bench_measure "cp + gpu-runtime create, GPU container (2 fake GPUs), plan kept in the cache" cmd gpu_create

engine_write_config "{$(engine_runtime_json)}"
BENCH_RUNS=${GH_BENCH_RUNS_RUNC:-15}
bench_runc_baselines "$IMGROOT"
RUNC=$RT bench_measure "gpu-runtime run /bin/true, not a GPU container" runc "$T/plain"
bench_print
echo
# CPU time (user + system) per call, from the kernel's accounting of the children: unlike wall time
# on a shared machine, it does not count time spent waiting for a core.  Calls interleaved.
engine_write_config '{"runtime": {"runtimes": ["/bin/true"]}}'
"$GH_PYTHON" - "$RT" "$T/plain" "${GH_BENCH_CPU_RUNS:-300}" <<'PY'
import os, resource, subprocess, sys
rt, bundle, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
cmds = {"baseline": ["/bin/true", "create", "--bundle", bundle, "id"],
        "wrapper": [rt, "create", "--bundle", bundle, "id"],
        "state": [rt, "state", "id"]}
cpu = {k: [] for k in cmds}
for i in range(n):
    for k, c in cmds.items():
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(c, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, check=True)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu[k].append((r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1e3)
mean = {k: sum(v) / len(v) for k, v in cpu.items()}
print("CPU time per call (mean of %d, interleaved): /bin/true %.3f ms; gpu-runtime create -> /bin/true %.3f ms "
      "(+%.3f ms: one more exec plus the work); gpu-runtime state -> /bin/true %.3f ms (the exec alone); "
      "reading config.json and deciding: %.3f ms" % (n, mean["baseline"], mean["wrapper"], mean["wrapper"] - mean["baseline"],
                                                   mean["state"], mean["wrapper"] - mean["state"]))
PY
echo "gpu-runtime's own cost for a non-GPU container: $(_ms $((plain_med - BENCH_BASELINE_WRAPPER))) ms (median difference of the first two rows; target <= 1 ms)"
