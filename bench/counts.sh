#!/bin/bash
# What one container start's hook costs, in measures a loaded machine cannot move much: the hook's
# own process tree only (gpu-hook and the gpu-cli it runs, or cdi-hook), not runc.
#
#   bash bench/counts.sh [BUILD_DIR]        (as root; the fake driver, 2 GPUs)
#
# For each kind of bench/starts.sh (gpu-hook on a non-GPU container, the hook path, the hook path +
# NVIDIA_REQUIRE_CUDA on a warm cache, the CDI path's cdi-hook), the hook in its place in
# `runc run /bin/true`, wrapped in turn by:
#   - tests/helpers/timed-run: CPU time (user + system) and wall time of the hook and its children,
#     GH_COUNTS_STARTS starts (default 21) after 2 warm-up starts, kinds interleaved; medians;
#   - strace -f -c: system calls of the hook and its children, one start (the count, not strace's
#     timings, which are its own overhead);
#   - valgrind --tool=callgrind --trace-children=yes: user-space instructions per program, one start
#     (valgrind 3.19, Debian 12's, answers ENOSYS to openat2, open_tree, move_mount, mount_setattr,
#     fsopen and pidfd_open, so under it gpu-cli takes its fallbacks: the component walk and legacy
#     mounts; compare these counts with each other, and per function, not with a native run);
#   - GNU time -f %M: peak RSS (bench/starts.sh, bench_starts_rss), 5 starts (GH_COUNTS_RSS=0: none).
# GH_COUNTS_KINDS: the kinds (default "nongpu hook hook-req cdi"); GH_COUNTS_BASE (a build to
# compare with, in the same rounds), GH_COUNTS_KEEP, GH_COUNTS_IMAGE_LDCACHE below.
# Instructions and system calls do not depend on the load at all; CPU time a little (cache misses,
# frequency); wall time a lot.  Print, change, rerun, compare.
set -u
here=$(cd "$(dirname "$0")" && pwd)
export GH_SOURCE_DIR=${GH_SOURCE_DIR:-$(dirname "$here")}
BUILD=${1:-${GH_BUILD_DIR:-$GH_SOURCE_DIR/build}}
export GH_BUILD_DIR=$(cd "$BUILD" 2>/dev/null && pwd) || { echo "counts: no build dir $BUILD" >&2; exit 1; }
export GPU_CLI=$GH_BUILD_DIR/cli/gpu-cli GPU_HOOK=$GH_BUILD_DIR/hook/gpu-hook
. "$GH_SOURCE_DIR/tests/lib.sh"
. "$here/common.sh"
. "$here/starts.sh"
[ "$(id -u)" -eq 0 ] || { echo "counts: needs root (runc)" >&2; exit 1; }
STARTS=${GH_COUNTS_STARTS:-21}
read -r -a KINDS <<<"${GH_COUNTS_KINDS:-nongpu hook hook-req cdi}"

ROOT=${GH_COUNTS_ROOT:-}
if [ -z "$ROOT" ]; then
        ROOT=$T/drv
        bash "$GH_SOURCE_DIR/tests/fake-driver/make-root.sh" "$ROOT" >"$T/mkroot.log" 2>&1 ||
                { tail -n 3 "$T/mkroot.log" >&2; echo "counts: make-root.sh failed" >&2; exit 1; }
fi
make_busybox_rootfs "$T/rootfs-glibc" --glibc || exit 1
# GH_COUNTS_IMAGE_LDCACHE=FILE: the image's /etc/ld.so.cache (e.g. this host's, ~750 entries, where
# the test image's own has 8): what the ld cache merge costs on a full distribution image.
if [ -n "${GH_COUNTS_IMAGE_LDCACHE:-}" ]; then
        cp "$GH_COUNTS_IMAGE_LDCACHE" "$T/rootfs-glibc/etc/ld.so.cache" || exit 1
fi
BS_KINDS=(none nongpu hook hook-req hook-cold cdi cdi-hm cdi-cli)
bench_starts_prepare "$ROOT" "$T/rootfs-glibc" || exit 1

echo "# Per-start cost of the hooks, their own process tree ($(date -u +%Y-%m-%d))"
echo
bench_machine_info
echo

stage_of() { case ${1%~base} in cdi | cdi-hm | cdi-cli) echo createContainer ;; *) echo createRuntime ;; esac; }

