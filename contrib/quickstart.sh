#!/bin/bash
# From a fresh clone to a working gpu-cli, as root on Debian 12 / Ubuntu:
#
#   bash contrib/quickstart.sh [BUILD_DIR]      (default: build)
#
# Installs the build dependencies (contrib/deps.sh), builds, prints the version, and builds a fake
# driver root (tests/fake-driver) so that gpu-cli can be tried without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}

. contrib/deps.sh
gh_install_deps

if [ -f "$BUILD/build.ninja" ]; then
        echo "quickstart: reusing $BUILD"
else
        meson setup "$BUILD" >/dev/null
fi
ninja -C "$BUILD" >/dev/null
"$BUILD/cli/gpu-cli" --version

fake_root=$PWD/$BUILD/fake-driver-root
if [ -x tests/fake-driver/make-root.sh ] || [ -f tests/fake-driver/make-root.sh ]; then
        rm -rf "$fake_root"
        GH_BUILD_DIR=$PWD/$BUILD bash tests/fake-driver/make-root.sh "$fake_root" >/dev/null
        echo "quickstart: fake driver root in $fake_root; try: $BUILD/cli/gpu-cli --root=$fake_root info"
else
        echo "quickstart: tests/fake-driver/make-root.sh is not in this tree yet; no fake driver root"
fi

# ---- TODO(gpu container): once `gpu-hook createRuntime` has landed, run a real GPU container here:
#   build a busybox rootfs (tests/lib.sh make_busybox_rootfs --glibc), a bundle with gpu-hook as its
#   createRuntime hook and NVIDIA_VISIBLE_DEVICES=all, `runc run` it and show `nvidia-smi -L` from inside.
#   On a machine without a GPU, point the hook's config ("cli": {"root": ...}) at the fake driver root.
echo "quickstart: done"
