#!/bin/bash
# containerd alone (1.6, no CRI): `ctr run --runc-binary gpu-runtime` with NVIDIA_VISIBLE_DEVICES gets
# the GPU; a container without it gets nothing.  containerd calls the wrapper as Docker does.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
. "$GH_SOURCE_DIR/tests/engine/engine.sh"
t_need_root
t_need_cmd containerd ctr "$ENGINE_OCI"

engine_setup
engine_write_config "{$(engine_runtime_json)}"
oci_image_tar "$IMGROOT" docker.io/library/gh-gpu-test:latest "$T/image.tar" || { echo "Bail out! cannot build the image"; exit 1; }
host_mountinfo_snapshot "$T/mounts.before"
containerd_start || { echo "Bail out! containerd did not start"; exit 1; }
ctr -a "$CTD_SOCK" images import --snapshotter native "$T/image.tar" >"$T/import.log" 2>&1 ||
        { t_diag_file "$T/import.log"; echo "Bail out! ctr images import failed"; exit 1; }

PROBE='echo "smi:$(nvidia-smi -L 2>&1 | tr "\n" "|")"; echo "cuda:$(cuda-probe 2>&1 | head -n1)"; echo "dev:$(ls /dev | grep -E "^nvidia" | sort | tr "\n" ",")"'
N=0
crun_ctr() {
        N=$((N + 1))
        timeout -k 5 "$GH_RUN_TIMEOUT" ctr -a "$CTD_SOCK" run --rm --snapshotter native --runc-binary "$GH_ENGINE_RUNTIME" \
                --runc-root "$T/ctd/runc" "$@" docker.io/library/gh-gpu-test:latest "gh-ctr-$$-$N" /bin/sh -c "$PROBE" \
                </dev/null >"$T/.run.out" 2>"$T/.run.err"
        RUN_RC=$?
        _gh_finish_run
}
field() { printf '%s\n' "$RUN_STDOUT" | sed -n "s/^$1://p"; }

crun_ctr --env NVIDIA_VISIBLE_DEVICES=1
t_is "$RUN_RC" 0 "ctr run --runc-binary gpu-runtime, NVIDIA_VISIBLE_DEVICES=1: ran" || t_diag "$RUN_STDERR"
t_is "$(field smi | tr '|' '\n' | grep -c '^GPU ')" 1 "nvidia-smi lists one GPU"
t_match "$(field smi)" "$UUID1" "... GPU 1"
t_match "$(field cuda)" '^CUDA OK: 1 device' "libcuda loads and sees one GPU"
t_is "$(field dev)" "nvidia-uvm,nvidia-uvm-tools,nvidia1,nvidiactl," "device nodes: nvidia1, nvidiactl, UVM"

crun_ctr
t_is "$RUN_RC:$(field dev)" "0:" "without NVIDIA_VISIBLE_DEVICES: ran, no device node" || t_diag "$RUN_STDERR"

containerd_stop
t_not "containerd stopped by its PID" kill -0 "${CTD_PID:-999999999}"
mountinfo_unchanged "host mount table unchanged" "$T/mounts.before"
t_done
