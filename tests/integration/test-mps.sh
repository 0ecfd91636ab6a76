#!/bin/bash
# gpu-cli mps start/stop/list with the fake nvidia-cuda-mps-control (tests/fake-driver/mps-control.c):
# the daemon runs with the group's pipe directory, its own /dev/shm and the group's GPU, the limits
# reach it through its control interface, bad input leaves nothing behind, and stop leaves no
# process, mount or directory.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
t_need_root
MKROOT=$GH_SOURCE_DIR/tests/fake-driver/make-root.sh
CLI=${GPU_CLI:?}

DRV=$T/drv
# GPU 1 in the EXCLUSIVE_PROCESS compute mode (nvmlDeviceGetComputeMode), GPU 0 in the default one
python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
p["gpus"][1]["compute_mode"] = 3
json.dump(p, sys.stdout)' "$GH_SOURCE_DIR/tests/fake-driver/profiles/default.json" >"$T/profile.json"
bash "$MKROOT" "$DRV" --profile "$T/profile.json" >"$T/mkroot.log" 2>&1 || { t_diag_file "$T/mkroot.log"; t_fail "make-root.sh"; t_done; }
D=$T/mps
G=("$CLI" --root="$DRV" mps --dir="$D")
# start writes a CDI spec to /var/run/cdi by default: not here (test-mps-cdi.sh tests the specs)
NOCDI=--cdi-spec=none
UUID0=$(sed -n 's/^GPU UUID:[[:space:]]*//p' "$DRV"/proc/driver/nvidia/gpus/$(ls "$DRV/proc/driver/nvidia/gpus" | sort | head -n1)/information)
UUID1=$(sed -n 's/^GPU UUID:[[:space:]]*//p' "$DRV"/proc/driver/nvidia/gpus/$(ls "$DRV/proc/driver/nvidia/gpus" | sort | sed -n 2p)/information)
host_mountinfo_snapshot "$T/mi-before"
shm_before=$(ls /dev/shm | sort)

# gone PID: exited (a zombie counts: PID 1 of a test sandbox may not reap)
gone() { ! kill -0 "$1" 2>/dev/null || grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }
daemons() { # ours only: other test runs may have daemons of their own
        local p
        for p in $(pgrep -f "^nvidia-cuda-mps-control -f"); do
                tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -q "^CUDA_MPS_PIPE_DIRECTORY=$D/" && printf '%s ' "$p"
        done
}
# state KEY GROUP: a field of the group's state file
state() { sed -n "s/^$1=//p" "$D/$2/group"; }

# --- start with limits
t_ok "mps start g1 on GPU 1 with --threads=30 --memory=4G" "${G[@]}" start g1 --device=1 --threads=30 --memory=4G $NOCDI
pid=$(state pid g1)
t_ok "the daemon runs (pid $pid)" kill -0 "$pid"
t_is "$(tr '\0' ' ' </proc/$pid/cmdline)" "nvidia-cuda-mps-control -f " "it is the driver's control program in the foreground"
env_of=$(tr '\0' '\n' </proc/$pid/environ)
t_match "$env_of" "^CUDA_MPS_PIPE_DIRECTORY=$D/g1/pipe\$" "its pipe directory is the group's"
t_match "$env_of" "^CUDA_VISIBLE_DEVICES=$UUID1\$" "it sees only the group's GPU (by UUID)"
t_nomatch "$env_of" "^(LD_PRELOAD|HOME|TERM)=" "it inherits nothing from gpu-cli's environment"
t_is "$(grep -c . "$D/g1/log/commands.log")" 2 "two commands reached the daemon"
t_match "$(cat "$D/g1/log/commands.log")" "^set_default_active_thread_percentage 30\$" "thread percentage set through the control interface"
t_match "$(cat "$D/g1/log/commands.log")" "^set_default_device_pinned_mem_limit 0 4096M\$" "pinned memory limit set for the daemon's device 0, in MiB"
t_ok "the daemon's /dev/shm is the group's tmpfs" test -e "$D/g1/shm/fake-mps-control.$pid"
t_not "... not the host's /dev/shm" test -e "/dev/shm/fake-mps-control.$pid"
t_is "$(stat -f -c %T "$D/g1/shm")" tmpfs "the group's shm is a tmpfs"
t_is "$(stat -c %a "$D/g1")" 755 "the group directory is 0755"

