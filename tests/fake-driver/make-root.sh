#!/bin/bash
# make-root.sh OUTDIR [--layout standard|local] [--profile FILE] [--nvml-mode ok|crash|hang|error] [--sockets]
#
# Writes a complete fake NVIDIA driver root into OUTDIR (see tests/fake-driver/README.md).
# The built libraries and programs come from $GH_BUILD_DIR/tests/fake-driver; without
# GH_BUILD_DIR, from the first of build/ build-*/ (in the source tree) that has them.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
srcdir=$(cd "$here/../.." && pwd)

artifacts=
if [ -n "${GH_BUILD_DIR:-}" ]; then
        artifacts=$GH_BUILD_DIR/tests/fake-driver
else
        for b in "$srcdir/build" "$srcdir"/build-*; do
                if [ -f "$b/tests/fake-driver/fake-driver.conf" ] && [ -x "$b/tests/fake-driver/nvidia-smi" ]; then
                        artifacts=$b/tests/fake-driver
                        break
                fi
        done
fi
if [ -z "$artifacts" ] || [ ! -f "$artifacts/fake-driver.conf" ] || [ ! -x "$artifacts/nvidia-smi" ]; then
        echo "make-root.sh: no built fake driver in ${artifacts:-$srcdir/build*}; run 'ninja -C <builddir>' or set GH_BUILD_DIR" >&2
        exit 1
fi
exec python3 "$here/make-root.py" --artifacts "$artifacts" "$@"
