#!/bin/bash
# The Debian 13 engine bed itself (tests/engine/bed.sh): it builds (or comes from the cache), has the
# engine versions the engines13 suite is about, runs a command pivoted into an overlay of itself, and
# leaves the host as it was: no mount, no process, no file in the cached tree.  Runs first in its suite,
# so that a cold build is paid (and reported) here.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
. "$GH_SOURCE_DIR/tests/engine/bed.sh"
t_need_root

t0=$EPOCHREALTIME
cached=no
[ -f "$BED_CACHE/$BED_SUITE-$(_bed_key)/.gh-bed-versions" ] && cached=yes
if ! bed_ensure --retry 2>"$T/ensure.err"; then
        t_diag_file "$BED_LOG" 30
        t_fatal "the Debian 13 bed builds: $BED_ERR"
fi
t1=$EPOCHREALTIME
t_pass "the Debian 13 bed is there ($BED_ROOT)"
t_diag "bed_ensure took $(awk -v a="${t0/./}" -v b="${t1/./}" 'BEGIN { printf "%.1f", (b - a) / 1e6 }') s; $(grep -h '^built in' "$BED_LOG" 2>/dev/null | tail -n 1)"
[ "$cached" = yes ] && t_diag "(from the cache)" || t_diag "(built by this run)"

versions=$(bed_versions)
t_diag "$(printf '%s\n' "$versions" | tr '\n' ' ')"
want() { t_match "$versions" "^$1 $2" "the bed has $1 $2"; }
want docker.io '26\.1\.'
want containerd '1\.7\.'
want podman '5\.4\.'
want crun '1\.21'
want runc '1\.1\.'
want buildah '1\.39\.'

host_mountinfo_snapshot "$T/mounts.before"
sum_before=$(find "$BED_ROOT" -xdev -newer "$BED_ROOT/.gh-bed-versions" 2>/dev/null | wc -l)
mkdir -p "$T/bound"
t1=$EPOCHREALTIME
out=$(bed_run --bind "$T/bound" -- bash -c '
        echo "root:$(findmnt -no FSTYPE /)"
        echo "init:$(cat /proc/1/comm)"
        echo "procs:$(ls -d /proc/[0-9]* | wc -l)"
        echo "docker:$(docker --version)"
        echo "cgroup2:$(mountpoint -q /sys/fs/cgroup/unified && echo mounted || echo hidden)"
        echo "lo:$(cat /sys/class/net/lo/operstate) $(ls /sys/class/net | tr "\n" " ")"
        echo scribble >/etc/gh-bed-scribble
        echo bound >"'"$T"'/bound/from-inside"
        mknod /dev/nvidia-bed-test c 195 0 && echo "mknod:ok"
        setsid sleep 31415 </dev/null >/dev/null 2>&1 &
        exit 7' 2>"$T/run.err")
rc=$?
t2=$EPOCHREALTIME
t_diag "a warm bed_run of a short command took $(awk -v a="${t1/./}" -v b="${t2/./}" 'BEGIN { printf "%.2f", (b - a) / 1e6 }') s"
field() { printf '%s\n' "$out" | sed -n "s/^$1://p"; }
t_is "$rc" 7 "bed_run returns the command's exit status" || t_diag_file "$T/run.err"
t_is "$(field root)" overlay "inside, / is an overlay of the bed"
t_is "$(field init)" catatonit "inside, PID 1 is catatonit (a private PID namespace)"
t_match "$(field procs)" '^[1-5]$' "inside, /proc shows only the namespace's few processes"
t_match "$(field docker)" 'Docker version 26\.1\.' "inside, docker is Docker 26"
t_is "$(field cgroup2)" "$(mountpoint -q /sys/fs/cgroup/unified && echo mounted || echo hidden)" \
        "inside, the cgroup mounts are the host's"
t_match "$(field lo)" '^(unknown|up) lo $' "inside, a private network namespace with only lo, up"
t_is "$(field mknod)" ok "inside, a GPU node can be made at /dev"
t_not "... and it is not on the host's /dev" test -e /dev/nvidia-bed-test
t_is "$(cat "$T/bound/from-inside" 2>/dev/null)" bound "a bound directory is the host's, at the same path"
t_not "a file written to the bed's /etc is gone afterwards" test -e "$BED_ROOT/etc/gh-bed-scribble"
t_is "$(find "$BED_ROOT" -xdev -newer "$BED_ROOT/.gh-bed-versions" 2>/dev/null | wc -l)" "$sum_before" \
        "the cached tree is unchanged"
t_not "the process left running inside was killed with the namespace" pgrep -f 'sleep 31415'
mountinfo_unchanged "the host's mount table is as before" "$T/mounts.before"
t_is "$(ls "$BED_CACHE/runs" 2>/dev/null | wc -l)" 0 "the run's scratch directory is removed"

out=$(bed_run --hide-cgroup2 -- sh -c 'mountpoint -q /sys/fs/cgroup/unified && echo mounted || echo hidden; crun --version | head -n 1')
t_match "$out" '^hidden$' "--hide-cgroup2: no cgroup2 mount inside"
t_match "$out" '^crun version 1\.21' "... and crun 1.21 is there"
t_is "$(mountpoint -q /sys/fs/cgroup/unified && echo mounted || echo hidden)" \
        "$(grep -q ' /sys/fs/cgroup/unified ' "$T/mounts.before" && echo mounted || echo hidden)" "... while the host keeps its own"

out=$(printf 'through stdin\n' | bed_run -- cat)
t_is "$out" "through stdin" "bed_run passes its standard input to the command"
bed_run --bind /nonexistent/gh-bed -- true 2>"$T/err"
t_not "binding a path that does not exist fails" test $? -eq 0
t_match "$(cat "$T/err")" 'cannot bind /nonexistent/gh-bed' "... naming it"
mountinfo_unchanged "the host's mount table is as before, after a failed run too" "$T/mounts.before"
t_done
