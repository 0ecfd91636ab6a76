# shellcheck shell=bash
# Dependencies on Debian 12 / Ubuntu, in two sets.  Source it, then call gh_install_deps SET:
#
#   quickstart  what contrib/quickstart.sh needs to build and show one GPU container: the build
#               dependencies, runc, busybox and python3 (the fake driver root and the bundle)
#   test        everything contrib/run-tests.sh needs as well: the other runtimes and engines,
#               compilers and tools the suites use (the default)
#
# apt runs only when something is missing, so a warm machine pays one dpkg-query.

GH_DEPS_QUICKSTART=(
        meson ninja-build pkg-config gcc
        libelf-dev libtirpc-dev libcap-dev libjansson-dev libmicrohttpd-dev libyaml-dev rpcsvc-proto
        runc busybox-static python3
)
# gcc-aarch64-linux-gnu is deliberately absent: it conflicts with gcc-multilib.
GH_DEPS_TEST=(
        clang libseccomp-dev
        gcc-multilib libc6-dev-i386
        crun podman bpftool debootstrap
        file util-linux time patchelf valgrind
        prometheus tmux
        libvulkan-dev libegl-dev libgles-dev
        docker.io containerd scdoc debhelper dpkg-dev man-db
        python3-jsonschema golang-github-container-orchestrated-devices-container-device-interface-dev
        clang-format
)
# Every package: what `gh_install_deps test` installs.
GH_DEPS=("${GH_DEPS_QUICKSTART[@]}" "${GH_DEPS_TEST[@]}")

# The packages of a set (quickstart, test) that are not installed.  Safe under `set -euo pipefail`:
# dpkg-query exits 1 for a package it has never heard of, which is exactly the case to report, not
# a reason to stop.
gh_missing_deps() {
        local p status
        local -a want
        gh_deps_of "${1:-test}" want || return 1
        for p in "${want[@]}"; do
                status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null) || status=
                [ "$status" = installed ] || echo "$p"
        done
}

# gh_deps_of SET ARRAY: the packages of SET into the array named ARRAY.
gh_deps_of() {
        local -n _out=$2
        case $1 in
        quickstart) _out=("${GH_DEPS_QUICKSTART[@]}") ;;
        test) _out=("${GH_DEPS[@]}") ;;
        *)
                echo "deps: unknown set '$1'; use quickstart or test" >&2
                return 1
                ;;
        esac
}

# gh_install_deps [SET]: installs what SET (default test: everything) lacks.
gh_install_deps() {
        local set=${1:-test} missing avail=() p
        local -a want
        gh_deps_of "$set" want || return 1
        if ! command -v dpkg-query >/dev/null 2>&1; then
                echo "deps: not a Debian/Ubuntu system; install by hand: ${want[*]}" >&2
                return 0
        fi
        # A command substitution, not `< <(...)`: a failure inside a process substitution is lost
        # and would read as "nothing missing".
        local list
        list=$(gh_missing_deps "$set") || { echo "deps: cannot list installed packages (dpkg-query failed)" >&2; return 1; }
        mapfile -t missing <<<"$list"
        [ -n "$list" ] || missing=()
        if [ ${#missing[@]} -eq 0 ]; then
                echo "deps: all ${#want[@]} packages already installed"
                return 0
        fi
        if [ "$(id -u)" -ne 0 ]; then
                echo "deps: missing ${missing[*]}; run as root or install them with apt-get" >&2
                return 1
        fi
        echo "deps: installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q >/dev/null || { echo "deps: apt-get update failed; check the apt sources" >&2; return 1; }
        # A package this release does not have (e.g. bpftool on an old Ubuntu) is dropped, not fatal.
        for p in "${missing[@]}"; do
                if apt-cache show "$p" >/dev/null 2>&1; then
                        avail+=("$p")
                else
                        echo "deps: warning: no package '$p' in this distribution's archive; skipping it" >&2
                fi
        done
        [ ${#avail[@]} -eq 0 ] && return 0
        apt-get install -y -q "${avail[@]}" </dev/null >/tmp/gh-apt.log 2>&1 || {
                tail -n 20 /tmp/gh-apt.log >&2
                echo "deps: apt-get install failed (log above, full log in /tmp/gh-apt.log)" >&2
                return 1
        }
}
