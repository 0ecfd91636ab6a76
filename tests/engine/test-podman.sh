#!/bin/bash
# podman --runtime gpu-runtime: a container whose environment asks for a GPU gets it with no hooks.d
# file at all (an empty hooks directory); one without gets nothing.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
. "$GH_SOURCE_DIR/tests/engine/engine.sh"
t_need_root
t_need_cmd podman "$ENGINE_OCI"

engine_setup
engine_write_config "{$(engine_runtime_json), \"mps\": {\"dir\": \"$T/mps\"}}"
host_mountinfo_snapshot "$T/mounts.before"
t_is "$(_gh_podman info --format '{{.Host.OCIRuntime.Path}}' 2>/dev/null)" "$(command -v "$ENGINE_OCI")" "podman runs containers with $ENGINE_OCI ($("$ENGINE_OCI" --version | head -n 1))"
PROBE='echo "smi:$(nvidia-smi -L 2>&1 | tr "\n" "|")"; echo "cuda:$(cuda-probe 2>&1 | head -n1)"; echo "dev:$(ls /dev | grep -E "^nvidia" | sort | tr "\n" ",")"'
field() { printf '%s\n' "$RUN_STDOUT" | sed -n "s/^$1://p"; }

RUNC=$GH_ENGINE_RUNTIME run_podman "$IMGROOT" "" -e NVIDIA_VISIBLE_DEVICES=0 -- /bin/sh -c "$PROBE"
t_is "$RUN_RC" 0 "podman --runtime gpu-runtime, NVIDIA_VISIBLE_DEVICES=0: ran" || t_diag "$RUN_STDERR"
t_is "$(field smi | tr '|' '\n' | grep -c '^GPU ')" 1 "nvidia-smi lists one GPU"
t_match "$(field smi)" "$UUID0" "... GPU 0"
t_match "$(field cuda)" '^CUDA OK: 1 device' "libcuda loads and sees one GPU"
t_is "$(field dev)" "nvidia-uvm,nvidia-uvm-tools,nvidia0,nvidiactl," "device nodes: nvidia0, nvidiactl, UVM"
mountinfo_unchanged "host mount table unchanged" "$T/mounts.before"

RUNC=$GH_ENGINE_RUNTIME run_podman "$IMGROOT" "" -- /bin/sh -c "$PROBE"
t_is "$RUN_RC:$(field dev)" "0:" "without NVIDIA_VISIBLE_DEVICES: ran, no device node" || t_diag "$RUN_STDERR"

RUNC=$GH_ENGINE_RUNTIME run_podman "$IMGROOT" "" -e NVIDIA_VISIBLE_DEVICES=5 -- /bin/true
t_not "a GPU that does not exist: podman fails" test "$RUN_RC" -eq 0
t_match "$RUN_STDERR" "gpu-runtime: .*unknown device '5'" "... with gpu-runtime's message"
mountinfo_unchanged "host mount table unchanged after a failure" "$T/mounts.before"

# An MPS group joined through podman --annotation: with gpu-runtime, and with the hooks.d file
MPS=("$GPU_CLI" --root="$DRV" mps --dir="$T/mps")
t_ok "mps start pod on GPU 0" "${MPS[@]}" start pod --device=0 --threads=50 --cdi-spec=none
MPSPROBE='echo "mps:$(ls /tmp/nvidia-mps 2>&1 | tr "\n" ",")"; echo "shm:$(ls /dev/shm 2>&1 | tr "\n" ",")"'
dpid=$(sed -n 's/^pid=//p' "$T/mps/pod/group")
RUNC=$GH_ENGINE_RUNTIME run_podman "$IMGROOT" "" -e NVIDIA_VISIBLE_DEVICES=0 --annotation org.gpu-hook.mps-group=pod -- /bin/sh -c "$MPSPROBE"
t_is "$RUN_RC" 0 "podman --runtime gpu-runtime --annotation org.gpu-hook.mps-group=pod: ran" || t_diag "$RUN_STDERR"
t_match "$(field mps)" "^control," "... /tmp/nvidia-mps is the group's pipe directory"
t_match "$(field shm)" "fake-mps-control.$dpid" "... /dev/shm is the group's"
mkdir -p "$T/hooks.d"
printf '{"version": "1.0.0", "hook": {"path": "%s", "args": ["gpu-hook", "createRuntime"]}, "when": {"always": true}, "stages": ["createRuntime"]}\n' \
        "$GH_ENGINE_HOOK" >"$T/hooks.d/oci-gpu-hook.json"
run_podman "$IMGROOT" "$T/hooks.d" -e NVIDIA_VISIBLE_DEVICES=0 --annotation org.gpu-hook.mps-group=pod -- /bin/sh -c "$MPSPROBE"
t_is "$RUN_RC" 0 "podman with the hooks.d file and the annotation: ran" || t_diag "$RUN_STDERR"
t_match "$(field mps)" "^control," "... in the group too"
t_ok "mps stop pod" "${MPS[@]}" stop pod
t_done
