#!/bin/bash
# build.sh OUTDIR: builds the graphics test programs against Debian's loader headers
# (libvulkan-dev, libegl-dev, libgles-dev).  They need only the loaders and glibc.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build.sh OUTDIR}
cc=${CC:-cc}
mkdir -p "$out"
$cc -O2 -Wall -Wextra -Werror -o "$out/vk-devices" "$here/vk-devices.c" -lvulkan
$cc -O2 -Wall -Wextra -Werror -o "$out/egl-devices" "$here/egl-devices.c" -lEGL -lGLESv2
$cc -O2 -Wall -Wextra -Werror -o "$out/gles-triangle" "$here/gles-triangle.c" -lEGL -lGLESv2
