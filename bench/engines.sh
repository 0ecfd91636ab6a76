#!/bin/bash
# Container start with and without a GPU, per engine: Debian 13's Docker 26 and podman 5.4 in the
# engine bed (tests/engine/bed.sh), the fake driver (tests/fake-driver), this CPU machine.
#
#   bash bench/engines.sh [BUILD_DIR]     (as root; enters the bed by itself)
#
# Every round runs each kind once, in a new random order, with a fixed pause before each start
# (GH_BENCH_SPACING, default 0.3 s), so that drift and the after-effects of one start hit every kind
# alike.  GH_BENCH_RUNS rounds (default 15) after GH_BENCH_WARMUP (2).  A start is the whole client
# command (`docker run --rm`, `podman run --rm`) of /bin/true.  Printed: median, p90, min and the
# difference of medians to the kind's no-GPU baseline on the same engine, in wall time and in CPU
# time (user + system of everything the start ran: client, daemons, runtime, hooks, container).
#
# Kinds: Docker 26 none / --gpus all (prestart hook) / --device nvidia.com/gpu=all (CDI);
# podman 5.4 none / CDI / hooks.d (gpu-hook, NVIDIA_VISIBLE_DEVICES=all) / hooks.d without a GPU;
# and, to find where podman's CDI time goes, podman with CDI specs cut down to their mounts, to their
# hook, to their device nodes, and runc alone with the bundle podman would write for each path.
#
# More kinds: each file engines-NAME.sh beside this script is sourced after the built-in kinds are set up; it calls
#   bench_kind NAME BASELINE LABEL FUNCTION   (BASELINE: the no-GPU kind it is compared with, or "")
# for each kind, where FUNCTION starts one container and returns its status, and may define
# bench_extra_setup and bench_extra_teardown (called before the rounds and at exit).  The CRI kinds
# (containerd 1.7's CRI plugin with CDI) have a benchmark of their own: bench/cri.sh.
set -u
here=$(cd "$(dirname "$0")" && pwd)
export GH_SOURCE_DIR=${GH_SOURCE_DIR:-$(dirname "$here")}
BUILD=${1:-${GH_BUILD_DIR:-$GH_SOURCE_DIR/build}}
export GH_BUILD_DIR=$(cd "$BUILD" 2>/dev/null && pwd) || { echo "bench: no build dir $BUILD; build first" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "bench: needs root (the engine bed)" >&2; exit 1; }
if [ -z "${GH_BED:-}" ]; then
        exec bash "$GH_SOURCE_DIR/tests/engine/bed-run.sh" --env GH_BED=trixie -- bash "$here/engines.sh" "$GH_BUILD_DIR"
fi
export GPU_CLI=$GH_BUILD_DIR/cli/gpu-cli GPU_HOOK=$GH_BUILD_DIR/hook/gpu-hook
export GH_ENGINE_CONFIG=$GH_BUILD_DIR/tests/engine/engine-config.json
export GH_ENGINE_HOOK=$GH_BUILD_DIR/tests/engine/gpu-hook GH_ENGINE_RUNTIME=$GH_BUILD_DIR/tests/engine/gpu-runtime
. "$GH_SOURCE_DIR/tests/lib.sh"
. "$GH_SOURCE_DIR/tests/engine/engine.sh"
. "$here/common.sh"
RUNS=${GH_BENCH_RUNS:-15}
WARMUP=${GH_BENCH_WARMUP:-2}
SPACING=${GH_BENCH_SPACING:-0.3}

KINDS=()
declare -A KIND_BASE KIND_LABEL KIND_FN KIND_US KIND_CPU KIND_ERR
bench_kind() {
        KINDS+=("$1")
        KIND_BASE[$1]=$2 KIND_LABEL[$1]=$3 KIND_FN[$1]=$4 KIND_US[$1]="" KIND_CPU[$1]="" KIND_ERR[$1]=""
}

