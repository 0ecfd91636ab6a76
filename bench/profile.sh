#!/bin/bash
# Where a GPU container start's time goes, the hook path against the CDI path, phase by phase.
#
#   bash bench/profile.sh [BUILD_DIR]        here, as root: the fake driver (2 GPUs)
#   bash tests/gpu/profile.sh                the GPU machine: the real driver (a wrapper around this)
#
# Markdown, in sections (each skipped with a note when its tool is missing):
#   1. phases: shuffled rounds (bench/starts.sh; GH_BENCH_ROUNDS, default 31) of no hook, the hook
#      path (all GPUs, compute,utility), the CDI path, and the CDI spec without its hook (runc's part
#      alone); wall and CPU time per kind, and the medians
#      of the phases gpu-hook (with gpu-cli configure's own, --timings-fd) and cdi-hook logged;
#   2. process start: /bin/true, gpu-hook --version, gpu-cli --version (fork, exec, dynamic loading,
#      exit; wall and CPU, timed-run), and the dynamic loader's own statistics (LD_DEBUG=statistics);
#   3. system calls per program for one start of each kind (strace -f, counts only: strace's
#      timings are its own overhead), the mount-related ones listed;
#   4. CPU per program per start (perf record over GH_PROFILE_STARTS starts, default 20, of each kind;
#      cpu-clock samples by command name);
#   5. instructions in gpu-cli configure and in cdi-hook, by function (valgrind --tool=callgrind);
#   6. teardown: a container started detached (`sleep`), then `runc kill KILL` until its init is
#      gone, then `runc delete`: what the extra mounts and device rules cost at exit.
# The driver root: GH_PROFILE_ROOT (default: a fake driver root made here), GH_PROFILE_LDCACHE.
set -u
here=$(cd "$(dirname "$0")" && pwd)
export GH_SOURCE_DIR=${GH_SOURCE_DIR:-$(dirname "$here")}
if [ -z "${GPU_CLI:-}" ] || [ -z "${GPU_HOOK:-}" ]; then
        BUILD=${1:-${GH_BUILD_DIR:-$GH_SOURCE_DIR/build}}
        GH_BUILD_DIR=$(cd "$BUILD" 2>/dev/null && pwd) || { echo "profile: no build dir $BUILD" >&2; exit 1; }
        export GH_BUILD_DIR GPU_CLI=$GH_BUILD_DIR/cli/gpu-cli GPU_HOOK=$GH_BUILD_DIR/hook/gpu-hook
fi
. "$GH_SOURCE_DIR/tests/lib.sh"
. "$here/common.sh"
. "$here/starts.sh"
[ "$(id -u)" -eq 0 ] || { echo "profile: needs root (runc)" >&2; exit 1; }
STARTS=${GH_PROFILE_STARTS:-20}

ROOT=${GH_PROFILE_ROOT:-}
LDCACHE=${GH_PROFILE_LDCACHE:-}
if [ -z "$ROOT" ]; then
        ROOT=$T/drv
        bash "$GH_SOURCE_DIR/tests/fake-driver/make-root.sh" "$ROOT" >"$T/mkroot.log" 2>&1 ||
                { tail -n 3 "$T/mkroot.log" >&2; echo "profile: make-root.sh failed" >&2; exit 1; }
fi
make_busybox_rootfs "$T/rootfs-glibc" --glibc || exit 1

echo "# Where the time goes: hook path and CDI path ($(date -u +%Y-%m-%d), driver root $ROOT)"
echo
bench_machine_info
echo

# ---- 1. phases ------------------------------------------------------------------------------------
echo "## 1. starts and the phases the hooks logged (medians, µs)"
echo
BS_KINDS=(none hook cdi cdi-runc)
bench_starts "$ROOT" "$T/rootfs-glibc" "$LDCACHE"
echo
bench_starts_phases
echo

