#!/bin/bash
# Mutation run over the code that decides what a container may get or reach (by hand, as root; not
# in CI).  Each mutant of tests/mutation/mutants.txt is one small, realistic bug: the tool copies the
# working tree to a scratch directory, builds it once, then for each mutant applies it alone,
# rebuilds (incrementally), runs the mutant's tests in order until one fails, and puts the code back.
#
#   bash tests/mutation/run.sh                 every mutant
#   bash tests/mutation/run.sh ID...           only these
#   bash tests/mutation/run.sh --check         only prove that every mutant still applies (no build)
#   bash tests/mutation/run.sh --list          the mutants and what each breaks
#
# Options: --no-baseline (skip running the tests on the unmutated copy first), --keep (keep the
# scratch directory), --scratch DIR (use DIR; reused builds are faster).  A mutant is "killed" when a
# test fails (the first failing test and its first "not ok" line are printed), "SURVIVED" when all its
# tests pass, "INVALID" when it does not build.  Exit status: 0 when every mutant was killed, 1 when
# one survived or was invalid, 2 when the tool could not run (a mutant no longer applies, the
# baseline fails).  Survivors are either fixed by a new test or argued equivalent in docs/testing.md.
set -u
set -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$here/../.." && pwd)
MUTANTS=$here/mutants.txt
MUTATE=("${GH_PYTHON:-python3}" "$here/mutate.py")
CHECK_ONLY=0 LIST=0 BASELINE=1 KEEP=0 SCRATCH=
IDS=()
while [ $# -gt 0 ]; do
        case $1 in
        --check) CHECK_ONLY=1 ;;
        --list) LIST=1 ;;
        --no-baseline) BASELINE=0 ;;
        --keep) KEEP=1 ;;
        --scratch) SCRATCH=$2; KEEP=1; shift ;;
        -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "run.sh: unknown option $1; see --help" >&2; exit 2 ;;
        *) IDS+=("$1") ;;
        esac
        shift
done

if [ $LIST = 1 ]; then
        "${MUTATE[@]}" list "$MUTANTS" | awk -F'\t' '{ printf "%-28s %-22s %s\n    tests: %s\n", $1, $2, $4, $3 }'
        exit 0
fi
# Every mutant must apply to the tree as it is now, or the run means nothing.
if ! "${MUTATE[@]}" check "$MUTANTS" "$SRC" "${IDS[@]+"${IDS[@]}"}"; then
        echo "run.sh: some mutants no longer apply (above); fix their search text in $MUTANTS" >&2
        exit 2
