#!/bin/bash
# gpu-hook's configure step with a stand-in gpu-cli (config "cli": {"exec": true, "path": ...}): the exact argv it gets, its
# fixed environment, its fds and stdin, exit statuses passed back, and the JSON log line.  No root.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"


# The stand-in records what it was given, then exits with $T/fake-rc (and says why on stderr).
cat >"$T/fake-cli" <<EOF
#!/bin/sh
for a in "\$@"; do printf '%s\n' "\$a"; done >"$T/argv"
tr '\0' '\n' </proc/\$\$/environ >"$T/environ"
ls /proc/\$\$/fd >"$T/fds"
readlink /proc/\$\$/fd/0 >"$T/stdin"
# The timings line configure writes to --timings-fd (fixed numbers, so the log's parts are known).
[ -e /proc/\$\$/fd/3 ] && cat "$T/fake-timings" >&3 2>/dev/null
rc=\$(cat "$T/fake-rc" 2>/dev/null || echo 0)
[ "\$rc" = kill ] && kill -9 \$\$
[ "\$rc" = 0 ] || echo "gpu-cli: requirement 'cuda>=99.0' not met: update the driver" >&2
exit \$rc
EOF
chmod 755 "$T/fake-cli"

write_config() {
        printf '{"cli": {"exec": true, "path": "%s", "root": "/drv", "ldconfig": "@/sbin/ldconfig", "no-cgroups": true, "user": "1:2"%s}, "log": {"file": "%s"}, "containers": {"dir": "%s"}}\n' \
                "$T/fake-cli" "${1:-}" "$T/hook.log" "$T/records" >"$T/hook.json"
}

# bundle ENV...: config.json with those variables.
bundle() {
        local env="" e
        for e in "$@"; do env+="\"$e\","; done
        mkdir -p "$T/b"
        printf '{"ociVersion":"1.0.2","process":{"env":[%s],"capabilities":{"bounding":["CAP_SYS_ADMIN"]}},"root":{"path":"rootfs"}}\n' \
                "${env%,}" >"$T/b/config.json"
}

STATE='{"ociVersion":"1.0.2","id":"ctr-42","status":"creating","pid":4242,"bundle":"'$T/b'"}'

# hook [STAGE]: runs the hook with an extra inherited fd 7 and a hostile environment.
hook() {
        rm -f "$T/argv" "$T/environ" "$T/fds"
        ERR=$(printf '%s' "$STATE" | env LD_PRELOAD= LD_LIBRARY_PATH=/nonexistent PATH=/nonexistent:$PATH \
                GPU_HOOK_CONFIG=/nonexistent "$GPU_HOOK" --config="$T/hook.json" "${1:-createRuntime}" 2>&1 7</dev/null)
        RC=$?
}

write_config
bundle NVIDIA_VISIBLE_DEVICES=0,GPU-12345678-1234-1234-1234-123456789abc "NVIDIA_DRIVER_CAPABILITIES=video,utility" \
        "NVIDIA_REQUIRE_CUDA=cuda>=11.0 brand=tesla" NVIDIA_MIG_CONFIG_DEVICES=all NVIDIA_IMEX_CHANNELS=3,1
echo 0 >"$T/fake-rc"
echo "started=1000 begin=1100 end=1900 driver=100 gpus=50 plan=60 open=70 enter=10 apply=300 ldcache=90 cgroup=40 total=790 items=30" \
        >"$T/fake-timings"
hook
t_is "$RC" 0 "a GPU container is configured (exit 0)"
t_is "$(tr '\n' ' ' <"$T/argv")" \
        "--root=/drv configure --timings-fd=3 --pid=4242 --device=0,GPU-12345678-1234-1234-1234-123456789abc --require=cuda>=11.0 brand=tesla --compute --utility --video --mig-config=all --imex-channel=3 --imex-channel=1 --user=1:2 --ldconfig=@/sbin/ldconfig --no-cgroups $T/b/rootfs " \
        "gpu-cli gets the documented configure argv"
t_is "$(cat "$T/environ")" "PATH=/usr/sbin:/usr/bin:/sbin:/bin" "gpu-cli's environment is PATH alone"
t_nomatch "$(cat "$T/fds")" '^7$' "an fd the hook inherited does not reach gpu-cli"
t_match "$(cat "$T/fds")" '^3$' "gpu-cli gets the timings pipe as fd 3"
t_nomatch "$(cat "$T/fds")" '^[4-9]$' "and no other fd of the hook's"
t_is "$(cat "$T/stdin")" /dev/null "gpu-cli's stdin is /dev/null"
line=$(tail -n 1 "$T/hook.log")
t_match "$line" '^\{"time":"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z","program":"gpu-hook","pid":[0-9]+,"trace_id":"ctr-42","stage":"createRuntime","container_pid":4242,"decision":\{"gpu_container":true,' \
        "the log line has time, trace id, stage and the decision"
