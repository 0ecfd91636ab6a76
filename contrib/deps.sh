# shellcheck shell=bash
# Build and test dependencies on Debian 12 / Ubuntu, shared by run-tests.sh and quickstart.sh.
# Source it, then call gh_install_deps.  apt runs only when something is missing, so a warm machine
# pays one dpkg-query.

# gcc-aarch64-linux-gnu is deliberately absent: it conflicts with gcc-multilib.
GH_DEPS=(
        meson ninja-build pkg-config gcc clang
        libelf-dev libtirpc-dev libcap-dev libjansson-dev libseccomp-dev libyaml-dev
        gcc-multilib libc6-dev-i386
        runc crun podman busybox-static bpftool debootstrap
        python3 file util-linux time patchelf valgrind
        libmicrohttpd-dev prometheus tmux
        libvulkan-dev libegl-dev libgles-dev
        docker.io containerd scdoc debhelper dpkg-dev rpcsvc-proto man-db
        python3-jsonschema golang-github-container-orchestrated-devices-container-device-interface-dev
        clang-format
)

# Packages of GH_DEPS that are not installed.  Safe under `set -euo pipefail`: dpkg-query exits 1
# for a package it has never heard of, which is exactly the case to report, not a reason to stop.
gh_missing_deps() {
        local p status
        for p in "${GH_DEPS[@]}"; do
                status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null) || status=
                [ "$status" = installed ] || echo "$p"
        done
}

gh_install_deps() {
        local missing avail=() p
        if ! command -v dpkg-query >/dev/null 2>&1; then
                echo "deps: not a Debian/Ubuntu system; install by hand: ${GH_DEPS[*]}" >&2
                return 0
        fi
        # A command substitution, not `< <(...)`: a failure inside a process substitution is lost
        # and would read as "nothing missing".
        local list
        list=$(gh_missing_deps) || { echo "deps: cannot list installed packages (dpkg-query failed)" >&2; return 1; }
        mapfile -t missing <<<"$list"
        [ -n "$list" ] || missing=()
        if [ ${#missing[@]} -eq 0 ]; then
                echo "deps: all ${#GH_DEPS[@]} packages already installed"
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
