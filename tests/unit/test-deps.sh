#!/bin/bash
# contrib/deps.sh on a machine where packages are missing, sourced the way quickstart.sh and
# run-tests.sh do (under `set -euo pipefail`): the missing names of the set asked for reach
# `apt-get install`, nothing else does, and the caller carries on; quickstart.sh itself installs
# only the quickstart set.  dpkg-query, apt-get, apt-cache and id are stubs on PATH; no root, no
# network.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"

mkdir -p "$T/bin"
# dpkg-query -W -f=FMT PKG: "installed" for the packages in $T/installed, else dpkg's own failure
# for a package it does not know (exit 1, message on stderr).
cat >"$T/bin/dpkg-query" <<EOF
#!/bin/sh
for p; do :; done
while read -r i; do [ "\$i" = "\$p" ] && printf installed && exit 0; done <"$T/installed"
echo "dpkg-query: no packages found matching \$p" >&2
exit 1
EOF
# apt-get records every call; apt-cache knows every package except those in $T/unknown.
cat >"$T/bin/apt-get" <<EOF
#!/bin/sh
echo "\$*" >>"$T/apt-get.calls"
EOF
cat >"$T/bin/apt-cache" <<EOF
#!/bin/sh
for p; do :; done
! grep -qx -- "\$p" "$T/unknown"
EOF
printf '#!/bin/sh\necho 0\n' >"$T/bin/id"
chmod 755 "$T/bin/"*

# run_deps [SET]: sources deps.sh and installs, exactly as run-tests.sh (no SET: everything) and
# quickstart.sh do; prints "after" when the script goes on past gh_install_deps.
run_deps() {
        rm -f "$T/apt-get.calls"
        touch "$T/apt-get.calls"
        PATH="$T/bin:$PATH" bash -c 'set -euo pipefail; cd "$1"; . contrib/deps.sh; gh_install_deps ${2:+"$2"}; echo after' \
                _ "$GH_SOURCE_DIR" "${1:-}" 2>&1
}

all=$(bash -c '. "$1/contrib/deps.sh"; printf "%s\n" "${GH_DEPS[@]}"' _ "$GH_SOURCE_DIR")
t_ok "GH_DEPS lists packages" test -n "$all"

# A fresh machine: meson, ninja-build and valgrind missing (the first, a middle and the last).
grep -vx -e meson -e ninja-build -e valgrind <<<"$all" >"$T/installed"
: >"$T/unknown"
out=$(run_deps)
t_match "$out" '^deps: installing meson ninja-build valgrind$' "the missing packages are reported by name"
t_is "$(grep -c '^update' "$T/apt-get.calls")" 1 "apt-get update runs once"
t_is "$(grep '^install' "$T/apt-get.calls")" "install -y -q meson ninja-build valgrind" \
        "apt-get install gets exactly the missing names"
t_match "$out" '^after$' "the caller goes on after installing (set -e does not stop it)"
t_nomatch "$out" 'already installed' "it does not claim everything is installed"

# Nothing installed at all: every package is asked for.
: >"$T/installed"
run_deps >/dev/null
t_is "$(grep '^install' "$T/apt-get.calls")" "install -y -q $(echo $all)" "with nothing installed, every package is installed"

# A package the archive lacks is dropped with a warning, the rest still installed.
grep -vx -e meson -e bpftool <<<"$all" >"$T/installed"
echo bpftool >"$T/unknown"
out=$(run_deps)
t_is "$(grep '^install' "$T/apt-get.calls")" "install -y -q meson" "a package the archive lacks is skipped"
t_match "$out" "no package 'bpftool'" "and named in a warning"

# Everything installed: no apt at all.
printf '%s\n' "$all" >"$T/installed"
: >"$T/unknown"
out=$(run_deps)
t_match "$out" "^deps: all $(wc -l <<<"$all") packages already installed$" "a complete machine says so"
t_is "$(cat "$T/apt-get.calls")" "" "and runs no apt-get"
t_match "$out" '^after$' "and goes on"

# The two sets: quickstart (build, runc, busybox) inside everything, without the engines and the
# test tools; `test` is everything.
quick=$(bash -c '. "$1/contrib/deps.sh"; printf "%s\n" "${GH_DEPS_QUICKSTART[@]}"' _ "$GH_SOURCE_DIR")
t_is "$(comm -23 <(sort <<<"$quick") <(sort <<<"$all"))" "" "every quickstart package is in the full set"
for p in meson gcc libelf-dev libtirpc-dev libcap-dev libjansson-dev libmicrohttpd-dev libyaml-dev rpcsvc-proto runc busybox-static; do
        t_match "$quick" "^$p\$" "quickstart needs $p"
done
for p in docker.io containerd podman crun prometheus debhelper valgrind clang tmux; do
        t_nomatch "$quick" "^$p\$" "quickstart does not install $p"
done
: >"$T/installed"
: >"$T/unknown"
run_deps quickstart >/dev/null
t_is "$(grep '^install' "$T/apt-get.calls")" "install -y -q $(echo $quick)" \
        "a fresh machine, quickstart set: exactly the quickstart packages"
run_deps test >/dev/null
t_is "$(grep '^install' "$T/apt-get.calls")" "install -y -q $(echo $all)" "the test set: every package"
printf '%s\n' "$quick" >"$T/installed"
out=$(run_deps quickstart)
t_match "$out" "^deps: all $(wc -l <<<"$quick") packages already installed$" "quickstart set complete: no apt"
t_is "$(cat "$T/apt-get.calls")" "" "... and runs no apt-get"
out=$(run_deps)
rest=$(bash -c '. "$1/contrib/deps.sh"; printf "%s\n" "${GH_DEPS_TEST[@]}"' _ "$GH_SOURCE_DIR")
t_match "$out" "^deps: installing $(echo $rest)\$" "... while the test set still lacks the rest"
out=$(run_deps bogus)
t_match "$out" "unknown set 'bogus'" "an unknown set is refused, by name"
t_nomatch "$out" '^after$' "... and stops the caller"

# contrib/quickstart.sh itself, on a fresh machine: it asks for the quickstart set and nothing more
# (a meson stub that fails stops it right after the dependencies).
: >"$T/installed"
printf '#!/bin/sh\necho "meson stub: stop here" >&2; exit 1\n' >"$T/bin/meson"
chmod 755 "$T/bin/meson"
rm -f "$T/apt-get.calls"
out=$(PATH="$T/bin:$PATH" bash "$GH_SOURCE_DIR/contrib/quickstart.sh" "$T/qs-build" 2>&1)
t_is "$(grep '^install' "$T/apt-get.calls")" "install -y -q $(echo $quick)" \
        "quickstart.sh installs the quickstart set only (no docker.io, podman, prometheus, ...)"
t_match "$out" "meson stub: stop here" "... then goes on to build"
rm -f "$T/bin/meson"

# Without root the missing names are printed and the caller stops (set -e).
grep -vx meson <<<"$all" >"$T/installed"
printf '#!/bin/sh\necho 1000\n' >"$T/bin/id"
out=$(run_deps)
t_match "$out" '^deps: missing meson; run as root' "not root: says what is missing"
t_nomatch "$out" '^after$' "and stops the caller"
t_is "$(cat "$T/apt-get.calls")" "" "without running apt-get"

t_done
