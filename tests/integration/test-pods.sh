#!/bin/bash
# Pods without the kubelet: gpu-hook records the pod that a CRI runtime's annotations name
# (containerd's io.kubernetes.cri.*, CRI-O's io.kubernetes.*) when a GPU container starts, and
# gpu-cli ps, metrics and doctor name it; the record is root's alone, written whole, and goes when
# the container does (poststop, or collected by a reader).  Hostile annotation values (huge, control
# characters, newlines, quotes, many annotations) break neither the record nor the exposition.
# dcgm-exporter's HPC job mapping files name the same pods.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
t_need_root
t_need_cmd runc unshare "$GH_PYTHON"
. "$GH_SOURCE_DIR/tests/integration/usage-kit.sh"
usage_driver 'p["gpus"][0].update(process_memory_mib=512)'
REC=$T/records
CFG=--config=$T/config.json
hex64() { head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n'; }

# --- containerd's CRI annotations (runc with the config.json containerd writes: a 64-hex id)
A=$(hex64)
start_gpu_container a "$A" 0 'hold-fd /dev/nvidia0 & wait' "$(annotate \
        io.kubernetes.cri.container-type=container io.kubernetes.cri.sandbox-name=trainer-0 \
        io.kubernetes.cri.sandbox-namespace=ml io.kubernetes.cri.sandbox-uid=6f1c2d3e-aaaa-bbbb-cccc-0123456789ab \
        io.kubernetes.cri.container-name=worker io.kubernetes.cri.sandbox-id="$(hex64)")"
t_is "$?" 0 "a container with containerd's CRI annotations starts" || t_diag_file "$T/a.err"
A_CPID=$(wait_ready "$T/a.out")
t_is "$(stat -c %a "$REC" 2>&1)" 700 "the record directory is root's alone (0700)"
t_is "$(stat -c '%a %U' "$REC/$A" 2>&1)" "600 root" "the container's record is $REC/ID, 0600, root's"
t_match "$(cat "$REC/$A")" '^pod=trainer-0$' "the record names the pod"
t_is "$(grep -c . "$REC/$A")" 8 "the record is 8 lines"
t_is "$(find "$REC" -name '.*' | wc -l)" 0 "no temporary file is left beside it"

PS=$(gpucli ps --json "$CFG" --state-dir="$T_RUNC_ROOT" 2>"$T/ps.err")
t_is "$?" 0 "gpu-cli ps --json" || t_diag_file "$T/ps.err"
t_is "$("$GH_PYTHON" -c '
import json, sys
d = json.load(sys.stdin)
for g in d["gpus"]:
    for p in g["processes"]:
        c = p["container"]
        if c and c["id"] == sys.argv[1]:
            print(p["owner"], c["running"], c["pod"]["namespace"], c["pod"]["name"], c["pod"]["container"], c["pod"]["uid"])
' "$A" <<<"$PS")" "container True ml trainer-0 worker 6f1c2d3e-aaaa-bbbb-cccc-0123456789ab" \
        "ps --json: the process's container runs and is container 'worker' of pod ml/trainer-0"
t_match "$(gpucli ps "$CFG" --state-dir="$T_RUNC_ROOT" 2>&1)" "^0 +[0-9]+ +runc +${A:0:12} +$A_CPID +C +512MiB .* ml/trainer-0 +hold-fd\$" \
        "ps: the row shows NAMESPACE/POD"
M=$(gpucli metrics "$CFG" --state-dir="$T_RUNC_ROOT" 2>&1)
t_match "$M" "^gpuhook_container_gpu_memory_used_bytes\{gpu=\"0\",uuid=\"GPU-[^\"]+\",runtime=\"runc\",container_id=\"$A\",pod=\"trainer-0\",namespace=\"ml\",container_name=\"worker\"\} $((512 << 20))\$" \
        "metrics (gpuhook names): the container's series carries pod, namespace, container_name"
t_match "$M" "^gpuhook_container_fb_used\{gpu=\"0\",UUID=\"GPU-[^\"]+\",.*,container=\"$A\",runtime=\"runc\",pod=\"trainer-0\",namespace=\"ml\",container_name=\"worker\"\} 512\$" \
        "metrics (DCGM names): gpuhook_container_fb_used in MiB with container=ID and the pod"
D=$(cd / && "$GPU_CLI" --root="$DRV" doctor "$CFG" --state-dir="$T_RUNC_ROOT" --container="$A" 2>&1)
t_match "$D" "pod .*container '?worker'? of pod ml/trainer-0" "doctor --container names the pod" || t_diag "$D"

# dcgm-exporter's HPC job mapping files
t_ok "metrics --hpc-job-dir writes the mapping" gpucli metrics "$CFG" --state-dir="$T_RUNC_ROOT" --hpc-job-dir="$T/hpc"
t_is "$(cat "$T/hpc/0" 2>&1)" "ml/trainer-0" "GPU 0's file lists the pod using it"
t_is "$(ls "$T/hpc")" 0 "GPU 1 (unused) has no file"

# --- CRI-O's annotations
B=$(hex64)
start_gpu_container b "$B" 1 'hold-fd /dev/nvidia1 & wait' "$(annotate \
        io.kubernetes.pod.name=web-1 io.kubernetes.pod.namespace=prod io.kubernetes.container.name=nginx \
        io.kubernetes.pod.uid=9f8e io.kubernetes.cri-o.ContainerType=container)"
t_is "$?" 0 "a container with CRI-O's annotations starts" || t_diag_file "$T/b.err"
wait_ready "$T/b.out" >/dev/null
t_match "$(gpucli ps "$CFG" --state-dir="$T_RUNC_ROOT" 2>&1)" "^1 +[0-9]+ +runc +${B:0:12} .* prod/web-1 +hold-fd\$" \
        "ps names CRI-O's pod"
gpucli metrics "$CFG" --state-dir="$T_RUNC_ROOT" --hpc-job-dir="$T/hpc" >/dev/null 2>&1
t_is "$(cat "$T/hpc/1" 2>&1)" "prod/web-1" "the HPC mapping now has GPU 1's pod too"

# --- no annotations (plain Docker or runc): no pod, and a record all the same
C=gh-pods-plain-$$
start_gpu_container c "$C" 0 'hold-fd /dev/nvidia0 & wait'
wait_ready "$T/c.out" >/dev/null
t_match "$(cat "$REC/$C" 2>&1)" '^pod=$' "a container without CRI annotations: a record with no pod"
gpucli metrics "$CFG" --state-dir="$T_RUNC_ROOT" --hpc-job-dir="$T/hpc" >/dev/null 2>&1
t_is "$(sort "$T/hpc/0" | tr '\n' ' ')" "$C ml/trainer-0 " "its job id in the mapping is its container id"

# --- hostile annotation values: huge, control characters, newlines, quotes; thousands of annotations
H=$(hex64)
"$GH_PYTHON" - "$T/hostile.py" <<'EOF'
import json, sys
name = "x" * 100000
ns = 'q"uo\\te\n} 1\nfake_metric{a="b"} 2\n\x1b[2J'
container = "é" * 300
code = "c.setdefault('annotations', {}).update(%s)\n" % json.dumps({
    "io.kubernetes.cri.sandbox-name": name, "io.kubernetes.cri.sandbox-namespace": ns,
    "io.kubernetes.cri.container-name": container})
code += "c['annotations'].update({'example.com/a%d' % i: 'v' * 64 for i in range(5000)})\n"
open(sys.argv[1], "w").write(code)
EOF
start_gpu_container h "$H" 0 'hold-fd /dev/nvidia0 & wait' "$(cat "$T/hostile.py")"
t_is "$?" 0 "a container with hostile annotations (100 KB name, newlines, quotes, ESC, 5000 annotations) starts" ||
        t_diag_file "$T/h.err"
wait_ready "$T/h.out" >/dev/null
t_is "$(grep -c . "$REC/$H")" 8 "its record is still 8 lines: no value started a line"
t_match "$(stat -c %s "$REC/$H")" '^[0-9]{3}$' "and under 1 KB (values cut to 253 bytes)"
t_is "$(grep '^namespace=' "$REC/$H")" 'namespace=q"uo\te?} 1?fake_metric{a="b"} 2??[2J' \
        "newlines and ESC became '?'; quotes and backslash kept"
t_is "$(grep '^container=' "$REC/$H" | sed 's/^container=//' | wc -c)" 253 \
        "a name of 300 two-byte characters is cut to 126 whole ones (252 bytes)"
M=$(gpucli metrics "$CFG" --state-dir="$T_RUNC_ROOT" 2>&1)
t_nomatch "$M" '^fake_metric' "no line of the exposition comes from an annotation"
t_match "$M" 'namespace="q\\"uo\\\\te\?\} 1\?fake_metric\{a=\\"b\\"\} 2\?\?\[2J"' \
        "the namespace label is escaped as the exposition format says"
if have_cmd promtool; then
        t_ok "promtool check metrics accepts the exposition with the hostile labels" promtool_check "$M"
else
        t_skip "promtool check metrics" "promtool (Debian package prometheus) is not installed"
fi
t_ok "ps --json with the hostile pod is valid JSON" sh -c "$(declare -f gpucli); DRV='$DRV' GPU_CLI='$GPU_CLI'
        gpucli ps --json '$CFG' --state-dir='$T_RUNC_ROOT' | '$GH_PYTHON' -c 'import json, sys; json.load(sys.stdin)'"

# --- the record goes with the container
"$RUNC" --root "$T_RUNC_ROOT" kill "$C" KILL 2>/dev/null
for _ in $(seq 50); do [ "$("$RUNC" --root "$T_RUNC_ROOT" state "$C" 2>/dev/null | grep -c '"stopped"')" = 1 ] && break; sleep 0.1; done
"$RUNC" --root "$T_RUNC_ROOT" delete "$C"
t_ok "a stopped and deleted container's record is still there (no poststop hook)" test -e "$REC/$C"
gpucli ps "$CFG" --state-dir="$T_RUNC_ROOT" >/dev/null 2>&1
t_ok "gpu-cli ps collected it: its init is gone and no process claims it" test ! -e "$REC/$C"
t_ok "the records of the running containers stay" test -e "$REC/$A" -a -e "$REC/$B" -a -e "$REC/$H"
gpucli metrics "$CFG" --state-dir="$T_RUNC_ROOT" --hpc-job-dir="$T/hpc" >/dev/null 2>&1
# (in the order NVML lists the processes: by pid, which need not be the order the containers started)
t_is "$(grep -c . "$T/hpc/0") $(grep -cx 'ml/trainer-0' "$T/hpc/0")" "2 1" \
        "the HPC mapping drops the stopped container (left: the pod and the hostile one)"
t_nomatch "$(cat "$T/hpc/0")" '[[:space:]]' "no job id holds whitespace (dcgm-exporter would split it as job and user)"

P=gh-pods-poststop-$$
make_container p 'hold-fd /dev/nvidia0 & wait'
bundle_set_env "$T/p/bundle" NVIDIA_VISIBLE_DEVICES=0
bundle_add_hook "$T/p/bundle" createRuntime "$GPU_HOOK" "--config=$T/config.json" createRuntime
bundle_add_hook "$T/p/bundle" poststop "$GPU_HOOK" "--config=$T/config.json" poststop
"$RUNC" --root "$T_RUNC_ROOT" run -d -b "$T/p/bundle" "$P" >"$T/p.out" 2>"$T/p.err" </dev/null
wait_ready "$T/p.out" >/dev/null
t_ok "a container with gpu-hook as poststop hook too: recorded" test -e "$REC/$P"
"$RUNC" --root "$T_RUNC_ROOT" delete -f "$P" 2>"$T/p-del.err"
t_ok "runc delete runs the poststop hook: the record is gone at once" test ! -e "$REC/$P" || t_diag_file "$T/p-del.err"
t_is "$(echo '{"ociVersion":"1.0.2","id":"../../etc","status":"stopped","pid":0,"bundle":"/x"}' |
        "$GPU_HOOK" "--config=$T/config.json" poststop; echo $?)" 0 "poststop with a hostile id: exit 0, nothing removed"

