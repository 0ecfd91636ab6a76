#!/bin/bash
# gpu-cli configure end to end with the fake driver: containers under runc and crun configured from
# createRuntime and prestart hooks, and by hand into a running container.  Each case checks what a
# user would notice inside the container (nvidia-smi, the loader cache, CUDA, device access) and that
# the host's mount table is unchanged afterwards.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
t_need_root
t_need_cmd runc
MKROOT=$GH_SOURCE_DIR/tests/fake-driver/make-root.sh

DRV=$T/drv
DRVL=$T/drv-local
bash "$MKROOT" "$DRV" >"$T/mkroot.log" 2>&1 || { t_diag_file "$T/mkroot.log"; t_fatal "make-root.sh failed"; }
bash "$MKROOT" "$DRVL" --layout local >"$T/mkroot-l.log" 2>&1 || { t_diag_file "$T/mkroot-l.log"; t_fatal "make-root.sh --layout local failed"; }
CUDA_PROBE=$(find "$GH_BUILD_DIR/tests/fake-driver" -name cuda-probe -type f -perm -u+x | head -n1)

# The fake root's GPUs as the driver describes them (not as our tool reports them), in bus-id order.
gpu_uuids() {
        local d
        for d in $(ls "$1/proc/driver/nvidia/gpus" | sort); do
                sed -n 's/^GPU UUID:[[:space:]]*//p' "$1/proc/driver/nvidia/gpus/$d/information"
        done
}
UUIDS=($(gpu_uuids "$DRV"))
BUSIDS=($(ls "$DRV/proc/driver/nvidia/gpus" | sort))
[ "${#UUIDS[@]}" -ge 2 ] || t_fatal "the fake driver root has fewer than 2 GPUs"

# What the container runs: one line per fact, parsed by the checks below.
PROBE='
echo "smi:$(nvidia-smi -L 2>&1 | tr "\n" "|")"
echo "cache:$(check-ldconfig -p 2>&1 | grep -Eo "lib(cuda|nvidia-ml)\.so(\.1)? " | sort -u | tr -d " " | tr "\n" ",")"
echo "cuda:$(cuda-probe 2>&1 | head -n1)"
echo "params:$(grep ModifyDeviceFiles /proc/driver/nvidia/params 2>&1)"
echo "gpus:$(ls /proc/driver/nvidia/gpus 2>&1 | tr "\n" ",")"
echo "dev:$(ls /dev | grep -E "^nvidia" | sort | tr "\n" ",")"
[ -e /dev/nvidia0 ] && echo "open0:$(head -c1 /dev/nvidia0 2>&1 >/dev/null)"
mknod /tmp/other c 195 7 2>/dev/null && echo "open7:$(head -c1 /tmp/other 2>&1 >/dev/null)"
check-ldconfig -p 2>&1 | grep "=>" | sed "s/^[[:space:]]*/ldc:/"
echo "end"
'

# new_container NAME: a fresh rootfs and bundle running $PROBE, with CAP_MKNOD so the container can
# try to reach GPUs it was not given.
new_container() {
        local name=$1
        ROOTFS=$T/$name/rootfs
        BUNDLE=$T/$name/bundle
        make_busybox_rootfs "$ROOTFS" --glibc || return 1
        [ -n "$CUDA_PROBE" ] && install -m 755 "$CUDA_PROBE" "$ROOTFS/usr/local/bin/cuda-probe"
        make_bundle "$BUNDLE" "$ROOTFS" /bin/sh -c "$PROBE"
        bundle_add_caps "$BUNDLE" CAP_MKNOD
        # The image's own cache entries (its glibc) as the host's ldconfig reads them before the run:
        # "SONAME (FLAGS)", the path aside (--ldconfig=@HOST may spell /lib as /usr/lib).
        IMAGE_CACHE=$("$ROOTFS/usr/local/bin/check-ldconfig" -p -C "$ROOTFS/etc/ld.so.cache" 2>/dev/null | grep "=>" |
                sed 's/^[[:space:]]*//; s/ =>.*//' | sort -u)
}

