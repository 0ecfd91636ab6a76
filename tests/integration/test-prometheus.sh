#!/bin/bash
# A real Prometheus server (Debian's package) scrapes `gpu-cli metrics --listen` on loopback every
# second; its HTTP API (/api/v1/query) must return the container's series by name and label, under
# gpu-hook's names and under dcgm-exporter's (what Grafana dashboard 12239 and dcgm-exporter's
# alerts query), with the pod a CRI runtime's annotations named, and the memory no running container
# owns.  A pod name with quotes and a newline must not break the scrape.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
t_need_root
t_need_cmd runc unshare prometheus "$GH_PYTHON"
. "$GH_SOURCE_DIR/tests/integration/usage-kit.sh"
usage_driver '
p["gpus"][0].update(process_memory_mib=512, process_sm_util=30, memory_util=12, sm_clock_mhz=1755, mem_clock_mhz=2619)
p["gpus"][1].update(process_memory_mib=2048, process_sm_util=70, temperature=51, power_mw=123456)'
CFG=--config=$T/config.json
A=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
start_gpu_container a "$A" 0 'hold-fd /dev/nvidia0 & wait' "$(annotate io.kubernetes.cri.sandbox-name=trainer-0 \
        io.kubernetes.cri.sandbox-namespace=ml io.kubernetes.cri.container-name=worker)"
t_is "$?" 0 "a GPU container of pod ml/trainer-0 starts" || t_diag_file "$T/a.err"
wait_ready "$T/a.out" >/dev/null
Q=gh-prom-quoted-$$
start_gpu_container q "$Q" 0 'hold-fd /dev/nvidia0 & wait' "$(annotate 'io.kubernetes.pod.name=we"ird\pod
name' io.kubernetes.pod.namespace=odd)"
wait_ready "$T/q.out" >/dev/null
"$HOLD" --user="$NOBODY" "$DRV/dev/nvidia1" >"$T/h.out" &
HOST_PID=$!
wait_ready "$T/h.out" >/dev/null

PORT=$(free_port)
listen_start "$PORT" "$CFG" --state-dir="$T_RUNC_ROOT" --hostname=gpu-node-7 || t_fatal "metrics --listen answers"
prom_start "127.0.0.1:$PORT" || { t_diag_file "$T/prometheus/log"; t_fatal "prometheus starts"; }
UP=$(prom_wait 'up{job="gpu-cli"} == 1' 30)
t_match "$UP" '^up\{\} 1$' "Prometheus scrapes gpu-cli metrics --listen (up == 1)" || t_diag "$(prom_targets)"

# dcgm-exporter's names, units and labels
FB=$(prom_wait 'DCGM_FI_DEV_FB_USED{gpu="0"}')
t_match "$FB" '^DCGM_FI_DEV_FB_USED\{DCGM_FI_DRIVER_VERSION="580.95.05",Hostname="gpu-node-7",UUID="GPU-f4290dac-4b65-0c04-8446-750d860faf24",device="nvidia0",gpu="0",modelName="NVIDIA H100 80GB HBM3",pci_bus_id="00000000:00:06.0"\} 1024$' \
        "DCGM_FI_DEV_FB_USED: GPU 0's used framebuffer in MiB with dcgm-exporter's labels" || t_diag "$FB"
t_match "$(prom_query 'DCGM_FI_DEV_FB_FREE{gpu="0"}')" ' 80535$' "DCGM_FI_DEV_FB_FREE: the free MiB (81559 - 1024)"
t_match "$(prom_query 'DCGM_FI_DEV_GPU_UTIL{gpu="0"}')" ' 60$' "DCGM_FI_DEV_GPU_UTIL: 2 processes x 30%"
t_match "$(prom_query 'DCGM_FI_DEV_MEM_COPY_UTIL{gpu="0"}')" ' 12$' "DCGM_FI_DEV_MEM_COPY_UTIL"
t_match "$(prom_query 'DCGM_FI_DEV_SM_CLOCK{gpu="0"}')" ' 1755$' "DCGM_FI_DEV_SM_CLOCK in MHz"
t_match "$(prom_query 'DCGM_FI_DEV_MEM_CLOCK{gpu="0"}')" ' 2619$' "DCGM_FI_DEV_MEM_CLOCK in MHz"
t_match "$(prom_query 'DCGM_FI_DEV_GPU_TEMP{gpu="1"}')" ' 51$' "DCGM_FI_DEV_GPU_TEMP"
t_match "$(prom_query 'DCGM_FI_DEV_POWER_USAGE{gpu="1"}')" ' 123.456$' "DCGM_FI_DEV_POWER_USAGE in W"
t_is "$(prom_query 'count(count by (gpu) (DCGM_FI_DEV_GPU_TEMP{Hostname="gpu-node-7"}))')" '{} 2' \
        "one series per GPU, as a dashboard's gpu variable finds them"