# --- list
out=$("${G[@]}" list)
t_match "$out" "^g1 +1 +Exclusive_Process +30% +4096M +$pid +alive +- +-\$" "list shows the group, its GPU, the GPU's compute mode, limits, pid and no clients"
t_is "$("${G[@]}" list --json | python3 -c 'import json,sys; g=json.load(sys.stdin)[0]; print(g["name"], g["gpu_uuid"], g["compute_mode"], g["threads"], g["memory_mib"], g["alive"], g["clients"])')" \
        "g1 $UUID1 Exclusive_Process 30 4096 True []" "list --json"
# a client that stays connected is listed
(echo hold | CUDA_MPS_PIPE_DIRECTORY=$D/g1/pipe "$DRV/usr/bin/nvidia-cuda-mps-control" >/dev/null 2>&1) &
holder=$!
for _ in $(seq 50); do [ -n "$(state pid g1)" ] && "${G[@]}" list --json | grep -q '"clients": \[$' && break; sleep 0.1; done
client=$(pgrep -f -P "$holder" nvidia-cuda-mps-control || pgrep -n -f "^$DRV/usr/bin/nvidia-cuda-mps-control\$")
t_match "$("${G[@]}" list --json | tr -d ' \n')" "\"clients\":\[$client\]" "a connected client is listed by pid"
kill "$client" 2>/dev/null; wait "$holder" 2>/dev/null

# --- refusals leave nothing behind
t_not "a second group of the same name is refused" "${G[@]}" start g1 --device=0 $NOCDI
t_match "$("${G[@]}" start g1 --device=0 $NOCDI 2>&1)" "MPS group 'g1' exists; stop it first" "... saying so"
t_is "$(daemons | wc -w)" 1 "... and starts no second daemon"
for bad in ../x a/b "" .hidden -x "$(printf 'x%.0s' $(seq 65))" 'a b' 'g;rm'; do
        t_not "name '$bad' refused" "${G[@]}" start "$bad" --device=0 $NOCDI
done
t_is "$(ls "$D")" g1 "no directory was created for a refused name"
t_not "an unknown device is refused" "${G[@]}" start g2 --device=7 $NOCDI
t_match "$("${G[@]}" start g2 --device=GPU-nope $NOCDI 2>&1)" "unknown device 'GPU-nope'" "... naming the device"
t_not "all is refused (one GPU per group)" "${G[@]}" start g2 --device=all $NOCDI
t_not "--threads=0 is refused" "${G[@]}" start g2 --device=0 --threads=0 $NOCDI
t_not "--threads=101 is refused" "${G[@]}" start g2 --device=0 --threads=101 $NOCDI
t_not "--memory=lots is refused" "${G[@]}" start g2 --device=0 --memory=lots $NOCDI
t_not "--device is required" "${G[@]}" start g2
t_is "$(ls "$D")" g1 "nothing was created by the refused starts"

# --- a daemon that dies at once, and one that refuses the limits
echo die >"$DRV/usr/bin/.fake-mps-mode"
t_not "a daemon that exits at once fails the start" "${G[@]}" start g3 --device=0 $NOCDI
t_match "$("${G[@]}" start g3 --device=0 $NOCDI 2>&1)" "exited at once: fake nvidia-cuda-mps-control: told to die" "... quoting its last log line"
echo refuse-limits >"$DRV/usr/bin/.fake-mps-mode"
t_match "$("${G[@]}" start g3 --device=0 --threads=50 $NOCDI 2>&1)" "refused the limits of group 'g3': Error: invalid value" "refused limits fail the start"
rm -f "$DRV/usr/bin/.fake-mps-mode"
t_is "$(ls "$D")" g1 "failed starts leave no directory"
t_is "$(daemons | wc -w)" 1 "... and no daemon"

# --- containers join a group (annotation org.gpu-hook.mps-group; the env var only when allowed)
# The host also has a default MPS pipe directory (a daemon outside any group): every GPU container
# gets it, except those in a group, which must reach only their group's daemon.
mkdir -p "$DRV/tmp/nvidia-mps" && touch "$DRV/tmp/nvidia-mps/host-default"
t_ok "mps start team on GPU 1" "${G[@]}" start team --device=1 --memory=2G $NOCDI
tpid=$(state pid team)
printf '{"cli": {"root": "%s", "path": "%s"}, "log": {"file": "%s/hook.log"}, "mps": {"dir": "%s"}, "containers": {"dir": "%s/records"}}\n' \
        "$DRV" "$CLI" "$T" "$D" "$T" >"$T/config.json"
printf '{"cli": {"root": "%s", "path": "%s"}, "log": {"file": "%s/hook.log"}, "mps": {"dir": "%s"}, "accept-mps-group-envvar": true, "containers": {"dir": "%s/records"}}\n' \
        "$DRV" "$CLI" "$T" "$D" "$T" >"$T/config-env.json"
