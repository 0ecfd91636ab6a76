#!/bin/bash
# The CDI spec of an MPS group, with the fake driver and the fake nvidia-cuda-mps-control:
# `gpu-cli cdi generate --mps-group=NAME` and the spec `mps start` writes (one device, mps-NAME: the
# group GPU's node, the group's pipe directory and shm; the common edits without the host's default
# MPS pipe directory), valid against the CDI schema, current for --check and stale when the group
# moved; errors for unknown, stopped and CDI-invalid groups; `mps stop` removes the spec it wrote and
# no other file; and podman --device nvidia.com/gpu=mps-NAME gives a container in the group.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
t_need_root
MKROOT=$GH_SOURCE_DIR/tests/fake-driver/make-root.sh
CLI=${GPU_CLI:?}

DRV=$T/drv
bash "$MKROOT" "$DRV" >"$T/mkroot.log" 2>&1 || { t_diag_file "$T/mkroot.log"; echo "Bail out! make-root.sh"; exit 1; }
# the host's default MPS pipe directory: a plain GPU container gets it, one in a group must not
mkdir -p "$DRV/tmp/nvidia-mps"
echo host >"$DRV/tmp/nvidia-mps/host-default-pipe"
D=$T/mps
S=$T/specs
G=("$CLI" --root="$DRV" mps --mps-dir="$D")
GEN=("$CLI" --root="$DRV" cdi generate --mps-dir="$D")
gpu_uuid() { sed -n 's/^GPU UUID:[[:space:]]*//p' "$DRV"/proc/driver/nvidia/gpus/$(ls "$DRV/proc/driver/nvidia/gpus" | sort | sed -n "$1p")/information; }
UUID0=$(gpu_uuid 1)
UUID1=$(gpu_uuid 2)
state() { sed -n "s/^$1=//p" "$D/$2/group"; }
# json_get FILE PYTHON-EXPRESSION (s = the spec; dev(NAME) = a device's containerEdits)
json_get() {
        "$GH_PYTHON" -c '
import json, sys
s = json.load(open(sys.argv[1]))
def dev(n): return [d for d in s["devices"] if d["name"] == n][0]["containerEdits"]
def mounts(e): return sorted((m["hostPath"], m["containerPath"], ",".join(m["options"])) for m in e.get("mounts", []))
print(eval(sys.argv[2]))' "$1" "$2"
}
# stop every group this test started, whatever happened
stop_all() { local g; for g in $(ls "$D" 2>/dev/null); do "${G[@]}" stop "$g" >/dev/null 2>&1; done; }

"$CLI" --root="$DRV" cdi generate --output="$S/main.json" 2>"$T/err" || t_diag_file "$T/err"

# --- the spec mps start writes
t_ok "mps start team on GPU 1 writes its spec to --cdi-spec" "${G[@]}" start team --device=1 --memory=2G --cdi-spec="$S/team.json"
SPEC=$S/team.json
t_ok "the spec exists" test -f "$SPEC"
t_is "$(stat -c %a "$SPEC")" 644 "... mode 0644"
t_is "$(json_get "$SPEC" '",".join(d["name"] for d in s["devices"]) + " " + s["kind"]')" "mps-team nvidia.com/gpu" \
        "one device, mps-team, of kind nvidia.com/gpu"
if cdi_can_validate; then
        t_is "$(cdi_validate "$SPEC")" valid "the group's spec validates against the official CDI schema"
else
        t_skip "the group's spec validates against the official CDI schema" "no $CDI_SCHEMA/schema.json or python3-jsonschema"
fi
t_is "$("$CLI" cdi list --quiet "$SPEC")" "nvidia.com/gpu=mps-team" "cdi list: nvidia.com/gpu=mps-team"
t_is "$(json_get "$SPEC" '[n["path"] + ":" + str(n["major"]) + ":" + str(n["minor"]) for n in dev("mps-team")["deviceNodes"]]')" \
        "['/dev/nvidia1:195:1']" "the device has the group GPU's node (GPU 1), no other"