t_match "$line" '"timings_us":\{"config":[0-9]+,"state":[0-9]+,"spec":[0-9]+,"decide":[0-9]+,"configure":[0-9]+,"configure.exec":-?[0-9]+,"configure.setup":100,"configure.driver":100,"configure.gpus":50,"configure.plan":60,"configure.open":70,"configure.enter":10,"configure.apply":300,"configure.ldcache":90,"configure.cgroup":40,"configure.other":80,"configure.exit":-?[0-9]+,"record":[0-9]+,"total":[0-9]+\},"result":"configured","exit_code":0,"error":null\}$' \
        "the log line has per-phase timings, configure's own phases from its timings line, and the result"
t_ok "the log line is one JSON object" "$GH_PYTHON" -c 'import json,sys; json.loads(sys.argv[1])' "$line"

bundle NVIDIA_VISIBLE_DEVICES=all
write_config ', "debug": "/dev/null", "load-kmods": true, "ldcache": "/etc/ld.so.cache"'
echo "started=1000 begin=x end=1900" >"$T/fake-timings"
hook prestart
t_match "$(tail -n 1 "$T/hook.log")" '"configure":[0-9]+,"record":[0-9]+,"total":' "a malformed timings line adds nothing to the log"
t_is "$(tr '\n' ' ' <"$T/argv")" \
        "--root=/drv --ldcache=/etc/ld.so.cache --debug=/dev/null --log-format=json --load-kmods configure --timings-fd=3 --pid=4242 --device=all --compute --utility --user=1:2 --ldconfig=@/sbin/ldconfig --no-cgroups $T/b/rootfs " \
        "prestart: all devices, the cli options of the config"
bundle NVIDIA_VISIBLE_DEVICES=none
write_config
hook
t_is "$(tr '\n' ' ' <"$T/argv")" \
        "--root=/drv configure --timings-fd=3 --pid=4242 --compute --utility --user=1:2 --ldconfig=@/sbin/ldconfig --no-cgroups $T/b/rootfs " \
        "none: configure without --device"

echo 4 >"$T/fake-rc"
hook
t_is "$RC" 4 "gpu-cli's exit status is the hook's"
t_is "$ERR" "gpu-cli: requirement 'cuda>=99.0' not met: update the driver" "gpu-cli's message reaches the runtime unchanged"
t_match "$(tail -n 1 "$T/hook.log")" '"result":"error","exit_code":4,"error":"gpu-cli: requirement .cuda>=99.0. not met: update the driver"\}$' \
        "the log line keeps gpu-cli's message"
echo kill >"$T/fake-rc"
hook
t_is "$RC" 137 "a gpu-cli killed by SIGKILL gives 137"

echo 0 >"$T/fake-rc"
bundle PATH=/bin NVIDIA_VISIBLE_DEVICES=void
hook
t_is "$RC" 0 "a non-GPU container exits 0"
t_ok "a non-GPU container runs nothing" test ! -e "$T/argv"
t_match "$(tail -n 1 "$T/hook.log")" '"decision":\{"gpu_container":false.*"result":"skipped","exit_code":0,"error":null\}$' \
        "a non-GPU container is logged as skipped"

bundle NVIDIA_VISIBLE_DEVICES=0
STATE='{"ociVersion":"1.0.2","id":"nopid","status":"creating","bundle":"'$T/b'"}'
hook
t_is "$RC" 1 "a state without pid fails"
t_match "$ERR" "^gpu-hook: the OCI state has no container pid" "and says so in one line"
STATE='{"ociVersion":"1.0.2","id":"ctr-42","status":"creating","pid":4242,"bundle":"'$T/b'"}'

printf '{"cli": {"exec": true, "path": "%s"}, "log": {"file": "%s"}}' "$T/no-such-cli" "$T/hook.log" >"$T/hook.json"
hook
t_is "$RC" 1 "a missing gpu-cli fails"
t_match "$ERR" "^gpu-hook: running $T/no-such-cli; check \"cli.path\"" "and names cli.path"
t_match "$(tail -n 1 "$T/hook.log")" '"result":"error","exit_code":1,"error":"running ' "and is logged"

printf '{"cli": {"exec": true, "path": "%s"}, "log": {"file": "%s/no/such/dir/hook.log"}}' "$T/fake-cli" "$T" >"$T/hook.json"
hook
t_is "$RC" 0 "an unwritable log file does not fail the hook (syslog instead)"
ln -s "$T/elsewhere" "$T/link.log"
printf '{"cli": {"exec": true, "path": "%s"}, "log": {"file": "%s/link.log"}}' "$T/fake-cli" "$T" >"$T/hook.json"
hook
t_ok "the log file is never opened through a symlink" test ! -e "$T/elsewhere"

printf '{"bogus": 1, "log": {"file": "%s"}}' "$T/hook.log" >"$T/hook.json"
hook
t_is "$RC" 1 "a bad config file fails the hook"
t_match "$ERR" "^gpu-hook: configuration $T/hook.json: unknown key \"bogus\"$" "in one line naming the key"

t_done
