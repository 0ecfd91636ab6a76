#!/bin/bash
# Hostile images (docs/threat-model.md#attack-classes-the-tests-cover): each case is a small image whose injection paths
# point out of the root (symlinks absolute, relative, through /proc magic links), hard links to host
# files, a trap /sbin/ldconfig, CUDA compat files, a racing directory swap, shared volumes, mknod of
# other GPUs.  Every container is configured by a createRuntime hook under runc running
# `gpu-cli configure --device=0 --compute --utility`.  Each case asserts what an attacker would want
# to change: the host marker files (content, mode, mtime) and the marker tree listing, the host's
# mount table, and that the container either got a working injection (nvidia-smi -L lists the GPU)
# or was refused with an error naming the path.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
t_need_root
t_need_cmd runc
MKROOT=$GH_SOURCE_DIR/tests/fake-driver/make-root.sh

DRV=$T/drv
bash "$MKROOT" "$DRV" --sockets >"$T/mkroot.log" 2>&1 ||
        { t_diag_file "$T/mkroot.log"; t_fatal "make-root.sh failed"; }
DRV_VERSION=$(sed -n 's/.*Kernel Module[[:space:]]*\([0-9.]*\).*/\1/p' "$DRV/proc/driver/nvidia/version" | head -n1)
[ -n "$DRV_VERSION" ] || DRV_VERSION=$(ls "$DRV/usr/lib/x86_64-linux-gnu" | sed -n 's/^libcuda\.so\.\([0-9]*\.[0-9.]*\)$/\1/p' | head -n1)
[ -n "$DRV_VERSION" ] || t_fatal "cannot tell the fake driver's version"

# Host markers: what a hostile image aims at.  Same filesystem as the rootfs (hard links), old
# mtimes (any write shows).
HM=$T/host
make_markers() {
        local d
        mkdir -p "$HM"
        for d in lib bin firmware etc dev proc run compat share; do
                mkdir -p "$HM/$d"
                echo "host $d marker" >"$HM/$d/keep"
        done
        echo "precious host file" >"$HM/precious"
        printf 'not a cache\n' >"$HM/ld.so.cache"
        printf '/host/only\n' >"$HM/ld.so.conf"
        mkdir -p "$HM/ld.so.conf.d"
        printf '/host/only\n' >"$HM/ld.so.conf.d/host.conf"
        mkdir -p "$HM/hl"
        for d in lib smi cache; do echo "hard-linked host file $d" >"$HM/hl/$d"; done
        find "$HM" -exec touch -h -d '2020-01-01 00:00:00' {} +
}
make_markers

# The marker tree (names, types, sizes, modes, mtimes, content) plus the host files that an injection
# gone wrong would create or replace.
host_snapshot() {
        {
                (cd "$HM" && find . -printf '%p|%y|%s|%m|%T@|%l\n' | sort)
                (cd "$HM" && find . -type f -exec md5sum {} + | sort)
                for v in ${VOLS:-}; do
                        find "$v" -path "$v/*/*" -prune -o -printf '%p|%y|%s|%m|%T@|%l\n' | sort
                done
                ls -la --time-style=full-iso /etc/ld.so.cache 2>&1
                md5sum /etc/ld.so.cache 2>&1
                ls -d /usr/bin/nvidia* /usr/lib/x86_64-linux-gnu/libcuda* /usr/lib/x86_64-linux-gnu/libnvidia* \
                        /dev/nvidia* /lib/firmware/nvidia /ldconfig-ran 2>/dev/null
        } >"$1"
}

# What the container runs: one line per fact.
PROBE='
echo "smi:$(nvidia-smi -L 2>&1 | tr "\n" "|")"
echo "cache:$(check-ldconfig -p 2>&1 | grep -Eo "lib(cuda|nvidia-ml)\.so\.1 " | sort -u | tr -d " " | tr "\n" ",")"
mknod /tmp/n0 c 195 0 2>/dev/null && echo "open0:$(head -c1 /tmp/n0 2>&1 >/dev/null)"
mknod /tmp/n1 c 195 1 2>/dev/null && echo "open1:$(head -c1 /tmp/n1 2>&1 >/dev/null)"
echo "gpus:$(ls /proc/driver/nvidia/gpus 2>&1 | tr "\n" ",")"
echo "end"
'
field() { printf '%s\n' "$RUN_STDOUT" | sed -n "s/^$1://p"; }

