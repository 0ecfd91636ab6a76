# shellcheck shell=bash
# Timing helpers shared by bench/bench.sh (CPU machine, fake driver) and tests/gpu/bench.sh (GPU
# machine).  Source after tests/lib.sh.  Times are wall-clock from bash's $EPOCHREALTIME, so no
# process is forked just to read the clock; every measurement has warm-up runs that are not counted.
export LC_ALL=C

BENCH_RUNS=${GH_BENCH_RUNS:-15}
BENCH_WARMUP=${GH_BENCH_WARMUP:-2}
BENCH_SAMPLES=()   # microseconds, filled by bench_cmd / bench_runc / bench_samples_from
BENCH_ERR=""       # why the last measurement failed
BENCH_TABLE=()     # markdown rows
BENCH_BASELINE=""  # median (us) that ratios are taken against

_us() { local t=${1/./}; echo $((10#$t)); }

# bench_cmd CMD...: time CMD; fails (BENCH_ERR) on the first failing run.
bench_cmd() {
        local i t0 t1
        BENCH_SAMPLES=()
        for ((i = 0; i < BENCH_WARMUP + BENCH_RUNS; i++)); do
                t0=$EPOCHREALTIME
                # No `timeout` wrapper here: it would add a fork+exec to every sample of a few-ms command.
                if ! "$@" </dev/null >/dev/null 2>"$T/.bench.err"; then
                        BENCH_ERR="$* failed: $(head -c 300 "$T/.bench.err" | tr '\n' ' ')"
                        return 1
                fi
                t1=$EPOCHREALTIME
                ((i >= BENCH_WARMUP)) && BENCH_SAMPLES+=($(($(_us "$t1") - $(_us "$t0"))))
        done
        return 0
}

# _bench_run_once BUNDLE: one timed `runc run` of the bundle (the container is deleted outside the
# timing).  Sets _BENCH_US to the time taken, or _BENCH_RUN_ERR and returns 1.
_bench_run_once() {
        local t0 t1 id rc
        _gh_next_id bench
        id=$RUN_ID
        t0=$EPOCHREALTIME
        timeout -k 5 "$GH_RUN_TIMEOUT" "$RUNC" --root "$T_RUNC_ROOT" run -b "$1" "$id" \
                </dev/null >/dev/null 2>"$T/.bench.err"
        rc=$?
        t1=$EPOCHREALTIME
        "$RUNC" --root "$T_RUNC_ROOT" delete -f "$id" >/dev/null 2>&1
        if [ $rc -ne 0 ]; then
                # runc wraps a hook's message in its own; keep the hook's words.
                _BENCH_RUN_ERR="runc run exit $rc: $(tr '\n' ' ' <"$T/.bench.err" | sed 's/.*stderr: //' | head -c 200)"
                return 1
        fi
        _BENCH_US=$(($(_us "$t1") - $(_us "$t0")))
}

# bench_runc BUNDLE: time `runc run` of the bundle.
bench_runc() {
        local i
        BENCH_SAMPLES=()
        mkdir -p "$T_RUNC_ROOT"
        for ((i = 0; i < BENCH_WARMUP + BENCH_RUNS; i++)); do
                _bench_run_once "$1" || { BENCH_ERR=$_BENCH_RUN_ERR; return 1; }
                ((i >= BENCH_WARMUP)) && BENCH_SAMPLES+=("$_BENCH_US")
        done
        return 0
}

# bench_samples_from FILE: samples written by a timing hook, one "T0 T1" ($EPOCHREALTIME) per line;
# the warm-up lines are dropped.
bench_samples_from() {
        local t0 t1 n=0
        BENCH_SAMPLES=()
        [ -s "$1" ] || { BENCH_ERR="no samples in $1"; return 1; }
        while read -r t0 t1; do
                n=$((n + 1))
                ((n > BENCH_WARMUP)) && BENCH_SAMPLES+=($(($(_us "$t1") - $(_us "$t0"))))
        done <"$1"
        return 0
}

# "median min max" of BENCH_SAMPLES, in microseconds.
bench_stats() {
        printf '%s\n' "${BENCH_SAMPLES[@]}" | sort -n | awk '
                { v[NR] = $1 }
                END { m = (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2); print m, v[1], v[NR] }'
}

_ms() { awk -v u="$1" 'BEGIN { printf "%.1f", u / 1000 }'; }

# bench_row NAME [baseline]: a table row from BENCH_SAMPLES; "baseline" makes its median the reference.
bench_row() {
        local name=$1 med min max ratio="-"
        read -r med min max <<<"$(bench_stats)"
        [ "${2:-}" = baseline ] && BENCH_BASELINE=$med
        if [ -n "$BENCH_BASELINE" ] && [ "$BENCH_BASELINE" -gt 0 ]; then
                ratio=$(awk -v a="$med" -v b="$BENCH_BASELINE" 'BEGIN { printf "%.2fx", a / b }')
        fi
        BENCH_TABLE+=("| $name | $(_ms "$med") | $(_ms "$min") | $(_ms "$max") | $ratio |")
        BENCH_LAST_MEDIAN=$med
}

# bench_note NAME TEXT: a row that could not be measured ("not landed", "failed: ...").
bench_note() { BENCH_TABLE+=("| $1 | $2 | | | |"); }

# bench_measure NAME KIND ARGS...: KIND is cmd or runc; records a row or a failure note.
bench_measure() {
        local name=$1 kind=$2
        shift 2
        if "bench_$kind" "$@"; then
                bench_row "$name"
        else
                bench_note "$name" "failed: ${BENCH_ERR//|/\\|}"
        fi
}

bench_print() {
        echo "| measurement (${BENCH_RUNS} runs after ${BENCH_WARMUP} warm-up) | median ms | min ms | max ms | vs baseline |"
        echo "|---|---:|---:|---:|---:|"
        printf '%s\n' "${BENCH_TABLE[@]}"
}

# A createRuntime hook that times `gpu-cli configure` alone, in its real place (the container's init
# is waiting, its namespaces exist).  Args: OUTFILE GPU_CLI ROOTFS [CONFIGURE-OPTIONS...]; the
# global options for gpu-cli come from $BENCH_CLI_GLOBAL (space separated) at creation time.
bench_write_configure_hook() {
        cat >"$1" <<EOF
#!/bin/bash
out=\$1 cli=\$2 rootfs=\$3
shift 3
state=\$(cat)
[[ \$state =~ \"pid\":[[:space:]]*([0-9]+) ]] || { echo "timing hook: no pid in the state" >&2; exit 1; }
t0=\$EPOCHREALTIME
"\$cli" ${BENCH_CLI_GLOBAL:-} configure --pid=\${BASH_REMATCH[1]} "\$@" "\$rootfs" || exit
t1=\$EPOCHREALTIME
echo "\$t0 \$t1" >>"\$out"
EOF
        chmod 755 "$1"
}

# bench_rss CMD...: peak RSS in KiB of the largest process CMD (or a child it waited for) had.
bench_rss() {
        local time_bin
        time_bin=${GH_TIME:-$(command -v /usr/bin/time 2>/dev/null)}
        if [ -n "$time_bin" ] && [ -x "$time_bin" ]; then
                "$time_bin" -f %M -o "$T/.rss" "$@" </dev/null >/dev/null 2>&1 || return 1
        else
                "$GH_PYTHON" -c 'import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)
open(sys.argv[1], "w").write("%d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(rc)' "$T/.rss" "$@" || return 1
        fi
        tail -n 1 "$T/.rss"
}

# bench_runc_baselines ROOTFS: the rows every start-up table is read against: `runc run /bin/true`
# without a hook (the baseline of the ratios) and with /bin/true as its createRuntime hook (what
# runc itself spends on any hook: fork, exec, state on stdin, wait).
bench_runc_baselines() {
        make_bundle "$T/plain" "$1" /bin/true
        if bench_runc "$T/plain"; then
                bench_row "runc run /bin/true, no hook (baseline)" baseline
        else
                bench_note "runc run /bin/true, no hook (baseline)" "failed: $BENCH_ERR"
        fi
        make_bundle "$T/truehook" "$1" /bin/true
        bundle_add_hook "$T/truehook" createRuntime /bin/true
        if bench_runc "$T/truehook"; then
                bench_row "runc run /bin/true, /bin/true as a createRuntime hook (runc's hook cost)"
        fi
}

# bench_interleave SPEC...: `runc run` of several bundles round-robin, so that slow drift of the
# machine hits every row alike, and so that a row can measure what a start costs right AFTER another
# kind of start (the NVML after-effect: the driver's teardown when an NVML client exits slows the next
# start).  SPEC is NAME:BUNDLE or NAME:BUNDLE:BEFORE, BEFORE a command run outside the timing before
# each of that row's starts.  Runs ${GH_BENCH_RUNS:-21} rounds after BENCH_WARMUP; samples go to
# BENCH_IL[NAME] (microseconds, blank separated), failures to BENCH_IL_ERR[NAME].  Rows: bench_il_row.
declare -gA BENCH_IL=() BENCH_IL_ERR=()
BENCH_IL_RUNS=${GH_BENCH_RUNS:-21}
bench_interleave() {
        local i spec name bundle before
        mkdir -p "$T_RUNC_ROOT"
        for spec in "$@"; do
                BENCH_IL[${spec%%:*}]=""
                BENCH_IL_ERR[${spec%%:*}]=""
        done
        for ((i = 0; i < BENCH_WARMUP + BENCH_IL_RUNS; i++)); do
                for spec in "$@"; do
                        IFS=: read -r name bundle before <<<"$spec"
                        [ -n "${BENCH_IL_ERR[$name]}" ] && continue
                        [ -n "$before" ] && { $before >/dev/null 2>&1 || true; }
                        _bench_run_once "$bundle" || { BENCH_IL_ERR[$name]=$_BENCH_RUN_ERR; continue; }
                        ((i >= BENCH_WARMUP)) && BENCH_IL[$name]+=" $_BENCH_US"
                done
        done
}

# bench_il_row NAME LABEL [baseline]: a table row from bench_interleave's samples of NAME.
bench_il_row() {
        if [ -n "${BENCH_IL_ERR[$1]:-}" ] || [ -z "${BENCH_IL[$1]:-}" ]; then
                bench_note "$2" "failed: ${BENCH_IL_ERR[$1]:-no samples}"
                return
        fi
        read -r -a BENCH_SAMPLES <<<"${BENCH_IL[$1]}"
        bench_row "$2" ${3:-}
}

# bench_print_il: the interleaved table, with the runs it was made of.
bench_print_il() {
        echo "| \`runc run /bin/true\`, interleaved (${BENCH_IL_RUNS} rounds after ${BENCH_WARMUP} warm-up) | median ms | min ms | max ms | vs baseline |"
        echo "|---|---:|---:|---:|---:|"
        printf '%s\n' "${BENCH_TABLE[@]}"
}

# bench_statecache_table CONFIG_ALL CONFIG_CACHE STATE_FILE: the driver-state cache table.  CONFIG_*
# are gpu-hook config files (the second names STATE_FILE as cli.state-file); rows: no hook (baseline),
# gpu-hook with all GPUs, gpu-hook + NVIDIA_REQUIRE_CUDA on a cold cache through NVML (an arch
# condition needs it; this start fills the cache), cuda>=12.0 on the warm cache, cuda>=12.0 on a cold
# cache (the CUDA version from libcuda, nothing saved), and a plain start right after each.  Uses
# $T/rootfs; resets BENCH_TABLE and the baseline.
bench_statecache_table() {
        local cfg=$1 cfg_cache=$2 state=$3
        BENCH_TABLE=() BENCH_BASELINE=""
        make_bundle "$T/il-plain" "$T/rootfs" /bin/true
        make_bundle "$T/il-all" "$T/rootfs" /bin/true
        bundle_add_hook "$T/il-all" createRuntime "$GPU_HOOK" "--config=$cfg" createRuntime
        bundle_set_env "$T/il-all" NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=compute,utility
        make_bundle "$T/il-cuda" "$T/rootfs" /bin/true
        bundle_add_hook "$T/il-cuda" createRuntime "$GPU_HOOK" "--config=$cfg_cache" createRuntime
        bundle_set_env "$T/il-cuda" NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=compute,utility \
                "NVIDIA_REQUIRE_CUDA=cuda>=12.0"
        make_bundle "$T/il-nvml" "$T/rootfs" /bin/true
        bundle_add_hook "$T/il-nvml" createRuntime "$GPU_HOOK" "--config=$cfg_cache" createRuntime
        bundle_set_env "$T/il-nvml" NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=compute,utility \
                "NVIDIA_REQUIRE_CUDA=cuda>=12.0,arch>=1.0"
        BENCH_STATE_FILE=$state
        _bench_clear_cache() { "$GPU_CLI" --state-file="$BENCH_STATE_FILE" cache clear; }
        bench_interleave base:"$T/il-plain" all:"$T/il-all" after-all:"$T/il-plain" \
                cold:"$T/il-nvml":_bench_clear_cache after-cold:"$T/il-plain" \
                warm:"$T/il-cuda" after-warm:"$T/il-plain" \
                cuda:"$T/il-cuda":_bench_clear_cache after-cuda:"$T/il-plain"
        bench_il_row base "no hook (baseline)" baseline
        bench_il_row all "gpu-hook, all GPUs, compute,utility"
        bench_il_row after-all "  no hook, right after the one above"
        bench_il_row warm "gpu-hook + NVIDIA_REQUIRE_CUDA=cuda>=12.0, warm driver-state cache"
        bench_il_row after-warm "  no hook, right after the one above"
        bench_il_row cold "gpu-hook + NVIDIA_REQUIRE_CUDA=cuda>=12.0,arch>=1.0, cold cache (NVML)"
        bench_il_row after-cold "  no hook, right after the one above (NVML after-effect)"
        bench_il_row cuda "gpu-hook + NVIDIA_REQUIRE_CUDA=cuda>=12.0, cold cache (libcuda, no NVML)"
        bench_il_row after-cuda "  no hook, right after the one above"
}
