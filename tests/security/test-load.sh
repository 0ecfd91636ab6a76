#!/bin/bash
# Load: GH_LOAD_SEQ sequential and GH_LOAD_CONC concurrent container starts under runc with the fake
# driver and gpu-hook as createRuntime hook (NVIDIA_VISIBLE_DEVICES=0).  Every start must succeed
# and see its GPU; afterwards nothing may have accumulated on the host (mounts, processes, cgroups).
# Start times (median, p99) are printed as TAP diagnostics.  Defaults are CI-sized (40 + 8);
# GH_LOAD_SEQ=200 GH_LOAD_CONC=32 is the full run.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
t_need_root
t_need_cmd runc
MKROOT=$GH_SOURCE_DIR/tests/fake-driver/make-root.sh

SEQ=${GH_LOAD_SEQ:-40}
CONC=${GH_LOAD_CONC:-8}
BASE=${GH_LOAD_BASELINE:-10}
PREFIX=gh-load-$$

DRV=$T/drv
bash "$MKROOT" "$DRV" >"$T/mkroot.log" 2>&1 || { t_diag_file "$T/mkroot.log"; t_fatal "make-root.sh failed"; }
cat >"$T/config.json" <<EOF
{"cli": {"root": "$DRV", "path": "$GPU_CLI"}, "log": {"file": "$T/hook.log"}, "containers": {"dir": "$T/records"}}
EOF

# What accumulates when something leaks: host mounts (other test runs' temp dirs left out: the
# machine may be shared), our cgroups, processes that still refer to our files.
count_mounts() { host_mountinfo_snapshot "$T/.m" && _gh_other_tests_out <"$T/.m" | wc -l; }
count_cgroups() {
        find /sys/fs/cgroup/devices /sys/fs/cgroup/unified -mindepth 1 -type d 2>/dev/null | wc -l
}
our_cgroups() {
        find /sys/fs/cgroup -mindepth 1 -type d -name "$PREFIX-*" 2>/dev/null | wc -l
}
# Processes of ours: anything whose command line, root or cwd mentions $T, and any process running
# this build's gpu-cli or gpu-hook.
GPU_CLI_REAL=$(readlink -f "$GPU_CLI")
GPU_HOOK_REAL=$(readlink -f "$GPU_HOOK")
our_procs() {
        local p exe
        for p in /proc/[0-9]*; do
                [ "${p#/proc/}" = $$ ] && continue
                [ "${p#/proc/}" = "$BASHPID" ] && continue
                exe=$(readlink "$p/exe" 2>/dev/null)
                if [ "$exe" = "$GPU_CLI_REAL" ] || [ "$exe" = "$GPU_HOOK_REAL" ] ||
                        { tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null | grep -q "$T" ||
                        readlink "$p/root" "$p/cwd" 2>/dev/null | grep -q "^$T"; then
                        echo "${p#/proc/} $({ tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null)"
                fi
        done
}
count_procs() { ps -e --no-headers | wc -l; }

# new_bundle DIR HOOK(0|1): a rootfs and a bundle that lists its GPUs.
new_bundle() {
        make_busybox_rootfs "$1/rootfs" --glibc || return 1
        make_bundle "$1/bundle" "$1/rootfs" /bin/sh -c 'nvidia-smi -L 2>&1 | head -n1'
        bundle_set_env "$1/bundle" NVIDIA_VISIBLE_DEVICES=0
        if [ "$2" = 1 ]; then
                bundle_add_hook "$1/bundle" createRuntime "$GPU_HOOK" "--config=$T/config.json" createRuntime
        fi
}

# one_start BUNDLE ID RESULTS: one container start, timed; appends "RC MS OUTPUT" to RESULTS.
one_start() {
        local bundle=$1 id=$2 res=$3 t0 t1 rc out
        t0=$(date +%s%N)
        out=$(timeout -k 5 "$GH_RUN_TIMEOUT" "$RUNC" --root "$T_RUNC_ROOT" run -b "$bundle" "$id" \
                </dev/null 2>"$T/err.$id")
        rc=$?
        t1=$(date +%s%N)
        "$RUNC" --root "$T_RUNC_ROOT" delete -f "$id" >/dev/null 2>&1
        echo "$rc $(((t1 - t0) / 1000000)) $out" >>"$res"
        [ $rc -eq 0 ] && rm -f "$T/err.$id"
        return 0
}

# stats RESULTS: "median p99 max" of the times in ms.
stats() {
        awk '{ print $2 }' "$1" | sort -n | awk '{ v[NR] = $1 } END {
                if (NR == 0) { print "- - -"; exit }
                m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
                i = int(NR * 0.99 + 0.999999); if (i > NR) i = NR; if (i < 1) i = 1
                print m, v[i], v[NR] }'
}
# failures RESULTS: starts that did not exit 0 or did not see GPU 0.
failures() { awk '$1 != 0 || $3 != "GPU" || $4 != "0:" { n++ } END { print n + 0 }' "$1"; }