# new_container NAME: rootfs + bundle running $PROBE, configured by a createRuntime hook.
new_container() {
        CASE=$1
        VOLS=
        ROOTFS=$T/$CASE/rootfs
        BUNDLE=$T/$CASE/bundle
        make_busybox_rootfs "$ROOTFS" --glibc || return 1
        make_bundle "$BUNDLE" "$ROOTFS" /bin/sh -c "$PROBE"
        bundle_add_caps "$BUNDLE" CAP_MKNOD
        cat >"$T/$CASE/hook" <<EOF
#!/bin/sh
pid=\$(sed -n 's/.*"pid": *\([0-9]*\).*/\1/p')
exec ${HOOK_WRAPPER:-} $GPU_CLI --root=$DRV --debug=$T/$CASE/cli.log configure --pid=\$pid --device=0 ${HOOK_CAPS:---compute --utility} $ROOTFS
EOF
        chmod 755 "$T/$CASE/hook"
        bundle_add_hook "$BUNDLE" createRuntime "$T/$CASE/hook"
        if [ -n "${HOOK_TIMEOUT:-}" ]; then
                bundle_edit "$BUNDLE" 'c["hooks"]["createRuntime"][0]["timeout"] = int(args[0])' "$HOOK_TIMEOUT"
        fi
}

LIBDIR=usr/lib/x86_64-linux-gnu

# rel_up HOSTPATH: a "../../.." prefix that climbs from HOSTPATH's directory to the host's / (and a
# few more, which stay at /).
rel_up() {
        local dir n
        dir=$(dirname "$1")
        n=$(printf '%s' "$dir" | tr -cd / | wc -c)
        printf '../%.0s' $(seq 1 $((n + 3)))
}

# glibc_to_lib64: the image keeps its glibc in /usr/lib64 (listed in its ld cache), so that a case
# may take /usr/lib or the library directory away and dynamically linked programs still run.
glibc_to_lib64() {
        local l
        rm -f "$ROOTFS/usr/lib64/ld-linux-x86-64.so.2"
        for l in $GH_GLIBC_LIBS; do
                [ -e "$ROOTFS/$LIBDIR/$l" ] && mv "$ROOTFS/$LIBDIR/$l" "$ROOTFS/usr/lib64/$l"
        done
        echo /usr/lib64 >"$ROOTFS/etc/ld.so.conf"
        "$ROOTFS/usr/local/bin/check-ldconfig" -r "$ROOTFS" 2>/dev/null
}

# swap_link REL TARGET: replace ROOTFS/REL (file, dir or link) with a symlink to TARGET.
swap_link() {
        case $1 in $LIBDIR|usr/lib) glibc_to_lib64 ;; esac
        rm -rf "${ROOTFS:?}/$1"
        mkdir -p "$(dirname "$ROOTFS/$1")"
        ln -s "$2" "$ROOTFS/$1"
}
# swap_rel REL HOSTPATH: the same with a relative symlink that climbs out of the root.
swap_rel() { swap_link "$1" "$(rel_up "$ROOTFS/$1")${2#/}"; }


# check_outcome RE: the container either got a working injection, or it was refused with one line
# naming the path (RE).
check_outcome() {
        local re=$1 errs
        if [ "$RUN_RC" -eq 0 ]; then
                t_match "$(field smi)" '^GPU 0: ' "$CASE: injected: nvidia-smi -L lists the GPU" ||
                        { t_diag "stdout: $RUN_STDOUT"; t_diag_file "$T/$CASE/cli.log" 8; }
                return
        fi
        errs=$(printf '%s\n' "$RUN_STDERR" | grep -o 'gpu-cli: .*' | sed 's/\\n.*//')
        if grep -q 'ran past specified timeout' <<<"$RUN_STDERR"; then
                t_fail "$CASE: refused with an error naming the path (gpu-cli hung until the hook's timeout instead)"
                t_diag_file "$T/$CASE/cli.log" 3
        elif [ -n "$errs" ]; then
                t_match "$errs" "$re" "$CASE: refused (exit $RUN_RC) with an error naming the path" ||
                        t_diag_file "$T/$CASE/cli.log" 8
                t_is "$(printf '%s\n' "$errs" | wc -l)" 1 "$CASE: the refusal is one line"
        else
                # The runtime refused the image before any hook ran.
                t_match "$RUN_STDERR" "$re" "$CASE: the runtime refused (exit $RUN_RC) naming the path"
        fi
        t_diag "$CASE: refused: $(printf '%s\n' "${errs:-$RUN_STDERR}" | head -c 300)"
}