# hook_script FILE DRIVER_ROOT CONFIGURE-ARGS...: a hook that reads the pid from the state on stdin
# and runs gpu-cli configure (optionally under $HOOK_WRAPPER).
hook_script() {
        local file=$1 drv=$2 a args=""
        shift 2
        for a in "$@"; do args="$args '$a'"; done
        cat >"$file" <<EOF
#!/bin/sh
pid=\$(sed -n 's/.*"pid": *\([0-9]*\).*/\1/p')
exec ${HOOK_WRAPPER:-} $GPU_CLI --root=$drv --debug=$T/cli.log configure --pid=\$pid $args $ROOTFS
EOF
        chmod 755 "$file"
}

field() { printf '%s\n' "$RUN_STDOUT" | sed -n "s/^$1://p"; }

# check_basic DESC WANT_GPUS: the standard assertions for a compute+utility container.
check_basic() {
        local desc=$1 want=$2
        t_is "$RUN_RC" 0 "$desc: container ran" || { t_diag "$RUN_STDERR"; t_diag_file "$T/cli.log"; }
        t_is "$(field smi | tr '|' '\n' | grep -c '^GPU ')" "$want" "$desc: nvidia-smi -L lists $want GPU(s)"
        t_match "$(field cache)" 'libcuda\.so\.1,.*libnvidia-ml\.so\.1' "$desc: the container's ld cache lists libcuda and libnvidia-ml"
        t_match "$(field cache)" '(^|,)libcuda\.so,' "$desc: the ld cache lists the development link libcuda.so (dlopen(\"libcuda.so\") works)"
        t_match "$(field cuda)" "^CUDA OK: $want device" "$desc: CUDA initialises with $want device(s)"
        t_is "$(field params)" "ModifyDeviceFiles: 0" "$desc: /proc/driver/nvidia/params says ModifyDeviceFiles: 0"
        t_match "$(field open0)" 'No such device or address' "$desc: /dev/nvidia0 is allowed by the cgroup (ENXIO: no real driver)"
        t_match "$(field open7)" 'Operation not permitted' "$desc: a GPU node made with mknod is denied by the cgroup"
        t_not "$desc: the image's /sbin/ldconfig never ran" ldconfig_ran "$ROOTFS"
        t_match "$IMAGE_CACHE" '^libc\.so\.6 ' "$desc: the image's ld cache listed its libc.so.6 before the run"
        t_is "$(comm -23 <(printf '%s\n' "$IMAGE_CACHE") <(field ldc | sed 's/ =>.*//' | sort -u))" "" \
                "$desc: every entry of the image's own ld cache (libc.so.6 ...) is still in the container's cache"
}

host_mountinfo_snapshot "$T/mounts.before"

# 1. createRuntime hook, runc, one GPU by index
new_container c1
hook_script "$T/hook1" "$DRV" --device=0 --compute --utility
bundle_add_hook "$BUNDLE" createRuntime "$T/hook1"
run_runc "$BUNDLE" c1
check_basic "runc createRuntime --device=0" 1
t_is "$(field dev)" "nvidia-uvm,nvidia-uvm-tools,nvidia0,nvidiactl," "only the selected GPU's node and the control nodes are in /dev"
t_is "$(field gpus)" "${BUSIDS[0]}," "/proc/driver/nvidia/gpus shows only the selected GPU"
t_match "$(field smi)" "${UUIDS[0]}" "nvidia-smi shows the selected GPU's UUID"
mountinfo_unchanged "host mount table unchanged after the run" "$T/mounts.before"

# 2. prestart hook, all GPUs
new_container c2
hook_script "$T/hook2" "$DRV" --device=all --compute --utility
bundle_add_hook "$BUNDLE" prestart "$T/hook2"
run_runc "$BUNDLE" c2
check_basic "runc prestart --device=all" "${#UUIDS[@]}"