# ---- 2. process start ---------------------------------------------------------------------------
echo "## 2. process start: fork, exec, dynamic loading, exit"
echo
if [ -n "$BENCH_TIMED_RUN" ]; then
        declare -A W=() C=()
        for ((i = 0; i < 33; i++)); do
                for p in /bin/true "$GPU_HOOK" "$GPU_CLI"; do
                        a=()
                        [ "$p" = /bin/true ] || a=(--version)
                        "$BENCH_TIMED_RUN" -o "$T/.pt" -- "$p" "${a[@]}" >/dev/null 2>&1
                        read -r w c _ <"$T/.pt"
                        ((i >= 2)) && W[$p]+=" $w" C[$p]+=" $c"
                done
        done
        echo "| program (31 runs, interleaved) | wall ms (median) | CPU ms (median) |"
        echo "|---|---:|---:|"
        for p in /bin/true "$GPU_HOOK" "$GPU_CLI"; do
                BENCH_SAMPLES=(${W[$p]}); read -r mw _ <<<"$(bench_stats)"
                BENCH_SAMPLES=(${C[$p]}); read -r mc _ <<<"$(bench_stats)"
                echo "| $(basename "$p")$([ "$p" = /bin/true ] || echo " --version") | $(_ms "$mw") | $(_ms "$mc") |"
        done
else
        echo "no timed-run (tests/helpers/timed-run): not measured"
fi
echo
for p in "$GPU_HOOK" "$GPU_CLI"; do
        s=$(LD_DEBUG=statistics "$p" --version 2>&1 >/dev/null | sed -n 's/^ *[0-9]*: *//p' |
                grep -E 'total startup time|number of relocations:|relative relocations' | tr -s ' ' | paste -sd ';')
        echo "- $(basename "$p"): $(stat -c %s "$p") bytes, needs $(ldd "$p" 2>/dev/null | grep -c '=>') shared libraries; dynamic loader: ${s:-no statistics}"
done
echo

# ---- 3. system calls ------------------------------------------------------------------------------
echo "## 3. system calls per program, one start of each kind (strace -f; counts)"
echo
if have_cmd strace; then
        for k in hook cdi none; do
                ${BR_PREP[$k]} >/dev/null 2>&1
                strace -f -qq -s 256 -o "$T/strace-$k" "$RUNC" --root "$T_RUNC_ROOT" run -b "${BR_BUNDLE[$k]}" "st-$k" </dev/null >/dev/null 2>&1
                "$RUNC" --root "$T_RUNC_ROOT" delete -f "st-$k" >/dev/null 2>&1
        done
        "$GH_PYTHON" - "$T/strace-hook" "$T/strace-cdi" "$T/strace-none" <<'PY'
import collections, re, sys
MOUNTISH = {"mount", "umount2", "open_tree", "move_mount", "mount_setattr", "fsopen", "fsconfig", "fsmount",
            "setns", "mknodat", "mknod", "symlinkat", "bpf", "pivot_root", "unshare", "clone", "clone3",
            "execve", "execveat", "wait4", "openat2", "renameat2", "rename"}
line = re.compile(r"^(\d+) +(?:<\.\.\. )?(\w+)")
def progs(path):
    exe = {}
    calls = collections.defaultdict(collections.Counter)
    pending = {}
    for l in open(path):
        m = line.match(l)
        if not m:
            continue
        pid, name = int(m.group(1)), m.group(2)
        if name in ("execve", "execveat") and "<unfinished" in l:
            pending[pid] = l
        if name in ("execve", "execveat") and l.rstrip().endswith("= 0"):
            q = re.search(r'\["([^"]*)"((?:, "[^"]*")*)\]', l) or re.search(r'\["([^"]*)"((?:, "[^"]*")*)\]', pending.get(pid, ""))
            if q:
                words = [q.group(1)] + re.findall(r'"([^"]*)"', q.group(2))
                base = words[0].rsplit("/", 1)[-1]
                if "init" in words[1:2]:
                    base = "runc init"
                elif base in ("true", "sleep"):
                    base = "runc init, then the container's /bin/" + base
                elif base == "gpu-cli":
                    base = "gpu-cli " + next((w for w in words[1:] if w in ("configure", "cdi-hook")), "")
                exe[pid] = base
        if "<unfinished" in l:
            continue
        calls[pid][name] += 1
    out = collections.defaultdict(collections.Counter)
    for pid, c in calls.items():
        out[exe.get(pid, "runc (threads, before exec)")] += c
    return out