# GH_COUNTS_BASE=BUILD_DIR: every kind also runs with that build's gpu-hook and gpu-cli ("KIND~base",
# same image, same rounds, interleaved), so a change is measured against what it changes in one run:
# the table gets the base's rows and the median of the per-round CPU differences.
if [ -n "${GH_COUNTS_BASE:-}" ]; then
        BASE=$(cd "$GH_COUNTS_BASE" && pwd) || exit 1
        for k in "${KINDS[@]}"; do
                b=$T/bs-b-$k~base
                rm -rf "$b" && cp -a "${BR_BUNDLE[$k]}" "$b"
                "$GH_PYTHON" - "$b/config.json" "$GH_BUILD_DIR" "$BASE" <<'PY'
import json, sys
path, new, old = sys.argv[1:]
c = json.load(open(path))
for stage in c.get("hooks", {}).values():
    for h in stage:
        h["path"] = h["path"].replace(new, old)
        args = []
        for a in h.get("args", []):
            a = a.replace(new, old)
            if a.startswith("--config="):
                conf = a[len("--config="):]
                text = open(conf).read().replace(new, old)
                open(conf + ".base", "w").write(text)
                a = "--config=" + conf + ".base"
            args.append(a)
        h["args"] = args
json.dump(c, open(path, "w"), indent=2)
PY
                BR_BUNDLE[$k~base]=$b BR_PREP[$k~base]=${BR_PREP[$k]}
                BS_LABEL[$k~base]="${BS_LABEL[$k]} — base build"
        done
        read -r -a KINDS <<<"$(for k in "${KINDS[@]}"; do printf '%s %s~base ' "$k" "$k"; done)"
fi

# wrap KIND NAME WRAPPER...: a copy of KIND's bundle whose hook runs under WRAPPER.
wrap() {
        local k=$1 name=$2
        shift 2
        rm -rf "$T/cnt-$name"
        cp -a "${BR_BUNDLE[$k]}" "$T/cnt-$name"
        bundle_edit "$T/cnt-$name" '
stage, wrapper = args[0], args[1:]
for h in c["hooks"][stage]:
    h["args"] = wrapper + [h["path"]] + h["args"][1:]
    h["path"] = wrapper[0]' "$(stage_of "$k")" "$@"
}

