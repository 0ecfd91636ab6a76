#!/bin/bash
# Graphics on the real driver, TAP: Vulkan, EGL and headless OpenGL ES in containers started by runc
# with gpu-hook.  Runs THERE (the GPU machine), as root, from the repo root, with the kit that
# tests/gpu/prepare.sh built (.gpukit, which holds the three test programs in graphics/) and the
# loader .debs that tests/gpu/graphics/fetch-debs.sh downloads here (default .gl/; extra/*.deb are
# the X11 client libraries that NVIDIA's Vulkan ICD, libGLX_nvidia, links against).  Both travel:
# carry [".gpukit", ".gl"].
#
#   bash tests/gpu/run-graphics.sh [--debs DIR]          GPU machine
#   bash tests/gpu/run-graphics.sh --fake [--debs DIR]   here: the fake driver, for the plumbing
#
# The image: busybox + this machine's glibc (tests/lib.sh) + the .debs unpacked into the image's
# rootfs (dpkg-deb -x into a staging directory, then copied under the image's /usr; never into /) +
# its ld.so.cache rebuilt + the three programs.  Cases:
#   graphics           NVIDIA_DRIVER_CAPABILITIES=graphics: the loader files are at the loader paths,
#                      vk-devices prints the GPU ("NVIDIA H200"), egl-devices an NVIDIA display,
#                      gles-triangle renders and reads back its triangle: all exit 0
#   compute,utility    no NVIDIA loader file; each program fails cleanly (exit 1, one FAIL line)
# With --fake the driver is the fake one (no real GL): the files and the plumbing are checked, and
# the programs must fail cleanly in both cases (the fake libGLX_nvidia is no Vulkan driver).
set -u
here=$(cd "$(dirname "$0")" && pwd)
GH_KIT_OPTIONAL=1
. "$here/kit.sh"
DEBS=$REPO/.gl
FAKE=0
while [ $# -gt 0 ]; do
        case $1 in
        --debs) DEBS=$2; shift 2 ;;
        --fake) FAKE=1; shift ;;
        *) echo "usage: run-graphics.sh [--fake] [--debs DIR]" >&2; exit 2 ;;
        esac
done

if [ "$KIT_MODE" = kit ]; then
        GFX_BIN=$KIT/graphics
else
        # A build tree: GH_BUILD_DIR (meson) or the first build*/ with gpu-cli.
        b=${GH_BUILD_DIR:-$(ls -d "$REPO"/build*/cli/gpu-cli 2>/dev/null | head -n1 | sed 's|/cli/gpu-cli$||')}
        [ -n "$b" ] || { echo "Bail out! no kit at $KIT and no build directory: run tests/gpu/prepare.sh"; exit 1; }
        export GPU_CLI=$b/cli/gpu-cli GPU_HOOK=$b/hook/gpu-hook
        GFX_BIN=${GH_GFX_BIN:-}
fi
t_need_root
t_need_cmd dpkg-deb

