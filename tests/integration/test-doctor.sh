#!/bin/bash
# gpu-cli doctor against the fake driver: a healthy host and healthy GPU container are all ok, and
# each seeded fault (one per common failure: no GPU requested, runtime not wired, driver/library
# version mismatch, CUDA too new, devices lost to a daemon-reload, no utility capability,
# libraries not in the ld cache, stale CDI spec, ...) is named with its cause and fix.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
t_need_root
t_need_cmd runc

MKROOT=$GH_SOURCE_DIR/tests/fake-driver/make-root.sh
DRV=$T/drv
bash "$MKROOT" "$DRV" --sockets >"$T/mkroot.log" 2>&1 || { t_diag_file "$T/mkroot.log"; t_fail "make-root.sh"; t_done; }
printf '{"cli": {"root": "%s", "path": "%s"}, "log": {"file": "%s"}, "containers": {"dir": "%s"}}\n' "$DRV" "$GPU_CLI" \
        "$T/hook.log" "$T/records" >"$T/config.json"
mkdir -p "$T/hooks" "$T/nohooks" "$T/cdi" "$T/cdi-stale" "$T_RUNC_ROOT"
printf '{"version": "1.0.0", "hook": {"path": "%s", "args": ["gpu-hook", "createRuntime"]}, "when": {"always": true}, "stages": ["createRuntime"]}\n' \
        "$GPU_HOOK" >"$T/hooks/oci-gpu-hook.json"
printf 'cdiVersion: "0.5.0"\nkind: nvidia.com/gpu\ndevices:\n- name: all\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia0\ncontainerEdits:\n  mounts:\n  - hostPath: /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.570.86.10\n    containerPath: /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.570.86.10\n' \
        >"$T/cdi-stale/nvidia.yaml"
# the /dev/char links `setup dev-char-links` makes, one of them udev's relative form instead
"$GPU_CLI" setup dev-char-links --driver-root="$DRV" --dev-char-path="$DRV/dev/char" --record="$T/dev-char-record" >/dev/null
rm "$DRV/dev/char/195:0" && ln -s ../nvidia0 "$DRV/dev/char/195:0"

# doctor ROOT ARGS...: text output in OUT, exit status in RC
doctor() {
        local root=$1
        shift
        OUT=$("$GPU_CLI" --root="$root" doctor --config="$T/config.json" --state-dir="$T_RUNC_ROOT" "$@" 2>&1)
        RC=$?
}
host() { doctor "$1" --hooks-dir="$T/hooks" --cdi-dir="$T/cdi" --cgroup-manager=cgroupfs "${@:2}"; }
# copy_root NAME: a copy of the healthy driver root to break
copy_root() { cp -a "$DRV" "$T/$1" && echo "$T/$1"; }

# ---- host
host "$DRV"
t_diag "$OUT"
t_is "$RC" 0 "host: a healthy fake driver passes (exit 0)"
for c in driver device-nodes library-version nvml persistenced hooks.d cdi cgroups dev-char-links; do
        t_match "$OUT" "^ok +$c " "host: $c is ok"
done

# ---- docker: the GPU runtimes daemon.json names (where dockerd is installed)
mkdir -p "$T/rt" && install -m 0755 /bin/true "$T/rt/gpu-runtime"
printf '{"runtimes": {"gpu": {"path": "%s"}, "runc2": {"path": "/usr/sbin/runc"}}, "default-runtime": "gpu"}\n' "$T/rt/gpu-runtime" >"$T/daemon-ok.json"
printf '{"runtimes": {"gpu": {"path": "/nonexistent/gpu-runtime"}}}\n' >"$T/daemon-gone.json"
printf '{"runtimes": {"gpu": \n' >"$T/daemon-broken.json"
host "$DRV" --docker-config="$T/daemon-ok.json"
if printf '%s\n' "$OUT" | grep -q '^ok +docker +Docker is not installed'; then
        t_skip "docker: daemon.json runtimes" "dockerd is not installed"
else
        t_match "$OUT" "^(ok|warn) +docker .*; runtime gpu: $T/rt/gpu-runtime \\(default\\)" "docker: the default GPU runtime of daemon.json is named"
        t_nomatch "$OUT" "runtime runc2" "docker: runtimes that are not GPU runtimes are not listed"
        host "$DRV" --docker-config="$T/daemon-gone.json"
        t_is "$RC" 1 "docker: a GPU runtime that cannot run fails doctor"
        t_match "$OUT" "^fail +docker .*runtime gpu: /nonexistent/gpu-runtime: No such file" "... naming the runtime and its path"
        t_match "$OUT" "docker run --runtime=gpu fails" "... and what fails"
        host "$DRV" --docker-config="$T/daemon-broken.json"
        t_match "$OUT" "^fail +docker .*daemon-broken.json" "docker: an unreadable daemon.json fails, naming it"
        host "$DRV" --docker-config="$T/nonexistent.json"
        t_match "$OUT" "^(ok|warn) +docker .*; no $T/nonexistent.json" "docker: no daemon.json is not a failure"