# CPU time too: on a shared machine wall time also counts waiting for a core.  The bench and all it
# starts (daemons, clients, runtimes, hooks) and every container's cgroup (--cgroup-parent) are in
# one cpuacct group, whose usage counts its children's even after they are gone.
CG_NAME=gh-bench-$$
CPU_CG=/sys/fs/cgroup/cpuacct/$CG_NAME
if [ -d /sys/fs/cgroup/cpuacct ] && mkdir "$CPU_CG" 2>/dev/null; then
        echo $$ >"$CPU_CG/cgroup.procs"
else
        CPU_CG=
fi
bench_cgroup_cleanup() {
        local d
        [ -n "$CPU_CG" ] || return 0
        echo $$ >/sys/fs/cgroup/cpuacct/cgroup.procs 2>/dev/null
        for d in /sys/fs/cgroup/*/"$CG_NAME"; do
                [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
        done
}
engine_setup >/dev/null
engine_write_config "{$(engine_runtime_json)}"
"$GPU_CLI" --root="$DRV" cdi generate --output="$T/spec.json" >/dev/null || { echo "bench: cdi generate failed" >&2; exit 1; }
# Cut-down copies of the spec under their own kinds: what each part of it costs.
"$GH_PYTHON" - "$T/spec.json" "$T" <<'PY'
import copy, json, sys
spec = json.load(open(sys.argv[1]))
out = sys.argv[2]
parts = {"mounts": ("mounts",), "hook": ("hooks", "env"), "nodes": ("deviceNodes",)}
for name, keep in parts.items():
    s = copy.deepcopy(spec)
    s["kind"] = "gpu-hook-bench.example/" + name
    for edits in [s["containerEdits"]] + [d["containerEdits"] for d in s["devices"]]:
        for k in list(edits):
            if k not in keep:
                del edits[k]
    s["devices"] = [d for d in s["devices"] if d["name"] == "all"]
    if not s["devices"][0]["containerEdits"]:
        s["devices"][0]["containerEdits"] = {"env": ["GH_BENCH=1"]}
    json.dump(s, open("%s/spec-%s.json" % (out, name), "w"))
PY
_gh_cdi_take || exit 1
for f in spec spec-mounts spec-hook spec-nodes; do
        install -m 0644 "$T/$f.json" "${GH_CDI_DIRS%% *}/gh-bench-$f.json"
done
NMOUNTS=$("$GH_PYTHON" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["containerEdits"]["mounts"]))' "$T/spec.json")

# ---- Docker 26 ------------------------------------------------------------------------------------
ln -sf "$GH_ENGINE_HOOK" "$ENGINE_HOOKDIR/nvidia-container-runtime-hook"
echo "{\"log-level\": \"warn\", \"features\": {\"cdi\": true}${CPU_CG:+, \"cgroup-parent\": \"/$CG_NAME\"}}" >"$T/daemon.json"
docker_start "$T/daemon.json" || { echo "bench: dockerd did not start" >&2; exit 1; }
docker_import gh-bench || { echo "bench: docker import failed" >&2; exit 1; }
DV=$(dk version --format '{{.Server.Version}}')
k_docker_none() { dk run --rm --network none gh-bench /bin/true; }
k_docker_gpus() { dk run --rm --network none --gpus all gh-bench /bin/true; }
k_docker_cdi() { dk run --rm --network none --device nvidia.com/gpu=all gh-bench /bin/true; }
bench_kind docker-none "" "Docker $DV, no GPU (baseline)" k_docker_none
bench_kind docker-gpus docker-none "Docker $DV --gpus all (prestart hook: gpu-hook)" k_docker_gpus
bench_kind docker-cdi docker-none "Docker $DV --device nvidia.com/gpu=all (CDI, $NMOUNTS mounts + cdi-hook)" k_docker_cdi

# ---- podman 5.4 -----------------------------------------------------------------------------------
mkdir -p "$T/hooks.d" "$T/nohooks"
printf '{"version": "1.0.0", "hook": {"path": "%s", "args": ["gpu-hook", "createRuntime"], "env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"]}, "when": {"always": true}, "stages": ["createRuntime"]}\n' \
        "$GH_ENGINE_HOOK" >"$T/hooks.d/oci-gpu-hook.json"
tar -C "$IMGROOT" -c . | _gh_podman import - gh-bench >/dev/null 2>&1 || { echo "bench: podman import failed" >&2; exit 1; }
PV=$(_gh_podman version --format '{{.Client.Version}}' 2>/dev/null)
pm() { _gh_podman --hooks-dir "$1" run --rm --network none ${CPU_CG:+--cgroup-parent "/$CG_NAME"} "${@:2}" localhost/gh-bench /bin/true; }
k_podman_none() { pm "$T/nohooks"; }
k_podman_cdi() { pm "$T/nohooks" --device nvidia.com/gpu=all; }
k_podman_hooks() { pm "$T/hooks.d" -e NVIDIA_VISIBLE_DEVICES=all; }
k_podman_hooks_none() { pm "$T/hooks.d"; }
k_podman_cdi_mounts() { pm "$T/nohooks" --device gpu-hook-bench.example/mounts=all; }
k_podman_cdi_hook() { pm "$T/nohooks" --device gpu-hook-bench.example/hook=all; }
k_podman_cdi_nodes() { pm "$T/nohooks" --device gpu-hook-bench.example/nodes=all; }
bench_kind podman-none "" "podman $PV, no GPU (baseline)" k_podman_none
bench_kind podman-cdi podman-none "podman $PV --device nvidia.com/gpu=all (CDI, $NMOUNTS mounts + cdi-hook)" k_podman_cdi
bench_kind podman-hooks podman-none "podman $PV hooks.d gpu-hook, NVIDIA_VISIBLE_DEVICES=all" k_podman_hooks
bench_kind podman-hooks-none podman-none "podman $PV hooks.d gpu-hook, no GPU asked" k_podman_hooks_none
bench_kind podman-cdi-mounts podman-none "  podman CDI, the spec's $NMOUNTS mounts only" k_podman_cdi_mounts
bench_kind podman-cdi-hook podman-none "  podman CDI, the spec's cdi-hook only" k_podman_cdi_hook
bench_kind podman-cdi-nodes podman-none "  podman CDI, the spec's device nodes only" k_podman_cdi_nodes

# ---- runc alone, with the bundles each path makes -------------------------------------------------
mkdir -p "$T_RUNC_ROOT"
make_bundle "$T/b-none" "$IMGROOT" /bin/true
make_bundle "$T/b-hook" "$IMGROOT" /bin/true
bundle_set_env "$T/b-hook" NVIDIA_VISIBLE_DEVICES=all
bundle_add_hook "$T/b-hook" createRuntime "$GH_ENGINE_HOOK" createRuntime
make_bundle "$T/b-cdi" "$IMGROOT" /bin/true
"$GH_PYTHON" "$GH_SOURCE_DIR/tests/helpers/cdi-apply.py" --spec "$T/spec.json" "$T/b-cdi" nvidia.com/gpu=all
make_bundle "$T/b-mounts" "$IMGROOT" /bin/true
"$GH_PYTHON" "$GH_SOURCE_DIR/tests/helpers/cdi-apply.py" --spec "$T/spec-mounts.json" "$T/b-mounts" gpu-hook-bench.example/mounts=all
if [ -n "$CPU_CG" ]; then
        for b in none hook cdi mounts; do
                bundle_edit "$T/b-$b" 'c["linux"]["cgroupsPath"] = args[0]' "/$CG_NAME/runc-bench"
        done
fi
rv() { _gh_next_id bench; "$RUNC" --root "$T_RUNC_ROOT" run -b "$1" "$RUN_ID"; local rc=$?; "$RUNC" --root "$T_RUNC_ROOT" delete -f "$RUN_ID" >/dev/null 2>&1; return $rc; }
k_runc_none() { rv "$T/b-none"; }
k_runc_hook() { rv "$T/b-hook"; }
k_runc_cdi() { rv "$T/b-cdi"; }
k_runc_mounts() { rv "$T/b-mounts"; }
RV=$("$RUNC" --version | head -n 1 | awk '{print $3}')
bench_kind runc-none "" "runc $RV run, no GPU (baseline)" k_runc_none
bench_kind runc-hook runc-none "runc $RV run, gpu-hook createRuntime (what hooks.d gives runc)" k_runc_hook
bench_kind runc-cdi runc-none "runc $RV run, the CDI spec applied ($NMOUNTS mounts + cdi-hook)" k_runc_cdi
bench_kind runc-mounts runc-none "runc $RV run, the CDI spec's $NMOUNTS mounts only" k_runc_mounts

bench_extra_teardown() { :; }
for f in "$here"/engines-*.sh; do
        [ -f "$f" ] && . "$f"
done
declare -F bench_extra_setup >/dev/null && { bench_extra_setup || { echo "bench: bench_extra_setup failed" >&2; exit 1; }; }
trap 'bench_extra_teardown; _engine_cleanup; bench_cgroup_cleanup' EXIT

# ---- rounds ---------------------------------------------------------------------------------------
for ((r = 0; r < WARMUP + RUNS; r++)); do
        for k in $(printf '%s\n' "${KINDS[@]}" | shuf); do
                [ -n "${KIND_ERR[$k]}" ] && continue
                sleep "$SPACING"
                c0=0 c1=0
                [ -n "$CPU_CG" ] && read -r c0 <"$CPU_CG/cpuacct.usage"
                t0=$EPOCHREALTIME
                "${KIND_FN[$k]}" </dev/null >/dev/null 2>"$T/.bench.err"
                rc=$?
                t1=$EPOCHREALTIME
                [ -n "$CPU_CG" ] && read -r c1 <"$CPU_CG/cpuacct.usage"
                if [ $rc -ne 0 ]; then
                        KIND_ERR[$k]="exit $rc: $(tr '\n' ' ' <"$T/.bench.err" | head -c 200)"
                        continue
                fi
                ((r >= WARMUP)) && KIND_US[$k]+=" $(($(_us "$t1") - $(_us "$t0")))" KIND_CPU[$k]+=" $(((c1 - c0) / 1000))"
        done
done

# "median p90 min" in microseconds of the samples given (p90: nearest rank).
stats() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2); p = int(0.9 * NR + 0.999); print m, v[p], v[1] }'; }
echo "# Container start by engine, GPU vs no GPU (CPU machine, fake driver with $(ls -d "$DRV"/proc/driver/nvidia/gpus/* | wc -l) GPUs, $(nproc) cores, $(date -u +%Y-%m-%d))"
echo
echo "$RUNS shuffled rounds after $WARMUP warm-up, ${SPACING} s before each start; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
echo
echo "| kind | median ms | p90 ms | min ms | vs no GPU (median) | CPU ms (median) | CPU vs no GPU |"
echo "|---|---:|---:|---:|---:|---:|---:|"
declare -A MED CMED
for k in "${KINDS[@]}"; do
        if [ -n "${KIND_ERR[$k]}" ] || [ -z "${KIND_US[$k]}" ]; then
                echo "| ${KIND_LABEL[$k]} | failed: ${KIND_ERR[$k]//|/\\|} | | | |"
                continue
        fi
        # shellcheck disable=SC2086
        read -r med p90 min <<<"$(stats ${KIND_US[$k]})"
        MED[$k]=$med
        cmed=- cdiff=- diff=-
        if [ -n "$CPU_CG" ]; then
                # shellcheck disable=SC2086
                read -r cmed _ <<<"$(stats ${KIND_CPU[$k]})"
                CMED[$k]=$cmed
        fi
        b=${KIND_BASE[$k]}
        [ -n "$b" ] && [ -n "${MED[$b]:-}" ] && diff=$(awk -v a="$med" -v b="${MED[$b]}" 'BEGIN { printf "%+.1f", (a - b) / 1000 }')
        [ -n "$b" ] && [ -n "${CMED[$b]:-}" ] && cdiff=$(awk -v a="$cmed" -v b="${CMED[$b]}" 'BEGIN { printf "%+.1f", (a - b) / 1000 }')
        [ "$cmed" = - ] || cmed=$(_ms "$cmed")
        echo "| ${KIND_LABEL[$k]} | $(_ms "$med") | $(_ms "$p90") | $(_ms "$min") | $diff | $cmed | $cdiff |"
done