# check_host: the host as it was before the case (markers, mount table), the trap never ran.
check_host() {
        host_snapshot "$T/$CASE/host.after"
        if [ -n "${RUNTIME_WRITES:-}" ]; then
                # What the runtime itself (not gpu-cli) writes through the image's links.
                grep -Ev "$RUNTIME_WRITES" "$T/$CASE/host.before" >"$T/$CASE/host.before.f"
                grep -Ev "$RUNTIME_WRITES" "$T/$CASE/host.after" >"$T/$CASE/host.after.f"
                mv "$T/$CASE/host.before.f" "$T/$CASE/host.before"
                mv "$T/$CASE/host.after.f" "$T/$CASE/host.after"
        fi
        if cmp -s "$T/$CASE/host.before" "$T/$CASE/host.after"; then
                t_pass "$CASE: host markers untouched, nothing created outside the rootfs"
        else
                t_fail "$CASE: host markers untouched, nothing created outside the rootfs"
                diff "$T/$CASE/host.before" "$T/$CASE/host.after" | head -n 20 | sed 's/^/#   /'
        fi
        mountinfo_unchanged "$CASE: host mount table unchanged" "$T/$CASE/mounts.before"
        t_not "$CASE: the image's /sbin/ldconfig never ran" ldconfig_ran "$ROOTFS"
}

# hcase NAME RE SETUP...: build the container, run SETUP (a command) on it, start it, check.
hcase() {
        local name=$1 re=$2
        shift 2
        t_case_wanted "$name" || return 1
        new_container "$name" || { t_fail "$name: build the container"; return; }
        if ! "$@"; then
                t_fail "$name: set the hostile image up"
                return
        fi
        host_snapshot "$T/$CASE/host.before"
        host_mountinfo_snapshot "$T/$CASE/mounts.before"
        run_runc "$BUNDLE" "$name"
        check_outcome "$re"
        check_host
        return 0
}

LIBRE='x86_64-linux-gnu|libcuda|libnvidia'

# --- the library directory out of the root
hcase libdir-abs "$LIBRE" swap_link $LIBDIR "$HM/lib"
hcase libdir-rel "$LIBRE" swap_rel $LIBDIR "$HM/lib"
hcase libdir-proc-self-root "$LIBRE" swap_link $LIBDIR "/proc/self/root$HM/lib"
hcase libdir-proc-1-root "$LIBRE" swap_link $LIBDIR "/proc/1/root$HM/lib"
# The hook's cwd is the bundle: /proc/self/cwd/../.. is $T.
hcase libdir-proc-self-cwd "$LIBRE" swap_link $LIBDIR "/proc/self/cwd/../../host/lib"
# The lib -> usr/lib link of the merged layout, out of the root.
hcase usr-lib-abs "$LIBRE|/usr/lib" swap_link usr/lib "$HM/lib"

# --- /usr/bin
hcase bin-abs 'usr/bin|nvidia-smi' swap_link usr/bin "$HM/bin"
hcase bin-rel 'usr/bin|nvidia-smi' swap_rel usr/bin "$HM/bin"
hcase bin-proc-self-root 'usr/bin|nvidia-smi' swap_link usr/bin "/proc/self/root$HM/bin"

