# shellcheck shell=bash
# The Debian 13 ("trixie") engine bed: today's engines on this Debian 12 machine, without touching it.
#
# A debootstrapped trixie tree with Docker 26.1, containerd 1.7, podman 5.4, crun 1.21, runc 1.1,
# buildah 1.39, kubectl 1.32 and the CRI API's .proto files (python3-grpcio, python3-grpc-tools), built
# once per machine and cached.  Commands run in it as root, in a private mount, PID, network (loopback
# up), UTS and IPC namespace, pivot_root'ed into an overlay of the cached tree: what they write is gone
# when they exit, every process they started is killed with them (the PID namespace), and no mount
# reaches the host's mount table.  Needs root, debootstrap and Debian's package mirror.
#
#   . tests/engine/bed.sh
#   bed_ensure [--retry]       the cached bed, built first if there is none for this package list and
#                              this script (cold: about 3 minutes); sets BED_ROOT (never write to it).
#                              On failure: non-zero, the reason in BED_ERR, the build log in BED_LOG;
#                              for an hour after a failed build it fails at once, unless --retry.
#   bed_run [OPTION...] [--] CMD [ARG...]
#                              CMD inside (bed_ensure first); the exit status is CMD's.  Options:
#       --bind PATH            PATH (file or directory) at the same path inside, read-write; repeatable.
#                              Always bound: $GH_SOURCE_DIR, $GH_BUILD_DIR and each path in $BED_BINDS.
#       --bind-ro PATH         the same, read-only.
#       --hide-cgroup2         no cgroup2 mount at /sys/fs/cgroup/unified inside (crun 1.21 refuses a
#                              host with cgroup v1 and v2 both mounted: "hybrid mode not supported").
#       --cgroup2-only         only the host's cgroup2 hierarchy, at /sys/fs/cgroup: the engines take
#                              it for a cgroup v2 host (device rules become eBPF programs), though
#                              the kernel still applies the v1 controllers and no v2 one is enabled.
#       --host-net             share the host's network namespace (default: a private one, lo up).
#       --env K=V              set K in CMD's environment; repeatable.
#   bed_versions               "docker 26.1.5 ..." of the cached bed, one package per line.
#
# Inside: the caller's environment (PATH reset to the usual one, HOME=/root), the caller's working
# directory when it is bound, else /.  /tmp is a fresh directory on disk (not on the overlay, so
# overlayfs storage drivers work under it), /dev a private tmpfs with the usual nodes (so a test may
# mknod fake GPU nodes at /dev), /proc the PID namespace's own, /sys the network namespace's own with the host's cgroup mounts.
# /etc/cdi, /var/run/cdi, /run/docker, /etc/docker, /etc/containerd are the overlay's: private to
# the run.  The engines are not started: a test starts the daemon it needs (tests/engine/engine.sh).
# containerd 1.7 is /usr/bin/containerd (ctr, containerd-shim-runc-v2 beside it); the package's own
# configuration is /etc/containerd/config.toml inside; the CRI .proto files are under
# /usr/share/gocode/src/k8s.io/cri-api.
#
# Settings (environment): GH_BED_CACHE (default /var/cache/gpu-hook), GH_BED_MIRROR (default: the
# host's Debian mirror from its apt sources).  The CLI is tests/engine/bed-run.sh.

BED_SUITE=trixie
# What the tests need inside, besides the engines: bash tests with python3, busybox for images, the
# libraries our binaries link when they are not built static, iproute2 for the loopback, uidmap,
# catatonit and passt for rootless podman, jsonschema and the CDI schema to validate specs, and the
# Kubernetes node pieces (kubectl's client-side parsing, a CRI client generated from Debian's .proto).
BED_PACKAGES=(
        docker.io docker-cli containerd runc crun podman buildah conmon netavark catatonit passt uidmap
        iproute2 procps python3 python3-jsonschema busybox-static
        libelf1t64 libtirpc3t64 libcap2 libjansson4 libseccomp2 libmicrohttpd12t64
        kubectl python3-grpcio python3-grpc-tools
)
# Unpacked, not installed: the tests read only the CDI schema and the CRI .proto files in them, and
# installing them would pull 400 MB of Go sources they depend on.
BED_UNPACK=(golang-tags.cncf-container-device-interface-dev golang-github-kubernetes-cri-api-dev)
BED_CACHE=${GH_BED_CACHE:-/var/cache/gpu-hook}
BED_ROOT=
BED_ERR=
BED_LOG=
BED_TMP_BINDS=()

