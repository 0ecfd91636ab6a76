#!/bin/bash
# GPU acceptance checks, TAP.  Runs THERE (the GPU machine), as root, from the repo root, with the
# kit that tests/gpu/prepare.sh built carried as .gpukit:
#
#   bash tests/gpu/run.sh            GPU machine: the kit's binaries and runc
#   bash tests/gpu/run.sh --local    any machine: what needs no GPU runs, the rest is SKIP
#
# Under meson (GH_BUILD_DIR set: the `gpu` suite) it uses the build's binaries and the system runc,
# and skips entirely (exit 77) without a GPU.  Every check of a gpu-hook feature runs: a missing
# feature fails, it is never skipped.  Ends with a one-line summary comment.
set -u
here=$(cd "$(dirname "$0")" && pwd)
LOCAL=0
[ "${1:-}" = --local ] && LOCAL=1
. "$here/kit.sh"
MODE=$KIT_MODE

t_need_root
HAVE_GPU=0
if [ -e /dev/nvidiactl ] && timeout 60 nvidia-smi -L >/dev/null 2>&1; then
        HAVE_GPU=1
elif [ $LOCAL = 0 ]; then
        t_skip_all "no NVIDIA GPU here (nvidia-smi -L fails or /dev/nvidiactl is missing); --local runs the rest"
fi
NO_GPU="no GPU here (--local)"

t_diag "mode: $MODE; gpu-cli: $GPU_CLI; gpu-hook: $GPU_HOOK; runc: $RUNC"
[ -f "$KIT/MANIFEST" ] && [ $MODE = kit ] && t_diag "$(cat "$KIT/MANIFEST")"

# ---------------------------------------------------------------------------------------------
# The bare path: the kit works on this machine, with no product feature involved.

t_ok "runc starts ($("$RUNC" --version 2>/dev/null | head -n 1))" "$RUNC" --version
t_ok "gpu-cli starts" "$GPU_CLI" --version
t_ok "gpu-hook starts" "$GPU_HOOK" --version

rootfs_template=$T/rootfs-template
if ! make_busybox_rootfs "$rootfs_template" --glibc >"$T/rootfs.log" 2>&1; then
        t_fail "a busybox rootfs with this machine's glibc"
        t_diag_file "$T/rootfs.log"
        echo "Bail out! no rootfs"
        exit 1
fi
t_pass "a busybox rootfs with this machine's glibc"
make_bundle "$T/bare" "$rootfs_template" /bin/sh -c 'echo bare-ok'
run_runc "$T/bare" bare
t_is "$RUN_STDOUT" bare-ok "runc runs the rootfs" || t_diag "$RUN_STDERR"

VA=$T/vector_add
if [ -z "$NVCC" ]; then
        t_skip "nvcc builds vector_add" "no nvcc in PATH or /usr/local/cuda*/bin"
        VA=
