#!/bin/sh
# meson install step for -Dnvidia_hook_name=true: BINDIR/nvidia-container-runtime-hook -> gpu-hook,
# so that `docker run --gpus` finds gpu-hook.  The name belongs to NVIDIA's toolkit: an existing file
# that is not this link is left alone, with a note.
bindir=${MESON_INSTALL_DESTDIR_PREFIX:?}/$1
link=$bindir/nvidia-container-runtime-hook
if [ -L "$link" ] && [ "$(readlink "$link")" = gpu-hook ]; then
        exit 0
fi
if [ -e "$link" ] || [ -L "$link" ]; then
        echo "install: $link exists (NVIDIA's hook?); not replacing it" >&2
        exit 0
fi
ln -s gpu-hook "$link"