t_is "$(json_get "$SPEC" 'mounts(dev("mps-team"))')" \
        "[('$D/team/pipe', '/tmp/nvidia-mps', 'nosuid,nodev,noexec,bind'), ('$D/team/shm', '/dev/shm', 'nosuid,nodev,noexec,bind')]" \
        "the device mounts the group's pipe directory at /tmp/nvidia-mps and its shm at /dev/shm, from their host paths"
t_match "$(json_get "$S/main.json" 'mounts(s["containerEdits"])')" "'$DRV/tmp/nvidia-mps', '/tmp/nvidia-mps'" \
        "the main spec mounts the host's default MPS pipe directory"
t_nomatch "$(json_get "$SPEC" 'mounts(s["containerEdits"])')" "nvidia-mps" "the group's spec does not"
t_is "$(json_get "$SPEC" 'mounts(s["containerEdits"])')" \
        "$(json_get "$S/main.json" '[m for m in mounts(s["containerEdits"]) if m[1] != "/tmp/nvidia-mps"]')" \
        "... and has every other common mount of the main spec"
t_is "$(json_get "$SPEC" '(s["containerEdits"]["deviceNodes"], s["containerEdits"]["hooks"], s["containerEdits"]["env"])')" \
        "$(json_get "$S/main.json" '(s["containerEdits"]["deviceNodes"], s["containerEdits"]["hooks"], s["containerEdits"]["env"])')" \
        "its control nodes, hook and environment are the main spec's"
t_is "$("${GEN[@]}" --mps-group=team --output=-)" "$(cat "$SPEC")" "cdi generate --mps-group=team writes the same spec"
t_ok "cdi generate --mps-group --check: the spec is current" "${GEN[@]}" --mps-group=team --check="$SPEC"
t_is "$("${G[@]}" list --json | "$GH_PYTHON" -c 'import json,sys; g=json.load(sys.stdin)[0]; print(g["cdi_spec"], g["cdi_device"])')" \
        "$SPEC nvidia.com/gpu=mps-team" "mps list --json: the spec and its device"
t_match "$("${G[@]}" list)" "^team .* alive +- +nvidia\\.com/gpu=mps-team\$" "mps list: the CDI device"

# --- errors: one line, non-zero, nothing written
"${GEN[@]}" --mps-group=nosuch --output="$S/x.json" >/dev/null 2>"$T/err"
t_is "$?" 1 "cdi generate --mps-group of an unknown group fails"
t_is "$(cat "$T/err")" "gpu-cli: cdi generate: no MPS group 'nosuch' (see 'gpu-cli mps list')" "... in one line naming it"
for bad in ../x a/b "" g- g. g_ .x; do
        "${GEN[@]}" --mps-group="$bad" --output="$S/x.json" >/dev/null 2>"$T/err"
        t_is "$?" 2 "cdi generate --mps-group='$bad' is a usage error"
done
"${GEN[@]}" --mps-group=g- --output="$S/x.json" >/dev/null 2>"$T/err"
t_match "$(cat "$T/err")" "MPS group 'g-' cannot be a CDI device: CDI device names end in a letter or digit" \
        "... a name ending in '-' is refused for CDI, saying why"
"$CLI" --root="$DRV" cdi generate --mps-dir="$D" --output="$S/x.json" >/dev/null 2>"$T/err"
t_is "$?" 2 "--mps-dir without --mps-group is a usage error"
t_not "nothing was written" test -e "$S/x.json"
"${G[@]}" start g- --device=0 >/dev/null 2>"$T/err"
t_is "$?" 2 "mps start g- (with a spec) is refused"
t_match "$(cat "$T/err")" "cannot be a CDI device.*or give --cdi-spec=none" "... naming the way out"
t_not "... and creates no group" test -e "$D/g-"
t_ok "mps start g- --cdi-spec=none starts it" "${G[@]}" start g- --device=0 --cdi-spec=none
t_ok "mps stop g-" "${G[@]}" stop g-