# The host's Debian mirror: the first URIs of a deb822 source (or the first deb line) that is not the
# security archive.
_bed_mirror() {
        local m
        [ -n "${GH_BED_MIRROR:-}" ] && { echo "$GH_BED_MIRROR"; return; }
        m=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '$1 == "URIs:" { for (i = 2; i <= NF; i++) print $i }' |
                grep -v -- '-security' | head -n 1)
        [ -n "$m" ] || m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
                awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; break } }' |
                grep -v -- '-security' | head -n 1)
        echo "${m:-http://deb.debian.org/debian}"
}

# The cache key: the suite, the package list and the code that builds the tree.
_bed_key() {
        { echo "$BED_SUITE"; echo "${BED_PACKAGES[*]}"; echo "${BED_UNPACK[*]}"; declare -f _bed_build; } |
                sha256sum | cut -c1-16
}

# _bed_dev DIR: a /dev for DIR: tmpfs, the harmless host nodes bound, its own devpts, shm, mqueue.
_bed_dev() {
        local d=$1 n
        mount -t tmpfs -o mode=755,nosuid,size=65536k bed-dev "$d" || return 1
        for n in null zero full random urandom tty fuse net/tun; do
                [ -c "/dev/$n" ] || continue
                mkdir -p "$(dirname "$d/$n")"
                : >"$d/$n" && mount --bind "/dev/$n" "$d/$n" || return 1
        done
        mkdir -p "$d/pts" "$d/shm" "$d/mqueue"
        mount -t devpts -o newinstance,ptmxmode=0666,mode=0620,gid=5,nosuid,noexec bed-devpts "$d/pts" || return 1
        ln -s pts/ptmx "$d/ptmx"
        mount -t tmpfs -o mode=1777,nosuid,nodev bed-shm "$d/shm" || return 1
        mount -t mqueue -o nosuid,nodev,noexec mqueue "$d/mqueue" 2>/dev/null
        ln -s /proc/self/fd "$d/fd"
        ln -s /proc/self/fd/0 "$d/stdin"
        ln -s /proc/self/fd/1 "$d/stdout"
        ln -s /proc/self/fd/2 "$d/stderr"
}