# 3. crun, GPU by UUID
if have_cmd crun; then
        new_container c3
        hook_script "$T/hook3" "$DRV" "--device=${UUIDS[1]}" --compute --utility
        bundle_add_hook "$BUNDLE" createRuntime "$T/hook3"
        run_crun "$BUNDLE" c3
        t_is "$RUN_RC" 0 "crun createRuntime --device=UUID: container ran" || t_diag "$RUN_STDERR"
        t_match "$(field smi)" "${UUIDS[1]}" "crun: nvidia-smi shows the GPU chosen by UUID"
        t_is "$(field smi | tr '|' '\n' | grep -c '^GPU ')" 1 "crun: exactly one GPU"
fi

# 4. the local layout (the GPU machine's): the ELF nvidia-smi is injected, not the wrapper script
new_container c4
hook_script "$T/hook4" "$DRVL" "--device=${BUSIDS[1]}" --compute --utility
bundle_add_hook "$BUNDLE" createRuntime "$T/hook4"
run_runc "$BUNDLE" c4
t_is "$RUN_RC" 0 "local layout, --device=bus id: container ran" || t_diag "$RUN_STDERR"
t_match "$(field smi)" "^GPU 0: .*${UUIDS[1]}" "local layout: nvidia-smi runs and sees the GPU chosen by bus id"
t_match "$(field cache)" 'libcuda\.so\.1' "local layout: ld cache lists libcuda"

# 5. utility only: nvidia-smi works, CUDA fails cleanly
new_container c5
hook_script "$T/hook5" "$DRV" --device=0 --utility
bundle_add_hook "$BUNDLE" createRuntime "$T/hook5"
run_runc "$BUNDLE" c5
t_match "$(field smi)" "^GPU 0:" "utility only: nvidia-smi works"
t_nomatch "$(field cuda)" '^CUDA OK' "utility only: CUDA does not initialise"
t_nomatch "$(field dev)" 'nvidia-uvm' "utility only: no /dev/nvidia-uvm"

# 6. compute only: CUDA works, no nvidia-smi
new_container c6
hook_script "$T/hook6" "$DRV" --device=0 --compute
bundle_add_hook "$BUNDLE" createRuntime "$T/hook6"
run_runc "$BUNDLE" c6
t_match "$(field cuda)" '^CUDA OK: 1 device' "compute only: CUDA works"
t_nomatch "$(field smi)" '^GPU 0:' "compute only: no nvidia-smi"

# 7. no device: driver files but no GPU node
new_container c7
hook_script "$T/hook7" "$DRV" --compute --utility
bundle_add_hook "$BUNDLE" createRuntime "$T/hook7"
run_runc "$BUNDLE" c7
t_is "$RUN_RC" 0 "no --device: container ran" || t_diag "$RUN_STDERR"
t_nomatch "$(field dev)" 'nvidia[0-9]' "no --device: no /dev/nvidiaN"
t_match "$(field open7)" 'Operation not permitted' "no --device: a GPU node made with mknod is denied"

# 8. a requirement that the driver does not meet aborts the start with advice
new_container c8
hook_script "$T/hook8" "$DRV" --device=0 --compute "--require=cuda>=99.0"
bundle_add_hook "$BUNDLE" createRuntime "$T/hook8"
run_runc "$BUNDLE" c8
t_not "unmet cuda requirement: the container does not start" test "$RUN_RC" -eq 0
t_match "$RUN_STDERR" 'cuda>=99.0.*update' "unmet cuda requirement: the error names it and says to update the driver"

# 9. --no-devbind (mknod) under the legacy mount API (seccomp: openat2 and the new mount API fail)
NO_NEW_API=$GH_BUILD_DIR/tests/helpers/no-new-mount-api
if [ -x "$NO_NEW_API" ]; then
        new_container c9
        HOOK_WRAPPER=$NO_NEW_API hook_script "$T/hook9" "$DRV" --device=0 --compute --utility --no-devbind
        bundle_add_hook "$BUNDLE" createRuntime "$T/hook9"
        run_runc "$BUNDLE" c9
        check_basic "legacy mount API + --no-devbind" 1
