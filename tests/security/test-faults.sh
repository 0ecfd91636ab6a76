#!/bin/bash
# Fault injection: no driver, an NVML service that crashes, hangs or fails, mount refused (EPERM),
# openat2 and the new mount API missing (ENOSYS), a full /etc (ENOSPC) and gpu-cli killed at random
# points.  Each case must end in a clear error or a working fallback, leave the host's mount table as
# it was, and leave no process behind.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
t_need_root
t_need_cmd runc
MKROOT=$GH_SOURCE_DIR/tests/fake-driver/make-root.sh
DENY=$GH_BUILD_DIR/tests/helpers/deny-syscalls
NO_NEW_API=$GH_BUILD_DIR/tests/helpers/no-new-mount-api

mkroot() {
        local out=$1
        shift
        bash "$MKROOT" "$out" "$@" >"$out.log" 2>&1 || { t_diag_file "$out.log"; return 1; }
}
DRV=$T/drv
mkroot "$DRV" || t_fatal "make-root.sh failed"

PROBE='echo "smi:$(nvidia-smi -L 2>&1 | tr "\n" "|")"'
field() { printf '%s\n' "$RUN_STDOUT" | sed -n "s/^$1://p"; }

# new_container NAME: a rootfs and a bundle running $PROBE (or ARGS).
new_container() {
        CASE=$1
        shift
        ROOTFS=$T/$CASE/rootfs
        BUNDLE=$T/$CASE/bundle
        make_busybox_rootfs "$ROOTFS" --glibc || return 1
        if [ $# -gt 0 ]; then
                make_bundle "$BUNDLE" "$ROOTFS" "$@"
        else
                make_bundle "$BUNDLE" "$ROOTFS" /bin/sh -c "$PROBE"
        fi
}

# add_hook DRIVER_ROOT [WRAPPER...] -- CONFIGURE-ARGS...: a createRuntime hook running gpu-cli
# configure (under WRAPPER) on $ROOTFS.
add_hook() {
        local drv=$1 wrap="" args="" a
        shift
        while [ $# -gt 0 ] && [ "$1" != -- ]; do wrap="$wrap '$1'"; shift; done
        shift
        for a in "$@"; do args="$args '$a'"; done
        cat >"$T/$CASE/hook" <<EOF
#!/bin/sh
pid=\$(sed -n 's/.*"pid": *\([0-9]*\).*/\1/p')
exec $wrap $GPU_CLI --root=$drv --debug=$T/$CASE/cli.log configure --pid=\$pid $args $ROOTFS
EOF
        chmod 755 "$T/$CASE/hook"
        bundle_add_hook "$BUNDLE" createRuntime "$T/$CASE/hook"
}

# gpu-cli's own error lines in the runtime's output.
cli_errors() { printf '%s\n' "$RUN_STDERR" | grep -o 'gpu-cli: .*' | sed 's/\\n.*//'; }


# procs_in ROOT: processes whose root or cwd is ROOT or below (the NVML service is chrooted there).
procs_in() {
        local p r c
        for p in /proc/[0-9]*; do
                r=$(readlink "$p/root" 2>/dev/null) || continue
                c=$(readlink "$p/cwd" 2>/dev/null)
                case "$r/|$c/" in "$1"/*|*"|$1"/*) echo "${p#/proc/} $(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)" ;; esac
        done
}

# reaped CMD...: runs CMD as the child of a subreaper, so that anything CMD leaves behind is
# reparented to it.  Prints CMD's output, then "reaped: RC SECONDS LEFTOVER ZOMBIES" as the last
# line (LEFTOVER: live descendants when CMD exited; ZOMBIES: unreaped ones); leftovers are killed.
reaped() {
        "$GH_PYTHON" - "$@" <<'EOF'
import ctypes, os, signal, sys, time
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
t0 = time.monotonic()
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
_, st = os.waitpid(pid, 0)
dt = time.monotonic() - t0
rc = os.waitstatus_to_exitcode(st)
# A grace period for a child told to die with its parent (PDEATHSIG is asynchronous).
left, zomb = [], []
for _ in range(20):
    left, zomb = [], []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            f = open("/proc/%s/stat" % d).read()
        except OSError:
            continue
        fields = f[f.rindex(")") + 2:].split()
        if int(fields[1]) == os.getpid():
            (zomb if fields[0] == "Z" else left).append(int(d))
    if not left and not zomb:
        break
    time.sleep(0.05)
for p in left:
    try:
        os.kill(p, signal.SIGKILL)
    except OSError:
        pass
while True:
    try:
        os.waitpid(-1, 0)
    except ChildProcessError:
        break
sys.stdout.flush()
print("reaped: %d %.2f %d %d" % (rc, dt, len(left), len(zomb)))
EOF
}

host_mountinfo_snapshot "$T/mounts.before"

# A detached container to configure by hand: the pid that gpu-cli is given.
start_detached() {
        local name=$1
        new_container "$name" /bin/sleep 600 || return 1
        DID=gh-$name-$$
        mkdir -p "$T_RUNC_ROOT"
        timeout 20 "$RUNC" --root "$T_RUNC_ROOT" run -d -b "$BUNDLE" "$DID" </dev/null >/dev/null 2>"$T/$name.err"
        DPID=$("$RUNC" --root "$T_RUNC_ROOT" state "$DID" 2>/dev/null | sed -n 's/.*"pid": *\([0-9]*\).*/\1/p')
        [ -n "$DPID" ]
}
stop_detached() { "$RUNC" --root "$T_RUNC_ROOT" delete -f "$DID" >/dev/null 2>&1; }

# --- 1. no driver
mkdir -p "$T/empty"
start_detached nodrv || t_fail "start a detached container"
OUT=$(reaped "$GPU_CLI" --root="$T/empty" configure --pid="$DPID" --device=0 --compute --utility "$ROOTFS" 2>&1)
R=($(printf '%s\n' "$OUT" | sed -n 's/^reaped: //p'))
t_is "${R[0]}" 3 "no driver: gpu-cli configure exits 3"
t_match "$OUT" "^gpu-cli: .*(no NVIDIA driver|driver).*$T/empty" "no driver: the error says no driver was found under the root"
t_is "$(printf '%s\n' "$OUT" | grep -c '^gpu-cli:')" 1 "no driver: one error line"
t_is "${R[2]}:${R[3]}" 0:0 "no driver: no process left, no zombie"
stop_detached
new_container nodrv-hook
add_hook "$T/empty" -- --device=0 --compute --utility
run_runc "$BUNDLE" nodrv
t_not "no driver: the container does not start" test "$RUN_RC" -eq 0
t_match "$(cli_errors)" "driver" "no driver: the runtime's error carries gpu-cli's line" || t_diag "$RUN_STDERR"
t_is "$RUN_STDOUT" "" "no driver: the container's process never ran"

# --- 2. NVML service that crashes, hangs, answers errors (an arch requirement forces the NVML path;
# a cuda-only one would take the CUDA version from libcuda instead, docs/statecache.md)
for mode in crash hang error; do
        D=$T/drv-$mode
        if ! mkroot "$D" --nvml-mode $mode; then
                t_fail "nvml $mode: make-root.sh --nvml-mode $mode"
                continue
        fi
        start_detached "nvml-$mode" || t_fail "start a detached container"
        OUT=$(reaped "$GPU_CLI" --root="$D" configure --pid="$DPID" --device=0 --compute --utility \
                "--require=cuda>=1.0,arch>=1.0" "$ROOTFS" 2>&1)
        R=($(printf '%s\n' "$OUT" | sed -n 's/^reaped: //p'))
        t_diag "nvml $mode: exit ${R[0]} after ${R[1]} s: $(printf '%s\n' "$OUT" | grep '^gpu-cli:' | head -n1)"
        t_not "nvml $mode: configure fails" test "${R[0]}" = 0
        t_match "$OUT" '^gpu-cli: .*(NVML|nvml|libnvidia-ml|driver service)' "nvml $mode: a clear error naming NVML"
        t_is "$(printf '%s\n' "$OUT" | grep -c '^gpu-cli:')" 1 "nvml $mode: one error line"
        t_ok "nvml $mode: it fails within the RPC timeout (5 s, got ${R[1]} s)" \
                "$GH_PYTHON" -c "import sys; sys.exit(0 if float(sys.argv[1]) < 7.5 else 1)" "${R[1]}"
        t_is "${R[2]}:${R[3]}" 0:0 "nvml $mode: no process left behind, no zombie"
        t_is "$(procs_in "$D")" "" "nvml $mode: nothing runs in the driver root afterwards"
        stop_detached
        # The same through a hook: the container does not start.
        new_container "nvml-$mode-hook"
        add_hook "$D" -- --device=0 --compute --utility "--require=cuda>=1.0,arch>=1.0"
        run_runc "$BUNDLE" "nvml-$mode"
        t_not "nvml $mode: the container does not start" test "$RUN_RC" -eq 0
        t_is "$RUN_STDOUT" "" "nvml $mode: the container's process never ran"
done

# --- 3. mount refused (EPERM), as under a restrictive seccomp profile or LSM
if [ -x "$DENY" ]; then
        for sc in mount,move_mount mount,move_mount,open_tree,fsopen,fsmount,mount_setattr move_mount; do
                host_mountinfo_snapshot "$T/mounts.case"
                new_container "eperm-${sc//,/-}"
                add_hook "$DRV" "$DENY" EPERM "$sc" -- --device=0 --compute --utility
                run_runc "$BUNDLE" eperm
                t_not "EPERM from $sc: the container does not start" test "$RUN_RC" -eq 0
                t_match "$(cli_errors)" '^gpu-cli: configure: .*(mount|Operation not permitted).*' \
                        "EPERM from $sc: a clear error" || t_diag "$RUN_STDERR"
                t_match "$(cli_errors)" 'Operation not permitted' "EPERM from $sc: the error gives the reason"
                t_is "$(cli_errors | wc -l)" 1 "EPERM from $sc: one error line"
                t_diag "EPERM from $sc: $(cli_errors)"
                mountinfo_unchanged "EPERM from $sc: host mount table unchanged" "$T/mounts.case"
        done
        # Only the legacy mount(2) refused: the new API does the work, nothing falls back to it.
        new_container eperm-legacy-only
        add_hook "$DRV" "$DENY" EPERM mount -- --device=0 --compute --utility
        run_runc "$BUNDLE" eperm
        t_is "$RUN_RC" 0 "EPERM from mount(2) only: the new mount API injects anyway" || t_diag "$(cli_errors)"
        t_match "$(field smi)" '^GPU 0: ' "EPERM from mount(2) only: nvidia-smi -L lists the GPU"
else
        t_skip "EPERM from mount" "deny-syscalls was not built (no libseccomp)"
fi

# --- 4. ENOSYS from openat2 / open_tree / move_mount / mount_setattr / fsopen: the fallbacks work
if [ -x "$NO_NEW_API" ]; then
        for variant in all only-openat2; do
                new_container "enosys-$variant"
                if [ $variant = all ]; then
                        add_hook "$DRV" "$NO_NEW_API" -- --device=0 --compute --utility
                else
                        add_hook "$DRV" "$NO_NEW_API" --only-openat2 -- --device=0 --compute --utility
                fi
                host_mountinfo_snapshot "$T/mounts.case"
                run_runc "$BUNDLE" enosys
                t_is "$RUN_RC" 0 "ENOSYS ($variant): the container starts" || t_diag "$(cli_errors)"
                t_match "$(field smi)" '^GPU 0: ' "ENOSYS ($variant): nvidia-smi -L lists the GPU"
                mountinfo_unchanged "ENOSYS ($variant): host mount table unchanged" "$T/mounts.case"
        done
        if [ -x "$DENY" ]; then
                new_container enosys-fsopen
                add_hook "$DRV" "$DENY" ENOSYS fsopen,fsconfig,fsmount -- --device=0 --compute --utility
                run_runc "$BUNDLE" enosys
                t_is "$RUN_RC" 0 "ENOSYS from fsopen only: /proc masking falls back to mount(2)" || t_diag "$(cli_errors)"
        fi
else
        t_skip "ENOSYS from the new mount API" "no-new-mount-api was not built (no libseccomp)"
fi

# --- 5. ENOSPC writing the ld cache: the image's /etc on a tiny tmpfs that is full
new_container enospc
cp -a "$ROOTFS/etc" "$T/enospc/etc.saved"
mount -t tmpfs -o size=256k,nr_inodes=64 gh-enospc "$ROOTFS/etc"
cp -a "$T/enospc/etc.saved/." "$ROOTFS/etc/"
dd if=/dev/zero of="$ROOTFS/etc/filler" bs=4k 2>/dev/null
sync
ETC_BEFORE=$(cd "$ROOTFS/etc" && ls -lA --time-style=full-iso && md5sum ld.so.cache)
add_hook "$DRV" -- --device=0 --compute --utility
host_mountinfo_snapshot "$T/mounts.case"
run_runc "$BUNDLE" enospc
t_not "ENOSPC: the container does not start" test "$RUN_RC" -eq 0
t_match "$(cli_errors)" 'ld\.so\.cache.*No space left on device' "ENOSPC: the error names the ld cache and the reason" || t_diag "$RUN_STDERR"
t_is "$(cli_errors | wc -l)" 1 "ENOSPC: one error line"
t_is "$(cd "$ROOTFS/etc" && ls -lA --time-style=full-iso && md5sum ld.so.cache)" "$ETC_BEFORE" \
        "ENOSPC: the image's /etc is as it was (no temporary file left, old cache intact)"
mountinfo_unchanged "ENOSPC: host mount table unchanged" "$T/mounts.case"
umount "$ROOTFS/etc"

# --- 6. SIGKILL at random points of configure into a running container
KILLS=${GH_KILL_RUNS:-40}
start_detached sigkill || t_fail "start a detached container"
host_mountinfo_snapshot "$T/mounts.case"
# A subreaper runs each gpu-cli and kills it after 0-30 ms: whatever gpu-cli started (the NVML
# service) is reparented to it, so a child that outlives a killed gpu-cli is counted, not lost.
"$GH_PYTHON" - "$KILLS" "$GPU_CLI" "--root=$DRV" configure "--pid=$DPID" --device=0 --compute --utility "$ROOTFS" \
        >"$T/sigkill.out" 2>&1 <<'EOF2'
import ctypes, os, random, signal, sys, time
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
runs, cmd = int(sys.argv[1]), sys.argv[2:]
killed = done = leftover = 0
def children():
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                f = open("/proc/%s/stat" % d).read()
            except OSError:
                continue
            fields = f[f.rindex(")") + 2:].split()
            if int(fields[1]) == os.getpid() and fields[0] != "Z":
                out.append(int(d))
    return out
for i in range(runs):
    argv = cmd[:-1] + (["--require=cuda>=1.0,arch>=1.0"] if i % 2 else []) + cmd[-1:]
    null = os.open("/dev/null", os.O_RDWR)
    pid = os.fork()
    if pid == 0:
        os.dup2(null, 0); os.dup2(null, 1); os.dup2(null, 2)
        os.execv(argv[0], argv)
    os.close(null)
    time.sleep(random.randint(0, 30) / 1000.0)
    r, _ = os.waitpid(pid, os.WNOHANG)
    if r == 0:
        os.kill(pid, signal.SIGKILL)
        killed += 1
    else:
        done += 1
    os.waitpid(pid, 0) if r == 0 else None
    # The service child gets SIGKILL when its parent dies: allow it a moment.
    for _ in range(40):
        left = children()
        for p in left:
            try:
                os.waitpid(p, os.WNOHANG)
            except ChildProcessError:
                pass
        left = children()
        if not left:
            break
        time.sleep(0.025)
    if left:
        leftover += len(left)
        for p in left:
            os.kill(p, signal.SIGKILL)
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break
print("sigkill: %d %d %d" % (killed, done, leftover))
EOF2
R=($(sed -n 's/^sigkill: //p' "$T/sigkill.out"))
[ ${#R[@]} -eq 3 ] || { t_diag_file "$T/sigkill.out"; R=(0 0 -1); }
t_diag "SIGKILL: $KILLS runs, ${R[0]} killed mid-way, ${R[1]} had finished"
t_is "${R[2]}" 0 "SIGKILL: no process outlived a killed gpu-cli (the NVML service dies with it)"
sleep 0.3
t_is "$(procs_in "$DRV")" "" "SIGKILL: no NVML service or other process left in the driver root"
t_is "$(pgrep -f -- "--root=$DRV configure" | tr '\n' ' ')" "" "SIGKILL: no gpu-cli left running"
mountinfo_unchanged "SIGKILL: host mount table unchanged" "$T/mounts.case"
OUT=$(reaped "$GPU_CLI" --root="$DRV" configure --pid="$DPID" --device=0 --compute --utility "$ROOTFS" 2>&1)
t_match "$OUT" '^reaped: 0 ' "SIGKILL: a configure afterwards still succeeds" || t_diag "$OUT"
OUT=$(timeout 20 "$RUNC" --root "$T_RUNC_ROOT" exec "$DID" nvidia-smi -L 2>&1)
t_match "$OUT" '^GPU 0: ' "SIGKILL: the container sees its GPU afterwards"
stop_detached

mountinfo_unchanged "host mount table unchanged after every case" "$T/mounts.before"
t_done