else
        # -arch=native compiles for the GPU that is here (no PTX JIT needed); without a GPU, the default.
        arch=()
        [ $HAVE_GPU = 1 ] && arch=(-arch=native)
        if timeout 300 "$NVCC" -O2 -cudart static "${arch[@]+"${arch[@]}"}" -o "$VA" "$here/vector_add.cu" \
                >"$T/nvcc.log" 2>&1 ||
                { [ ${#arch[@]} -gt 0 ] && timeout 300 "$NVCC" -O2 -cudart static -o "$VA" \
                        "$here/vector_add.cu" >>"$T/nvcc.log" 2>&1; }; then
                t_pass "nvcc builds vector_add ($NVCC ${arch[*]:-})"
        else
                t_fail "nvcc builds vector_add"
                t_diag_file "$T/nvcc.log"
                VA=
        fi
fi
if [ -z "$VA" ]; then
        t_skip "vector_add passes on the host" "no vector_add"
elif [ $HAVE_GPU = 0 ]; then
        t_skip "vector_add passes on the host" "$NO_GPU"
else
        out=$(timeout 120 "$VA" 2>&1)
        t_match "$out" '^vector_add: PASS' "vector_add passes on the host" && t_diag "$out"
fi

# new_rootfs NAME: a fresh rootfs per container (injection may leave mount points in it).
new_rootfs() {
        local r=$T/rootfs-$1
        cp -a "$rootfs_template" "$r"
        make_busybox_rootfs_probe "$r"
        echo "$r"
}

# What a container reports about itself, one "key=value" or "prefix: line" per line.
make_busybox_rootfs_probe() {
        [ -n "$VA" ] && cp "$VA" "$1/usr/local/bin/vector_add"
        cat >"$1/probe.sh" <<'EOF'
#!/bin/sh
echo "gpunodes=$(ls /dev | grep -c '^nvidia[0-9][0-9]*$')"
for n in nvidia0 nvidiactl nvidia-uvm; do
        if [ -c /dev/$n ]; then echo "dev_$n=yes"; else echo "dev_$n=no"; fi
done
if [ -x /usr/bin/nvidia-smi ]; then
        echo "smi_bin=yes"
        nvidia-smi -L >/tmp/smi.out 2>&1
        echo "smi_rc=$?"
        sed 's/^/smi: /' /tmp/smi.out
else
        echo "smi_bin=no"
fi
if [ -x /usr/local/bin/vector_add ]; then
        /usr/local/bin/vector_add >/tmp/va.out 2>&1
        echo "va_rc=$?"
        sed 's/^/va: /' /tmp/va.out
fi
echo "params_mdf=$(sed -n 's/^ModifyDeviceFiles: *//p' /proc/driver/nvidia/params 2>/dev/null)"
ls /proc/driver/nvidia/gpus 2>/dev/null | sed 's/^/procgpu: /'
check-ldconfig -p 2>/dev/null | sed -n 's/^[[:space:]]*\(lib[^ ]*\) .*=> \(.*\)/ldcache: \1 \2/p'
if [ "${PROBE_MKNOD:-}" = 1 ]; then
        if mknod /dev/gh-nvidia0 c 195 "${PROBE_MKNOD_MINOR:-0}" 2>/tmp/mknod.err; then echo "mknod=ok"; else echo "mknod=denied"; fi
        sed 's/^/mknod: /' /tmp/mknod.err
        if [ -c /dev/gh-nvidia0 ]; then
                if head -c 1 /dev/gh-nvidia0 >/dev/null 2>/tmp/open.err; then echo "open=ok"; else echo "open=failed"; fi
                sed 's/^/open: /' /tmp/open.err
        fi
fi
exit 0
EOF
        chmod 755 "$1/probe.sh"
}

# A container without any hook: CUDA must fail cleanly (this proves the rootfs has no driver by accident).
if [ -n "$VA" ]; then
        r=$(new_rootfs nohook)
        make_bundle "$T/nohook" "$r" /probe.sh
        run_runc "$T/nohook" nohook
        t_match "$RUN_STDOUT" '^va_rc=1$' "without the hook, vector_add in a container fails cleanly (exit 1)" ||
                t_diag "$RUN_STDERR"
fi

# ---------------------------------------------------------------------------------------------
# gpu-cli info / list against nvidia-smi

if [ $HAVE_GPU = 1 ]; then
        timeout 60 nvidia-smi --query-gpu=uuid,pci.bus_id,name,driver_version --format=csv,noheader \
                >"$T/smi.csv" 2>&1
        NGPU=$(grep -c . "$T/smi.csv")
        GPU0_UUID=$(head -n 1 "$T/smi.csv" | cut -d, -f1 | tr -d ' ')
        t_diag "nvidia-smi: $(cat "$T/smi.csv")"
else
        NGPU=0 GPU0_UUID=
fi

if [ $HAVE_GPU = 0 ]; then
        for d in UUIDs "bus ids" names "driver version"; do t_skip "gpu-cli info --json: $d match nvidia-smi" "$NO_GPU"; done
else
        timeout 60 "$GPU_CLI" info --json >"$T/info.json" 2>"$T/info.err"
        rc=$?
        [ $rc -eq 0 ] || { t_diag "gpu-cli info --json exited $rc"; t_diag_file "$T/info.err"; }
        "$GH_PYTHON" - "$T/info.json" "$T/smi.csv" >"$T/info.cmp" 2>&1 <<'EOF'
import json, re, sys
def strings(x):
    if isinstance(x, dict):
        for v in x.values(): yield from strings(v)
    elif isinstance(x, list):
        for v in x: yield from strings(v)
    elif x is not None and not isinstance(x, bool):
        yield str(x).strip().lower()
def bus(s):  # nvidia-smi writes an 8-digit domain, the kernel 4 digits
    m = re.fullmatch(r"([0-9a-f]+):([0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f])", s)
    return f"{int(m.group(1), 16):04x}:{m.group(2)}" if m else s
try:
    got = set(bus(s) for s in strings(json.load(open(sys.argv[1]))))
except Exception as e:
    got = set()
    print(f"diag cannot parse gpu-cli info --json: {e}")
rows = [[c.strip() for c in l.split(",")] for l in open(sys.argv[2]) if l.strip()]
uuids_in_json = {s for s in got if re.fullmatch(r"gpu-[0-9a-f-]{36}", s)}
checks = {
    "UUIDs": [r[0].lower() for r in rows],
    "bus ids": [bus(r[1].lower()) for r in rows],
    "names": [r[2].lower() for r in rows],
    "driver version": [r[3].lower() for r in rows[:1]],
}
for what, want in checks.items():
    missing = [w for w in want if w not in got]
    extra = ""
    if what == "UUIDs" and len(uuids_in_json) != len(want):
        extra = f"; gpu-cli lists {len(uuids_in_json)} GPU UUIDs, nvidia-smi {len(want)}"
    print(("ok" if not missing and not extra else "fail") + f" {what}" +
          (f" missing {missing}" if missing else "") + extra)
EOF
        for d in UUIDs "bus ids" names "driver version"; do
                line=$(grep -E "^(ok|fail) $d( |$)" "$T/info.cmp")
                if [ "${line%% *}" = ok ]; then
                        t_pass "gpu-cli info --json: $d match nvidia-smi"
                else
                        t_fail "gpu-cli info --json: $d match nvidia-smi"
                        t_diag "${line:-no result}" "$(grep '^diag' "$T/info.cmp")"
                        t_diag_file "$T/info.json" 15
                fi
        done
fi

# The driver-state cache on the real driver (its own file, not /run/gpu-hook): the second query is
# answered from it, identically, and the driver's CUDA version also comes from libcuda alone.
SC=(--state-file="$T/state/driver-state.json")
if [ $HAVE_GPU = 0 ]; then
        t_skip "driver-state cache on the real driver" "$NO_GPU"
else
        canon() { "$GH_PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); s=d.pop("source"); print(s); print(json.dumps(d, sort_keys=True))' "$1"; }
        timeout 60 "$GPU_CLI" "${SC[@]}" info --json >"$T/sc1.json" 2>"$T/sc.err"
        timeout 60 "$GPU_CLI" "${SC[@]}" info --json >"$T/sc2.json" 2>>"$T/sc.err"
        t_is "$(canon "$T/sc1.json" | head -n1) $(canon "$T/sc2.json" | head -n1)" "nvml cache" \
                "driver-state cache: the first info asks NVML, the second is answered by the cache" || t_diag_file "$T/sc.err"
        t_is "$(canon "$T/sc2.json" | tail -n1)" "$(canon "$T/sc1.json" | tail -n1)" "driver-state cache: the cached answer is NVML's, field by field"
        t_match "$("$GPU_CLI" "${SC[@]}" cache show | head -n1)" "fresh" "driver-state cache: cache show says fresh"
        t_diag "fingerprint: $("$GPU_CLI" cache fingerprint --repeat=2000 2>&1)"
        "$GPU_CLI" cache fingerprint 2>&1 | cut -c1-200 | sed 's/^/# /'
        cuda_nvml=$("$GH_PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["cuda_version"])' "$T/sc1.json")
        cuda_lib=$(timeout 60 "$GPU_CLI" --no-cache info --cuda-only --json 2>"$T/cu.err" |
                "$GH_PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["cuda_version"])' 2>/dev/null)
        t_is "$cuda_lib" "$cuda_nvml" "libcuda's cuDriverGetVersion (no cuInit, sandboxed child) gives NVML's CUDA version" ||
                t_diag_file "$T/cu.err"
fi

if [ $HAVE_GPU = 0 ]; then
        t_skip "gpu-cli list against this machine's driver" "$NO_GPU"
else
        out=$(timeout 60 "$GPU_CLI" list 2>&1)
        t_match "$out" '^/usr/local/nvidia/bin/nvidia-smi$' "gpu-cli list lists the real /usr/local/nvidia/bin/nvidia-smi"
        t_nomatch "$out" '^/usr/bin/nvidia-smi$' "gpu-cli list does not offer the /usr/bin/nvidia-smi wrapper"
        t_match "$out" '/libcuda\.so\.[0-9]+\.[0-9]+' "gpu-cli list lists libcuda.so.<version>"
fi

# ---------------------------------------------------------------------------------------------
# Containers under runc with gpu-hook as createRuntime hook.

# gpu_case NAME ENV... : runs /probe.sh in a fresh rootfs with the hook; sets OUT (RUN_* too).
# ENV "-" entries: UNSET=VAR removes a variable, MKNOD=1 adds CAP_MKNOD and the mknod probe.
printf '{"cli": {"root": "/", "path": "%s", "ldcache": "/etc/ld.so.cache"}, "log": {"file": "%s"}}\n' \
        "$GPU_CLI" "$T/gpu-hook.log" >"$T/gpu-hook.json"
gpu_case() {
        local name=$1 r e
        shift
        r=$(new_rootfs "$name")
        make_bundle "$T/b-$name" "$r" /probe.sh
        bundle_add_hook "$T/b-$name" createRuntime "$GPU_HOOK" "--config=$T/gpu-hook.json" createRuntime
        for e in "$@"; do
                case $e in
                UNSET=*) bundle_unset_env "$T/b-$name" "${e#UNSET=}" ;;
                MKNOD=1) bundle_add_caps "$T/b-$name" CAP_MKNOD; bundle_set_env "$T/b-$name" PROBE_MKNOD=1 ;;
                *) bundle_set_env "$T/b-$name" "$e" ;;
                esac
        done
        run_runc "$T/b-$name" "$name"
        OUT=$RUN_STDOUT
        CASE_ROOTFS=$r
        if [ "$RUN_RC" -ne 0 ]; then
                t_diag "$name: runc exited $RUN_RC: $(printf '%s' "$RUN_STDERR" | tail -n 3)"
        fi
}
val() { printf '%s\n' "$OUT" | sed -n "s/^$1=//p" | head -n 1; }
smi_gpus() { printf '%s\n' "$OUT" | grep -c '^smi: GPU [0-9]'; }

CASES=(all index uuid none void unset utility compute unselected)
if [ $HAVE_GPU = 0 ]; then
        for c in "${CASES[@]}"; do t_skip "container NVIDIA_VISIBLE_DEVICES case '$c'" "$NO_GPU"; done
else
        host_mountinfo_snapshot "$T/mounts.before"
        unchanged() { mountinfo_unchanged "$1: the host mount table is unchanged" "$T/mounts.before"; }
        CU="NVIDIA_DRIVER_CAPABILITIES=compute,utility"

        gpu_case all NVIDIA_VISIBLE_DEVICES=all "$CU"
        t_is "$RUN_RC" 0 "all: the container starts" || t_diag "$RUN_STDERR"
        t_match "$OUT" '^va: vector_add: PASS' "all: vector_add passes in the container"
        t_is "$(smi_gpus)" "$NGPU" "all: nvidia-smi -L in the container lists every GPU ($NGPU)"
        t_is "$(val dev_nvidia0)" yes "all: /dev/nvidia0 is there"
        t_is "$(val params_mdf)" 0 "all: /proc/driver/nvidia/params says ModifyDeviceFiles: 0"
        t_is "$(printf '%s\n' "$OUT" | grep -c '^procgpu: ')" "$NGPU" "all: /proc/driver/nvidia/gpus has every GPU"
        t_match "$OUT" '^ldcache: libcuda\.so\.1 ' "all: ldconfig -p in the container lists libcuda.so.1"
        t_match "$OUT" '^ldcache: libnvidia-ml\.so\.1 ' "all: ldconfig -p in the container lists libnvidia-ml.so.1"
        t_match "$OUT" '^ldcache: libcuda\.so /usr/lib' "all: the ld cache lists the development link libcuda.so (dlopen(\"libcuda.so\"))"
        t_not "all: the image's /sbin/ldconfig never ran" ldconfig_ran "$CASE_ROOTFS"
        unchanged all

        gpu_case index NVIDIA_VISIBLE_DEVICES=0 "$CU"
        t_match "$OUT" '^va: vector_add: PASS' "0: vector_add passes"
        t_is "$(smi_gpus)" 1 "0: nvidia-smi -L lists exactly one GPU"
        t_is "$(val dev_nvidia0)" yes "0: /dev/nvidia0 is there"

        gpu_case uuid "NVIDIA_VISIBLE_DEVICES=$GPU0_UUID" "$CU"
        t_match "$OUT" '^va: vector_add: PASS' "UUID: vector_add passes"
        t_match "$OUT" "^smi: GPU 0: .*$GPU0_UUID" "UUID: nvidia-smi -L shows that GPU"

        gpu_case none NVIDIA_VISIBLE_DEVICES=none "$CU"
        t_is "$RUN_RC" 0 "none: the container starts" || t_diag "$RUN_STDERR"
        t_is "$(val dev_nvidia0)" no "none: no /dev/nvidia0"
        t_is "$(val smi_bin)" yes "none: the driver files are injected (nvidia-smi)"
        t_match "$OUT" '^va_rc=[1-9][0-9]?$' "none: vector_add fails cleanly"

        for v in void unset; do
                if [ $v = void ]; then gpu_case void NVIDIA_VISIBLE_DEVICES=void "$CU"; else gpu_case unset UNSET=NVIDIA_VISIBLE_DEVICES "$CU"; fi
                t_is "$RUN_RC" 0 "$v: the container starts" || t_diag "$RUN_STDERR"
                t_is "$(val dev_nvidiactl)/$(val smi_bin)" no/no "$v: nothing is injected"
                unchanged "$v"
        done

        gpu_case utility NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=utility
        t_is "$(val smi_rc)" 0 "utility: nvidia-smi works"
        t_match "$OUT" '^va_rc=[1-9][0-9]?$' "utility: CUDA fails cleanly (no crash)"
        t_match "$OUT" '^va: vector_add: FAIL' "utility: vector_add reports the failure"

        gpu_case compute NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=compute
        t_match "$OUT" '^va: vector_add: PASS' "compute: vector_add passes"
        t_is "$(val smi_bin)" no "compute: no nvidia-smi"

        gpu_case unselected NVIDIA_VISIBLE_DEVICES=none "$CU" MKNOD=1
        t_is "$(val dev_nvidia0)" no "not selected: no /dev/nvidia0"
        if [ "$(val mknod)" = denied ]; then
                t_pass "not selected: mknod 195:0 is denied"
        else
                t_is "$(val open)" failed "not selected: a mknod'ed /dev/nvidia0 cannot be opened"
                t_match "$OUT" '^open: .*(Operation not permitted|Permission denied)' \
                        "not selected: the device cgroup refuses it (EPERM)"
        fi
        # The second GPU (where there is one): the container gets it alone, and GPU 0, a real GPU it
        # was not given, stays denied even after mknod of its own number.
        if [ "$NGPU" -ge 2 ]; then
                GPU1_UUID=$(sed -n 2p "$T/smi.csv" | cut -d, -f1 | tr -d ' ')
                minor0=$(grep -l "$GPU0_UUID" /proc/driver/nvidia/gpus/*/information 2>/dev/null | head -n1 |
                        xargs -r sed -n 's/^Device Minor:[[:space:]]*//p')
                gpu_case second NVIDIA_VISIBLE_DEVICES=1 "$CU" MKNOD=1 "PROBE_MKNOD_MINOR=${minor0:-0}"
                t_match "$OUT" '^va: vector_add: PASS' "1: vector_add passes on the second GPU"
                t_is "$(smi_gpus)" 1 "1: nvidia-smi -L lists exactly one GPU"
                t_match "$OUT" "^smi: GPU 0: .*$GPU1_UUID" "1: it is the host's GPU 1 ($GPU1_UUID)"
                t_is "$(val gpunodes)" 1 "1: one /dev/nvidiaN node"
                t_is "$(printf '%s\n' "$OUT" | grep -c '^procgpu: ')" 1 "1: /proc/driver/nvidia/gpus shows that GPU only"
                if [ "$(val mknod)" = denied ]; then
                        t_pass "1: mknod of GPU 0's node (195:${minor0:-0}) is denied"
                else
                        t_is "$(val open)" failed "1: a mknod'ed node of GPU 0 (195:${minor0:-0}) cannot be opened"
                        t_match "$OUT" '^open: .*(Operation not permitted|Permission denied)' \
                                "1: the device cgroup refuses GPU 0 (EPERM)"
                fi
        else
                t_skip "second GPU case" "one GPU here"
        fi
        unchanged "after every case"
fi

# ---------------------------------------------------------------------------------------------
# gpu-cli configure by hand into a container that already runs (pivoted): open_tree + setns +
# move_mount on the real driver, then CUDA and nvidia-smi through `runc exec`.
if [ $HAVE_GPU = 1 ]; then
        r=$(new_rootfs manual)
        make_bundle "$T/b-manual" "$r" /bin/sleep 120
        RID=gh-manual-$$
        timeout 30 "$RUNC" --root "$T_RUNC_ROOT" run -d -b "$T/b-manual" "$RID" </dev/null >/dev/null 2>"$T/manual.err"
        MPID=$("$RUNC" --root "$T_RUNC_ROOT" state "$RID" 2>/dev/null | sed -n 's/.*"pid": *\([0-9]*\).*/\1/p')
        if [ -n "$MPID" ]; then
                t_ok "manual: gpu-cli configure --pid into a running container" \
                        "$GPU_CLI" configure --pid="$MPID" --device=0 --compute --utility "$r"
                OUT=$(timeout 60 "$RUNC" --root "$T_RUNC_ROOT" exec "$RID" /usr/local/bin/vector_add 2>&1)
                t_match "$OUT" '^vector_add: PASS' "manual: vector_add passes in the running container"
                OUT=$(timeout 60 "$RUNC" --root "$T_RUNC_ROOT" exec "$RID" nvidia-smi -L 2>&1)
                t_match "$OUT" '^GPU 0: ' "manual: nvidia-smi -L works in the running container"
        else
                t_fail "manual: start a detached container"
                t_diag_file "$T/manual.err"
        fi
        "$RUNC" --root "$T_RUNC_ROOT" delete -f "$RID" >/dev/null 2>&1
else
        t_skip "manual: configure into a running container" "$NO_GPU"
fi

# ---------------------------------------------------------------------------------------------
passed=$((T_COUNT - T_FAILED - T_SKIPPED))
echo "# gpu acceptance: $passed passed, $T_FAILED failed, $T_SKIPPED skipped"
t_done