PROBE='
echo "pipe:$(ls /tmp/nvidia-mps 2>&1 | tr "\n" ",")"
echo "shm:$(ls /dev/shm 2>&1 | tr "\n" ",")"
echo "talk:$(echo get_default_active_thread_percentage | nvidia-cuda-mps-control 2>&1 | tr "\n" " ")"
echo "mnt:$(grep -E " /(tmp/nvidia-mps|dev/shm) " /proc/self/mountinfo | cut -d" " -f5,6 | tr "\n" ";")"
'
# mps_case NAME CONFIG ANNOTATION|- ENV...: a container with the hook
mps_case() {
        local name=$1 config=$2 annot=$3
        shift 3
        make_busybox_rootfs "$T/$name/rootfs" --glibc >/dev/null 2>&1 || return 1
        make_bundle "$T/$name/bundle" "$T/$name/rootfs" /bin/sh -c "$PROBE"
        bundle_set_env "$T/$name/bundle" "$@"
        [ "$annot" != - ] &&
                bundle_edit "$T/$name/bundle" 'c.setdefault("annotations", {})["org.gpu-hook.mps-group"] = args[0]' "$annot"
        bundle_add_hook "$T/$name/bundle" createRuntime "$GPU_HOOK" "--config=$config" createRuntime
        run_runc "$T/$name/bundle" "$name"
}
field() { printf '%s\n' "$RUN_STDOUT" | sed -n "s/^$1://p"; }

mps_case in-team "$T/config.json" team NVIDIA_VISIBLE_DEVICES=1
t_is "$RUN_RC" 0 "a container annotated with group team starts" || t_diag "$RUN_STDERR"
t_match "$(field pipe)" "^control," "it sees the group's pipe directory at /tmp/nvidia-mps"
t_match "$(field shm)" "fake-mps-control.$tpid" "its /dev/shm is the group's (the daemon's marker is there)"
t_match "$(field mnt)" "/tmp/nvidia-mps rw,nosuid,nodev,noexec" "the pipe directory is mounted rw,nosuid,nodev,noexec"
t_match "$(field mnt)" "/dev/shm rw,nosuid,nodev,noexec" "the shm is mounted rw,nosuid,nodev,noexec"
t_ok "its MPS client reached the group's daemon" grep -qx get_default_active_thread_percentage "$D/team/log/commands.log"
t_nomatch "$(field pipe)" "host-default" "... and not the host's default pipe directory"
t_is "$(field mnt | grep -o '/tmp/nvidia-mps ' | wc -l)" 1 "... mounted once at /tmp/nvidia-mps"

# The host's MPS pipe directory somewhere else (configure --mps-pipe-dir): a container in a group
# must not get it either, or an image setting CUDA_MPS_PIPE_DIRECTORY there reaches the host's daemon.
mkdir -p "$DRV/run/nvidia-mps-host"
plan_json() { "$CLI" --root="$DRV" --no-cache configure --dry-run --device=1 --compute --mps-dir="$D" \
        --mps-pipe-dir=/run/nvidia-mps-host "$@" "$T/in-team/rootfs" 2>&1; }
