#!/bin/bash
# gpu-cli ps, metrics and doctor on the real driver, TAP.  Runs THERE (the GPU machine), as root,
# from the repo root, with the kit of tests/gpu/prepare.sh carried as .gpukit.
#
#   bash tests/gpu/run-doctor.sh
#
# A container started through gpu-hook runs a CUDA loop on GPU 0: gpu-cli ps must show its
# container id, its in-container PID and memory > 0 while nvidia-smi inside the container lists no
# process; doctor on the host and on that container must report nothing failed (the container: all
# ok); a container started with NVIDIA_VISIBLE_DEVICES=void must be told it asked for no GPU.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/kit.sh"
gpukit_need_gpu_nvcc

LOOP=$T/gpu_loop
t_ok "nvcc builds gpu_loop" timeout 300 "$NVCC" -O2 -cudart static -arch=native -o "$LOOP" "$here/gpu_loop.cu"
make_busybox_rootfs "$T/tmpl" --glibc >"$T/rootfs.log" 2>&1 || { t_diag_file "$T/rootfs.log"; echo "Bail out! rootfs"; exit 1; }
cp "$LOOP" "$T/tmpl/usr/local/bin/gpu_loop"
printf '{"cli": {"root": "/", "path": "%s"}, "log": {"file": "%s/hook.log"}}\n' "$GPU_CLI" "$T" >"$T/config.json"
mkdir -p "$T_RUNC_ROOT"

# start NAME VISIBLE CMD: a detached container with the hook
start() {
        local name=$1 visible=$2
        cp -a "$T/tmpl" "$T/$name-rootfs"
        make_bundle "$T/$name" "$T/$name-rootfs" /bin/sh -c "$3"
        bundle_set_env "$T/$name" NVIDIA_VISIBLE_DEVICES="$visible" NVIDIA_DRIVER_CAPABILITIES=compute,utility
        bundle_add_hook "$T/$name" createRuntime "$GPU_HOOK" "--config=$T/config.json" createRuntime
        "$RUNC" --root "$T_RUNC_ROOT" run -d -b "$T/$name" "gh-doctor-$name-$$" >"$T/$name.out" 2>"$T/$name.err" </dev/null
}
ID=gh-doctor-loop-$$
start loop 0 '/usr/local/bin/gpu_loop 180 & wait'
t_is "$?" 0 "the CUDA loop container started through gpu-hook" || t_diag_file "$T/loop.err"
CPID=
for _ in $(seq 300); do
        CPID=$(sed -n 's/^gpu_loop: running pid //p' "$T/loop.out")
        [ -n "$CPID" ] && break
        grep -q FAIL "$T/loop.out" && break
        sleep 0.1
done
t_match "$CPID" '^[0-9]+$' "gpu_loop runs in the container (PID $CPID inside)" || t_diag_file "$T/loop.out"
sleep 2 # a utilisation sample

PS=$("$GPU_CLI" ps --no-trunc --state-dir="$T_RUNC_ROOT" 2>&1)
t_diag "gpu-cli ps:" "$PS"
t_match "$PS" "^0 +[0-9]+ +runc +$ID +$CPID +C" "ps: GPU 0's process is in container $ID with in-container PID $CPID"
MEM=$("$GPU_CLI" ps --json --state-dir="$T_RUNC_ROOT" 2>/dev/null | "$GH_PYTHON" -c '
import json, sys
for g in json.load(sys.stdin)["gpus"]:
    for p in g["processes"]:
        if (p["container"] or {}).get("id") == sys.argv[1]:
            print(p["used_memory_bytes"])' "$ID")
t_match "$MEM" '^[1-9][0-9]*$' "ps: the container's process uses GPU memory ($MEM bytes)"
SMI=$("$RUNC" --root "$T_RUNC_ROOT" exec "$ID" nvidia-smi 2>&1)
t_diag "nvidia-smi inside:" "$SMI"
# Driver 580 translates PIDs for a process in a PID namespace: nvidia-smi inside then shows the
# in-container PID (older drivers show none).  Either way it must not show a host PID.
if grep -q 'No running processes found' <<<"$SMI"; then
        t_pass "nvidia-smi inside the container lists no process (this driver does not translate PIDs)"
else
        t_match "$SMI" "^\\| +0 +N/A +N/A +$CPID +C " "nvidia-smi inside shows the process under its in-container PID $CPID, as ps does"
fi
M=$("$GPU_CLI" metrics --state-dir="$T_RUNC_ROOT" 2>&1)
t_diag "$(grep -v '^#' <<<"$M")"
t_match "$M" "^gpuhook_container_gpu_memory_used_bytes\{gpu=\"0\",.*runtime=\"runc\",container_id=\"$ID\"\} ${MEM:-x}\$" \
        "metrics: the container's memory is what ps says"

HOST=$("$GPU_CLI" doctor 2>&1)
RC=$?
t_diag "gpu-cli doctor:" "$HOST"
t_is "$RC" 0 "doctor on the host: nothing failed"
for c in driver device-nodes library-version nvml; do
        t_match "$HOST" "^ok +$c " "doctor on the host: $c ok"
done
# device-programs (cgroup v2): warns without a bpffs, ok with one; `gpu-cli setup bpffs` mounts it
# and --undo takes it away again, so the machine is left as it was.
if grep -q '^cgroup2 /sys/fs/cgroup ' /proc/mounts; then
        if grep -q ' /sys/fs/bpf bpf ' /proc/mounts; then
                t_match "$HOST" "^ok +device-programs +kept in /sys/fs/bpf/gpu-hook" "doctor on the host: a bpffs, device programs kept"
                t_skip "gpu-cli setup bpffs makes doctor's device-programs ok" "a bpffs is mounted here already"
        else
                t_match "$HOST" "^warn +device-programs +no bpffs at /sys/fs/bpf" "doctor on the host: no bpffs, device-programs warns"
                t_ok "gpu-cli setup bpffs" "$GPU_CLI" setup bpffs
                t_match "$("$GPU_CLI" doctor 2>&1)" "^ok +device-programs " "gpu-cli setup bpffs makes doctor's device-programs ok"
                t_ok "gpu-cli setup bpffs --undo" "$GPU_CLI" setup bpffs --undo
                t_nomatch "$(cat /proc/mounts)" " /sys/fs/bpf bpf " "and --undo leaves no bpffs behind"
        fi
fi
CD=$("$GPU_CLI" doctor --config="$T/config.json" --state-dir="$T_RUNC_ROOT" --container="$ID" 2>&1)
RC=$?
t_diag "gpu-cli doctor --container $ID:" "$CD"
t_is "$RC" 0 "doctor on the CUDA container: nothing failed"
t_nomatch "$CD" '^(warn|fail) ' "doctor on the CUDA container: every check ok"

start void void 'sleep 60'
V=$("$GPU_CLI" doctor --config="$T/config.json" --state-dir="$T_RUNC_ROOT" --container="gh-doctor-void-$$" 2>&1)
RC=$?
t_diag "gpu-cli doctor on the void container:" "$V"
t_is "$RC" 1 "doctor on a NVIDIA_VISIBLE_DEVICES=void container fails"
t_match "$V" "cause: The container asked for no GPU: NVIDIA_VISIBLE_DEVICES is 'void'" "... and says no GPU was requested"
t_done
