#!/bin/sh
# gpu-hook's node installer, run by the DaemonSet in contrib/kubernetes/daemonset.yaml: a privileged
# pod with the node's / at $HOST and the node's PID namespace (hostPID), from an image that holds a
# gpu-hook build in $SRC (contrib/kubernetes/Containerfile).
#
#   node-install.sh install   copy the build to the node's $DEST (a new tree renamed over the old
#                             one: a hook running now keeps the binary it has open), write the node's
#                             CDI spec, run `gpu-cli setup containerd` there and, when that changed
#                             containerd's config, restart containerd
#   node-install.sh refresh   every $INTERVAL seconds, regenerate the CDI spec when it is stale (a
#                             driver update, a GPU that came or went, MIG changes); ONCE=1: one check
#
# Every gpu-cli runs chrooted into the node's root, so the spec and the config name the node's
# paths.  Environment (defaults): HOST (/host), SRC (/opt/gpu-hook), DEST (/opt/gpu-hook),
# DRIVER_ROOT (/, the driver's root on the node: /run/nvidia/driver with a driver container),
# CDI_SPEC (/var/run/cdi/nvidia.com-gpu.json), CONTAINERD_CONFIG (/etc/containerd/config.toml),
# GPU_HOOK_CONFIG (/etc/gpu-hook/config.json, written only when the node has none),
# RESTART (systemd: `systemctl restart containerd` in the node's namespaces; none: say so instead),
# INTERVAL (300).
set -eu

HOST=${HOST:-/host}
SRC=${SRC:-/opt/gpu-hook}
DEST=${DEST:-/opt/gpu-hook}
DRIVER_ROOT=${DRIVER_ROOT:-/}
CDI_SPEC=${CDI_SPEC:-/var/run/cdi/nvidia.com-gpu.json}
CONTAINERD_CONFIG=${CONTAINERD_CONFIG:-/etc/containerd/config.toml}
GPU_HOOK_CONFIG=${GPU_HOOK_CONFIG:-/etc/gpu-hook/config.json}
RESTART=${RESTART:-systemd}
INTERVAL=${INTERVAL:-300}

say() { echo "gpu-hook node-install: $*"; }
die() {
        say "$*" >&2
        exit 1
}
on_node() { chroot "$HOST" "$@"; }
cli() { on_node "$DEST/bin/gpu-cli" --root="$DRIVER_ROOT" "$@"; }

install_files() {
        [ -x "$SRC/bin/gpu-cli" ] || die "$SRC/bin/gpu-cli is not there: is this the gpu-hook image?"
        if [ -d "$HOST$DEST" ] && diff -r "$SRC" "$HOST$DEST" >/dev/null 2>&1; then
                say "$DEST is current"
                return
        fi
        rm -rf "$HOST$DEST.new" "$HOST$DEST.old"
        mkdir -p "$(dirname "$HOST$DEST")"
        cp -a "$SRC" "$HOST$DEST.new"
        [ -e "$HOST$DEST" ] && mv "$HOST$DEST" "$HOST$DEST.old"
        mv "$HOST$DEST.new" "$HOST$DEST"
        rm -rf "$HOST$DEST.old"
        say "installed $DEST"
}

write_config() {
        [ -e "$HOST$GPU_HOOK_CONFIG" ] && { say "$GPU_HOOK_CONFIG is there: left as it is"; return; }
        mkdir -p "$(dirname "$HOST$GPU_HOOK_CONFIG")"
        cat >"$HOST$GPU_HOOK_CONFIG.tmp" <<EOF
{
  "cli": {"root": "$DRIVER_ROOT", "path": "$DEST/bin/gpu-cli"},
  "runtime": {"hook-path": "$DEST/bin/gpu-hook"}
}
EOF
        mv "$HOST$GPU_HOOK_CONFIG.tmp" "$HOST$GPU_HOOK_CONFIG"
        say "wrote $GPU_HOOK_CONFIG"
}

# The spec: written when missing or stale, through gpu-cli's own atomic writer.
cdi_spec() {
        on_node mkdir -p "$(dirname "$CDI_SPEC")"
        if cli cdi generate --hook-path="$DEST/bin/gpu-cli" --check="$CDI_SPEC" >/dev/null 2>&1; then
                say "$CDI_SPEC is current"
                return
        fi
        cli cdi generate --hook-path="$DEST/bin/gpu-cli" --output="$CDI_SPEC" || die "gpu-cli cdi generate failed"
        say "wrote $CDI_SPEC"
}

setup_containerd() {
        out=$(on_node "$DEST/bin/gpu-cli" setup containerd --config="$CONTAINERD_CONFIG" \
                --runtime-path="$DEST/bin/gpu-runtime" --hook-path="$DEST/bin/gpu-hook") || die "$out"
        echo "$out"
        case $out in *"nothing to change"*) return ;; esac
        case $RESTART in
        systemd)
                nsenter --target 1 --mount --uts --ipc --net --pid -- systemctl restart containerd ||
                        die "restarting containerd failed; restart it by hand"
                say "restarted containerd" ;;
        *) say "containerd's config changed: restart containerd for it to take effect" ;;
        esac
}

case ${1:-} in
install)
        install_files
        write_config
        cdi_spec
        setup_containerd ;;
refresh)
        while :; do
                cdi_spec
                [ "${ONCE:-0}" = 1 ] && break
                sleep "$INTERVAL"
        done ;;
*)
        echo "usage: node-install.sh install|refresh" >&2
        exit 2 ;;
esac