kinds = dict(zip(("hook path", "CDI path", "no hook"), (progs(p) for p in sys.argv[1:])))
print("| start | program | system calls | of them (count) |")
print("|---|---|---:|---|")
for k, ps in kinds.items():
    for name, c in sorted(ps.items(), key=lambda kv: -sum(kv[1].values())):
        total = sum(c.values())
        if total < 5:
            continue
        top = ", ".join("%s %d" % kv for kv in c.most_common(8))
        mnt = ", ".join("%s %d" % (s, c[s]) for s in sorted(MOUNTISH) if c[s])
        print("| %s | %s | %d | %s; mount/ns/exec: %s |" % (k, name, total, top, mnt or "none"))
PY
else
        echo "no strace here"
fi
echo

# ---- 4. CPU per program ---------------------------------------------------------------------------
echo "## 4. CPU per program per start (perf record -F 4999, cpu-clock, $STARTS starts of each kind)"
echo
if have_cmd perf && perf record -q -o "$T/perf.test" -- true >/dev/null 2>&1; then
        for k in none hook cdi cdi-runc; do
                # The preparation (mv, cp) runs inside the recording; its commands are left out below.
                cat >"$T/loop-$k.sh" <<EOF
mkdir -p "$T/perf-used-$k"
for i in \$(seq $STARTS); do
        mv "$T/bs-r-$k" "$T/perf-used-$k/\$i" && cp -a "$BS_TEMPLATE" "$T/bs-r-$k"
        "$RUNC" --root "$T_RUNC_ROOT" run -b "${BR_BUNDLE[$k]}" "perf-$k-\$i" </dev/null >/dev/null 2>&1
        "$RUNC" --root "$T_RUNC_ROOT" delete -f "perf-$k-\$i" >/dev/null 2>&1
done
EOF
                perf record -q -F 4999 -o "$T/perf-$k.data" -- bash "$T/loop-$k.sh" >/dev/null 2>&1
        done
        "$GH_PYTHON" - "$T" "$STARTS" <<'PY'
import collections, subprocess, sys
t, n = sys.argv[1], int(sys.argv[2])
skip = {"cp", "mv", "rm", "bash", "seq", "timed-run", "perf", "perf-exec"}
table = {}
KINDS = ("none", "hook", "cdi", "cdi-runc")
for k in KINDS:
    out = subprocess.run(["perf", "report", "-i", "%s/perf-%s.data" % (t, k), "--no-children", "--sort", "comm",
                          "--stdio", "-g", "none", "-F", "sample,comm"], capture_output=True, text=True).stdout
    c = collections.Counter()
    for l in out.splitlines():
        p = l.split(None, 1)
        if len(p) == 2 and p[0].isdigit():
            name = p[1].strip()
            name = "runc init" if name.startswith("runc:[") or name == "exe" else name
            if name not in skip:
                c[name] += int(p[0])
    table[k] = {name: v / 4999.0 * 1000 / n for name, v in c.items()}
names = sorted({x for v in table.values() for x in v}, key=lambda x: -max(table[k].get(x, 0) for k in table))
print("| program | no hook ms | hook path ms | CDI path ms | CDI spec without its hook ms |")
print("|---|---:|---:|---:|---:|")
for x in names:
    if max(table[k].get(x, 0) for k in table) < 0.05:
        continue
    print("| %s | %s |" % (x, " | ".join("%.2f" % table[k].get(x, 0) for k in KINDS)))
print("| total | %s |" % " | ".join("%.2f" % sum(table[k].values()) for k in KINDS))
PY
else
        echo "no working perf here"
fi
echo

# ---- 5. instructions ------------------------------------------------------------------------------
echo "## 5. instructions by function (callgrind, one run each)"
echo
if have_cmd valgrind; then
        VG="valgrind --tool=callgrind -q"
        # configure under callgrind, from its own createRuntime hook
        _bs_fresh cg
        BENCH_CLI_GLOBAL="--root=$ROOT${LDCACHE:+ --ldcache=$LDCACHE}" \
                BENCH_CLI_WRAP="$VG --callgrind-out-file=$T/cg-configure.out" bench_write_configure_hook "$T/cg-hook"
        make_bundle "$T/cg-b" "$T/bs-r-cg" /bin/true
        bundle_add_hook "$T/cg-b" createRuntime "$T/cg-hook" "$T/cg.samples" "$GPU_CLI" "$T/bs-r-cg" --device=all --compute --utility
        _bench_run_once "$T/cg-b" >/dev/null 2>&1 || echo "configure under callgrind failed: $_BENCH_RUN_ERR"
        # cdi-hook under callgrind: the CDI bundle's hook, its path replaced
        ${BR_PREP[cdi]}
        cp -a "${BR_BUNDLE[cdi]}" "$T/cg-cdi"
        bundle_edit "$T/cg-cdi" '
