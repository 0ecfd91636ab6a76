#!/bin/bash
# gpu-cli ps, top and metrics against the fake driver: two runc containers (one holding its
# /dev/nvidia0, one holding only /dev/null) and a host process holding the fake /dev/nvidia1.  Each
# GPU user must be attributed to the right container id and in-container PID, metrics must carry
# the same numbers, and top must draw a clean screen in a terminal (tmux).
#
# How the fake NVML sees GPU users: tests/integration/usage-kit.sh.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
t_need_root
t_need_cmd runc unshare "$GH_PYTHON"

. "$GH_SOURCE_DIR/tests/integration/usage-kit.sh"
usage_driver '
p["gpus"][0].update(process_memory_mib=512, process_sm_util=30)
p["gpus"][1].update(process_memory_mib=2048, process_sm_util=70, temperature=51, power_mw=123456)'

mkdir -p "$T_RUNC_ROOT"
A=gh-ps-gpu-$$
B=gh-ps-nogpu-$$
make_container gpu 'hold-fd /dev/nvidia0 & wait'
bundle_set_env "$T/gpu/bundle" NVIDIA_VISIBLE_DEVICES=0
bundle_add_hook "$T/gpu/bundle" createRuntime "$GPU_HOOK" "--config=$T/config.json" createRuntime
"$RUNC" --root "$T_RUNC_ROOT" run -d -b "$T/gpu/bundle" "$A" >"$T/a.out" 2>"$T/a.err" </dev/null
t_is "$?" 0 "container $A (GPU 0 through gpu-hook) started" || t_diag_file "$T/a.err"
make_container nogpu 'hold-fd /dev/null & wait'
"$RUNC" --root "$T_RUNC_ROOT" run -d -b "$T/nogpu/bundle" "$B" >"$T/b.out" 2>"$T/b.err" </dev/null
t_is "$?" 0 "container $B (no GPU) started" || t_diag_file "$T/b.err"
"$HOLD" --user="$NOBODY" "$DRV/dev/nvidia1" >"$T/h.out" &
HOST_PID=$!
A_CPID=$(wait_ready "$T/a.out") || t_diag_file "$T/a.err"
B_CPID=$(wait_ready "$T/b.out")
wait_ready "$T/h.out" >/dev/null
A_HOST_PIDS=$("$RUNC" --root "$T_RUNC_ROOT" ps --format json "$A" | tr -d '[]' | tr ',' ' ')
t_match "$A_CPID" '^[0-9]+$' "the GPU container's process holds /dev/nvidia0 (in-container PID $A_CPID)"
t_match "$B_CPID" '^[0-9]+$' "the other container's process is running"

