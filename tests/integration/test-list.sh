#!/bin/bash
# gpu-cli list on the fake driver, both layouts: exactly the driver's libraries (computed here from
# `ldconfig -p`, the ELF headers and the table of docs/architecture.md#what-a-container-gets, not by the code under test), each real file once,
# the ELF programs and never a wrapper script or a decoy, firmware, sockets, device nodes, JSON.
. "${GH_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib.sh"

t_need_root
t_need_cmd ldconfig readelf

VER=580.95.05
MAKE_ROOT=$GH_SOURCE_DIR/tests/fake-driver/make-root.sh
[ -n "${GH_BUILD_DIR:-}" ] && [ -d "$GH_BUILD_DIR/tests/fake-driver" ] ||
        t_fatal "no built fake driver (GH_BUILD_DIR=${GH_BUILD_DIR:-unset}); run it through meson test"

# The table of docs/architecture.md#what-a-container-gets, every capability.
STEMS="libnvidia-ml libnvidia-cfg libnvidia-nscq
libcuda libcudadebugger libnvidia-opencl libnvidia-gpucomp libnvidia-ptxjitcompiler libnvidia-fatbinaryloader
libnvidia-allocator libnvidia-compiler libnvidia-pkcs11 libnvidia-pkcs11-openssl3 libnvidia-nvvm
libvdpau_nvidia libnvidia-encode libnvidia-opticalflow libnvcuvid
libnvidia-eglcore libnvidia-glcore libnvidia-tls libnvidia-glsi libnvidia-fbc libnvidia-ifr libnvidia-rtcore libnvoptix
libGLX_nvidia libEGL_nvidia libGLESv2_nvidia libGLESv1_CM_nvidia libnvidia-glvkspirv libnvidia-cbl
libnvidia-ngx"
# NVIDIA's EGL platform libraries: graphics, with their own version numbers (docs/graphics.md).
OWN_STEMS="libnvidia-egl-wayland libnvidia-egl-gbm libnvidia-egl-xcb libnvidia-egl-xlib"

# expected_libs ROOT 64|32: host paths of the libraries a correct implementation lists.
expected_libs() {
        ldconfig -p -C "$1/etc/ld.so.cache" | "$GH_PYTHON" -c '
import os, re, struct, sys
root, bits, ver, stems, own = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(), sys.argv[5].split()

def in_root(path):
    # Resolve every symlink as if root were "/" (what the in-root resolver does).
    parts, done, hops = [p for p in path.split("/") if p], "", 0
    while parts:
        p = parts.pop(0)
        if p == ".": continue
        if p == "..": done = os.path.dirname(done) if done else ""; continue
        cand = done + "/" + p
        full = root + cand
        if os.path.islink(full):
            hops += 1
            if hops > 40: return None
            t = os.readlink(full)
            parts = [x for x in t.split("/") if x] + parts
            if t.startswith("/"): done = ""
            continue
        done = cand
    return root + done

seen, out = set(), []
for line in sys.stdin:
    m = re.match(r"\s+(\S+) \((.*)\) => (\S+)$", line)
    if not m: continue
    key, flags, value = m.groups()
    if bits == "64" and flags != "libc6,x86-64": continue
    if bits == "32" and flags not in ("libc6", "ELF"): continue
    stem = [s for s in stems + own if key == s + ".so" or key.startswith(s + ".so.")]
    if not stem: continue
    real = in_root(value)
    if not real or not os.path.isfile(real): continue
    if stem[0] in own:
        if not re.fullmatch(re.escape(stem[0]) + r"\.so\.[0-9]+(\.[0-9]+)+", os.path.basename(real)): continue
    elif not real.endswith(".so." + ver): continue
    with open(real, "rb") as f: h = f.read(20)
    if h[:4] != b"\x7fELF": continue
    cls, etype, mach = h[4], struct.unpack("<H", h[16:18])[0], struct.unpack("<H", h[18:20])[0]
    if etype != 3 or (bits == "64" and (cls, mach) != (2, 62)) or (bits == "32" and (cls, mach) != (1, 3)): continue
    st = os.stat(real)
    if (st.st_dev, st.st_ino) in seen: continue
    seen.add((st.st_dev, st.st_ino))
    out.append(real)
print("\n".join(sorted(out)))
' "$1" "$2" "$VER" "$STEMS" "$OWN_STEMS"
}

