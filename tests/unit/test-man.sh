#!/bin/bash
# The manual pages against the programs: every option that `gpu-cli COMMAND --help` defines (its
# Usage lines and its option list) is documented in that command's section of gpu-cli(1), and
# every option a section documents is one that COMMAND's --help knows (or a global option); the
# same for gpu-cli's global options and for gpu-hook(1) against `gpu-hook --help`.  The commands
# are the ones `gpu-cli --help` lists (and `gpu-cli cdi --help`'s subcommands).  gpu-runtime(1)
# is not checked: gpu-runtime takes runc's arguments and passes --help to the real runtime.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
CLI=${GPU_CLI:?}
HOOK=${GPU_HOOK:?}
MAN=$GH_SOURCE_DIR/man

# options TEXT...: the option names (--name, -x) in the texts, one per line, sorted.  A name
# starts after a blank, a bracket, '|', '*' or '(' (so read-only or cdi-hook are no options).
options() {
        printf '%s\n' "$@" | grep -oE '(^|[][ \t|*(,"`])--?[A-Za-z][A-Za-z0-9-]*' | sed -E 's/^[^-]+//' | sort -u
}

# help_options: the options a --help text (stdin) defines: its Usage lines (up to the first blank
# line) and the option column of its option lists (indented lines that start with '-', up to the
# two blanks before the description).  Options named in the prose do not count.
help_options() {
        options "$(awk '
                /^Usage:/ { usage = 1 }
                usage && /^[ \t]*$/ { usage = 0 }
                usage { sub(/^Usage:/, ""); print; next }
                /^[ \t]+-/ { sub(/^[ \t]+/, ""); i = index($0, "  "); print (i ? substr($0, 1, i - 1) : $0) }')"
}

# man_section FILE TITLE: the text under the heading "## TITLE" (or "# TITLE") up to the next heading.
man_section() {
        awk -v t="$2" '
                /^#+ / { h = $0; sub(/^#+ /, "", h); on = (h == t); next }
                on' "$1"
}

# minus A B: the lines of A that are not in B (both sorted).
minus() { comm -23 <(printf '%s\n' "$1" | sed '/^$/d') <(printf '%s\n' "$2" | sed '/^$/d'); }

# check NAME HELP_OPTIONS MAN_OPTIONS ALLOWED: both directions, one test point each.
check() {
        local name=$1 help=$2 man=$3 allowed=$4 missing extra
        missing=$(minus "$(minus "$help" "$man")" "$allowed" | tr '\n' ' ')
        extra=$(minus "$(minus "$man" "$help")" "$allowed" | tr '\n' ' ')
        if [ -z "$missing" ]; then
                t_pass "$name: the manual documents every option of its --help ($(printf '%s\n' "$help" | grep -c .))"
        else
                t_fail "$name: options of --help missing from the manual: $missing"
        fi
        if [ -z "$extra" ]; then
                t_pass "$name: the manual documents no option its --help does not know"
        else
                t_fail "$name: options in the manual that --help does not know: $extra"
        fi
}

top_help=$("$CLI" --help 2>&1)
t_ok "gpu-cli --help" test -n "$top_help"
globals=$(help_options <<<"$top_help")
# --help and --version are global options, and every command takes --help.
common=$(printf '%s\n' --help -h --version -V)
check "gpu-cli global options" "$globals" "$(options "$(man_section "$MAN/gpu-cli.1.scd" "GLOBAL OPTIONS")")" ""

commands=$(awk '/^Commands:/ { on = 1; next } on && /^[ \t]*$/ { on = 0 } on { print $1 }' <<<"$top_help" | tr '\n' ' ')
t_ok "gpu-cli --help lists its commands ($commands)" test "$(wc -w <<<"$commands")" -ge 10
for cmd in $commands; do
        subs=$cmd
        if [ "$cmd" = cdi ]; then
                # cdi's own help lists its subcommands, each with its own --help.
                subs=$("$CLI" cdi --help 2>&1 | awk '/^  [a-z]+ / { print "cdi " $1 }')
                t_ok "gpu-cli cdi --help lists generate, refresh and list" test "$(tr '\n' ' ' <<<"$subs")" = "cdi generate cdi refresh cdi list "
        fi
        # setup's --help names its dev-char-links and bpffs forms, each with its own --help
        [ "$cmd" = setup ] && subs=$(printf 'setup\nsetup dev-char-links\nsetup bpffs')
        while read -r sub; do
                read -ra words <<<"$sub" # "cdi generate": two words
                help=$("$CLI" "${words[@]}" --help 2>&1)
                if ! t_ok "gpu-cli $sub --help exits 0" "$CLI" "${words[@]}" --help; then
                        continue
                fi
                section=$(man_section "$MAN/gpu-cli.1.scd" "$sub")
                if ! t_ok "gpu-cli(1) has a section '## $sub'" test -n "$section"; then
                        continue
                fi
                check "gpu-cli $sub" "$(help_options <<<"$help")" "$(options "$section")" \
                        "$(printf '%s\n' "$globals" "$common" | sort -u)"
        done <<<"$subs"
done

# A section for a command gpu-cli does not have is stale.
for title in $(sed -n 's/^## //p' "$MAN/gpu-cli.1.scd" | tr ' ' '+'); do
        title=${title//+/ }
        case " $commands cdi generate cdi refresh cdi list setup dev-char-links setup bpffs " in
        *" $title "*) ;;
        *) t_fail "gpu-cli(1) has a section '## $title' for a command gpu-cli --help does not list" ;;
        esac
done

hook_help=$("$HOOK" --help 2>&1)
check "gpu-hook" "$(help_options <<<"$hook_help")" \
        "$(options "$(man_section "$MAN/gpu-hook.1.scd" SYNOPSIS)" "$(man_section "$MAN/gpu-hook.1.scd" OPTIONS)")" ""
t_done
