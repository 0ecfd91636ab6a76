#!/bin/bash
# Runs HERE (the CPU machine): builds the GPU-machine kit into .gpukit/ at the repo root.
#
#   bash tests/gpu/prepare.sh          then, through the device tool, with carry [".gpukit"]:
#   bash tests/gpu/run.sh; bash tests/gpu/run-runtime.sh; bash tests/gpu/bench.sh; bash tests/gpu/run-doctor.sh;
#   bash tests/gpu/run-metrics.sh; bash tests/gpu/run-nvidia-spec.sh (NVIDIA's sample spec, our nvidia-cdi-hook)
#
# The GPU machine (Ubuntu 24.04) has no -dev packages, no runc and no network, so the kit carries:
#   bin/gpu-cli, bin/gpu-hook   release build of this tree; gpu-hook, bin/nvidia-cdi-hook and
#                               bin/gpu-cdi-hook (the same file) static
#   bin/runc                    Debian's runc 1.1.5
#   bin/busybox, bin/time       static busybox for the rootfs; GNU time for peak RSS
#   bin/timed-run               wall and CPU time of one container start (tests/helpers/timed-run.c)
#   bin/bpf-progs               the kernel's cgroup device programs, counted (tests/helpers/bpf-progs.c;
#                               soak.sh's leak check, where bpftool is not installed)
#   lib/                        every non-glibc shared library those need (ldd).  gpu-cli and gpu-hook
#                               link libtirpc, libelf, libcap and jansson statically (meson option
#                               static_deps, on by default) and need only glibc; what remains is
#                               runc's libseccomp.  With -Dstatic_deps=false the list grows to libelf,
#                               libz, libtirpc, the krb5 libraries, libcap, libjansson.
#   graphics/                   the graphics test programs (tests/gpu/graphics/*.c, built against
#                               Debian's loader headers; they need only the loaders and glibc)
#   tests/, bench/              the scripts, in case the tree there is older
# tests/gpu/run-graphics.sh there also needs the loader .debs, carried separately as .gl/:
# bash tests/gpu/graphics/fetch-debs.sh (here) writes them.
#
# How binaries find lib/ (when they need it): an RPATH, not a wrapper script.  runc executes the hook's path from
# config.json directly, so a wrapper would add a shell start to every measured container start, and
# it would need LD_LIBRARY_PATH, which then leaks into everything the hook executes (gpu-hook must run
# its children with a fixed environment, docs/threat-model.md#rule-4).  It is DT_RPATH (--force-rpath), not
# DT_RUNPATH: RPATH also applies to indirect dependencies (libtirpc -> libgssapi_krb5 -> libkrb5...)
# and wins over LD_LIBRARY_PATH.  gpu-cli and gpu-hook use $ORIGIN/../lib.  runc cannot: `runc init`
# re-executes itself from a memfd copy (the CVE-2019-5736 fix), where $ORIGIN means nothing, so runc
# gets the fixed path /run/gpukit/lib, which run.sh fills with the kit's lib/ (a tmpfs, gone at
# reboot; nothing else on that machine is touched).  Debian 12's glibc is 2.36 and Ubuntu 24.04's is
# 2.39, so binaries built here run there; glibc itself is never carried.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$here/../.." && pwd)
KIT=${GH_KIT:-$REPO/.gpukit}
BUILD=${GH_KIT_BUILD:-$REPO/build-gpukit}
RUNC_LIBDIR=/run/gpukit/lib
MAX_MIB=60

die() { echo "prepare: $*" >&2; exit 1; }
for c in meson ninja patchelf ldd; do
        command -v $c >/dev/null || die "$c is missing; run: . contrib/deps.sh && gh_install_deps"
done
RUNC_SRC=$(command -v runc || true)
[ -x "$RUNC_SRC" ] || die "runc is not installed; apt-get install runc"
BUSYBOX_SRC=$(command -v busybox || true)
[ -x "$BUSYBOX_SRC" ] || die "busybox is not installed; apt-get install busybox-static"
ldd "$BUSYBOX_SRC" >/dev/null 2>&1 && die "$BUSYBOX_SRC is dynamically linked; apt-get install busybox-static"

cd "$REPO"
if [ ! -f "$BUILD/build.ninja" ]; then
        meson setup "$BUILD" --buildtype=release >"$REPO/.gpukit-setup.log" 2>&1 ||
                { tail -n 20 "$REPO/.gpukit-setup.log"; die "meson setup failed (log: .gpukit-setup.log)"; }
        rm -f "$REPO/.gpukit-setup.log"
fi
# gpu-runtime reads its configuration from the compiled-in default only: the kit's points to a file
# that run-runtime.sh writes on that machine's /run (a tmpfs; gpu-hook is always given --config).
meson configure "$BUILD" -Ddefault_config=/run/gpukit/config.json >/dev/null || die "meson configure failed"
ninja -C "$BUILD" cli/gpu-cli cli/nvidia-cdi-hook hook/gpu-hook runtime/gpu-runtime tests/helpers/timed-run tests/helpers/bpf-progs >/dev/null ||
        die "build failed; run ninja -C $BUILD"