# is_elf_program FILE: an ELF executable (not a script).
is_elf_program() { readelf -h "$1" 2>/dev/null | grep -Eq 'Type:[[:space:]]+(EXEC|DYN)'; }

check_layout() {
        local layout=$1 R smi out want got json
        R=$T/root-$layout
        if ! "$MAKE_ROOT" "$R" --layout "$layout" --sockets >"$T/make-$layout.log" 2>&1; then
                t_fail "$layout: make the fake driver root"
                t_diag_file "$T/make-$layout.log"
                return
        fi

        want=$(expected_libs "$R" 64)
        got=$("$GPU_CLI" --root="$R" list --libraries | sort)
        t_is "$got" "$want" "$layout: list --libraries prints exactly the driver's 64-bit libraries"
        t_is "$(printf '%s\n' "$want" | wc -l)" 34 "$layout: that is 34 libraries (libnvidia-nscq is only an i386 decoy; 2 EGL platform libraries)"
        t_is "$("$GPU_CLI" --root="$R" list --libraries | sort | uniq -d)" "" "$layout: each real file once"
        t_nomatch "$got" "470\.42\.01|libEGL\.so|nscq" "$layout: no decoy library (other version, Mesa libEGL, i386 nscq)"
        t_match "$got" "^$R/" "$layout: host paths carry the root prefix"

        want=$( (expected_libs "$R" 64; expected_libs "$R" 32) | sort)
        got=$("$GPU_CLI" --root="$R" list --libraries --compat32 | sort)
        t_is "$got" "$want" "$layout: --compat32 adds exactly the i386 libraries"

        out=$("$GPU_CLI" --root="$R" list --binaries)
        case $layout in
        standard) smi=$R/usr/bin/nvidia-smi ;;
        local) smi=$R/usr/local/nvidia/bin/nvidia-smi ;;
        esac
        t_match "$out" "^$smi\$" "$layout: nvidia-smi is the ELF program $smi"
        t_is "$(printf '%s\n' "$out" | grep -c 'nvidia-smi$')" 1 "$layout: one nvidia-smi"
        t_is "$(printf '%s\n' "$out" | wc -l)" 6 "$layout: six programs"
        local bad=""
        while IFS= read -r f; do
                is_elf_program "$f" || bad="$bad $f"
        done <<<"$out"
        t_is "$bad" "" "$layout: every listed program is ELF (no wrapper script)"

        out=$("$GPU_CLI" --root="$R" list --firmwares | sort)
        case $layout in
        standard) want=$R/lib/firmware/nvidia/$VER ;;
        local) want=$R/usr/local/nvidia/firmware/nvidia/$VER ;;
        esac
        t_is "$out" "$(printf '%s\n' "$want/gsp_ga10x.bin" "$want/gsp_tu10x.bin")" "$layout: the GSP firmware"
        t_is "$("$GPU_CLI" --root="$R" list --firmwares --no-gsp-firmware)" "" "$layout: --no-gsp-firmware"

        out=$("$GPU_CLI" --root="$R" list --ipcs | sort)
        t_is "$out" "$(printf '%s\n' "$R/run/nvidia-fabricmanager/socket" "$R/run/nvidia-persistenced/socket")" \
                "$layout: both service sockets"
        t_is "$("$GPU_CLI" --root="$R" list --ipcs --no-persistenced --no-fabricmanager)" "" \
                "$layout: --no-persistenced --no-fabricmanager"

        out=$("$GPU_CLI" --root="$R/" list)
        t_is "$(printf '%s\n' "$out" | head -n 4 | tr '\n' ' ')" \
                "$R/dev/nvidiactl $R/dev/nvidia-uvm $R/dev/nvidia-uvm-tools $R/dev/nvidia-modeset " \
                "$layout: list starts with the control device nodes (no GPU without --device)"
        t_nomatch "$out" "/dev/nvidia[0-9]" "$layout: no GPU node without --device"
        t_is "$(printf '%s\n' "$out" | wc -l)" $((4 + 34 + 6 + 2 + 2 + 6)) "$layout: list prints everything (6 loader files)"
        out=$("$GPU_CLI" --root="$R" list --device=all)
        t_is "$(printf '%s\n' "$out" | grep -c "^$R/dev/nvidia[0-9]")" 2 "$layout: --device=all adds both GPUs"
        out=$("$GPU_CLI" --root="$R" list --device=1 --libraries --ipcs)
        t_is "$(printf '%s\n' "$out" | grep "/dev/")" "" "$layout: selectors leave out device nodes"

        json=$("$GPU_CLI" --root="$R" list --json --device=0 --compat32)
        got=$(printf '%s' "$json" | "$GH_PYTHON" -c '
import json, sys
o = json.load(sys.stdin)
print(o["driver_version"])
print(" ".join(d["path"] for d in o["devices"]))
print(len(o["libraries"]), sum(l["compat32"] for l in o["libraries"]))
print(sorted(set(l["capability"] for l in o["libraries"])))
print(next(l["soname"] for l in o["libraries"] if l["path"].endswith("/libcuda.so.'$VER'") and not l["compat32"]))
')
        t_is "$got" "$VER
/dev/nvidiactl /dev/nvidia-uvm /dev/nvidia-uvm-tools /dev/nvidia-modeset /dev/nvidia0
$(($(expected_libs "$R" 64 | wc -l) + $(expected_libs "$R" 32 | wc -l))) $(expected_libs "$R" 32 | wc -l)
['compute', 'graphics', 'ngx', 'utility', 'video']
libcuda.so.1" "$layout: --json: version, devices, libraries with capability and SONAME"
}

