# shellcheck shell=bash
# The container-start comparison of issue 25, one implementation for the CPU machine (bench/bench.sh,
# fake driver) and the GPU machine (tests/gpu/bench.sh, the real driver).  Source after
# bench/common.sh.
#
#   bench_machine_info                     markdown lines: host, CPU, memory, kernel, cgroups, runc,
#                                          gpu-cli, load
#   bench_starts ROOT TEMPLATE [LDCACHE]   the kinds below in shuffled rounds (bench_rounds), a fresh
#                                          copy of TEMPLATE as every start's rootfs; prints the table
#   bench_starts_prepare ROOT TEMPLATE [LDCACHE]  the same kinds and bundles, nothing started
#   bench_starts_phases                    medians of the phases gpu-hook and cdi-hook logged on
#                                          those starts (warm-up starts left out)
#   bench_starts_rss [RUNS]                peak RSS per kind, GNU time around the hook in its place
#
# Kinds (runc run /bin/true, GPU kinds: NVIDIA_VISIBLE_DEVICES=all, compute,utility):
#   none        no hook (the base of the differences)
#   truehook    /bin/true as createRuntime hook: what runc spends on any hook
#   sleephook   (not in the default list) /bin/sleep $GH_BENCH_SLEEP (default 0.0015) as createRuntime
#               hook: a hook that only takes as long as gpu-hook's run.  hook minus sleephook is what
#               gpu-hook's work costs after the hook has exited (its mounts, device program, files)
#   nongpu      gpu-hook on a container that asks for no GPU
#   hook        gpu-hook, all GPUs
#   hook-req    gpu-hook + NVIDIA_REQUIRE_CUDA=cuda>=12.0, warm driver-state cache
#   hook-cold   the same on a cold cache (cleared before each start, outside the timing)
#   cdi         `gpu-cli cdi generate`'s spec applied by tests/helpers/cdi-apply.py (nvidia.com/gpu=all):
#               runc makes its device nodes and bind mounts, `gpu-cli cdi-hook` runs as its
#               createContainer hook
#   cdi-hm      the spec of `gpu-cli cdi generate --mounts=hook`: runc makes the nodes (and the two
#               daemon sockets' mounts), cdi-hook attaches the driver's files itself
#   cdi-cli     the default spec written with --hook-path=gpu-cli: its hook run by gpu-cli itself, as
#               before gpu-cdi-hook (a static program) became the default, in the same rounds
#   cdi-stdin   the default spec, its hook given --state-from-stdin: it waits for runc's write of the
#               state instead of finding the bundle itself (the hook's behaviour before)
#   cdi-true, cdi-cat  (not in the default list) the same spec, its hook /bin/true or cat (>/dev/null):
#               what a createContainer hook costs under runc when it reads the state on stdin or not
#   cdi-runc    (not in the default list; bench/profile.sh) the same spec with its hook removed: what
#               runc's part of the CDI path costs
# Each kind has its own gpu-hook configuration and log file, so the logs say which start was which.