# ---- CPU and wall time ---------------------------------------------------------------------------
declare -A CPU=() WALL=() CPUR=()
if [ -x "$BENCH_TIMED_RUN" ]; then
        for k in "${KINDS[@]}"; do wrap "$k" "t-$k" "$BENCH_TIMED_RUN" -o "$T/cnt-$k.t" --; done
        for ((r = 0; r < STARTS + 2; r++)); do
                # Odd rounds run the kinds backwards: no kind always follows the same one.
                order=("${KINDS[@]}")
                if ((r % 2)); then
                        order=()
                        for ((i = ${#KINDS[@]} - 1; i >= 0; i--)); do order+=("${KINDS[i]}"); done
                fi
                for k in "${order[@]}"; do
                        ${BR_PREP[$k]} >/dev/null 2>&1
                        read -r -t 0.2 -u "${_BENCH_PAUSE_FD:-0}" _ 2>/dev/null || sleep 0.2
                        rm -f "$T/cnt-$k.t"
                        _bench_run_once "$T/cnt-t-$k" || { echo "counts: $k: $_BENCH_RUN_ERR" >&2; continue; }
                        read -r w c _ <"$T/cnt-$k.t" || continue
                        ((r >= 2)) && WALL[$k]+=" $w" CPU[$k]+=" $c" CPUR[$k]+=" $r:$c"
                done
        done
fi

# ---- system calls --------------------------------------------------------------------------------
declare -A SYS=() SYSTOP=()
if have_cmd strace; then
        for k in "${KINDS[@]}"; do
                wrap "$k" "s-$k" "$(command -v strace)" -f -c -U name,calls -o "$T/cnt-$k.strace"
                ${BR_PREP[$k]} >/dev/null 2>&1
                _bench_run_once "$T/cnt-s-$k" || { echo "counts: strace $k: $_BENCH_RUN_ERR" >&2; continue; }
                SYS[$k]=$(awk '$1 == "total" { print $2 }' "$T/cnt-$k.strace")
                SYSTOP[$k]=$(awk '$2 ~ /^[0-9]+$/ && $1 != "total" { print $2, $1 }' "$T/cnt-$k.strace" |
                        sort -rn | head -n 8 | awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $1 }')
        done
fi

# ---- instructions --------------------------------------------------------------------------------
declare -A INS=() INSBY=()
if have_cmd valgrind; then
        for k in "${KINDS[@]}"; do
                rm -rf "$T/cg-$k" && mkdir -p "$T/cg-$k"
                wrap "$k" "c-$k" "$(command -v valgrind)" --tool=callgrind -q --trace-children=yes \
                        "--callgrind-out-file=$T/cg-$k/out.%p"
                ${BR_PREP[$k]} >/dev/null 2>&1
                _bench_run_once "$T/cnt-c-$k" || { echo "counts: callgrind $k: $_BENCH_RUN_ERR" >&2; continue; }
                read -r INS[$k] INSBY[$k] < <(
                        for f in "$T/cg-$k"/out.*; do
                                cmd=$(sed -n 's/^cmd: *//p' "$f" | head -n 1)
                                tot=$(sed -n 's/^summary: *//p; s/^totals: *//p' "$f" | head -n 1)
                                set -- $cmd
                                name=$(basename "${1:-?}")
                                for w in "$@"; do case $w in configure | cdi-hook) name="$name $w" ;; esac; done
                                echo "${tot:-0} ${name// /_}"
                        done | awk '{ t += $1; by[$2] += $1 } END {
                                s = ""; for (p in by) s = s (s ? ";" : "") sprintf("%s=%.2fM", p, by[p] / 1e6)
                                printf "%d %s\n", t, s }')
        done
fi

echo "| hook, one start of \`runc run /bin/true\` | CPU ms (median of $STARTS) | wall ms (median) | Δ CPU vs base, per round (ms) | system calls | of them | instructions (M) | by program |"
echo "|---|---:|---:|---:|---:|---|---:|---|"
for k in "${KINDS[@]}"; do
        cpu=- wall=-
        if [ -n "${CPU[$k]:-}" ]; then
                BENCH_SAMPLES=(${CPU[$k]}); read -r m _ <<<"$(bench_stats)"; cpu=$(awk -v u="$m" 'BEGIN { printf "%.2f", u / 1000 }')
                BENCH_SAMPLES=(${WALL[$k]}); read -r m _ <<<"$(bench_stats)"; wall=$(awk -v u="$m" 'BEGIN { printf "%.2f", u / 1000 }')
        fi
        ins=-
        [ -n "${INS[$k]:-}" ] && ins=$(awk -v i="${INS[$k]}" 'BEGIN { printf "%.2f", i / 1e6 }')
        d=-
        if [ -n "${CPUR[$k~base]:-}" ]; then
                d=$(awk -v a="${CPUR[$k]}" -v b="${CPUR[$k~base]}" 'BEGIN {
                        n = split(b, wb, " "); for (i = 1; i <= n; i++) { split(wb[i], p, ":"); base[p[1]] = p[2] }
                        n = split(a, wa, " "); m = 0
                        for (i = 1; i <= n; i++) { split(wa[i], p, ":"); if (p[1] in base) v[++m] = p[2] - base[p[1]] }
                        for (i = 2; i <= m; i++) { t = v[i]; for (j = i - 1; j > 0 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
                        if (m) printf "%+.2f", ((m % 2) ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2) / 1000; else print "-" }')
        fi
        echo "| ${BS_LABEL[$k]} | $cpu | $wall | $d | ${SYS[$k]:--} | ${SYSTOP[$k]:-} | $ins | ${INSBY[$k]//_/ } |"
done
echo
# GH_COUNTS_KEEP=DIR: the strace summaries and callgrind files stay there (callgrind_annotate them).
if [ -n "${GH_COUNTS_KEEP:-}" ]; then
        mkdir -p "$GH_COUNTS_KEEP" && cp -a "$T"/cnt-*.strace "$T"/cg-* "$GH_COUNTS_KEEP"/ 2>/dev/null
fi
if [ "${GH_COUNTS_RSS:-1}" != 0 ]; then
        bench_starts_rss "${GH_BENCH_RSS_RUNS:-5}"
fi
