#!/bin/bash
# gpu-hook end to end with the fake driver: the NVIDIA environment of the image decides what the
# container gets, under runc (createRuntime and prestart), crun, and podman with contrib's hooks.d.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
t_need_root
t_need_cmd runc
MKROOT=$GH_SOURCE_DIR/tests/fake-driver/make-root.sh

DRV=$T/drv
bash "$MKROOT" "$DRV" >"$T/mkroot.log" 2>&1 || { t_diag_file "$T/mkroot.log"; t_fatal "make-root.sh failed"; }
CUDA_PROBE=$(find "$GH_BUILD_DIR/tests/fake-driver" -name cuda-probe -type f -perm -u+x | head -n1)
UUID0=$(sed -n 's/^GPU UUID:[[:space:]]*//p' "$(ls -d "$DRV"/proc/driver/nvidia/gpus/* | sort | head -n1)/information")

cat >"$T/config.json" <<EOF
{"cli": {"root": "$DRV", "path": "$GPU_CLI"}, "log": {"file": "$T/hook.log"}, "containers": {"dir": "$T/records"}}
EOF

PROBE='
echo "smi:$(nvidia-smi -L 2>&1 | tr "\n" "|")"
echo "cuda:$(cuda-probe 2>&1 | head -n1)"
echo "dev:$(ls /dev | grep -E "^nvidia" | sort | tr "\n" ",")"
echo "nvfiles:$(ls /usr/lib/x86_64-linux-gnu /usr/bin 2>/dev/null | grep -cE "nvidia|libcuda")"
echo "preload:$(ls /marker-* 2>/dev/null | wc -l)"
'

new_container() {
        ROOTFS=$T/$1/rootfs
        BUNDLE=$T/$1/bundle
        make_busybox_rootfs "$ROOTFS" --glibc || return 1
        [ -n "$CUDA_PROBE" ] && install -m 755 "$CUDA_PROBE" "$ROOTFS/usr/local/bin/cuda-probe"
        make_bundle "$BUNDLE" "$ROOTFS" /bin/sh -c "$PROBE"
}
field() { printf '%s\n' "$RUN_STDOUT" | sed -n "s/^$1://p"; }
ngpus() { field smi | tr '|' '\n' | grep -c '^GPU '; }

host_mountinfo_snapshot "$T/mounts.before"

