#!/bin/bash
# NVIDIA's own CDI spec on the real driver, its hooks run by our nvidia-cdi-hook, TAP.  Runs THERE
# (the GPU machine), as root, from the repo root, with the kit of tests/gpu/prepare.sh (.gpukit):
#
#   bash tests/gpu/run-nvidia-spec.sh          the GPU machine: tests/data/nvidia-ctk-1.18-h200.json
#                                              as nvidia-ctk 1.18 wrote it there, only its hook path
#                                              replaced by ours
#   bash tests/gpu/run-nvidia-spec.sh --fake   any machine: the same structure for the fake driver
#                                              (a build tree: GH_BUILD_DIR; no CUDA, no PyTorch)
#
# That machine has no podman: the spec is applied to runc bundles by tests/helpers/cdi-apply.py (the
# CDI merge rules).  Checked in the container, for nvidia.com/gpu=0 and =all: nvidia-smi by its full
# path (NVIDIA's spec mounts it at /usr/local/nvidia/bin, not on PATH), the CUDA vector add, the ld
# cache, the /proc/driver/nvidia mask, and PyTorch (python3 of /opt/torch/.venv, bind-mounted
# read-only into an image of the machine's own system libraries without the driver's: GH_TORCH=0
# skips it).  Then the start time of `runc run /bin/true` with NVIDIA's spec beside our own spec's
# and the hook path's, interleaved, medians (GH_NVSPEC_RUNS, default 21).
set -u
here=$(cd "$(dirname "$0")" && pwd)
FAKE=0
[ "${1:-}" = --fake ] && FAKE=1
# --fake needs a build tree (the fake driver is built there)
if [ $FAKE = 1 ] && [ -z "${GH_BUILD_DIR:-}" ] && [ -x "$here/../../build/cli/gpu-cli" ]; then
        export GH_BUILD_DIR=$(cd "$here/../../build" && pwd)
fi
. "$here/kit.sh"
for f in "$REPO/bench/common.sh" "$KIT/bench/common.sh"; do [ -f "$f" ] && { . "$f"; break; }; done
pick() { for f in "$@"; do [ -e "$f" ] && { echo "$f"; return; }; done; echo "$1"; }
APPLY=$(pick "$REPO/tests/helpers/cdi-apply.py" "$KIT/tests/helpers/cdi-apply.py")
GEN=$(pick "$REPO/tests/helpers/nvidia-spec.py" "$KIT/tests/helpers/nvidia-spec.py")
SAMPLE=$(pick "$REPO/tests/data/nvidia-ctk-1.18-h200.json" "$KIT/tests/data/nvidia-ctk-1.18-h200.json")
if [ "$KIT_MODE" = kit ]; then
        NVHOOK=${NVIDIA_CDI_HOOK:-$KIT/bin/nvidia-cdi-hook}
else
        NVHOOK=${NVIDIA_CDI_HOOK:-$GH_BUILD_DIR/cli/nvidia-cdi-hook}
fi
t_need_root
[ -x "$NVHOOK" ] || t_skip_all "no nvidia-cdi-hook at $NVHOOK (build it, or tests/gpu/prepare.sh)"
have_cmd "$GH_PYTHON" || t_skip_all "python3 is not installed (the spec helpers need it)"
LIB=/usr/local/nvidia/lib64

if [ $FAKE = 1 ]; then
        ROOT=$T/drv
        bash "$REPO/tests/fake-driver/make-root.sh" "$ROOT" --layout local >"$T/mkroot.log" 2>&1 ||
                { t_diag_file "$T/mkroot.log"; echo "Bail out! make-root.sh"; exit 1; }
        GENARGS=(--root "$ROOT" --driver-root-arg)
        CLI=("$GPU_CLI" "--root=$ROOT")