fi

# 10. by hand into a running (pivoted) container
new_container c10
bundle_edit "$BUNDLE" 'c["process"]["args"] = ["/bin/sleep", "60"]'
RID=gh-c10-$$
timeout 20 runc --root "$T_RUNC_ROOT" run -d -b "$BUNDLE" "$RID" </dev/null >/dev/null 2>"$T/c10.err"
PID=$(runc --root "$T_RUNC_ROOT" state "$RID" 2>/dev/null | sed -n 's/.*"pid": *\([0-9]*\).*/\1/p')
if [ -n "$PID" ] && [ "${GH_EXPECT_NO_MOUNT_API:-0}" = 1 ]; then
        # The suite runs under tests/helpers/no-new-mount-api: a running container cannot be reached
        # without open_tree, and gpu-cli must say so instead of half-injecting.
        OUT=$("$GPU_CLI" --root="$DRV" configure --pid="$PID" --device=1 --compute --utility "$ROOTFS" 2>&1)
        t_is "$?" 1 "running container without the new mount API: refused"
        t_match "$OUT" 'already running and open_tree/move_mount are not available.*createRuntime' "... with an error that says why and what to do"
elif [ -n "$PID" ]; then
        t_ok "configure by hand into a running container" "$GPU_CLI" --root="$DRV" configure --pid="$PID" --device=1 --compute --utility "$ROOTFS"
        OUT=$(timeout 20 runc --root "$T_RUNC_ROOT" exec "$RID" nvidia-smi -L 2>&1)
        t_match "$OUT" "${UUIDS[1]}" "running container: nvidia-smi sees the injected GPU"
        OUT=$(timeout 20 runc --root "$T_RUNC_ROOT" exec "$RID" cuda-probe 2>&1)
        t_match "$OUT" '^CUDA OK: 1 device' "running container: CUDA works after injection"
else
        t_fail "start a detached container for manual configure"
        t_diag_file "$T/c10.err"
fi
runc --root "$T_RUNC_ROOT" delete -f "$RID" >/dev/null 2>&1

# 11. failures leave the host as it was
new_container c11
hook_script "$T/hook11" "$DRV" --device=9 --compute --utility
bundle_add_hook "$BUNDLE" createRuntime "$T/hook11"
run_runc "$BUNDLE" c11
t_match "$RUN_STDERR" "unknown device '9'" "an unknown device aborts the start and names the item"
new_container c12
rm -rf "$ROOTFS/usr/lib/x86_64-linux-gnu" && echo not-a-dir >"$ROOTFS/usr/lib/x86_64-linux-gnu"
hook_script "$T/hook12" "$DRV" --device=0 --compute --utility
bundle_add_hook "$BUNDLE" createRuntime "$T/hook12"
run_runc "$BUNDLE" c12
t_not "a failure part-way (library dir is a file) aborts the start" test "$RUN_RC" -eq 0
t_match "$RUN_STDERR" 'x86_64-linux-gnu' "the error names the path that failed"
# 13. every capability alone: what a user of that capability looks for
LISTING='ls /usr/lib/x86_64-linux-gnu /usr/lib/i386-linux-gnu /usr/bin /dev /dev/nvidia-caps 2>/dev/null | tr "\n" " "'
# cap_case CAP "WANTED NAMES" "UNWANTED NAMES": file and device names, matched as whole words in
# the listing of the library directories, /usr/bin and /dev.
cap_case() {
        local cap=$1 w
        new_container "cap-$cap"
        bundle_edit "$BUNDLE" 'c["process"]["args"] = ["/bin/sh", "-c", args[0]]' "$LISTING"
        hook_script "$T/hook-$cap" "$DRV" --device=0 "--$cap"
        bundle_add_hook "$BUNDLE" createRuntime "$T/hook-$cap"
        run_runc "$BUNDLE" "cap-$cap"
        t_is "$RUN_RC" 0 "--$cap alone: the container runs" || t_diag "$RUN_STDERR"
        for w in $2; do
                t_match " $RUN_STDOUT " " ${w//./\\.} " "--$cap alone: the container gets $w"
        done
        for w in $3; do
                t_nomatch " $RUN_STDOUT " " ${w//./\\.} " "--$cap alone: no $w"
        done
}
cap_case utility "libnvidia-ml.so.1 libnvidia-cfg.so.1 nvidia-smi nvidia-debugdump" "libcuda.so.1 nvidia-uvm"
cap_case compute "libcuda.so.1 libcuda.so libnvidia-ptxjitcompiler.so.1 libnvidia-nvvm.so.4 nvidia-cuda-mps-control nvidia-uvm" "libnvidia-ml.so.1 nvidia-smi"
cap_case video "libnvcuvid.so.1 libnvidia-encode.so.1 libnvidia-opticalflow.so libcuda.so.1" "libGLX_nvidia.so.0"
cap_case graphics "libGLX_nvidia.so.0 libGLX_indirect.so.0 libEGL_nvidia.so.0 libnvidia-glcore.so.580.95.05" "nvidia-modeset libEGL.so.1 libcuda.so.1"
cap_case display "libGLX_nvidia.so.0 nvidia-modeset" ""
cap_case ngx "libnvidia-ngx.so.1" "libcuda.so.1"

