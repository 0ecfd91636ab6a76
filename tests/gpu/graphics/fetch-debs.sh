#!/bin/bash
# fetch-debs.sh [DIR]: downloads (here, with apt, no install) the loader packages that
# tests/gpu/run-graphics.sh unpacks into its test image, for amd64, into DIR (default .gl at the
# repo root, git-ignored):
#   DIR/*.deb        libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2
#   DIR/extra/*.deb  the X11 client libraries NVIDIA's libGLX_nvidia (the Vulkan ICD) links against
# Uses its own apt lists directory, so the host's apt state is left as it was.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-$(cd "$here/../../.." && pwd)/.gl}
lists=$(mktemp -d /tmp/gh-gl-lists.XXXXXX)
trap 'rm -rf "$lists"' EXIT
mkdir -p "$dir/extra" "$lists/partial"
o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 "-oDir::State::Lists=$lists")
apt-get "${o[@]}" update >/dev/null
(cd "$dir" && apt-get "${o[@]}" download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
(cd "$dir/extra" && apt-get "${o[@]}" download libx11-6 libxext6 libxcb1 libxau6 libxdmcp6 libbsd0 libmd0)
ls "$dir"/*.deb "$dir"/extra/*.deb
