#!/bin/bash
# The Kubernetes node: containerd 1.7's CRI plugin (Debian 13's, in the engine bed) driven through
# the CRI API by tests/helpers/cri-client.py, which derives every request from the manifests in
# contrib/kubernetes/ the way the kubelet does.  gpu-hook goes onto the node the DaemonSet's way
# (contrib/kubernetes/node-install.sh: /opt/gpu-hook, the CDI spec, `gpu-cli setup containerd` on
# the node's config.toml: CDI on, the "gpu" handler = gpu-runtime); the GPU comes from each of NVIDIA's device plugin strategies (envvar, volume-mounts,
# cdi-annotations, cdi-cri, emulated by the client), from a claim spec shaped like NVIDIA's DRA
# driver's, and an MPS group joins through a pod annotation.  Fake driver, two GPUs; every case
# asks for GPU 1 and checks what a user sees in the container.
# Runs inside the engine bed (meson: bed-run.sh --test); started by hand, it enters the bed itself.
[ -n "${GH_BED:-}" ] || exec bash "${GH_SOURCE_DIR:?}/tests/engine/bed-run.sh" --test -- "$(realpath "$0")" "$@"
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
t_need_root

. "$GH_SOURCE_DIR/tests/engine/engine.sh"
. "$GH_SOURCE_DIR/tests/engine/k8s.sh"
. "$GH_SOURCE_DIR/tests/engine/cri-node.sh"
why=$(cri_node_missing)
[ -z "$why" ] || t_skip_all "$why"
engine_setup
cri_node_prepare || t_fatal "$CRI_ERR"
cp "$CTD/config.toml" "$CTD/config.toml.node"
out=$(node_install install)
t_is "$?" 0 "node-install.sh install: exit 0" || t_diag "$out"
t_ok "... gpu-hook is installed in $OPT" test -x "$OPT/bin/gpu-hook" -a -x "$OPT/bin/gpu-runtime" -a -x "$OPT/bin/gpu-cli"
t_match "$out" "wrote /var/run/cdi/nvidia.com-gpu.json" "... the node's CDI spec is written"
t_match "$out" "restart containerd for it" "... containerd's config changed, and it says to restart it"
t_match "$(cat "$CTD/config.toml")" "^  BinaryName = \"$OPT/bin/gpu-runtime\"  # gpu-cli setup containerd" "... the gpu handler runs the installed gpu-runtime"
out=$(node_install install)
t_match "$out" "containerd: nothing to change" "node-install.sh install again: nothing to change" || t_diag "$out"
t_nomatch "$out" "wrote|installed|restart" "... nothing written, no restart"
out=$(node_install refresh)
t_match "$out" "is current" "node-install.sh refresh: the spec is current"
python3 -c 'import json, sys
s = json.load(open(sys.argv[1])); s["devices"] = s["devices"][1:]; json.dump(s, open(sys.argv[1], "w"))' /var/run/cdi/nvidia.com-gpu.json
out=$(node_install refresh)
t_match "$out" "wrote /var/run/cdi/nvidia.com-gpu.json" "... a stale one (a device missing) is written again"
dump=$(containerd --config "$CTD/config.toml" config dump 2>&1)
t_match "$dump" '^ *enable_cdi = true' "containerd 1.7 reads it: enable_cdi = true"
t_match "$dump" "^ *BinaryName = \"$OPT/bin/gpu-runtime\"" "... the gpu handler's BinaryName is gpu-runtime"
t_match "$dump" "^ *sandbox_image = \"$PAUSE\"" "... and the node's own CRI settings are still there"
t_match "$dump" 'runtimes\.runc\]' "... and the runc handler (the default) too"

cri_node_start || { t_diag_file "$T/containerd.log"; t_fatal "$CRI_ERR"; }
t_match "$("${CRI[@]}" version)" '"runtime": "containerd", "version": "v?1\.7\.' "CRI Version: containerd 1.7"

