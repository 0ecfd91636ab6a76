#!/bin/bash
# From a fresh clone to a GPU container, as root on Debian 12 / Ubuntu:
#
#   bash contrib/quickstart.sh [BUILD_DIR]      (default: build)
#
# Installs the build dependencies, runc and busybox (contrib/deps.sh's quickstart set; the engines
# and tools the test suites need come with `bash contrib/run-tests.sh`), builds, prints the version,
# then runs a GPU container under runc with gpu-hook as its createRuntime hook: on this machine's
# NVIDIA driver when it has one, else on the bundled fake driver (tests/fake-driver), and shows
# nvidia-smi -L from inside.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}

. contrib/deps.sh
gh_install_deps quickstart

if [ -f "$BUILD/build.ninja" ]; then
        echo "quickstart: reusing $BUILD"
else
        meson setup "$BUILD" >/dev/null
fi
ninja -C "$BUILD" >/dev/null
"$BUILD/cli/gpu-cli" --version

# The driver: the real one when this machine has it, else the bundled fake one.
if [ -r /proc/driver/nvidia/version ] && "$BUILD/cli/gpu-cli" info --fast >/dev/null 2>&1; then
        driver_root=/
        echo "quickstart: using this machine's NVIDIA driver: $(sed -n 's/^NVRM version: *//p' /proc/driver/nvidia/version)"
else
        driver_root=$PWD/$BUILD/fake-driver-root
        rm -rf "$driver_root"
        GH_BUILD_DIR=$PWD/$BUILD bash tests/fake-driver/make-root.sh "$driver_root" >/dev/null
        echo "quickstart: no NVIDIA driver here; using the fake driver root in $driver_root"
fi
echo "== gpu-cli --root=$driver_root info --fast"
"$BUILD/cli/gpu-cli" --root="$driver_root" info --fast

# A busybox rootfs with this machine's glibc, NVIDIA_VISIBLE_DEVICES=all, gpu-hook as the hook.
export GH_SOURCE_DIR=$PWD GH_BUILD_DIR=$PWD/$BUILD
export GPU_CLI=$PWD/$BUILD/cli/gpu-cli GPU_HOOK=$PWD/$BUILD/hook/gpu-hook
set +eu
. tests/lib.sh
make_busybox_rootfs "$T/rootfs" --glibc || exit 1
printf '{"cli": {"root": "%s", "path": "%s"}, "log": {"file": "%s"}}\n' \
        "$driver_root" "$GPU_CLI" "$T/gpu-hook.log" >"$T/gpu-hook.json"
make_bundle "$T/bundle" "$T/rootfs" /bin/sh -c \
        'echo "== inside the container: nvidia-smi -L"; nvidia-smi -L; echo "== ls /dev/nvidia*"; ls /dev/nvidia*'
bundle_set_env "$T/bundle" NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=compute,utility
bundle_add_hook "$T/bundle" createRuntime "$GPU_HOOK" "--config=$T/gpu-hook.json" createRuntime
echo "== runc run, createRuntime hook gpu-hook, NVIDIA_VISIBLE_DEVICES=all"
if run_runc "$T/bundle" quickstart; then
        printf '%s\n' "$RUN_STDOUT"
        echo "== the hook's log line"
        tail -n 1 "$T/gpu-hook.log"
        echo "quickstart: done"
else
        printf '%s\n%s\n' "$RUN_STDOUT" "$RUN_STDERR"
        echo "quickstart: the GPU container failed" >&2
        exit 1
fi