# a group whose daemon died: not running
t_ok "mps start dead" "${G[@]}" start dead --device=0 --cdi-spec="$S/dead.json"
kill -9 "$(state pid dead)"
for _ in $(seq 50); do "${G[@]}" list | grep -q '^dead .* dead ' && break; sleep 0.1; done
"${GEN[@]}" --mps-group=dead --output="$S/x.json" >/dev/null 2>"$T/err"
t_is "$?" 1 "cdi generate --mps-group of a group whose daemon died fails"
t_match "$(cat "$T/err")" "MPS group 'dead' is not running" "... saying so"
t_not "... and writes nothing" test -e "$S/x.json"
t_ok "mps stop dead" "${G[@]}" stop dead
t_not "stop removed the spec start wrote" test -e "$S/dead.json"

# --check: a spec of a group that moved to another GPU is stale
cp "$SPEC" "$S/team-old.json"
t_ok "mps stop team" "${G[@]}" stop team
t_not "stop removed team's spec" test -e "$SPEC"
t_ok "mps start team on GPU 0" "${G[@]}" start team --device=0 --cdi-spec=none
"${GEN[@]}" --mps-group=team --check="$S/team-old.json" >/dev/null 2>"$T/err"
t_is "$?" 1 "--check of the spec written for GPU 1: stale"
t_match "$(cat "$T/err")" "is stale: device 'mps-team': device node '/dev/nvidia0' is missing" "... naming the node"
t_ok "mps stop team" "${G[@]}" stop team
"${GEN[@]}" --mps-group=team --check="$S/team-old.json" >/dev/null 2>"$T/err"
t_is "$?" 1 "--check once the group is gone fails"
t_match "$(cat "$T/err")" "no MPS group 'team'" "... saying so"

# stop removes the file start wrote and no other
t_ok "mps start moved" "${G[@]}" start moved --device=1 --cdi-spec="$S/moved.json"
cp "$S/moved.json" "$S/moved.new" && mv -f "$S/moved.new" "$S/moved.json"
"${G[@]}" stop moved >/dev/null 2>"$T/err"
t_is "$?" 0 "mps stop of a group whose spec was replaced since"
t_ok "... leaves the replaced file alone" test -f "$S/moved.json"
t_match "$(cat "$T/err")" "left $S/moved.json alone: it is no longer the CDI spec gpu-cli wrote" "... saying so"
echo '{"cdiVersion": "0.3.0", "kind": "example.com/x", "devices": [{"name": "a", "containerEdits": {}}]}' >"$S/other.json"
cp "$S/other.json" "$S/other.before"
"${G[@]}" start other --device=1 --cdi-spec="$S/other.json" >/dev/null 2>"$T/err"
t_is "$?" 0 "mps start onto another spec's file: the group starts"
t_match "$(cat "$T/err")" "warning: group other runs, but has no CDI spec: not replacing $S/other.json: it is not a CDI spec of MPS group 'other'" \
        "... with a warning: that file is not replaced"
t_ok "... it is unchanged" cmp -s "$S/other.json" "$S/other.before"
t_is "$("${G[@]}" list --json | "$GH_PYTHON" -c 'import json,sys; print([g["cdi_spec"] for g in json.load(sys.stdin)])')" "[None]" \
        "mps list: the group has no spec"
t_ok "mps stop other" "${G[@]}" stop other
t_ok "stop leaves the other spec alone" cmp -s "$S/other.json" "$S/other.before"
# a leftover spec of the group (written by hand, so stop did not know it) is replaced
"${G[@]}" start again --device=1 --cdi-spec=none >/dev/null
"${GEN[@]}" --mps-group=again --output="$S/again.json" >/dev/null
"${G[@]}" stop again >/dev/null
t_ok "stop leaves a spec it did not write" test -f "$S/again.json"
"${G[@]}" start again --device=1 --cdi-spec="$S/again.json" >/dev/null 2>"$T/err"
t_is "$?:$(cat "$T/err")" "0:" "mps start replaces a leftover spec of the same group, without a warning"
t_is "$("${G[@]}" list --json | "$GH_PYTHON" -c 'import json,sys; print([g["cdi_spec"] for g in json.load(sys.stdin)])')" "['$S/again.json']" \
        "... and records it"