# --- /lib/firmware
setup_firmware() { mkdir -p "$ROOTFS/usr/lib" && swap_link usr/lib/firmware "$1"; }
hcase firmware-abs 'firmware' setup_firmware "$HM/firmware"
setup_firmware_rel() { mkdir -p "$ROOTFS/usr/lib" && swap_rel usr/lib/firmware "$HM/firmware"; }
hcase firmware-rel 'firmware' setup_firmware_rel
hcase firmware-proc-1-root 'firmware' setup_firmware "/proc/1/root$HM/firmware"

# --- /etc (the ld cache is written there)
hcase etc-abs '/etc|ld\.so\.cache' swap_link etc "$HM/etc"
hcase etc-rel '/etc|ld\.so\.cache' swap_rel etc "$HM/etc"
hcase etc-proc-self-root '/etc|ld\.so\.cache' swap_link etc "/proc/self/root$HM/etc"
hcase etc-proc-self-cwd '/etc|ld\.so\.cache' swap_link etc "/proc/self/cwd/../../host/etc"

# --- /dev, /proc, /run before the start
# runc 1.1.5 itself creates /dev/{fd,stdin,stdout,stderr,ptmx} through a /dev symlink (before the
# hook runs): not ours to judge here; any nvidia node or other entry still fails the case.
RUNTIME_WRITES='^\./dev/(fd|stdin|stdout|stderr|ptmx|core)\||^\./dev\|'
hcase dev-abs '/dev|nvidia' swap_link dev "$HM/dev"
hcase dev-rel '/dev|nvidia' swap_rel dev "$HM/dev"
hcase dev-proc-1-root '/dev|nvidia' swap_link dev "/proc/1/root$HM/dev"
t_diag "runc wrote into the host dir behind the image's /dev link: $(ls "$HM/dev" | tr '\n' ' ')"
RUNTIME_WRITES=
hcase proc-abs '/proc' swap_link proc "$HM/proc"
hcase proc-rel '/proc' swap_rel proc "$HM/proc"
hcase run-abs '/run|persistenced|fabricmanager' swap_link run "$HM/run"
hcase run-rel '/run|persistenced|fabricmanager' swap_rel run "$HM/run"
hcase run-proc-self-root '/run|persistenced|fabricmanager' swap_link run "/proc/self/root$HM/run"

# --- injection targets that are links to a host file
hcase libcuda-soname-abs "$LIBRE" swap_link $LIBDIR/libcuda.so.1 "$HM/precious"
hcase libcuda-file-abs "$LIBRE" swap_link "$LIBDIR/libcuda.so.$DRV_VERSION" "$HM/precious"
hcase libcuda-file-rel "$LIBRE" swap_rel "$LIBDIR/libcuda.so.$DRV_VERSION" "$HM/precious"
hcase libnvml-proc-1-root "$LIBRE" swap_link "$LIBDIR/libnvidia-ml.so.$DRV_VERSION" "/proc/1/root$HM/precious"
hcase smi-abs 'nvidia-smi' swap_link usr/bin/nvidia-smi "$HM/precious"
hcase smi-rel 'nvidia-smi' swap_rel usr/bin/nvidia-smi "$HM/precious"

# --- the loader's configuration as links to host files
hcase ldcache-abs 'ld\.so\.cache' swap_link etc/ld.so.cache "$HM/ld.so.cache"
hcase ldcache-rel 'ld\.so\.cache' swap_rel etc/ld.so.cache "$HM/ld.so.cache"
hcase ldcache-proc-self-root 'ld\.so\.cache' swap_link etc/ld.so.cache "/proc/self/root$HM/ld.so.cache"
hcase ldconf-abs 'ld\.so\.conf' swap_link etc/ld.so.conf "$HM/ld.so.conf"
hcase ldconfd-abs 'ld\.so\.conf' swap_link etc/ld.so.conf.d "$HM/ld.so.conf.d"
hcase ldconfd-proc-1-root 'ld\.so\.conf' swap_link etc/ld.so.conf.d "/proc/1/root$HM/ld.so.conf.d"

