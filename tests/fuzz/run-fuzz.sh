#!/bin/bash
# One libFuzzer target for a short, fixed time over a scratch copy of its seed corpus, as a TAP test
# (suite "fuzz").  A crash, leak, timeout or OOM fails the test; the input that caused it is kept
# under $GH_BUILD_DIR/fuzz-artifacts/ and the command to replay it is printed.
# Usage: run-fuzz.sh FUZZ_BINARY SEED_CORPUS_DIR SECONDS
set -u
bin=$1 seeds=$2 secs=$3
name=$(basename "$bin")
work=$(mktemp -d /tmp/gh-fuzz-XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir "$work/corpus"
if [ -d "$seeds" ]; then
        cp -r "$seeds"/. "$work/corpus/"
fi
echo "1..1"
if "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
        -artifact_prefix="$work/" "$work/corpus" >"$work/log" 2>&1; then
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log")
        echo "ok 1 - $name: ${runs:-?} inputs in ${secs}s, no crash"
        exit 0
fi
keep=${GH_BUILD_DIR:-$PWD}/fuzz-artifacts
mkdir -p "$keep"
echo "not ok 1 - $name failed"
for a in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* "$work"/slow-unit-*; do
        [ -e "$a" ] || continue
        cp "$a" "$keep/$name-$(basename "$a")"
        echo "# reproduce: $bin $keep/$name-$(basename "$a")"
done
tail -n 60 "$work/log" | sed 's/^/# /'
exit 1