fi
[ ${#IDS[@]} -gt 0 ] || mapfile -t IDS < <("${MUTATE[@]}" list "$MUTANTS" | cut -f1)
echo "# ${#IDS[@]} mutants apply to $SRC"
[ $CHECK_ONLY = 1 ] && exit 0
[ "$(id -u)" -eq 0 ] || { echo "run.sh: the integration and security suites need root" >&2; exit 2; }

start=$(date +%s)
if [ -z "$SCRATCH" ]; then
        SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/gh-mutation.XXXXXX")
fi
T=$SCRATCH/src
B=$SCRATCH/build
cleanup() {
        [ -d "$T" ] && (cd "$T" && find . -name '*.mutation-orig' | while read -r f; do mv "$f" "${f%.mutation-orig}"; done)
        [ $KEEP = 1 ] || rm -rf --one-file-system "$SCRATCH"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The working tree as it is (tracked and untracked files, nothing ignored), refreshed in place so a
# reused scratch build stays incremental.
mkdir -p "$T"
(cd "$SRC" && git ls-files -z -co --exclude-standard) | "${MUTATE[@]}" sync "$SRC" "$T" ||
        { echo "run.sh: copying the tree to $T failed" >&2; exit 2; }
if [ ! -f "$B/build.ninja" ]; then
        meson setup "$B" "$T" >"$SCRATCH/setup.log" 2>&1 || { tail -n 20 "$SCRATCH/setup.log"; exit 2; }
fi
ninja -C "$B" >"$SCRATCH/build.log" 2>&1 || { echo "run.sh: the unmutated copy does not build" >&2; tail -n 20 "$SCRATCH/build.log"; exit 2; }

# run_test [SUITE/]NAME[:CASES]: one meson test (CASES, comma-separated patterns, becomes
# GH_TEST_CASES: a script that supports it runs only those cases; SUITE picks one of two tests of
# the same name, e.g. unit/plan and not the integration plan); sets FAIL_LINE to its first failing
# test point.
run_test() {
        local name=${1%%:*} cases= log=$B/meson-logs/testlog.txt suite=()
        [ "$name" = "$1" ] || cases=${1#*:}
        if [[ $name == */* ]]; then
                suite=(--suite "${name%%/*}")
                name=${name#*/}
        fi
        FAIL_LINE=
        if GH_TEST_CASES=$cases meson test -C "$B" --no-rebuild -t "${GH_MUT_TIMEOUT_MULT:-3}" "${suite[@]}" "$name" \
                >"$SCRATCH/test.out" 2>&1; then
                return 0
        fi
        FAIL_LINE=$(grep -m1 '^not ok' "$log" 2>/dev/null || true)
        [ -n "$FAIL_LINE" ] || FAIL_LINE=$(grep -m1 -E 'TIMEOUT|ERROR|FAIL' "$SCRATCH/test.out" | sed 's/  */ /g')
        return 1
}

tests_of() { "${MUTATE[@]}" list "$MUTANTS" | awk -F'\t' -v id="$1" '$1 == id { print $3 }'; }

# targets_of ID: what a mutant's tests run: gpu-cli, gpu-hook, gpu-runtime and the C unit tests
# among them (rootfs-walk is a variant of test-rootfs).  Rebuilding only these after each mutant
# saves relinking every other test program; one that is not rebuilt is not run either.
targets_of() {
        local t base
        # the engine tests run their own copies of gpu-hook and gpu-runtime (tests/engine/meson.build)
        # cli/nvidia-cdi-hook: the static program NVIDIA-format specs run (the ops and core code again)
        echo cli/gpu-cli cli/nvidia-cdi-hook hook/gpu-hook runtime/gpu-runtime tests/engine/gpu-hook tests/engine/gpu-runtime
        for t in $(tests_of "$1"); do
                t=${t%%:*}
                t=${t#*/}
                for base in "$t" "${t%-*}" "${t%-*-*}"; do
                        if [ -f "$T/tests/unit/test-$base.c" ]; then
                                echo "tests/unit/test-$base"
                                break
                        fi
                done
        done
}

if [ $BASELINE = 1 ]; then
        need=$(for id in "${IDS[@]}"; do tests_of "$id"; done | tr ' ' '\n' | sort -u)
        echo "# baseline: $(echo $need) on the unmutated copy"
        for t in $need; do
                if ! run_test "$t"; then
                        echo "run.sh: test '$t' fails without any mutant: $FAIL_LINE" >&2
                        echo "run.sh: fix it first (or run with --no-baseline if you know why)" >&2
                        exit 2
                fi
        done
fi

KILLED=0 SURVIVED=0 INVALID=0
SURVIVORS=()
for id in "${IDS[@]}"; do
        t0=$(date +%s)
        "${MUTATE[@]}" apply "$MUTANTS" "$T" "$id" || exit 2
        # shellcheck disable=SC2046
        if ! ninja -C "$B" $(targets_of "$id") >"$SCRATCH/build.log" 2>&1; then
                INVALID=$((INVALID + 1))
                SURVIVORS+=("$id (does not build)")
                printf '%-28s INVALID  does not build: %s\n' "$id" "$(grep -m1 'error:' "$SCRATCH/build.log")"
        else
                result=SURVIVED by=
                for t in $(tests_of "$id"); do
                        if ! run_test "$t"; then
                                result=killed by=$t
                                break
                        fi
                done
                if [ $result = killed ]; then
                        KILLED=$((KILLED + 1))
                        printf '%-28s killed   by %-16s %3ss  %s\n' "$id" "$by" $(($(date +%s) - t0)) "${FAIL_LINE:0:110}"
                else
                        SURVIVED=$((SURVIVED + 1))
                        SURVIVORS+=("$id")
                        printf '%-28s SURVIVED (%s) %3ss\n' "$id" "$(tests_of "$id")" $(($(date +%s) - t0))
                fi
        fi
        "${MUTATE[@]}" revert "$MUTANTS" "$T" "$id"
done

total=$((KILLED + SURVIVED + INVALID))
secs=$(($(date +%s) - start))
echo "# mutation score: $KILLED/$total killed ($((total ? 100 * KILLED / total : 0))%), $SURVIVED survived, $INVALID invalid; $((secs / 60)) min $((secs % 60)) s on $(nproc) cores"
[ ${#SURVIVORS[@]} -eq 0 ] || echo "# not killed: ${SURVIVORS[*]}"
[ $((SURVIVED + INVALID)) -eq 0 ]
