#!/bin/bash
# gpu-cli metrics, ps and doctor on the real driver with PyTorch, TAP.  Runs THERE (the GPU machine),
# as root, from the repo root, with the kit of tests/gpu/prepare.sh carried as .gpukit.
#
#   bash tests/gpu/run-metrics.sh          there: PyTorch (/opt/torch/.venv) in a container and on the host
#   bash tests/gpu/run-metrics.sh --fake   here (a build tree): the fake driver, hold-fd instead of PyTorch
#
# A container of "pod" ml/trainer-0 (containerd's CRI annotations in its config.json) holds 2 GiB
# of GPU memory and runs bf16 matmuls: its DCGM-named series must carry its container id and pod,
# with at least that memory, and the GPU-level DCGM series must be there with sane values.  A
# process outside any container holding 1 GiB must be reported as memory no running container owns
# (ps, metrics, doctor).  The image has the machine's python3.12 and libraries but no driver file:
# gpu-hook injects the driver (TESTBED: PyTorch in a container).
set -u
here=$(cd "$(dirname "$0")" && pwd)
FAKE=0
[ "${1:-}" = --fake ] && FAKE=1
. "$here/kit.sh"
t_need_root
VENV=/opt/torch/.venv
ID=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
ANN='c.setdefault("annotations", {}).update({"io.kubernetes.cri.sandbox-name": "trainer-0",
  "io.kubernetes.cri.sandbox-namespace": "ml", "io.kubernetes.cri.container-name": "worker",
  "io.kubernetes.cri.container-type": "container"})'
CTR_MIB=2048 HOST_MIB=1024

if [ $FAKE = 1 ]; then
        [ "$KIT_MODE" = build ] || { echo "Bail out! --fake needs a build tree (GH_BUILD_DIR)"; exit 1; }
        t_need_cmd runc unshare
        . "$REPO/tests/integration/usage-kit.sh"
        usage_driver "p['gpus'][0].update(process_memory_mib=$CTR_MIB, process_sm_util=90)
p['gpus'][1].update(process_memory_mib=$HOST_MIB)"
        cli() { gpucli "$@"; }
        start_gpu_container torch "$ID" 0 'hold-fd /dev/nvidia0 & wait' "$ANN" || t_diag_file "$T/torch.err"
        t_match "$(wait_ready "$T/torch.out")" '^[0-9]+$' "the GPU container (hold-fd for PyTorch) runs"
        "$HOLD" --user="$NOBODY" "$DRV/dev/nvidia1" >"$T/host.out" &
        HOST_PID=$!
        wait_ready "$T/host.out" >/dev/null