# 14. compat32 with compute: the i386 libraries in the i386 directory and in the ld cache
if ls "$DRV"/usr/lib/i386-linux-gnu/libcuda.so.* >/dev/null 2>&1; then
        new_container c32
        bundle_edit "$BUNDLE" 'c["process"]["args"] = ["/bin/sh", "-c", "ls /usr/lib/i386-linux-gnu; check-ldconfig -p"]'
        hook_script "$T/hook-c32" "$DRV" --device=0 --compute --compat32
        bundle_add_hook "$BUNDLE" createRuntime "$T/hook-c32"
        run_runc "$BUNDLE" c32
        t_match "$RUN_STDOUT" '^libcuda\.so\.[0-9]+\.[0-9]+\.[0-9]+$' "compat32: the i386 libcuda is in /usr/lib/i386-linux-gnu" || t_diag "$RUN_STDERR"
        t_match "$RUN_STDOUT" 'libcuda\.so\.1 \(libc6\) => /usr/lib/i386-linux-gnu/libcuda\.so\.1' "compat32: the ld cache has the i386 libcuda"
        t_match "$RUN_STDOUT" 'libcuda\.so\.1 \(libc6,x86-64\) => /usr/lib/x86_64-linux-gnu/libcuda\.so\.1' "compat32: and the 64-bit one"
else
        t_skip "compat32" "the fake driver has no i386 libraries (no gcc -m32)"
fi

# 15. MIG (8-GPU profile): a MIG device gives its parent GPU's node and exactly its own caps nodes
DRV8=$T/drv8
if bash "$MKROOT" "$DRV8" --profile "$GH_SOURCE_DIR/tests/fake-driver/profiles/8gpu-mig.json" >"$T/mkroot8.log" 2>&1; then
        # The expectation comes from the profile itself: the first MIG device of the first GPU (in
        # bus-id order) that has any, its parent's minor, its caps minors, and a sibling's.
        read -r MIG_UUID PARENT_MINOR GI_MINOR CI_MINOR OTHER_GI <<<"$("$GH_PYTHON" - "$GH_SOURCE_DIR/tests/fake-driver/profiles/8gpu-mig.json" <<'PYEOF'
import json, sys
gpus = sorted(json.load(open(sys.argv[1]))["gpus"], key=lambda g: g["bus_id"].lower())
for g in gpus:
    m = g.get("mig", {}).get("devices", [])
    if len(m) >= 2:
        print(m[0]["uuid"], g["minor"], m[0]["gi_minor"], m[0]["ci_minor"], m[1]["gi_minor"])
        break
