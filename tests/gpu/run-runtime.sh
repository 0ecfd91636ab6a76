#!/bin/bash
# gpu-runtime on the real driver, TAP.  Runs THERE (the GPU machine), as root, from the repo root,
# with the kit of tests/gpu/prepare.sh carried as .gpukit:
#
#   bash tests/gpu/run-runtime.sh
#
# A bundle with NO hook and NVIDIA_VISIBLE_DEVICES=0 goes through gpu-runtime -> runc: gpu-runtime
# adds gpu-hook and declares the device nodes; nvidia-smi and a CUDA vector add must pass inside.
# The kit's gpu-runtime reads /run/gpukit/config.json (its compiled-in default, see prepare.sh),
# written here and removed at the end.  Under meson (GH_BUILD_DIR) it uses the engine-test copy.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/kit.sh"
if [ "$KIT_MODE" = kit ]; then
        GPU_RUNTIME=$KIT/bin/gpu-runtime RT_CONFIG=/run/gpukit/config.json
        [ -x "$GPU_RUNTIME" ] || { echo "Bail out! the kit at $KIT has no gpu-runtime: run tests/gpu/prepare.sh again"; exit 1; }
else
        GPU_RUNTIME=$GH_BUILD_DIR/tests/engine/gpu-runtime RT_CONFIG=$GH_BUILD_DIR/tests/engine/engine-config.json
fi

t_need_root
# GH_RUNTIME_DRIVER_ROOT: a driver root other than / (the fake driver, to check this script on a CPU
# machine; vector_add then fails by design).
DRIVER_ROOT=${GH_RUNTIME_DRIVER_ROOT:-/}
if [ "$DRIVER_ROOT" = / ] && ! { [ -e /dev/nvidiactl ] && timeout 60 nvidia-smi -L >/dev/null 2>&1; }; then
        t_skip_all "no NVIDIA GPU here (nvidia-smi -L fails or /dev/nvidiactl is missing)"
fi
exec 9>"$RT_CONFIG.lock"
flock 9
trap 'rm -f "$RT_CONFIG"; _gh_cleanup' EXIT
RUNC_REAL=$(command -v "$RUNC")
printf '{"cli": {"root": "%s", "path": "%s"}, "log": {"file": "%s"}, "runtime": {"runtimes": ["%s"], "hook-path": "%s"}}\n' \
        "$DRIVER_ROOT" "$GPU_CLI" "$T/gpu-hook.log" "$RUNC_REAL" "$GPU_HOOK" >"$RT_CONFIG"
t_diag "gpu-runtime: $GPU_RUNTIME; config: $RT_CONFIG; runc: $RUNC_REAL"

make_busybox_rootfs "$T/rootfs" --glibc >"$T/rootfs.log" 2>&1 || { t_diag_file "$T/rootfs.log"; echo "Bail out! no rootfs"; exit 1; }
VA=
if [ -n "$NVCC" ] && { timeout 300 "$NVCC" -O2 -cudart static -arch=native -o "$T/vector_add" "$here/vector_add.cu" ||
        timeout 300 "$NVCC" -O2 -cudart static -o "$T/vector_add" "$here/vector_add.cu"; } >"$T/nvcc.log" 2>&1; then
        VA=$T/vector_add
        cp "$VA" "$T/rootfs/usr/local/bin/vector_add"
        t_pass "nvcc builds vector_add"
else
        t_fail "nvcc builds vector_add"
        t_diag_file "$T/nvcc.log"
fi

PROBE='echo "smi:$(nvidia-smi -L 2>&1 | tr "\n" "|")"
[ -x /usr/local/bin/vector_add ] && echo "va:$(/usr/local/bin/vector_add 2>&1 | tr "\n" "|")"
echo "dev:$(ls /dev | grep -E "^nvidia" | sort | tr "\n" ",")"'
field() { printf '%s\n' "$RUN_STDOUT" | sed -n "s/^$1://p"; }
host_mountinfo_snapshot "$T/mounts.before"

make_bundle "$T/gpu" "$T/rootfs" /bin/sh -c "$PROBE"
bundle_set_env "$T/gpu" NVIDIA_VISIBLE_DEVICES=0 NVIDIA_DRIVER_CAPABILITIES=compute,utility
t_is "$("$GH_PYTHON" -c 'import json,sys; print(len(json.load(open(sys.argv[1])).get("hooks", {})))' "$T/gpu/config.json")" 0 \
        "the bundle has no hook"
RUNC=$GPU_RUNTIME run_runc "$T/gpu" rt
t_is "$RUN_RC" 0 "gpu-runtime -> runc, NVIDIA_VISIBLE_DEVICES=0, no hook in the bundle: ran" || t_diag "$RUN_STDERR"
t_is "$(field smi | tr '|' '\n' | grep -c '^GPU ')" 1 "nvidia-smi -L lists one GPU" || t_diag "$(field smi)"
if [ -n "$VA" ]; then
        t_match "$(field va)" 'vector_add: PASS' "vector_add passes in the container" || t_diag "$(field va)"
else
        t_skip "vector_add passes in the container" "no vector_add (nvcc)"
fi
t_match "$(field dev)" 'nvidia0,.*nvidiactl' "device nodes nvidia0 and nvidiactl"
t_nomatch "$(field dev)" 'nvidia[1-9]' "no other GPU's node"
devs=$("$GH_PYTHON" -c 'import json,sys; print(",".join(sorted(d["path"] for d in json.load(open(sys.argv[1]))["linux"].get("devices", []))))' "$T/gpu/config.json")
t_match "$devs" '^/dev/nvidia-uvm,/dev/nvidia-uvm-tools,/dev/nvidia0,/dev/nvidiactl$' "config.json declares exactly those nodes in linux.devices"
mountinfo_unchanged "host mount table unchanged" "$T/mounts.before"

make_bundle "$T/plain" "$T/rootfs" /bin/sh -c "$PROBE"
RUNC=$GPU_RUNTIME run_runc "$T/plain" rt
t_is "$RUN_RC:$(field dev)" "0:" "gpu-runtime -> runc without NVIDIA_VISIBLE_DEVICES: ran, no device node" || t_diag "$RUN_STDERR"

# Start-up cost of the wrapper for a non-GPU container: 21 interleaved runs each, medians.
make_bundle "$T/true" "$T/rootfs" /bin/true
mkdir -p "$T_RUNC_ROOT"
a=() b=()
for i in $(seq 1 23); do
        for which in direct wrapped; do
                bin=$RUNC_REAL
                [ $which = wrapped ] && bin=$GPU_RUNTIME
                t0=$EPOCHREALTIME
                "$bin" --root "$T_RUNC_ROOT" run -b "$T/true" "t-$which-$i" </dev/null >/dev/null 2>&1
                t1=$EPOCHREALTIME
                "$RUNC_REAL" --root "$T_RUNC_ROOT" delete -f "t-$which-$i" >/dev/null 2>&1
                us=$(( ${t1/./} - ${t0/./} ))
                [ "$i" -le 2 ] && continue
                if [ $which = direct ]; then a+=("$us"); else b+=("$us"); fi
        done
done
med() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ma=$(med "${a[@]}") mb=$(med "${b[@]}")
t_diag "runc run /bin/true: direct $(awk -v u="$ma" 'BEGIN{printf "%.2f", u/1000}') ms, through gpu-runtime $(awk -v u="$mb" 'BEGIN{printf "%.2f", u/1000}') ms, difference $(awk -v a="$ma" -v b="$mb" 'BEGIN{printf "%.2f", (b-a)/1000}') ms (medians of 21, interleaved; target <= 1 ms)"
t_done
