#!/bin/bash
# Build and run every test suite on a fresh Debian 12 / Ubuntu machine, as root.
#
#   bash contrib/run-tests.sh
#
# Installs what is missing (contrib/deps.sh), builds twice in fresh directories: build-tests (every
# suite), build-tests-asan (-Db_sanitize=address,undefined, unit suite) and build-tests-fuzz (clang,
# libFuzzer smoke of every fuzz target), prints a per-suite summary
# and ends with exactly one line "N passed, N failed, N skipped", counted in individual TAP test points
# over both builds.  Exits non-zero when anything failed.  Needs about 21 minutes on 2 idle cores (docker, containerd, podman, a package build and ~500-library ld cache comparisons included).
set -u
set -o pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
BUILD=${GH_TEST_BUILD:-build-tests}
ASAN_BUILD=${GH_TEST_ASAN_BUILD:-build-tests-asan}
JOBS=${GH_TEST_JOBS:-2}

passed=0 failed=0 skipped=0
summary=""

finish() {
        echo
        printf '%s' "$summary"
        echo "$passed passed, $failed failed, $skipped skipped"
        [ "$failed" -eq 0 ]
        exit
}

# step_failed WHAT LOG: a build step that failed counts as one failed test.
step_failed() {
        echo "run-tests: $1 failed; last lines of $2:"
        tail -n 30 "$2" | sed 's/^/    /'
        failed=$((failed + 1))
        summary+="$1: FAILED (see $2)"$'\n'
}

# tally DIR [LOG]: per-suite table on stdout, then a last line "P F S".
tally() { tally_file "$1" testlog.json; }
tally_file() {
        python3 - "$1" "$2" <<'EOF'
import collections, json, re, sys

builddir, logname = sys.argv[1], sys.argv[2]
point = re.compile(r"^(not )?ok\b[^#]*(#\s*(\w+))?", re.I)
rows = collections.OrderedDict()
total = [0, 0, 0]
try:
    lines = open(f"{builddir}/meson-logs/{logname}").read().splitlines()
except OSError:
    # No log means the tests never ran: that is a failure, not an empty success.
    print(f"(no test log {builddir}/meson-logs/{logname}: counted as 1 failed)")
    print(0, 1, 0)
    sys.exit(0)
for line in lines:
    t = json.loads(line)
    # meson names a test "project:suite / name"; the first suite is the one shown.
    m = re.match(r"^(?:[^:/ ]+:)?(\S+) / ", t["name"])
    suite = m.group(1) if m else "-"
    p = f = s = 0
    npoints = 0
    for l in (t.get("stdout") or "").splitlines():
        m = point.match(l)
        if m:
            npoints += 1
            directive = (m.group(3) or "").upper()
            if directive == "SKIP" or (m.group(1) and directive == "TODO"):
                s += 1
            elif m.group(1):
                f += 1
            else:
                p += 1
        elif l.startswith("Bail out!"):
            f += 1
    result = t["result"]
    if result == "ERROR" and t.get("returncode") == 77 and f == 0:
        result = "SKIP"  # a TAP test that skipped with exit 77 (meson 1.0 calls that ERROR)
    if result in ("FAIL", "TIMEOUT", "ERROR", "UNEXPECTEDPASS") and f == 0:
        f += 1          # crashed, timed out or broke its plan without a failing point
    elif result == "SKIP" and npoints == 0:
        s += 1          # exit 77 / "1..0 # SKIP"
    elif result in ("OK", "EXPECTEDFAIL") and npoints == 0:
        p += 1          # a plain exit-code test
    r = rows.setdefault(suite, [0] * 7)  # tests, ok, fail, skip | passed, failed, skipped
    r[0] += 1
    r[1 if result in ("OK", "EXPECTEDFAIL") else 3 if result == "SKIP" else 2] += 1
    for i, v in enumerate((p, f, s)):
        r[4 + i] += v
        total[i] += v
print(f"{'suite':<14}{'tests':>6}{'ok':>5}{'fail':>5}{'skip':>5}  | {'passed':>7}{'failed':>7}{'skipped':>8}")
for suite, r in rows.items():
    print(f"{suite:<14}{r[0]:>6}{r[1]:>5}{r[2]:>5}{r[3]:>5}  | {r[4]:>7}{r[5]:>7}{r[6]:>8}")
if not rows:
    print("(no test ran)")
print(*total)
EOF
}