check_layout standard
check_layout local

# Errors: no driver is exit 3, a bad option exit 2, an unknown device exit 1; one line each.
mkdir -p "$T/empty"
out=$("$GPU_CLI" --root="$T/empty" list 2>&1)
t_is "$?" 3 "no driver under --root: exit 3"
t_is "$(printf '%s\n' "$out" | wc -l)" 1 "no driver: one line ($out)"
"$GPU_CLI" --root="$T/root-standard" list --frobnicate >/dev/null 2>&1
t_is "$?" 2 "unknown option: exit 2"
out=$("$GPU_CLI" --root="$T/root-standard" list --device=9 2>&1)
t_is "$?" 1 "unknown device: exit 1"
t_match "$out" "unknown device '9'" "unknown device: the message names it"
rm "$T/root-standard/etc/ld.so.cache"
out=$("$GPU_CLI" --root="$T/root-standard" list 2>&1)
t_match "$out" "ld.so.cache.*--ldcache" "no ld.so.cache: the message says --ldcache"
out=$(ldconfig -r "$T/root-standard" -C /etc/other.cache 2>&1 && "$GPU_CLI" --root="$T/root-standard" --ldcache=/etc/other.cache list --libraries | wc -l)
t_is "$out" 34 "--ldcache=FILE reads that cache inside the root"

# A GPU's node with another GPU's device number (a stale or tampered /dev): refused, never listed
# (configure would bind it and allow that number in the device cgroup).
mknod_root=$T/root-standard
rm -f "$mknod_root/dev/nvidia1" && mknod "$mknod_root/dev/nvidia1" c 195 0
out=$("$GPU_CLI" --root="$mknod_root" --ldcache=/etc/other.cache list --device=1 2>&1)
t_is "$?" 1 "/dev/nvidia1 with the number 195:0: list --device=1 fails"
t_match "$out" 'nvidia1 has device number 195:0, expected 195:1' "... and the message names the node and both numbers"

t_done