# --- a record directory that is too open is tightened; one that is not root's is refused
chmod 0755 "$REC"
E=gh-pods-open-$$
start_gpu_container e "$E" 0 'hold-fd /dev/nvidia0 & wait'
wait_ready "$T/e.out" >/dev/null
t_is "$(stat -c %a "$REC")" 700 "a 0755 record directory of root's is tightened to 0700 by the next start"
chown "$NOBODY" "$REC"
F=gh-pods-notours-$$
start_gpu_container f "$F" 0 'hold-fd /dev/nvidia0 & wait'
t_is "$?" 0 "a record directory of another uid: the container still starts" || t_diag_file "$T/f.err"
t_ok "but gets no record there" test ! -e "$REC/$F"
t_match "$(cd / && "$GPU_CLI" --root="$DRV" doctor "$CFG" --json 2>&1 | "$GH_PYTHON" -c '
import json, sys
for c in json.load(sys.stdin)["checks"]:
    if c["name"] == "container-records":
        print(c["status"], c["evidence"])')" "^warn .*not a directory of uid 0" "doctor's container-records check warns and says why"
chown 0 "$REC"

# --- podman --annotation, with the hooks.d files of this build
if have_cmd podman; then
        mkdir -p "$T/hooks.d"
        printf '{"version": "1.0.0", "hook": {"path": "%s", "args": ["gpu-hook", "--config=%s", "prestart"], "env": ["PATH=/usr/bin:/bin"]}, "when": {"always": true}, "stages": ["prestart"]}\n' \
                "$GPU_HOOK" "$T/config.json" >"$T/hooks.d/gpu-hook.json"
        ROOTFS=$T/podman-rootfs
        make_busybox_rootfs "$ROOTFS" --glibc
        run_podman "$ROOTFS" "$T/hooks.d" -e NVIDIA_VISIBLE_DEVICES=0 --annotation io.kubernetes.pod.name=pm-pod \
                --annotation io.kubernetes.pod.namespace=pm-ns --annotation io.kubernetes.container.name=pm-ctr \
                -- /bin/true
        t_is "$RUN_RC" 0 "podman run --annotation with gpu-hook from hooks.d" || t_diag "$RUN_STDERR"
        PM=$(grep -l '^pod=pm-pod$' "$REC"/* 2>/dev/null | head -n1)
        t_match "$(cat "$PM" 2>/dev/null)" '^namespace=pm-ns$' "podman's --annotation reached the record"
        gpucli ps "$CFG" >/dev/null 2>&1
        t_ok "the exited podman container's record is collected by the next reader" test ! -e "${PM:-/nonexistent}"
        printf '{"version": "1.0.0", "hook": {"path": "%s", "args": ["gpu-hook", "--config=%s", "poststop"], "env": ["PATH=/usr/bin:/bin"]}, "when": {"always": true}, "stages": ["poststop"]}\n' \
                "$GPU_HOOK" "$T/config.json" >"$T/hooks.d/gpu-hook-poststop.json"
        run_podman "$ROOTFS" "$T/hooks.d" -e NVIDIA_VISIBLE_DEVICES=0 --annotation io.kubernetes.pod.name=pm-pod2 \
                -- /bin/true
        t_is "$RUN_RC" 0 "podman with gpu-hook's poststop stage in hooks.d too" || t_diag "$RUN_STDERR"
        t_is "$(grep -l '^pod=pm-pod2$' "$REC"/* 2>/dev/null | wc -l)" 0 "its record went at poststop"
else
        t_skip "podman --annotation" "podman is not installed"
fi

for c in "$A" "$B" "$H" "$E" "$F"; do "$RUNC" --root "$T_RUNC_ROOT" delete -f "$c" >/dev/null 2>&1; done
t_done