fi

R=$(copy_root nodriver) && rm "$R/proc/driver/nvidia/version"
host "$R"
t_is "$RC" 1 "no kernel module: doctor fails"
t_match "$OUT" '^fail +driver .*' "no kernel module: the driver check fails"
t_match "$OUT" 'cause: The NVIDIA kernel module is not loaded' "no kernel module: named as the cause"

R=$(copy_root nonode) && rm "$R/dev/nvidia1"
host "$R"
t_match "$OUT" '^fail +device-nodes +/dev/nvidia1 is missing' "missing /dev/nvidia1: named"
t_match "$OUT" 'fix: +nvidia-modprobe -c 1 ' "missing /dev/nvidia1: the fix creates it"

R=$(copy_root upgraded) && sed -i 's/580\.95\.05/580.99.01/' "$R/proc/driver/nvidia/version"
host "$R"
t_is "$RC" 1 "driver upgraded without reboot: doctor fails"
t_match "$OUT" '^fail +library-version +libnvidia-ml.so.1 -> .*libnvidia-ml.so.580.95.05.*kernel module 580.99.01' \
        "version mismatch: library and module versions shown"
t_match "$OUT" 'cause: .*upgraded without a reboot.*Driver/library version mismatch' "version mismatch: the cause"
t_match "$OUT" 'fix: +reboot' "version mismatch: the fix is a reboot"

R=$T/nvmlerr
bash "$MKROOT" "$R" --nvml-mode error >/dev/null 2>&1
host "$R"
t_match "$OUT" '^fail +nvml .*Driver Not Loaded' "NVML failing: the nvml check fails with NVML's message"

R=$T/nosock
bash "$MKROOT" "$R" >/dev/null 2>&1
host "$R"
t_match "$OUT" '^warn +persistenced' "no nvidia-persistenced: a warning"
t_match "$OUT" 'fix: +systemctl enable --now nvidia-persistenced' "no nvidia-persistenced: the fix"

doctor "$DRV" --hooks-dir="$T/nohooks" --cdi-dir="$T/cdi" --cgroup-manager=cgroupfs
t_match "$OUT" '^warn +hooks.d' "no hooks.d file: a warning"
t_match "$OUT" 'cause: No hooks.d file runs gpu-hook, so podman and CRI-O' "no hooks.d file: the cause"
t_is "$RC" 0 "warnings alone do not fail doctor"
# only the poststop file (it removes container records): still nothing injects the GPUs
mkdir -p "$T/poststop-only"
printf '{"version": "1.0.0", "hook": {"path": "%s", "args": ["gpu-hook", "poststop"]}, "when": {"always": true}, "stages": ["poststop"]}\n' \
        "$GPU_HOOK" >"$T/poststop-only/oci-gpu-hook-poststop.json"
doctor "$DRV" --hooks-dir="$T/poststop-only" --cdi-dir="$T/cdi" --cgroup-manager=cgroupfs
t_match "$OUT" '^warn +hooks.d' "a poststop hooks.d file alone: still the warning (it injects nothing)"

doctor "$DRV" --hooks-dir="$T/hooks" --cdi-dir="$T/cdi-stale" --cgroup-manager=cgroupfs
t_match "$OUT" "^warn +cdi +$T/cdi-stale/nvidia.yaml: it names driver 570.86.10 \\(libnvidia-ml.so.570.86.10\\), the loaded driver is 580.95.05" "stale CDI spec: found"
t_match "$OUT" 'cause: The spec \(written by nvidia-ctk\) no longer matches this host' "stale CDI spec: the cause"
t_match "$OUT" "fix: +nvidia-ctk cdi generate --output=$T/cdi-stale/nvidia.yaml \\(or ours in its place: gpu-cli cdi generate --output=$T/cdi-stale/nvidia.com-gpu.json && rm $T/cdi-stale/nvidia.yaml\\)" \
        "stale spec of nvidia-ctk: its command, or ours in its place"
mkdir -p "$T/cdi-stale-json"
printf '{"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu", "devices": [{"name": "all", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia0"}]}}], "containerEdits": {"hooks": [{"hookName": "createContainer", "path": "/usr/bin/gpu-cli", "args": ["gpu-cli", "cdi-hook", "--link=libnvidia-ml.so.570.86.10::/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"]}]}}\n' \
        >"$T/cdi-stale-json/nvidia.com-gpu.json"