t_match "$(plan_json)" '"/run/nvidia-mps-host"' "configure --mps-pipe-dir elsewhere: planned for a container outside any group"
t_nomatch "$(plan_json --mps-group=team)" '"/run/nvidia-mps-host"' "... and not for a container in group team"
t_match "$(plan_json --mps-group=team)" '"/tmp/nvidia-mps"' "... which gets its group's directory at /tmp/nvidia-mps"
mps_case all-gpus "$T/config.json" team NVIDIA_VISIBLE_DEVICES=all
t_is "$RUN_RC" 0 "NVIDIA_VISIBLE_DEVICES=all includes the group's GPU: it joins" || t_diag "$RUN_STDERR"
t_match "$(field pipe)" "^control," "... and gets the pipe directory"
mps_case wrong-gpu "$T/config.json" team NVIDIA_VISIBLE_DEVICES=0
t_not "a group on a GPU the container does not get fails the start" test "$RUN_RC" = 0
t_match "$RUN_STDERR" "MPS group 'team' runs on GPU $UUID1, which this container does not get" "... saying which GPU to select"
mps_case no-group "$T/config.json" nosuch NVIDIA_VISIBLE_DEVICES=1
t_match "$RUN_STDERR" "no MPS group 'nosuch'" "an unknown group fails the start, naming it"
mps_case bad-name "$T/config.json" "../../etc" NVIDIA_VISIBLE_DEVICES=1
t_match "$RUN_STDERR" "invalid MPS group name" "a hostile group name in the annotation is refused"
mps_case env-ignored "$T/config.json" - NVIDIA_VISIBLE_DEVICES=1 GPU_HOOK_MPS_GROUP=team
t_is "$RUN_RC" 0 "GPU_HOOK_MPS_GROUP in the image: the container starts" || t_diag "$RUN_STDERR"
t_nomatch "$(field pipe)" "control" "... but joins no group (the variable is not accepted by default)"
t_nomatch "$(field shm)" "fake-mps-control" "... and keeps its own /dev/shm"
t_match "$(field pipe)" "host-default" "... and gets the host's default MPS pipe directory, like any GPU container"
mps_case env-allowed "$T/config-env.json" - NVIDIA_VISIBLE_DEVICES=1 GPU_HOOK_MPS_GROUP=team
t_match "$(field pipe)" "^control," "with accept-mps-group-envvar the variable joins the group"
mps_case void "$T/config.json" team NVIDIA_VISIBLE_DEVICES=void
t_is "$RUN_RC" 0 "a non-GPU container with the annotation starts" || t_diag "$RUN_STDERR"
t_nomatch "$(field pipe)" "control" "... and joins nothing"
printf '{"ociVersion":"1.0.2","id":"x","status":"creating","pid":1,"bundle":"%s"}' "$T/in-team/bundle" |
        "$GPU_HOOK" --config="$T/config.json" --dry-run createRuntime >"$T/dry.json" 2>&1
t_match "$(cat "$T/dry.json")" '"mps_group": ?"team"' "the dry run shows the group"

# --- doctor and ps know groups
# detached NAME hook|nohook: a runc container of group team holding an MPS connection
detached() {
        make_busybox_rootfs "$T/$1/rootfs" --glibc >/dev/null 2>&1 || return 1
        make_bundle "$T/$1/bundle" "$T/$1/rootfs" /bin/sh -c 'echo hold | nvidia-cuda-mps-control & exec sleep 600'
        bundle_set_env "$T/$1/bundle" NVIDIA_VISIBLE_DEVICES=1
        bundle_edit "$T/$1/bundle" 'c.setdefault("annotations", {})["org.gpu-hook.mps-group"] = "team"'
        [ "$2" = hook ] && bundle_add_hook "$T/$1/bundle" createRuntime "$GPU_HOOK" "--config=$T/config.json" createRuntime
        mkdir -p "$T_RUNC_ROOT"
        timeout 60 "$RUNC" --root "$T_RUNC_ROOT" run -d -b "$T/$1/bundle" "gh-mps-$1-$$" >"$T/$1.out" 2>"$T/$1.err" </dev/null
}
# check NAME: "status evidence" of doctor's check NAME in $DOC (a JSON object); all of them, one a line
check() { printf '%s' "$DOC" | python3 -c 'import json,sys; [print(c["status"], c["evidence"], "|fix:", c["fix"]) for c in json.load(sys.stdin)["checks"] if c["name"] == sys.argv[1]]' "$1"; }
DOCTOR=("$CLI" --root="$DRV" doctor --json --config="$T/config.json" --state-dir="$T_RUNC_ROOT" --hooks-dir="$T" --cdi-dir="$T")
t_ok "a container of group team starts (with the hook)" detached held hook || t_diag_file "$T/held.err"
t_ok "a container annotated for team starts without the hook" detached nohook nohook || t_diag_file "$T/nohook.err"
DOC=$("${DOCTOR[@]}" --container="gh-mps-held-$$")
t_diag "$(check mps-group)"
t_match "$(check mps-group)" "^ok annotation org.gpu-hook.mps-group=team: daemon $tpid alive on GPU 1 \\($UUID1\\), no thread limit, memory 2048M; /tmp/nvidia-mps and /dev/shm are the group's" \
        "doctor --container: in group team, daemon alive, its limits, the group's directories mounted"
DOC=$("${DOCTOR[@]}" --container="gh-mps-nohook-$$")
t_match "$(check mps-group)" "^fail annotation org.gpu-hook.mps-group=team .*: the container has no directory /tmp/nvidia-mps" \
        "doctor: a container annotated for team but started without the hook fails the check"