# run_build NAME DIR MESON-SETUP-ARGS... -- MESON-TEST-ARGS...
run_build() {
        local name=$1 dir=$2 setup=() testargs=() out p f s
        shift 2
        while [ $# -gt 0 ] && [ "$1" != -- ]; do setup+=("$1"); shift; done
        [ $# -gt 0 ] && shift
        testargs=("$@")
        echo "=== $name: meson setup $dir ${setup[*]}"
        rm -rf "$dir"
        mkdir -p "$dir"
        if ! meson setup "$dir" "${setup[@]+"${setup[@]}"}" >"$dir.setup.log" 2>&1; then
                step_failed "$name: meson setup" "$ROOT/$dir.setup.log"
                return
        fi
        mv "$dir.setup.log" "$dir/setup.log"
        echo "=== $name: build"
        if ! meson compile -C "$dir" >"$dir/compile.log" 2>&1; then
                step_failed "$name: build" "$ROOT/$dir/compile.log"
                return
        fi
        echo "=== $name: meson test ${testargs[*]}"
        meson test -C "$dir" --print-errorlogs --num-processes "$JOBS" "${testargs[@]+"${testargs[@]}"}"
        echo "=== $name: per suite (tests: ok/fail/skip; TAP points: passed/failed/skipped)"
        out=$(tally "$dir") || { step_failed "$name: counting results" "$ROOT/$dir/meson-logs/testlog.txt"; return; }
        printf '%s\n' "$out" | sed '$d'
        read -r p f s <<<"$(printf '%s\n' "$out" | tail -n 1)"
        passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
        summary+="$name: $p passed, $f failed, $s skipped"$'\n'
}

echo "=== dependencies"
. contrib/deps.sh
if ! gh_install_deps test; then
        failed=$((failed + 1))
        summary+="dependencies: FAILED to install"$'\n'
fi
[ "$(id -u)" -eq 0 ] || echo "run-tests: not root: the integration, security and gpu suites will skip"

start=$SECONDS
run_build "main build" "$BUILD" --
run_build "asan+ubsan build (unit)" "$ASAN_BUILD" -Db_sanitize=address,undefined -- --suite unit
# The integration suite again with openat2 and the new mount API failing with ENOSYS (seccomp, like
# crun's tests/no_openat2.c): every fallback path, end to end, under real runtimes.
if [ "$(id -u)" -eq 0 ] && [ -x "$BUILD/tests/helpers/no-new-mount-api" ]; then
        echo "=== integration suite under tests/helpers/no-new-mount-api"
        GH_EXPECT_NO_MOUNT_API=1 meson test -C "$BUILD" --suite integration --num-processes "$JOBS" \
                --wrapper "$ROOT/$BUILD/tests/helpers/no-new-mount-api" --print-errorlogs
        # meson names the log after the wrapper: testlog-no-new-mount-api.json
        out=$(tally_file "$BUILD" testlog-no-new-mount-api.json) || out="- 0 1 0"
        printf '%s\n' "$out" | sed '$d'
        read -r p f s <<<"$(printf '%s\n' "$out" | tail -n 1)"
        passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
        summary+="integration without openat2/new mount API: $p passed, $f failed, $s skipped"$'\n'
fi
# libFuzzer smoke: every target for a short fixed time over its seed corpus (tests/fuzz/README.md).
if command -v clang >/dev/null 2>&1; then
        CC=clang run_build "fuzz build (clang, libFuzzer smoke)" "${GH_TEST_FUZZ_BUILD:-build-tests-fuzz}" \
                -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false -- --suite fuzz
fi
echo "=== done in $((SECONDS - start)) s"
finish
