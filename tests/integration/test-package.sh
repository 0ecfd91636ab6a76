#!/bin/bash
# The Debian package: `dpkg-buildpackage -us -uc -b` builds offline from a copy of the tree, the .deb
# installs into a fresh directory tree (dpkg --root) and uninstalls cleanly, its programs start and
# need only glibc, and every manual page renders with man -l.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
t_need_cmd dpkg-buildpackage dpkg-deb dpkg man
(cd "$GH_SOURCE_DIR" && dpkg-checkbuilddeps) >"$T/deps.log" 2>&1 ||
        t_skip_all "build dependencies missing: $(tail -n 1 "$T/deps.log")"

# A copy of the tree as git knows it (tracked and new files, no build directories).
SRC=$T/src/gpu-hook
mkdir -p "$SRC"
if git -C "$GH_SOURCE_DIR" rev-parse >/dev/null 2>&1; then
        (cd "$GH_SOURCE_DIR" && git ls-files -co --exclude-standard | grep -v -E '^(build|\.gpukit)' | tar -cf - -T -) |
                tar -C "$SRC" -xf -
else
        tar -C "$GH_SOURCE_DIR" --exclude='./build*' --exclude=./.gpukit -cf - . | tar -C "$SRC" -xf -
fi
start=$SECONDS
(cd "$SRC" && dpkg-buildpackage -us -uc -b) >"$T/build.log" 2>&1
rc=$?
t_is "$rc" 0 "dpkg-buildpackage -us -uc -b builds ($((SECONDS - start)) s)" || t_diag_file "$T/build.log" 30
DEB=$(ls "$T"/src/gpu-hook_*_*.deb 2>/dev/null | head -n 1)
[ -f "$DEB" ] || { echo "Bail out! no .deb"; exit 1; }
t_pass "the package: $(basename "$DEB")"
t_match "$(dpkg-deb -f "$DEB" Depends)" 'libc6' "Depends names libc6 (shlibs)"

# Unpacked alone: the programs start and map nothing but glibc.
X=$T/x
dpkg -x "$DEB" "$X"
t_match "$("$X/usr/bin/gpu-cli" --version 2>&1)" '^gpu-cli [0-9]' "gpu-cli --version from the package"
t_match "$("$X/usr/bin/gpu-hook" --version 2>&1)" '^gpu-hook [0-9]' "gpu-hook --version from the package"
t_match "$("$X/usr/bin/gpu-runtime" --gpu-runtime-version 2>&1)" '^gpu-runtime [0-9]' "gpu-runtime starts from the package"
# The two hooks every container start runs, and the wrapper, are static programs (no loader for
# LD_PRELOAD to reach).
t_is "$(elf_linkage "$X/usr/bin/gpu-hook")" static "gpu-hook from the package is linked statically"
t_is "$(elf_linkage "$X/usr/bin/gpu-runtime")" static "gpu-runtime from the package is linked statically"
CDIHOOK=$(find "$X/usr" -name gpu-cdi-hook | head -n 1) # libexecdir: the distribution's choice
t_is "$(elf_linkage "${CDIHOOK:-/nonexistent}")" static "gpu-cdi-hook (our CDI specs' hook) is there, static"
t_match "$("${CDIHOOK:-false}" cdi-hook --help 2>&1)" '^Usage: gpu-cli .*cdi-hook' "gpu-cdi-hook answers as gpu-cli cdi-hook"
t_match "$("$(dirname "${CDIHOOK:-/}")/nvidia-cdi-hook" --version 2>&1)" '^nvidia-cdi-hook version' "nvidia-cdi-hook beside it answers as NVIDIA's hook"
for b in gpu-cli gpu-runtime; do
        t_nomatch "$(ldd "$X/usr/bin/$b" | awk '{ print $1 }')" '^lib(tirpc|elf|cap|jansson|krb5)' "$b needs only glibc"
done
for page in usr/share/man/man1/gpu-hook.1.gz usr/share/man/man1/gpu-cli.1.gz usr/share/man/man1/gpu-runtime.1.gz \
        usr/share/man/man5/gpu-hook-config.5.gz; do
        out=$(MANWIDTH=80 man -l "$X/$page" 2>"$T/man.err")
        t_match "$out" '^NAME' "man -l $(basename "$page" .gz) renders" || t_diag_file "$T/man.err"
done
t_ok "bash completion for gpu-cli parses" bash -n "$X/usr/share/bash-completion/completions/gpu-cli"
t_match "$(cat "$X/usr/lib/x86_64-linux-gnu/pkgconfig/gpuhook.pc" 2>/dev/null)" '^Libs: .*-lgpuhook' "gpuhook.pc (pkg-config --libs gpuhook)"
t_match "$(cat "$X/usr/share/containers/oci/hooks.d/oci-gpu-hook.json")" '"/usr/bin/gpu-hook"' "hooks.d file names /usr/bin/gpu-hook"

# Installed by dpkg into a fresh root (its dependencies are the host's business: --force-depends).
R=$T/root
mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates"
: >"$R/var/lib/dpkg/status"
t_ok "dpkg --root installs the package" dpkg --root="$R" --force-depends --force-script-chrootless -i "$DEB"
t_match "$(dpkg --root="$R" -s gpu-hook 2>&1)" '^Status: install ok installed' "dpkg says it is installed"
t_ok "the installed gpu-cli starts" "$R/usr/bin/gpu-cli" --version
t_ok "dpkg --root removes it" dpkg --root="$R" --force-script-chrootless -r gpu-hook
t_is "$(cd "$R" && find usr -type f -o -type l 2>/dev/null | grep -v '^usr/share/doc' | head -n 5)" "" "nothing of the package is left"
t_done