mkdir -p "$T_RUNC_ROOT"
new_bundle "$T/base" 0 || t_fatal "cannot build a rootfs"
new_bundle "$T/seq" 1 || t_fatal "cannot build a rootfs"
for i in $(seq 1 "$CONC"); do new_bundle "$T/conc$i" 1 || t_fatal "cannot build a rootfs"; done

# Warm up (page cache, first cgroup creation), then take the "before" picture.
one_start "$T/seq/bundle" "$PREFIX-warm" "$T/warm.res"
host_mountinfo_snapshot "$T/mounts.before"
M0=$(count_mounts) C0=$(count_cgroups) P0=$(count_procs)

# Baseline: the same start without the hook.
for i in $(seq 1 "$BASE"); do one_start "$T/base/bundle" "$PREFIX-base-$i" "$T/base.res"; done

for i in $(seq 1 "$SEQ"); do one_start "$T/seq/bundle" "$PREFIX-seq-$i" "$T/seq.res"; done
t_is "$(failures "$T/seq.res")" 0 "$SEQ sequential starts with gpu-hook: all ran and saw GPU 0" ||
        { awk '$1 != 0 || $3 != "GPU"' "$T/seq.res" | head -n 5 | sed 's/^/#   /'; t_diag_file "$(ls "$T"/err.* 2>/dev/null | head -n1)" 5; }
read -r s_med s_p99 s_max <<<"$(stats "$T/seq.res")"

t0=$(date +%s%N)
for i in $(seq 1 "$CONC"); do one_start "$T/conc$i/bundle" "$PREFIX-conc-$i" "$T/conc.res" & done
wait
wall=$((($(date +%s%N) - t0) / 1000000))
t_is "$(failures "$T/conc.res")" 0 "$CONC concurrent starts with gpu-hook: all ran and saw GPU 0" ||
        { awk '$1 != 0 || $3 != "GPU"' "$T/conc.res" | head -n 5 | sed 's/^/#   /'; t_diag_file "$(ls "$T"/err.* 2>/dev/null | head -n1)" 5; }
t_is "$(wc -l <"$T/conc.res")" "$CONC" "every concurrent start reported back"
read -r c_med c_p99 c_max <<<"$(stats "$T/conc.res")"
read -r b_med b_p99 b_max <<<"$(stats "$T/base.res")"

t_diag "runc start without hook ($BASE runs): median ${b_med} ms, p99 ${b_p99} ms"
t_diag "sequential with gpu-hook ($SEQ runs): median ${s_med} ms, p99 ${s_p99} ms, max ${s_max} ms"
t_diag "concurrent with gpu-hook ($CONC at once): median ${c_med} ms, p99 ${c_p99} ms, max ${c_max} ms, all done in ${wall} ms"

sleep 0.5
M1=$(count_mounts) C1=$(count_cgroups) P1=$(count_procs)
t_diag "after: mounts $M0 -> $M1, cgroups (devices+unified) $C0 -> $C1, processes $P0 -> $P1"
t_is "$M1" "$M0" "no host mount accumulated"
if [ "$M1" != "$M0" ]; then
        diff <(_gh_other_tests_out <"$T/mounts.before") <(host_mountinfo_snapshot "$T/.m2"; _gh_other_tests_out <"$T/.m2") | head | sed 's/^/#   /'
fi
t_is "$(our_cgroups)" 0 "no cgroup of these containers is left"
t_is "$(our_procs)" "" "no process of these containers, gpu-hook or gpu-cli is left"
t_is "$("$RUNC" --root "$T_RUNC_ROOT" list -q | wc -l)" 0 "runc knows no container of this run"
# Process and cgroup totals can move with other work on the machine: only a growth in proportion
# to the number of starts counts as a leak.
t_ok "the process count did not grow with the starts ($P0 -> $P1)" test $((P1 - P0)) -lt $(((SEQ + CONC) / 4 + 4))
t_ok "the cgroup count did not grow with the starts ($C0 -> $C1)" test $((C1 - C0)) -lt $(((SEQ + CONC) / 4 + 1))
t_ok "gpu-hook logged every start" test "$(wc -l <"$T/hook.log")" -ge $((SEQ + CONC))
t_done