BENCH_REQ='cuda>=12.0'
declare -gA BS_LABEL=(
        [none]="no hook"
        [truehook]="/bin/true as createRuntime hook (runc's cost of any hook)"
        [sleephook]="/bin/sleep ${GH_BENCH_SLEEP:-0.0015} as createRuntime hook (a hook as long as ours, doing nothing)"
        [nongpu]="gpu-hook, container asks for no GPU"
        [hook]="gpu-hook, all GPUs (hook path)"
        [hook-req]="gpu-hook, all GPUs + NVIDIA_REQUIRE_CUDA=$BENCH_REQ, warm cache"
        [hook-cold]="gpu-hook, all GPUs + NVIDIA_REQUIRE_CUDA=$BENCH_REQ, cold cache"
        [cdi]="CDI spec (runc applies it; gpu-cdi-hook, i.e. gpu-cli cdi-hook, as createContainer hook)"
        [cdi-cli]="the same spec, its hook run by gpu-cli itself (--hook-path=gpu-cli, the default before)"
        [cdi-hm]="CDI spec --mounts=hook (cdi-hook makes the driver's mounts)"
        [cdi-runc]="CDI spec without its hook: runc's part alone (nodes, mounts, env)"
        [cdi-stdin]="the same spec, its hook waiting for the state on stdin (--state-from-stdin, as before)"
        [cdi-true]="the same spec, its hook replaced by /bin/true (reads nothing on stdin)"
        [cdi-cat]="the same spec, its hook replaced by cat (reads the state on stdin, as every CDI hook does)"
        [hook-base]="gpu-hook, all GPUs, the earlier build in GH_BENCH_BASE_HOOK"
        [hook-base-cold]="gpu-hook + NVIDIA_REQUIRE_CUDA=$BENCH_REQ, cold cache, the earlier build"
)
BS_KINDS=(none truehook nongpu hook hook-req hook-cold cdi cdi-stdin cdi-hm cdi-cli)
# GH_BENCH_BASE_HOOK=FILE: one more kind, hook-base, the hook path with that gpu-hook (in-process
# configure, so only the binary matters), in the same rounds: a change measured against what it
# changes, on one lease.
[ -n "${GH_BENCH_BASE_HOOK:-}" ] && BS_KINDS+=(hook-base hook-base-cold)
# GH_BENCH_KINDS="none cdi ...": only these kinds (none, the baseline, is always kept).
if [ -n "${GH_BENCH_KINDS:-}" ]; then
        read -r -a _bs_want <<<"$GH_BENCH_KINDS"
        BS_KINDS=(none)
        for _k in "${_bs_want[@]}"; do [ "$_k" != none ] && BS_KINDS+=("$_k"); done
fi

bench_machine_info() {
        local cg=v1 gpu
        [ -f /sys/fs/cgroup/cgroup.controllers ] && cg=v2
        [ "$cg" = v1 ] && [ -f /sys/fs/cgroup/unified/cgroup.controllers ] && cg="v1 + v2 at /sys/fs/cgroup/unified (hybrid)"
        gpu=$(timeout 30 nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sort | uniq -c |
                sed 's/^ *//' | tr '\n' ';')
        echo "- machine: $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME"), kernel $(uname -r), $(nproc) cores ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)"
        echo "- GPUs: ${gpu:-none (fake driver or no driver)}; cgroup $cg"
        echo "- $("$RUNC" --version | head -n 1); $("$GPU_CLI" --version 2>&1 | head -n 1); commit ${GH_BENCH_COMMIT:-$(git -C "${GH_SOURCE_DIR:-.}" rev-parse --short HEAD 2>/dev/null || echo unknown)}"
        echo "- load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
}

# _bs_fresh KIND: a new copy of the template as KIND's rootfs (the hooks write into it: mount points,
# links, /etc/ld.so.cache), as an engine gives every container a fresh one.  The used copy is moved
# aside, not deleted: on ext4, creating files right after deleting many makes the inode allocator
# scan for recently deleted inodes (__ext4_new_inode -> recently_deleted was 40% of gpu-cli's CPU
# in perf when each start deleted the previous rootfs), which would charge the kinds that create
# mount points and links for the benchmark's own clean-up.  Everything goes with $T at the end.
_bs_fresh() {
        mkdir -p "$T/bs-used"
        if [ -e "$T/bs-r-$1" ]; then
                BS_USED=$((${BS_USED:-0} + 1))
                mv "$T/bs-r-$1" "$T/bs-used/$1-$BS_USED" || return 1
        fi
        cp -a "$BS_TEMPLATE" "$T/bs-r-$1"
}
_bs_prep_cold() { _bs_fresh "${1:-hook-cold}" && "$GPU_CLI" --state-file="$T/bs-state-cold/driver-state.json" cache clear; }

