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

# timed-run (tests/helpers/timed-run.c): when it is there, every timed start also reports the CPU
# time (user + system) of runc and everything it waited for: the hooks, the container's init.
BENCH_TIMED_RUN=${GH_TIMED_RUN:-}
for _f in "${GH_BUILD_DIR:-}/tests/helpers/timed-run" "${KIT:-}/bin/timed-run"; do
        [ -z "$BENCH_TIMED_RUN" ] && [ -x "$_f" ] && BENCH_TIMED_RUN=$_f
done
unset _f

# _bench_run_once BUNDLE: one timed `runc run` of the bundle (the container is deleted outside the
# timing).  Sets _BENCH_US to the wall time taken and _BENCH_CPU_US to its CPU time (empty without
# timed-run), or _BENCH_RUN_ERR and returns 1.
_bench_run_once() {
        local t0 t1 id rc w c
        _gh_next_id bench
        id=$RUN_ID
        _BENCH_CPU_US=
        if [ -n "$BENCH_TIMED_RUN" ]; then
                "$BENCH_TIMED_RUN" -t "$GH_RUN_TIMEOUT" -o "$T/.bench.t" -- "$RUNC" --root "$T_RUNC_ROOT" run -b "$1" "$id" \
                        </dev/null >/dev/null 2>"$T/.bench.err"
                rc=$?
                read -r w c _ <"$T/.bench.t" 2>/dev/null || { w=0 c=; }
        else
                t0=$EPOCHREALTIME
                timeout -k 5 "$GH_RUN_TIMEOUT" "$RUNC" --root "$T_RUNC_ROOT" run -b "$1" "$id" \
                        </dev/null >/dev/null 2>"$T/.bench.err"
                rc=$?
                t1=$EPOCHREALTIME
                w=$(($(_us "$t1") - $(_us "$t0"))) c=
        fi
        "$RUNC" --root "$T_RUNC_ROOT" delete -f "$id" >/dev/null 2>&1
        if [ $rc -ne 0 ]; then
                # runc wraps a hook's message in its own; keep the hook's words.
                _BENCH_RUN_ERR="runc run exit $rc: $(tr '\n' ' ' <"$T/.bench.err" | sed 's/.*stderr: //' | head -c 200)"
                return 1
        fi
        _BENCH_US=$w _BENCH_CPU_US=$c
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
# global options for gpu-cli come from $BENCH_CLI_GLOBAL (space separated) at creation time, and
# $BENCH_CLI_WRAP (a command and its words, e.g. GNU time) is put in front of gpu-cli.
bench_write_configure_hook() {
        cat >"$1" <<EOF
#!/bin/bash
out=\$1 cli=\$2 rootfs=\$3
shift 3
state=\$(cat)
[[ \$state =~ \"pid\":[[:space:]]*([0-9]+) ]] || { echo "timing hook: no pid in the state" >&2; exit 1; }
t0=\$EPOCHREALTIME
${BENCH_CLI_WRAP:-} "\$cli" ${BENCH_CLI_GLOBAL:-} configure --pid=\${BASH_REMATCH[1]} "\$@" "\$rootfs" || exit
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

# ---- Rounds in a fresh random order ------------------------------------------------------------
# Order and spacing move a container start by more than what gpu-hook adds (a start right after one
# that used NVML is ~20 ms slower on the GPU machine; back-to-back starts are faster than spaced
# ones), so every start-up comparison runs in rounds: each round runs every kind once, in a new
# random order, with the same pause before every start.  The order comes from a seeded generator
# (GH_BENCH_SEED; printed, so a run can be repeated); the pause (GH_BENCH_PAUSE seconds, default
# 0.3) is measured from the end of one start to the beginning of the next, and a kind's preparation
# (a fresh copy of its rootfs, clearing a cache) happens inside it, never inside the timing.
#
#   bench_kind NAME BUNDLE [PREP [AFTER]]   register a kind; PREP is a command run before each of its
#                                          starts; AFTER=K: the kind runs right after K in every round
#                                          (same pause), to measure what a start costs after K
#   bench_rounds [ROUNDS]                  BENCH_WARMUP + ROUNDS (default GH_BENCH_ROUNDS, 31) rounds
#   bench_rounds_row NAME LABEL            a row of BENCH_RT: median, p90, min, the difference to the
#                                          base kind (BENCH_BASE_KIND, default "none") as the median of
#                                          the per-round differences and as the difference of medians
#   bench_rounds_print                     the table, with seed, rounds and pause
# Samples: BR_S[NAME] = " ROUND:WALL_US:CPU_US..." (CPU "-" without timed-run); a kind that fails stops (BR_ERR[NAME] says why).
BENCH_ROUNDS=${GH_BENCH_ROUNDS:-31}
BENCH_PAUSE=${GH_BENCH_PAUSE:-0.3}
BENCH_SEED=${GH_BENCH_SEED:-}
BENCH_BASE_KIND=none
declare -gA BR_BUNDLE=() BR_PREP=() BR_AFTER=() BR_S=() BR_ERR=()
BR_KINDS=()
BENCH_RT=()
_BENCH_LAST_END=

bench_kind() {
        BR_KINDS+=("$1")
        BR_BUNDLE[$1]=$2 BR_PREP[$1]=${3:-} BR_AFTER[$1]=${4:-} BR_S[$1]="" BR_ERR[$1]=""
}

# bench_rounds_reset: forget every kind and sample (a new table).
bench_rounds_reset() {
        BR_KINDS=() BENCH_RT=()
        BR_BUNDLE=() BR_PREP=() BR_AFTER=() BR_S=() BR_ERR=()
}

# bench_seed: choose the seed once per run (unless GH_BENCH_SEED gave it); every table of the run
# uses it.  Call it in the main shell, not in $(...).
bench_seed() { [ -n "$BENCH_SEED" ] || BENCH_SEED=$(( (RANDOM << 15 | RANDOM) % 1000000 )); }

# _bench_pause: sleep until BENCH_PAUSE seconds have passed since the previous start ended.  read -t
# on a FIFO nobody writes to sleeps without starting a process.
_bench_pause() {
        local left
        if [ -z "${_BENCH_PAUSE_FD:-}" ]; then
                mkfifo "$T/.bench-pause" && exec {_BENCH_PAUSE_FD}<>"$T/.bench-pause"
        fi
        [ -n "$_BENCH_LAST_END" ] || return 0
        left=$(awk -v p="$BENCH_PAUSE" -v a="$_BENCH_LAST_END" -v b="$EPOCHREALTIME" \
                'BEGIN { l = p - (b - a); printf "%.6f", (l > 0) ? l : 0 }')
        [ "$left" = 0.000000 ] || read -r -t "$left" -u "$_BENCH_PAUSE_FD" _ || true
}

_bench_round_one() {
        local k=$1 r=$2
        [ -z "${BR_ERR[$k]}" ] || return 0
        if [ -n "${BR_PREP[$k]}" ] && ! ${BR_PREP[$k]} >"$T/.bench-prep.err" 2>&1; then
                BR_ERR[$k]="preparation '${BR_PREP[$k]}' failed: $(head -c 200 "$T/.bench-prep.err" | tr '\n' ' ')"
                return 0
        fi
        _bench_pause
        if ! _bench_run_once "${BR_BUNDLE[$k]}"; then
                BR_ERR[$k]="round $r: $_BENCH_RUN_ERR"
        elif ((r >= BENCH_WARMUP)); then
                BR_S[$k]+=" $r:$_BENCH_US:${_BENCH_CPU_US:--}"
        fi
        _BENCH_LAST_END=$EPOCHREALTIME
}

bench_rounds() {
        local rounds=${1:-$BENCH_ROUNDS} r i j t k f
        local -a top=() order
        mkdir -p "$T_RUNC_ROOT"
        bench_seed
        RANDOM=$BENCH_SEED
        for k in "${BR_KINDS[@]}"; do [ -n "${BR_AFTER[$k]}" ] || top+=("$k"); done
        BENCH_ROUNDS_RUN=$rounds
        for ((r = 0; r < BENCH_WARMUP + rounds; r++)); do
                order=("${top[@]}")
                for ((i = ${#order[@]} - 1; i > 0; i--)); do
                        j=$((RANDOM % (i + 1)))
                        t=${order[i]} order[i]=${order[j]} order[j]=$t
                done
                for k in "${order[@]}"; do
                        _bench_round_one "$k" "$r"
                        for f in "${BR_KINDS[@]}"; do
                                [ "${BR_AFTER[$f]}" = "$k" ] && _bench_round_one "$f" "$r"
                        done
                done
        done
}

# _bench_rounds_stats NAME: "n median p90 min max dround dmed cpu dcpu lo hi" in microseconds.  d*:
# against the base kind, dround the median of the per-round differences, dmed the difference of the
# medians; cpu the median CPU time, dcpu the median of the per-round CPU differences ("-": not
# measured).  p90 is the nearest-rank 90th percentile.  lo..hi: a 95 % confidence interval for the
# median per-round difference that assumes nothing about its distribution (order statistics: the
# k-th smallest and k-th largest difference, k the largest with P(Binomial(n, 1/2) < k) <= 0.025;
# "-" below 6 rounds).  An interval that holds a target on both sides says the rounds cannot tell.
_bench_rounds_stats() {
        awk -v s="${BR_S[$1]}" -v b="${BR_S[$BENCH_BASE_KIND]:-}" '
                function med(a, n) { return (n % 2) ? a[(n + 1) / 2] : int((a[n / 2] + a[n / 2 + 1]) / 2) }
                function sortn(a, n,   i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j > 0 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t } }
                BEGIN {
                        n = split(s, w, " "); nb = split(b, wb, " ")
                        for (i = 1; i <= nb; i++) { split(wb[i], p, ":"); base[p[1]] = p[2]; bcpu[p[1]] = p[3]; bv[i] = p[2] }
                        nd = 0; nc = 0; ncd = 0
                        for (i = 1; i <= n; i++) {
                                split(w[i], p, ":"); v[i] = p[2]
                                if (p[3] != "-") c[++nc] = p[3]
                                if (p[1] in base) {
                                        d[++nd] = p[2] - base[p[1]]
                                        if (p[3] != "-" && bcpu[p[1]] != "-") cd[++ncd] = p[3] - bcpu[p[1]]
                                }
                        }
                        if (n == 0) { print "0 - - - - - - - - - -"; exit }
                        sortn(v, n); sortn(d, nd); sortn(bv, nb); sortn(c, nc); sortn(cd, ncd)
                        k = int(0.9 * n); if (k < 0.9 * n) k++; if (k < 1) k = 1
                        lo = hi = "-"
                        if (nd >= 6) {
                                # P(X <= j) for X ~ Binomial(nd, 1/2), until it passes 0.025
                                pj = 0.5 ^ nd; cdf = pj; ci = 0
                                for (j = 0; cdf <= 0.025; j++) { ci = j + 1; pj = pj * (nd - j) / (j + 1); cdf += pj }
                                if (ci >= 1) { lo = d[ci]; hi = d[nd + 1 - ci] }
                        }
                        printf "%d %d %d %d %d %s %s %s %s %s %s\n", n, med(v, n), v[k], v[1], v[n],
                                nd ? med(d, nd) : "-", nb ? med(v, n) - med(bv, nb) : "-",
                                nc ? med(c, nc) : "-", ncd ? med(cd, ncd) : "-", lo, hi
                }'
}

_bench_signed_ms() {
        [ "$1" = - ] && { echo -; return; }
        awk -v u="$1" 'BEGIN { printf "%+.2f", u / 1000 }'
}

bench_rounds_row() {
        local n med p90 min max dr dm cpu dcpu lo hi ci
        if [ -z "${BR_S[$1]:-}" ]; then
                BENCH_RT+=("| $2 | failed: ${BR_ERR[$1]:-no samples} | | | | | | | | |")
                return
        fi
        # GH_BENCH_SAMPLES=FILE: every sample too ("KIND ROUND:µs:CPUµs ..."), to pool the rounds of
        # several runs (bench/pool.py).
        [ -n "${GH_BENCH_SAMPLES:-}" ] && echo "$1 ${BR_S[$1]}" >>"$GH_BENCH_SAMPLES"
        read -r n med p90 min max dr dm cpu dcpu lo hi <<<"$(_bench_rounds_stats "$1")"
        [ "$1" = "$BENCH_BASE_KIND" ] && dr=- dm=- dcpu=- lo=- hi=-
        ci=-
        [ "$lo" != - ] && ci="$(_bench_signed_ms "$lo") .. $(_bench_signed_ms "$hi")"
        BENCH_RT+=("| $2 | $(_ms "$med") | $(_ms "$p90") | $(_ms "$min") | $(_bench_signed_ms "$dr") | $ci | $(_bench_signed_ms "$dm") | $([ "$cpu" = - ] && echo - || _ms "$cpu") | $(_bench_signed_ms "$dcpu") | $n |")
        [ -n "${BR_ERR[$1]}" ] && BENCH_RT+=("| $2: stopped | ${BR_ERR[$1]//|/\\|} | | | | | | | | |")
        BENCH_LAST_MEDIAN=$med
}

bench_rounds_print() {
        echo "| \`runc run /bin/true\` (seed $BENCH_SEED; $BENCH_ROUNDS_RUN rounds after $BENCH_WARMUP warm-up, each round every kind once in a new random order, ${BENCH_PAUSE} s pause before every start) | median ms | p90 ms | min ms | Δ vs no hook, median of per-round differences (ms) | 95 % interval of that Δ (ms) | Δ, difference of medians (ms) | CPU ms (median) | Δ CPU, per-round (ms) | n |"
        echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        printf '%s\n' "${BENCH_RT[@]}"
}

# Compatibility with the older interface: bench_interleave SPEC... (NAME:BUNDLE[:BEFORE]) in
# shuffled rounds; a NAME starting "after-" runs right after the spec before it.  Rows: bench_il_row.
declare -gA BENCH_IL=() BENCH_IL_ERR=()
BENCH_IL_RUNS=${GH_BENCH_RUNS:-21}
bench_interleave() {
        local spec name bundle before prev=""
        bench_rounds_reset
        for spec in "$@"; do
                IFS=: read -r name bundle before <<<"$spec"
                if [[ $name == after-* ]] && [ -n "$prev" ]; then
                        bench_kind "$name" "$bundle" "$before" "$prev"
                else
                        bench_kind "$name" "$bundle" "$before"
                        prev=$name
                fi
        done
        bench_rounds "$BENCH_IL_RUNS"
        for spec in "$@"; do
                name=${spec%%:*}
                BENCH_IL[$name]=$(for w in ${BR_S[$name]}; do w=${w#*:}; printf ' %s' "${w%%:*}"; done)
                BENCH_IL_ERR[$name]=${BR_ERR[$name]}
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
        echo "| \`runc run /bin/true\`, shuffled rounds (seed $BENCH_SEED, ${BENCH_IL_RUNS} rounds after ${BENCH_WARMUP} warm-up, ${BENCH_PAUSE} s pause) | median ms | min ms | max ms | vs baseline |"
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
