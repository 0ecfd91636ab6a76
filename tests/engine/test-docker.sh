#!/bin/bash
# `docker run --gpus` with gpu-hook installed as nvidia-container-runtime-hook, against a real dockerd
# started here (its own data and exec roots, no networking) and the fake driver.  dockerd looks the
# hook name up on its PATH at start and runs it as a prestart hook with its whole environment.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
. "$GH_SOURCE_DIR/tests/engine/engine.sh"
t_need_root
t_need_cmd dockerd docker

engine_setup
engine_write_config "{$(engine_runtime_json), \"mps\": {\"dir\": \"$T/mps\"}}"
# What a user runs: gpu-cli setup docker writes daemon.json's runtime and the --gpus hook name.
SETUP=(setup docker --config="$T/daemon.json" --hook-link="$ENGINE_HOOKDIR/nvidia-container-runtime-hook"
        --hook-path="$GH_ENGINE_HOOK" --runtime-path="$GH_ENGINE_RUNTIME")
echo '{"log-level": "warn"}' >"$T/daemon.json"
t_ok "gpu-cli setup docker" "$GPU_CLI" "${SETUP[@]}"
host_mountinfo_snapshot "$T/mounts.before"
docker_start "$T/daemon.json" || { echo "Bail out! dockerd did not start"; exit 1; }
docker_import gh-gpu-test || { echo "Bail out! docker import failed"; exit 1; }
host_mountinfo_snapshot "$T/mounts.daemon"

PROBE='echo "smi:$(nvidia-smi -L 2>&1 | tr "\n" "|")"
echo "cuda:$(cuda-probe 2>&1 | head -n1)"
echo "dev:$(ls /dev | grep -E "^nvidia" | sort | tr "\n" ",")"
echo "libcuda:$(ls /usr/lib/x86_64-linux-gnu | grep -c "^libcuda")"
echo "mps:$(ls /tmp/nvidia-mps 2>&1 | tr "\n" ",")"
echo "shm:$(ls /dev/shm 2>&1 | tr "\n" ",")"'

# drun DESC ARGS...: docker run --rm --network none ARGS IMAGE sh -c PROBE; RUN_* as lib.sh's runners.
drun() {
        timeout -k 5 "$GH_RUN_TIMEOUT" docker -H "unix://$DOCKER_SOCK" run --rm --network none "$@" \
                gh-gpu-test /bin/sh -c "$PROBE" </dev/null >"$T/.run.out" 2>"$T/.run.err"
        RUN_RC=$?
        _gh_finish_run
}
field() { printf '%s\n' "$RUN_STDOUT" | sed -n "s/^$1://p"; }
ngpus() { field smi | tr '|' '\n' | grep -c '^GPU '; }

drun --gpus all
t_is "$RUN_RC" 0 "--gpus all: container ran" || t_diag "$RUN_STDERR"
t_is "$(ngpus)" 2 "--gpus all: nvidia-smi -L lists both fake GPUs"
t_match "$(field cuda)" '^CUDA OK: 2 device' "--gpus all: libcuda loads and sees both GPUs"
t_is "$(field dev)" "nvidia-uvm,nvidia-uvm-tools,nvidia0,nvidia1,nvidiactl," "--gpus all: device nodes of both GPUs"
t_match "$(tail -n1 "$T/hook.log" 2>/dev/null)" '"stage":"prestart"' "the hook ran as Docker's prestart hook and logged it"
mountinfo_unchanged "--gpus all: host mount table unchanged" "$T/mounts.daemon"

drun --gpus '"device=1"'
t_is "$RUN_RC" 0 "--gpus device=1: container ran" || t_diag "$RUN_STDERR"
t_is "$(ngpus)" 1 "--gpus device=1: exactly one GPU"
t_match "$(field smi)" "$UUID1" "--gpus device=1: it is GPU 1"
t_is "$(field dev)" "nvidia-uvm,nvidia-uvm-tools,nvidia1,nvidiactl," "--gpus device=1: only /dev/nvidia1"

drun --gpus "device=$UUID0"
t_is "$(ngpus)" 1 "--gpus device=UUID: one GPU" || t_diag "$RUN_STDERR"
t_match "$(field smi)" "$UUID0" "--gpus device=UUID: the GPU with that UUID"

drun --gpus 1
t_is "$(ngpus)" 1 "--gpus 1 (a count): one GPU" || t_diag "$RUN_STDERR"

drun --gpus 'all,capabilities=utility'
t_is "$RUN_RC" 0 "--gpus all,capabilities=utility: container ran" || t_diag "$RUN_STDERR"
t_is "$(ngpus)" 2 "capabilities=utility: nvidia-smi works"
t_is "$(field libcuda)" 0 "capabilities=utility: no libcuda in the container"
t_nomatch "$(field dev)" 'nvidia-uvm' "capabilities=utility: no UVM node"

