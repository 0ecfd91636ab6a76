#!/bin/bash
# The harness itself, proven on all three runtimes: a busybox container prints a known string under
# runc, crun and podman, and a createRuntime hook receives the OCI state (id, pid, bundle) under runc
# and crun.  If this fails, every other integration test's result means nothing.
. "${GH_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib.sh"

t_need_root
t_need_cmd "$RUNC"

rootfs=$T/rootfs
make_busybox_rootfs "$rootfs" || { echo "Bail out! cannot build the busybox rootfs"; exit 1; }
host_mountinfo_snapshot "$T/mounts.before"

# A hook that records its stdin and environment where the test can read them.
cat >"$T/record-state" <<'EOF'
#!/bin/sh
cat >"$1.state"
env >"$1.env"
EOF
chmod 755 "$T/record-state"

# state_field FILE KEY: one top-level value of the recorded state JSON ("" when absent).
state_field() {
        "$GH_PYTHON" -c 'import json, sys
v = json.load(open(sys.argv[1])).get(sys.argv[2], "")
print(v)' "$1" "$2" 2>/dev/null
}

check_hook_state() {
        local rt=$1 bundle=$2 id=$3 out=$4
        if [ ! -s "$out.state" ]; then
                t_fail "$rt: the createRuntime hook ran and got the state on stdin"
                return
        fi
        t_pass "$rt: the createRuntime hook ran and got the state on stdin"
        t_is "$(state_field "$out.state" id)" "$id" "$rt: state id is the container id"
        t_is "$(state_field "$out.state" bundle)" "$bundle" "$rt: state bundle is the bundle path"
        t_match "$(state_field "$out.state" pid)" '^[1-9][0-9]*$' "$rt: state pid is a process id"
        # The hook's environment is exactly what the bundle set (lib.sh always sets it explicitly).
        t_match "$(cat "$out.env")" "^GH_MARK=$rt\$" "$rt: the hook got the env from the bundle"
}

# --- runc
make_bundle "$T/runc" "$rootfs" /bin/sh -c 'echo hello from runc; cat /etc/debian_version'
run_runc "$T/runc" hello
t_is "$RUN_STDOUT" "hello from runc
12.0" "runc runs the busybox rootfs" || t_diag "$RUN_STDERR"
t_is "$("$RUNC" --root "$T_RUNC_ROOT" list -q)" "" "runc: the container is deleted after the run"

make_bundle "$T/runc-hook" "$rootfs" /bin/true
HOOK_ENV="GH_MARK=runc" bundle_add_hook "$T/runc-hook" createRuntime "$T/record-state" "$T/runc-hook/out"
run_runc "$T/runc-hook" hook
t_is "$RUN_RC" 0 "runc: a container with a createRuntime hook runs" || t_diag "$RUN_STDERR"
check_hook_state runc "$T/runc-hook" "$RUN_ID" "$T/runc-hook/out"

# A failing create-stage hook must abort the container, and its message must reach the user.
cat >"$T/failing-hook" <<'EOF'
#!/bin/sh
echo "gh-test: hook refused" >&2
exit 1
EOF
chmod 755 "$T/failing-hook"
make_bundle "$T/runc-fail" "$rootfs" /bin/sh -c 'echo container started'
bundle_add_hook "$T/runc-fail" createRuntime "$T/failing-hook"
run_runc "$T/runc-fail" fail
t_not "runc: a failing createRuntime hook aborts the container" test "$RUN_RC" -eq 0
t_nomatch "$RUN_STDOUT" 'container started' "runc: the container process never ran"
t_match "$RUN_STDERR" 'gh-test: hook refused' "runc: the hook's error message reaches the user"

# --- crun
if have_cmd "$CRUN" && have_cmd unshare; then
        make_bundle "$T/crun" "$rootfs" /bin/echo hello from crun
        run_crun "$T/crun" hello
        t_is "$RUN_STDOUT" "hello from crun" "crun runs the busybox rootfs" || t_diag "$RUN_STDERR"

        make_bundle "$T/crun-hook" "$rootfs" /bin/true
        HOOK_ENV="GH_MARK=crun" bundle_add_hook "$T/crun-hook" createRuntime "$T/record-state" \
                "$T/crun-hook/out"
        run_crun "$T/crun-hook" hook
        t_is "$RUN_RC" 0 "crun: a container with a createRuntime hook runs" || t_diag "$RUN_STDERR"
        check_hook_state crun "$T/crun-hook" "$RUN_ID" "$T/crun-hook/out"
else
        for d in "crun runs the busybox rootfs" "crun: createRuntime hook"; do t_skip "$d" "crun not installed"; done
fi

# --- podman (rootful, private storage, runc as its runtime)
if have_cmd "$PODMAN"; then
        run_podman "$rootfs" "" -e GH_GREETING=podman -- /bin/sh -c 'echo hello from $GH_GREETING'
        t_is "$RUN_STDOUT" "hello from podman" "podman runs the busybox rootfs with -e" ||
                t_diag "$RUN_STDERR"
else
        t_skip "podman runs the busybox rootfs" "podman not installed"
fi

# --- the helpers that other tests lean on
make_bundle "$T/priv" "$rootfs" /bin/sh -c 'grep CapEff /proc/self/status'
bundle_privileged "$T/priv"
run_runc "$T/priv" priv
# CAP_SYS_ADMIN is bit 21: 0x200000.
t_match "$RUN_STDOUT" 'CapEff:.*[2367abef][0-9a-f]{5}$' "bundle_privileged gives the process CAP_SYS_ADMIN"

make_bundle "$T/ldconfig-check" "$rootfs" /bin/sh -c 'test -x /sbin/ldconfig && check-ldconfig --version'
run_runc "$T/ldconfig-check" ldc
t_match "$RUN_STDOUT" '^ldconfig .*[0-9]\.[0-9]+' "the host's ldconfig runs inside as check-ldconfig" ||
        t_diag "$RUN_STDERR"
t_not "the image's /sbin/ldconfig trap did not fire by itself" ldconfig_ran "$rootfs"

# --glibc: a dynamically linked host program runs inside, and the image's cache lists its libc.
make_busybox_rootfs "$T/glibc" --glibc || { echo "Bail out! cannot build the glibc rootfs"; exit 1; }
cp /usr/bin/env "$T/glibc/usr/local/bin/host-env"
make_bundle "$T/glibc-b" "$T/glibc" /bin/sh -c 'host-env -u PATH sh -c "echo dynamic ok"; check-ldconfig -p'
run_runc "$T/glibc-b" glibc
t_match "$RUN_STDOUT" '^dynamic ok$' "a dynamically linked program runs in the --glibc rootfs" ||
        t_diag "$RUN_STDERR"
t_match "$RUN_STDOUT" 'libc\.so\.6 .*=> /(usr/)?lib/x86_64-linux-gnu/libc\.so\.6' \
        "the --glibc rootfs has an ld.so.cache listing its libc"

mountinfo_unchanged "the host mount table is unchanged after all runs" "$T/mounts.before"

t_done
