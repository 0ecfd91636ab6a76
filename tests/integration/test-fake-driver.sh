#!/bin/bash
# The fake NVIDIA driver (tests/fake-driver) is what every other test injects, so prove it first:
# its ld.so.cache lists every driver library of docs/architecture.md#what-a-container-gets (the list below is written
# from that table, not from the tool), the fake nvidia-smi reports exactly the profile's GPUs and
# only those whose /dev/nvidiaN exists, NVML failure modes behave, and cuda-probe needs the nodes.
. "${GH_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib.sh"

t_need_root
t_need_cmd ldconfig readelf timeout

VER=580.95.05
MAKE_ROOT=$GH_SOURCE_DIR/tests/fake-driver/make-root.sh
PROFILES=$GH_SOURCE_DIR/tests/fake-driver/profiles
FAKE_DIR=${GH_BUILD_DIR:+$GH_BUILD_DIR/tests/fake-driver}
CUDA_PROBE=${FAKE_DIR:-/nonexistent}/cuda-probe
[ -x "$CUDA_PROBE" ] || t_fatal "no built fake driver (GH_BUILD_DIR=${GH_BUILD_DIR:-unset}); run it through meson test"

# That table, every capability, with the SONAME each library carries (the soname number for
# the public ones, the full version for the driver-internal ones).
LIBS64="libnvidia-ml.so.1 libnvidia-cfg.so.1
libcuda.so.1 libcudadebugger.so.1 libnvidia-opencl.so.1 libnvidia-gpucomp.so.$VER libnvidia-ptxjitcompiler.so.1
libnvidia-fatbinaryloader.so.$VER libnvidia-allocator.so.1 libnvidia-compiler.so.$VER libnvidia-pkcs11.so.$VER
libnvidia-pkcs11-openssl3.so.$VER libnvidia-nvvm.so.4
libvdpau_nvidia.so.1 libnvidia-encode.so.1 libnvidia-opticalflow.so.1 libnvcuvid.so.1
libnvidia-eglcore.so.$VER libnvidia-glcore.so.$VER libnvidia-tls.so.$VER libnvidia-glsi.so.$VER libnvidia-fbc.so.1
libnvidia-ifr.so.1 libnvidia-rtcore.so.$VER libnvoptix.so.1 libGLX_nvidia.so.0 libEGL_nvidia.so.0
libGLESv2_nvidia.so.2 libGLESv1_CM_nvidia.so.1 libnvidia-glvkspirv.so.$VER libnvidia-cbl.so.$VER
libnvidia-ngx.so.1"
# libnvidia-nscq exists only as the i386 decoy in the 64-bit directory (README.md, decoys).
LIBS32="libcuda.so.1 libnvidia-ml.so.1 libGLX_nvidia.so.0 libEGL_nvidia.so.0 libnvidia-glcore.so.$VER
libnvidia-eglcore.so.$VER"

# expected_smi PROFILE [MISSING_MINOR]: what `nvidia-smi -L` must print, from the profile JSON.
expected_smi() {
        "$GH_PYTHON" - "$@" <<'EOF'
import json, sys
gpus = json.load(open(sys.argv[1]))["gpus"]
missing = int(sys.argv[2]) if len(sys.argv) > 2 else None
def key(g):
    d, b, rest = g["bus_id"].split(":")
    dev, fn = rest.split(".")
    return tuple(int(x, 16) for x in (d, b, dev, fn))
gpus = sorted((g for g in gpus if g["minor"] != missing), key=key)
for i, g in enumerate(gpus):
    print("GPU %d: %s (UUID: %s)" % (i, g["model"], g["uuid"]))
    for j, m in enumerate((g.get("mig") or {}).get("devices", [])):
        print("  MIG %s Device %d: (UUID: %s)" % (m.get("profile", "1g.10gb"), j, m["uuid"]))
EOF
}

# profile_field PROFILE PYTHON-EXPR over `gpus`
profile_eval() {
        "$GH_PYTHON" -c 'import json, sys
gpus = json.load(open(sys.argv[1]))["gpus"]
print(eval(sys.argv[2]))' "$1" "$2"
}

# smi ROOT LIBDIR BINDIR ARGS...: the root's nvidia-smi on the host, pointed at the root.
smi() {
        local root=$1 libdir=$2 bindir=$3
        shift 3
        FAKE_NVML_ROOT=$root LD_LIBRARY_PATH=$root/$libdir "$root/$bindir/nvidia-smi" "$@"
}

# cache_match TEXT ERE DESC: like t_match, without a pipe: under pipefail, `printf | grep -q` fails
# at random on long input when grep exits before printf has written everything (SIGPIPE).
cache_match() {
        if grep -Eq -- "$2" <<<"$1"; then
                t_pass "$3"
        else
                t_fail "$3"
                t_diag "no line matches /$2/ in the ld.so.cache listing"
        fi
}

