#!/bin/bash
# The GPU machine's run of bench/profile.sh: where a GPU container start's time goes, the hook path
# against the CDI path (phases from the hooks' logs, process start, system calls, CPU per program,
# instructions, teardown), against the real driver.  Runs THERE as root from the repo root with the
# kit carried (.gpukit), after run.sh:  bash tests/gpu/profile.sh
# Sections whose tool (strace, perf, valgrind) is missing there say so.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/kit.sh"
[ -e /dev/nvidiactl ] || { echo "profile: no NVIDIA GPU here (/dev/nvidiactl is missing)" >&2; exit 1; }
export KIT GPU_CLI GPU_HOOK RUNC BUSYBOX GH_SOURCE_DIR=$REPO
export GH_PROFILE_ROOT=/ GH_PROFILE_LDCACHE=/etc/ld.so.cache
[ -x "$KIT/bin/timed-run" ] && export GH_TIMED_RUN=$KIT/bin/timed-run
exec bash "$REPO/bench/profile.sh"
