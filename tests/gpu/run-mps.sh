#!/bin/bash
# MPS groups on the real driver, TAP.  Runs THERE (the GPU machine), as root, from the repo root,
# with the kit of tests/gpu/prepare.sh carried as .gpukit.  Never changes the compute mode; quits
# every daemon it starts.
#
#   bash tests/gpu/run-mps.sh
#
# A group on GPU 0 with a 4 GiB pinned-memory limit; a container joined to it (annotation
# org.gpu-hook.mps-group) cannot allocate 6 GiB but can allocate 2 GiB; a container outside the
# group allocates 6 GiB; two containers in the group run at once and are its clients (mps list,
# gpu-cli ps under their container ids, doctor's mps-group check); mps list's compute mode agrees
# with nvidia-smi; the group's CDI spec (nvidia.com/gpu=mps-g4, applied to a runc bundle by
# tests/helpers/cdi-apply.py: this machine has no podman) gives a container the same limit; stop
# leaves no MPS process and removes the spec.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/kit.sh"
gpukit_need_gpu_nvcc

D=$T/mps
G=("$GPU_CLI" mps --mps-dir="$D")
t_diag "compute mode: $(nvidia-smi --query-gpu=compute_mode --format=csv,noheader 2>&1)"
ALLOC=$T/mps_alloc
t_ok "nvcc builds mps_alloc" timeout 300 "$NVCC" -O2 -cudart static -arch=native -o "$ALLOC" "$here/mps_alloc.cu"

make_busybox_rootfs "$T/tmpl" --glibc >"$T/rootfs.log" 2>&1 || { t_diag_file "$T/rootfs.log"; echo "Bail out! rootfs"; exit 1; }
cp "$ALLOC" "$T/tmpl/usr/local/bin/mps_alloc"
printf '{"cli": {"root": "/", "path": "%s"}, "log": {"file": "%s/hook.log"}, "mps": {"dir": "%s"}}\n' \
        "$GPU_CLI" "$T" "$D" >"$T/config.json"

# bundle NAME GROUP|- CMD...: a GPU 0 container (GPU $GPU when set) with the hook, optionally in GROUP
bundle() {
        local name=$1 group=$2
        shift 2
        cp -a "$T/tmpl" "$T/$name-rootfs"
        make_bundle "$T/$name" "$T/$name-rootfs" "$@"
        bundle_set_env "$T/$name" NVIDIA_VISIBLE_DEVICES="${GPU:-0}" NVIDIA_DRIVER_CAPABILITIES=compute,utility
        [ "$group" != - ] && bundle_edit "$T/$name" 'c.setdefault("annotations", {})["org.gpu-hook.mps-group"] = args[0]' "$group"
        bundle_add_hook "$T/$name" createRuntime "$GPU_HOOK" "--config=$T/config.json" createRuntime
}

CDI_SPEC=$T/cdi/nvidia.com-gpu-mps-g4.json
t_ok "mps start g4 --device=0 --memory=4G" "${G[@]}" start g4 --device=0 --memory=4G --cdi-spec="$CDI_SPEC"
t_diag "$("${G[@]}" list 2>&1)" "pipe: $(ls "$D/g4/pipe" 2>&1 | tr '\n' ' ')" "log: $(tail -n 5 "$D"/g4/log/*.log 2>&1)"

bundle in6 g4 /usr/local/bin/mps_alloc 6144
run_runc "$T/in6" in6
t_match "$RUN_STDOUT" "mps_alloc 6144 MiB: FAIL" "in the 4G group: 6 GiB is refused" || t_diag "$RUN_STDERR"
bundle in2 g4 /usr/local/bin/mps_alloc 2048
run_runc "$T/in2" in2
t_match "$RUN_STDOUT" "mps_alloc 2048 MiB: ok" "in the 4G group: 2 GiB works" || t_diag "$RUN_STDERR"
bundle out6 - /usr/local/bin/mps_alloc 6144
run_runc "$T/out6" out6
t_match "$RUN_STDOUT" "mps_alloc 6144 MiB: ok" "outside the group: 6 GiB works" || t_diag "$RUN_STDERR"

# A group on the second GPU (where there is one): the daemon sees only that GPU, so the limit set
# for its device 0 binds GPU 1; a container given GPU 0 cannot join it.
if [ "$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')" -ge 2 ]; then
        t_ok "mps start g5 --device=1 --memory=4G" "${G[@]}" start g5 --device=1 --memory=4G --cdi-spec=none
        GPU=1 bundle g5in6 g5 /usr/local/bin/mps_alloc 6144
        run_runc "$T/g5in6" g5in6
        t_match "$RUN_STDOUT" "mps_alloc 6144 MiB: FAIL" "GPU 1's 4G group: 6 GiB is refused" || t_diag "$RUN_STDERR"
        GPU=1 bundle g5in2 g5 /usr/local/bin/mps_alloc 2048
        run_runc "$T/g5in2" g5in2
        t_match "$RUN_STDOUT" "mps_alloc 2048 MiB: ok" "GPU 1's 4G group: 2 GiB works" || t_diag "$RUN_STDERR"
        GPU=1 bundle g5out6 - /usr/local/bin/mps_alloc 6144
        run_runc "$T/g5out6" g5out6
        t_match "$RUN_STDOUT" "mps_alloc 6144 MiB: ok" "GPU 1 outside the group: 6 GiB works" || t_diag "$RUN_STDERR"
        bundle g5wrong g5 /usr/local/bin/mps_alloc 1024
        run_runc "$T/g5wrong" g5wrong
        t_not "a container given GPU 0 cannot join GPU 1's group" test "$RUN_RC" = 0
        t_match "$RUN_STDERR" "MPS group 'g5' runs on GPU GPU-.*which this container does not get" "... the start fails saying so"
        t_ok "mps stop g5" "${G[@]}" stop g5