# the container's series, by name and label
S=$(prom_query "gpuhook_container_fb_used{container=\"$A\",pod=\"trainer-0\",namespace=\"ml\"}")
t_match "$S" '^gpuhook_container_fb_used\{.*container="'"$A"'",container_name="worker",.*gpu="0",.*namespace="ml",.*pod="trainer-0",runtime="runc"\} 512$' \
        "gpuhook_container_fb_used{container=ID,pod,namespace}: the container's 512 MiB" || t_diag "$S"
t_match "$(prom_query "gpuhook_container_sm_util{pod=\"trainer-0\"}")" ' 30$' "gpuhook_container_sm_util by pod"
t_match "$(prom_query "gpuhook_container_gpu_memory_used_bytes{container_id=\"$A\",pod=\"trainer-0\"}")" " $((512 << 20))\$" \
        "gpu-hook's own names stay: gpuhook_container_gpu_memory_used_bytes{container_id=ID,pod}"
t_match "$(prom_query 'sum by (namespace) (gpuhook_container_fb_used{namespace="ml"})')" '^\{namespace="ml"\} 512$' \
        "a namespace's GPU memory, summed in PromQL"
t_match "$(prom_query 'gpuhook_container_fb_used{namespace="odd"}')" 'pod="we\\"ird\\\\pod\?name"' \
        "the pod with a quote, a backslash and a newline arrives as one label value (newline as '?')"
t_match "$(prom_query 'gpuhook_fb_unowned{gpu="1",owner="host"}')" ' 2048$' "gpuhook_fb_unowned: GPU 1's host process"
t_match "$(prom_query 'gpuhook_gpu_memory_unowned_bytes{gpu="0",owner="host"}')" ' 0$' "and nothing unowned on GPU 0"
# Grafana 12239's panels ask for these, by gpu and instance
for m in DCGM_FI_DEV_GPU_TEMP DCGM_FI_DEV_POWER_USAGE DCGM_FI_DEV_SM_CLOCK DCGM_FI_DEV_GPU_UTIL DCGM_FI_DEV_FB_USED; do
        t_is "$(prom_query "count($m{instance=\"127.0.0.1:$PORT\"})")" '{} 2' "dashboard query: $m for both GPUs"
done
prom_stop
kill "$LISTEN_PID"
wait "$LISTEN_PID" 2>/dev/null

# --names: only one set
ONLY=$(gpucli metrics "$CFG" --state-dir="$T_RUNC_ROOT" --names=dcgm 2>&1)
t_nomatch "$ONLY" '^gpuhook_(gpu|container_gpu)_' "--names=dcgm: no gpuhook_gpu_* or gpuhook_container_gpu_* series"
t_match "$ONLY" '^DCGM_FI_DEV_FB_USED' "--names=dcgm: the DCGM series"
ONLY=$(gpucli metrics "$CFG" --state-dir="$T_RUNC_ROOT" --names=gpuhook 2>&1)
t_nomatch "$ONLY" '^(DCGM_|gpuhook_container_fb_used)' "--names=gpuhook: no DCGM-named series"
printf '{"cli": {"root": "%s"}, "metrics": {"names": "gpuhook"}, "containers": {"dir": "%s"}}\n' "$DRV" "$T/records" \
        >"$T/gpuhook-names.json"
t_nomatch "$(gpucli metrics --config="$T/gpuhook-names.json" 2>&1)" '^DCGM_' "metrics.names = gpuhook in the configuration"
t_match "$(gpucli metrics --config="$T/gpuhook-names.json" --names=both 2>&1)" '^DCGM_' "--names overrides it"
printf '{"metrics": {"names": "dcgm-exporter"}}\n' >"$T/bad-names.json"
t_not "metrics.names must be both, dcgm or gpuhook" "$GPU_CLI" metrics --config="$T/bad-names.json"
t_not "--names must be both, dcgm or gpuhook" "$GPU_CLI" metrics --names=all
if have_cmd promtool; then
        t_ok "promtool check metrics accepts both sets" promtool_check "$(gpucli metrics "$CFG" --state-dir="$T_RUNC_ROOT")"
else
        t_skip "promtool check metrics" "promtool is not installed"
fi

kill "$HOST_PID"
for c in "$A" "$Q"; do "$RUNC" --root "$T_RUNC_ROOT" delete -f "$c" >/dev/null 2>&1; done
t_done