else
        [ -e /dev/nvidiactl ] || t_skip_all "no NVIDIA GPU here; --fake runs the plumbing on the fake driver"
        [ -x "$VENV/bin/python3" ] || t_skip_all "no PyTorch venv at $VENV"
        cli() { "$GPU_CLI" "$@"; }
        printf '{"cli": {"root": "/", "path": "%s"}, "log": {"file": "%s/hook.log"}, "containers": {"dir": "%s/records"}}\n' \
                "$GPU_CLI" "$T" "$T" >"$T/config.json"
        PY=$(readlink -f "$VENV/bin/python3")            # /usr/bin/python3.12
        PYLIB=/usr/lib/$(basename "$PY")                  # /usr/lib/python3.12
        IMG=$T/img
        make_busybox_rootfs "$IMG" --glibc >"$T/rootfs.log" 2>&1 || { t_diag_file "$T/rootfs.log"; echo "Bail out! rootfs"; exit 1; }
        # the machine's libraries without any driver file (hard links where the file system allows;
        # --remove-destination: the rootfs's own glibc files are links into lib.sh's template cache,
        # which a copy over them would write through)
        cp -al --remove-destination /usr/lib/x86_64-linux-gnu/. "$IMG/usr/lib/x86_64-linux-gnu/" 2>/dev/null ||
                cp -a --remove-destination /usr/lib/x86_64-linux-gnu/. "$IMG/usr/lib/x86_64-linux-gnu/"
        find "$IMG/usr/lib/x86_64-linux-gnu" \( -name '*nvidia*' -o -name 'libcuda*' -o -name 'libnvcuvid*' \
                -o -name 'libnvoptix*' \) -exec rm -rf {} + 2>/dev/null
        # the venv's python3 and every link on the way to the interpreter outside the venv
        # (python3 -> /usr/bin/python3 -> python3.12, say): the venv itself is bind-mounted
        p=$VENV/bin/python3
        while :; do
                case $p in "$VENV"/*) ;; *) mkdir -p "$IMG$(dirname "$p")" && cp -P "$p" "$IMG$p" ;; esac
                [ -L "$p" ] || break
                l=$(readlink "$p")
                case $l in /*) p=$l ;; *) p=$(dirname "$p")/$l ;; esac
        done
        mkdir -p "$IMG$PYLIB" "$IMG$VENV"
        LDC=$(ls /sbin/ldconfig.real /sbin/ldconfig 2>/dev/null | head -n1)
        "$LDC" -r "$IMG" 2>/dev/null
        t_is "$(find "$IMG/usr/lib/x86_64-linux-gnu" -name '*nvidia*' -o -name 'libcuda*' | wc -l)" 0 "the image has no driver file"
        mkdir -p "$T_RUNC_ROOT"
        make_bundle "$T/torch" "$IMG" "$VENV/bin/python3" -c '
import os, sys, time, torch
keep = torch.empty((2 << 30) // 2, dtype=torch.bfloat16, device="cuda")
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
print("ready", os.getpid(), flush=True)
end = time.time() + 150
while time.time() < end:
    (a @ a).sum().item()'
        bundle_set_env "$T/torch" NVIDIA_VISIBLE_DEVICES=0 NVIDIA_DRIVER_CAPABILITIES=compute,utility \
                "PATH=$VENV/bin:/usr/bin:/bin"
        bundle_add_mount "$T/torch" "$PYLIB" "$PYLIB" rbind,ro
        bundle_add_mount "$T/torch" "$VENV" "$VENV" rbind,ro
        bundle_add_hook "$T/torch" createRuntime "$GPU_HOOK" "--config=$T/config.json" createRuntime
        bundle_edit "$T/torch" "$ANN"
        "$RUNC" --root "$T_RUNC_ROOT" run -d -b "$T/torch" "$ID" >"$T/torch.out" 2>"$T/torch.err" </dev/null
        t_is "$?" 0 "the PyTorch container started through gpu-hook" || t_diag_file "$T/torch.err"
        for _ in $(seq 600); do grep -q '^ready' "$T/torch.out" && break; sleep 0.1; done
        t_match "$(cat "$T/torch.out")" '^ready [0-9]+' "PyTorch in the container allocated 2 GiB and computes" ||
                t_diag_file "$T/torch.out"
        # a process outside any container: the venv's python on the host
        "$VENV/bin/python3" -c '
import os, time, torch
keep = torch.empty((1 << 30) // 2, dtype=torch.bfloat16, device="cuda")
print("ready", os.getpid(), flush=True)
time.sleep(150)' >"$T/host.out" 2>&1 &
        HOST_PID=$!
        for _ in $(seq 600); do grep -q '^ready' "$T/host.out" && break; sleep 0.1; done
        t_match "$(cat "$T/host.out")" '^ready [0-9]+' "PyTorch on the host holds 1 GiB" || t_diag_file "$T/host.out"
        sleep 3 # utilisation samples
fi

M=$(cli metrics --config="$T/config.json" --state-dir="$T_RUNC_ROOT" 2>&1)
t_diag "$(grep -v '^#' <<<"$M" | grep -E 'DCGM_FI_DEV_(FB_USED|GPU_UTIL)|container_fb_used|fb_unowned')"
val() { sed -n "s/^$1{\\(.*\\)} \\([0-9.]*\\)\$/\\2/p" <<<"$M" | head -n1; }
for f in SM_CLOCK MEM_CLOCK GPU_TEMP POWER_USAGE GPU_UTIL MEM_COPY_UTIL FB_FREE FB_USED; do
        t_match "$M" "^# TYPE DCGM_FI_DEV_$f gauge\$" "DCGM_FI_DEV_$f is declared a gauge"
        t_match "$M" "^DCGM_FI_DEV_${f}\\{gpu=\"0\",UUID=\"GPU-[0-9a-f-]+\",pci_bus_id=\"[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\\.[0-9]\",device=\"nvidia[0-9]+\",modelName=\"[^\"]+\",Hostname=\"[^\"]+\",DCGM_FI_DRIVER_VERSION=\"[0-9.]+\"\\} [0-9.]+\$" \
                "DCGM_FI_DEV_$f of GPU 0 with dcgm-exporter's labels"
done
t_match "$(grep '^DCGM_FI_DEV_SM_CLOCK{gpu="0"' <<<"$M")" ' [1-9][0-9]+$' "the SM clock is not 0 MHz under load"
t_match "$(grep '^DCGM_FI_DEV_POWER_USAGE{gpu="0"' <<<"$M")" ' [1-9][0-9]*\.[0-9]{3}$' "power in W with mW resolution"
CTR=$(grep "^gpuhook_container_fb_used{gpu=\"0\",.*container=\"$ID\",runtime=\"runc\",pod=\"trainer-0\",namespace=\"ml\",container_name=\"worker\"}" <<<"$M")
t_match "$CTR" ' [0-9]+$' "gpuhook_container_fb_used: the container by id, pod ml/trainer-0, container worker"
t_ok "it holds at least its $CTR_MIB MiB" test "${CTR##* }" -ge "$CTR_MIB" 2>/dev/null
FBU=$(grep '^DCGM_FI_DEV_FB_USED{gpu="0"' <<<"$M")
t_ok "DCGM_FI_DEV_FB_USED (${FBU##* } MiB) is at least the container's" test "${FBU##* }" -ge "${CTR##* }" 2>/dev/null
t_match "$(grep "^gpuhook_container_sm_util{gpu=\"0\",.*container=\"$ID\"" <<<"$M")" ' [1-9][0-9]*$' \
        "gpuhook_container_sm_util: the container computes"
HOSTGPU=$([ $FAKE = 1 ] && echo 1 || echo 0)
UN=$(grep "^gpuhook_fb_unowned{gpu=\"$HOSTGPU\",.*owner=\"host\"}" <<<"$M")
t_ok "gpuhook_fb_unowned{owner=host}: the host process's ${UN##* } MiB (>= $HOST_MIB)" test "${UN##* }" -ge "$HOST_MIB" 2>/dev/null

PS=$(cli ps --json --config="$T/config.json" --state-dir="$T_RUNC_ROOT" 2>/dev/null)
t_is "$("$GH_PYTHON" -c '
import json, sys
for g in json.load(sys.stdin)["gpus"]:
    for p in g["processes"]:
        if p["pid"] == int(sys.argv[1]):
            print(p["owner"], p["container"])' "$HOST_PID" <<<"$PS")" "host None" "ps: the host process is the host's"
t_match "$(cli ps --config="$T/config.json" --state-dir="$T_RUNC_ROOT" 2>&1)" "^$HOSTGPU +$HOST_PID +[0-9]+MiB .*host process" \
        "ps: listed as GPU memory no running container owns"
D=$(cli doctor --config="$T/config.json" --state-dir="$T_RUNC_ROOT" 2>&1)
t_match "$D" "^ok +gpu-memory .*PID $HOST_PID .* on the host" "doctor: gpu-memory lists the host process" || t_diag "$D"
D=$(cli doctor --config="$T/config.json" --state-dir="$T_RUNC_ROOT" --container="$ID" 2>&1)
t_match "$D" "^ok +pod .*container 'worker' of pod ml/trainer-0" "doctor --container: the pod"

kill "$HOST_PID" 2>/dev/null
"$RUNC" --root "$T_RUNC_ROOT" delete -f "$ID" >/dev/null 2>&1
t_done
