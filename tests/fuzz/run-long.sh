#!/bin/bash
# Long fuzzing run by hand (hours): tests/fuzz/run-long.sh TARGET SECONDS [JOBS]
#   TARGET   a name from tests/fuzz/meson.build (capability, ldcache, select, require, ...)
#   SECONDS  total run time, e.g. 14400 for four hours
#   JOBS     parallel fuzzing processes (libFuzzer -fork), default 1
# Needs the fuzz build dir (default build-fuzz, or set BUILD_DIR):
#   CC=clang meson setup build-fuzz -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false && ninja -C build-fuzz
# The growing corpus lives in BUILD_DIR/fuzz-work/TARGET (the seed corpus in the source tree is only
# read); crashes land in BUILD_DIR/fuzz-work/TARGET/artifacts.  At the end the script prints the
# command that merges the new interesting inputs, minimised, into tests/fuzz/corpus/TARGET.
set -eu
if [ $# -lt 2 ]; then
        sed -n '2,/^[^#]/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'
        exit 2
fi
target=$1 secs=$2 jobs=${3:-1}
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$src/build-fuzz}
bin=$build/tests/fuzz/fuzz-$target
if [ ! -x "$bin" ]; then
        echo "run-long.sh: $bin not found; build it: CC=clang meson setup $build -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false && ninja -C $build" >&2
        exit 1
fi
work=$build/fuzz-work/$target
mkdir -p "$work/corpus" "$work/artifacts"
if [ -d "$src/tests/fuzz/corpus/$target" ]; then
        cp -rn "$src/tests/fuzz/corpus/$target"/. "$work/corpus/"
fi
extra=()
if [ "$jobs" -gt 1 ]; then
        extra=(-fork="$jobs" -ignore_crashes=1)
fi
rc=0
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
        "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
        -artifact_prefix="$work/artifacts/" "${extra[@]}" "$work/corpus" || rc=$?
echo
echo "corpus: $work/corpus ($(ls "$work/corpus" | wc -l) inputs); artifacts: $work/artifacts ($(ls "$work/artifacts" | wc -l))"
echo "to keep the new inputs as seeds: $bin -merge=1 $src/tests/fuzz/corpus/$target $work/corpus"
exit $rc
