#!/bin/bash
# Where a GPU container start's time goes on this machine, phase by phase.  Runs a GPU container N
# times (default 21) with `gpu-cli --debug configure` as the createRuntime hook, in two variants:
# all GPUs with compute,utility, and the same plus --require=cuda>=12.0 on a warm driver-state cache
# (its own file under the temp dir).  Prints the median of each phase gpu-cli logs, and the time the
# hook spent around gpu-cli (exec, dynamic loading, exit) that gpu-cli's own clock cannot see.
# Run after run.sh (which prepares the kit's runc libraries).  Usage: bash tests/gpu/profile-configure.sh [N]
KIT=${GH_KIT:-$(cd "$(dirname "$0")/../.." && pwd)/.gpukit}
export RUNC=${RUNC:-$KIT/bin/runc} GPU_CLI=${GPU_CLI:-$KIT/bin/gpu-cli} BUSYBOX=${BUSYBOX:-$KIT/bin/busybox}
. "$(dirname "$0")/../lib.sh"
N=${1:-21}
make_busybox_rootfs "$T/r" --glibc || exit 1
STATE=$T/state/driver-state.json
"$GPU_CLI" --state-file="$STATE" cache refresh || { echo "profile: cache refresh failed" >&2; exit 1; }

# median of the numbers on stdin
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2); else print "-" }'; }
# field LOG REGEX: the first number after REGEX on each matching line
field() { sed -n "s/.*$2[^0-9]*\\([0-9][0-9]*\\).*/\\1/p" "$1"; }

profile() {
        local name=$1 log=$T/$1.log wall=$T/$1.wall args
        shift
        args=$(printf '%q ' "$@")
        make_bundle "$T/b-$name" "$T/r" /bin/true
        cat >"$T/hook-$name" <<EOF
#!/bin/bash
state=\$(cat)
[[ \$state =~ \"pid\":[[:space:]]*([0-9]+) ]] || exit 1
t0=\$EPOCHREALTIME
$GPU_CLI --debug=$log --state-file=$STATE configure --pid=\${BASH_REMATCH[1]} $args $T/r || exit
t1=\$EPOCHREALTIME
echo "\$(( \${t1/./} - \${t0/./} ))" >>$wall
EOF
        chmod 755 "$T/hook-$name"
        bundle_add_hook "$T/b-$name" createRuntime "$T/hook-$name"
        for i in $(seq "$N"); do run_runc "$T/b-$name" prof || { echo "$RUN_STDERR"; exit 1; }; done
        local total
        total=$(field "$log" "configure done in" | median)
        echo "### $name: gpu-cli configure $*"
        echo
        echo "| phase (median of $N, us) | us |"
        echo "|---|---:|"
        echo "| hook: gpu-cli exec to exit, wall | $(median <"$wall") |"
        echo "| gpu-cli configure, its own clock | $total |"
        echo "| = exec, loading, option parsing, exit | $(( $(median <"$wall") - total )) |"
        echo "| discover: driver files (ld.so.cache, ELF checks) | $(field "$log" "discover: driver files" | median) |"
        echo "| discover: GPUs (selection and requirements are in plan) | $(field "$log" "discover: GPUs" | median) |"
        grep -q "driver-state cache .*: hit" "$log" &&
                echo "|   of which the driver-state cache hit (read, parse, fingerprint) | $(sed -n 's/.*driver-state cache .*: hit.*(\([0-9]*\) us).*/\1/p' "$log" | median) |"
        echo "| plan (sources opened on the host, namespaces) | $(field "$log" "(discover [0-9]*, plan" | median) |"
        echo "| mount (setns, device nodes, files, /proc masking) | $(field "$log" "plan [0-9]*, mount" | median) |"
        echo "| ldcache (the container's ld.so.cache) | $(field "$log" "mount [0-9]*, ldcache" | median) |"
        echo "| cgroup (eBPF device program) | $(field "$log" "ldcache [0-9]*, cgroup" | median) |"
        echo
        echo "GPU answers from: $(sed -n 's/.*configure done in.*, \([a-z+]*\))$/\1/p' "$log" | sort | uniq -c | tr '\n' ' ')"
        echo "driver discovery (last run): $(grep 'driver discovery' "$log" | tail -n 1 | sed 's/^.*debug: //')"
        echo "injected items per run: $(grep -c 'injected' "$log") / $N"
        echo
}

profile all --device=all --compute --utility
profile cuda-warm --device=all --compute --utility "--require=cuda>=12.0"
