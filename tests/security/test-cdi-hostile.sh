#!/bin/bash
# Hostile images through the CDI spec's createContainer hook (`gpu-cli cdi-hook`): a generated spec
# applied to runc bundles with tests/helpers/cdi-apply.py (the CDI merge rules), images whose
# ld.so.cache, /etc or library links point out of the rootfs, a FIFO for a cache, and the hook
# misplaced as a createRuntime hook.  Each container must start or fail cleanly, and the host
# must be exactly as it was: its files, its ld cache, its mount table.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
t_need_root
t_need_cmd runc
MKROOT=$GH_SOURCE_DIR/tests/fake-driver/make-root.sh
APPLY=$GH_SOURCE_DIR/tests/helpers/cdi-apply.py
LIBDIR=/usr/lib/x86_64-linux-gnu

bash "$MKROOT" "$T/drv" >"$T/mkroot.log" 2>&1 || { t_diag_file "$T/mkroot.log"; echo "Bail out! make-root.sh"; exit 1; }
"$GPU_CLI" "--root=$T/drv" cdi generate "--output=$T/spec.json" 2>"$T/gen.err" ||
        { t_diag_file "$T/gen.err"; echo "Bail out! cdi generate"; exit 1; }

# Host files an image tries to reach, and what they hold.
HOST=$T/host
mkdir -p "$HOST/etc" "$HOST/lib"
echo "host cache" >"$HOST/ld.so.cache"
echo "host library" >"$HOST/lib/libcuda.so.1"
snapshot_host() {
        { find "$HOST" -printf '%p %y %m %s %l\n' | sort; cksum "$HOST/ld.so.cache" "$HOST/lib/libcuda.so.1";
          cksum </etc/ld.so.cache; ls -la /usr/lib/x86_64-linux-gnu | grep -cE 'nvidia|cuda'; } 2>&1
}
snapshot_host >"$T/host.before"
host_mountinfo_snapshot "$T/mounts.before"

PROBE='
echo "cache:$(check-ldconfig -p 2>&1 | grep -Eo "libcuda\.so\.1 .*" | head -n1)"
echo "cachetype:$(stat -c %F /etc/ld.so.cache 2>&1)"
echo "link:$(readlink /usr/lib/x86_64-linux-gnu/libcuda.so.1 2>&1)"
echo "params:$(grep ModifyDeviceFiles /proc/driver/nvidia/params 2>&1)"
echo "smi:$(nvidia-smi -L 2>&1 | head -n1)"
'
field() { printf '%s\n' "$RUN_STDOUT" | sed -n "s/^$1://p"; }

# container NAME [DEVICE]: a rootfs and a bundle with the CDI device (default nvidia.com/gpu=0)
container() {
        ROOTFS=$T/$1/rootfs
        BUNDLE=$T/$1/bundle
        make_busybox_rootfs "$ROOTFS" --glibc || { echo "Bail out! rootfs"; exit 1; }
        make_bundle "$BUNDLE" "$ROOTFS" /bin/sh -c "$PROBE"
}
apply() { "$GH_PYTHON" "$APPLY" --spec "${SPEC:-$T/spec.json}" "$BUNDLE" "${1:-nvidia.com/gpu=0}"; }

# 0. a plain image: the baseline the others are compared with
container plain
cp "$ROOTFS/etc/ld.so.cache" "$T/fresh-cache"
t_ok "cdi-apply.py applies nvidia.com/gpu=0 to a runc bundle" apply
run_runc "$BUNDLE" plain
t_is "$RUN_RC" 0 "plain image: container ran" || t_diag "$RUN_STDERR"
t_match "$(field cache)" "=> $LIBDIR/libcuda\.so\.1" "plain image: the ld cache lists libcuda"
t_is "$(field params)" "ModifyDeviceFiles: 0" "plain image: params masked"
t_match "$(field smi)" '^GPU 0:' "plain image: nvidia-smi runs"