doctor "$DRV" --hooks-dir="$T/hooks" --cdi-dir="$T/cdi-stale-json" --cgroup-manager=cgroupfs
t_match "$OUT" "fix: +gpu-cli cdi generate --output=$T/cdi-stale-json/nvidia.com-gpu.json" \
        "stale spec of ours: the fix writes it again in place"

# a current spec whose hook program is there (ours), then the same spec naming one that is not
mkdir -p "$T/cdi-hookbin"
"$GPU_CLI" --root="$DRV" cdi generate --output="$T/cdi-hookbin/nvidia.com-gpu.json" >/dev/null 2>&1
doctor "$DRV" --hooks-dir="$T/hooks" --cdi-dir="$T/cdi-hookbin" --cgroup-manager=cgroupfs
t_match "$OUT" '^ok +cdi +1 CDI spec\(s\), current' "a spec whose hook is ours: ok"
sed -i -E "s#\"path\": \"[^\"]*/(gpu-cli|gpu-cdi-hook)\"#\"path\": \"$T/no-such/nvidia-cdi-hook\"#" "$T/cdi-hookbin/nvidia.com-gpu.json"
doctor "$DRV" --hooks-dir="$T/hooks" --cdi-dir="$T/cdi-hookbin" --cgroup-manager=cgroupfs
t_match "$OUT" "^warn +cdi +$T/cdi-hookbin/nvidia.com-gpu.json: $T/no-such/nvidia-cdi-hook does not exist" \
        "a spec whose hook program is missing: named"
t_match "$OUT" "cause: The spec's createContainer hook cannot run" "... with the cause"
t_match "$OUT" "fix: +install the program it names" "... and the fix"
chmod 0644 "$T/plain" 2>/dev/null || : >"$T/plain"
sed -i "s|\"path\": \"$T/no-such/nvidia-cdi-hook\"|\"path\": \"$T/plain\"|" "$T/cdi-hookbin/nvidia.com-gpu.json"
doctor "$DRV" --hooks-dir="$T/hooks" --cdi-dir="$T/cdi-hookbin" --cgroup-manager=cgroupfs
t_match "$OUT" "^warn +cdi +.*: $T/plain is not an executable file" "a spec whose hook program cannot run: named"

R=$(copy_root nochar) && rm -r "$R/dev/char"
doctor "$R" --hooks-dir="$T/hooks" --cdi-dir="$T/cdi" --cgroup-manager=systemd
t_match "$OUT" "^warn +dev-char-links +8 of 8 missing: .*$R/dev/char/195:0" "systemd without /dev/char links: the daemon-reload hazard"
t_match "$OUT" "fix: +gpu-cli --root=$R setup dev-char-links --dev-char-path=$R/dev/char" "systemd without /dev/char links: the fix is setup dev-char-links"
doctor "$DRV" --hooks-dir="$T/hooks" --cdi-dir="$T/cdi" --cgroup-manager=systemd
t_match "$OUT" '^ok +dev-char-links' "systemd with the links: ok"