PYEOF
)"
        new_container mig
        bundle_edit "$BUNDLE" 'c["process"]["args"] = ["/bin/sh", "-c", "ls /dev /dev/nvidia-caps | tr \"\\n\" \" \"; echo; mknod /tmp/o c $(stat -c %t /dev/nvidia-caps/nvidia-cap'"$GI_MINOR"' | xargs printf %d 0x 2>/dev/null || echo 510) '"$OTHER_GI"' && head -c1 /tmp/o"]'
        hook_script "$T/hook-mig" "$DRV8" "--device=$MIG_UUID" --compute --utility
        bundle_add_hook "$BUNDLE" createRuntime "$T/hook-mig"
        run_runc "$BUNDLE" mig
        t_is "$(printf '%s\n' "$RUN_STDOUT" | head -n1 | tr ' ' '\n' | grep -E '^nvidia[0-9]+$' | tr '\n' ' ')" "nvidia$PARENT_MINOR " "MIG device: only its parent GPU's node (/dev/nvidia$PARENT_MINOR)" || t_diag "$RUN_STDERR"
        t_match "$RUN_STDOUT" " nvidia-cap$GI_MINOR .*nvidia-cap$CI_MINOR |nvidia-cap$CI_MINOR .*nvidia-cap$GI_MINOR " "MIG device: its GPU-instance and compute-instance caps nodes"
        t_nomatch "$RUN_STDOUT" " nvidia-cap$OTHER_GI " "MIG device: no caps node of a sibling MIG device"
        t_match "$RUN_STDERR$RUN_STDOUT" 'Operation not permitted' "MIG device: a sibling's caps node made with mknod is denied"
else
        t_diag_file "$T/mkroot8.log"
        t_fail "make-root.sh --profile 8gpu-mig"
fi

# 16. a non-Debian image: libraries go to /usr/lib64 and the loader still finds them
new_container rpm
rm -f "$ROOTFS/etc/debian_version"
hook_script "$T/hook-rpm" "$DRV" --device=0 --compute --utility
bundle_add_hook "$BUNDLE" createRuntime "$T/hook-rpm"
bundle_edit "$BUNDLE" 'c["process"]["args"] = ["/bin/sh", "-c", "ls /usr/lib64 | grep -c nvidia-ml; nvidia-smi -L"]'
run_runc "$BUNDLE" rpm
t_match "$RUN_STDOUT" '^[1-9]' "non-Debian image: libnvidia-ml is in /usr/lib64" || t_diag "$RUN_STDERR"
t_match "$RUN_STDOUT" '^GPU 0:' "non-Debian image: nvidia-smi finds it through the ld cache"

# 17. --ldconfig=@/sbin/ldconfig: the HOST's ldconfig, sandboxed, updates the cache; the image's never runs
HOST_LDCONFIG=$(readlink -f /sbin/ldconfig)
if file -L "$HOST_LDCONFIG" 2>/dev/null | grep -q 'ELF.*static'; then
        new_container ldc
        hook_script "$T/hook-ldc" "$DRV" --device=0 --compute --utility "--ldconfig=@$HOST_LDCONFIG"
        bundle_add_hook "$BUNDLE" createRuntime "$T/hook-ldc"
        run_runc "$BUNDLE" ldc
        check_basic "--ldconfig=@$HOST_LDCONFIG" 1
else
        t_skip "--ldconfig=@/sbin/ldconfig" "the host's ldconfig is not a static ELF program"
fi

