#!/bin/bash
# Every C source and header of the repository is formatted as .clang-format says: a change that
# is not formatted fails here (run `clang-format -i FILE`, the version Debian 12 ships).
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
t_need_cmd clang-format
cd "$GH_SOURCE_DIR" || exit 1
n=0
while IFS= read -r -d '' f; do
        n=$((n + 1))
        if out=$(clang-format --dry-run --Werror "$f" 2>&1); then
                t_pass "$f is formatted"
        else
                t_fail "$f is not formatted (clang-format -i $f)"
                t_diag "$(head -n 8 <<<"$out")"
        fi
done < <(find lib cli hook runtime tests bench contrib -name '*.[ch]' -not -path '*/corpus/*' -print0 2>/dev/null | sort -z)
[ $n -gt 50 ] || t_fail "found only $n C files: is the source tree complete?"
t_done