drun
t_is "$RUN_RC" 0 "no --gpus: container ran" || t_diag "$RUN_STDERR"
t_is "$(field dev)" "" "no --gpus: no NVIDIA device node"
t_is "$(field libcuda)" 0 "no --gpus: no driver library"
t_match "$(field smi)" 'not found' "no --gpus: no nvidia-smi"

drun -e NVIDIA_VISIBLE_DEVICES=all
t_is "$(field dev)" "" "no --gpus, NVIDIA_VISIBLE_DEVICES=all in the environment: nothing (Docker runs no hook)"

drun --gpus all -e 'NVIDIA_REQUIRE_CUDA=cuda>=99.0'
t_is "$RUN_RC" 125 "an unmet requirement: docker run exits 125"
t_match "$RUN_STDERR" 'cuda>=99' "... and shows the hook's message naming the requirement"
mountinfo_unchanged "after a failed start: host mount table unchanged" "$T/mounts.daemon"

# The hook's own environment (dockerd's whole environment) must not matter.
docker_stop
NVIDIA_VISIBLE_DEVICES=none NVIDIA_DRIVER_CAPABILITIES=video GPU_HOOK_CONFIG=/nonexistent docker_start "$T/daemon.json" ||
        { echo "Bail out! dockerd did not restart"; exit 1; }
drun --gpus all
t_is "$(ngpus)" 2 "dockerd started with NVIDIA_VISIBLE_DEVICES=none in its environment: --gpus all still gets both" ||
        t_diag "$RUN_STDERR"

# gpu-runtime as the runtime "gpu" that setup put in daemon.json, then as the default runtime.
drun --runtime=gpu -e NVIDIA_VISIBLE_DEVICES=0
t_is "$RUN_RC" 0 "--runtime=gpu -e NVIDIA_VISIBLE_DEVICES=0: container ran" || t_diag "$RUN_STDERR"
t_is "$(ngpus)" 1 "--runtime=gpu: exactly one GPU"
t_match "$(field smi)" "$UUID0" "--runtime=gpu: it is GPU 0"
t_match "$(field cuda)" '^CUDA OK: 1 device' "--runtime=gpu: libcuda sees one GPU"
mountinfo_unchanged "--runtime=gpu: host mount table unchanged" "$T/mounts.daemon"
drun --runtime=gpu
t_is "$(field dev)" "" "--runtime=gpu without NVIDIA_VISIBLE_DEVICES: no device node"
drun --runtime=gpu --gpus all
t_is "$(ngpus)" 2 "--runtime=gpu with --gpus all: both GPUs, injected once" || t_diag "$RUN_STDERR"
drun --runtime=gpu -e NVIDIA_VISIBLE_DEVICES=7
t_is "$RUN_RC" 125 "--runtime=gpu, a GPU that does not exist: exit 125"
t_match "$RUN_STDERR" "gpu-runtime: .*unknown device '7'" "... with gpu-runtime's message"

# MPS groups through Docker.  The annotation an orchestrator sets (docker run --annotation) needs
# dockerd API 1.43 (Docker 24); Debian 12's dockerd (20.10, API 1.41) has none, so there the
# variable GPU_HOOK_MPS_GROUP, accepted only when the configuration says so, is the way in.
MPS=("$GPU_CLI" --root="$DRV" mps --dir="$T/mps")
t_ok "mps start dk on GPU 1" "${MPS[@]}" start dk --device=1 --memory=1G --cdi-spec=none
dpid=$(sed -n 's/^pid=//p' "$T/mps/dk/group")
api=$(dk version --format '{{.Server.APIVersion}}' 2>/dev/null)
if [ -n "$api" ] && [ "$(printf '%s\n1.43\n' "$api" | sort -V | head -n1)" = 1.43 ]; then
        drun --gpus device=1 --annotation org.gpu-hook.mps-group=dk
        t_is "$RUN_RC" 0 "--gpus device=1 --annotation org.gpu-hook.mps-group=dk: container ran" || t_diag "$RUN_STDERR"
        t_match "$(field mps)" "^control," "... its /tmp/nvidia-mps is the group's pipe directory"
        t_match "$(field shm)" "fake-mps-control.$dpid" "... its /dev/shm is the group's"
        drun --runtime=gpu -e NVIDIA_VISIBLE_DEVICES=1 --annotation org.gpu-hook.mps-group=dk
        t_is "$RUN_RC" 0 "--runtime=gpu with the annotation: container ran" || t_diag "$RUN_STDERR"
        t_match "$(field mps)" "^control," "... in the group too"
else
        t_skip "docker run --annotation org.gpu-hook.mps-group" "dockerd API ${api:-unknown} < 1.43 has no --annotation"