# _bs_config KIND STATE_FILE: gpu-hook's configuration for KIND.
_bs_config() {
        "$GH_PYTHON" - "$T/bs-$1.json" "$BS_ROOT" "$GPU_CLI" "$2" "$T/bs-$1.log" "${BS_LDCACHE:-}" <<'PY'
import json, sys
path, root, cli, state, log, ldcache = sys.argv[1:]
c = {"cli": {"root": root, "path": cli, "state-file": state}, "log": {"file": log}}
if ldcache:
    c["cli"]["ldcache"] = ldcache
json.dump(c, open(path, "w"))
PY
}

# bench_starts ROOT TEMPLATE [LDCACHE]
bench_starts() {
        local k
        bench_starts_prepare "$@" || return 1
        bench_rounds
        for k in "${BS_KINDS[@]}"; do bench_rounds_row "$k" "${BS_LABEL[$k]}"; done
        bench_rounds_print
}

# bench_starts_prepare ROOT TEMPLATE [LDCACHE]: the bundles and kinds of BS_KINDS (bench_kind), the
# warm cache filled; nothing is started.  bench/counts.sh uses them one start at a time.
bench_starts_prepare() {
        local k b cdi_err="" gpu_env=(NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=compute,utility)
        BS_ROOT=$1 BS_TEMPLATE=$2 BS_LDCACHE=${3:-}
        BS_APPLY=${BS_APPLY:-$GH_SOURCE_DIR/tests/helpers/cdi-apply.py}
        BS_SPEC=$T/bs-spec.json
        bench_rounds_reset
        mkdir -p "$T/bs-state-warm" "$T/bs-state-cold"
        for k in "${BS_KINDS[@]}"; do
                b=$T/bs-b-$k
                _bs_fresh "$k" || return 1
                make_bundle "$b" "$T/bs-r-$k" /bin/true || return 1
                case $k in
                truehook) bundle_add_hook "$b" createRuntime /bin/true ;;
                sleephook) bundle_add_hook "$b" createRuntime /bin/sleep "${GH_BENCH_SLEEP:-0.0015}" ;;
                nongpu | hook | hook-req | hook-cold | hook-base | hook-base-cold)
                        _bs_config "$k" "$T/bs-state-$(case $k in *cold) echo cold ;; *) echo warm ;; esac)/driver-state.json"
                        bundle_add_hook "$b" createRuntime "$(case $k in hook-base*) echo "$GH_BENCH_BASE_HOOK" ;; *) echo "$GPU_HOOK" ;; esac)" \
                                "--config=$T/bs-$k.json" createRuntime ;;
                esac
                case $k in
                hook | hook-base) bundle_set_env "$b" "${gpu_env[@]}" ;;
                hook-req | hook-cold | hook-base-cold) bundle_set_env "$b" "${gpu_env[@]}" "NVIDIA_REQUIRE_CUDA=$BENCH_REQ" ;;
                cdi | cdi-runc | cdi-hm | cdi-cli | cdi-true | cdi-cat | cdi-stdin)
                        local gen=("$GPU_CLI" "--root=$BS_ROOT") spec=$BS_SPEC extra=() log=cdi
                        [ -n "$BS_LDCACHE" ] && gen+=("--ldcache=$BS_LDCACHE")
                        [ $k = cdi-hm ] && spec=$T/bs-spec-hm.json extra=(--mounts=hook) log=cdi-hm
                        [ $k = cdi-cli ] && spec=$T/bs-spec-cli.json extra=("--hook-path=$GPU_CLI") log=cdi-cli
                        [ $k = cdi-stdin ] && spec=$T/bs-spec-stdin.json log=cdi-stdin
                        if ! "${gen[@]}" cdi generate "--output=$spec" --capabilities=compute,utility "${extra[@]}" >"$T/bs-gen.err" 2>&1; then
                                cdi_err="cdi generate: $(tail -n 1 "$T/bs-gen.err")"
                        else
                                _bs_cdi_log_arg "$spec" "$T/bs-$log.log"
                                "$GH_PYTHON" "$BS_APPLY" --spec "$spec" "$b" nvidia.com/gpu=all 2>"$T/bs-apply.err" ||
                                        cdi_err="cdi-apply.py: $(tail -n 1 "$T/bs-apply.err")"
                                [ $k = cdi-runc ] && bundle_edit "$b" 'c.get("hooks", {}).pop("createContainer", None)'
                                [ $k = cdi-stdin ] && bundle_edit "$b" 'h = c["hooks"]["createContainer"][0]; i = h["args"].index("cdi-hook"); h["args"].insert(i + 1, "--state-from-stdin")'
                                [ $k = cdi-true ] && bundle_edit "$b" 'c["hooks"]["createContainer"] = [{"path": "/bin/true", "args": ["true"]}]'
                                [ $k = cdi-cat ] && bundle_edit "$b" 'c["hooks"]["createContainer"] = [{"path": "/bin/cat", "args": ["cat"]}]'
                        fi ;;
                esac
                if [ $k = hook-cold ] || [ $k = hook-base-cold ]; then
                        bench_kind "$k" "$b" "_bs_prep_cold $k"
                else
                        bench_kind "$k" "$b" "_bs_fresh $k"
                fi
        done
        if [ -n "$cdi_err" ]; then
                for k in cdi cdi-runc cdi-hm cdi-cli cdi-true cdi-cat cdi-stdin; do [ -n "${BR_BUNDLE[$k]:-}" ] && BR_ERR[$k]=$cdi_err; done
        fi
        # The warm cache: filled once, the way the first start after boot (or `gpu-cli cache refresh`) does.
        local refresh=("$GPU_CLI" "--root=$BS_ROOT" "--state-file=$T/bs-state-warm/driver-state.json")
        [ -n "$BS_LDCACHE" ] && refresh+=("--ldcache=$BS_LDCACHE")
        "${refresh[@]}" cache refresh >/dev/null 2>"$T/bs-refresh.err" ||
                echo "bench: cache refresh failed: $(tail -n 1 "$T/bs-refresh.err")" >&2
        return 0
}