vg, out = args
for h in c["hooks"]["createContainer"]:
    h["args"] = [vg, "--tool=callgrind", "-q", "--callgrind-out-file=" + out, h["path"]] + h["args"][1:]
    h["path"] = vg' "$(command -v valgrind)" "$T/cg-cdi.out"
        _bench_run_once "$T/cg-cdi" >/dev/null 2>&1 || echo "cdi-hook under callgrind failed: $_BENCH_RUN_ERR"
        for f in configure cdi; do
                [ -s "$T/cg-$f.out" ] || continue
                echo "### $([ $f = cdi ] && echo "gpu-cli cdi-hook" || echo "gpu-cli configure")"
                echo
                echo '```'
                callgrind_annotate --inclusive=yes "$T/cg-$f.out" 2>/dev/null |
                        awk '/PROGRAM TOTALS/ { print; next }
                             /\/(lib|cli)\/[a-z\/-]+\.c:|dl_main|_dl_relocate_object/ {
                                     if (!match($0, /[A-Za-z0-9_.-]+\.c:[A-Za-z0-9_]+/)) next
                                     f = substr($0, RSTART, RLENGTH)
                                     if (f ~ /^(cleanup|string_fortified)/ || seen[f]++) next
                                     match($0, /\( *[0-9.]+%\)/); pc = substr($0, RSTART, RLENGTH)
                                     printf "%14s %9s  %s\n", $1, pc, f }' | head -n 24
                echo '```'
                echo
        done
else
        echo "no valgrind here"
fi

# ---- 6. teardown ----------------------------------------------------------------------------------
echo "## 6. teardown at container exit (runc kill KILL until the init is gone, then runc delete; 15 rounds, shuffled, medians)"
echo
declare -A TK=() TD=()
for k in none hook cdi; do
        cp -a "${BR_BUNDLE[$k]}" "$T/td-$k"
        bundle_edit "$T/td-$k" 'c["process"]["args"] = ["/bin/sleep", "1000"]'
done
RANDOM=$BENCH_SEED
for ((r = 0; r < 17; r++)); do
        order=(none hook cdi)
        for ((i = 2; i > 0; i--)); do j=$((RANDOM % (i + 1))); t=${order[i]} order[i]=${order[j]} order[j]=$t; done
        for k in "${order[@]}"; do
                ${BR_PREP[$k]} >/dev/null 2>&1
                id=td-$k-$r
                "$RUNC" --root "$T_RUNC_ROOT" run -d -b "$T/td-$k" "$id" </dev/null >/dev/null 2>"$T/td.err" ||
                        { echo "detached start of $k failed: $(tail -n 1 "$T/td.err")"; continue; }
                pid=$("$RUNC" --root "$T_RUNC_ROOT" state "$id" | sed -n 's/.*"pid": *\([0-9]*\).*/\1/p')
                sleep 0.2
                t0=$EPOCHREALTIME
                "$RUNC" --root "$T_RUNC_ROOT" kill "$id" KILL
                while [ -e "/proc/$pid/ns" ] && [ "$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null)" != Z ]; do :; done
                t1=$EPOCHREALTIME
                "$RUNC" --root "$T_RUNC_ROOT" delete -f "$id" >/dev/null 2>&1
                t2=$EPOCHREALTIME
                ((r >= 2)) && TK[$k]+=" $(($(_us "$t1") - $(_us "$t0")))" TD[$k]+=" $(($(_us "$t2") - $(_us "$t1")))"
        done
done
echo "| kind | kill until the init is gone, ms | runc delete, ms |"
echo "|---|---:|---:|"
for k in none hook cdi; do
        BENCH_SAMPLES=(${TK[$k]}); read -r a _ <<<"$(bench_stats)"
        BENCH_SAMPLES=(${TD[$k]}); read -r b _ <<<"$(bench_stats)"
        echo "| ${BS_LABEL[$k]} | $(_ms "$a") | $(_ms "$b") |"
done
