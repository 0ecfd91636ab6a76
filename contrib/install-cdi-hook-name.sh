#!/bin/sh
# meson install step for -Dnvidia_cdi_hook_name=true: BINDIR/nvidia-cdi-hook -> our nvidia-cdi-hook
# (LIBEXECDIR/gpu-hook/nvidia-cdi-hook), the name CDI specs written by NVIDIA's tools call and that
# Docker >= 29.2 looks for to send `docker run --gpus` through CDI.  The name belongs to NVIDIA's
# toolkit: an existing file that is not this link is left alone, with a note.
bindir=${MESON_INSTALL_DESTDIR_PREFIX:?}/$1
target=$2
link=$bindir/nvidia-cdi-hook
if [ -L "$link" ] && [ "$(readlink "$link")" = "$target" ]; then
        exit 0
fi
if [ -e "$link" ] || [ -L "$link" ]; then
        echo "install: $link exists (NVIDIA's nvidia-cdi-hook?); not replacing it" >&2
        exit 0
fi
mkdir -p "$bindir"
ln -s "$target" "$link"