# --- ps --json, one line per process: gpu pid runtime id container_pid memory sm command
PS_JSON=$(gpucli ps --json --state-dir="$T_RUNC_ROOT" 2>"$T/ps.err")
t_is "$?" 0 "gpu-cli ps --json" || t_diag_file "$T/ps.err"
ROWS=$("$GH_PYTHON" -c '
import json, sys
d = json.load(sys.stdin)
for g in d["gpus"]:
    for p in g["processes"]:
        c = p["container"] or {"runtime": "host", "id": "-"}
        print(g["index"], p["pid"], c["runtime"], c["id"], p["container_pid"], p["used_memory_bytes"], p["sm_util"], p["command"])
' <<<"$PS_JSON")
t_diag "$ROWS"
t_is "$(grep -c . <<<"$ROWS")" 2 "ps lists exactly two GPU users (the no-GPU container's process is not one)"
read -r _ A_PID A_RT A_ID A_CP A_MEM A_SM A_CMD <<<"$(awk '$1 == 0' <<<"$ROWS")"
t_is "${A_RT:-} ${A_ID:-}" "runc $A" "GPU 0's user is in runc container $A"
t_is "${A_CP:-}" "$A_CPID" "with the PID it has inside the container"
t_match "$A_HOST_PIDS" "(^| )${A_PID:-x}( |\$)" "and its host PID ${A_PID:-} is one of the container's (runc ps)"
t_is "${A_MEM:-} ${A_SM:-} ${A_CMD:-}" "$((512 << 20)) 30 hold-fd" "memory, SM utilisation and command of GPU 0's user"
t_is "$(awk '$1 == 1 {print $2, $3, $4, $5, $6}' <<<"$ROWS")" "$HOST_PID host - None $((2048 << 20))" \
        "GPU 1's user is the host process $HOST_PID"
t_nomatch "$ROWS" "$B" "the container without a GPU is not listed"

PS_TEXT=$(gpucli ps --state-dir="$T_RUNC_ROOT" 2>&1)
t_match "$PS_TEXT" "^0 +${A_PID:-x} +runc +${A:0:12} +$A_CPID +C +512MiB +30 +0 +- +hold-fd\$" "ps (text): the container's row (no pod)"
t_match "$PS_TEXT" "^1 +$HOST_PID +host +- +- +C +2048MiB +70 +0 +- +hold-fd\$" "ps (text): the host process's row"
t_match "$PS_TEXT" "^1 +$HOST_PID +2048MiB +hold-fd +host process" "ps (text): the host process's memory is listed as no running container's"

# --- metrics: the same numbers
M=$(gpucli metrics --state-dir="$T_RUNC_ROOT" 2>&1)
t_match "$M" "^gpuhook_container_gpu_memory_used_bytes\{gpu=\"0\",uuid=\"GPU-[^\"]+\",runtime=\"runc\",container_id=\"$A\"\} ${A_MEM:-x}\$" \
        "metrics: the container's memory on GPU 0 is what ps says"
t_match "$M" "^gpuhook_container_gpu_utilization_percent\{gpu=\"0\",.*container_id=\"$A\"\} 30\$" "metrics: its utilisation"
t_match "$M" "^gpuhook_container_gpu_memory_used_bytes\{gpu=\"1\",.*runtime=\"host\",container_id=\"\"\} $((2048 << 20))\$" \
        "metrics: the host process's memory on GPU 1"
t_match "$M" '^gpuhook_gpu_memory_used_bytes\{gpu="1",.*\} '"$((2048 << 20))"'$' "metrics: GPU 1's memory used"
t_match "$M" '^gpuhook_gpu_temperature_celsius\{gpu="1",.*\} 51$' "metrics: GPU 1's temperature"
t_match "$M" '^gpuhook_gpu_power_watts\{gpu="1",.*\} 123\.456$' "metrics: GPU 1's power in watts"
t_nomatch "$M" "$B" "metrics: nothing about the container without a GPU"
if have_cmd promtool; then
        t_ok "promtool check metrics accepts the output" promtool_check "$M"
else
        t_skip "promtool check metrics" "promtool (Debian package prometheus) is not installed"
fi

# --- metrics --listen: the same text over HTTP, on loopback
PORT=$(free_port)
listen_start "$PORT" --state-dir="$T_RUNC_ROOT" || t_diag_file "$T/listen.err"
HTTP=$("$GH_PYTHON" -c 'import sys, urllib.request as u; print(u.urlopen(sys.argv[1], timeout=5).read().decode())' \
        "http://127.0.0.1:$PORT/metrics" 2>&1)
t_match "$HTTP" "container_id=\"$A\"\} ${A_MEM:-x}\$" "metrics --listen serves /metrics with the container's memory" ||
        t_diag_file "$T/listen.err"
NOTFOUND=$("$GH_PYTHON" -c '
import sys, urllib.request as u, urllib.error as e
try: u.urlopen(sys.argv[1], timeout=5)
except e.HTTPError as x: print(x.code)' "http://127.0.0.1:$PORT/other" 2>&1)
t_is "$NOTFOUND" 404 "metrics --listen: other paths are 404"
kill "$LISTEN_PID"
wait "$LISTEN_PID"
t_is "$?" 0 "metrics --listen stops cleanly on SIGTERM"
t_not "metrics --listen refuses a malformed address" "$GPU_CLI" --root="$DRV" metrics --listen=localhost

# --- top in a terminal: sorted by memory (the host process's 2048 MiB first), no stray escapes
if have_cmd tmux; then
        SOCK=$T/tmux.sock
        tmux -S "$SOCK" new-session -d -x 100 -y 20 -s top \
                "unshare -m --propagation private sh -c 'mount -t proc proc $DRV/fake-proc && exec $GPU_CLI --root=$DRV top --interval=1 --state-dir=$T_RUNC_ROOT'; echo top-exit=\$?; stty -a | tr ' ;' '\\n\\n' | grep -x -- '-\\{0,1\\}icanon'; sleep 60"
        SCREEN=
        for _ in $(seq 100); do
                SCREEN=$(tmux -S "$SOCK" capture-pane -p -t top 2>/dev/null)
                [ "$(grep -c hold-fd <<<"$SCREEN")" -ge 2 ] && break
                sleep 0.2
        done
        sleep 2.5 # at least one redraw
        SCREEN=$(tmux -S "$SOCK" capture-pane -p -t top)
        # keys: u sorts by SM utilisation at once (no wait for the next refresh), q quits and gives
        # the terminal back as it was (canonical mode)
        pane_until() { # PATTERN: the pane once it shows PATTERN (5 s at most)
                local pane
                for _ in $(seq 25); do
                        pane=$(tmux -S "$SOCK" capture-pane -p -t top 2>/dev/null)
                        grep -q "$1" <<<"$pane" && break
                        sleep 0.2
                done
                printf '%s\n' "$pane"
        }
        tmux -S "$SOCK" send-keys -t top u
        KEYED=$(pane_until 'sorted by SM utilisation')
        tmux -S "$SOCK" send-keys -t top q
        QUIT=$(pane_until 'icanon')
        tmux -S "$SOCK" kill-server
        t_diag "$SCREEN"
        t_match "$(head -n1 <<<"$KEYED")" 'sorted by SM utilisation' "top: the key u sorts by SM utilisation"
        t_match "$QUIT" '^top-exit=0$' "top: the key q quits (exit 0)"
        t_match "$QUIT" '^icanon$' "top: after q the terminal is back in canonical mode"
        t_match "$(head -n1 <<<"$SCREEN")" '^gpu-cli top  [0-9:]+  driver 580\.95\.05  sorted by memory' "top: the header is on the first line"
        t_is "$(awk '/^GPU +PID +RUNTIME/ {t = 1; next} /^$/ {t = 0} t && /hold-fd/ {print $2}' <<<"$SCREEN" | tr '\n' ' ')" \
                "$HOST_PID ${A_PID:-x} " \
                "top: processes sorted by memory (2048 MiB before 512 MiB)"
        t_match "$SCREEN" "^GPU 1 .*util +70%.*51C.*123W" "top: GPU 1's summary line"
        t_is "$(grep -c 'gpu-cli top' <<<"$SCREEN")" 1 "top: one screen, redrawn in place (no scrolled copies)"
        t_nomatch "$SCREEN" $'\e|\\[[0-9;]*[HJ]' "top: no stray escape sequences"
        t_is "$(awk 'length > 100' <<<"$SCREEN" | wc -l)" 0 "top: no line wider than the terminal"
else
        t_skip "top under tmux" "tmux is not installed"
fi

kill "$HOST_PID"
t_done
