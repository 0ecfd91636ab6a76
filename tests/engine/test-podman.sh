#!/bin/bash
# podman --runtime gpu-runtime: a container whose environment asks for a GPU gets it with no hooks.d
# file at all (an empty hooks directory); one without gets nothing.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
. "$GH_SOURCE_DIR/tests/engine/engine.sh"
t_need_root
t_need_cmd podman runc

engine_setup
engine_write_config "{\"runtime\": {\"runtimes\": [\"runc\"], \"hook-path\": \"$GPU_HOOK\"}}"
host_mountinfo_snapshot "$T/mounts.before"
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
t_done