check_cache() {
        local layout=$1 root=$2 lib64=$3 lib32=$4 cache soname missing= wrong= f
        cache=$(ldconfig -p -C "$root/etc/ld.so.cache" 2>&1)
        for soname in $LIBS64; do
                grep -qxF -- "	$soname (libc6,x86-64) => /$lib64/$soname" <<<"$cache" ||
                        missing="$missing $soname"
                f=$root/$lib64/${soname%%.so.*}.so.$VER
                if [ "$(readelf -d "$f" 2>/dev/null | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')" != "$soname" ] ||
                   ! grep -q 'Machine:.*X86-64' <<<"$(readelf -h "$f" 2>/dev/null)"; then
                        wrong="$wrong $f"
                fi
        done
        t_is "$missing" "" "$layout: ld.so.cache lists every 64-bit driver library in /$lib64"
        t_is "$wrong" "" "$layout: each is an x86-64 ELF named .so.$VER with the expected SONAME"
        if [ "$layout" = local ]; then
                missing=
                for soname in $LIBS64; do
                        grep -qxF -- "	$soname (libc6,x86-64) => /lib/$soname" <<<"$cache" ||
                                missing="$missing $soname"
                done
                t_is "$missing" "" "local: ld.so.cache also lists the /lib/<soname> links (like the GPU machine)"
                t_is "$(readlink "$root/lib/libcuda.so.1")" "/$lib64/libcuda.so.1" \
                        "local: /lib/libcuda.so.1 points into /$lib64"
        fi
        if grep -q '^m32=yes' "$FAKE_DIR/fake-driver.conf"; then
                missing=
                for soname in $LIBS32; do
                        grep -qxF -- "	$soname (libc6) => /$lib32/$soname" <<<"$cache" ||
                                missing="$missing $soname"
                done
                t_is "$missing" "" "$layout: ld.so.cache lists the i386 compat32 libraries in /$lib32"
        else
                t_skip "$layout: i386 compat32 libraries" "this build has no -m32"
        fi
        cache_match "$cache" "^	libcuda\.so\.1 \(libc6,x86-64\) => /usr/local/lib/libcuda\.so\.1\$" \
                "$layout: the libcuda 470 decoy is in the cache too"
        t_is "$(readlink "$root/usr/local/lib/libcuda.so.1")" libcuda.so.470.42.01 "$layout: ... and is version 470"
        cache_match "$cache" "^	libEGL\.so\.1 \(libc6,x86-64\) => " "$layout: the Mesa-like libEGL decoy is in the cache"
        t_nomatch "$(readelf -d "$root/usr/lib/x86_64-linux-gnu/libEGL.so.1.1.0")" "NEEDED.*nvidia" \
                "$layout: ... and needs no NVIDIA core library"
        t_match "$(readelf -d "$root/$lib64/libEGL_nvidia.so.$VER")" "NEEDED.*\[libnvidia-eglcore\.so\.$VER\]" \
                "$layout: libEGL_nvidia needs libnvidia-eglcore"
        t_match "$(readelf -d "$root/$lib64/libGLX_nvidia.so.$VER")" "NEEDED.*\[libnvidia-glcore\.so\.$VER\]" \
                "$layout: libGLX_nvidia needs libnvidia-glcore"
        if grep -q '^m32=yes' "$FAKE_DIR/fake-driver.conf"; then
                cache_match "$cache" "^	libnvidia-nscq\.so\.$VER \(libc6\) => /$lib64/libnvidia-nscq\.so\.$VER\$" \
                        "$layout: the i386 libnvidia-nscq decoy sits in the 64-bit directory and the cache is valid"
        fi
}

# ---------------------------------------------------------------------------------------------
# Standard layout, default profile

std=$T/std
start=$(date +%s%N)
t_ok "make-root.sh writes a standard-layout root" "$MAKE_ROOT" "$std" --sockets
ms=$(( ($(date +%s%N) - start) / 1000000 ))
# Reported, not asserted: a wall-clock bound fails on a loaded machine without any regression.
t_diag "make-root.sh took ${ms} ms"
check_cache standard "$std" usr/lib/x86_64-linux-gnu usr/lib/i386-linux-gnu

L64=usr/lib/x86_64-linux-gnu
t_is "$(smi "$std" $L64 usr/bin -L 2>&1)" "$(expected_smi "$PROFILES/default.json")" \
        "default profile: nvidia-smi -L lists exactly its 2 GPUs"