t_ok "mps stop again" "${G[@]}" stop again
t_not "... removes it" test -e "$S/again.json"

# ---------------------------------------------------------------------------------------------
# podman --device nvidia.com/gpu=mps-NAME

# GH_TEST_CASES without "podman" (tests/mutation/run.sh) stops here
if ! t_case_wanted podman; then
        stop_all
        t_done
fi
if ! have_cmd podman; then
        stop_all
        t_skip "podman --device nvidia.com/gpu=mps-NAME" "podman is not installed"
        t_done
fi
cdi_install "$S/main.json" gpu-hook-test.json || { stop_all; echo "Bail out! cannot install the spec"; exit 1; }
# the default path: /var/run/cdi, under the lock cdi_install took
t_ok "mps start pod on GPU 1, the spec at its default path" "${G[@]}" start pod --device=1
POD_SPEC=/var/run/cdi/nvidia.com-gpu-mps-pod.json
t_ok "the spec is $POD_SPEC" test -f "$POD_SPEC"
t_match "$("$CLI" cdi list --quiet)" "^nvidia\\.com/gpu=mps-pod\$" "cdi list (the CDI directories) shows nvidia.com/gpu=mps-pod"
ppid_=$(state pid pod)
echo marker >"$D/pod/shm/gh-test-marker"
PROBE='
echo "pipe:$(ls /tmp/nvidia-mps 2>&1 | tr "\n" ",")"
echo "shm:$(ls /dev/shm 2>&1 | tr "\n" ",")"
echo "marker:$(cat /dev/shm/gh-test-marker 2>&1)"
echo "dev:$(ls /dev | grep -E "^nvidia" | sort | tr "\n" ",")"
echo "libcuda:$(ls /usr/lib/x86_64-linux-gnu/libcuda.so.1 2>&1)"
echo "talk:$(echo get_default_active_thread_percentage | nvidia-cuda-mps-control 2>&1 | tr "\n" " ")"
'
field() { printf '%s\n' "$RUN_STDOUT" | sed -n "s/^$1://p"; }
make_busybox_rootfs "$T/rootfs" --glibc >/dev/null 2>&1 || { stop_all; echo "Bail out! rootfs"; exit 1; }
run_podman "$T/rootfs" "" --device nvidia.com/gpu=mps-pod -- /bin/sh -c "$PROBE"
t_is "$RUN_RC" 0 "podman --device nvidia.com/gpu=mps-pod: the container ran" || t_diag "$RUN_STDERR"
t_match "$(field pipe)" "^control,\$" "/tmp/nvidia-mps is the group's pipe directory (its control socket, not the host default's file)"
t_match "$(field shm)" "(^|,)fake-mps-control\\.$ppid_," "/dev/shm is the group's (the daemon's marker)"
t_is "$(field marker)" marker "... a file written into the group's shm on the host is there"
t_is "$(field dev)" "nvidia-modeset,nvidia-uvm,nvidia-uvm-tools,nvidia1,nvidiactl," "/dev has the group's GPU (nvidia1), not GPU 0"
t_is "$(field libcuda)" /usr/lib/x86_64-linux-gnu/libcuda.so.1 "libcuda.so.1 is there"
t_ok "its MPS client reached the group's daemon" grep -qx get_default_active_thread_percentage "$D/pod/log/commands.log"
t_ok "mps stop pod" "${G[@]}" stop pod
t_not "stop removed $POD_SPEC" test -e "$POD_SPEC"
t_nomatch "$("$CLI" cdi list --quiet)" "mps-pod" "cdi list no longer shows it"
run_podman "$T/rootfs" "" --device nvidia.com/gpu=mps-pod -- /bin/true
t_not "podman now refuses nvidia.com/gpu=mps-pod" test "$RUN_RC" -eq 0
stop_all
t_is "$(ls "$D")" "" "no group is left"
t_done