ls "$DEBS"/*.deb >/dev/null 2>&1 || t_skip_all "no loader .debs in $DEBS (see the comment at the top)"
if [ -z "$GFX_BIN" ]; then
        # Built here from the sources (needs libvulkan-dev, libegl-dev, libgles-dev).
        GFX_BIN=$T/gfx-bin
        bash "$here/graphics/build.sh" "$GFX_BIN" >"$T/gfx-build.log" 2>&1 ||
                { t_diag_file "$T/gfx-build.log"; t_skip_all "cannot build the graphics test programs here"; }
fi
PROGS="vk-devices egl-devices gles-triangle"
for p in $PROGS; do
        [ -x "$GFX_BIN/$p" ] || { echo "Bail out! $GFX_BIN/$p is missing"; exit 1; }
done

if [ $FAKE = 1 ]; then
        DRV=$T/drv
        bash "$REPO/tests/fake-driver/make-root.sh" "$DRV" --layout local >"$T/mkroot.log" 2>&1 ||
                { t_diag_file "$T/mkroot.log"; echo "Bail out! make-root.sh failed"; exit 1; }
        CLI_ROOT=$DRV
else
        [ -e /dev/nvidiactl ] || t_skip_all "no NVIDIA GPU here (/dev/nvidiactl is missing); --fake runs the plumbing"
        CLI_ROOT=/
fi
t_diag "gpu-cli: $GPU_CLI; runc: $RUNC; programs: $GFX_BIN; debs: $DEBS; driver root: $CLI_ROOT"
configs=$("$GPU_CLI" --root="$CLI_ROOT" --debug="$T/list.log" list --configs --json 2>&1)
t_diag "gpu-cli list --configs:" "$("$GPU_CLI" --root="$CLI_ROOT" list --configs 2>&1)"
t_match "$configs" '"container_path": "/usr/share/vulkan/icd.d/nvidia_icd[^"]*\.json"' "gpu-cli list finds the driver's Vulkan ICD file" ||
        t_diag "$(grep -iE 'loader|skipping /.*(json|-rc)' "$T/list.log")"
t_match "$configs" '"container_path": "/usr/share/glvnd/egl_vendor.d/[^"]*nvidia[^"]*\.json"' "gpu-cli list finds the driver's EGL vendor file"

# The image: rootfs template + loaders.  dpkg-deb -x into a staging directory first: the image's
# /lib is a link to usr/lib, which unpacking straight into the rootfs could replace.
IMG=$T/image
if ! make_busybox_rootfs "$IMG" --glibc >"$T/rootfs.log" 2>&1; then
        t_diag_file "$T/rootfs.log"
        echo "Bail out! no rootfs"
        exit 1
fi
unpack_ok=1
for deb in "$DEBS"/*.deb "$DEBS"/extra/*.deb; do
        [ -f "$deb" ] || continue
        st=$T/stage/$(basename "$deb")
        mkdir -p "$st"
        if ! dpkg-deb -x "$deb" "$st" 2>>"$T/unpack.log"; then
                unpack_ok=0
                continue
        fi
        rm -rf "$st/usr/share/doc" "$st/usr/share/lintian"
        for top in "$st"/*; do
                case $(basename "$top") in
                lib|lib64) cp -a "$top/." "$IMG/usr/$(basename "$top")/" ;;
                *) cp -a "$top" "$IMG/" ;;
                esac
        done
done
"$IMG/usr/local/bin/check-ldconfig" -r "$IMG" 2>>"$T/unpack.log" || unpack_ok=0
loaders=$("$IMG/usr/local/bin/check-ldconfig" -p -C "$IMG/etc/ld.so.cache" 2>/dev/null |
        grep -Eo '^[[:space:]]*lib(vulkan\.so\.1|EGL\.so\.1|GLESv2\.so\.2|GLdispatch\.so\.0|X11\.so\.6) ' | sort -u | wc -l)
if [ $unpack_ok = 1 ] && [ "$loaders" -eq 5 ]; then
        t_pass "the image has the loaders (libvulkan, libEGL, libGLESv2, libGLdispatch, libX11 in its ld cache)"
else
        t_fail "the image has the loaders (libvulkan, libEGL, libGLESv2, libGLdispatch, libX11 in its ld cache)"
        t_diag "found $loaders of 5"
        t_diag_file "$T/unpack.log"
fi
for p in $PROGS; do cp "$GFX_BIN/$p" "$IMG/usr/local/bin/$p"; done
cat >"$IMG/probe.sh" <<'EOS'
#!/bin/sh
for f in /usr/share/vulkan/icd.d/nvidia_icd.json /usr/share/glvnd/egl_vendor.d/10_nvidia.json; do
        if [ -f "$f" ]; then echo "file:$f:$(awk -v p="$f" '$5 == p { print $6 }' /proc/self/mountinfo)"; else echo "file:$f:absent"; fi
done
# Where the driver's entry libraries resolve, and what they need that the image lacks.
for l in libGLX_nvidia.so.0 libEGL_nvidia.so.0; do
        p=$(check-ldconfig -p | sed -n "s/^[[:space:]]*$l (libc6,x86-64) => //p" | head -n1)
        echo "lib:$l:${p:-not in the ld cache}"
        [ -n "$p" ] && /lib64/ld-linux-x86-64.so.2 --list "$p" 2>&1 | grep 'not found' | sed "s/^/missing:$l:/"
done
for p in vk-devices egl-devices gles-triangle; do
        timeout 120 /usr/local/bin/$p >/tmp/$p.out 2>&1
        rc=$?
        echo "rc:$p:$rc"
        [ $p = vk-devices ] && rc_vk=$rc
        sed "s/^/out:$p:/" /tmp/$p.out
done
# The Vulkan loader's own account when it found no NVIDIA driver (only with an ICD file present).
if [ "$rc_vk" != 0 ] && [ -f /usr/share/vulkan/icd.d/nvidia_icd.json ]; then
        VK_LOADER_DEBUG=error,warn,driver timeout 120 /usr/local/bin/vk-devices 2>&1 | tail -n 25 | sed 's/^/dbg:vk-devices:/'
fi
EOS
chmod 755 "$IMG/probe.sh"

printf '{"cli": {"root": "%s", "path": "%s"}, "log": {"file": "%s"}}\n' "$CLI_ROOT" "$GPU_CLI" "$T/hook.log" \
        >"$T/gpu-hook.json"
# gfx_case NAME CAPABILITIES: the image under runc with the hook; OUT is what probe.sh printed.
gfx_case() {
        local r=$T/rootfs-$1
        cp -a "$IMG" "$r"
        make_bundle "$T/b-$1" "$r" /probe.sh
        bundle_add_hook "$T/b-$1" createRuntime "$GPU_HOOK" "--config=$T/gpu-hook.json" createRuntime
        bundle_set_env "$T/b-$1" NVIDIA_VISIBLE_DEVICES=all "NVIDIA_DRIVER_CAPABILITIES=$2"
        run_runc "$T/b-$1" "$1"
        OUT=$RUN_STDOUT
        t_is "$RUN_RC" 0 "$1: the container runs" || t_diag "$RUN_STDERR"
        printf '%s\n' "$OUT" | grep -E '^(file|lib|missing|rc|out|dbg):' | sed 's/^/# /'
}
get() { printf '%s\n' "$OUT" | sed -n "s|^$1:$2:||p" | head -n1; }
outs() { printf '%s\n' "$OUT" | sed -n "s|^out:$1:||p"; }

gfx_case graphics graphics
t_match "$(get file /usr/share/vulkan/icd.d/nvidia_icd.json)" '^ro,' "graphics: the Vulkan ICD file is there, read-only"
t_match "$(get file /usr/share/glvnd/egl_vendor.d/10_nvidia.json)" '^ro,' "graphics: the EGL vendor file is there, read-only"
if [ $FAKE = 1 ]; then
        for p in $PROGS; do
                t_is "$(get rc $p)" 1 "graphics (fake driver, no real GL): $p fails cleanly (exit 1)"
                t_match "$(outs $p)" ': FAIL: ' "graphics (fake driver): $p says why"
        done
else
        t_is "$(get rc vk-devices)" 0 "graphics: vk-devices passes"
        t_match "$(outs vk-devices)" '^vulkan: device [0-9]+: NVIDIA ' "graphics: Vulkan lists the NVIDIA GPU"
        t_is "$(get rc egl-devices)" 0 "graphics: egl-devices passes"
        t_match "$(outs egl-devices)" 'vendor NVIDIA' "graphics: an EGL device display from NVIDIA"
        t_is "$(get rc gles-triangle)" 0 "graphics: gles-triangle renders and reads back its triangle"
        t_match "$(outs gles-triangle)" '^gles: NVIDIA ' "graphics: the GLES renderer is NVIDIA's"
fi

gfx_case compute-utility compute,utility
t_is "$(get file /usr/share/vulkan/icd.d/nvidia_icd.json)" absent "compute,utility: no Vulkan ICD file"
t_is "$(get file /usr/share/glvnd/egl_vendor.d/10_nvidia.json)" absent "compute,utility: no EGL vendor file"
for p in $PROGS; do
        t_is "$(get rc $p)" 1 "compute,utility: $p fails cleanly (exit 1)"
done
t_match "$(outs vk-devices)" 'VK_ERROR_INCOMPATIBLE_DRIVER' "compute,utility: Vulkan finds no driver"

passed=$((T_COUNT - T_FAILED - T_SKIPPED))
echo "# gpu graphics: $passed passed, $T_FAILED failed, $T_SKIPPED skipped"
t_done
