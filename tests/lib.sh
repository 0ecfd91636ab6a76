# shellcheck shell=bash
# Shared helpers for the shell tests: TAP output, a private temp dir with a cleanup trap, busybox
# root filesystems, OCI bundles and runc/crun/podman runners.  Source it from a bash test:
#
#   . "$GH_SOURCE_DIR/tests/lib.sh"
#   t_need_root
#   make_busybox_rootfs "$T/rootfs"
#   make_bundle "$T/b" "$T/rootfs" echo hello
#   run_runc "$T/b" echo; t_is "$RUN_STDOUT" hello "runc runs busybox"
#   t_done
#
# Works on the CPU machine (under meson) and on the GPU machine (no meson, runc from the kit): every
# tool is reached through a variable (RUNC, CRUN, PODMAN, BUSYBOX, GPU_CLI, GPU_HOOK) with a default.

set -u
set -o pipefail

GH_SOURCE_DIR=${GH_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
GH_BUILD_DIR=${GH_BUILD_DIR:-}
if [ -n "$GH_BUILD_DIR" ]; then
        GPU_CLI=${GPU_CLI:-$GH_BUILD_DIR/cli/gpu-cli}
        GPU_HOOK=${GPU_HOOK:-$GH_BUILD_DIR/hook/gpu-hook}
fi
GPU_CLI=${GPU_CLI:-gpu-cli}
GPU_HOOK=${GPU_HOOK:-gpu-hook}
RUNC=${RUNC:-runc}
CRUN=${CRUN:-crun}
PODMAN=${PODMAN:-podman}
BUSYBOX=${BUSYBOX:-$(command -v busybox 2>/dev/null || echo /bin/busybox)}
# Seconds before a container run is killed: a hung hook must fail the test, not hang the suite.
GH_RUN_TIMEOUT=${GH_RUN_TIMEOUT:-60}
GH_PYTHON=${GH_PYTHON:-$(if [ -x /usr/bin/python3 ]; then echo /usr/bin/python3; else echo python3; fi)}
# A fixed PATH for hooks: they must not depend on what the caller had (docs/threat-model.md#rule-4).
GH_HOOK_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# ---------------------------------------------------------------------------------------------
# TAP

T_COUNT=0
T_FAILED=0
T_SKIPPED=0

t_diag() { printf '%s\n' "$@" | sed 's/^/# /'; }

# t_diag_file FILE [MAX_LINES]: show the tail of a file as diagnostics.
t_diag_file() {
        [ -s "$1" ] || return 0
        tail -n "${2:-20}" "$1" | sed 's/^/#   /'
}

t_pass() { T_COUNT=$((T_COUNT + 1)); echo "ok $T_COUNT - $1"; }

t_fail() {
        T_COUNT=$((T_COUNT + 1))
        T_FAILED=$((T_FAILED + 1))
        echo "not ok $T_COUNT - $1"
}

# t_skip DESC REASON: a test point that could not run here (never counted as passed).
t_skip() {
        T_COUNT=$((T_COUNT + 1)) T_SKIPPED=$((T_SKIPPED + 1))
        echo "ok $T_COUNT - $1 # SKIP $2"
}

# t_ok DESC CMD ARGS...: passes when CMD exits 0; on failure shows its output.
t_ok() {
        local desc=$1 out rc
        shift
        out=$(mktemp "${T:-/tmp}/t_ok.XXXXXX")
        "$@" </dev/null >"$out" 2>&1
        rc=$?
        if [ $rc -eq 0 ]; then
                t_pass "$desc"
        else
                t_fail "$desc"
                t_diag "command: $* (exit $rc)"
                t_diag_file "$out"
        fi
        rm -f "$out"
        return $rc
}

# t_not DESC CMD ARGS...: passes when CMD exits non-zero.
t_not() {
        local desc=$1 out rc
        shift
        out=$(mktemp "${T:-/tmp}/t_ok.XXXXXX")
        "$@" </dev/null >"$out" 2>&1
        rc=$?
        if [ $rc -ne 0 ]; then
                t_pass "$desc"
        else
                t_fail "$desc"
                t_diag "command succeeded but should have failed: $*"
                t_diag_file "$out"
        fi
        rm -f "$out"
        [ $rc -ne 0 ]
}

# t_is GOT WANT DESC
t_is() {
        if [ "$1" = "$2" ]; then
                t_pass "$3"
        else
                t_fail "$3"
                t_diag "got:  '$1'" "want: '$2'"
                return 1
        fi
}

# t_match GOT ERE DESC: GOT (possibly several lines) has a line matching the extended regex.
t_match() {
        if grep -Eq -- "$2" <<<"$1"; then
                t_pass "$3"
        else
                t_fail "$3"
                t_diag "no line matches /$2/ in:"
                printf '%s\n' "$1" | head -n 20 | sed 's/^/#   /'
                return 1
        fi
}

# t_nomatch GOT ERE DESC: no line of GOT matches.
t_nomatch() {
        if ! grep -Eq -- "$2" <<<"$1"; then
                t_pass "$3"
        else
                t_fail "$3"
                t_diag "unexpected match for /$2/:"
                printf '%s\n' "$1" | grep -E -- "$2" | head -n 10 | sed 's/^/#   /'
                return 1
        fi
}

# Exit 77 is the skip status of plain test programs, but meson (1.0) reports a TAP test that exits
# non-zero as ERROR even after "1..0 # SKIP": under meson (GH_BUILD_DIR set) the plan line alone says
# "skipped" and the exit status is 0.  GH_SKIP_EXIT overrides either.
t_skip_all() {
        echo "1..0 # SKIP $*"
        exit "${GH_SKIP_EXIT:-$([ -n "$GH_BUILD_DIR" ] && echo 0 || echo 77)}"
}

t_done() {
        echo "1..$T_COUNT"
        [ "$T_FAILED" -eq 0 ] || exit 1
        exit 0
}

# t_fatal DESC: a piece of this project the test needs (the fake driver, a rootfs, a built binary) is
# missing or broken: that is a failure, never a skip.  One failed test point, then stop.  Skips are
# only for an absent external tool (t_need_cmd) or for lack of root (t_need_root).
t_fatal() {
        t_fail "$1"
        echo "1..$T_COUNT"
        exit 1
}

t_need_root() { [ "$(id -u)" -eq 0 ] || t_skip_all "needs root"; }

# t_need_cmd CMD...: skip the whole test when a tool is missing.  In the Debian 13 engine bed
# (GH_BED set: tests/engine/bed.sh) every tool is installed by the bed, so a missing one is a broken
# bed: a failure.
t_need_cmd() {
        local c
        for c in "$@"; do
                command -v "$c" >/dev/null 2>&1 && continue
                [ -n "${GH_BED:-}" ] && t_fatal "$c is in the $GH_BED engine bed"
                t_skip_all "$c is not installed"
        done
}

have_cmd() { command -v "$1" >/dev/null 2>&1; }

# elf_linkage FILE: "static" (an ELF program with no PT_INTERP: no dynamic loader), "dynamic", or
# "not ELF".  Read by hand, so that it needs neither file(1) nor binutils (the engine bed has neither).
elf_linkage() {
        "$GH_PYTHON" - "$1" <<'PY'
import struct, sys
try:
    b = open(sys.argv[1], "rb").read(65536)
except OSError:
    b = b""
if b[:4] != b"\x7fELF" or b[4] != 2:
    print("not ELF"); sys.exit(0)
e = "<" if b[5] == 1 else ">"
phoff, = struct.unpack_from(e + "Q", b, 32)
phentsize, phnum = struct.unpack_from(e + "HH", b, 54)
interp = any(struct.unpack_from(e + "I", b, phoff + i * phentsize)[0] == 3 for i in range(phnum))
print("dynamic" if interp else "static")
PY
}

# t_case_wanted NAME: false when GH_TEST_CASES (comma-separated shell patterns) is set and matches
# none of NAME.  tests/mutation/run.sh sets it to run a fast subset of a big table of cases; unset
# (CI, by hand), every case runs.
t_case_wanted() {
        local p IFS=,
        [ -n "${GH_TEST_CASES:-}" ] || return 0
        for p in $GH_TEST_CASES; do
                # shellcheck disable=SC2053
                [[ $1 == $p ]] && return 0
        done
        return 1
}

# ---------------------------------------------------------------------------------------------
# Temp dir and cleanup

T=$(mktemp -d "${TMPDIR:-/tmp}/gh-test.XXXXXX")
T_RUNC_ROOT=$T/.runc
T_CRUN_ROOT=$T/.crun
T_PODMAN=$T/.podman
T_SEQ=0

# Mount points under $T, deepest first ("\040" is how mountinfo writes a space).
_gh_mounts_under_t() {
        awk -v t="$T" '{ gsub(/\\040/, " ", $5); if ($5 == t || index($5, t "/") == 1) print $5 }' \
                /proc/self/mountinfo | sort -r
}

_gh_cleanup() {
        local id m i
        set +e
        _gh_cdi_restore
        prom_stop
        if [ -d "$T_RUNC_ROOT" ]; then
                for id in $("$RUNC" --root "$T_RUNC_ROOT" list -q 2>/dev/null); do
                        "$RUNC" --root "$T_RUNC_ROOT" delete -f "$id" >/dev/null 2>&1
                done
        fi
        if [ -d "$T_CRUN_ROOT" ]; then
                for id in $("$CRUN" --root "$T_CRUN_ROOT" list -q 2>/dev/null); do
                        _gh_crun_ns delete -f "$id" >/dev/null 2>&1
                done
        fi
        if [ -d "$T_PODMAN/root" ]; then
                _gh_podman rm -af -t 0 >/dev/null 2>&1
        fi
        # A failed test may leave mounts (podman's storage, a leaked injection): never rm -rf through them.
        for i in 1 2 3; do
                m=$(_gh_mounts_under_t)
                [ -n "$m" ] || break
                printf '%s\n' "$m" | while IFS= read -r mp; do umount -l "$mp" 2>/dev/null; done
        done
        if [ -n "$(_gh_mounts_under_t)" ]; then
                echo "# lib.sh: mounts left under $T, not removing it" >&2
        else
                rm -rf --one-file-system "$T"
        fi
}
trap _gh_cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------------------------------------
# Root filesystems

# The host's glibc pieces a dynamically linked program needs; the first name is the loader.
GH_GLIBC_LIBS="ld-linux-x86-64.so.2 libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1
        libgcc_s.so.1 libstdc++.so.6"

# _gh_host_lib NAME: the host's copy of a library, as a path (symlinks not resolved).
_gh_host_lib() {
        local d
        for d in /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /lib64 /usr/lib64 /usr/local/lib; do
                if [ -e "$d/$1" ]; then
                        echo "$d/$1"
                        return 0
                fi
        done
        return 1
}

# The host's real ldconfig: Ubuntu's /sbin/ldconfig is a shell wrapper around ldconfig.real.
_gh_host_ldconfig() {
        local f
        for f in /sbin/ldconfig.real /usr/sbin/ldconfig.real /sbin/ldconfig /usr/sbin/ldconfig; do
                if [ -f "$f" ] && [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ]; then
                        echo "$f"
                        return 0
                fi
        done
        return 1
}

_gh_build_rootfs_template() {
        local dir=$1 glibc=$2 name lib src ldconfig
        mkdir -p "$dir"/{bin,sbin,etc,dev,proc,sys,run,root,tmp,var/tmp} \
                "$dir"/usr/{bin,sbin,lib/x86_64-linux-gnu,lib64,local/bin,local/sbin} || return 1
        chmod 1777 "$dir/tmp" "$dir/var/tmp"
        # Debian 12's merged /usr layout.
        ln -s usr/lib "$dir/lib"
        ln -s usr/lib64 "$dir/lib64"
        cp "$BUSYBOX" "$dir/bin/busybox" || return 1
        for name in $("$BUSYBOX" --list); do
                [ -e "$dir/bin/$name" ] || ln -s busybox "$dir/bin/$name"
        done
        printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' \
                >"$dir/etc/passwd"
        printf 'root:x:0:\nnogroup:x:65534:\n' >"$dir/etc/group"
        : >"$dir/etc/ld.so.conf"
        echo 12.0 >"$dir/etc/debian_version"
        ldconfig=$(_gh_host_ldconfig) || { echo "lib.sh: no ELF ldconfig on this host" >&2; return 1; }
        cp "$ldconfig" "$dir/usr/local/bin/check-ldconfig"
        if [ "$glibc" = 1 ]; then
                for lib in $GH_GLIBC_LIBS; do
                        if ! src=$(_gh_host_lib "$lib"); then
                                case $lib in
                                ld-linux*|libc.so.6) echo "lib.sh: host has no $lib" >&2; return 1 ;;
                                *) continue ;;
                                esac
                        fi
                        cp -L "$src" "$dir/usr/lib/x86_64-linux-gnu/$lib" || return 1
                done
                ln -s ../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$dir/usr/lib64/ld-linux-x86-64.so.2"
                # Like a real image: the cache lists the image's own glibc.
                "$dir/usr/local/bin/check-ldconfig" -r "$dir" 2>/dev/null ||
                        "$dir/usr/local/bin/check-ldconfig" -C "$dir/etc/ld.so.cache" \
                                "$dir/usr/lib/x86_64-linux-gnu" 2>/dev/null || true
        fi
}

