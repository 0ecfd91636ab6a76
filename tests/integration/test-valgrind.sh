#!/bin/bash
# Memory safety of the real binaries: gpu-cli info, list and configure (from a createRuntime hook and
# by hand into a running container) and gpu-hook (its dynamically linked build: memcheck follows the
# heap only through the dynamic loader) under valgrind's memcheck: no invalid access, no use of
# uninitialised memory, no definite or indirect leak.  (Valgrind 3.19 does not know openat2,
# so these runs also exercise the resolver's component walk.)
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
t_need_root
t_need_cmd valgrind runc
MKROOT=$GH_SOURCE_DIR/tests/fake-driver/make-root.sh
DRV=$T/drv
bash "$MKROOT" "$DRV" >"$T/mkroot.log" 2>&1 || { t_diag_file "$T/mkroot.log"; t_fatal "make-root.sh failed"; }
VG="valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect --error-exitcode=99 --log-file=$T/vg.%p.log"

vg_ok() {
        local desc=$1
        shift
        rm -f "$T"/vg.*.log
        $VG "$@" </dev/null >"$T/vg.out" 2>&1
        local rc=$?
        if [ $rc -eq 0 ] && ! grep -q '==[0-9]*==' "$T"/vg.*.log 2>/dev/null; then
                t_pass "$desc"
        else
                t_fail "$desc (exit $rc)"
                cat "$T"/vg.*.log "$T/vg.out" 2>/dev/null | head -n 40 | sed 's/^/#   /'
        fi
}

vg_ok "gpu-cli info --fast" "$GPU_CLI" --root="$DRV" info --fast
vg_ok "gpu-cli info (NVML service)" "$GPU_CLI" --root="$DRV" info --json
vg_ok "gpu-cli list" "$GPU_CLI" --root="$DRV" list
vg_ok "gpu-cli list --json --device=all" "$GPU_CLI" --root="$DRV" list --json --device=all
vg_ok "gpu-hook --dry-run" sh -c "printf '{\"ociVersion\":\"1.0.2\",\"id\":\"x\",\"pid\":1,\"bundle\":\"/nonexistent\"}' | ${GPU_HOOK_DYNAMIC:-$GPU_HOOK} --dry-run createRuntime; exit 0"

# configure from a createRuntime hook, under valgrind
make_busybox_rootfs "$T/rootfs" --glibc
make_bundle "$T/b" "$T/rootfs" /bin/sh -c 'nvidia-smi -L'
cat >"$T/hook" <<EOF
#!/bin/sh
pid=\$(sed -n 's/.*"pid": *\([0-9]*\).*/\1/p')
exec $VG $GPU_CLI --root=$DRV configure --pid=\$pid --device=all --compute --utility $T/rootfs
EOF
chmod 755 "$T/hook"
bundle_add_hook "$T/b" createRuntime "$T/hook"
rm -f "$T"/vg.*.log
GH_RUN_TIMEOUT=120 run_runc "$T/b" vg
if [ "$RUN_RC" -eq 0 ] && ! grep -q '==[0-9]*==' "$T"/vg.*.log 2>/dev/null; then
        t_pass "gpu-cli configure from a createRuntime hook is clean under valgrind"
else
        t_fail "gpu-cli configure from a createRuntime hook is clean under valgrind (exit $RUN_RC)"
        t_diag "$RUN_STDERR"
        cat "$T"/vg.*.log 2>/dev/null | head -n 40 | sed 's/^/#   /'
fi
t_match "$RUN_STDOUT" '^GPU 1:' "... and the container sees the GPUs"

# configure by hand into a running container, and a failing configure (unknown device)
make_busybox_rootfs "$T/rootfs2" --glibc
make_bundle "$T/b2" "$T/rootfs2" /bin/sleep 60
RID=gh-vg-$$
timeout 20 "$RUNC" --root "$T_RUNC_ROOT" run -d -b "$T/b2" "$RID" </dev/null >/dev/null 2>&1
PID=$("$RUNC" --root "$T_RUNC_ROOT" state "$RID" 2>/dev/null | sed -n 's/.*"pid": *\([0-9]*\).*/\1/p')
if [ -n "$PID" ]; then
        # Valgrind 3.19 knows no open_tree/move_mount either: gpu-cli must take the legacy path,
        # which cannot reach a pivoted container, and say so cleanly.
        rm -f "$T"/vg.*.log
        $VG "$GPU_CLI" --root="$DRV" configure --pid="$PID" --device=0 --utility "$T/rootfs2" >"$T/vg.out" 2>&1
        rc=$?
        t_is "$rc" 1 "configure into a running container without the new mount API: a clean refusal, no memory error" || cat "$T"/vg.*.log | head -n 20 | sed 's/^/#   /'
        t_match "$(cat "$T/vg.out")" 'open_tree/move_mount are not available' "... naming what is missing"
        rm -f "$T"/vg.*.log
        $VG "$GPU_CLI" --root="$DRV" configure --pid="$PID" --device=7 --utility "$T/rootfs2" >/dev/null 2>&1
        t_is "$?" 1 "a failing configure exits 1 under valgrind (not 99: no memory error on the error path)"
else
        t_fail "start a detached container"
fi
"$RUNC" --root "$T_RUNC_ROOT" delete -f "$RID" >/dev/null 2>&1
t_done
