#!/bin/bash
# GPU memory that no running container owns: a host process, a process left over by a container
# whose init is gone (a container without its own PID namespace, its init killed), the MPS server of
# a group whose control daemon died.  ps, top, metrics and doctor say whose it is; top shows a
# container whose memory only grows.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
t_need_root
t_need_cmd runc unshare setsid "$GH_PYTHON"
. "$GH_SOURCE_DIR/tests/integration/usage-kit.sh"
usage_driver '
p["gpus"][0].update(process_memory_mib=300)
p["gpus"][1].update(process_memory_mib=700)'
MPS=$T/mps
CFG=--config=$T/config.json
mkdir -p "$MPS"

# --- a container without its own PID namespace, in a cgroup named after it (runc-ID.scope): its
# init is a shell that started hold-fd; kill the shell and hold-fd is left in the cgroup
L=gh-unowned-left-$$
start_gpu_container left "$L" 0 'hold-fd /dev/nvidia0 & wait' "
c['linux']['namespaces'] = [n for n in c['linux']['namespaces'] if n['type'] != 'pid']
c['linux']['cgroupsPath'] = '/runc-$L.scope'"
t_is "$?" 0 "a container without a PID namespace starts" || t_diag_file "$T/left.err"
LEFT_PID=$(wait_ready "$T/left.out")
INIT=$("$RUNC" --root "$T_RUNC_ROOT" state "$L" | "$GH_PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["pid"])')
# --- a container that keeps running, whose memory grows
G=gh-unowned-grow-$$
start_gpu_container grow "$G" 1 'hold-fd /dev/nvidia1 & wait'
GROW_CPID=$(wait_ready "$T/grow.out")
GROW_PID=$("$RUNC" --root "$T_RUNC_ROOT" ps --format json "$G" | tr -d '[]' | tr ',' '\n' | while read -r p; do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = hold-fd ] && echo "$p"; done)
t_match "${GROW_PID:-}" '^[0-9]+$' "the growing container's hold-fd runs (host PID ${GROW_PID:-?}, container PID $GROW_CPID)"
# --- a host process
"$HOLD" --user="$NOBODY" "$DRV/dev/nvidia1" >"$T/host.out" &
HOST_PID=$!
wait_ready "$T/host.out" >/dev/null
# --- an MPS group whose daemon died while its server (here: hold-fd in the daemon's session) lives
setsid sh -c 'echo $$ >"$0/leader"; "$1" --user="$2" "$3" >"$0/server.out" & exec sleep 1000' "$T" "$HOLD" "$NOBODY" \
        "$DRV/dev/nvidia0" &
for _ in $(seq 50); do [ -s "$T/leader" ] && [ -s "$T/server.out" ] && break; sleep 0.1; done
LEADER=$(cat "$T/leader")
SERVER_PID=$(wait_ready "$T/server.out")
START=$(awk '{ sub(/.*\) /, ""); print $20 }' "/proc/$LEADER/stat")
mkdir -p "$MPS/team"
printf 'name=team\ngpu_uuid=GPU-f4290dac-4b65-0c04-8446-750d860faf24\ngpu_index=0\nthreads=0\nmemory_mib=0\npid=%s\nstarttime=%s\n' \
        "$LEADER" "$START" >"$MPS/team/group"