# --- injection targets of the wrong type: a directory, a FIFO (opening one for reading blocks until
# a writer comes: a hostile image must not be able to hang the start), a device node
setup_dir() { rm -f "$ROOTFS/$1" && mkdir -p "$ROOTFS/$1/sub"; }
setup_fifo() { rm -rf "${ROOTFS:?}/$1" && mkfifo "$ROOTFS/$1"; }
setup_chr() { rm -rf "${ROOTFS:?}/$1" && mknod "$ROOTFS/$1" c 1 3; }
hcase libcuda-file-dir "$LIBRE" setup_dir "$LIBDIR/libcuda.so.$DRV_VERSION"
hcase smi-dir 'nvidia-smi' setup_dir usr/bin/nvidia-smi
hcase ldcache-dir 'ld\.so\.cache' setup_dir etc/ld.so.cache
hcase smi-fifo 'nvidia-smi' setup_fifo usr/bin/nvidia-smi
hcase smi-chr 'nvidia-smi' setup_chr usr/bin/nvidia-smi
# A hang here ends at the hook's timeout: keep it short so the suite stays fast.
HOOK_TIMEOUT=8 hcase ldcache-fifo 'ld\.so\.cache' setup_fifo etc/ld.so.cache
HOOK_TIMEOUT=8 hcase debian-version-fifo "$LIBRE|debian_version" setup_fifo etc/debian_version

# --- the graphics loaders' directories and files (configure --graphics too) out of the root
GFX="--compute --utility --graphics"
GFXRE='vulkan|glvnd|egl|/usr/share'
HOOK_CAPS=$GFX hcase vulkan-abs "$GFXRE" swap_link usr/share/vulkan "$HM/share"
HOOK_CAPS=$GFX hcase icd-dir-rel "$GFXRE" swap_rel usr/share/vulkan/icd.d "$HM/share"
HOOK_CAPS=$GFX hcase layer-dir-proc-self-root "$GFXRE" swap_link usr/share/vulkan/implicit_layer.d "/proc/self/root$HM/share"
HOOK_CAPS=$GFX hcase egl-vendor-dir-proc-1-root "$GFXRE" swap_link usr/share/glvnd/egl_vendor.d "/proc/1/root$HM/share"
HOOK_CAPS=$GFX hcase egl-platform-dir-rel "$GFXRE" swap_rel usr/share/egl/egl_external_platform.d "$HM/share"
HOOK_CAPS=$GFX hcase usr-share-abs "$GFXRE" swap_link usr/share "$HM/share"
HOOK_CAPS=$GFX hcase icd-file-abs "$GFXRE" swap_link usr/share/vulkan/icd.d/nvidia_icd.json "$HM/precious"
HOOK_CAPS=$GFX hcase egl-vendor-file-rel "$GFXRE" swap_rel usr/share/glvnd/egl_vendor.d/10_nvidia.json "$HM/precious"
setup_fifo_p() { mkdir -p "$(dirname "$ROOTFS/$1")" && setup_fifo "$1"; }
HOOK_CAPS=$GFX HOOK_TIMEOUT=8 hcase icd-file-fifo "$GFXRE" setup_fifo_p usr/share/vulkan/icd.d/nvidia_icd.json