PROBE='echo "smi:$(nvidia-smi -L 2>&1 | tr "\n" "|")"; echo "cuda:$(cuda-probe 2>&1 | head -n1)"; echo "dev:$(ls /dev | grep -E "^nvidia" | sort | tr "\n" ",")"; echo "lib:$(ls /usr/lib/x86_64-linux-gnu/ | grep -E "^lib(cuda|nvidia-ml)\.so\.1$" | tr "\n" ",")"; echo "gpus:$(ls /proc/driver/nvidia/gpus 2>&1 | tr "\n" ",")"'
BUS1=$(basename "$(ls -d "$DRV"/proc/driver/nvidia/gpus/* | sort | sed -n 2p)")
PROBE_JSON=$(printf '%s' "$PROBE" | python3 -c 'import json,sys; print(json.dumps(["/bin/sh", "-c", sys.stdin.read()]))')
CGP=/gh-cri-$$
N=0
# pod MANIFEST [cri-client run options]: runs the pod; RUN_RC, RUN_OUT (the JSON), RUN_ERR, LOG
pod() {
        local m=$1
        shift
        N=$((N + 1))
        timeout -k 5 120 "${CRI[@]}" run "$T/m/$m.json" --runtime-class="$T/m/runtimeclass.json" --host-network \
                --cgroup-parent="$CGP" --log-dir="$T/logs" "$@" >"$T/.run.out" 2>"$T/.run.err" </dev/null
        RUN_RC=$?
        RUN_OUT=$(cat "$T/.run.out") RUN_ERR=$(cat "$T/.run.err")
        LOG=$(printf '%s' "$RUN_OUT" | python3 -c 'import json, sys
try: print(json.load(sys.stdin)["containers"][0].get("log") or "", end="")
except Exception: pass')
        EXIT=$(printf '%s' "$RUN_OUT" | python3 -c 'import json, sys
try: print(json.load(sys.stdin)["containers"][0].get("exit_code"))
except Exception: print("none")')
}
field() { printf '%s\n' "$LOG" | sed -n "s/^$1://p"; }

# gpu1 DESC [NODES]: the probe's output is GPU 1 and only GPU 1, with the driver's libraries working.
# NODES: the /dev/nvidia* list; a CDI spec for every capability (the default) adds nvidia-modeset.
HOOK_NODES=nvidia-uvm,nvidia-uvm-tools,nvidia1,nvidiactl,
CDI_NODES=nvidia-modeset,$HOOK_NODES
gpu1() {
        t_is "$RUN_RC:$EXIT" 0:0 "$1: the pod ran" || { t_diag "$RUN_ERR" "$RUN_OUT"; return 1; }
        t_is "$(field smi | tr '|' '\n' | grep -c '^GPU ')" 1 "$1: nvidia-smi lists one GPU"
        t_match "$(field smi)" "$UUID1" "$1: ... GPU 1"
        t_match "$(field cuda)" '^CUDA OK: 1 device' "$1: libcuda.so.1 loads through the ld cache and sees one GPU"
        t_is "$(field dev)" "${2:-$HOOK_NODES}" "$1: device nodes ${2:-$HOOK_NODES} only"
        t_is "$(field lib)" "libcuda.so.1,libnvidia-ml.so.1," "$1: the driver's libraries are in the library directory"
        t_is "$(field gpus)" "$BUS1," "$1: /proc/driver/nvidia/gpus has GPU 1 only"
}
# as_is MANIFEST DESC OPTIONS...: the manifest's own command (nvidia-smi -L) prints GPU 1
as_is() {
        local m=$1 desc=$2
        shift 2
        pod "$m" "$@"
        t_is "$RUN_RC:$EXIT:$(printf '%s\n' "$LOG" | grep -c '^GPU ')" 0:0:1 "$desc: the manifest's own nvidia-smi -L lists one GPU" ||
                t_diag "$RUN_ERR" "$LOG"
        t_match "$LOG" "$UUID1" "$desc: ... GPU 1"
}

# ---- NVIDIA's device plugin, four strategies ------------------------------------------------
as_is pod-runtimeclass "envvar" --device-plugin=envvar --gpus="$UUID1,$UUID0"
pod pod-runtimeclass --device-plugin=envvar --gpus="$UUID1,$UUID0" --command="$PROBE_JSON"
gpu1 "envvar (runtime handler gpu)"

node_config '"accept-visible-devices-as-volume-mounts": true, "accept-visible-devices-envvar-when-unprivileged": false'
as_is pod-runtimeclass "volume-mounts" --device-plugin=volume-mounts --gpus="$UUID1,$UUID0"
pod pod-runtimeclass --device-plugin=volume-mounts --gpus="$UUID1,$UUID0" --command="$PROBE_JSON"
gpu1 "volume-mounts (runtime handler gpu)"
# The point of the strategy: an unprivileged pod that sets NVIDIA_VISIBLE_DEVICES itself gets nothing
python3 -c 'import json, sys
p = json.load(open(sys.argv[1])); c = p["spec"]["containers"][0]
del c["resources"]; c["env"] = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]
p["metadata"]["name"] = "own-env"; json.dump(p, open(sys.argv[2], "w"))' "$T/m/pod-runtimeclass.json" "$T/m/own-env.json"
pod own-env --command="$PROBE_JSON"
t_is "$RUN_RC:$EXIT:$(field dev)" "0:0:" "volume-mounts: a pod's own NVIDIA_VISIBLE_DEVICES=all is ignored (no device node)" || t_diag "$RUN_ERR"
t_match "$(field cuda)" "cannot load libcuda.so.1" "... and no driver library"
node_config

: >"$T/hook.log"
as_is pod-cdi "cdi-annotations" --device-plugin=cdi-annotations --gpus="$UUID1,$UUID0"
pod pod-cdi --device-plugin=cdi-annotations --gpus="$UUID1,$UUID0" --command="$PROBE_JSON"
gpu1 "cdi-annotations (no RuntimeClass, containerd applies the spec)" "$CDI_NODES"
as_is pod-cdi "cdi-cri" --device-plugin=cdi-cri --gpus="$UUID1,$UUID0"
pod pod-cdi --device-plugin=cdi-cri --gpus="$UUID1,$UUID0" --command="$PROBE_JSON"
gpu1 "cdi-cri (CDI_devices field)" "$CDI_NODES"
# the device plugin's own kind, with gpu-hook's spec written under it
DPK=k8s.device-plugin.nvidia.com
t_ok "gpu-cli cdi generate --vendor=$DPK" "$OPT/bin/gpu-cli" --root="$DRV" cdi generate --vendor=$DPK --hook-path="$OPT/bin/gpu-cli" \
        --output=/var/run/cdi/$DPK-gpu.json
pod pod-cdi --device-plugin=cdi-cri --cdi-kind=$DPK/gpu --gpus="$UUID1,$UUID0" --command="$PROBE_JSON"
gpu1 "cdi-cri, the device plugin's kind $DPK/gpu" "$CDI_NODES"
rm -f /var/run/cdi/$DPK-gpu.json
t_is "$(wc -c <"$T/hook.log")" 0 "the CDI pods never ran gpu-hook (containerd and the spec's cdi-hook did it all)"

# ---- a DRA claim spec shaped like NVIDIA's DRA driver's ---------------------------------------
CLAIM_UID=$(python3 -c 'import uuid; print(uuid.uuid4())')
python3 - "$CLAIM_UID" "$UUID1" /var/run/cdi/nvidia.com-gpu.json "/var/run/cdi/k8s.gpu.nvidia.com-claim_$CLAIM_UID.json" <<'PY'
import json, sys
uid, gpu, main, out = sys.argv[1:]
s = json.load(open(main))
dev = next(d for d in s["devices"] if d["name"] == gpu)
claim = {"cdiVersion": s["cdiVersion"], "kind": "k8s.gpu.nvidia.com/claim",
         "devices": [{"name": f"{uid}-gpu-0", "containerEdits": dev["containerEdits"]}],
         "containerEdits": s["containerEdits"]}
json.dump(claim, open(out, "w"), indent=2)
PY
as_is pod-dra "DRA claim" --claim="gpu=k8s.gpu.nvidia.com/claim=$CLAIM_UID-gpu-0"
pod pod-dra --claim="gpu=k8s.gpu.nvidia.com/claim=$CLAIM_UID-gpu-0" --command="$PROBE_JSON"
gpu1 "DRA claim k8s.gpu.nvidia.com/claim=<uid>-gpu-0" "$CDI_NODES"
rm -f "/var/run/cdi/k8s.gpu.nvidia.com-claim_$CLAIM_UID.json"

# ---- an MPS group joined by the pod annotation -----------------------------------------------
MPS=("$GPU_CLI" --root="$DRV" mps --dir="$T/mps")
t_ok "mps start team on GPU 1" "${MPS[@]}" start team --device=1 --cdi-spec=none
dpid=$(sed -n 's/^pid=//p' "$T/mps/team/group")
MPSPROBE='echo "mps:$(ls /tmp/nvidia-mps 2>&1 | tr "\n" ",")"; echo "shm:$(ls /dev/shm 2>&1 | tr "\n" ",")"; echo "dev:$(ls /dev | grep -E "^nvidia" | sort | tr "\n" ",")"'
pod pod-mps --device-plugin=envvar --gpus="$UUID1" --command="$(printf '%s' "$MPSPROBE" | python3 -c 'import json,sys; print(json.dumps(["/bin/sh", "-c", sys.stdin.read()]))')"
t_is "$RUN_RC:$EXIT" 0:0 "MPS pod (annotation org.gpu-hook.mps-group=team): ran" || t_diag "$RUN_ERR" "$RUN_OUT"
t_match "$(field mps)" "^control," "... /tmp/nvidia-mps is the group's pipe directory"
t_match "$(field shm)" "fake-mps-control.$dpid" "... /dev/shm is the group's"
t_match "$(field dev)" "nvidia1," "... with GPU 1"
pod pod-mps --device-plugin=envvar --gpus="$UUID0" --command="$PROBE_JSON"
t_is "$RUN_RC" 1 "MPS pod given GPU 0 while the group is on GPU 1: refused"
t_match "$RUN_ERR" "team" "... with gpu-hook's message naming the group"
t_ok "mps stop team" "${MPS[@]}" stop team

# ---- what must fail, and what must stay empty ----------------------------------------------
pod pod-cdi --device-plugin=cdi-cri --gpus=GPU-00000000-dead-beef-0000-000000000000 --command="$PROBE_JSON"
t_is "$RUN_RC" 1 "cdi-cri with a device no spec has: CreateContainer fails"
t_match "$RUN_ERR" "unresolvable CDI devices nvidia.com/gpu=GPU-00000000-dead-beef" "... with containerd's message naming the device"
python3 -c 'import json, sys
p = json.load(open(sys.argv[1])); del p["spec"]["containers"][0]["resources"]
p["metadata"]["name"] = "no-gpu"; json.dump(p, open(sys.argv[2], "w"))' "$T/m/pod-runtimeclass.json" "$T/m/no-gpu.json"
for handler in gpu default; do
        [ $handler = default ] && python3 -c 'import json, sys
p = json.load(open(sys.argv[1])); del p["spec"]["runtimeClassName"]; json.dump(p, open(sys.argv[1], "w"))' "$T/m/no-gpu.json"
        pod no-gpu --command="$PROBE_JSON"
        t_is "$RUN_RC:$EXIT:$(field dev)" "0:0:" "a pod without a GPU request ($handler handler): no device node" || t_diag "$RUN_ERR"
        t_match "$(field cuda)" "cannot load libcuda.so.1" "... no driver library"
        t_match "$(field smi)" "not found" "... no nvidia-smi"
done

t_is "$(ctr -a "$CRI_SOCK" -n k8s.io containers ls -q | grep -v -c "^$")" 0 "every container and sandbox was removed through the CRI"
_daemon_stop "$CTD_PID"
CTD_PID=
for d in /sys/fs/cgroup/*"$CGP" /sys/fs/cgroup/*/"$CGP"; do
        [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
done
t_done
