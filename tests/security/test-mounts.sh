#!/bin/bash
# The mounts a configured container gets, read from the container's own /proc/self/mountinfo: every
# injected library, program and firmware file is read-only, nosuid, nodev; every device node
# read-only, nosuid, noexec (and not nodev: it must open); the IPC sockets and the MPS pipe directory
# nosuid, nodev, noexec and writable; /proc/driver/nvidia a read-only tmpfs; none of them shared with
# another mount namespace.  Then root in the container (with DAC_OVERRIDE and FOWNER) tries to change
# the driver's files through them: each write fails with EROFS and the host's files keep their bytes.
# Once with the new mount API and once with the legacy fallback (open_tree & co. failing with ENOSYS).
# The same containers also show the basics of the injection (masked params, only the selected GPU in
# /proc and the device cgroup, the image's own ld cache entries kept): a fast subset of
# integration/configure for mutation runs.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
t_need_root
t_need_cmd runc
MKROOT=$GH_SOURCE_DIR/tests/fake-driver/make-root.sh
NO_NEW_API=$GH_BUILD_DIR/tests/helpers/no-new-mount-api

DRV=$T/drv
bash "$MKROOT" "$DRV" --sockets >"$T/mkroot.log" 2>&1 || { t_diag_file "$T/mkroot.log"; t_fatal "make-root.sh failed"; }
mkdir -p "$DRV/tmp/nvidia-mps"
# The driver on a shared mount, as / is on a systemd host: a bind from it joins its peer group unless
# made private, so a missing MS_PRIVATE shows as "shared:N" in the container.
mount --bind "$DRV" "$DRV" && mount --make-shared "$DRV" || t_fatal "cannot make the driver root a shared mount"
LIBDIR=usr/lib/x86_64-linux-gnu
LIBCUDA=$(cd "$DRV/$LIBDIR" && ls libcuda.so.*.* 2>/dev/null | head -n1)
FIRMWARE=$(cd "$DRV" && ls lib/firmware/nvidia/*/gsp_*.bin 2>/dev/null | head -n1)
[ -n "$LIBCUDA" ] && [ -n "$FIRMWARE" ] || t_fatal "the fake driver root has no libcuda.so.<version> or GSP firmware"
# Inside the image /lib is a link to usr/lib: the firmware's mount point is under /usr/lib.
FIRMWARE_C=/usr/$FIRMWARE
TARGETS="/$LIBDIR/$LIBCUDA /usr/bin/nvidia-smi $FIRMWARE_C"
HOST_FILES="$DRV/$LIBDIR/$LIBCUDA $DRV/usr/bin/nvidia-smi $DRV/$FIRMWARE"

# What the container runs: its mount table, its /dev nodes, then one write attempt per target.
PROBE='
echo "mi-begin"; cat /proc/self/mountinfo; echo "mi-end"
for n in /dev/nvidia* /dev/nvidia-caps/*; do [ -c "$n" ] && echo "node:$n"; done
for f in '"$TARGETS"'; do echo "write:$f:$( (echo pwned >>"$f") 2>&1 | sed "s/.*: //")"; done
echo "params:$( (echo ModifyDeviceFiles: 1 >>/proc/driver/nvidia/params) 2>&1 | sed "s/.*: //")"
echo "procnew:$( (: >/proc/driver/nvidia/new) 2>&1 | sed "s/.*: //")"
echo "gpusnew:$(mkdir /proc/driver/nvidia/gpus/new 2>&1 | sed "s/.*: //")"
echo "gpuwrite:$(for g in /proc/driver/nvidia/gpus/*; do (: >"$g/new") 2>&1 | sed "s/.*: //"; done | sort -u | tr "\n" " ")"
echo "modify:$(grep ModifyDeviceFiles /proc/driver/nvidia/params)"
echo "procgpus:$(ls /proc/driver/nvidia/gpus | tr "\n" " ")"
echo "open0:$(head -c1 /dev/nvidia0 2>&1 >/dev/null | sed "s/.*: //")"
mknod /tmp/n1 c 195 1 && echo "open1:$(head -c1 /tmp/n1 2>&1 >/dev/null | sed "s/.*: //")"
check-ldconfig -p | grep "=>" | sed "s/^[[:space:]]*/ldc:/; s/ =>.*//"
echo "end"
'
field() { printf '%s\n' "$RUN_STDOUT" | sed -n "s/^$1://p"; }

# run_case NAME [WRAPPER]: a container configured with every capability and GPU 0.
run_case() {
        local name=$1 wrap=${2:-}
        ROOTFS=$T/$name/rootfs
        BUNDLE=$T/$name/bundle
        make_busybox_rootfs "$ROOTFS" --glibc || t_fatal "$name: cannot build the rootfs"
        mkdir -p "$T/$name"
        (cd "$ROOTFS" && find . -type f | sort) >"$T/$name/files.before"
        make_bundle "$BUNDLE" "$ROOTFS" /bin/sh -c "$PROBE"
        bundle_add_caps "$BUNDLE" CAP_DAC_OVERRIDE CAP_FOWNER CAP_CHOWN CAP_MKNOD
        "$ROOTFS/usr/local/bin/check-ldconfig" -p -C "$ROOTFS/etc/ld.so.cache" | grep "=>" |
                sed 's/^[[:space:]]*//; s/ =>.*//' | sort -u >"$T/$name/image-cache"
        cat >"$T/$name/hook" <<EOF
#!/bin/sh
pid=\$(sed -n 's/.*"pid": *\([0-9]*\).*/\1/p')
exec $wrap $GPU_CLI --root=$DRV --debug=$T/$name/cli.log configure --pid=\$pid --device=0 \
        --compute --utility --video --graphics --display --ngx $ROOTFS
EOF
        chmod 755 "$T/$name/hook"
        bundle_add_hook "$BUNDLE" createRuntime "$T/$name/hook"
        md5sum $HOST_FILES >"$T/$name/sums.before"
        run_runc "$BUNDLE" "$name"
        t_is "$RUN_RC" 0 "$name: the container ran" || { t_diag "$RUN_STDERR"; t_diag_file "$T/$name/cli.log"; }
        printf '%s\n' "$RUN_STDOUT" | sed -n '/^mi-begin$/,/^mi-end$/p' | sed '1d;$d' >"$T/$name/mountinfo"
        # Files configure created in the rootfs: the mount points of injected files (the cache aside).
        (cd "$ROOTFS" && find . -type f | sort) | comm -13 "$T/$name/files.before" - |
                sed 's/^\.//' | grep -v '^/etc/ld\.so\.cache' >"$T/$name/created"
}

# check_mounts NAME: the mount options of every injected file and node.
check_mounts() {
        local name=$1 out
        out=$("$GH_PYTHON" - "$T/$name/mountinfo" "$T/$name/created" "$LIBDIR" <<'EOF'
import sys
mountinfo, created, libdir = sys.argv[1:]
mounts = {}
for line in open(mountinfo):
    f = line.split()
    if not f:
        continue
    sep = f.index("-")
    point = f[4].replace("\\040", " ")
    # The last mount on a point is the visible one.
    mounts[point] = {"opts": set(f[5].split(",")), "prop": f[6:sep], "fstype": f[sep + 1]}
created = [l.strip() for l in open(created) if l.strip()]
nodes = [l.strip() for l in sys.stdin if l.strip()]

def category(p):
    if p.startswith("/dev/nvidia"):
        return "device"
    if p == "/proc/driver" or p.startswith("/proc/driver/nvidia"):
        return "proc"
    if p.startswith(("/run/nvidia-persistenced/", "/run/nvidia-fabricmanager/", "/tmp/nvidia-mps")):
        return "ipc"
    if p.startswith("/usr/lib/firmware/"):
        return "firmware"
    if p.startswith(("/" + libdir + "/", "/usr/lib/i386-linux-gnu/", "/usr/lib64/", "/usr/lib32/")):
        return "library"
    if p.startswith("/usr/bin/"):
        return "program"
    return None

want = {
    "library": ({"ro", "nosuid", "nodev"}, set()),
    "program": ({"ro", "nosuid", "nodev"}, set()),
    "firmware": ({"ro", "nosuid", "nodev"}, set()),
    "device": ({"ro", "nosuid", "noexec"}, {"nodev"}),
    "ipc": ({"rw", "nosuid", "nodev", "noexec"}, {"ro"}),
    "proc": ({"ro", "nosuid", "nodev", "noexec"}, set()),
}
counts = {k: 0 for k in want}
# Every file configure created is a mount point, every GPU node the container sees is one, and so
# is the MPS directory.
expected = set(created) | set(nodes) | {"/tmp/nvidia-mps"}
for p in sorted(expected):
    if p not in mounts:
        print("notmounted %s" % p)
for p, m in sorted(mounts.items()):
    c = category(p)
    if c is None:
        continue
    counts[c] += 1
    need, forbid = want[c]
    if not need <= m["opts"] or forbid & m["opts"]:
        print("badopts %s %s: %s (want %s%s)" % (c, p, ",".join(sorted(m["opts"])), ",".join(sorted(need)),
              (", not " + ",".join(sorted(forbid))) if forbid else ""))
    shared = [x for x in m["prop"] if x.startswith(("shared:", "master:", "propagate_from:"))]
    if shared:
        print("propagation %s %s: %s" % (c, p, " ".join(shared)))
# /proc/driver/nvidia is masked: the mount that holds it (itself or /proc/driver) is a tmpfs.
holder = max((p for p in mounts if "/proc/driver/nvidia".startswith(p.rstrip("/") + "/") or p == "/proc/driver/nvidia"),
             key=len, default=None)
if holder is None or mounts[holder]["fstype"] != "tmpfs":
    print("proctype /proc/driver/nvidia is on %s (%s), not on a tmpfs of ours" %
          (holder, holder and mounts[holder]["fstype"]))
for c, n in sorted(counts.items()):
    print("count %s %d" % (c, n))
EOF
        <<<"$(field node)")
        t_diag "$name: $(grep '^count' <<<"$out" | tr '\n' ' ')"
        t_nomatch "$out" '^notmounted' "$name: every created file, GPU node and the MPS directory are mount points"
        t_nomatch "$out" '^badopts (library|program|firmware)' "$name: libraries, programs and firmware are ro,nosuid,nodev"
        t_nomatch "$out" '^badopts device' "$name: device nodes are ro,nosuid,noexec (and not nodev)"
        t_nomatch "$out" '^badopts ipc' "$name: IPC sockets and the MPS directory are rw,nosuid,nodev,noexec"
        t_nomatch "$out" '^badopts proc|^proctype' "$name: /proc/driver/nvidia is a ro,nosuid,nodev,noexec tmpfs"
        t_nomatch "$out" '^propagation' "$name: no injected mount propagates (no shared or slave peer group)"
        t_match "$out" '^count library ([2-9][0-9]|1[0-9])' "$name: at least 10 library mounts were checked"
        t_match "$out" '^count program [3-9]' "$name: at least 3 program mounts were checked"
        t_match "$out" '^count firmware [1-9]' "$name: the firmware mounts were checked"
        t_match "$out" '^count device [3-9]' "$name: at least 3 device node mounts were checked"
        t_match "$out" '^count ipc 3' "$name: 3 IPC mounts were checked (2 sockets, the MPS directory)"
}

# check_writes NAME: root in the container cannot change the host's driver files.
check_writes() {
        local name=$1 f
        for f in $TARGETS; do
                t_is "$(field write | grep "^$f:" | cut -d: -f2-)" "Read-only file system" \
                        "$name: appending to $f fails with EROFS"
        done
        t_is "$(field params)" "Read-only file system" "$name: writing /proc/driver/nvidia/params fails with EROFS"
        t_is "$(field procnew)" "Read-only file system" "$name: creating a file in /proc/driver/nvidia fails with EROFS"
        t_is "$(field gpusnew)" "Read-only file system" "$name: creating a directory in /proc/driver/nvidia/gpus fails with EROFS"
        t_is "$(field gpuwrite)" "Read-only file system " "$name: creating a file in a GPU's directory there fails with EROFS"
        md5sum $HOST_FILES >"$T/$name/sums.after"
        t_ok "$name: the host's libcuda, nvidia-smi and firmware are byte-identical" \
                cmp "$T/$name/sums.before" "$T/$name/sums.after"
}

# check_basics NAME: the rest of what the same container must show (a fast subset of
# integration/configure, so that a mutation run learns about these in one container start).
check_basics() {
        local name=$1
        t_is "$(field modify)" "ModifyDeviceFiles: 0" "$name: the masked params say ModifyDeviceFiles: 0"
        t_is "$(field procgpus)" "$BUSID0 " "$name: /proc/driver/nvidia/gpus holds only the selected GPU"
        t_is "$(field open0)" "No such device or address" "$name: /dev/nvidia0 opens past the device cgroup (ENXIO: no real driver)"
        t_is "$(field open1)" "Operation not permitted" "$name: GPU 1, not selected, made with mknod: EPERM from the device cgroup"
        t_match "$(cat "$T/$name/image-cache")" '^libc\.so\.6 ' "$name: the image's ld cache lists its libc.so.6"
        t_is "$(comm -23 "$T/$name/image-cache" <(field ldc | sort -u))" "" \
                "$name: every entry of the image's own ld cache is still in the container's cache"
}

BUSID0=$(ls "$DRV/proc/driver/nvidia/gpus" | sort | head -n1)
host_mountinfo_snapshot "$T/mounts.before"

if t_case_wanted new-api; then
        run_case new-api
        check_mounts new-api
        check_writes new-api
        check_basics new-api
fi

if ! t_case_wanted legacy; then
        :
elif [ -x "$NO_NEW_API" ]; then
        run_case legacy "$NO_NEW_API"
        check_mounts legacy
        check_writes legacy
        check_basics legacy
else
        t_skip "mount options under the legacy mount API" "no-new-mount-api was not built (no libseccomp)"
fi

mountinfo_unchanged "host mount table unchanged" "$T/mounts.before"
t_done
