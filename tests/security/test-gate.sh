#!/bin/bash
# The privilege gate, end to end: gpu-hook under runc with the fake driver, every way a container can
# ask for a GPU (NVIDIA_VISIBLE_DEVICES, a swarm-resource variable, the legacy CUDA_VERSION image,
# /dev/null volume mounts on /var/run/nvidia-container-devices/<id>), privileged (CAP_SYS_ADMIN) and
# not, with accept-visible-devices-envvar-when-unprivileged true and false and
# accept-visible-devices-as-volume-mounts true and false.  What is checked is what the container
# sees: which /dev/nvidiaN nodes it has and whether any driver file was injected.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
t_need_root
t_need_cmd runc
MKROOT=$GH_SOURCE_DIR/tests/fake-driver/make-root.sh

DRV=$T/drv
bash "$MKROOT" "$DRV" >"$T/mkroot.log" 2>&1 || { t_diag_file "$T/mkroot.log"; t_fatal "make-root.sh failed"; }

PROBE='echo "gpus:$(ls /dev | grep -E "^nvidia[0-9]+$" | sort | tr "\n" " ")"
echo "files:$(ls /usr/lib/x86_64-linux-gnu /usr/bin | grep -cE "libnvidia-ml|libcuda|nvidia-smi")"'
field() { printf '%s\n' "$RUN_STDOUT" | sed -n "s/^$1://p"; }

# write_config NAME ENVVAR_UNPRIV VOLUME_MOUNTS: the hook's configuration (swarm variable
# DOCKER_RESOURCE_GPU always listed).
write_config() {
        cat >"$T/$1.json" <<EOF
{"accept-visible-devices-envvar-when-unprivileged": $2, "accept-visible-devices-as-volume-mounts": $3,
 "swarm-resource": ["DOCKER_RESOURCE_GPU"],
 "cli": {"root": "$DRV", "path": "$GPU_CLI"}, "log": {"file": "$T/hook.log"}, "containers": {"dir": "$T/records"}}
EOF
}
write_config gate-on false false
write_config gate-off true false
write_config gate-on-vol false true
write_config gate-off-vol true true

N=0
# gate CONFIG PRIV(priv|unpriv) WANT DESC REQUEST...: REQUEST words are K=V (environment) or
# mount:ID (a /dev/null volume mount naming device ID).  WANT: the /dev/nvidiaN names the container
# must have ("nvidia0 "), or "-" for no GPU at all (no node and no driver file).
gate() {
        local cfg=$1 priv=$2 want=$3 desc=$4 r envs=()
        shift 4
        N=$((N + 1))
        B=$T/b$N
        # A fresh rootfs each time: an earlier injection leaves its (empty) mount points behind.
        make_busybox_rootfs "$T/r$N" || t_fatal "cannot build the rootfs"
        make_bundle "$B" "$T/r$N" /bin/sh -c "$PROBE"
        for r in "$@"; do
                case $r in
                mount:*) bundle_add_mount "$B" /dev/null "/var/run/nvidia-container-devices/${r#mount:}" bind,ro ;;
                *) envs+=("$r") ;;
                esac
        done
        [ ${#envs[@]} -gt 0 ] && bundle_set_env "$B" "${envs[@]}"
        [ "$priv" = priv ] && bundle_privileged "$B"
        bundle_add_hook "$B" createRuntime "$GPU_HOOK" "--config=$T/$cfg.json" createRuntime
        run_runc "$B" gate
        desc="$cfg, $priv, $desc"
        if [ "$RUN_RC" -ne 0 ]; then
                t_fail "$desc: the container ran"
                t_diag "$RUN_STDERR"
                return
        fi
        if [ "$want" = - ]; then
                t_is "$(field gpus)|$(field files)" "|0" "$desc: no GPU node and no driver file"
        else
                t_is "$(field gpus)" "$want" "$desc: the container has exactly /dev/$want" &&
                        t_not "$desc: and the driver files" test "$(field files)" = 0
        fi
}

host_mountinfo_snapshot "$T/mounts.before"

# Every source from the environment, through the gate: refused when unprivileged and the config
# says false; honoured when privileged, or when the config says true.
for src in "NVIDIA_VISIBLE_DEVICES=0" "DOCKER_RESOURCE_GPU=0" "CUDA_VERSION=12.2.0"; do
        case $src in
        NVIDIA*) what="NVIDIA_VISIBLE_DEVICES=0"; got="nvidia0 " ;;
        DOCKER*) what="swarm variable DOCKER_RESOURCE_GPU=0"; got="nvidia0 " ;;
        CUDA*) what="legacy image (CUDA_VERSION, no NVIDIA_VISIBLE_DEVICES)"; got="nvidia0 nvidia1 " ;;
        esac
        gate gate-on unpriv - "$what" "$src"
        gate gate-on priv "$got" "$what" "$src"
        gate gate-off unpriv "$got" "$what" "$src"
        gate gate-off priv "$got" "$what" "$src"
done
# The swarm variable replaces NVIDIA_VISIBLE_DEVICES, so it cannot smuggle a GPU past the gate next
# to a variable the gate refuses, nor be refused while the other is honoured.
gate gate-on unpriv - "swarm variable next to NVIDIA_VISIBLE_DEVICES" NVIDIA_VISIBLE_DEVICES=1 DOCKER_RESOURCE_GPU=0
gate gate-on priv "nvidia0 " "swarm variable next to NVIDIA_VISIBLE_DEVICES" NVIDIA_VISIBLE_DEVICES=1 DOCKER_RESOURCE_GPU=0

# Volume mounts: when accepted, they name the devices for any container (only whoever runs the
# runtime chooses mounts), whatever the gate and the environment say; when not accepted, they name
# nothing.
for cfg in gate-on-vol gate-off-vol; do
        for priv in unpriv priv; do
                gate $cfg $priv "nvidia1 " "volume mount for GPU 1" mount:1
                gate $cfg $priv "nvidia1 " "volume mount for GPU 1 wins over NVIDIA_VISIBLE_DEVICES=0" mount:1 NVIDIA_VISIBLE_DEVICES=0
        done
done
gate gate-on unpriv - "volume mount not accepted" mount:1
gate gate-off priv - "volume mount not accepted" mount:1
gate gate-on unpriv - "volume mount not accepted, NVIDIA_VISIBLE_DEVICES=0 refused" mount:1 NVIDIA_VISIBLE_DEVICES=0
gate gate-off unpriv "nvidia0 " "volume mount not accepted, NVIDIA_VISIBLE_DEVICES=0 honoured" mount:1 NVIDIA_VISIBLE_DEVICES=0

mountinfo_unchanged "host mount table unchanged" "$T/mounts.before"
t_done