t_match "$(check mps-group)" "fix: restart the container with gpu-hook" "... with the fix"
DOC=$("${DOCTOR[@]}")
t_match "$(check mps-group)" "^ok team: daemon $tpid alive on GPU 1 \\($UUID1\\), no thread limit, memory 2048M" "host doctor: one check per group (team)"
t_match "$(check mps-group)" "^ok g1: daemon [0-9]+ alive on GPU 1 .*threads 30%, memory 4096M" "... and g1"
# ps: the held client of the container, under its container id
for _ in $(seq 50); do "$CLI" --root="$DRV" mps --dir="$D" list | grep -q '^team .* alive +[0-9]' && break; sleep 0.1; done
PS=$("$CLI" --root="$DRV" ps --json --state-dir="$T_RUNC_ROOT" --mps-dir="$D" 2>"$T/ps.err")
t_is "$?" 0 "gpu-cli ps --json with MPS groups" || t_diag_file "$T/ps.err"
t_is "$(printf '%s' "$PS" | python3 -c '
import json, sys
for g in json.load(sys.stdin)["mps_groups"]:
    if g["name"] == "team":
        for c in g["clients"]:
            print(c["container"]["runtime"] if c["container"] else "host", c["container"]["id"] if c["container"] else "-", c["command"])')" \
        "runc gh-mps-held-$$ nvidia-cuda-mps" "ps --json: team's client is the container's nvidia-cuda-mps-control"
t_match "$("$CLI" --root="$DRV" ps --no-trunc --state-dir="$T_RUNC_ROOT" --mps-dir="$D" 2>&1)" \
        "^team +1 +[0-9]+ +runc +gh-mps-held-$$ +[0-9]+ +nvidia-cuda-mps\$" "ps: the client's row names group, GPU and container"
"$RUNC" --root "$T_RUNC_ROOT" delete -f "gh-mps-held-$$" >/dev/null 2>&1
"$RUNC" --root "$T_RUNC_ROOT" delete -f "gh-mps-nohook-$$" >/dev/null 2>&1
# a dead daemon: host doctor fails naming the fix
t_ok "mps start dead on GPU 0" "${G[@]}" start dead --device=0 --threads=20 $NOCDI
dpid=$(state pid dead)
t_match "$("${G[@]}" list)" "^dead +0 +Default +20% " "list: GPU 0's compute mode is Default"
kill -9 "$dpid"
for _ in $(seq 50); do gone "$dpid" && break; sleep 0.1; done
DOC=$("${DOCTOR[@]}")
t_match "$(check mps-group)" "^fail dead: daemon $dpid is not running" "host doctor: a group whose daemon died fails"
t_match "$(check mps-group)" "fix: gpu-cli mps --mps-dir=$D stop dead && gpu-cli mps --mps-dir=$D start dead --device=$UUID0 --threads=20" \
        "... with the command that restarts it"
mps_case joins-dead "$T/config.json" dead NVIDIA_VISIBLE_DEVICES=0
t_not "a container of a group whose daemon died does not start" test "$RUN_RC" = 0
t_match "$RUN_STDERR" "MPS group 'dead' is not running \\(its daemon $dpid is gone\\)" "... saying the daemon is gone"
t_match "$RUN_STDERR" "gpu-cli mps stop dead, then mps start" "... and how to bring it back"
t_ok "mps stop of the dead group" "${G[@]}" stop dead
t_ok "the group is still alive" kill -0 "$tpid"
t_ok "mps stop team" "${G[@]}" stop team
mps_case dead "$T/config.json" team NVIDIA_VISIBLE_DEVICES=1
t_match "$RUN_STDERR" "no MPS group 'team'" "after stop, joining fails"

# --- stop
t_ok "mps stop g1" "${G[@]}" stop g1
t_ok "the daemon is gone" gone "$pid"
t_not "the group directory is removed" test -e "$D/g1"
t_is "$(ls "$D")" "" "nothing is left under the group directory"
t_not "stopping it again fails" "${G[@]}" stop g1
t_match "$("${G[@]}" stop g1 2>&1)" "no MPS group 'g1'" "... naming it"

# a daemon that ignores quit is killed, with the servers of its session
echo ignore-quit >"$DRV/usr/bin/.fake-mps-mode"
t_ok "start a group whose daemon ignores quit" "${G[@]}" start g4 --device=0 $NOCDI
pid=$(state pid g4)
rm -f "$DRV/usr/bin/.fake-mps-mode"
t_ok "mps stop g4" "${G[@]}" stop g4
t_ok "its daemon was killed" gone "$pid"
t_is "$(daemons)" "" "no MPS daemon is left"
mountinfo_unchanged "the host mount table is as before" "$T/mi-before"
t_is "$(ls /dev/shm | sort)" "$shm_before" "the host's /dev/shm is as before"
t_is "$("${G[@]}" list --json)" "[]" "list is empty"
t_done
