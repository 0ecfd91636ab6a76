#!/bin/bash
# Rootless podman with CDI: a throwaway user with subordinate uid/gid ranges runs
# `podman run --device nvidia.com/gpu=...` with our spec.  A rootless runtime cannot make device
# nodes: it bind-mounts each node from the spec's `path`, not from `hostPath`, so the fake driver's
# nodes must be at /dev.  That, and the new user, are changes to the machine's /dev and /etc: this test
# runs only in the Debian 13 engine bed (tests/engine/bed.sh), whose /dev and /etc are the run's own.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
. "$GH_SOURCE_DIR/tests/engine/engine.sh"
t_need_root
[ -n "${GH_BED:-}" ] || t_skip_all "runs only in the engine bed (it adds a user and makes GPU nodes at /dev)"
t_need_cmd podman "$ENGINE_OCI" newuidmap newgidmap useradd runuser

engine_setup
# The user reaches the fake driver, the image and its own directories under $T; gpu-cli is copied
# there too (the build directory may sit under a home the user cannot enter), and the spec names it.
chmod 755 "$T"
U=gh-rootless
useradd --home-dir "$T/home" --create-home --shell /bin/sh "$U" || t_fatal "useradd $U"
uid=$(id -u "$U")
echo "$U:200000:65536" >>/etc/subuid
echo "$U:200000:65536" >>/etc/subgid
mkdir -p "$T/bin" "$T/xdg" "$T/podman"
install -m 755 "$GPU_CLI" "$T/bin/gpu-cli"
chown "$U:" "$T/xdg" "$T/podman"
chmod 700 "$T/xdg"
"$T/bin/gpu-cli" --root="$DRV" cdi generate --output="$T/spec.json" >"$T/gen.log" 2>&1 ||
        { t_diag_file "$T/gen.log"; t_fatal "gpu-cli cdi generate"; }
cdi_install "$T/spec.json" gpu-hook-test.json || t_fatal "cannot install the CDI spec"
# The fake driver's nodes at the paths the spec names (same major:minor; the bed's /dev is a tmpfs).
for n in "$DRV"/dev/nvidia*; do
        [ -e "/dev/${n##*/}" ] || cp -a "$n" /dev/
done
t_ok "the fake GPU nodes are at /dev" test -c /dev/nvidia0 -a -c /dev/nvidiactl

PROBE='echo "smi:$(nvidia-smi -L 2>&1 | tr "\n" "|")"
echo "cuda:$(cuda-probe 2>&1 | head -n1)"
echo "dev:$(ls /dev | grep -E "^nvidia" | sort | tr "\n" ",")"
echo "params:$(grep ModifyDeviceFiles /proc/driver/nvidia/params 2>&1)"
echo "uid:$(cat /proc/self/uid_map | tr -s " " | tr "\n" "|")"'
field() { printf '%s\n' "$RUN_STDOUT" | sed -n "s/^$1://p"; }
ngpus() { field smi | tr '|' '\n' | grep -c '^GPU '; }
N=0
# urun DEVICE...: podman run as the user, on a fresh copy of the image it owns.
urun() {
        local a=() d
        N=$((N + 1))
        for d in "$@"; do a+=(--device "$d"); done
        cp -a "$IMGROOT" "$T/rootfs-$N" && chown -R "$U:" "$T/rootfs-$N"
        timeout -k 5 "$GH_RUN_TIMEOUT" runuser -u "$U" -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$T/home" \
                XDG_RUNTIME_DIR="$T/xdg" podman --root "$T/podman/root" --runroot "$T/podman/runroot" \
                --tmpdir "$T/podman/tmp" --cgroup-manager=cgroupfs --events-backend=file \
                --runtime "$(command -v "$ENGINE_OCI")" run --rm --network none "${a[@]}" \
                --rootfs "$T/rootfs-$N" /bin/sh -c "$PROBE" </dev/null >"$T/.run.out" 2>"$T/.run.err"
        RUN_RC=$?
        _gh_finish_run
}

urun nvidia.com/gpu=all
t_is "$RUN_RC" 0 "rootless podman --device nvidia.com/gpu=all: container ran" || t_diag "$RUN_STDERR"
t_match "$(field uid)" "^ *0 +$uid +1\|" "... in a user namespace: the container's root is the user ($uid)"
t_is "$(ngpus)" 2 "... nvidia-smi lists both fake GPUs"
t_match "$(field cuda)" '^CUDA OK: 2 device' "... libcuda loads and sees both"
t_is "$(field dev)" "nvidia-modeset,nvidia-uvm,nvidia-uvm-tools,nvidia0,nvidia1,nvidiactl," "... with the GPUs' nodes"
t_is "$(field params)" "ModifyDeviceFiles: 0" "... and /proc/driver/nvidia/params masked by the spec's hook"

urun nvidia.com/gpu=0
t_is "$RUN_RC" 0 "rootless podman --device nvidia.com/gpu=0: container ran" || t_diag "$RUN_STDERR"
t_is "$(ngpus)" 1 "... one GPU"
t_match "$(field smi)" "$UUID0" "... GPU 0"
t_is "$(field dev)" "nvidia-modeset,nvidia-uvm,nvidia-uvm-tools,nvidia0,nvidiactl," "... only its node"

urun
t_is "$RUN_RC:$(field dev)" "0:" "rootless podman without --device: ran, no NVIDIA node" || t_diag "$RUN_STDERR"

urun nvidia.com/gpu=7
t_not "rootless podman --device nvidia.com/gpu=7 (no such GPU): refused" test "$RUN_RC" -eq 0

# The pause process (catatonit -P) keeps the user's namespace: stop it, as a user's logout would.
pid=$(cat "$T/xdg/libpod/tmp/pause.pid" 2>/dev/null)
[ -n "$pid" ] && kill "$pid" 2>/dev/null
t_done