# 1. /etc/ld.so.cache is a symlink to a host file (absolute and through ..)
for target in "$HOST/ld.so.cache" "../../../../../../../..$HOST/ld.so.cache"; do
        container cachelink
        ln -sf "$target" "$ROOTFS/etc/ld.so.cache"
        apply
        run_runc "$BUNDLE" cachelink
        t_is "$RUN_RC" 0 "/etc/ld.so.cache -> $target: container ran" || t_diag "$RUN_STDERR"
        t_is "$(field cachetype)" "regular file" "... its cache is now a regular file in the image"
        t_match "$(field cache)" "=> $LIBDIR/libcuda\.so\.1" "... listing libcuda"
        rm -rf "$T/cachelink"
done

# 2. /etc is a symlink to a host directory
container etclink
rm -rf "$ROOTFS/etc" && ln -s "$HOST/etc" "$ROOTFS/etc"
apply
run_runc "$BUNDLE" etclink
t_is "$RUN_RC" 0 "/etc -> a host directory: container ran (the link resolved inside its root)" || t_diag "$RUN_STDERR"
t_is "$(ls -A "$HOST/etc")" "" "... and nothing was written to the host directory"

# 3. the library links are symlinks to host files, the library directory's links point out
container liblink
ln -sf "$HOST/lib/libcuda.so.1" "$ROOTFS$LIBDIR/libcuda.so.1"
ln -sf "../../../../../../..$HOST/lib" "$ROOTFS$LIBDIR/libcuda.so"
apply
run_runc "$BUNDLE" liblink
t_is "$RUN_RC" 0 "library links pointing at host files: container ran" || t_diag "$RUN_STDERR"
t_match "$(field link)" '^libcuda\.so\.[0-9.]+$' "... libcuda.so.1 now points at the injected library, in the image"

# 4. the library directory itself is a link out of the rootfs
container libdir
rm -rf "$ROOTFS/usr/lib/x86_64-linux-gnu"
ln -s "$HOST/lib" "$ROOTFS/usr/lib/x86_64-linux-gnu"
apply
run_runc "$BUNDLE" libdir
t_is "$RUN_RC" 0 "the library directory is a link to a host directory: container ran (inside its own root)" || t_diag "$RUN_STDERR"
t_match "$(field cache)" "=> $LIBDIR/libcuda\.so\.1" "... and finds libcuda through its ld cache"

# 4b. the --mounts=hook spec (cdi-hook makes the mounts) on images whose /etc, library links or
# library directory point at host paths: every mount point is made inside the image
"$GPU_CLI" "--root=$T/drv" cdi generate --mounts=hook "--output=$T/spec-hm.json" 2>"$T/gen-hm.err" ||
        { t_diag_file "$T/gen-hm.err"; echo "Bail out! cdi generate --mounts=hook"; exit 1; }
for n in etclink liblink libdir; do
        container "hm-$n"
        case $n in
        etclink) rm -rf "$ROOTFS/etc" && ln -s "$HOST/etc" "$ROOTFS/etc" ;;
        liblink) ln -sf "$HOST/lib/libcuda.so.1" "$ROOTFS$LIBDIR/libcuda.so.1" ;;
        libdir) rm -rf "$ROOTFS/usr/lib/x86_64-linux-gnu" && ln -s "$HOST/lib" "$ROOTFS/usr/lib/x86_64-linux-gnu" ;;
        esac
        SPEC=$T/spec-hm.json apply
        run_runc "$BUNDLE" "hm-$n"
        t_is "$RUN_RC" 0 "--mounts=hook, $n: container ran" || t_diag "$RUN_STDERR"
        # (libdir: the image's own glibc went with its library directory, so no program of it runs)
        [ $n = libdir ] || t_match "$(field smi)" '^GPU 0:' "--mounts=hook, $n: nvidia-smi (mounted by the hook) runs"
        t_match "$(field cache)" "=> $LIBDIR/libcuda\.so\.1" "--mounts=hook, $n: the ld cache lists libcuda"
done

