#!/bin/bash
# What a GPU costs a pod's container start through the CRI: containerd 1.7 (Debian 13's, in the
# engine bed, tests/engine/bed.sh), set up by contrib/kubernetes/node-install.sh, fake driver.
#
#   bash bench/cri.sh [BUILD_DIR]     (as root; default build dir: $GH_BUILD_DIR, else build)
#
# One sandbox per kind, kept; every start is CreateContainer + StartContainer of a /bin/true
# container in it, timed by tests/helpers/cri-client.py (bench), kinds shuffled every round, starts
# spaced by 0.3 s, medians.  Kinds (the pods are contrib/kubernetes/examples/, the GPU kinds get
# GPU 1 the way NVIDIA's device plugin gives it):
#   nogpu          pod-cdi.yaml without its GPU limit: runc, nothing of ours (the baseline)
#   nogpu-handler  the same through the "gpu" handler: gpu-runtime's cost for a pod without a GPU
#   envvar         pod-runtimeclass.yaml, device plugin envvar: gpu-runtime + gpu-hook
#   cdi-cri        pod-cdi.yaml, device plugin cdi-cri: containerd applies the CDI spec, cdi-hook
#   cdi-annotations the same through the annotation
# GH_BENCH_RUNS rounds (15), GH_BENCH_WARMUP (2) not counted.
set -u
here=$(cd "$(dirname "$0")" && pwd)
export GH_SOURCE_DIR=${GH_SOURCE_DIR:-$(dirname "$here")}
BUILD=${1:-${GH_BUILD_DIR:-$GH_SOURCE_DIR/build}}
export GH_BUILD_DIR=$(cd "$BUILD" 2>/dev/null && pwd) || { echo "bench: no build dir $BUILD" >&2; exit 1; }
export GPU_CLI=$GH_BUILD_DIR/cli/gpu-cli GPU_HOOK=$GH_BUILD_DIR/hook/gpu-hook
export GH_ENGINE_CONFIG=$GH_BUILD_DIR/tests/engine/engine-config.json
export GH_ENGINE_HOOK=$GH_BUILD_DIR/tests/engine/gpu-hook GH_ENGINE_RUNTIME=$GH_BUILD_DIR/tests/engine/gpu-runtime
[ "$(id -u)" -eq 0 ] || { echo "bench: needs root (the engine bed)" >&2; exit 1; }
[ -x "$GH_ENGINE_RUNTIME" ] || { echo "bench: no $GH_ENGINE_RUNTIME; build first (ninja -C $GH_BUILD_DIR)" >&2; exit 1; }
if [ -z "${GH_BED:-}" ]; then
        GH_BENCH_COMMIT=$(git -C "$GH_SOURCE_DIR" rev-parse --short HEAD 2>/dev/null) && export GH_BENCH_COMMIT
        exec bash "$GH_SOURCE_DIR/tests/engine/bed-run.sh" --env GH_BED=trixie -- bash "$here/cri.sh" "$GH_BUILD_DIR"
fi
. "$GH_SOURCE_DIR/tests/lib.sh"
. "$GH_SOURCE_DIR/tests/engine/engine.sh"
. "$GH_SOURCE_DIR/tests/engine/k8s.sh"
. "$GH_SOURCE_DIR/tests/engine/cri-node.sh"
why=$(cri_node_missing)
[ -z "$why" ] || { echo "bench: $why" >&2; exit 1; }
engine_setup >/dev/null
cri_node_prepare || { echo "bench: $CRI_ERR" >&2; exit 1; }
node_install install >"$T/install.log" || { cat "$T/install.log" >&2; exit 1; }
cri_node_start || { echo "bench: $CRI_ERR" >&2; exit 1; }
python3 -c 'import json, sys
p = json.load(open(sys.argv[1])); del p["spec"]["containers"][0]["resources"]
p["metadata"]["name"] = "no-gpu"; json.dump(p, open(sys.argv[2], "w"))
p["spec"]["runtimeClassName"] = "gpu"; p["metadata"]["name"] = "no-gpu-handler"; json.dump(p, open(sys.argv[3], "w"))' \
        "$T/m/pod-cdi.json" "$T/m/nogpu.json" "$T/m/nogpu-handler.json"

runs=${GH_BENCH_RUNS:-15} warmup=${GH_BENCH_WARMUP:-2}
echo "# Pod container start through the CRI, CPU machine, fake driver ($(date -u +%Y-%m-%d), $(nproc) cores)"
echo
echo "- $(containerd --version | cut -d' ' -f1,3), $(runc --version | head -n 1), Debian $(cat /etc/debian_version) bed; commit ${GH_BENCH_COMMIT:-unknown}"
echo "- load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
"${CRI[@]}" bench --rounds="$runs" --warmup="$warmup" --space=0.3 --host-network --log-dir="$T/logs" \
        --runtime-class="$T/m/runtimeclass.json" --gpus="$UUID1" --command='["/bin/true"]' --cgroup-parent=/gh-cri-bench-$$ \
        nogpu="$T/m/nogpu.json" nogpu-handler="$T/m/nogpu-handler.json" envvar="$T/m/pod-runtimeclass.json@envvar" \
        cdi-cri="$T/m/pod-cdi.json@cdi-cri" cdi-annotations="$T/m/pod-cdi.json@cdi-annotations" >"$T/bench.json" 2>"$T/bench.err" ||
        { echo "bench: cri-client bench failed: $(tail -n 3 "$T/bench.err")" >&2; exit 1; }
python3 - "$T/bench.json" "$runs" "$warmup" <<'PY'
import json, sys
r, runs, warmup = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
label = {"nogpu": "no GPU, runc (baseline)", "nogpu-handler": "no GPU, handler gpu (gpu-runtime)",
         "envvar": "1 GPU, device plugin envvar (gpu-runtime + gpu-hook)",
         "cdi-cri": "1 GPU, device plugin cdi-cri (containerd applies the spec, cdi-hook)",
         "cdi-annotations": "1 GPU, device plugin cdi-annotations"}
base = r["nogpu"]["median_ms"]
print(f"| CreateContainer + StartContainer ({runs} shuffled rounds after {warmup} warm-up) | median ms | min ms | max ms | vs no GPU |")
print("|---|---:|---:|---:|---:|")
for k in label:
    v = r[k]
    print(f"| {label[k]} | {v['median_ms']:.1f} | {v['min_ms']:.1f} | {v['max_ms']:.1f} | {v['median_ms'] / base:.2f}x (+{v['median_ms'] - base:.1f} ms) |")
PY
for d in /sys/fs/cgroup/*/gh-cri-bench-$$; do
        [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
done
exit 0