# --- device nodes of the image at the paths gpu-cli looks at: opening one as root outside the
# container's device cgroup can have side effects (a watchdog arms, a tape rewinds), so none may be
# opened, only inspected (O_PATH).  inotify sees every real open (IN_OPEN) and none for O_PATH.
watch_opens() {
        "$GH_PYTHON" - "$@" <<'PYEOF' &
import ctypes, os, signal, struct, sys, time
libc = ctypes.CDLL(None, use_errno=True)
out, paths = sys.argv[1], sys.argv[2:]
fd = libc.inotify_init1(0)
wds = {libc.inotify_add_watch(fd, p.encode(), 0x20): p for p in paths}  # IN_OPEN
with open(out, "w") as f:
    f.write("ready\n")
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
while True:
    b = os.read(fd, 4096)
    i = 0
    while i < len(b):
        wd, mask, cookie, ln = struct.unpack_from("iIII", b, i)
        i += 16 + ln
        if mask & 0x20 and wd in wds:
            with open(out, "a") as f:
                f.write("opened %s\n" % wds[wd])
PYEOF
        WATCHER=$!
        for _ in $(seq 1 50); do grep -q ready "$1" 2>/dev/null && break; sleep 0.02; done
}
setup_devnodes() {
        local p
        for p in etc/ld.so.cache usr/bin/nvidia-smi "$LIBDIR/libcuda.so.$DRV_VERSION" etc/debian_version; do
                rm -rf "${ROOTFS:?}/$p" && mknod "$ROOTFS/$p" c 1 3 || return 1
        done
        watch_opens "$T/$CASE/opens" "$ROOTFS/etc/ld.so.cache" "$ROOTFS/usr/bin/nvidia-smi" \
                "$ROOTFS/$LIBDIR/libcuda.so.$DRV_VERSION" "$ROOTFS/etc/debian_version"
}
if hcase devnodes "$LIBRE|nvidia-smi|ld\.so\.cache|debian_version" setup_devnodes; then
        sleep 0.2
        kill "$WATCHER" 2>/dev/null
        wait "$WATCHER" 2>/dev/null
        t_is "$(grep -c '^ready' "$T/devnodes/opens")" 1 "devnodes: the inotify watch was in place"
        t_is "$(grep '^opened' "$T/devnodes/opens" | sort -u | sed "s|$T/devnodes/rootfs||" | tr '\n' ' ')" "" \
                "devnodes: no device node of the image was opened on the host side"
fi

# --- a malicious /sbin/ldconfig (every case checks the trap; here it is also on the PATH first)
setup_ldconfig_everywhere() {
        local p
        for p in usr/sbin/ldconfig usr/local/sbin/ldconfig usr/local/bin/ldconfig sbin/ldconfig.real; do
                cp "$ROOTFS/sbin/ldconfig" "$ROOTFS/$p" && chmod 755 "$ROOTFS/$p" || return 1
        done
}
hcase ldconfig-trap 'ldconfig' setup_ldconfig_everywhere

# --- CUDA compat libraries in the image
setup_compat_link() { mkdir -p "$ROOTFS/usr/local/cuda/compat" && ln -s "$1" "$ROOTFS/usr/local/cuda/compat/libcuda.so.1"; }
hcase compat-link-abs 'compat|libcuda' setup_compat_link "$HM/precious"
hcase compat-link-proc 'compat|libcuda' setup_compat_link "/proc/1/root$HM/precious"
setup_compat_dir() { mkdir -p "$ROOTFS/usr/local/cuda/compat/libcuda.so.1" "$ROOTFS/usr/local/cuda/compat/libcuda.so.$DRV_VERSION"; }
hcase compat-dir 'compat|libcuda' setup_compat_dir
setup_compat_tree_link() { mkdir -p "$ROOTFS/usr/local/cuda" && ln -s "/proc/1/root$HM/compat" "$ROOTFS/usr/local/cuda/compat"; }
hcase compat-tree-proc 'compat|libcuda' setup_compat_tree_link

# --- hard links in the image to host files: an injection must never write through them
setup_hardlinks() {
        rm -f "$ROOTFS/$LIBDIR/libcuda.so.$DRV_VERSION" "$ROOTFS/usr/bin/nvidia-smi" "$ROOTFS/etc/ld.so.cache"
        ln "$HM/hl/lib" "$ROOTFS/$LIBDIR/libcuda.so.$DRV_VERSION" &&
                ln "$HM/hl/smi" "$ROOTFS/usr/bin/nvidia-smi" &&
                ln "$HM/hl/cache" "$ROOTFS/etc/ld.so.cache"
}
if hcase hardlinks "$LIBRE|nvidia-smi|ld\.so\.cache" setup_hardlinks; then
        t_is "$(cat "$HM/hl/lib" "$HM/hl/smi" "$HM/hl/cache" | tr '\n' ,)" \
                "hard-linked host file lib,hard-linked host file smi,hard-linked host file cache," \
                "hardlinks: the hard-linked host files still have their content"
fi