else
        t_skip "a group on the second GPU" "one GPU here"
fi

# the same group through its CDI spec alone: no hook, no annotation
APPLY=$REPO/tests/helpers/cdi-apply.py
[ -f "$APPLY" ] || APPLY=$KIT/tests/helpers/cdi-apply.py
t_ok "mps start wrote the group's CDI spec" test -f "$CDI_SPEC"
for n in 6144 2048; do
        cp -a "$T/tmpl" "$T/cdi$n-rootfs"
        make_bundle "$T/cdi$n" "$T/cdi$n-rootfs" /usr/local/bin/mps_alloc "$n"
        if "$GH_PYTHON" "$APPLY" --spec "$CDI_SPEC" "$T/cdi$n" nvidia.com/gpu=mps-g4 2>"$T/apply.err"; then
                run_runc "$T/cdi$n" "cdi$n"
        else
                RUN_STDOUT= RUN_STDERR=$(cat "$T/apply.err")
        fi
        want=$([ "$n" = 6144 ] && echo FAIL || echo ok)
        t_match "$RUN_STDOUT" "mps_alloc $n MiB: $want" "CDI nvidia.com/gpu=mps-g4: $n MiB: $want" || t_diag "$RUN_STDERR"
done

# two containers of the group at once, each holding 1 GiB for 15 s
bundle a g4 /usr/local/bin/mps_alloc 1024 15
bundle b g4 /usr/local/bin/mps_alloc 1024 15
"$RUNC" run -b "$T/a" gh-mps-a >"$T/a.out" 2>&1 &
pa=$!
"$RUNC" run -b "$T/b" gh-mps-b >"$T/b.out" 2>&1 &
pb=$!
clients=
for _ in $(seq 40); do
        sleep 0.5
        clients=$("${G[@]}" list --json 2>/dev/null | python3 -c 'import json,sys; print(len(json.load(sys.stdin)[0]["clients"]))' 2>/dev/null)
        [ "${clients:-0}" -ge 2 ] && break
done
t_is "${clients:-0}" 2 "two containers of the group are its clients at once"
t_diag "mps list:" "$("${G[@]}" list 2>&1)"
t_diag "gpu-cli ps:" "$("$GPU_CLI" ps 2>&1 | head -n 20)"
smi_mode=$(nvidia-smi -i 0 --query-gpu=compute_mode --format=csv,noheader 2>/dev/null | tr -d ' ')
t_is "$("${G[@]}" list --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["compute_mode"])')" \
        "$smi_mode" "mps list reports GPU 0's compute mode as nvidia-smi does ($smi_mode)"
t_is "$("$GPU_CLI" ps --json --mps-dir="$D" 2>/dev/null | python3 -c '
import json, sys
g = [g for g in json.load(sys.stdin)["mps_groups"] if g["name"] == "g4"][0]
print(" ".join(sorted(c["container"]["id"] if c["container"] else "host" for c in g["clients"])))')" \
        "gh-mps-a gh-mps-b" "gpu-cli ps lists the group's two clients under their containers"
DOC=$("$GPU_CLI" doctor --json --container=gh-mps-a --config="$T/config.json" 2>&1)
t_match "$(printf '%s' "$DOC" | python3 -c 'import json,sys; [print(c["status"], c["evidence"]) for c in json.load(sys.stdin)["checks"] if c["name"] == "mps-group"]')" \
        "^ok annotation org.gpu-hook.mps-group=g4: daemon [0-9]+ alive on GPU 0 .*memory 4096M; /tmp/nvidia-mps and /dev/shm are the group's" \
        "doctor --container: in group g4, daemon alive, 4G limit, the group's directories mounted" || t_diag "$DOC"
wait $pa $pb
t_match "$(cat "$T/a.out")" "mps_alloc 1024 MiB: ok" "container a ran in the group"
t_match "$(cat "$T/b.out")" "mps_alloc 1024 MiB: ok" "container b ran in the group"

t_ok "mps stop g4" "${G[@]}" stop g4
sleep 0.5
# zombies do not count: PID 1 of the GPU machine's VM does not always reap orphans
t_is "$(ps -eo stat=,comm= | awk '$1 !~ /^Z/ && $2 ~ /^nvidia-cuda-mps/' | wc -l)" 0 "no MPS process is left (zombies aside)" || t_diag "$(pgrep -fa nvidia-cuda-mps; ps -eo pid,ppid,sid,stat,args | grep -i mps)"
t_is "$(ls "$D")" "" "no group directory is left"
t_not "mps stop removed the group's CDI spec" test -e "$CDI_SPEC"
t_done