# _bed_build DIR MIRROR: debootstrap, then apt in the tree, each in a private mount and PID namespace
# (their mounts of /proc and /dev never reach the host; needrestart and the like see no host process),
# with a policy-rc.d that lets no package start a service.
_bed_build() {
        local dir=$1 mirror=$2 t0=$SECONDS
        unshare --mount --pid --fork --kill-child --propagation private \
                debootstrap --variant=minbase "$BED_SUITE" "$dir" "$mirror" || return 1
        echo "debootstrap: $((SECONDS - t0)) s"
        printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d" && chmod 755 "$dir/usr/sbin/policy-rc.d" || return 1
        # No documentation and no translations: a third smaller, nothing a test reads.
        printf 'path-exclude /usr/share/doc/*\npath-exclude /usr/share/man/*\npath-exclude /usr/share/locale/*\npath-include /usr/share/locale/locale.alias\n' \
                >"$dir/etc/dpkg/dpkg.cfg.d/01-gh-bed-nodoc"
        export -f _bed_dev
        BED_UNPACK="${BED_UNPACK[*]}" unshare --mount --pid --fork --kill-child --propagation private bash -c '
                set -e
                dir=$1
                shift
                export BED_UNPACK
                mount -t proc proc "$dir/proc"
                _bed_dev "$dir/dev"
                export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin
                chroot "$dir" apt-get update -q
                chroot "$dir" apt-get install -y -q --no-install-recommends "$@"
                chroot "$dir" apt-get clean
                chroot "$dir" sh -ec "mkdir /tmp/unpack && cd /tmp/unpack && apt-get download -q $BED_UNPACK && for d in *.deb; do dpkg-deb -x \$d /; done; cd / && rm -r /tmp/unpack"
                rm -rf "$dir"/var/lib/apt/lists/*_Packages "$dir"/var/lib/apt/lists/*_Translation-*
                chroot "$dir" dpkg-query -W -f "\${Package} \${Version}\n" docker.io containerd podman crun runc buildah conmon kubectl >"$dir/.gh-bed-versions"
        ' bed-build "$dir" "${BED_PACKAGES[@]}" || return 1
        echo "debootstrap and packages: $((SECONDS - t0)) s"
}

bed_ensure() {
        local key dir tmp mirror t0 old lockfd retry=0
        [ "${1:-}" = --retry ] && retry=1
        BED_ERR= BED_ROOT=
        [ "$(id -u)" -eq 0 ] || { BED_ERR="the Debian 13 bed needs root"; return 1; }
        command -v debootstrap >/dev/null 2>&1 ||
                { BED_ERR="debootstrap is not installed (apt-get install debootstrap; contrib/deps.sh lists it)"; return 1; }
        key=$(_bed_key)
        dir=$BED_CACHE/$BED_SUITE-$key
        BED_LOG=$dir.log
        mkdir -p "$BED_CACHE" || { BED_ERR="cannot create $BED_CACHE"; return 1; }
        exec {lockfd}>>"$BED_CACHE/.build.lock"
        flock "$lockfd"
        if [ ! -f "$dir/.gh-bed-versions" ] && [ $retry = 0 ] && [ -n "$(find "$dir.failed" -mmin -60 2>/dev/null)" ]; then
                # One failed build per hour, not one per test that wants the bed.
                exec {lockfd}>&-
                BED_ERR="$(cat "$dir.failed") [an earlier build failed less than an hour ago; bed-run.sh --ensure tries again]"
                return 1
        fi
        if [ ! -f "$dir/.gh-bed-versions" ]; then
                # Under the lock, a tree still being built is one whose builder died.
                rm -rf --one-file-system "$BED_CACHE"/.building.*
                mirror=$(_bed_mirror)
                # Built aside and renamed when complete: a half-built tree is never used.
                tmp=$(mktemp -d "$BED_CACHE/.building.XXXXXX")
                t0=$SECONDS
                echo "bed: building $BED_SUITE from $mirror into $dir (log $BED_LOG)" >&2
                # The builder's processes do not inherit the lock: should this shell die, it is free.
                if ! _bed_build "$tmp/root" "$mirror" >"$BED_LOG" 2>&1 {lockfd}>&-; then
                        rm -rf --one-file-system "$tmp"
                        exec {lockfd}>&-
                        BED_ERR="building the $BED_SUITE bed failed: $(grep -E '^(E|W): |Err|error|failed' "$BED_LOG" | tail -n 1) (log $BED_LOG)"
                        printf '%s\n' "$BED_ERR" >"$dir.failed"
                        return 1
                fi
                echo "built in $((SECONDS - t0)) s" >>"$BED_LOG"
                rm -f "$dir.failed"
                rm -rf --one-file-system "$dir"
                mv -T "$tmp/root" "$dir" && rmdir "$tmp" || { exec {lockfd}>&-; BED_ERR="cannot move the bed into $dir"; return 1; }
                echo "bed: built in $((SECONDS - t0)) s, $(du -sh "$dir" | cut -f1)" >&2
                # Beds of older package lists go, unless a run still uses one (a shared lock on it).
                for old in "$BED_CACHE/$BED_SUITE"-*; do
                        old=${old%.lock} old=${old%.log} old=${old%.failed}
                        [ "$old" != "$dir" ] || continue
                        if flock -xn "$old.lock" true 2>/dev/null; then
                                rm -rf --one-file-system "$old" "$old.lock" "$old.log" "$old.failed"
                        fi
                done
        fi
        exec {lockfd}>&-
        BED_ROOT=$dir
}

bed_versions() { bed_ensure && sed 's/+.*//; s/~.*//' "$BED_ROOT/.gh-bed-versions"; }

# _bed_enter RUN BED HIDE_CGROUP2 HOST_NET CWD -- BIND... -- CMD...: PID 1 of the bed's namespaces.
# BIND is rw:PATH or ro:PATH.  Mounts everything under RUN/root, pivots into it and execs CMD.
_bed_enter() {
        local run=$1 bed=$2 hide=$3 hostnet=$4 cwd=$5 r b p mode
        shift 5
        [ "$1" = -- ] && shift
        r=$run/root
        mkdir -p "$r" "$run/upper" "$run/work" "$run/tmp" && chmod 1777 "$run/tmp" || return 1
        mount -t overlay gh-bed -o "lowerdir=$bed,upperdir=$run/upper,workdir=$run/work" "$r" || return 1
        mount -t proc -o nosuid,nodev,noexec proc "$r/proc" || return 1
        # A sysfs of the bed's own network namespace; the cgroup hierarchies are the host's.
        if [ "$hostnet" = 1 ]; then
                mount --rbind /sys "$r/sys" || return 1
        else
                mount -t sysfs -o nosuid,nodev,noexec sysfs "$r/sys" && mount --rbind /sys/fs/cgroup "$r/sys/fs/cgroup" || return 1
        fi
        if [ "$hide" = 1 ] && mountpoint -q "$r/sys/fs/cgroup/unified"; then
                umount -l "$r/sys/fs/cgroup/unified" || return 1
        elif [ "$hide" = 2 ]; then
                # Only the unified hierarchy, at /sys/fs/cgroup: what a cgroup v2 host looks like.
                mountpoint -q /sys/fs/cgroup/unified || { echo "bed: no cgroup2 mount at /sys/fs/cgroup/unified" >&2; return 1; }
                umount -R "$r/sys/fs/cgroup" 2>/dev/null
                mount --bind /sys/fs/cgroup/unified "$r/sys/fs/cgroup" || return 1
        fi
        _bed_dev "$r/dev" || return 1
        mount --bind "$run/tmp" "$r/tmp" || return 1
        while [ $# -gt 0 ] && [ "$1" != -- ]; do
                mode=${1%%:*} p=${1#*:}
                shift
                [ -e "$p" ] || { echo "bed: cannot bind $p: it does not exist" >&2; return 1; }
                if [ -d "$p" ]; then mkdir -p "$r$p"; else mkdir -p "$(dirname "$r$p")" && : >>"$r$p"; fi
                mount --rbind "$p" "$r$p" || return 1
                [ "$mode" = ro ] && { mount -o remount,bind,ro "$r$p" || return 1; }
        done
        shift
        cd "$r" && mkdir -p .gh-oldroot && pivot_root . .gh-oldroot || return 1
        umount -l /.gh-oldroot && rmdir /.gh-oldroot || return 1
        if [ "$hostnet" != 1 ]; then
                /usr/sbin/ip link set lo up || return 1
        fi
        hostname gh-bed
        b=/
        [ -d "$cwd" ] && b=$cwd
        cd "$b" || return 1
        export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
        unset TMPDIR
        unset -f _bed_enter _bed_dev
        # catatonit as init: it forwards signals to CMD and reaps what CMD leaves behind.
        exec /usr/bin/catatonit -- "$@"
}

bed_run() {
        local hide=0 hostnet=0 binds=() envs=() p run rc lockfd cwd
        while [ $# -gt 0 ]; do
                case $1 in
                --bind) binds+=("rw:$(realpath -m "$2")"); shift 2 ;;
                --bind-ro) binds+=("ro:$(realpath -m "$2")"); shift 2 ;;
                --hide-cgroup2) hide=1; shift ;;
                --cgroup2-only) hide=2; shift ;;
                --host-net) hostnet=1; shift ;;
                --env) envs+=("$2"); shift 2 ;;
                --) shift; break ;;
                -*) echo "bed_run: unknown option $1" >&2; return 2 ;;
                *) break ;;
                esac
        done
        [ $# -gt 0 ] || { echo "bed_run: no command" >&2; return 2; }
        bed_ensure || { echo "bed: $BED_ERR" >&2; return 1; }
        for p in ${GH_SOURCE_DIR:-} ${GH_BUILD_DIR:-} ${BED_BINDS:-}; do
                binds=("rw:$(realpath -m "$p")" "${binds[@]}")
        done
        # Parents before children, so that a child's bind is not hidden by its parent's.
        mapfile -t binds < <(printf '%s\n' "${binds[@]}" | awk -F: '!seen[$0]++ { print length(substr($0, 4)) " " $0 }' |
                sort -n | cut -d' ' -f2-)
        _bed_prune_runs
        mkdir -p "$BED_CACHE/runs"
        run=$(mktemp -d "$BED_CACHE/runs/run.XXXXXX") || return 1
        echo $$ >"$run/owner"
        # A shared lock on the bed for as long as this run uses it (bed_ensure removes only unlocked beds).
        exec {lockfd}>>"$BED_ROOT.lock"
        flock -s "$lockfd"
        cwd=$(pwd -P)
        export -f _bed_enter _bed_dev
        # unshare ignores TERM and INT while it waits: a subshell passes them to the namespace's init
        # (catatonit, which passes them to CMD), then kills unshare, and the namespace with it, after 10 s.
        (
                upid=
                _bed_signal() {
                        local init i
                        init=$(cat "/proc/$upid/task/$upid/children" 2>/dev/null)
                        [ -n "$init" ] && kill -TERM $init 2>/dev/null
                        for i in $(seq 1 100); do kill -0 "$upid" 2>/dev/null || return; sleep 0.1; done
                        kill -KILL "$upid" 2>/dev/null
                }
                trap _bed_signal TERM INT
                env "${envs[@]+"${envs[@]}"}" unshare --mount --pid $([ "$hostnet" = 1 ] || echo --net) --uts --ipc --fork --kill-child --propagation private \
                        bash -c '_bed_enter "$@"' bed "$run" "$BED_ROOT" "$hide" "$hostnet" "$cwd" -- \
                        "${binds[@]+"${binds[@]}"}" -- "$@" {lockfd}>&- <&0 &
                upid=$!
                while :; do
                        wait "$upid"
                        rc=$?
                        kill -0 "$upid" 2>/dev/null || exit $rc
                done
        )
        rc=$?
        exec {lockfd}>&-
        _bed_rm_run "$run"
        return $rc
}

# The namespace is gone once its PID 1 is, so nothing is mounted under RUN any more on the host; the
# check stays, since rm must never cross into a mount.
_bed_rm_run() {
        if awk -v r="$1" 'index($5, r) == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo; then
                echo "bed: mounts left under $1 on the host; not removing it" >&2
                return 1
        fi
        rm -rf --one-file-system "$1"
}

# Runs whose owner died without cleaning up (killed with SIGKILL): their namespaces died with them.
_bed_prune_runs() {
        local d pid
        for d in "$BED_CACHE"/runs/run.*; do
                [ -d "$d" ] || continue
                pid=$(cat "$d/owner" 2>/dev/null)
                [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && continue
                # A run being set up has no owner file for a moment: leave young ones alone.
                [ -z "$pid" ] && [ -n "$(find "$d" -maxdepth 0 -mmin -1)" ] && continue
                _bed_rm_run "$d"
        done
}