# --- TOCTOU: a process on the host swaps a path of the rootfs with a link to a host path while
# containers start one after the other (renameat2 RENAME_EXCHANGE in a tight loop).
RACE_SECONDS=${GH_RACE_SECONDS:-3}
start_racer() {
        "$GH_PYTHON" - "$1" "$2" "$RACE_SECONDS" <<'PYEOF' &
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
a, b, end = sys.argv[1].encode(), sys.argv[2].encode(), time.time() + float(sys.argv[3]) + 30
n = 0
while time.time() < end:
    for _ in range(200):
        # renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)
        libc.syscall(316, -100, a, -100, b, 2)
        n += 1
# Leave the real thing in place: the link is what ends up at b.
if os.path.islink(sys.argv[1]):
    libc.syscall(316, -100, a, -100, b, 2)
PYEOF
        RACER=$!
}
stop_racer() {
        kill "$RACER" 2>/dev/null
        wait "$RACER" 2>/dev/null
        # The loop's own ending: make sure the real path is back.
        [ -L "$1" ] && "$GH_PYTHON" -c 'import ctypes,sys; ctypes.CDLL(None).syscall(316,-100,sys.argv[1].encode(),-100,sys.argv[2].encode(),2)' "$1" "$2"
}

# race NAME RE REL HOSTTARGET: REL is swapped with a link to HOSTTARGET during RACE_SECONDS of starts.
race() {
        local name=$1 re=$2 rel=$3 target=$4 end n=0 nok=0 nref=0 nhang=0 nbad=0 errs
        t_case_wanted "$name" || return 0
        new_container "$name" || { t_fail "$name: build the container"; return; }
        case $rel in $LIBDIR) glibc_to_lib64 ;; esac
        ln -s "$target" "$ROOTFS/$rel.swap"
        host_snapshot "$T/$CASE/host.before"
        host_mountinfo_snapshot "$T/$CASE/mounts.before"
        start_racer "$ROOTFS/$rel" "$ROOTFS/$rel.swap"
        end=$(($(date +%s) + RACE_SECONDS))
        while [ "$(date +%s)" -lt "$end" ] || [ $n -lt 3 ]; do
                n=$((n + 1))
                run_runc "$BUNDLE" "$name"
                if [ "$RUN_RC" -eq 0 ]; then
                        nok=$((nok + 1))
                elif [ "$RUN_RC" -eq 124 ] || [ "$RUN_RC" -eq 137 ]; then
                        nhang=$((nhang + 1))
                else
                        nref=$((nref + 1))
                        errs=$(printf '%s\n' "$RUN_STDERR" | grep -o 'gpu-cli: .*' | sed 's/\\n.*//')
                        if [ -n "$errs" ] && ! printf '%s\n' "$errs" | grep -Eq "$re"; then
                                nbad=$((nbad + 1))
                                t_diag "$name: an error that does not name the path: $errs"
                        fi
                fi
        done
        stop_racer "$ROOTFS/$rel" "$ROOTFS/$rel.swap"
        t_diag "$name: $n starts in ${RACE_SECONDS}s under the swap: $nok ran, $nref refused, $nhang hung"
        t_is "$nhang" 0 "$name: no start hung while $rel was being swapped"
        t_is "$nbad" 0 "$name: every refusal by gpu-cli names the path"
        check_host
}
race race-libdir "$LIBRE" $LIBDIR "$HM/lib"
race race-etc '/etc|ld\.so\.cache' etc "$HM/etc"
race race-libcuda "$LIBRE" "$LIBDIR/libcuda.so.$DRV_VERSION" "$HM/precious"
race race-bin 'usr/bin|nvidia-smi' usr/bin "$HM/bin"