# 18. the plan kept in the driver-state cache (lib/core/plancache.c): the second start of the same
# request on the same driver takes it instead of discovering the driver again, and its container
# gets the same; a driver socket that appears makes another key; cache clear removes the plans.
PCSF=$T/plans/driver-state.json
pc_start() {
        new_container "$1"
        cat >"$T/hook-$1" <<EOF
#!/bin/sh
pid=\$(sed -n 's/.*"pid": *\([0-9]*\).*/\1/p')
exec $GPU_CLI --root=$DRV --state-file=$PCSF --debug=$T/cli-$1.log configure --pid=\$pid --device=all --compute --utility $ROOTFS
EOF
        chmod 755 "$T/hook-$1"
        bundle_add_hook "$BUNDLE" createRuntime "$T/hook-$1"
        run_runc "$BUNDLE" "$1"
}
pc_start pc1
check_basic "kept plan: first start (builds and keeps it)" "${#UUIDS[@]}"
t_is "$(ls "$PCSF".plan-* 2>/dev/null | wc -l)" 1 "kept plan: the first start kept one plan"
t_nomatch "$(cat "$T/cli-pc1.log")" 'plan: kept one' "kept plan: the first start built its plan"
PC1_OUT=$RUN_STDOUT
injected() { grep -o 'injected .*' "$1" | sort; }
pc_start pc2
check_basic "kept plan: second start (takes it)" "${#UUIDS[@]}"
t_match "$(cat "$T/cli-pc2.log")" 'plan: kept one' "kept plan: the second start took the kept plan"
t_nomatch "$(cat "$T/cli-pc2.log")" 'discover: driver files' "kept plan: and did not discover the driver"
t_is "$RUN_STDOUT" "$PC1_OUT" "kept plan: the container sees exactly what the built plan gave it"
t_is "$(injected "$T/cli-pc2.log")" "$(injected "$T/cli-pc1.log")" "kept plan: the same files, links and nodes injected"
[ -n "$(injected "$T/cli-pc1.log")" ] || t_diag "no 'injected' lines in the debug log: the comparison above is empty"

# A kept plan that does not hold is never used: each of these starts builds the plan again (and the
# container gets the same as from a built plan).
pc_expect_rebuilt() { # NAME DESC
        pc_start "$1"
        t_is "$RUN_RC" 0 "kept plan: $2: the container ran" || t_diag "$RUN_STDERR"
        t_nomatch "$(cat "$T/cli-$1.log")" 'plan: kept one' "kept plan: $2: not taken"
        t_match "$(cat "$T/cli-$1.log")" 'discover: driver files' "kept plan: $2: the driver discovered again"
        t_is "$RUN_STDOUT" "$PC1_OUT" "kept plan: $2: the container sees what a built plan gives"
}
pc_file() { ls "$PCSF".plan-* | head -n1; }
# The driver changed (its ld.so.cache's identity is part of the fingerprint).
touch -d '2001-01-01 00:00:00' "$DRV/etc/ld.so.cache"
pc_expect_rebuilt pc4 "after the driver's ld.so.cache changed"
# The driver's libcuda changed while its ld.so.cache did not: the fingerprint, taken with the
# libraries the kept plan's names (the cache is not parsed again), still sees the file's identity.
PC_CUDA=$(readlink -f "$(find "$DRV" -path '*/x86_64-linux-gnu/libcuda.so.1' | head -n 1)")
if [ -f "$PC_CUDA" ]; then
        pc_start pc4a
        t_match "$(cat "$T/cli-pc4a.log")" 'plan: kept one' "kept plan: (taken again before libcuda changes)"
        touch -d '2001-01-01 00:00:00' "$PC_CUDA"
        pc_expect_rebuilt pc4b "after the driver's libcuda changed (same ld.so.cache)"
else
        t_skip "kept plan: after the driver's libcuda changed" "no libcuda.so.1 in the fake driver root"