# case NAME STAGE RUNTIME ENV... : a container with the hook and that environment
run_case() {
        local name=$1 stage=$2 runtime=$3
        shift 3
        new_container "$name"
        [ $# -gt 0 ] && bundle_set_env "$BUNDLE" "$@"
        bundle_add_hook "$BUNDLE" "$stage" "$GPU_HOOK" "--config=$T/config.json" "$stage"
        if [ "$runtime" = crun ]; then run_crun "$BUNDLE" "$name"; else run_runc "$BUNDLE" "$name"; fi
}

run_case all createRuntime runc NVIDIA_VISIBLE_DEVICES=all
t_is "$RUN_RC" 0 "runc, NVIDIA_VISIBLE_DEVICES=all: container ran" || t_diag "$RUN_STDERR"
t_is "$(ngpus)" 2 "=all: nvidia-smi lists both GPUs"
t_match "$(field cuda)" '^CUDA OK: 2 device' "=all: CUDA sees both GPUs (default capabilities utility,compute)"

# The hook configures in its own process: its log has configure's phases and no gpu-cli exec; its
# environment does not reach the driver service child or anything else it runs.
line=$(grep '"result":"configured"' "$T/hook.log" | tail -n 1)
t_match "$line" '"configure\.driver":[0-9]+,"configure\.gpus":[0-9]+,.*"configure\.cgroup":[0-9]+,"configure\.other":-?[0-9]+' \
        "in-process configure: the log has its phases" || t_diag "$line"
t_nomatch "$line" 'configure\.exec' "in-process configure: no gpu-cli was exec'd"

# "cli": {"exec": true}: the same container through `gpu-cli configure`.
cp "$T/config.json" "$T/config-inproc.json"
sed 's|"cli": {|"cli": {"exec": true, |' "$T/config-inproc.json" >"$T/config.json"
run_case exec createRuntime runc NVIDIA_VISIBLE_DEVICES=all
t_is "$RUN_RC" 0 "cli.exec: the container ran" || t_diag "$RUN_STDERR"
t_is "$(ngpus)" 2 "cli.exec: nvidia-smi lists both GPUs"
t_match "$(grep '"result":"configured"' "$T/hook.log" | tail -n 1)" '"configure\.exec":-?[0-9]+' "cli.exec: gpu-cli configure ran"
cp "$T/config-inproc.json" "$T/config.json"

run_case one prestart runc NVIDIA_VISIBLE_DEVICES=0 NVIDIA_DRIVER_CAPABILITIES=utility
t_is "$RUN_RC" 0 "runc prestart, =0, utility: container ran" || t_diag "$RUN_STDERR"
t_is "$(ngpus)" 1 "=0: one GPU"
t_match "$(field smi)" "$UUID0" "=0: it is GPU 0"
t_nomatch "$(field cuda)" '^CUDA OK' "capabilities=utility: no CUDA"

run_case none createRuntime runc NVIDIA_VISIBLE_DEVICES=none
t_is "$RUN_RC" 0 "=none: container ran" || t_diag "$RUN_STDERR"
t_nomatch "$(field dev)" 'nvidia[0-9]' "=none: no GPU device node"
t_not "=none: the driver files are injected" test "$(field nvfiles)" -eq 0
t_is "$(ngpus)" 0 "=none: nvidia-smi lists no GPU"

run_case void createRuntime runc NVIDIA_VISIBLE_DEVICES=void
t_is "$RUN_RC" 0 "=void: container ran" || t_diag "$RUN_STDERR"
t_is "$(field nvfiles)" 0 "=void: no NVIDIA file in the container"
t_is "$(field dev)" "" "=void: no NVIDIA device node"

run_case unset createRuntime runc
t_is "$RUN_RC" 0 "unset: container ran" || t_diag "$RUN_STDERR"
t_is "$(field nvfiles)" 0 "unset: not a GPU container"

run_case legacy createRuntime runc CUDA_VERSION=12.2.0
t_is "$RUN_RC" 0 "legacy CUDA_VERSION image: container ran" || t_diag "$RUN_STDERR"
t_is "$(ngpus)" 2 "legacy CUDA_VERSION image: all GPUs"

run_case req createRuntime runc NVIDIA_VISIBLE_DEVICES=0 "NVIDIA_REQUIRE_CUDA=cuda>=99.0"
t_not "NVIDIA_REQUIRE_CUDA=cuda>=99.0: the start is aborted" test "$RUN_RC" -eq 0
t_match "$RUN_STDERR" 'cuda>=99\.0.*update' "the error names the requirement and says to update the driver"

# A start that needs libcuda or NVML (a cuda requirement, and no driver-state cache here).  A static
# gpu-hook loads no driver library: its driver service child execs `gpu-cli driver-service`
# ("cli.path"), which sandboxes itself and loads libcuda; the hook still configures the container in
# its own process.  A dynamic build's child loads it without the exec.
STATIC_HOOK=0
[ "$(elf_linkage "$GPU_HOOK")" = static ] && STATIC_HOOK=1
hook_line() { grep '"result":"configured"' "$T/hook.log" | tail -n 1; }
run_case reqok createRuntime runc NVIDIA_VISIBLE_DEVICES=0 "NVIDIA_REQUIRE_CUDA=cuda>=11.0"
t_is "$RUN_RC" 0 "NVIDIA_REQUIRE_CUDA=cuda>=11.0, no cache: container ran" || t_diag "$RUN_STDERR"
t_is "$(ngpus)" 1 "cuda>=11.0, no cache: one GPU"
t_nomatch "$(hook_line)" 'configure\.exec' "cuda>=11.0, no cache: configured in gpu-hook's own process"
t_match "$(hook_line)" '"configure\.gpus":[1-9][0-9]*' "... and the CUDA version was asked for (no cache)"
if [ $STATIC_HOOK = 1 ]; then
        # The helper is what cli.path names: a path that is not there makes that start fail, saying so.
        sed 's|"path": "[^"]*"|"path": "/nonexistent/gpu-cli"|' "$T/config-inproc.json" >"$T/config.json"
        run_case nohelper createRuntime runc NVIDIA_VISIBLE_DEVICES=0 "NVIDIA_REQUIRE_CUDA=cuda>=11.0"
        t_not "static gpu-hook, cli.path missing, libcuda needed: the start is refused" test "$RUN_RC" -eq 0
        t_match "$RUN_STDERR" 'running /nonexistent/gpu-cli for the driver service.*cli\.path' \
                "... naming the program and the key to fix" || t_diag "$RUN_STDERR"
        run_case nohelper2 createRuntime runc NVIDIA_VISIBLE_DEVICES=0
        t_is "$RUN_RC" 0 "static gpu-hook, cli.path missing, no requirement: needs no helper" || t_diag "$RUN_STDERR"
        cp "$T/config-inproc.json" "$T/config.json"
fi
# With a driver-state cache, that first start fills it (the plan kept for this request); the next
# start of the same request is configured in the hook's own process, static or not.
sed 's|"cli": {|"cli": {"state-file": "'"$T"'/state.json", |' "$T/config-inproc.json" >"$T/config.json"
run_case cold createRuntime runc NVIDIA_VISIBLE_DEVICES=all "NVIDIA_REQUIRE_CUDA=cuda>=11.0"
t_is "$RUN_RC" 0 "cuda>=11.0, cold cache: container ran" || t_diag "$RUN_STDERR"
run_case warm createRuntime runc NVIDIA_VISIBLE_DEVICES=all "NVIDIA_REQUIRE_CUDA=cuda>=11.0"
t_is "$RUN_RC" 0 "cuda>=11.0, warm cache: container ran" || t_diag "$RUN_STDERR"
t_is "$(ngpus)" 2 "cuda>=11.0, warm cache: both GPUs"
t_nomatch "$(hook_line)" 'configure\.(exec|static)' "warm cache: configured in gpu-hook's own process" ||
        t_diag "$(hook_line)"
t_match "$(hook_line)" '"configure\.gpus":0' "warm cache: the kept plan was used (no GPU lookup)" || t_diag "$(hook_line)"
cp "$T/config-inproc.json" "$T/config.json"

run_case reqoff createRuntime runc NVIDIA_VISIBLE_DEVICES=0 "NVIDIA_REQUIRE_CUDA=cuda>=99.0" NVIDIA_DISABLE_REQUIRE=true
t_is "$RUN_RC" 0 "NVIDIA_DISABLE_REQUIRE=true: the requirement is dropped" || t_diag "$RUN_STDERR"

if have_cmd crun; then
        run_case crun createRuntime crun NVIDIA_VISIBLE_DEVICES=0
        t_is "$RUN_RC" 0 "crun, =0: container ran" || t_diag "$RUN_STDERR"
        t_is "$(ngpus)" 1 "crun: one GPU"
fi

# An image environment with LD_PRELOAD must not reach the hook or gpu-cli: the preloaded library
# would leave a marker on the host (and in the rootfs) if it ever ran in either.
if have_cmd gcc; then
        cat >"$T/marker.c" <<'EOF'
#include <fcntl.h>
#include <unistd.h>
__attribute__((constructor)) static void mark(void)
{
        char p[64] = "/marker-";
        int n = 8;
        for (pid_t x = getpid(); x > 0 && n < 60; x /= 10) p[n++] = (char) ('0' + x % 10);
        p[n] = 0;
        close(open(p, O_CREAT | O_WRONLY, 0644));
}
EOF
        gcc -shared -fPIC -o "$T/marker.so" "$T/marker.c"
        for rt in runc crun; do
                have_cmd $rt || continue
                rm -f /marker-*
                new_container "preload-$rt"
                cp "$T/marker.so" "$ROOTFS/marker.so"
                cp "$T/marker.so" /marker.so
                bundle_set_env "$BUNDLE" NVIDIA_VISIBLE_DEVICES=0 LD_PRELOAD=/marker.so LD_LIBRARY_PATH=/nonexistent
                bundle_edit "$BUNDLE" 'c["process"]["args"] = ["/bin/sh", "-c", "ls /dev | grep -c nvidia0"]'
                bundle_add_hook "$BUNDLE" createRuntime "$GPU_HOOK" "--config=$T/config.json" createRuntime
                if [ $rt = crun ]; then run_crun "$BUNDLE" pre; else run_runc "$BUNDLE" pre; fi
                t_is "$RUN_STDOUT" 1 "$rt, LD_PRELOAD in the image: the GPU is still injected" || t_diag "$RUN_STDERR"
                t_is "$(ls /marker-* 2>/dev/null | wc -l)" 0 "$rt: the image's LD_PRELOAD never ran on the host"
                rm -f /marker.so /marker-*
        done
fi

# podman with the shipped hooks.d file (path rewritten to this build)
if have_cmd podman; then
        mkdir -p "$T/hooks.d"
        "$GH_PYTHON" - "$GH_SOURCE_DIR/contrib/hooks.d/oci-gpu-hook.json" "$T/hooks.d/oci-gpu-hook.json" "$GPU_HOOK" "$T/config.json" <<'EOF'
import json, sys
src, dst, hook, cfg = sys.argv[1:]
h = json.load(open(src))
h["hook"]["path"] = hook
h["hook"]["args"] = [hook, "--config=" + cfg] + [a for a in h["hook"]["args"][1:]]
json.dump(h, open(dst, "w"))
EOF
        new_container podman
        run_podman "$ROOTFS" "$T/hooks.d" -e NVIDIA_VISIBLE_DEVICES=0 -- /bin/sh -c "$PROBE"
        t_is "$RUN_RC" 0 "podman with contrib/hooks.d: container ran" || t_diag "$RUN_STDERR"
        t_is "$(ngpus)" 1 "podman: nvidia-smi lists the one GPU"
        new_container podman2
        run_podman "$ROOTFS" "$T/hooks.d" -- /bin/sh -c "$PROBE"
        t_is "$(field nvfiles)" 0 "podman without NVIDIA_VISIBLE_DEVICES: no NVIDIA files"
fi

t_ok "the hook wrote one JSON log line per invocation" test -s "$T/hook.log"
t_is "$("$GH_PYTHON" -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]; print("ok")' "$T/hook.log" 2>&1)" ok "every log line is valid JSON"
mountinfo_unchanged "host mount table unchanged" "$T/mounts.before"
t_done
