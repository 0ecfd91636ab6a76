#!/bin/bash
# Runs a command in the Debian 13 engine bed (tests/engine/bed.sh says what the bed is and what is
# bound inside).  As root:
#
#   bash tests/engine/bed-run.sh [BED-RUN-OPTIONS] [--] CMD [ARG...]     e.g.  -- docker --version
#   bash tests/engine/bed-run.sh --ensure          build the bed if it is not cached, print its path
#   bash tests/engine/bed-run.sh --versions        the engines' Debian versions
#   bash tests/engine/bed-run.sh --test [BED-RUN-OPTIONS] -- SCRIPT [ARG...]
#                                                  a TAP test script inside (what meson runs): a skip
#                                                  when not root, a failure when the bed cannot be
#                                                  built; GH_BED=trixie inside says where it runs.
#
# BED-RUN-OPTIONS: --bind PATH, --bind-ro PATH, --hide-cgroup2, --host-net, --env K=V (bed_run).
set -u
here=$(cd "$(dirname "$0")" && pwd)
export GH_SOURCE_DIR=${GH_SOURCE_DIR:-$(cd "$here/../.." && pwd)}
. "$here/bed.sh"

case ${1:-} in
--ensure)
        bed_ensure --retry || { echo "bed: $BED_ERR" >&2; exit 1; }
        echo "$BED_ROOT"
        exit 0 ;;
--versions)
        bed_versions || { echo "bed: $BED_ERR" >&2; exit 1; }
        exit 0 ;;
--test)
        shift
        if [ "$(id -u)" -ne 0 ]; then
                echo "1..0 # SKIP needs root (the Debian 13 engine bed: namespaces, debootstrap)"
                exit 0
        fi
        if ! bed_ensure; then
                echo "Bail out! the Debian 13 engine bed cannot be built: $BED_ERR"
                [ -n "$BED_LOG" ] && [ -s "$BED_LOG" ] && tail -n 20 "$BED_LOG" | sed 's/^/# /'
                exit 1
        fi
        bed_run --env GH_BED="$BED_SUITE" "$@"
        exit ;;
esac
bed_run "$@"