ALIVE=$(gpucli ps --json "$CFG" --mps-dir="$MPS" --state-dir="$T_RUNC_ROOT" 2>/dev/null | "$GH_PYTHON" -c '
import json, sys
d = json.load(sys.stdin)
print([(p["owner"], p["mps_group"]) for g in d["gpus"] for p in g["processes"] if p["pid"] == int(sys.argv[1])])' "$SERVER_PID")
t_is "$ALIVE" "[('mps-server', 'team')]" "while its daemon runs, the process in its session is group team's MPS server"
kill "$LEADER"
for _ in $(seq 50); do kill -0 "$LEADER" 2>/dev/null || break; sleep 0.1; done
kill -KILL "$INIT"
for _ in $(seq 50); do kill -0 "$INIT" 2>/dev/null || break; sleep 0.1; done
t_ok "the left-over hold-fd outlived the container's init" kill -0 "$LEFT_PID"

# --- ps --json: each process's owner
PS=$(gpucli ps --json "$CFG" --mps-dir="$MPS" --state-dir="$T_RUNC_ROOT" 2>"$T/ps.err")
t_is "$?" 0 "gpu-cli ps --json" || t_diag_file "$T/ps.err"
owner() { "$GH_PYTHON" -c '
import json, sys
d = json.load(sys.stdin)
for g in d["gpus"]:
    for p in g["processes"]:
        if p["pid"] == int(sys.argv[1]):
            c = p["container"] or {}
            print(p["owner"], p["mps_group"], c.get("id"), c.get("running"))' "$1" <<<"$PS"; }
t_is "$(owner "$LEFT_PID")" "container-gone None $L False" "the left-over process: its container's, whose init is gone"
t_is "$(owner "$GROW_PID")" "container None $G True" "the growing container's process: a running container's"
t_is "$(owner "$HOST_PID")" "host None None None" "the host process: the host's"
t_is "$(owner "$SERVER_PID")" "mps-stopped team None None" "the MPS server of team, whose daemon is gone: mps-stopped"
t_is "$("$GH_PYTHON" -c '
import json, sys
for g in json.load(sys.stdin)["gpus"]:
    u = g["unowned"]
    print(g["index"], u["bytes"] >> 20, u["host_bytes"] >> 20, u["container_gone_bytes"] >> 20, u["mps_stopped_bytes"] >> 20, u["processes"])' <<<"$PS" | tr '\n' ';')" \
        "0 600 0 300 300 2;1 700 700 0 0 1;" "ps --json: per GPU, the memory no running container owns, by whose"
TEXT=$(gpucli ps "$CFG" --mps-dir="$MPS" --state-dir="$T_RUNC_ROOT" 2>&1)
t_match "$TEXT" "^GPU memory no running container owns:" "ps: the section of memory nobody owns"
t_match "$TEXT" "^0 +$LEFT_PID +300MiB +hold-fd +left over by runc container ${L:0:12}, whose init is gone\$" \
        "ps: the left-over, with its container"
t_match "$TEXT" "^0 +$SERVER_PID +300MiB +hold-fd +MPS server of group team, whose control daemon is gone\$" \
        "ps: the MPS server of the stopped group"
t_match "$TEXT" "^1 +$HOST_PID +700MiB +hold-fd +host process" "ps: the host process"
t_nomatch "$TEXT" "^1 +$GROW_PID +700MiB +hold-fd +" "ps: the running container's process is not in that section"

# --- metrics
M=$(gpucli metrics "$CFG" --mps-dir="$MPS" --state-dir="$T_RUNC_ROOT" 2>&1)
t_match "$M" '^gpuhook_gpu_memory_unowned_bytes\{gpu="0",uuid="[^"]+",owner="container-gone"\} '$((300 << 20))'$' \
        "metrics: GPU 0's left-over memory (gpuhook names)"
t_match "$M" '^gpuhook_gpu_memory_unowned_bytes\{gpu="0",uuid="[^"]+",owner="mps-stopped"\} '$((300 << 20))'$' \
        "metrics: GPU 0's stopped MPS server's memory"
t_match "$M" '^gpuhook_fb_unowned\{gpu="1",UUID="[^"]+",.*,owner="host"\} 700$' "metrics: GPU 1's host memory in MiB (DCGM names)"
t_match "$M" '^gpuhook_fb_unowned\{gpu="1",UUID="[^"]+",.*,owner="container-gone"\} 0$' "metrics: and 0 where there is none"

# --- doctor
DJ=$(gpucli doctor "$CFG" --mps-dir="$MPS" --state-dir="$T_RUNC_ROOT" --json 2>/dev/null)
MEMCHECK=$("$GH_PYTHON" -c '
import json, sys
for c in json.load(sys.stdin)["checks"]:
    if c["name"] == "gpu-memory":
        print(c["status"]); print(c["evidence"]); print(c["fix"])' <<<"$DJ")
t_is "$(head -n1 <<<"$MEMCHECK")" warn "doctor: gpu-memory warns" || t_diag "$DJ"
t_match "$MEMCHECK" "PID $LEFT_PID \\(hold-fd\\) of runc container $L, whose init is gone, 300 MiB" "doctor names the left-over"
t_match "$MEMCHECK" "PID $SERVER_PID \\(hold-fd\\), the MPS server of group team, whose daemon is gone" "and the stopped group's server"
t_match "$(tail -n1 <<<"$MEMCHECK")" "^kill $LEFT_PID; gpu-cli mps --mps-dir=$MPS stop team\$" "its fix: kill the left-over, stop the group (in its --mps-dir)"

# --- top: a container whose memory grows over the window, one that does not
(for mib in $(seq 710 10 900); do
        printf '%s %s\n' "$GROW_PID" "$mib" >"$DRV/etc/fake-nvml-processes.tmp"
        mv "$DRV/etc/fake-nvml-processes.tmp" "$DRV/etc/fake-nvml-processes"
        sleep 0.3
done) &
GROWER=$!
TOP=$(unshare -m --propagation private sh -c 'mount -t proc proc "$0/fake-proc" && exec "$@"' "$DRV" "$GPU_CLI" \
        --root="$DRV" top --interval=1 --iterations=4 --window=3 "$CFG" --mps-dir="$MPS" --state-dir="$T_RUNC_ROOT" 2>&1)
kill "$GROWER" 2>/dev/null
wait "$GROWER" 2>/dev/null
LAST=$(awk '/^gpu-cli top/ {s = ""} {s = s $0 "\n"} END {printf "%s", s}' <<<"$TOP")
t_diag "$LAST"
t_match "$LAST" "^1 +runc +${G:0:12} +- +[0-9]+MiB .* grows \\+[0-9]+MiB in [0-9]+s\$" "top: the growing container's trend"
t_match "$LAST" "^0 +runc +${L:0:12} +- +300MiB .* its init is gone\$" "top: the left-over container's line says its init is gone"
t_match "$LAST" "^GPU 0 .*unowned 600MiB\$" "top: GPU 0's line sums the memory nobody owns"
t_match "$(awk '/^gpu-cli top/ {n++} n == 1' <<<"$TOP")" "^1 +runc +${G:0:12} .* -\$" "top: no trend before the window is full"
printf '%s 900\n' "$GROW_PID" >"$DRV/etc/fake-nvml-processes"
TOP=$(unshare -m --propagation private sh -c 'mount -t proc proc "$0/fake-proc" && exec "$@"' "$DRV" "$GPU_CLI" \
        --root="$DRV" top --interval=1 --iterations=3 --window=3 "$CFG" --state-dir="$T_RUNC_ROOT" 2>&1)
t_match "$(awk '/^gpu-cli top/ {s = ""} {s = s $0 "\n"} END {printf "%s", s}' <<<"$TOP")" \
        "^1 +runc +${G:0:12} +- +900MiB .* steady\$" "top: memory that does not change is steady"
t_not "top --window=1 is refused" "$GPU_CLI" top --window=1

kill "$HOST_PID" "$SERVER_PID" "$LEFT_PID" 2>/dev/null
for c in "$L" "$G"; do "$RUNC" --root "$T_RUNC_ROOT" delete -f "$c" >/dev/null 2>&1; done
t_done
