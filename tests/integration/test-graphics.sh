#!/bin/bash
# Graphics loader files with the fake driver (docs/graphics.md): with --graphics (or --display) the
# container has the Vulkan ICD and layer files, the EGL vendor and platform files and the
# application profiles at the paths its loaders read, read-only, byte for byte the driver's, and
# every library they name resolves in the container (a bare name through its ld.so.cache, an
# absolute path at that very path); without graphics none of them; decoys never.  Both layouts of
# the fake driver: standard (/usr/share/...) and local (/usr/local/nvidia/share/..., like the GPU
# machine).
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
t_need_root
t_need_cmd runc
MKROOT=$GH_SOURCE_DIR/tests/fake-driver/make-root.sh

DRV=$T/drv
DRVL=$T/drv-local
bash "$MKROOT" "$DRV" >"$T/mkroot.log" 2>&1 || { t_diag_file "$T/mkroot.log"; echo "Bail out! make-root.sh failed"; exit 1; }
bash "$MKROOT" "$DRVL" --layout local >"$T/mkroot-l.log" 2>&1 ||
        { t_diag_file "$T/mkroot-l.log"; echo "Bail out! make-root.sh --layout local failed"; exit 1; }
VER=$(ls "$DRV/usr/lib/x86_64-linux-gnu" | sed -n 's/^libcuda\.so\.\([0-9]*\.[0-9.]*\)$/\1/p' | head -n1)

ICD=/usr/share/vulkan/icd.d/nvidia_icd.json
LAYER=/usr/share/vulkan/implicit_layer.d/nvidia_layers.json
VENDOR=/usr/share/glvnd/egl_vendor.d/10_nvidia.json
WAYLAND=/usr/share/egl/egl_external_platform.d/10_nvidia_wayland.json
GBM=/usr/share/egl/egl_external_platform.d/15_nvidia_gbm.json
PROFILES=/usr/share/nvidia/nvidia-application-profiles-$VER-rc
FILES="$ICD $LAYER $VENDOR $WAYLAND $GBM $PROFILES"
DECOYS="/usr/share/vulkan/icd.d/lvp_icd.x86_64.json /usr/share/glvnd/egl_vendor.d/50_mesa.json"
DECOYS="$DECOYS /usr/share/egl/egl_external_platform.d/20_nvidia_xcb.json"

# The container reports, per loader file: whether it is there, its md5, its mount options, and for
# the library it names where that resolves (ld cache for a bare name, the path itself otherwise).
PROBE='
for f in '"$FILES $DECOYS"'; do
        if [ ! -f "$f" ]; then echo "file:$f:absent"; continue; fi
        echo "file:$f:$(md5sum <"$f" | cut -d" " -f1)"
        echo "mnt:$f:$(awk -v p="$f" "\$5 == p { print \$6 }" /proc/self/mountinfo)"
        lib=$(sed -n "s/.*\"library_path\"[^\"]*\"\([^\"]*\)\".*/\1/p" "$f" | head -n1)
        [ -n "$lib" ] || continue
        case $lib in
        /*) where=$lib ;;
        *) where=$(check-ldconfig -p | sed -n "s/^[[:space:]]*$lib (libc6,x86-64) => //p" | head -n1) ;;
        esac
        if [ -n "$where" ] && [ -f "$where" ]; then
                echo "lib:$f:$lib:$(md5sum <"$where" | cut -d" " -f1)"
        else
                echo "lib:$f:$lib:unresolved"
        fi
done
echo end
'
new_container() {
        ROOTFS=$T/$1/rootfs
        BUNDLE=$T/$1/bundle
        make_busybox_rootfs "$ROOTFS" --glibc || return 1
        make_bundle "$BUNDLE" "$ROOTFS" /bin/sh -c "$PROBE"
}
hook_script() {
        local file=$1 drv=$2 a args=""
        shift 2
        for a in "$@"; do args="$args '$a'"; done
        cat >"$file" <<EOS
#!/bin/sh
pid=\$(sed -n 's/.*"pid": *\([0-9]*\).*/\1/p')
exec $GPU_CLI --root=$drv --debug=$T/cli.log configure --pid=\$pid $args $ROOTFS
EOS
        chmod 755 "$file"
}
fact() { printf '%s\n' "$RUN_STDOUT" | sed -n "s|^$1:$2:||p" | head -n1; }