# make_busybox_rootfs DIR [--glibc]: a small Debian-like rootfs.  /sbin/ldconfig is a trap script that
# leaves a marker (see ldconfig_ran): the product must never run the image's ldconfig.  The host's real
# static ldconfig is /usr/local/bin/check-ldconfig, for `check-ldconfig -p` from inside.
make_busybox_rootfs() {
        local dir=$1 glibc=0 cache key tmpl tmp
        [ "${2:-}" = --glibc ] && glibc=1
        if [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
                echo "make_busybox_rootfs: $dir is not empty" >&2
                return 1
        fi
        cache=${GH_ROOTFS_CACHE:-${GH_BUILD_DIR:+$GH_BUILD_DIR/test-cache}}
        cache=${cache:-$T/.cache}
        mkdir -p "$cache"
        key=$( { cat "${BASH_SOURCE[0]}"; ls -lL "$BUSYBOX"; [ $glibc = 1 ] && for l in $GH_GLIBC_LIBS; do
                        ls -lL "$(_gh_host_lib "$l")" 2>/dev/null; done; } | cksum | cut -d' ' -f1)
        tmpl=$cache/rootfs-$([ $glibc = 1 ] && echo glibc || echo plain)-$key
        if [ ! -d "$tmpl" ]; then
                # Tests may run in parallel: build aside, then rename into place.
                tmp=$(mktemp -d "$cache/.build.XXXXXX")
                if ! _gh_build_rootfs_template "$tmp/r" $glibc; then
                        rm -rf "$tmp"
                        return 1
                fi
                mv -T "$tmp/r" "$tmpl" 2>/dev/null || true
                rm -rf "$tmp"
        fi
        mkdir -p "$dir"
        cp -a "$tmpl/." "$dir/" || return 1
        # The trap also covers a product that runs the script on the host instead of in the container.
        cat >"$dir/sbin/ldconfig" <<EOF
#!/bin/sh
echo "\$0 \$*" >/ldconfig-ran 2>/dev/null
echo "\$0 \$*" >'$dir/ldconfig-ran' 2>/dev/null
exit 0
EOF
        chmod 755 "$dir/sbin/ldconfig"
}

# ldconfig_ran ROOTFS: true when the image's /sbin/ldconfig was executed anywhere.
ldconfig_ran() { [ -e "$1/ldconfig-ran" ] || [ -e /ldconfig-ran ]; }

# ---------------------------------------------------------------------------------------------
# OCI bundles

# bundle_edit BUNDLE PYTHON [ARGS...]: run PYTHON with `c` = config.json (a dict) and `args`; saved after.
bundle_edit() {
        local bundle=$1 code=$2
        shift 2
        "$GH_PYTHON" - "$bundle/config.json" "$code" "$@" <<'EOF'
import json, os, sys
_file, _code, args = sys.argv[1], sys.argv[2], sys.argv[3:]
with open(_file) as f:
    c = json.load(f)
exec(_code)
with open(_file + ".tmp", "w") as f:
    json.dump(c, f, indent=2)
os.rename(_file + ".tmp", _file)
EOF
}

# make_bundle BUNDLE ROOTFS CMD...: the config `runc spec` writes (runc 1.1), with CMD as
# process.args, root.path = ROOTFS (absolute), writable root.
make_bundle() {
        local bundle=$1 rootfs=$2
        shift 2
        mkdir -p "$bundle"
        rootfs=$(cd "$rootfs" && pwd) || return 1
        "$GH_PYTHON" - "$bundle/config.json" "$rootfs" "$@" <<'EOF'
import json, sys
path, rootfs, args = sys.argv[1], sys.argv[2], sys.argv[3:]
caps = ["CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"]
c = {
    "ociVersion": "1.0.2-dev",
    "process": {
        "terminal": False,
        "user": {"uid": 0, "gid": 0},
        "args": args,
        "env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "TERM=xterm"],
        "cwd": "/",
        "capabilities": {k: list(caps) for k in ("bounding", "effective", "permitted", "ambient")},
        "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024}],
        "noNewPrivileges": True,
    },
    "root": {"path": rootfs, "readonly": False},
    "hostname": "gh-test",
    "mounts": [
        {"destination": "/proc", "type": "proc", "source": "proc"},
        {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
         "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
        {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
         "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"]},
        {"destination": "/dev/shm", "type": "tmpfs", "source": "shm",
         "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]},
        {"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue",
         "options": ["nosuid", "noexec", "nodev"]},
        {"destination": "/sys", "type": "sysfs", "source": "sysfs",
         "options": ["nosuid", "noexec", "nodev", "ro"]},
        {"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup",
         "options": ["nosuid", "noexec", "nodev", "relatime", "ro"]},
    ],
    "linux": {
        "resources": {"devices": [{"allow": False, "access": "rwm"}]},
        "namespaces": [{"type": t} for t in ("pid", "network", "ipc", "uts", "mount")],
        "maskedPaths": ["/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
                        "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/sys/firmware",
                        "/proc/scsi"],
        "readonlyPaths": ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"],
    },
}
with open(path, "w") as f:
    json.dump(c, f, indent=2)
EOF
}

# bundle_set_env BUNDLE K=V...: set (or replace) variables in process.env.
bundle_set_env() {
        local bundle=$1
        shift
        bundle_edit "$bundle" '
env = c["process"].setdefault("env", [])
for kv in args:
    k = kv.split("=", 1)[0]
    env[:] = [e for e in env if e.split("=", 1)[0] != k]
    env.append(kv)' "$@"
}

# bundle_unset_env BUNDLE K...
bundle_unset_env() {
        local bundle=$1
        shift
        bundle_edit "$bundle" '
c["process"]["env"] = [e for e in c["process"].get("env", []) if e.split("=", 1)[0] not in args]' "$@"
}

# bundle_add_hook BUNDLE STAGE PATH ARGS...: ARGS become args[1:] (args[0] is PATH).  The hook gets
# an explicit environment: PATH plus the space-separated K=V words of $HOOK_ENV.
bundle_add_hook() {
        local bundle=$1 stage=$2 path=$3
        shift 3
        # The environment travels in variables so that ARGS may be anything.
        _GH_ENV_PATH=$GH_HOOK_PATH _GH_ENV_EXTRA=${HOOK_ENV:-} _GH_ENV_TIMEOUT=$GH_RUN_TIMEOUT \
                bundle_edit "$bundle" '
import os
args_env = [os.environ["_GH_ENV_PATH"], os.environ["_GH_ENV_EXTRA"], os.environ["_GH_ENV_TIMEOUT"]]
stage, path, hargs = args[0], args[1], args[2:]
env = ["PATH=" + args_env[0]] + [e for e in args_env[1].split() if e]
hook = {"path": path, "args": [path] + hargs, "env": env, "timeout": int(args_env[2])}
c.setdefault("hooks", {}).setdefault(stage, []).append(hook)' "$stage" "$path" "$@"
}

# bundle_add_caps BUNDLE CAP...: add capabilities to every capability set.
bundle_add_caps() {
        local bundle=$1
        shift
        bundle_edit "$bundle" '
for s in ("bounding", "effective", "permitted", "inheritable", "ambient"):
    l = c["process"].setdefault("capabilities", {}).setdefault(s, [])
    l += [a for a in args if a not in l]' "$@"
}

# bundle_privileged BUNDLE: CAP_SYS_ADMIN everywhere, which the hook reads as "privileged".
bundle_privileged() { bundle_add_caps "$1" CAP_SYS_ADMIN; }

# bundle_add_device_rule BUNDLE allow|deny TYPE MAJOR MINOR ACCESS  (MAJOR/MINOR may be '*')
bundle_add_device_rule() {
        bundle_edit "$1" '
allow, typ, major, minor, access = args
r = {"allow": allow == "allow", "type": typ, "access": access}
if major != "*": r["major"] = int(major)
if minor != "*": r["minor"] = int(minor)
c["linux"]["resources"]["devices"].append(r)' "$2" "$3" "$4" "$5" "$6"
}

# bundle_add_mount BUNDLE SOURCE DEST [OPTION,...]: a bind mount (default options rbind).
bundle_add_mount() {
        bundle_edit "$1" '
src, dst, opts = args
c["mounts"].append({"destination": dst, "type": "bind", "source": src, "options": opts.split(",")})' \
                "$2" "$3" "${4:-rbind}"
}

# ---------------------------------------------------------------------------------------------
# Runtimes.  Each run_* sets RUN_RC, RUN_STDOUT, RUN_STDERR (contents) and RUN_ID, and returns RUN_RC.
# Ids are unique per call; the container is always deleted afterwards.

_gh_next_id() { T_SEQ=$((T_SEQ + 1)); RUN_ID="gh-$1-$$-$T_SEQ"; }

_gh_finish_run() {
        RUN_STDOUT=$(cat "$T/.run.out")
        RUN_STDERR=$(cat "$T/.run.err")
        [ "$RUN_RC" -eq 124 ] && RUN_STDERR="$RUN_STDERR
lib.sh: timed out after ${GH_RUN_TIMEOUT}s"
        return "$RUN_RC"
}

# run_runc BUNDLE NAME
run_runc() {
        local bundle=$1
        _gh_next_id "$2"
        mkdir -p "$T_RUNC_ROOT"
        timeout -k 5 "$GH_RUN_TIMEOUT" "$RUNC" --root "$T_RUNC_ROOT" run -b "$bundle" "$RUN_ID" \
                </dev/null >"$T/.run.out" 2>"$T/.run.err"
        RUN_RC=$?
        "$RUNC" --root "$T_RUNC_ROOT" delete -f "$RUN_ID" >/dev/null 2>&1
        _gh_finish_run
}

# crun cannot run on a cgroup v1/v2 hybrid host with the v2 hierarchy mounted ("cgroups in hybrid mode
# not supported"): run it in a private mount namespace without that mount (crun 1.8 on Debian 12).
_gh_crun_ns() {
        mkdir -p "$T_CRUN_ROOT"
        unshare -m sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null; exec "$@"' sh \
                "$CRUN" --root "$T_CRUN_ROOT" "$@"
}

# run_crun BUNDLE NAME
run_crun() {
        local bundle=$1
        _gh_next_id "$2"
        mkdir -p "$T_CRUN_ROOT"
        timeout -k 5 "$GH_RUN_TIMEOUT" unshare -m sh -c \
                'umount /sys/fs/cgroup/unified 2>/dev/null; exec "$@"' sh \
                "$CRUN" --root "$T_CRUN_ROOT" run -b "$bundle" "$RUN_ID" \
                </dev/null >"$T/.run.out" 2>"$T/.run.err"
        RUN_RC=$?
        _gh_crun_ns delete -f "$RUN_ID" >/dev/null 2>&1
        _gh_finish_run
}

# Podman with private storage under $T: never the host's images, networks or hooks.
_gh_podman_global=()
_gh_podman_setup() {
        mkdir -p "$T_PODMAN"/{root,runroot,tmp,net,hooks}
        _gh_podman_global=(--root "$T_PODMAN/root" --runroot "$T_PODMAN/runroot" --tmpdir "$T_PODMAN/tmp"
                --network-config-dir "$T_PODMAN/net" --cgroup-manager=cgroupfs --events-backend=file
                --runtime "$(command -v "$RUNC")")
}

_gh_podman() {
        _gh_podman_setup
        "$PODMAN" "${_gh_podman_global[@]}" "$@"
}

# run_podman ROOTFS HOOKSDIR [PODMAN-RUN-OPTIONS... --] CMD...
# HOOKSDIR "" means no hooks at all (not the host's hooks.d).  Options before `--` go to `podman run`,
# e.g. -e K=V, -v SRC:DST:rshared, --privileged.
run_podman() {
        local rootfs=$1 hooks=${2:-} a opts=() have_sep=0
        shift 2
        for a in "$@"; do [ "$a" = -- ] && have_sep=1; done
        if [ $have_sep = 1 ]; then
                while [ "$1" != -- ]; do opts+=("$1"); shift; done
                shift
        fi
        _gh_next_id podman
        rootfs=$(cd "$rootfs" && pwd) || return 1
        [ -n "$hooks" ] || hooks=$T_PODMAN/hooks
        _gh_podman_setup
        timeout -k 5 "$GH_RUN_TIMEOUT" "$PODMAN" "${_gh_podman_global[@]}" \
                --hooks-dir "$hooks" run --rm --name "$RUN_ID" --network none \
                --ulimit nofile=20000:20000 --ulimit nproc=32768:32768 \
                "${opts[@]+"${opts[@]}"}" --rootfs "$rootfs" "$@" </dev/null >"$T/.run.out" 2>"$T/.run.err"
        RUN_RC=$?
        _gh_podman rm -f -t 0 "$RUN_ID" >/dev/null 2>&1
        _gh_finish_run
}

# host_mountinfo_snapshot FILE: the host's mount table without mount ids, sorted, for before/after diffs.
host_mountinfo_snapshot() {
        awk '{ $1 = ""; $2 = ""; sub(/^  /, ""); print }' /proc/self/mountinfo | sort >"$1"
}

# mountinfo_unchanged DESC BEFORE: a test point comparing a snapshot with the current table.
# Mounts under other test runs' private temp dirs (/tmp/gh-test.*) come and go while we run: a
# comparison ignores them, but never anything of ours or anything else on the host.
_gh_other_tests_out() {
        awk -v t="$T" '{ mp = $3; if (mp ~ /^\/tmp\/gh-test\./ && mp != t && index(mp, t "/") != 1) next; print }'
}

mountinfo_unchanged() {
        local now
        now=$(mktemp "$T/mountinfo.XXXXXX")
        host_mountinfo_snapshot "$now"
        if cmp -s <(_gh_other_tests_out <"$2") <(_gh_other_tests_out <"$now"); then
                t_pass "$1"
        else
                t_fail "$1"
                diff <(_gh_other_tests_out <"$2") <(_gh_other_tests_out <"$now") | head -n 20 | sed 's/^/#   /'
        fi
        rm -f "$now"
}

# ---------------------------------------------------------------------------------------------
# CDI specs.  podman 4.3 reads specs only from /etc/cdi and /var/run/cdi, which other test runs (and
# the host) share.  The first cdi_install takes an exclusive lock, held until the test exits, and
# moves whatever both directories held aside (a spec of the same kind there would conflict with
# ours, or win over it); the cleanup removes our files and puts everything back as it was.

GH_CDI_DIRS=${GH_CDI_DIRS:-/etc/cdi /var/run/cdi}
GH_CDI_LOCK=${GH_CDI_LOCK:-/run/lock/gh-test-cdi.lock}
_GH_CDI_LOCK_FD=
_GH_CDI_SAVED=$T/.cdi-saved

_gh_cdi_take() {
        local d n=0
        [ -n "$_GH_CDI_LOCK_FD" ] && return 0
        mkdir -p "$(dirname "$GH_CDI_LOCK")" "$_GH_CDI_SAVED" || return 1
        exec {_GH_CDI_LOCK_FD}>>"$GH_CDI_LOCK" || return 1
        if ! flock -w 900 "$_GH_CDI_LOCK_FD"; then
                echo "lib.sh: $GH_CDI_LOCK is still held after 15 minutes" >&2
                return 1
        fi
        for d in $GH_CDI_DIRS; do
                n=$((n + 1))
                mkdir -p "$_GH_CDI_SAVED/$n"
                if [ -d "$d" ]; then
                        echo "$d" >"$_GH_CDI_SAVED/$n.existed"
                        find "$d" -mindepth 1 -maxdepth 1 -exec mv -t "$_GH_CDI_SAVED/$n" {} + || return 1
                else
                        mkdir -p "$d" || return 1
                fi
        done
}

# cdi_install SPEC [NAME]: SPEC becomes the only spec podman sees (NAME in the first of GH_CDI_DIRS,
# default the file's own name); an earlier cdi_install's file is removed.
cdi_install() {
        local d
        _gh_cdi_take || return 1
        for d in $GH_CDI_DIRS; do
                find "$d" -mindepth 1 -maxdepth 1 -exec rm -rf {} +
        done
        d=${GH_CDI_DIRS%% *}
        install -m 0644 "$1" "$d/.${2:-$(basename "$1")}.tmp" &&
                mv -f "$d/.${2:-$(basename "$1")}.tmp" "$d/${2:-$(basename "$1")}"
}

# cdi_validate SPEC: prints "valid" when SPEC validates against the official CDI schema (Debian's
# CDI package, CDI_SCHEMA), else the validator's error.  Its top level does not describe
# containerEdits: those are checked against the schema's own containerEdits definition.
# cdi_can_validate: true when the schema and python3-jsonschema are there.
# Debian 12 ships it under the project's old name, Debian 13 under tags.cncf.io.
if [ -z "${CDI_SCHEMA:-}" ]; then
        CDI_SCHEMA=/usr/share/gocode/src/github.com/container-orchestrated-devices/container-device-interface/schema
        [ -f "$CDI_SCHEMA/schema.json" ] || [ ! -f /usr/share/gocode/src/tags.cncf.io/container-device-interface/schema/schema.json ] ||
                CDI_SCHEMA=/usr/share/gocode/src/tags.cncf.io/container-device-interface/schema
fi
cdi_can_validate() { [ -f "$CDI_SCHEMA/schema.json" ] && "$GH_PYTHON" -c 'import jsonschema' 2>/dev/null; }
cdi_validate() {
        "$GH_PYTHON" - "$CDI_SCHEMA" "$1" <<'EOF' 2>&1
import json, os, sys, warnings
warnings.simplefilter("ignore")
import jsonschema
d, f = sys.argv[1:]
schema = json.load(open(os.path.join(d, "schema.json")))
defs = json.load(open(os.path.join(d, "defs.json")))
base = "file://" + os.path.abspath(d) + "/"
store = {base + "defs.json": defs, base + "schema.json": schema}
spec = json.load(open(f))
resolver = jsonschema.RefResolver(base_uri=base + "schema.json", referrer=schema, store=store)
jsonschema.Draft7Validator(schema, resolver=resolver).validate(spec)
edits = {"$ref": "defs.json#/definitions/containerEdits"}
jsonschema.Draft7Validator(edits, resolver=jsonschema.RefResolver(base_uri=base + "x.json", referrer=edits, store=store)).validate(spec.get("containerEdits", {}))
print("valid")
EOF
}

_gh_cdi_restore() {
        local d n=0
        [ -n "$_GH_CDI_LOCK_FD" ] || return 0
        for d in $GH_CDI_DIRS; do
                n=$((n + 1))
                find "$d" -mindepth 1 -maxdepth 1 -exec rm -rf {} + 2>/dev/null
                if [ -e "$_GH_CDI_SAVED/$n.existed" ]; then
                        find "$_GH_CDI_SAVED/$n" -mindepth 1 -maxdepth 1 -exec mv -t "$d" {} +
                else
                        rmdir "$d" 2>/dev/null
                fi
        done
        exec {_GH_CDI_LOCK_FD}>&-
        _GH_CDI_LOCK_FD=
}

# ---------------------------------------------------------------------------------------------
# A real Prometheus server (Debian's prometheus package), private to the test: its own config and
# data directory under $T, loopback only, stopped by its PID (also by the cleanup trap).

PROM_PID=
PROM_URL=

# free_port: a TCP port on 127.0.0.1 that nothing listens on now.
free_port() {
        "$GH_PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# prom_start TARGET...: scrapes each TARGET (HOST:PORT, path /metrics) every second; returns once the
# server says it is ready (30 s at most).  Sets PROM_URL.  Its log is $T/prometheus/log.
prom_start() {
        local dir=$T/prometheus port t targets=
        mkdir -p "$dir/data"
        for t in "$@"; do targets="$targets${targets:+, }'$t'"; done
        printf '%s\n' "global:" "  scrape_interval: 1s" "  scrape_timeout: 1s" "  evaluation_interval: 1s" \
                "scrape_configs:" "  - job_name: gpu-cli" "    static_configs:" "      - targets: [$targets]" \
                >"$dir/prometheus.yml"
        port=$(free_port) || return 1
        PROM_URL=http://127.0.0.1:$port
        prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/data" \
                --web.listen-address="127.0.0.1:$port" --log.level=warn </dev/null >"$dir/log" 2>&1 &
        PROM_PID=$!
        for _ in $(seq 150); do
                "$GH_PYTHON" -c 'import sys, urllib.request as u; u.urlopen(sys.argv[1], timeout=2)' \
                        "$PROM_URL/-/ready" 2>/dev/null && return 0
                kill -0 "$PROM_PID" 2>/dev/null || break
                sleep 0.2
        done
        return 1
}

# prom_query EXPR: the instant query's result through /api/v1/query, one line per series,
# `NAME{label="value",...} VALUE` with the labels sorted (job and instance, which Prometheus adds,
# left out).
prom_query() {
        "$GH_PYTHON" -c '
import json, sys, urllib.parse as p, urllib.request as u
url, expr = sys.argv[1:]
r = json.load(u.urlopen(url + "/api/v1/query?" + p.urlencode({"query": expr}), timeout=5))
if r.get("status") != "success":
    sys.exit("query failed: %s" % r)
for s in r["data"]["result"]:
    m = dict(s["metric"])
    name = m.pop("__name__", "")
    m.pop("job", None)
    m.pop("instance", None)
    print("%s{%s} %s" % (name, ",".join("%s=%s" % (k, json.dumps(v)) for k, v in sorted(m.items())), s["value"][1]))
' "$PROM_URL" "$1"
}

# prom_wait EXPR [SECONDS]: prom_query's output once EXPR has a result (30 s at most by default);
# returns 1 with nothing printed when it never does.
prom_wait() {
        local out
        for _ in $(seq $((${2:-30} * 4))); do
                out=$(prom_query "$1" 2>/dev/null)
                if [ -n "$out" ]; then
                        printf '%s\n' "$out"
                        return 0
                fi
                sleep 0.25
        done
        return 1
}

# prom_targets: each scrape target's URL, health and last error, one line each.
prom_targets() {
        "$GH_PYTHON" -c '
import json, sys, urllib.request as u
r = json.load(u.urlopen(sys.argv[1] + "/api/v1/targets", timeout=5))
for t in r["data"]["activeTargets"]:
    print(t["scrapeUrl"], t["health"], t.get("lastError", ""))' "$PROM_URL"
}

prom_stop() {
        [ -n "${PROM_PID:-}" ] || return 0
        kill "$PROM_PID" 2>/dev/null
        wait "$PROM_PID" 2>/dev/null
        PROM_PID=
}

# promtool_check TEXT: `promtool check metrics` on TEXT (not on the caller's stdin: t_ok runs its
# command with stdin from /dev/null).  Its lint about dcgm-exporter's own camelCase label names
# (modelName, UUID, ... are what dcgm-exporter writes) is expected; any other complaint, a parse
# error above all, fails.  Empty TEXT fails too.
promtool_check() {
        local out
        [ -n "$1" ] || { echo "promtool_check: no exposition text"; return 1; }
        out=$(promtool check metrics <<<"$1" 2>&1) && return 0
        out=$(grep -v -E "^(DCGM_FI_DEV_[A-Z_]+|gpuhook_container_(fb_used|sm_util|processes)|gpuhook_fb_unowned) label names should be written in 'snake_case' not 'camelCase'\$" <<<"$out")
        [ -z "$out" ] || { printf '%s\n' "$out"; return 1; }
}