fi
drun --gpus device=1 -e GPU_HOOK_MPS_GROUP=dk
t_is "$RUN_RC" 0 "GPU_HOOK_MPS_GROUP in the environment: container ran" || t_diag "$RUN_STDERR"
t_nomatch "$(field mps)" "control" "... but joined no group (the variable is not accepted by default)"
engine_write_config "{$(engine_runtime_json), \"mps\": {\"dir\": \"$T/mps\"}, \"accept-mps-group-envvar\": true}"
drun --gpus device=1 -e GPU_HOOK_MPS_GROUP=dk
t_is "$RUN_RC" 0 "accept-mps-group-envvar, --gpus device=1 -e GPU_HOOK_MPS_GROUP=dk: container ran" || t_diag "$RUN_STDERR"
t_match "$(field mps)" "^control," "... its /tmp/nvidia-mps is the group's pipe directory"
t_match "$(field shm)" "fake-mps-control.$dpid" "... its /dev/shm is the group's"
drun --runtime=gpu -e NVIDIA_VISIBLE_DEVICES=1 -e GPU_HOOK_MPS_GROUP=dk
t_match "$(field mps)" "^control," "... and with --runtime=gpu" || t_diag "$RUN_STDERR"
drun --gpus device=0 -e GPU_HOOK_MPS_GROUP=dk
t_is "$RUN_RC" 125 "the group's GPU not among the container's: docker run exits 125"
t_match "$RUN_STDERR" "MPS group 'dk' runs on GPU $UUID1" "... naming the group's GPU"
engine_write_config "{$(engine_runtime_json), \"mps\": {\"dir\": \"$T/mps\"}}"
t_ok "mps stop dk" "${MPS[@]}" stop dk

docker_stop
t_ok "gpu-cli setup docker --default" "$GPU_CLI" "${SETUP[@]}" --default
docker_start "$T/daemon.json" || { echo "Bail out! dockerd did not start with the default runtime"; exit 1; }
drun -e NVIDIA_VISIBLE_DEVICES=all
t_is "$RUN_RC" 0 "default-runtime gpu, NVIDIA_VISIBLE_DEVICES=all: container ran" || t_diag "$RUN_STDERR"
t_is "$(ngpus)" 2 "default-runtime gpu: both GPUs"
drun
t_is "$RUN_RC:$(field dev)" "0:" "default-runtime gpu, no NVIDIA variable: ran, no device node"
mountinfo_unchanged "default-runtime: host mount table unchanged" "$T/mounts.daemon"

# CDI through Docker: dockerd 25 and later (API 1.44) with "features": {"cdi": true} take
# `--device VENDOR/CLASS=NAME` from the specs in /etc/cdi and /var/run/cdi.
docker_stop
if [ -n "$api" ] && [ "$(printf '%s\n1.44\n' "$api" | sort -V | head -n1)" = 1.44 ]; then
        "$GPU_CLI" --root="$DRV" cdi generate --output="$T/spec.json" >"$T/gen.log" 2>&1 || t_diag_file "$T/gen.log"
        cdi_install "$T/spec.json" gpu-hook-test.json || t_fatal "cannot install the CDI spec"
        echo '{"log-level": "warn", "features": {"cdi": true}}' >"$T/daemon-cdi.json"
        docker_start "$T/daemon-cdi.json" || { echo "Bail out! dockerd did not start with CDI"; exit 1; }
        drun --device nvidia.com/gpu=all
        t_is "$RUN_RC" 0 "CDI --device nvidia.com/gpu=all: container ran" || t_diag "$RUN_STDERR"
        t_is "$(ngpus)" 2 "CDI =all: nvidia-smi lists both GPUs"
        t_match "$(field cuda)" '^CUDA OK: 2 device' "CDI =all: libcuda loads and sees both"
        t_is "$(field dev)" "nvidia-modeset,nvidia-uvm,nvidia-uvm-tools,nvidia0,nvidia1,nvidiactl," "CDI =all: the spec's nodes"
        drun --device nvidia.com/gpu=1
        t_is "$(ngpus)" 1 "CDI --device nvidia.com/gpu=1: one GPU" || t_diag "$RUN_STDERR"
        t_match "$(field smi)" "$UUID1" "CDI =1: GPU 1"
        t_nomatch "$(field dev)" 'nvidia0' "CDI =1: no /dev/nvidia0"
        drun --device "nvidia.com/gpu=$UUID0"
        t_match "$(field smi)" "$UUID0" "CDI --device nvidia.com/gpu=UUID: the GPU with that UUID" || t_diag "$RUN_STDERR"
        drun --device nvidia.com/gpu=7
        t_is "$RUN_RC" 125 "CDI --device nvidia.com/gpu=7 (no such device): docker run exits 125"
        mountinfo_unchanged "CDI: host mount table unchanged" "$T/mounts.daemon"
        docker_stop
else
        t_skip "docker run --device nvidia.com/gpu=... (CDI)" "dockerd API ${api:-unknown} < 1.44 has no CDI"
fi
t_not "dockerd stopped by its PID" kill -0 "$(cat "$T/docker/pid" 2>/dev/null || echo 999999999)"
mountinfo_unchanged "after dockerd stopped: host mount table as before it started" "$T/mounts.before"
t_done