# The driver's file for a container path, in a layout's share directory.
host_file() { echo "$1${2/#\/usr\/share/$3}"; }

host_mountinfo_snapshot "$T/mounts.before"

# gcase NAME DRIVER SHARE CONFIGURE-ARGS...
gcase() {
        local name=$1 drv=$2 share=$3 f src lib want
        shift 3
        new_container "$name"
        hook_script "$T/hook-$name" "$drv" --device=0 "$@"
        bundle_add_hook "$BUNDLE" createRuntime "$T/hook-$name"
        run_runc "$BUNDLE" "$name"
        t_is "$RUN_RC" 0 "$name: the container runs" || { t_diag "$RUN_STDERR"; return; }
        for f in $FILES; do
                src=$(host_file "$drv" "$f" "$share")
                t_is "$(fact file "$f")" "$(md5sum <"$src" | cut -d' ' -f1)" "$name: $f is the driver's $(basename "$src")"
                t_match "$(fact mnt "$f")" '^ro,' "$name: $f is mounted read-only"
                [ "$f" = "$PROFILES" ] && continue
                lib=$(sed -n 's/.*"library_path"[^"]*"\([^"]*\)".*/\1/p' "$src" | head -n1)
                want=$(md5sum <"$(readlink -f "$drv/$(gh_lib_in_root "$drv" "$lib")")" | cut -d' ' -f1)
                t_is "$(fact lib "$f")" "$lib:$want" "$name: $lib named by $(basename "$f") resolves to the driver's library"
        done
        for f in $DECOYS; do
                t_is "$(fact file "$f")" absent "$name: decoy $(basename "$f") is not injected"
        done
}
# gh_lib_in_root DRIVER LIB: the in-root path of a library named bare (looked up in the root's
# cache) or absolutely.
gh_lib_in_root() {
        case $2 in
        /*) echo "$2" ;;
        *) "$(_gh_host_ldconfig)" -p -C "$1/etc/ld.so.cache" | sed -n "s/^[[:space:]]*$2 (libc6,x86-64) => //p" | head -n1 ;;
        esac
}

gcase graphics "$DRV" /usr/share --graphics
gcase display "$DRV" /usr/share --display
gcase local-layout "$DRVL" /usr/local/nvidia/share --graphics --utility
# local layout: the layer file names /usr/local/nvidia/lib64/libGLX_nvidia.so.0; that very path exists
t_match "$(fact lib "$LAYER")" '^/usr/local/nvidia/lib64/libGLX_nvidia\.so\.0:[0-9a-f]{32}$' \
        "local layout: the absolute library path of the layer file exists in the container"

new_container nographics
hook_script "$T/hook-nographics" "$DRV" --device=0 --compute --utility --video
bundle_add_hook "$BUNDLE" createRuntime "$T/hook-nographics"
run_runc "$BUNDLE" nographics
t_is "$RUN_RC" 0 "compute,utility,video: the container runs" || t_diag "$RUN_STDERR"
for f in $FILES; do
        t_is "$(fact file "$f")" absent "compute,utility,video: no $f"
done

# gpu-cli list shows the same files (they come with graphics).
out=$("$GPU_CLI" --root="$DRVL" list --configs)
t_is "$(printf '%s\n' "$out" | wc -l)" 6 "list --configs: six loader files in the local layout"
t_match "$out" "^$DRVL/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json\$" "list --configs: the ICD under the driver's prefix"
json=$("$GPU_CLI" --root="$DRVL" list --json --configs)
t_is "$(printf '%s' "$json" | "$GH_PYTHON" -c 'import json,sys; print(" ".join(sorted(c["container_path"] for c in json.load(sys.stdin)["configs"])))')" \
        "$(printf '%s\n' $FILES | sort | tr '\n' ' ' | sed 's/ $//')" "list --json: the container paths are the loader paths"
t_nomatch "$("$GPU_CLI" --root="$DRV" list)" 'lvp_icd|50_mesa|20_nvidia_xcb' "list: no decoy loader file"

mountinfo_unchanged "the host mount table is unchanged" "$T/mounts.before"
t_done