# 5. /etc/ld.so.cache is a FIFO: never opened (a hook blocked on it would hang the start)
container fifo
rm -f "$ROOTFS/etc/ld.so.cache" && mkfifo "$ROOTFS/etc/ld.so.cache"
apply
GH_RUN_TIMEOUT=30 run_runc "$BUNDLE" fifo
t_is "$RUN_RC" 0 "/etc/ld.so.cache is a FIFO: container ran (not opened, replaced)" || t_diag "$RUN_STDERR"
t_is "$(field cachetype)" "regular file" "... with a fresh cache"

# 6. the hook misplaced as createRuntime (runtime namespace): refused before touching anything
container misplaced
sed 's/"createContainer"/"createRuntime"/' "$T/spec.json" >"$T/spec-runtime.json"
SPEC=$T/spec-runtime.json apply
run_runc "$BUNDLE" misplaced
t_not "the hook as createRuntime: the container does not start" test "$RUN_RC" -eq 0
t_match "$RUN_STDERR" "not in the container's mount namespace" "... and says it must be a createContainer hook"
t_is "$(cksum <"$ROOTFS/etc/ld.so.cache")" "$(cksum <"$T/fresh-cache")" "... the image's ld cache untouched"

# 7. the hook run by hand on the host with a forged state naming our own process, or no process: refused
for pid in $$ 0; do
        echo "{\"ociVersion\":\"1.0.2\",\"id\":\"x\",\"status\":\"creating\",\"pid\":$pid,\"bundle\":\"$T/plain/bundle\"}" >"$T/state.json"
        "$GPU_CLI" "--root=$T/drv" cdi-hook --mask-proc "--link=x::/usr/lib/x86_64-linux-gnu/evil" <"$T/state.json" >/dev/null 2>"$T/err"
        t_is "$?" 1 "cdi-hook by hand outside a container (a forged state with pid $pid): exit 1"
        t_match "$(cat "$T/err")" "not in the container's mount namespace" "... refused"
        t_not "... nothing created in the rootfs" test -e "$T/plain/rootfs/usr/lib/x86_64-linux-gnu/evil"
done

# 8. the rootfs's /proc is a procfs in the hook's own mount namespace (a runtime that ran the hook
# where it mounted the container's /proc, without a namespace of its own), but the state names a
# process of another mount namespace: refused by the namespace comparison itself
unshare -m --propagation private sleep 60 &
other=$!
for _ in $(seq 50); do
        [ "$(readlink "/proc/$other/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ] && break
        sleep 0.1
done
echo "{\"ociVersion\":\"1.0.2\",\"id\":\"x\",\"status\":\"creating\",\"pid\":$other,\"bundle\":\"$T/plain/bundle\"}" >"$T/state8.json"
mkdir -p "$T/plain/rootfs/proc"
unshare -m --propagation private sh -c 'mount -t proc proc "$0/proc" && exec "$1" "--root=$2" cdi-hook --mask-proc "--link=x::/usr/lib/x86_64-linux-gnu/evil8" <"$3"' \
        "$T/plain/rootfs" "$GPU_CLI" "$T/drv" "$T/state8.json" >/dev/null 2>"$T/err8"
rc=$?
kill "$other" 2>/dev/null
wait "$other" 2>/dev/null
t_is "$rc" 1 "cdi-hook where the rootfs has a procfs but the state's process is in another mount namespace: exit 1" ||
        t_diag_file "$T/err8"
t_match "$(cat "$T/err8")" "not in the container's mount namespace" "... refused"
t_not "... nothing created in the rootfs" test -L "$T/plain/rootfs/usr/lib/x86_64-linux-gnu/evil8"

for n in plain etclink liblink libdir fifo hm-etclink hm-liblink hm-libdir; do
        ldconfig_ran "$T/$n/rootfs" && t_fail "the image's /sbin/ldconfig ran ($n)"
done
t_pass "no image's /sbin/ldconfig ever ran"
t_is "$(snapshot_host)" "$(cat "$T/host.before")" "host files, the host's ld cache and library directory unchanged"
mountinfo_unchanged "host mount table unchanged" "$T/mounts.before"
t_done