fi
# A forged plan, root's and well framed, naming another character device (1:3, /dev/null's numbers)
# for /dev/nvidiactl and its rule: refused because the driver root's node is not that device.
"$GH_PYTHON" - "$(pc_file)" <<'PY'
import re, sys
p = sys.argv[1]
hdr, rest = open(p, "rb").read().split(b"\n", 1)
magic, kl, fl, pl = hdr.rsplit(b" ", 3)
kl, fl, pl = int(kl), int(fl), int(pl)
key, fp, plan = rest[:kl], rest[kl:kl + fl], rest[kl + fl:]
m = re.search(rb'"/dev/nvidiactl",null,(\d+),(\d+),(\d+)', plan)
mj, mn = m.group(2), m.group(3)
plan = plan.replace(m.group(0), b'"/dev/nvidiactl",null,%s,1,3' % m.group(1))
plan = plan.replace(b"[99,%s,%s]" % (mj, mn), b"[99,1,3]")
open(p, "wb").write(b"%s %d %d %d\n" % (magic, kl, fl, len(plan)) + key + fp + plan)
PY
# The node is checked as it is opened for the bind mount (not before): the kept plan is read, then
# dropped when its node does not open as that device, and the plan built again.
pc_start pc5
t_is "$RUN_RC" 0 "kept plan: a forged device node: the container ran" || t_diag "$RUN_STDERR"
t_match "$(cat "$T/cli-pc5.log")" 'kept one no longer opens.*nvidiactl is not the character device 1:3' "kept plan: a forged device node: refused, and the log says why"
t_match "$(cat "$T/cli-pc5.log")" 'discover: driver files' "kept plan: a forged device node: the driver discovered again"
t_is "$RUN_STDOUT" "$PC1_OUT" "kept plan: a forged device node: the container sees what a built plan gives"
# Garbage in the plan file, and a plan file others may write.
printf 'gpu-hook-plan 1 3 3 3\nabcdef{x}' >"$(pc_file)"
pc_expect_rebuilt pc6 "a corrupt plan file"
chmod 0666 "$(pc_file)"
pc_expect_rebuilt pc7 "a plan file others may write"
chmod 0644 "$(pc_file)"
# A file the kept plan names is gone while the fingerprint holds (a binary removed by hand): the
# sources do not open, so the plan is built again and kept anew.
pc_start pc8
t_match "$(cat "$T/cli-pc8.log")" 'plan: kept one' "kept plan: (kept again before removing a file)"
GONE=$(grep -o 'injected /usr/bin/nvidia-[a-z-]*' "$T/cli-pc8.log" | grep -v nvidia-smi | head -n1 | sed 's/injected //')
if [ -n "$GONE" ] && [ -e "$DRV$GONE" ]; then
        mv "$DRV$GONE" "$T/gone.bin"
        pc_start pc9
        t_is "$RUN_RC" 0 "kept plan: $GONE removed: the container ran" || t_diag "$RUN_STDERR"
        t_match "$(cat "$T/cli-pc9.log")" 'kept one no longer opens' "kept plan: $GONE removed: the kept plan did not open"
        t_nomatch "$(injected "$T/cli-pc9.log")" "injected $GONE\$" "kept plan: $GONE removed: and the plan built instead leaves it out"
        mv "$T/gone.bin" "$DRV$GONE"
else
        t_skip "kept plan: a file the kept plan names is gone" "no driver binary besides nvidia-smi was injected"
fi
if [ ! -e "$DRV/run/nvidia-persistenced/socket" ]; then
        mkdir -p "$DRV/run/nvidia-persistenced"
        "$GH_PYTHON" -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$DRV/run/nvidia-persistenced/socket"
        pc_start pc3
        t_is "$RUN_RC" 0 "kept plan: a start after nvidia-persistenced's socket appeared" || t_diag "$RUN_STDERR"
        t_nomatch "$(cat "$T/cli-pc3.log")" 'plan: kept one' "kept plan: the socket makes another key: the plan is built again"
        t_match "$(cat "$T/cli-pc3.log")" 'injected /run/nvidia-persistenced/socket' "kept plan: and it has the socket"
        t_is "$(ls "$PCSF".plan-* 2>/dev/null | wc -l)" 2 "kept plan: two plans kept now"
        rm -rf "$DRV/run/nvidia-persistenced"
else
        t_skip "kept plan: a driver socket that appears" "the fake driver root has the socket already"
fi
t_ok "kept plan: cache clear" "$GPU_CLI" --root="$DRV" --state-file="$PCSF" cache clear
t_is "$(ls "$PCSF".plan-* 2>/dev/null | wc -l)" 0 "kept plan: cache clear removes the kept plans"

mountinfo_unchanged "host mount table unchanged after all runs and failures" "$T/mounts.before"
t_done
