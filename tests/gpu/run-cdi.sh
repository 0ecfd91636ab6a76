#!/bin/bash
# CDI on the real driver, TAP.  Runs THERE (the GPU machine), as root, from the repo root, with the
# kit of tests/gpu/prepare.sh carried as .gpukit (like run.sh):
#
#   bash tests/gpu/run-cdi.sh
#   GH_CDI_ROOT=DIR bash tests/gpu/run-cdi.sh    any machine, a driver root such as the fake driver's
#                                                (no CUDA vector add then)
#
# That machine has no podman: the spec `gpu-cli cdi generate` writes for this driver is applied to
# runc bundles by tests/helpers/cdi-apply.py, which follows the CDI merge rules a CDI-aware engine
# uses (see its header).  Checked in the container: nvidia-smi, the CUDA vector add, the ld cache,
# the /proc/driver/nvidia mask.  Then the container start time through CDI and through gpu-hook
# for the same request, interleaved runs, medians (GH_CDI_RUNS, default 21).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/kit.sh"
for f in "$REPO/bench/common.sh" "$KIT/bench/common.sh"; do [ -f "$f" ] && { . "$f"; break; }; done
APPLY=$REPO/tests/helpers/cdi-apply.py
[ -f "$APPLY" ] || APPLY=$KIT/tests/helpers/cdi-apply.py

t_need_root
ROOT=${GH_CDI_ROOT:-/}
CLI=("$GPU_CLI")
[ "$ROOT" = / ] || CLI+=("--root=$ROOT")
if [ "$ROOT" = / ] && { ! [ -e /dev/nvidiactl ] || ! timeout 60 nvidia-smi -L >/dev/null 2>&1; }; then
        t_skip_all "no NVIDIA GPU here (nvidia-smi -L fails or /dev/nvidiactl is missing); GH_CDI_ROOT=DIR uses a driver root"
fi
have_cmd "$GH_PYTHON" || t_skip_all "python3 is not installed (tests/helpers/cdi-apply.py needs it)"
t_diag "gpu-cli: $GPU_CLI; runc: $RUNC; $(head -n 2 "$KIT/MANIFEST" 2>/dev/null | tr '\n' ' ')"

if [ "$ROOT" = / ]; then
        timeout 60 nvidia-smi --query-gpu=uuid --format=csv,noheader >"$T/uuids" 2>&1
else
        for d in $(ls "$ROOT/proc/driver/nvidia/gpus" | sort); do
                sed -n 's/^GPU UUID:[[:space:]]*//p' "$ROOT/proc/driver/nvidia/gpus/$d/information"
        done >"$T/uuids"
fi
NGPU=$(grep -c '^GPU-' "$T/uuids")
GPU0_UUID=$(head -n 1 "$T/uuids" | tr -d ' ')

# ---------------------------------------------------------------------------------------------
# The spec

