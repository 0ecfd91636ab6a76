# The common start of the tests/gpu scripts, sourced right after `set -u`: where the programs
# under test come from, and the TAP helpers.  Two ways to run:
#   the kit that tests/gpu/prepare.sh builds (carried to the GPU machine as .gpukit; GH_KIT=DIR
#   names another): its gpu-cli, gpu-hook, runc and busybox;
#   a build tree: GH_BUILD_DIR set (meson test sets it, and GPU_CLI, GPU_HOOK, ... with it).
# Sets REPO, KIT, KIT_MODE (kit, build, or empty) and LC_ALL=C; in kit mode exports GPU_CLI,
# GPU_HOOK, RUNC, BUSYBOX (and GH_TIME); sources tests/lib.sh (the repository's, else the kit's).
# Neither a kit nor GH_BUILD_DIR is a bail-out unless GH_KIT_OPTIONAL=1 (the caller then finds a
# build itself).
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
KIT=${GH_KIT:-$REPO/.gpukit}
export LC_ALL=C
KIT_MODE=
if [ -z "${GH_BUILD_DIR:-}" ] && [ -x "$KIT/bin/gpu-cli" ]; then
        KIT_MODE=kit
        export GPU_CLI=$KIT/bin/gpu-cli GPU_HOOK=$KIT/bin/gpu-hook RUNC=$KIT/bin/runc BUSYBOX=$KIT/bin/busybox
        [ -x "$KIT/bin/time" ] && export GH_TIME=$KIT/bin/time
        # the commit the kit was built from, for the benchmarks' tables (the tree here may be older)
        [ -z "${GH_BENCH_COMMIT:-}" ] && GH_BENCH_COMMIT=$(sed -n 's/^commit: //p' "$KIT/MANIFEST" 2>/dev/null) &&
                export GH_BENCH_COMMIT
        # The kit's runc finds libseccomp through a fixed RPATH there (prepare.sh says why).
        if [ "$(id -u)" -eq 0 ]; then
                mkdir -p /run/gpukit/lib && cp -f "$KIT"/lib/*.so* /run/gpukit/lib/ 2>/dev/null
        fi
elif [ -n "${GH_BUILD_DIR:-}" ]; then
        KIT_MODE=build
elif [ "${GH_KIT_OPTIONAL:-0}" != 1 ]; then
        echo "Bail out! no kit at $KIT and no GH_BUILD_DIR: run tests/gpu/prepare.sh on the CPU machine first"
        exit 1
fi
for f in "$REPO/tests/lib.sh" "$KIT/tests/lib.sh"; do [ -f "$f" ] && { . "$f"; break; }; done
# The CUDA compiler of the GPU machine (on PATH or under /usr/local/cuda*), or empty.
NVCC=$(command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc /usr/local/cuda-*/bin/nvcc 2>/dev/null | head -n 1)
# gpukit_need_gpu_nvcc: root, a GPU (/dev/nvidiactl) and nvcc, or the whole script is skipped.
gpukit_need_gpu_nvcc() {
        t_need_root
        [ -e /dev/nvidiactl ] || t_skip_all "no NVIDIA GPU here"
        [ -n "$NVCC" ] || t_skip_all "no nvcc"
}