# ---- containers
# start NAME hook|nohook ENV...: a detached runc container running sleep
start() {
        local name=$1 hook=$2
        shift 2
        make_busybox_rootfs "$T/$name/rootfs" || return 1
        make_bundle "$T/$name/bundle" "$T/$name/rootfs" sleep 600
        [ $# -gt 0 ] && bundle_set_env "$T/$name/bundle" "$@"
        [ "$hook" = hook ] && bundle_add_hook "$T/$name/bundle" createRuntime "$GPU_HOOK" "--config=$T/config.json" createRuntime
        ID=gh-doc-$name-$$
        timeout 60 "$RUNC" --root "$T_RUNC_ROOT" run -d -b "$T/$name/bundle" "$ID" >"$T/$name.out" 2>"$T/$name.err" </dev/null ||
                t_diag_file "$T/$name.err"
        PID=$("$RUNC" --root "$T_RUNC_ROOT" state "$ID" 2>/dev/null | sed -n 's/^ *"pid": \([0-9]*\),/\1/p')
}

cp "$(make_busybox_rootfs "$T/probe" >/dev/null; echo "$T/probe/etc/ld.so.cache")" "$T/plain-ld.so.cache" 2>/dev/null
start ok hook NVIDIA_VISIBLE_DEVICES=0 NVIDIA_DRIVER_CAPABILITIES=compute,utility
OK_ID=$ID OK_PID=$PID
doctor "$DRV" --container="$OK_ID"
t_diag "$OUT"
t_is "$RC" 0 "healthy GPU container: doctor passes"
for c in gpu-requested requirements device-nodes device-cgroup libraries ldcache proc-masked; do
        t_match "$OUT" "^ok +$c " "healthy GPU container: $c is ok"
done
t_match "$OUT" '^ok +ldcache +libcuda.so.1 -> libcuda.so.580.95.05, libnvidia-ml.so.1 -> libnvidia-ml.so.580.95.05' \
        "healthy GPU container: its ld cache resolves both to the driver's version"
t_match "$OUT" '^ok +gpu-requested +config.json: devices 0, capabilities compute,utility ' \
        "healthy GPU container: the capabilities by name"
doctor "$DRV" --pid="$OK_PID" --json
t_is "$RC" 0 "--pid (the environment of the process) agrees"
t_match "$OUT" '"failed": false' "--json says nothing failed"
doctor "$DRV" --container="${OK_ID:0:12}"
t_is "$RC" 0 "a unique id prefix finds the container"

start unset hook
doctor "$DRV" --container="$ID"
t_is "$RC" 1 "no GPU requested: doctor fails"
t_match "$OUT" '^fail +gpu-requested +NVIDIA_VISIBLE_DEVICES=\(unset\)' "no GPU requested (unset): named"
t_match "$OUT" 'fix: +start it with --gpus all' "no GPU requested: the fix"
start void hook NVIDIA_VISIBLE_DEVICES=void
doctor "$DRV" --container="$ID"
t_match "$OUT" "cause: The container asked for no GPU: NVIDIA_VISIBLE_DEVICES is 'void'" "NVIDIA_VISIBLE_DEVICES=void: named"

start compute hook NVIDIA_VISIBLE_DEVICES=0 NVIDIA_DRIVER_CAPABILITIES=compute
doctor "$DRV" --container="$ID"
t_match "$OUT" '^warn +utility' "compute only: no utility (no nvidia-smi) is a warning"
t_match "$OUT" '^warn +utility +capabilities compute$' "compute only: the capabilities by name"
t_match "$OUT" 'fix: +-e NVIDIA_DRIVER_CAPABILITIES=compute,utility' "compute only: the fix"

start nohook nohook NVIDIA_VISIBLE_DEVICES=0
doctor "$DRV" --container="$ID"
t_match "$OUT" '^fail +device-nodes +/dev/nvidia(ctl|0) is missing' "runtime not wired (no hook ran): the device nodes are missing"
t_match "$OUT" 'cause: .*the hook did not run' "runtime not wired: the cause"

start newcuda nohook NVIDIA_VISIBLE_DEVICES=0 'NVIDIA_REQUIRE_CUDA=cuda>=14.0'
doctor "$DRV" --container="$ID"
t_match "$OUT" '^fail +requirements +.*cuda>=14.0' "image needs CUDA 14.0 on a CUDA 13.0 driver: the requirement is named"
t_match "$OUT" 'cause: The image requires a newer CUDA' "CUDA too new: the cause"

start ldc hook NVIDIA_VISIBLE_DEVICES=0 NVIDIA_DRIVER_CAPABILITIES=compute,utility
if [ -f "$T/plain-ld.so.cache" ]; then
        cp "$T/plain-ld.so.cache" "$T/ldc/rootfs/etc/ld.so.cache"
else
        rm -f "$T/ldc/rootfs/etc/ld.so.cache"
fi
doctor "$DRV" --container="$ID"
t_match "$OUT" '^fail +ldcache ' "libraries present but not in the ld cache: named"
t_match "$OUT" 'cause: The container.s ld cache does not resolve libcuda.so.1' "libraries not in the ld cache: the cause"
t_match "$OUT" '^ok +libraries' "... while the libraries themselves are there"

# The daemon-reload symptom: the container's device rules lose the GPU after it started.
CG=$(awk -F: '$2 ~ /(^|,)devices(,|$)/ {print $3}' "/proc/$OK_PID/cgroup")
if [ -n "$CG" ] && [ -w "/sys/fs/cgroup/devices$CG/devices.deny" ]; then
        echo 'c 195:0 rwm' >"/sys/fs/cgroup/devices$CG/devices.deny"
        doctor "$DRV" --container="$OK_ID"
        t_is "$RC" 1 "GPU denied by the device cgroup after start: doctor fails"
        t_match "$OUT" '^fail +device-cgroup +open\(/dev/nvidia0\) in the container.s cgroup .*: EPERM' "device cgroup denial: seen by opening from the container's cgroup"
        t_match "$OUT" "cause: .*daemon-reload" "device cgroup denial: the daemon-reload cause"
else
        t_skip "device cgroup denial" "no cgroup v1 devices controller here (cgroup v2 only)"
fi
t_done