else
        ROOT=/
        # the spec names that machine's files (driver 580.159.04 under /usr/local/nvidia)
        lib=$("$GH_PYTHON" -c 'import json,sys; print([m["hostPath"] for m in json.load(open(sys.argv[1]))["containerEdits"]["mounts"] if "/libcuda.so." in m["hostPath"]][0])' "$SAMPLE")
        [ -e "$lib" ] || t_skip_all "the sample spec names $lib, which is not here: run it on the GPU machine it was written on, or --fake"
        { [ -e /dev/nvidiactl ] && timeout 60 nvidia-smi -L >/dev/null 2>&1; } || t_skip_all "no working NVIDIA GPU here"
        GENARGS=(--root /)
        CLI=("$GPU_CLI")
fi
t_diag "nvidia-cdi-hook: $NVHOOK; gpu-cli: $GPU_CLI; runc: $RUNC; $(head -n 2 "$KIT/MANIFEST" 2>/dev/null | tr '\n' ' ')"
t_is "$(file -b "$NVHOOK" 2>/dev/null | grep -o 'static-pie linked' || echo dynamic)" "static-pie linked" \
        "our nvidia-cdi-hook is a static program"

NV=$T/nvidia.json
t_ok "NVIDIA's spec with our hook path" "$GH_PYTHON" "$GEN" --sample "$SAMPLE" "${GENARGS[@]}" --hook "$NVHOOK" --output "$NV"
json_get() { "$GH_PYTHON" -c 'import json,sys; s=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
t_is "$(json_get "$NV" 'sorted(set(h["path"] for h in s["containerEdits"]["hooks"]))')" "['$NVHOOK']" "every hook runs $NVHOOK"
t_diag "NVIDIA's spec: $(json_get "$NV" 'len(s["devices"])') devices, $(json_get "$NV" 'len(s["containerEdits"]["mounts"])') mounts, $(json_get "$NV" 'len(s["containerEdits"]["hooks"])') hooks"
OURS=$T/ours.json
t_ok "our spec (gpu-cli cdi generate) on the same driver" "${CLI[@]}" cdi generate "--output=$OURS"
NGPU=$(json_get "$NV" 'len([d for d in s["devices"] if d["name"].isdigit()])')

# ---------------------------------------------------------------------------------------------
# Containers

TPL=$T/rootfs-template
make_busybox_rootfs "$TPL" --glibc >"$T/rootfs.log" 2>&1 || { t_diag_file "$T/rootfs.log"; echo "Bail out! rootfs"; exit 1; }
VA=
if [ $FAKE = 0 ] && [ -n "$NVCC" ] && timeout 300 "$NVCC" -O2 -cudart static -arch=native -o "$TPL/usr/local/bin/vector_add" \
        "$here/vector_add.cu" >"$T/nvcc.log" 2>&1; then
        VA=1
elif [ $FAKE = 1 ]; then
        CUDA_PROBE=$(find "$GH_BUILD_DIR/tests/fake-driver" -name cuda-probe -type f -perm -u+x | head -n1)
        [ -n "$CUDA_PROBE" ] && install -m 755 "$CUDA_PROBE" "$TPL/usr/local/bin/cuda-probe"
fi
cat >"$TPL/probe.sh" <<EOF
#!/bin/sh
/usr/local/nvidia/bin/nvidia-smi -L 2>&1 | sed 's/^/smi: /'
echo "onpath=\$(command -v nvidia-smi || echo none)"
[ -x /usr/local/bin/vector_add ] && /usr/local/bin/vector_add 2>&1 | sed 's/^/va: /'
[ -x /usr/local/bin/cuda-probe ] && cuda-probe 2>&1 | sed 's/^/va: /'
echo "params_mdf=\$(sed -n 's/^ModifyDeviceFiles: *//p' /proc/driver/nvidia/params 2>/dev/null)"
ls /proc/driver/nvidia/gpus 2>/dev/null | sed 's/^/procgpu: /'
check-ldconfig -p 2>/dev/null | sed -n 's/^[[:space:]]*\(libcuda\.so\.1\) .*=> \(.*\)/ldcache: \1 \2/p'
EOF
chmod 755 "$TPL/probe.sh"
bundle() {
        rm -rf "$T/r-$1" "$T/b-$1"
        cp -a "$TPL" "$T/r-$1"
        make_bundle "$T/b-$1" "$T/r-$1" "${@:3}"
        [ "$2" = - ] || "$GH_PYTHON" "$APPLY" --spec "$2" "$T/b-$1" "${DEV:-nvidia.com/gpu=0}"
}

make_bundle "$T/b-warm" "$TPL" /bin/true
"$RUNC" run -b "$T/b-warm" "gh-nvspec-warm-$$" >/dev/null 2>&1
host_mountinfo_snapshot "$T/mounts.before"
for dev in 0 all; do
        DEV=nvidia.com/gpu=$dev bundle case "$NV" /probe.sh
        run_runc "$T/b-case" nvspec
        OUT=$RUN_STDOUT
        want=$([ "$dev" = all ] && echo "$NGPU" || echo 1)
        t_is "$RUN_RC" 0 "NVIDIA's spec, nvidia.com/gpu=$dev: the container starts, its hooks run by ours" || t_diag "$RUN_STDERR"
        t_is "$(grep -c '^smi: GPU [0-9]' <<<"$OUT")" "$want" "=$dev: /usr/local/nvidia/bin/nvidia-smi (full path) lists $want GPU(s)"
        t_is "$(sed -n 's/^onpath=//p' <<<"$OUT")" none "=$dev: nvidia-smi is not on PATH, as with NVIDIA's hook (the spec's paths)"
        if [ -n "$VA" ]; then
                t_match "$OUT" '^va: vector_add: PASS' "=$dev: the CUDA vector add passes"
        elif [ $FAKE = 1 ]; then
                t_match "$OUT" '^va: CUDA OK' "=$dev: the fake CUDA probe works"
        else
                t_skip "=$dev: the CUDA vector add passes" "no nvcc"
        fi
        t_match "$OUT" "^ldcache: libcuda\\.so\\.1 $LIB/libcuda\\.so\\.1" "=$dev: the ld cache resolves libcuda.so.1 in $LIB (update-ldcache --folder)"
        t_is "$(sed -n 's/^params_mdf=//p' <<<"$OUT")" 0 "=$dev: params masked (disable-device-node-modification)"
        t_is "$(grep -c '^procgpu: ' <<<"$OUT")" "$want" "=$dev: /proc/driver/nvidia/gpus shows $want GPU(s)"
        t_not "=$dev: no ldconfig ran in the image" ldconfig_ran "$T/r-case"
done

# PyTorch: an image of this machine's system libraries without the driver's (as an overlay's lower
# layer), python3.12, and the venv bind-mounted read-only.
VENV=/opt/torch/.venv
if [ $FAKE = 1 ] || [ "${GH_TORCH:-1}" = 0 ]; then
        t_skip "PyTorch with NVIDIA's spec" "$([ $FAKE = 1 ] && echo --fake || echo GH_TORCH=0)"
elif [ ! -x "$VENV/bin/python3" ] || [ ! -x /usr/bin/python3.12 ]; then
        t_skip "PyTorch with NVIDIA's spec" "no $VENV/bin/python3 or /usr/bin/python3.12"
else
        LOWER=$T/torch-lower
        mkdir -p "$LOWER"
        cp -a "$TPL"/. "$LOWER"/
        # after the template: its lib64 may be a link, which a directory made first would block
        mkdir -p "$LOWER/usr/lib" "$LOWER/usr/bin" "$LOWER/lib64"
        rm -rf "$LOWER/usr/lib/x86_64-linux-gnu"
        cp -a /usr/lib/x86_64-linux-gnu "$LOWER/usr/lib/"
        find "$LOWER/usr/lib/x86_64-linux-gnu" \( -name '*nvidia*' -o -name 'libcuda*' -o -name 'libnvcuvid*' -o -name 'libnvoptix*' \) \
                -exec rm -rf {} + 2>/dev/null
        cp -a /usr/lib/python3.12 "$LOWER/usr/lib/" && cp -a /usr/bin/python3.12 "$LOWER/usr/bin/"
        cp -L /lib64/ld-linux-x86-64.so.2 "$LOWER/lib64/"
        mkdir -p "$LOWER$VENV"
        ldc=$(command -v ldconfig.real || command -v ldconfig)
        "$ldc" -r "$LOWER" 2>/dev/null
        mkdir -p "$T/torch/upper" "$T/torch/work" "$T/torch/merged"
        mount -t overlay overlay -o "lowerdir=$LOWER,upperdir=$T/torch/upper,workdir=$T/torch/work" "$T/torch/merged"
        make_bundle "$T/b-torch" "$T/torch/merged" "$VENV/bin/python3" -c \
                "import torch; print('avail', torch.cuda.is_available()); a = torch.randn(4096, 4096, device='cuda', dtype=torch.bfloat16); print('matmul', float((a @ a).float().abs().sum()) > 0)"
        bundle_add_mount "$T/b-torch" "$VENV" "$VENV" rbind,ro
        bundle_set_env "$T/b-torch" "PATH=$VENV/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        "$GH_PYTHON" "$APPLY" --spec "$NV" "$T/b-torch" nvidia.com/gpu=0
        GH_RUN_TIMEOUT=300 run_runc "$T/b-torch" torch
        t_is "$RUN_RC" 0 "PyTorch with NVIDIA's spec: the container ran" || t_diag "$RUN_STDERR"
        t_match "$RUN_STDOUT" '^avail True$' "PyTorch: torch.cuda.is_available() is True"
        t_match "$RUN_STDOUT" '^matmul True$' "PyTorch: a bf16 matmul on the GPU"
        umount "$T/torch/merged"
fi
# create-soname-symlinks: NVIDIA's spec without its SONAME links for the driver's libraries (the
# create-symlinks arguments LIB.so.N -> file), and the hook that makes them from the folder instead.
SN=$T/nvidia-soname.json
"$GH_PYTHON" - "$NV" "$NVHOOK" "$ROOT" "$LIB" >"$SN" <<'EOF'
import json, re, sys
s = json.load(open(sys.argv[1]))
hooks, out = s["containerEdits"]["hooks"], []
for h in hooks:
    a = h["args"]
    if "create-symlinks" in a:
        keep, i = [], 0
        while i < len(a):
            if a[i] == "--link" and i + 1 < len(a) and re.match(r"^lib.*\.so\.[0-9.]+::" + re.escape(sys.argv[4]) + r"/lib[^/]*\.so\.[0-9]+$", a[i + 1]):
                i += 2
                continue
            keep.append(a[i])
            i += 1
        h["args"] = keep
    if "update-ldcache" in a:
        args = ["nvidia-cdi-hook"] + (["--driver-root=" + sys.argv[3]] if sys.argv[3] != "/" else [])
        out.append({"hookName": "createContainer", "path": sys.argv[2],
                    "args": args + ["create-soname-symlinks", "--folder", sys.argv[4]]})
    out.append(h)
s["containerEdits"]["hooks"] = out
print(json.dumps(s))
EOF
ARGS_SN=$(json_get "$SN" '"\n".join(a for h in s["containerEdits"]["hooks"] for a in h["args"])')
t_match "$ARGS_SN" "^create-soname-symlinks$" "a spec with create-soname-symlinks instead of the SONAME links"
t_nomatch "$ARGS_SN" "^libcuda\\.so\\.[0-9.]+::$LIB/libcuda\\.so\\.1$" "... and without the libcuda.so.1 link"
bundle soname "$SN" /bin/sh -c "echo link=\$(readlink $LIB/libcuda.so.1); /probe.sh"
run_runc "$T/b-soname" soname
t_is "$RUN_RC" 0 "create-soname-symlinks: the container starts" || t_diag "$RUN_STDERR"
t_match "$RUN_STDOUT" "^link=libcuda\\.so\\.[0-9]+\\.[0-9]+" "create-soname-symlinks: $LIB/libcuda.so.1 -> the driver's libcuda.so.VERSION"
if [ -n "$VA" ]; then
        t_match "$RUN_STDOUT" '^va: vector_add: PASS' "... and the CUDA vector add passes"
elif [ $FAKE = 1 ]; then
        t_match "$RUN_STDOUT" '^va: CUDA OK' "... and the fake CUDA probe works"
fi

# ---------------------------------------------------------------------------------------------
# check-requirements (NVIDIA's 2026 specs carry it): NVIDIA's spec plus that hook, images with the
# requirement a CUDA 12 image states, a CUDA too new for this driver (13.0 here and in the fake),
# the GPU's own compute capability (9.0: H200, and the fake's H100) and a newer one.  With the
# driver-state cache cold (the static hook hands the check to gpu-cli, which asks NVML or libcuda
# from inside the container's device rules) and warm (answered in the static hook).

RQCACHE=$T/rq-cache.json
RQ=$T/nvidia-req.json
"$GH_PYTHON" - "$NV" "$NVHOOK" "$ROOT" "$RQCACHE" >"$RQ" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
args = ["nvidia-cdi-hook", "--state-file=" + sys.argv[4], "check-requirements"]
if sys.argv[3] != "/":
    args.append("--driver-root=" + sys.argv[3])
s["containerEdits"]["hooks"].insert(0, {"hookName": "createContainer", "path": sys.argv[2], "args": args})
print(json.dumps(s))
EOF
CUDA12='cuda>=12.0 brand=tesla,driver>=470,driver<471 brand=unknown,driver>=470,driver<471'
# rq_case NAME VAR=VALUE...: a container of NVIDIA's spec + check-requirements running the probe
rq_case() {
        local name=$1
        shift
        bundle "rq-$name" - /probe.sh
        bundle_set_env "$T/b-rq-$name" "$@"
        "$GH_PYTHON" "$APPLY" --spec "$RQ" "$T/b-rq-$name" nvidia.com/gpu=0
        run_runc "$T/b-rq-$name" "rq-$name"
}
for cache in cold warm; do
        rm -f "$RQCACHE"
        [ $cache = warm ] && { "${CLI[@]}" --state-file="$RQCACHE" cache refresh >/dev/null 2>&1 || t_diag "cache refresh failed"; }
        rq_case cuda12 "NVIDIA_REQUIRE_CUDA=$CUDA12"
        t_is "$RUN_RC" 0 "check-requirements ($cache cache): a CUDA 12 image's requirement is met, the container runs" ||
                t_diag "$RUN_STDERR"
        if [ -n "$VA" ]; then
                t_match "$RUN_STDOUT" '^va: vector_add: PASS' "... and its CUDA vector add passes"
        elif [ $FAKE = 1 ]; then
                t_match "$RUN_STDOUT" '^va: CUDA OK' "... and the fake CUDA probe works"
        fi
        rq_case new "NVIDIA_REQUIRE_CUDA=cuda>=13.1"
        t_not "check-requirements ($cache cache): cuda>=13.1 on this CUDA 13.0 driver is refused" test "$RUN_RC" -eq 0
        t_match "$RUN_STDERR" "requirement 'cuda>=13\\.1' not met: the driver supports CUDA 13\\.0" "... naming it and the driver's CUDA"
        rq_case arch "NVIDIA_REQUIRE_ARCH=arch>=9.0,driver>=580"
        t_is "$RUN_RC" 0 "check-requirements ($cache cache): arch>=9.0,driver>=580 is met (NVML's facts for GPU 0)" ||
                t_diag "$RUN_STDERR"
        rq_case arch10 "NVIDIA_REQUIRE_ARCH=arch>=10.0"
        t_not "check-requirements ($cache cache): arch>=10.0 refused" test "$RUN_RC" -eq 0
        t_match "$RUN_STDERR" "requirement 'arch>=10\\.0' not met on GPU 0 " "... naming GPU 0"
        rq_case off "NVIDIA_REQUIRE_CUDA=cuda>=13.1" NVIDIA_DISABLE_REQUIRE=true
        t_is "$RUN_RC" 0 "check-requirements ($cache cache): NVIDIA_DISABLE_REQUIRE=true starts it unchecked" ||
                t_diag "$RUN_STDERR"
done

mountinfo_unchanged "the host mount table is unchanged" "$T/mounts.before"

# ---------------------------------------------------------------------------------------------
# Start time: runc run /bin/true, interleaved, GPU 0: no GPU, the hook path (gpu-hook, all
# capabilities), our spec, NVIDIA's spec with our nvidia-cdi-hook.

RUNS=${GH_NVSPEC_RUNS:-21}
printf '{"cli": {"root": "%s", "path": "%s"}}\n' "$ROOT" "$GPU_CLI" >"$T/gpu-hook.json"
prepare() {
        case $1 in
        none) bundle none - /bin/true ;;
        hook)
                bundle hook - /bin/true
                bundle_add_hook "$T/b-hook" createRuntime "$GPU_HOOK" "--config=$T/gpu-hook.json" createRuntime
                bundle_set_env "$T/b-hook" NVIDIA_VISIBLE_DEVICES=0 NVIDIA_DRIVER_CAPABILITIES=all ;;
        ours) bundle ours "$OURS" /bin/true ;;
        nvidia) bundle nvidia "$NV" /bin/true ;;
        nvreq)
                bundle nvreq - /bin/true
                bundle_set_env "$T/b-nvreq" "NVIDIA_REQUIRE_CUDA=$CUDA12"
                "$GH_PYTHON" "$APPLY" --spec "$RQ" "$T/b-nvreq" nvidia.com/gpu=0 ;;
        esac
}
declare -A S
ok=1
KINDS=(none hook ours nvidia nvreq)
"${CLI[@]}" --state-file="$RQCACHE" cache refresh >/dev/null 2>&1 # nvreq: with the cache warm
for ((i = 0; i < RUNS + 2 && ok; i++)); do
        # a new order every round, the starts spaced the same
        for k in $(printf '%s\n' "${KINDS[@]}" | shuf); do
                prepare "$k"
                _gh_next_id "t$k"
                sleep 0.2
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
        m0=$(med none) mh=$(med hook) mo=$(med ours) mn=$(med nvidia) mr=$(med nvreq)
        t_pass "start time measured ($RUNS shuffled rounds)"
        t_diag "start time, runc run /bin/true, GPU 0, median of $RUNS shuffled rounds:"
        t_diag "  no GPU:                                  $(_ms "$m0") ms"
        t_diag "  hook path (gpu-hook createRuntime):      $(_ms "$mh") ms (+$(_ms $((mh - m0))) ms)"
        t_diag "  our spec (gpu-cli cdi-hook, one hook):   $(_ms "$mo") ms (+$(_ms $((mo - m0))) ms)"
        t_diag "  NVIDIA's spec, our nvidia-cdi-hook (x$(json_get "$NV" 'len(s["containerEdits"]["hooks"])')): $(_ms "$mn") ms (+$(_ms $((mn - m0))) ms)"
        t_diag "  the same + check-requirements (a CUDA 12 image, warm cache): $(_ms "$mr") ms (+$(_ms $((mr - m0))) ms; the check $(_ms $((mr - mn))) ms)"
        t_diag "  added time NVIDIA's spec / our spec: $(awk -v a=$((mn - m0)) -v b=$((mo - m0)) 'BEGIN { printf "%.2f", (b > 0) ? a / b : 0 }')"
fi
echo "# gpu nvidia-spec: $((T_COUNT - T_FAILED - T_SKIPPED)) passed, $T_FAILED failed, $T_SKIPPED skipped"
t_done