want=$("$GH_PYTHON" -c 'import json, sys
gpus = json.load(open(sys.argv[1]))["gpus"]
print("uuid, pci.bus_id, name, driver_version")
for g in gpus:
    d, b, r = g["bus_id"].split(":")
    print("%s, %08X:%s, %s, 580.95.05" % (g["uuid"], int(d, 16), (b + ":" + r).upper(), g["model"]))' \
        "$PROFILES/default.json")
t_is "$(smi "$std" $L64 usr/bin --query-gpu=uuid,pci.bus_id,name,driver_version --format=csv 2>&1)" "$want" \
        "nvidia-smi --query-gpu ... --format=csv prints the real CSV"
out=$(smi "$std" $L64 usr/bin 2>&1)
t_match "$out" "Driver Version: $VER +CUDA Version: 13\.0" "nvidia-smi summary shows driver and CUDA version"
t_match "$(readelf -d "$std/usr/bin/nvidia-smi")" "NEEDED.*libc\.so\.6" "nvidia-smi is a dynamic ELF program"
t_nomatch "$(readelf -d "$std/usr/bin/nvidia-smi")" "RPATH|RUNPATH|NEEDED.*(nvidia|jansson)" \
        "... with no rpath, needing libc only"
t_nomatch "$(readelf -d "$std/$L64/libnvidia-ml.so.$VER")" "NEEDED.*(jansson|libdl|nvidia)" \
        "the fake NVML needs libc only"
t_is "$(head -c 2 "$std/usr/local/bin/nvidia-smi")" '#!' "decoy: usr/local/bin/nvidia-smi is a script wrapper"
t_ok "firmware: lib/firmware/nvidia/$VER/gsp_ga10x.bin and gsp_tu10x.bin" \
        test -s "$std/lib/firmware/nvidia/$VER/gsp_ga10x.bin" -a -s "$std/lib/firmware/nvidia/$VER/gsp_tu10x.bin"
t_ok "--sockets: persistenced and fabricmanager sockets" \
        test -S "$std/run/nvidia-persistenced/socket" -a -S "$std/run/nvidia-fabricmanager/socket"
t_is "$(stat -c '%F %t:%T' "$std/dev/nvidiactl" "$std/dev/nvidia0" "$std/dev/nvidia1" "$std/dev/nvidia-uvm" \
        "$std/dev/nvidia-uvm-tools" "$std/dev/nvidia-modeset" | tr '\n' ' ')" \
        "character special file c3:ff character special file c3:0 character special file c3:1 character special file 1ff:0 character special file 1ff:1 character special file c3:fe " \
        "device nodes nvidiactl, nvidia0/1, nvidia-uvm(-tools), nvidia-modeset with their majors/minors"
t_match "$(cat "$std/proc/driver/nvidia/params")" '^ModifyDeviceFiles: 1$' "proc params has ModifyDeviceFiles: 1"
t_match "$(cat "$std/proc/driver/nvidia/version")" \
        "^NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  $VER  Release Build  " "proc version in the real format"
t_match "$(cat "$std/proc/driver/nvidia/gpus/0000:00:06.0/information")" $'^Device Minor: \t 0$' \
        "proc gpus/<bus id>/information in the real format"
t_not "make-root.sh refuses a non-empty OUTDIR" "$MAKE_ROOT" "$std"

out=$(FAKE_NVML_ROOT=$std LD_LIBRARY_PATH=$std/$L64 "$CUDA_PROBE" 2>&1)
t_is "$out" "CUDA OK: 2 device(s)" "cuda-probe works with the root's device nodes"
rm "$std/dev/nvidia-uvm"
out=$(FAKE_NVML_ROOT=$std LD_LIBRARY_PATH=$std/$L64 "$CUDA_PROBE" 2>&1)
rc=$?
t_is "$rc:$out" "1:cuda-probe: cuInit failed: CUDA_ERROR_NO_DEVICE (100)" \
        "cuda-probe fails cleanly without /dev/nvidia-uvm"
if ! grep -q 'libcuda\.so\.1 ' <<<"$(ldconfig -p)"; then
        out=$(env -u LD_LIBRARY_PATH "$CUDA_PROBE" 2>&1)
        rc=$?
        t_match "$rc:$out" "^1:cuda-probe: cannot load libcuda\.so\.1" "cuda-probe fails cleanly without libcuda"
else
        t_skip "cuda-probe fails cleanly without libcuda" "the host has a libcuda.so.1"
fi

# ---------------------------------------------------------------------------------------------
# Local layout (the GPU machine's), 8 GPUs with MIG

loc=$T/loc
t_ok "make-root.sh writes a local-layout root with the 8gpu-mig profile" \
        "$MAKE_ROOT" "$loc" --layout local --profile "$PROFILES/8gpu-mig.json"
check_cache local "$loc" usr/local/nvidia/lib64 usr/local/nvidia/lib
LL=usr/local/nvidia/lib64
t_is "$(smi "$loc" $LL usr/local/nvidia/bin -L 2>&1)" "$(expected_smi "$PROFILES/8gpu-mig.json")" \
        "8gpu-mig: nvidia-smi -L lists its 8 GPUs in bus-id order with their MIG devices"
t_is "$(head -c 2 "$loc/usr/bin/nvidia-smi")" '#!' "local: usr/bin/nvidia-smi is a shell wrapper"
t_match "$(cat "$loc/usr/bin/nvidia-smi")" "exec /usr/local/nvidia/bin/nvidia-smi" "... exec'ing the ELF in /usr/local/nvidia/bin"
t_ok "local: firmware under usr/local/nvidia/firmware/nvidia/$VER" \
        test -s "$loc/usr/local/nvidia/firmware/nvidia/$VER/gsp_ga10x.bin"
bad=$("$GH_PYTHON" - "$PROFILES/8gpu-mig.json" "$loc" <<'EOF'
import json, os, sys
gpus, root = json.load(open(sys.argv[1]))["gpus"], sys.argv[2]
def minor_of(path):
    for line in open(path):
        if line.startswith("DeviceFileMinor:"):
            return int(line.split(":")[1])
for g in gpus:
    for d in (g.get("mig") or {}).get("devices", []):
        base = "%s/proc/driver/nvidia/capabilities/gpu%d/mig/gi%d" % (root, g["minor"], d["gi"])
        for path, minor in ((base + "/access", d["gi_minor"]), ("%s/ci%d/access" % (base, d["ci"]), d["ci_minor"])):
            node = "%s/dev/nvidia-caps/nvidia-cap%d" % (root, minor)
            if minor_of(path) != minor or os.minor(os.stat(node).st_rdev) != minor:
                print(path)
EOF
)
t_is "$bad" "" "8gpu-mig: every MIG gi/ci access file names its minor, and /dev/nvidia-caps has the node"
t_match "$(cat "$loc/proc/driver/nvidia/capabilities/mig/config")" '^DeviceFileMinor: 1$' "capabilities/mig/config is minor 1"
t_match "$(cat "$loc/proc/driver/nvidia/capabilities/mig/monitor")" '^DeviceFileMinor: 2$' "capabilities/mig/monitor is minor 2"

# The GPU at index 0 disappears (and the others move up) when its node does.
minor0=$(profile_eval "$PROFILES/8gpu-mig.json" 'sorted(gpus, key=lambda g: g["bus_id"])[0]["minor"]')
rm "$loc/dev/nvidia$minor0"
t_is "$(smi "$loc" $LL usr/local/nvidia/bin -L 2>&1)" "$(expected_smi "$PROFILES/8gpu-mig.json" "$minor0")" \
        "removing dev/nvidia$minor0 hides exactly that GPU"
out=$(FAKE_NVML_ROOT=$loc LD_LIBRARY_PATH=$loc/$LL "$CUDA_PROBE" 2>&1)
t_is "$out" "CUDA OK: 7 device(s)" "cuda-probe counts the remaining 7 nodes"

# ---------------------------------------------------------------------------------------------
# Scale and failure modes

big=$T/big
t_ok "make-root.sh writes the 64gpu profile" "$MAKE_ROOT" "$big" --profile "$PROFILES/64gpu.json"
t_is "$(smi "$big" $L64 usr/bin -L 2>&1)" "$(expected_smi "$PROFILES/64gpu.json")" \
        "64gpu: nvidia-smi -L lists all 64 GPUs, PCI domain 0000 before 0001"

for mode in crash hang error; do
        "$MAKE_ROOT" "$T/$mode" --nvml-mode $mode >/dev/null 2>&1
done
smi "$T/crash" $L64 usr/bin -L >/dev/null 2>&1
t_is "$?" 139 "nvml-mode crash: nvmlInit dies with SIGSEGV"
timeout -k 1 2 env FAKE_NVML_ROOT="$T/hang" LD_LIBRARY_PATH="$T/hang/$L64" "$T/hang/usr/bin/nvidia-smi" -L >/dev/null 2>&1
t_is "$?" 124 "nvml-mode hang: nvmlInit never returns"
out=$(smi "$T/error" $L64 usr/bin -L 2>&1)
rc=$?
t_is "$rc" 9 "nvml-mode error: nvidia-smi exits 9 (driver not loaded)"
t_match "$out" "couldn't communicate with the NVIDIA driver" "... with the real message"
out=$(env -u LD_LIBRARY_PATH "$std/usr/bin/nvidia-smi" -L 2>&1)
rc=$?
if ! grep -q 'libnvidia-ml\.so\.1 ' <<<"$(ldconfig -p)"; then
        t_is "$rc" 12 "nvidia-smi without a reachable libnvidia-ml exits 12"
else
        t_skip "nvidia-smi without a reachable libnvidia-ml exits 12" "the host has libnvidia-ml.so.1"
fi

t_done