SPEC=$T/spec.json
t_ok "gpu-cli cdi generate on this driver" "${CLI[@]}" cdi generate "--output=$SPEC" --capabilities=compute,utility
json_get() { "$GH_PYTHON" -c 'import json,sys; s=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$SPEC" "$1"; }
t_is "$(json_get 's["cdiVersion"] + " " + s["kind"]')" "0.5.0 nvidia.com/gpu" "cdiVersion 0.5.0 (podman 4.3 loads it), kind nvidia.com/gpu"
t_match "$(json_get '",".join(d["name"] for d in s["devices"])')" "^0,$GPU0_UUID,.*all$" "devices: 0, $GPU0_UUID, ..., all"
t_match "$(json_get '" ".join(m["hostPath"] for m in s["containerEdits"]["mounts"])')" '/usr/local/nvidia/bin/nvidia-smi|/usr/bin/nvidia-smi' \
        "the spec mounts the ELF nvidia-smi"
t_diag "spec: $(json_get 'len(s["devices"])') devices, $(json_get 'len(s["containerEdits"]["mounts"])') mounts, $(json_get 'len(s["containerEdits"]["hooks"][0]["args"])') hook arguments, $(wc -c <"$SPEC") bytes"
t_ok "cdi generate --check: the spec is current" "${CLI[@]}" cdi generate "--check=$SPEC" --capabilities=compute,utility
# --mounts=hook: the same plan, cdi-hook makes the driver's mounts (docs/cdi.md)
SPEC_HM=$T/spec-hm.json
t_ok "gpu-cli cdi generate --mounts=hook on this driver" "${CLI[@]}" cdi generate "--output=$SPEC_HM" --capabilities=compute,utility --mounts=hook
t_match "$("$GH_PYTHON" -c 'import json,sys; s=json.load(open(sys.argv[1])); print(" ".join(a for a in s["containerEdits"]["hooks"][0]["args"]))' "$SPEC_HM")" \
        '--mount=[^ ]*/nvidia-smi::/usr/bin/nvidia-smi' "--mounts=hook: the hook mounts the ELF nvidia-smi"

# ---------------------------------------------------------------------------------------------
# Containers

rootfs_template=$T/rootfs-template
make_busybox_rootfs "$rootfs_template" --glibc >"$T/rootfs.log" 2>&1 || { t_diag_file "$T/rootfs.log"; echo "Bail out! rootfs"; exit 1; }
VA=
if [ "$ROOT" = / ] && [ -n "$NVCC" ] && timeout 300 "$NVCC" -O2 -cudart static -arch=native -o "$T/vector_add" "$here/vector_add.cu" >"$T/nvcc.log" 2>&1; then
        VA=$T/vector_add
else
        t_diag "no vector_add (nvcc: ${NVCC:-none}): $(tail -n 2 "$T/nvcc.log" 2>/dev/null)"
fi
cat >"$rootfs_template/probe.sh" <<'EOF'
#!/bin/sh
for n in /dev/nvidia[0-9]*; do [ -c "$n" ] && echo "dev: $n"; done
nvidia-smi -L 2>&1 | sed 's/^/smi: /'
[ -x /usr/local/bin/vector_add ] && /usr/local/bin/vector_add 2>&1 | sed 's/^/va: /'
echo "params_mdf=$(sed -n 's/^ModifyDeviceFiles: *//p' /proc/driver/nvidia/params 2>/dev/null)"
ls /proc/driver/nvidia/gpus 2>/dev/null | sed 's/^/procgpu: /'
check-ldconfig -p 2>/dev/null | sed -n 's/^[[:space:]]*\(lib[^ ]*\) .*=> \(.*\)/ldcache: \1 \2/p'
echo "visible=${NVIDIA_VISIBLE_DEVICES-unset}"
EOF
chmod 755 "$rootfs_template/probe.sh"
[ -n "$VA" ] && cp "$VA" "$rootfs_template/usr/local/bin/vector_add"

# cdi_bundle NAME DEVICE CMD...: a fresh rootfs and bundle with the CDI device applied
cdi_bundle() {
        local name=$1 dev=$2
        shift 2
        rm -rf "$T/r-$name" "$T/b-$name"
        cp -a "$rootfs_template" "$T/r-$name"
        make_bundle "$T/b-$name" "$T/r-$name" "$@"
        "$GH_PYTHON" "$APPLY" --spec "${CASE_SPEC:-$SPEC}" "$T/b-$name" "$dev"
}

# The first runc container after the GPU machine boots mounts cgroup2 in its own cgroup namespace,
# and the kernel then drops nsdelegate,memory_recursiveprot from the cgroup2 superblock's options
# (seen on the H200 VM; run.sh starts a bare container first too).  One bare start before the
# snapshot keeps that out of what this test compares.
make_bundle "$T/b-warm" "$rootfs_template" /bin/true
"$RUNC" run -b "$T/b-warm" "gh-cdi-warm-$$" >/dev/null 2>&1
host_mountinfo_snapshot "$T/mounts.before"
for dev in all 0 "$GPU0_UUID" hm:all hm:0; do
        CASE_SPEC=$SPEC
        case $dev in hm:*) CASE_SPEC=$SPEC_HM dev=${dev#hm:} ;; esac
        if ! cdi_bundle case nvidia.com/gpu="$dev" /probe.sh 2>"$T/apply.err"; then
                t_fail "nvidia.com/gpu=$dev: cdi-apply.py applies the spec"
                t_diag_file "$T/apply.err"
                continue
        fi
        run_runc "$T/b-case" cdi
        OUT=$RUN_STDOUT
        want=$([ "$dev" = all ] && echo "$NGPU" || echo 1)
        [ "$CASE_SPEC" = "$SPEC_HM" ] && dev="$dev (--mounts=hook)"
        t_is "$RUN_RC" 0 "nvidia.com/gpu=$dev: the container starts (runc, createContainer hook)" || t_diag "$RUN_STDERR"
        t_is "$(grep -c '^smi: GPU [0-9]' <<<"$OUT")" "$want" "nvidia.com/gpu=$dev: nvidia-smi -L lists $want GPU(s)"
        t_is "$(grep -c '^dev: ' <<<"$OUT")" "$want" "nvidia.com/gpu=$dev: $want /dev/nvidiaN node(s)"
        if [ -n "$VA" ]; then
                t_match "$OUT" '^va: vector_add: PASS' "nvidia.com/gpu=$dev: the CUDA vector add passes"
        else
                t_skip "nvidia.com/gpu=$dev: the CUDA vector add passes" "no nvcc"
        fi
        t_match "$OUT" '^ldcache: libcuda\.so\.1 ' "nvidia.com/gpu=$dev: the container's ld cache lists libcuda.so.1"
        t_is "$(sed -n 's/^params_mdf=//p' <<<"$OUT")" 0 "nvidia.com/gpu=$dev: params masked (ModifyDeviceFiles: 0)"
        t_is "$(grep -c '^procgpu: ' <<<"$OUT")" "$want" "nvidia.com/gpu=$dev: /proc/driver/nvidia/gpus shows $want GPU(s)"
        t_is "$(sed -n 's/^visible=//p' <<<"$OUT")" void "nvidia.com/gpu=$dev: NVIDIA_VISIBLE_DEVICES=void"
        t_not "nvidia.com/gpu=$dev: the image's /sbin/ldconfig never ran" ldconfig_ran "$T/r-case"
done
if [ "$NGPU" -ge 2 ]; then
        cdi_bundle other nvidia.com/gpu=1 /probe.sh
        run_runc "$T/b-other" other
        t_nomatch "$RUN_STDOUT" '^dev: /dev/nvidia0$' "nvidia.com/gpu=1: /dev/nvidia0 is absent"
else
        t_skip "an unselected GPU's node is absent" "one GPU here"
fi
mountinfo_unchanged "the host mount table is unchanged" "$T/mounts.before"

# ---------------------------------------------------------------------------------------------
# Start time: `runc run /bin/true`, interleaved: no GPU, gpu-hook (createRuntime), CDI
# (createContainer hook), each with a fresh copy of the rootfs, the same request (GPU 0,
# compute+utility).

RUNS=${GH_CDI_RUNS:-21}
printf '{"cli": {"root": "%s", "path": "%s"}}\n' "$ROOT" "$GPU_CLI" >"$T/gpu-hook.json"
prepare() {
        rm -rf "$T/r-$1" "$T/b-$1"
        cp -a "$rootfs_template" "$T/r-$1"
        make_bundle "$T/b-$1" "$T/r-$1" /bin/true
        case $1 in
        hook)
                bundle_add_hook "$T/b-hook" createRuntime "$GPU_HOOK" "--config=$T/gpu-hook.json" createRuntime
                bundle_set_env "$T/b-hook" NVIDIA_VISIBLE_DEVICES=0 NVIDIA_DRIVER_CAPABILITIES=compute,utility ;;
        cdi) "$GH_PYTHON" "$APPLY" --spec "$SPEC" "$T/b-cdi" nvidia.com/gpu=0 ;;
        esac
}
declare -A S
ok=1
for ((i = 0; i < RUNS + 2 && ok; i++)); do
        for k in none hook cdi; do
                prepare $k
                _gh_next_id "t$k"
                t0=$EPOCHREALTIME
                "$RUNC" --root "$T_RUNC_ROOT" run -b "$T/b-$k" "$RUN_ID" </dev/null >/dev/null 2>"$T/time.err"
                rc=$?
                t1=$EPOCHREALTIME
                "$RUNC" --root "$T_RUNC_ROOT" delete -f "$RUN_ID" >/dev/null 2>&1
                if [ $rc -ne 0 ]; then
                        t_fail "start time: $k run $i failed"
                        t_diag_file "$T/time.err"
                        ok=0
                        break
                fi
                ((i >= 2)) && S[$k]+="$(($(_us "$t1") - $(_us "$t0"))) "
        done
done
if [ $ok = 1 ]; then
        med() { BENCH_SAMPLES=(${S[$1]}); bench_stats | cut -d' ' -f1; }
        m0=$(med none) mh=$(med hook) mc=$(med cdi)
        t_pass "start time measured ($RUNS interleaved runs each)"
        t_diag "start time, runc run /bin/true, median of $RUNS interleaved runs (GPU 0, compute+utility):"
        t_diag "  no GPU:                 $(_ms "$m0") ms"
        t_diag "  gpu-hook createRuntime: $(_ms "$mh") ms (+$(_ms $((mh - m0))) ms)"
        t_diag "  CDI createContainer:    $(_ms "$mc") ms (+$(_ms $((mc - m0))) ms)"
        t_diag "  CDI / gpu-hook: $(awk -v a="$mc" -v b="$mh" 'BEGIN { printf "%.2f", a / b }'); added time CDI / gpu-hook: $(awk -v a=$((mc - m0)) -v b=$((mh - m0)) 'BEGIN { printf "%.2f", (b > 0) ? a / b : 0 }')"
fi
echo "# gpu cdi: $((T_COUNT - T_FAILED - T_SKIPPED)) passed, $T_FAILED failed, $T_SKIPPED skipped"
t_done
