#!/bin/bash
# buildah build with a GPU: a RUN step of `buildah build --device nvidia.com/gpu=...` gets the GPU
# through our CDI spec (its createContainer hook, gpu-cli cdi-hook), a step without --device gets
# nothing, and the committed image carries no driver file.  Debian 13's buildah 1.39 (the engines13
# suite runs it in tests/engine/bed.sh with crun and the cgroup2 hierarchy only, see below); on a host
# with buildah it runs there too.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
. "$GH_SOURCE_DIR/tests/engine/engine.sh"
t_need_root
t_need_cmd buildah "$ENGINE_OCI"

engine_setup
"$GPU_CLI" --root="$DRV" cdi generate --output="$T/spec.json" >"$T/gen.log" 2>&1 ||
        { t_diag_file "$T/gen.log"; t_fatal "gpu-cli cdi generate"; }
cdi_install "$T/spec.json" gpu-hook-test.json || t_fatal "cannot install the CDI spec"
host_mountinfo_snapshot "$T/mounts.before"

B=(buildah --root "$T/buildah/root" --runroot "$T/buildah/runroot" --storage-driver vfs)
mkdir -p "$T/ctx"
cp -a "$IMGROOT" "$T/ctx/rootfs"
cat >"$T/ctx/Containerfile" <<'EOF'
FROM scratch
COPY rootfs/ /
RUN echo "smi:$(nvidia-smi -L 2>&1 | tr '\n' '|')"; \
    echo "cuda:$(cuda-probe 2>&1 | head -n1)"; \
    echo "dev:$(ls /dev | grep -E '^nvidia' | sort | tr '\n' ',')"; \
    echo "step:done"
EOF
# bbuild TAG ARGS...: buildah build of the context; RUN_* as lib.sh's runners.
bbuild() {
        local tag=$1
        shift
        timeout -k 5 "$GH_RUN_TIMEOUT" env BUILDAH_ISOLATION=oci "${B[@]}" build --runtime "$(command -v "$ENGINE_OCI")" \
                --cgroup-manager cgroupfs --network none --layers=false \
                --ulimit nofile=20000:20000 --ulimit nproc=32768:32768 -t "$tag" "$@" "$T/ctx" \
                </dev/null >"$T/.run.out" 2>"$T/.run.err"
        RUN_RC=$?
        _gh_finish_run
}
field() { printf '%s\n' "$RUN_STDOUT" | sed -n "s/^$1://p"; }
ngpus() { field smi | tr '|' '\n' | grep -c '^GPU '; }

bbuild gh-gpu-all --device nvidia.com/gpu=all
# buildah 1.39 takes the device nodes CDI put into the spec out again and puts them back with a cgroup
# rule whose access is empty: runc refuses the spec, crun writes "c 195:0 " to a cgroup v1
# devices.allow (EINVAL); only crun on cgroup v2 (an eBPF program) takes it.  That is buildah's, and
# it hits every CDI spec with device nodes, so it is a skip that names it, not our failure.
if [ "$RUN_RC" -ne 0 ] && grep -Eq 'device access at [0-9]+ field cannot be empty|write file .devices.allow.: Invalid argument' <<<"$RUN_STDERR"; then
        t_skip_all "buildah $(buildah --version | awk '{print $3}') gives CDI device nodes an empty cgroup access, which $ENGINE_OCI on this cgroup setup refuses (use crun on cgroup v2)"
fi
t_is "$RUN_RC" 0 "buildah build --device nvidia.com/gpu=all: the build succeeded" || t_diag "$RUN_STDERR"
t_is "$(field step)" done "... its RUN step ran"
t_is "$(ngpus)" 2 "... and nvidia-smi -L in the RUN step lists both fake GPUs"
t_match "$(field cuda)" '^CUDA OK: 2 device' "... libcuda loads there and sees both"
t_is "$(field dev)" "nvidia-modeset,nvidia-uvm,nvidia-uvm-tools,nvidia0,nvidia1,nvidiactl," "... with the GPUs' device nodes"

# What the step had must not become part of the image: the CDI mounts are the step's only.
ctr=$("${B[@]}" from localhost/gh-gpu-all 2>"$T/from.err") || t_diag_file "$T/from.err"
mnt=$("${B[@]}" mount "$ctr" 2>"$T/mount.err") || t_diag_file "$T/mount.err"
if [ -n "$mnt" ] && [ -d "$mnt" ]; then
        t_is "$(find "$mnt" \( -name 'libcuda.so*' -o -name 'libnvidia-ml.so*' -o -name nvidia-smi -o -name 'nvidia[0-9]*' \) \
                ! -type l 2>/dev/null | sed "s|^$mnt||" | tr '\n' ' ')" "" "the built image has no driver file and no device node"
        t_diag "links the step's hook left in the image: $(find "$mnt" -type l -name 'lib*nvidia*' -o -type l -name 'libcuda*' 2>/dev/null | sed "s|^$mnt||" | tr '\n' ' ')"
        "${B[@]}" umount "$ctr" >/dev/null 2>&1
else
        t_fail "the built image can be mounted to look into it"
fi
"${B[@]}" rm "$ctr" >/dev/null 2>&1

bbuild gh-gpu-one --device nvidia.com/gpu=1
t_is "$RUN_RC" 0 "buildah build --device nvidia.com/gpu=1: the build succeeded" || t_diag "$RUN_STDERR"
t_is "$(ngpus)" 1 "... the RUN step sees one GPU"
t_match "$(field smi)" "$UUID1" "... GPU 1"
t_is "$(field dev)" "nvidia-modeset,nvidia-uvm,nvidia-uvm-tools,nvidia1,nvidiactl," "... and only its node"

bbuild gh-nogpu
t_is "$RUN_RC" 0 "buildah build without --device: the build succeeded" || t_diag "$RUN_STDERR"
t_is "$(field dev)" "" "... its RUN step has no NVIDIA device node"
t_match "$(field smi)" 'not found' "... and no nvidia-smi"

bbuild gh-gpu-bad --device nvidia.com/gpu=7
t_not "buildah build --device nvidia.com/gpu=7 (no such GPU): the build fails" test "$RUN_RC" -eq 0
t_match "$RUN_STDERR" 'nvidia.com/gpu=7' "... naming the device"

"${B[@]}" rmi -a -f >/dev/null 2>&1
mountinfo_unchanged "the mount table is as before" "$T/mounts.before"
t_done