rm -rf "$KIT"
mkdir -p "$KIT/bin" "$KIT/lib" "$KIT/tests/gpu" "$KIT/bench"
cp "$BUILD/cli/gpu-cli" "$BUILD/hook/gpu-hook" "$BUILD/runtime/gpu-runtime" "$BUILD/tests/helpers/timed-run" "$BUILD/tests/helpers/bpf-progs" "$KIT/bin/"
# static: needs nothing of that machine's (run-nvidia-spec.sh checks); gpu-cdi-hook is the same
# program under the name our specs run (a copy: the kit travels as plain files)
cp "$BUILD/cli/nvidia-cdi-hook" "$KIT/bin/"
cp "$BUILD/cli/nvidia-cdi-hook" "$KIT/bin/gpu-cdi-hook"
cp "$RUNC_SRC" "$KIT/bin/runc"
cp "$BUSYBOX_SRC" "$KIT/bin/busybox"
[ -x /usr/bin/time ] && cp /usr/bin/time "$KIT/bin/time"

# glibc's own libraries come from the GPU machine; everything else travels.
is_glibc() {
        case $1 in
        linux-vdso.so.*|ld-linux*|libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|libresolv.so.*|\
        libutil.so.*|libanl.so.*|libnsl.so.*|libmvec.so.*) return 0 ;;
        *) return 1 ;;
        esac
}
for bin in "$KIT/bin/gpu-cli" "$KIT/bin/gpu-hook" "$KIT/bin/gpu-runtime" "$KIT/bin/runc" "$KIT/bin/time"; do
        [ -e "$bin" ] || continue
        while read -r name _ path _; do
                is_glibc "$name" && continue
                [ -f "$path" ] || die "$(basename "$bin") needs $name, which ldd cannot find"
                [ -e "$KIT/lib/$name" ] || cp -L "$path" "$KIT/lib/$name"
        done < <(ldd "$bin" | awk '$2 == "=>" { print $1, $2, $3 }')
done

# gpu-hook is a static PIE where libc.a exists (hook/meson.build): no loader, nothing to point at lib/.
for bin in gpu-cli gpu-hook gpu-runtime; do
        readelf -lW "$KIT/bin/$bin" | grep -q 'program interpreter' || continue
        patchelf --force-rpath --set-rpath '$ORIGIN/../lib' "$KIT/bin/$bin"
done
patchelf --force-rpath --set-rpath "$RUNC_LIBDIR" "$KIT/bin/runc"

# Check here what can be checked: every dependency resolves into the kit, and the binaries start.
for bin in gpu-cli gpu-hook gpu-runtime; do
        if ldd "$KIT/bin/$bin" | grep -q 'not found'; then
                ldd "$KIT/bin/$bin" >&2
                die "$bin has unresolved libraries"
        fi
        ldd "$KIT/bin/$bin" | awk '$2 == "=>" { print $1, $3 }' | while read -r name path; do
                is_glibc "$name" || [ "$(readlink -f "$path")" = "$(readlink -f "$KIT/lib/$name")" ] ||
                        die "$bin loads $name from $path, not from the kit"
        done
        "$KIT/bin/$bin" --version >/dev/null || die "$KIT/bin/$bin does not start"
done

cp "$REPO/tests/lib.sh" "$KIT/tests/"
cp "$here"/*.sh "$here"/*.cu "$KIT/tests/gpu/"
cp -r "$here/graphics" "$KIT/tests/gpu/"
bash "$here/graphics/build.sh" "$KIT/graphics" >/dev/null 2>&1 ||
        echo "prepare: warning: the graphics test programs did not build (apt-get install libvulkan-dev libegl-dev libgles-dev)" >&2
mkdir -p "$KIT/tests/helpers" "$KIT/tests/data" &&
        cp "$REPO/tests/helpers/cdi-apply.py" "$REPO/tests/helpers/nvidia-spec.py" "$KIT/tests/helpers/" &&
        cp "$REPO/tests/data/nvidia-ctk-1.18-h200.json" "$KIT/tests/data/"
cp "$REPO"/bench/*.sh "$KIT/bench/"

{
        echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release && echo "$PRETTY_NAME")"
        echo "commit: $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)$(
                git -C "$REPO" diff --quiet HEAD 2>/dev/null || echo ' (plus uncommitted changes)')"
        echo "gpu-cli: $("$KIT/bin/gpu-cli" --version)"
        echo "runc: $("$RUNC_SRC" --version | head -n 1)"
        echo "graphics programs: $(ls "$KIT/graphics" 2>/dev/null | tr '\n' ' ')"
        echo "runc libraries: $RUNC_LIBDIR (filled by run.sh)"
} >"$KIT/MANIFEST"

size_kib=$(du -sk "$KIT" | cut -f1)
cat "$KIT/MANIFEST"
echo "kit: $KIT, $((size_kib / 1024)) MiB ($size_kib KiB): $(ls "$KIT/bin" | tr '\n' ' ')"
echo "kit libraries: $(ls "$KIT/lib" | tr '\n' ' ')"
[ "$size_kib" -lt $((MAX_MIB * 1024)) ] || die "the kit is over $MAX_MIB MiB; the device tool carries 64 MiB at most"