# _bs_cdi_log_arg SPEC LOG: when this gpu-cli's cdi-hook can log its phases (--log=FILE), the spec's
# hook gets that argument, so that its record of every start lands in LOG.
_bs_cdi_log_arg() {
        "$GPU_CLI" cdi-hook --help 2>&1 | grep -q -- '--log=' || return 0
        "$GH_PYTHON" - "$1" "$2" <<'PY'
import json, sys
path, log = sys.argv[1:]
s = json.load(open(path))
for h in s.get("containerEdits", {}).get("hooks", []):
    if "cdi-hook" in h.get("args", []):
        i = h["args"].index("cdi-hook")
        h["args"].insert(i + 1, "--log=" + log)
json.dump(s, open(path, "w"), indent=2)
PY
}

# bench_starts_phases: per kind, the median of each phase in its log (the first BENCH_WARMUP records,
# the warm-up starts, are left out; so are records of failed starts).
bench_starts_phases() {
        local k logs=()
        for k in "${BS_KINDS[@]}"; do
                [ -s "$T/bs-$k.log" ] && logs+=("$k=$T/bs-$k.log")
        done
        [ ${#logs[@]} -gt 0 ] || { echo "no hook logs"; return; }
        "$GH_PYTHON" - "$BENCH_WARMUP" "${logs[@]}" <<'PY'
import json, sys
warm = int(sys.argv[1])
def med(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
rows, keys = [], []
for arg in sys.argv[2:]:
    kind, path = arg.split("=", 1)
    recs = [json.loads(l) for l in open(path) if l.strip()][warm:]
    recs = [r for r in recs if r.get("result") in ("configured", "skipped", "ok")]
    phases = {}
    for r in recs:
        for k, v in (r.get("timings_us") or {}).items():
            phases.setdefault(k, []).append(v)
            if k not in keys:
                keys.append(k)
    prog = recs[0].get("program", "?") if recs else "?"
    rows.append((kind, prog, len(recs), {k: med(v) for k, v in phases.items()}))
# One row per phase, one column per kind; gpu-hook's phases, configure's own (configure.*), then
# cdi-hook's; "total" last.
keys = [k for k in keys if k != "total"] + ["total"]
print("| phase (median µs) | " + " | ".join("%s (%s, n=%d)" % (kind, prog, n) for kind, prog, n, _ in rows) + " |")
print("|---|" + "---:|" * len(rows))
for k in keys:
    print("| %s | %s |" % (k, " | ".join("%.0f" % ph[k] if k in ph else "" for _, _, _, ph in rows)))
PY
}

# _bs_wrap_hook BUNDLE OUT STAGE: the bundle's STAGE hook runs under GNU time, which appends the
# peak RSS (KiB) of the hook and everything it waited for to OUT.
_bs_wrap_hook() {
        bundle_edit "$1" '
tb, out, stage = args
for h in c["hooks"][stage]:
    h["args"] = [tb, "-a", "-f", "%M", "-o", out, h["path"]] + h["args"][1:]
    h["path"] = tb' "$BS_TIME" "$2" "$3"
}

# bench_starts_rss [RUNS]: RUNS (default 5) starts per kind with its hook under GNU time; max and
# median of the peak RSS.  GNU time reports the largest of the hook and the processes it waited for:
# for gpu-hook that is max(gpu-hook, gpu-cli configure, gpu-cli's NVML/libcuda child).  The row
# "gpu-cli configure alone" times configure in a hook of its own, so the two can be told apart.
bench_starts_rss() {
        local runs=${1:-5} k b i stage
        BS_TIME=${GH_TIME:-$(command -v /usr/bin/time 2>/dev/null)}
        [ -x "$BS_TIME" ] || { echo "no GNU time here: no RSS"; return; }
        echo "| hook (peak RSS over $runs starts, GNU time -f %M around the hook in its place) | max MiB | median MiB |"
        echo "|---|---:|---:|"
        for k in nongpu hook hook-req hook-cold cdi cdi-hm cdi-cli conf; do
                b=$T/bs-rss-$k
                rm -rf "$b" "$T/bs-rss-$k.kib"
                stage=createRuntime
                case $k in
                cdi | cdi-hm | cdi-cli) stage=createContainer ;;
                conf)
                        # gpu-cli configure alone, without gpu-hook around it.
                        _bs_fresh conf || continue
                        BENCH_CLI_GLOBAL="--root=$BS_ROOT${BS_LDCACHE:+ --ldcache=$BS_LDCACHE}" \
                                BENCH_CLI_WRAP="$BS_TIME -a -f %M -o $T/bs-rss-conf.kib" \
                                bench_write_configure_hook "$T/bs-time-conf"
                        make_bundle "$b" "$T/bs-r-conf" /bin/true
                        bundle_add_hook "$b" createRuntime "$T/bs-time-conf" "$T/bs-conf.samples" "$GPU_CLI" \
                                "$T/bs-r-conf" --device=all --compute --utility
                        ;;
                esac
                # Only the kinds this run prepared (GH_BENCH_KINDS may leave some out).
                [ $k = conf ] || [ -d "$T/bs-b-$k" ] || continue
                if [ $k != conf ]; then
                        cp -a "$T/bs-b-$k" "$b" && _bs_wrap_hook "$b" "$T/bs-rss-$k.kib" $stage
                fi
                for ((i = 0; i < runs; i++)); do
                        if [ $k = conf ]; then _bs_fresh conf; else ${BR_PREP[$k]}; fi >/dev/null 2>&1
                        _bench_run_once "$b" || { echo "| $k | failed: ${_BENCH_RUN_ERR//|/\\|} | |"; continue 2; }
                done
                sort -n "$T/bs-rss-$k.kib" | awk -v l="$([ $k = conf ] && echo "gpu-cli configure alone (all, compute,utility)" || echo "${BS_LABEL[$k]}")" '
                        { v[NR] = $1 } END { if (NR) printf "| %s | %.2f | %.2f |\n", l, v[NR] / 1024, v[int((NR + 1) / 2)] / 1024 }'
        done
}