# --- mount propagation: a volume bind-mounted with rshared onto an injection path.  A mount made
# under it in the container's namespace would appear on the host.  A refused start must also leave
# the volume (a host directory) as it was.
shared_volume() {
        local dst=$1 v=$T/$CASE/vol
        mkdir -p "$v"
        cp -a "$ROOTFS/$dst/." "$v/"
        echo "volume marker" >"$v/volume-marker"
        find "$v" -exec touch -h -d '2020-01-01 00:00:00' {} +
        mount --bind "$v" "$v" && mount --make-shared "$v" || return 1
        bundle_add_mount "$BUNDLE" "$v" "/$dst" rbind,rshared
        VOLS="$VOLS $v"
}
hcase shared-libdir "$LIBRE|shared" shared_volume $LIBDIR
hcase shared-bin 'usr/bin|nvidia-smi|shared' shared_volume usr/bin
# The ld cache is written (renamed) in the container's /etc, which is the volume: that file is the
# container's own, so only the mount table is checked here.
shared_etc() { shared_volume etc && VOLS=; }
hcase shared-etc '/etc|ld\.so\.cache|shared' shared_etc
# The whole rootfs on a shared mount, and the runtime asked to keep it shared.
shared_rootfs() {
        mount --bind "$ROOTFS" "$ROOTFS" && mount --make-shared "$ROOTFS" || return 1
        bundle_edit "$BUNDLE" 'c["linux"]["rootfsPropagation"] = "shared"'
}
hcase shared-rootfs "$LIBRE|shared|/dev|/proc" shared_rootfs
# The same rootfs with the runtime's default propagation (rslave).
shared_rootfs_default() { mount --bind "$ROOTFS" "$ROOTFS" && mount --make-shared "$ROOTFS"; }
hcase shared-rootfs-default "$LIBRE|shared" shared_rootfs_default

# --- the same attacks against the fallbacks: openat2 and the new mount API answer ENOSYS, so the
# resolver walks component by component and mounts go through /proc/self/fd with mount(2).
NO_NEW_API=$GH_BUILD_DIR/tests/helpers/no-new-mount-api
if [ -x "$NO_NEW_API" ]; then
        HOOK_WRAPPER=$NO_NEW_API
        hcase legacy-libdir-abs "$LIBRE" swap_link $LIBDIR "$HM/lib"
        hcase legacy-libdir-rel "$LIBRE" swap_rel $LIBDIR "$HM/lib"
        hcase legacy-libdir-proc-1-root "$LIBRE" swap_link $LIBDIR "/proc/1/root$HM/lib"
        hcase legacy-bin-rel 'usr/bin|nvidia-smi' swap_rel usr/bin "$HM/bin"
        hcase legacy-etc-abs '/etc|ld\.so\.cache' swap_link etc "$HM/etc"
        hcase legacy-etc-proc-self-cwd '/etc|ld\.so\.cache' swap_link etc "/proc/self/cwd/../../host/etc"
        hcase legacy-firmware-rel 'firmware' setup_firmware_rel
        hcase legacy-run-abs '/run|persistenced|fabricmanager' swap_link run "$HM/run"
        hcase legacy-libcuda-file-abs "$LIBRE" swap_link "$LIBDIR/libcuda.so.$DRV_VERSION" "$HM/precious"
        hcase legacy-smi-rel 'nvidia-smi' swap_rel usr/bin/nvidia-smi "$HM/precious"
        hcase legacy-ldcache-abs 'ld\.so\.cache' swap_link etc/ld.so.cache "$HM/ld.so.cache"
        hcase legacy-hardlinks "$LIBRE|nvidia-smi|ld\.so\.cache" setup_hardlinks
        race legacy-race-libdir "$LIBRE" $LIBDIR "$HM/lib"
        race legacy-race-libcuda "$LIBRE" "$LIBDIR/libcuda.so.$DRV_VERSION" "$HM/precious"
        hcase legacy-shared-bin 'usr/bin|nvidia-smi|shared' shared_volume usr/bin
        hcase legacy-shared-rootfs "$LIBRE|shared|/dev|/proc" shared_rootfs
        HOOK_WRAPPER=
else
        t_skip "hostile images under the legacy API" "no-new-mount-api was not built (no libseccomp)"
fi

# --- mknod of an unselected GPU inside the container
if hcase mknod true true; then
        t_match "$(field open1)" 'Operation not permitted' "mknod: a node for the unselected GPU 1 cannot be opened (EPERM)"
        t_match "$(field open0)" 'No such device or address' "mknod: the selected GPU 0 is allowed (ENXIO: no real driver)"
        t_is "$(field gpus)" "$(ls "$DRV/proc/driver/nvidia/gpus" | sort | head -n1)," "mknod: /proc/driver/nvidia/gpus lists only the selected GPU"
fi

t_done
