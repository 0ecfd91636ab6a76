#!/bin/bash
# CDI end to end with the fake driver: `gpu-cli cdi generate` for every profile and layout against the
# official CDI schema, `cdi list`, `cdi generate --check`, then podman `--device nvidia.com/gpu=...`
# (all, an index, a UUID, a MIG device) through the spec's createContainer hook, and the same files,
# nodes and masking as the hook path for the same request.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
t_need_root
MKROOT=$GH_SOURCE_DIR/tests/fake-driver/make-root.sh
PROFILES=$GH_SOURCE_DIR/tests/fake-driver/profiles

mkroot() {
        local dir=$1
        shift
        bash "$MKROOT" "$dir" "$@" >"$T/mkroot.log" 2>&1 || { t_diag_file "$T/mkroot.log"; echo "Bail out! make-root.sh $*"; exit 1; }
}
mkroot "$T/drv" --sockets
mkroot "$T/drv-mig" --profile "$PROFILES/8gpu-mig.json"
mkroot "$T/drv-64" --profile "$PROFILES/64gpu.json"
mkroot "$T/drv-local" --layout local
CUDA_PROBE=$(find "$GH_BUILD_DIR/tests/fake-driver" -name cuda-probe -type f -perm -u+x | head -n1)

gpu_field() { sed -n "s/^$2:[[:space:]]*//p" "$1/information"; }
BUSIDS=($(ls "$T/drv/proc/driver/nvidia/gpus" | sort))
UUIDS=()
for b in "${BUSIDS[@]}"; do UUIDS+=("$(gpu_field "$T/drv/proc/driver/nvidia/gpus/$b" 'GPU UUID')"); done

# ---------------------------------------------------------------------------------------------
# generate

for p in default mig 64 local; do
        case $p in
        default) root=$T/drv ;;
        mig) root=$T/drv-mig ;;
        64) root=$T/drv-64 ;;
        local) root=$T/drv-local ;;
        esac
        rm -f "$T/spec-$p.json"
        t_ok "cdi generate ($p)" "$GPU_CLI" "--root=$root" cdi generate "--output=$T/spec-$p.json"
done
t_is "$(stat -c %a "$T/spec-default.json")" 644 "the spec is written mode 0644"

t_is "$(ls -A "$T" | grep -c '^\.spec-.*tmp')" 0 "no temp file is left next to it"

# json_get FILE PYTHON-EXPRESSION (s = the spec)
json_get() { "$GH_PYTHON" -c 'import json,sys; s=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
names() { json_get "$1" '",".join(d["name"] for d in s["devices"])'; }

# --mounts=hook: the driver's read-only mounts move into the createContainer hook's arguments; the
# nodes, env, hook and the writable mounts (the daemons' sockets) stay; together they are exactly
# the default spec's mounts.
t_ok "cdi generate --mounts=hook" "$GPU_CLI" "--root=$T/drv" cdi generate --mounts=hook "--output=$T/spec-hookmounts.json"
t_is "$(json_get "$T/spec-default.json" 'len(s["containerEdits"]["mounts"]) > 20')" True "the default spec lists the driver's mounts"
t_is "$(json_get "$T/spec-hookmounts.json" '",".join(m["containerPath"] for m in s["containerEdits"]["mounts"])')" \
        /run/nvidia-persistenced/socket,/run/nvidia-fabricmanager/socket "--mounts=hook: the spec mounts only the (writable) daemon sockets"
t_is "$(json_get "$T/spec-hookmounts.json" 'sorted([a.split("=", 1)[1] for a in s["containerEdits"]["hooks"][0]["args"] if a.startswith("--mount")] + [m["hostPath"] + "::" + m["containerPath"] for m in s["containerEdits"]["mounts"]])')" \
        "$(json_get "$T/spec-default.json" 'sorted(m["hostPath"] + "::" + m["containerPath"] for m in s["containerEdits"]["mounts"])')" \
        "--mounts=hook: the hook's --mount arguments are the default spec's mounts"
t_is "$(json_get "$T/spec-hookmounts.json" 's["containerEdits"]["deviceNodes"] == json.load(open(sys.argv[1].replace("hookmounts", "default")))["containerEdits"]["deviceNodes"]')" True \
        "--mounts=hook: the same device nodes"
t_is "$("$GPU_CLI" "--root=$T/drv" cdi generate --mounts=elsewhere --output=- 2>&1)" "gpu-cli: cdi: --mounts='elsewhere': use spec or hook" \
        "--mounts takes spec or hook (one line)"

# --check-requirements: the hook refuses images whose NVIDIA_REQUIRE_* the driver does not meet
has_check() { json_get "$1" '"--check-requirements" in s["containerEdits"]["hooks"][0]["args"]'; }
t_ok "cdi generate --check-requirements" "$GPU_CLI" "--root=$T/drv" cdi generate --check-requirements "--output=$T/spec-req.json"
t_is "$(has_check "$T/spec-req.json"):$(has_check "$T/spec-default.json")" True:False \
        "--check-requirements: the hook gets --check-requirements (the default spec's does not)"
t_is "$(json_get "$T/spec-req.json" 's["containerEdits"]["mounts"] == json.load(open(sys.argv[1].replace("req", "default")))["containerEdits"]["mounts"]')" True \
        "... and nothing else changes"
"$GPU_CLI" "--root=$T/drv" cdi refresh --wait=0 "--output=$T/spec-req.json" >/dev/null 2>"$T/err" || t_diag_file "$T/err"
t_is "$(has_check "$T/spec-req.json")" True "cdi refresh keeps the replaced spec's --check-requirements"
"$GPU_CLI" "--root=$T/drv" cdi refresh --wait=0 --check-requirements=no "--output=$T/spec-req.json" >/dev/null 2>"$T/err" ||
        t_diag_file "$T/err"
t_is "$(has_check "$T/spec-req.json")" False "cdi refresh --check-requirements=no drops it"
"$GPU_CLI" "--root=$T/drv" cdi generate --check-requirements "--output=$T/spec-req.json"
t_is "$("$GPU_CLI" "--root=$T/drv" cdi generate --check-requirements=maybe --output=- 2>&1)" \
        "gpu-cli: cdi: --check-requirements='maybe': use yes or no" "--check-requirements takes yes or no (one line)"

t_is "$(names "$T/spec-default.json")" "0,${UUIDS[0]},1,${UUIDS[1]},all" "default: a device per GPU by index and UUID, and all"
t_is "$(json_get "$T/spec-default.json" 's["kind"] + " " + s["cdiVersion"]')" "nvidia.com/gpu 0.5.0" \
        "kind nvidia.com/gpu, cdiVersion 0.5.0 (names starting with a digit, hostPath)"
t_is "$(json_get "$T/spec-64.json" 'len(s["devices"])')" 129 "64gpu: 64 x (index, UUID) + all"
t_match "$(names "$T/spec-mig.json")" '(^|,)0:1,MIG-abe464ae-f961-3abb-30be-d5bafcc4b050(,|$)' "8gpu-mig: MIG devices by GPU:MIG and MIG UUID"
t_match "$(names "$T/spec-mig.json")" '(^|,)6:6,MIG-' "8gpu-mig: the seventh MIG device of GPU 6"
t_is "$(json_get "$T/spec-mig.json" 'sorted(n["path"] for d in s["devices"] if d["name"] == "0:1" for n in d["containerEdits"]["deviceNodes"])')" \
        "['/dev/nvidia-caps/nvidia-cap291', '/dev/nvidia-caps/nvidia-cap292', '/dev/nvidia2']" \
        "8gpu-mig: device 0:1 has its parent's node and its GPU and compute instance caps"
t_is "$(json_get "$T/spec-default.json" '[(n["type"], n["major"], n["minor"], n["permissions"], oct(n["fileMode"])) for d in s["devices"] if d["name"] == "1" for n in d["containerEdits"]["deviceNodes"]]')" \
        "[('c', 195, 1, 'rw', '0o666')]" "device 1: /dev/nvidia1 with its major:minor, rw, the host node's mode"
t_is "$(json_get "$T/spec-default.json" 'sorted(n["path"] for n in s["containerEdits"]["deviceNodes"])')" \
        "['/dev/nvidia-modeset', '/dev/nvidia-uvm', '/dev/nvidia-uvm-tools', '/dev/nvidiactl']" "common edits: the control nodes"
t_is "$(json_get "$T/spec-default.json" 'sorted(set(tuple(m["options"]) for m in s["containerEdits"]["mounts"]))')" \
        "[('nosuid', 'nodev', 'noexec', 'bind'), ('ro', 'nosuid', 'nodev', 'bind'), ('ro', 'nosuid', 'nodev', 'noexec', 'bind')]" \
        "mounts: driver files ro,nosuid,nodev; IPC sockets nosuid,nodev,noexec; graphics loader files ro,nosuid,nodev,noexec"
t_is "$(json_get "$T/spec-default.json" 's["containerEdits"]["env"]')" "['NVIDIA_VISIBLE_DEVICES=void']" \
        "common edits: NVIDIA_VISIBLE_DEVICES=void keeps a legacy hook away"
t_is "$(json_get "$T/spec-default.json" '[(h["hookName"], h["path"], h["env"], h["args"][:3], h["args"][-1]) for h in s["containerEdits"]["hooks"]]')" \
        "[('createContainer', '$(dirname "$GPU_CLI")/gpu-cdi-hook', ['PATH=/usr/sbin:/usr/bin:/sbin:/bin'], ['gpu-cli', '--root=$T/drv', 'cdi-hook'], '--mask-proc')]" \
        "one createContainer hook: the gpu-cdi-hook beside this gpu-cli, an explicit environment, --mask-proc"
# Without gpu-cdi-hook beside it (and none installed), gpu-cli names itself.
mkdir -p "$T/alone" && cp "$GPU_CLI" "$T/alone/gpu-cli"
if [ ! -x "$(sed -n 's/^#define GPUHOOK_CDI_HOOK_PATH "\(.*\)"$/\1/p' "$GH_BUILD_DIR/config.h")" ]; then
        "$T/alone/gpu-cli" "--root=$T/drv" cdi generate --output="$T/spec-alone.json" >/dev/null 2>&1
        t_is "$(json_get "$T/spec-alone.json" '[h["path"] for h in s["containerEdits"]["hooks"]]')" "['$T/alone/gpu-cli']" \
                "gpu-cli alone: the spec's hook is gpu-cli cdi-hook itself"
fi
t_is "$(elf_linkage "$(dirname "$GPU_CLI")/gpu-cdi-hook")" static "gpu-cdi-hook is a static program"
t_match "$(json_get "$T/spec-default.json" '" ".join(s["containerEdits"]["hooks"][0]["args"])')" \
        '--link=libcuda\.so\.1::/usr/lib/x86_64-linux-gnu/libcuda\.so .*--library=libcuda\.so\.1::/usr/lib/x86_64-linux-gnu/libcuda\.so\.1 ' \
        "the hook creates the links and adds the libraries to the ld cache"
t_match "$(json_get "$T/spec-local.json" '" ".join(m["hostPath"] + ":" + m["containerPath"] for m in s["containerEdits"]["mounts"])')" \
        "$T/drv-local/usr/local/nvidia/lib64/libcuda\.so\.[0-9.]+:/usr/lib/x86_64-linux-gnu/libcuda\.so\.[0-9.]+" \
        "local layout: /usr/local/nvidia/lib64 on the host, the container's library directory inside"
t_match "$(json_get "$T/spec-local.json" '" ".join(m["hostPath"] for m in s["containerEdits"]["mounts"])')" \
        "$T/drv-local/usr/local/nvidia/bin/nvidia-smi" "local layout: the ELF nvidia-smi, not the wrapper script"

"$GPU_CLI" "--root=$T/drv" cdi generate --device-name-strategy=uuid --output=- >"$T/spec-uuid.json" 2>"$T/err"
t_is "$(names "$T/spec-uuid.json")" "${UUIDS[0]},${UUIDS[1]},all" "--device-name-strategy=uuid: UUIDs and all"
"$GPU_CLI" "--root=$T/drv" cdi generate --capabilities=utility --vendor=example.com --class=gpu-x --output=- >"$T/spec-util.json" 2>"$T/err"
t_is "$(json_get "$T/spec-util.json" 's["kind"]')" "example.com/gpu-x" "--vendor and --class make the kind"
t_nomatch "$(json_get "$T/spec-util.json" '" ".join(m["containerPath"] for m in s["containerEdits"]["mounts"])')" 'libcuda' \
        "--capabilities=utility: no libcuda"
t_match "$(json_get "$T/spec-util.json" '" ".join(m["containerPath"] for m in s["containerEdits"]["mounts"])')" 'libnvidia-ml\.so' \
        "--capabilities=utility: libnvidia-ml"
"$GPU_CLI" cdi generate --vendor=-bad --output=- >/dev/null 2>"$T/err"
t_is "$?" 2 "an invalid vendor is a usage error"
t_match "$(cat "$T/err")" "invalid vendor '-bad'" "... naming it"
"$GPU_CLI" "--root=$T" cdi generate --output="$T/none.json" >/dev/null 2>"$T/err"
t_is "$?" 3 "no driver under --root: exit 3"
t_not "... and no spec is written" test -e "$T/none.json"

# The official schema (Debian's CDI package): cdi_validate (tests/lib.sh).
validate() { cdi_validate "$1"; }
if cdi_can_validate; then
        for p in default mig 64 local uuid util hookmounts; do
                t_is "$(validate "$T/spec-$p.json")" valid "spec ($p) validates against the official CDI schema"
        done
        json_get "$T/spec-default.json" 'json.dumps(dict(s, devices=[{"name": "0", "containerEdits": {"deviceNodes": [{"major": "195"}]}}]))' >"$T/bad.json"
        t_nomatch "$(validate "$T/bad.json")" '^valid$' "the validator rejects a broken spec (a node without path, a string major)"
else
        t_skip "specs validate against the official CDI schema" "no $CDI_SCHEMA/schema.json or python3-jsonschema"
fi

# ---------------------------------------------------------------------------------------------
# list, --check

t_is "$("$GPU_CLI" cdi list --quiet "$T/spec-default.json" | tr '\n' ' ')" \
        "nvidia.com/gpu=0 nvidia.com/gpu=${UUIDS[0]} nvidia.com/gpu=1 nvidia.com/gpu=${UUIDS[1]} nvidia.com/gpu=all " \
        "cdi list FILE: the qualified device names"
t_is "$("$GPU_CLI" cdi list --json "$T/spec-default.json" | json_get /dev/stdin 's["devices"][4]["name"] + " " + s["devices"][4]["spec"]')" \
        "nvidia.com/gpu=all $T/spec-default.json" "cdi list --json: name and spec file"
"$GPU_CLI" cdi list "$T/mkroot.log" >/dev/null 2>"$T/err"
t_is "$?" 1 "cdi list of a file that is not a spec fails"
t_match "$(cat "$T/err")" "mkroot.log" "... naming it"

t_ok "cdi generate --check: a fresh spec is current" "$GPU_CLI" "--root=$T/drv" cdi generate "--check=$T/spec-default.json"
"$GPU_CLI" "--root=$T/drv-64" cdi generate "--check=$T/spec-default.json" >/dev/null 2>"$T/err"
t_is "$?" 1 "--check against another driver's GPUs: stale (exit 1)"
t_match "$(cat "$T/err")" "is stale: .*(device|mount)" "... saying what differs"
json_get "$T/spec-default.json" 'json.dumps(dict(s, devices=s["devices"][1:]))' >"$T/spec-old.json"
"$GPU_CLI" "--root=$T/drv" cdi generate "--check=$T/spec-old.json" >/dev/null 2>"$T/err"
t_match "$(cat "$T/err")" "stale: device '0' is missing" "--check: a GPU missing from the spec is named"
mkroot "$T/drv-gone"
"$GPU_CLI" "--root=$T/drv-gone" cdi generate "--output=$T/spec-gone.json"
rm -rf "$T/drv-gone/proc/driver/nvidia/gpus/${BUSIDS[1]}" "$T/drv-gone/dev/nvidia1"
"$GPU_CLI" "--root=$T/drv-gone" cdi generate "--check=$T/spec-gone.json" >/dev/null 2>"$T/err"
t_is "$?" 1 "--check after a GPU went away: stale (exit 1)"
t_match "$(cat "$T/err")" "stale: device '1' is not in the driver any more" "... naming the device"

# ---------------------------------------------------------------------------------------------
# crun, through tests/helpers/cdi-apply.py (the CDI merge rules): crun gives createContainer hooks
# no pid, the hook finds the container's init in the container's procfs

if have_cmd crun; then
        make_busybox_rootfs "$T/crun-rootfs" --glibc || { echo "Bail out! rootfs"; exit 1; }
        make_bundle "$T/crun-bundle" "$T/crun-rootfs" /bin/sh -c \
                'nvidia-smi -L; grep ModifyDeviceFiles /proc/driver/nvidia/params; check-ldconfig -p | grep -c "libcuda.so.1 "'
        "$GH_PYTHON" "$GH_SOURCE_DIR/tests/helpers/cdi-apply.py" --spec "$T/spec-default.json" "$T/crun-bundle" nvidia.com/gpu=1
        run_crun "$T/crun-bundle" cdi
        t_is "$RUN_RC" 0 "crun, nvidia.com/gpu=1: container ran" || t_diag "$RUN_STDERR"
        t_match "$RUN_STDOUT" "^GPU 0: .*${UUIDS[1]}" "crun: nvidia-smi sees GPU 1 only"
        t_match "$RUN_STDOUT" '^ModifyDeviceFiles: 0$' "crun: params masked"
        t_match "$RUN_STDOUT" '^[12]$' "crun: the ld cache lists libcuda.so.1"
        # cdi-hook --log: one record per run, gpu-hook's format, with its phases.
        bundle_edit "$T/crun-bundle" '
for h in c["hooks"]["createContainer"]:
    if "cdi-hook" in h["args"]:
        h["args"].insert(h["args"].index("cdi-hook") + 1, "--log=" + args[0])' "$T/cdi-hook.log"
        rm -rf "$T/crun-rootfs" && make_busybox_rootfs "$T/crun-rootfs" --glibc
        run_crun "$T/crun-bundle" cdi-log
        t_is "$RUN_RC" 0 "crun, cdi-hook --log=FILE: container ran" || t_diag "$RUN_STDERR"
        t_match "$(tail -n 1 "$T/cdi-hook.log" 2>/dev/null)" '^\{"time":"[^"]+","program":"gpu-cli cdi-hook","pid":[0-9]+,"trace_id":"'"$RUN_ID"'","stage":"createContainer",.*"timings_us":\{"setup":[0-9]+,"state":[0-9]+,"spec":[0-9]+,"check":[0-9]+,"plan":[0-9]+,"open":[0-9]+,"apply":[0-9]+,"ldcache":[0-9]+,"total":[0-9]+\},"result":"configured","exit_code":0,"error":null\}$' \
                "cdi-hook --log: one JSON line with the container id, each phase's time and the result"
        # --mounts=hook under crun: cdi-hook attaches the driver's files itself.
        rm -rf "$T/crun-rootfs" && make_busybox_rootfs "$T/crun-rootfs" --glibc
        make_bundle "$T/crun-bundle" "$T/crun-rootfs" /bin/sh -c \
                'nvidia-smi -L; grep ModifyDeviceFiles /proc/driver/nvidia/params; check-ldconfig -p | grep -c "libcuda.so.1 "; grep -c " ro,nosuid,nodev" /proc/self/mountinfo'
        "$GH_PYTHON" "$GH_SOURCE_DIR/tests/helpers/cdi-apply.py" --spec "$T/spec-hookmounts.json" "$T/crun-bundle" nvidia.com/gpu=1
        run_crun "$T/crun-bundle" cdi-hookmounts
        t_is "$RUN_RC" 0 "crun, --mounts=hook spec, nvidia.com/gpu=1: container ran" || t_diag "$RUN_STDERR"
        t_match "$RUN_STDOUT" "^GPU 0: .*${UUIDS[1]}" "crun, --mounts=hook: nvidia-smi (mounted by the hook) sees GPU 1 only"
        t_match "$RUN_STDOUT" '^[12]$' "crun, --mounts=hook: the ld cache lists libcuda.so.1"
else
        t_skip "crun with the CDI spec" "crun is not installed"
fi

# ---------------------------------------------------------------------------------------------
# runc, through cdi-apply.py: the hook takes the bundle from runc (it writes the state late) and
# proves it; --state-from-stdin waits for the state instead.  Both must give the container its GPU.
# runc_cdi NAME [CDI_HOOK_OPTION] [COMMAND] [GPU_CLI_OPTION]: nvidia.com/gpu=1 of the default spec,
# the hook logging to runc-hook.debug.
runc_cdi() {
        local name=$1 extra=${2:-} global=${4:-}
        local cmd=${3:-'nvidia-smi -L; grep ModifyDeviceFiles /proc/driver/nvidia/params'}
        rm -rf "$T/runc-rootfs" && make_busybox_rootfs "$T/runc-rootfs" --glibc
        make_bundle "$T/runc-bundle" "$T/runc-rootfs" /bin/sh -c "$cmd"
        "$GH_PYTHON" "$GH_SOURCE_DIR/tests/helpers/cdi-apply.py" --spec "$T/spec-default.json" "$T/runc-bundle" nvidia.com/gpu=1
        : >"$T/runc-hook.debug"
        bundle_edit "$T/runc-bundle" '
for h in c["hooks"]["createContainer"]:
    if "cdi-hook" in h["args"]:
        h["args"].insert(1, "--debug=" + args[0])
        if args[1]:
            h["args"].insert(h["args"].index("cdi-hook") + 1, args[1])
        if args[2]:
            h["args"].insert(1, args[2])' "$T/runc-hook.debug" "$extra" "$global"
        run_runc "$T/runc-bundle" "$name"
}
runc_cdi cdi-runc ""
t_is "$RUN_RC" 0 "$RUNC, nvidia.com/gpu=1: container ran" || t_diag "$RUN_STDERR"
t_match "$RUN_STDOUT" "^GPU 0: .*${UUIDS[1]}" "$RUNC: nvidia-smi sees GPU 1 only"
t_match "$RUN_STDOUT" '^ModifyDeviceFiles: 0$' "$RUNC: params masked (the hook found the bundle's linux.devices)"
if "$RUNC" --version 2>/dev/null | grep -q '^runc version'; then
        t_match "$(cat "$T/runc-hook.debug")" "run by runc init [0-9]+ \\(bundle $T/runc-bundle, container $RUN_ID\\): the state is not read from stdin" \
                "runc: the hook took the bundle and the container id from runc, not from its stdin"
        t_nomatch "$(cat "$T/runc-hook.debug")" "reading the state" "runc: ... and the proof held (config.json's root is where runc started it)"
else
        t_nomatch "$(cat "$T/runc-hook.debug")" "run by runc init" "$RUNC (not runc): the hook read the state from stdin"
        t_skip "runc: the state's facts from runc" "the OCI runtime here is $RUNC"
fi
# The /proc/driver/nvidia mask needs which GPU each device node is: with a driver-state cache whose
# fingerprint holds, from the cache, without reading each GPU's `information` (which the real driver
# answers by asking the GPU, 0.18 ms each on an H200).  The proof: GPU 1's information file is
# changed to name another minor after the cache was filled (its content is not in the fingerprint);
# with the cache the container still sees GPU 1's directory, without it it sees none.
if command -v "$RUNC" >/dev/null 2>&1; then
        INFO1=$T/drv/proc/driver/nvidia/gpus/${BUSIDS[1]}/information
        cp "$INFO1" "$T/info1.saved"
        "$GPU_CLI" "--root=$T/drv" "--state-file=$T/cdi-state.json" cache refresh >/dev/null 2>&1
        sed -i 's/^Device Minor:.*/Device Minor: \t 9/' "$INFO1"
        MASK_CMD='echo "gpus:$(ls /proc/driver/nvidia/gpus | tr "\n" ",")"'
        runc_cdi mask-cache "" "$MASK_CMD" "--state-file=$T/cdi-state.json"
        t_is "$RUN_RC:$(echo "$RUN_STDOUT" | sed -n 's/^gpus://p')" "0:${BUSIDS[1]}," \
                "mask, warm driver-state cache: GPU 1's directory, its minor taken from the cache" || t_diag "$RUN_STDERR"
        t_match "$(cat "$T/runc-hook.debug")" "driver-state cache $T/cdi-state.json: hit" "... the cache answered"
        runc_cdi mask-nocache "" "$MASK_CMD"
        t_is "$RUN_RC:$(echo "$RUN_STDOUT" | sed -n 's/^gpus://p')" "0:" \
                "mask, no cache: the GPU's information file is read (it now names minor 9: no directory shown)" || t_diag "$RUN_STDERR"
        cp "$T/info1.saved" "$INFO1"
else
        t_skip "the mask's GPUs from the driver-state cache" "no runc"
        t_skip "... the cache answered" "no runc"
        t_skip "the mask without a cache" "no runc"
fi
# runc's process tree without runc (tests/helpers/fake-runc): a bundle that runc's processes show
# but whose root is not where the hook was started is never used; the hook reads its stdin.
FR=$GH_BUILD_DIR/tests/helpers/fake-runc
if [ -x "$FR" ]; then
        mkdir -p "$T/fr/bundle" "$T/fr/root" "$T/fr/other"
        printf '{"ociVersion":"1.0.2","id":"from-stdin","pid":1,"status":"creating","bundle":"%s"}' "$T/fr/nobundle" >"$T/fr/state.json"
        fake_runc() {
                printf '{"ociVersion":"1.0.2","root":{"path":"%s"},"process":{"args":["true"],"cwd":"/"}}' "$1" >"$T/fr/bundle/config.json"
                : >"$T/fr/debug"
                FAKE_RUNC_BUNDLE=$T/fr/bundle FAKE_RUNC_ROOT=$T/fr/root FAKE_RUNC_STATE=$T/fr/state.json \
                        FAKE_RUNC_HOOK=$(dirname "$GPU_CLI")/gpu-cdi-hook \
                        FAKE_RUNC_ARGS=$(printf '%s\n' "--debug=$T/fr/debug" cdi-hook --link=a::/usr/lib/a) \
                        "$FR" create fr-id 2>"$T/fr/err"
        }
        fake_runc "$T/fr/other"
        t_is "$?" 1 "runc's tree, config.json's root elsewhere: the hook fails (exit 1)" || t_diag_file "$T/fr/err"
        t_match "$(cat "$T/fr/debug")" "run by runc init [0-9]+ \\(bundle $T/fr/bundle, container fr-id\\)" "... it looked at the bundle runc's process showed"
        t_match "$(cat "$T/fr/debug")" "is not where runc init started this hook: reading the state" "... saw that its root is not where it was started"
        t_match "$(cat "$T/fr/err")" "$T/fr/nobundle" "... and went by the state on its stdin (whose bundle it then names)"
        fake_runc "$T/fr/root"
        t_is "$?" 1 "runc's tree, the root where the hook was started, but no container: the hook fails (exit 1)"
        t_nomatch "$(cat "$T/fr/debug")" "reading the state" "... it used the bundle runc's process showed"
        t_match "$(cat "$T/fr/err")" "must run as a createContainer hook" "... and still refused outside a container's mount namespace"
else
        t_skip "runc's process tree without runc" "no tests/helpers/fake-runc in this build"
fi

runc_cdi cdi-runc-stdin --state-from-stdin
t_is "$RUN_RC" 0 "runc, cdi-hook --state-from-stdin: container ran" || t_diag "$RUN_STDERR"
t_match "$RUN_STDOUT" "^GPU 0: .*${UUIDS[1]}" "runc, --state-from-stdin: nvidia-smi sees GPU 1 only"
t_nomatch "$(cat "$T/runc-hook.debug")" "run by runc init" "runc, --state-from-stdin: the state came from stdin"

# ---------------------------------------------------------------------------------------------
# podman

if ! have_cmd podman; then
        t_skip "podman --device nvidia.com/gpu=..." "podman is not installed"
        t_done
fi

PROBE='
echo "smi:$(nvidia-smi -L 2>&1 | tr "\n" "|")"
echo "cache:$(check-ldconfig -p 2>&1 | grep -Eo "lib(cuda|nvidia-ml)\.so\.1 .*" | sort -u | tr "\n" "|")"
echo "ldsearch:$(LD_DEBUG=libs cuda-probe 2>&1 | sed -n "/find library=libcuda.so.1/,/trying file/p" | tr -s "\t " " " | tr "\n" "|")"
echo "cuda:$(cuda-probe 2>&1 | head -n1)"
echo "params:$(grep ModifyDeviceFiles /proc/driver/nvidia/params 2>&1)"
echo "gpus:$(ls /proc/driver/nvidia/gpus 2>&1 | tr "\n" ",")"
echo "dev:$(ls /dev | grep -E "^nvidia" | sort | tr "\n" ",")"
echo "caps:$(ls /dev/nvidia-caps 2>/dev/null | sort | tr "\n" ",")"
echo "visible:${NVIDIA_VISIBLE_DEVICES-unset}"
[ -e /dev/nvidia0 ] && echo "open0:$(head -c1 /dev/nvidia0 2>&1 >/dev/null)"
mknod /tmp/other c 195 7 2>/dev/null && echo "open7:$(head -c1 /tmp/other 2>&1 >/dev/null)"
echo "end"
'
field() { printf '%s\n' "$RUN_STDOUT" | sed -n "s/^$1://p"; }
ngpus() { field smi | tr '|' '\n' | grep -c '^GPU '; }
new_rootfs() {
        ROOTFS=$T/$1
        make_busybox_rootfs "$ROOTFS" --glibc || { echo "Bail out! rootfs"; exit 1; }
        [ -n "$CUDA_PROBE" ] && install -m 755 "$CUDA_PROBE" "$ROOTFS/usr/local/bin/cuda-probe"
}
# cdi_run NAME DEVICE...: a fresh rootfs, podman with those CDI devices, the probe
cdi_run() {
        local name=$1 a=()
        shift
        for d in "$@"; do a+=(--device "$d"); done
        a+=(--cap-add=MKNOD) # to try a GPU it was not given
        new_rootfs "$name"
        run_podman "$ROOTFS" "" "${a[@]}" -- /bin/sh -c "$PROBE"
}

cdi_state() {
        local d
        for d in /etc/cdi /var/run/cdi; do
                if [ -d "$d" ]; then echo "$d: $(ls -A "$d" | tr '\n' ' ')"; else echo "$d: absent"; fi
        done
}
CDI_BEFORE=$(cdi_state)
host_mountinfo_snapshot "$T/mounts.before"
cksum </etc/ld.so.cache >"$T/host-cache.before"
cdi_install "$T/spec-default.json" gpu-hook-test.json || { echo "Bail out! cannot install the spec"; exit 1; }

cdi_run all nvidia.com/gpu=all
t_is "$RUN_RC" 0 "podman --device nvidia.com/gpu=all: container ran" || t_diag "$RUN_STDERR"
t_is "$(ngpus)" 2 "=all: nvidia-smi lists both GPUs"
t_match "$(field cuda)" '^CUDA OK: 2 device' "=all: CUDA sees both GPUs"
t_match "$(field cache)" 'libcuda\.so\.1 \(libc6,x86-64\) => /usr/lib/x86_64-linux-gnu/libcuda\.so\.1' \
        "=all: the container's ld cache lists libcuda.so.1"
t_match "$(field ldsearch)" 'search cache=/etc/ld\.so\.cache\| *[0-9]*: *trying file=/usr/lib/x86_64-linux-gnu/libcuda\.so\.1' \
        "=all: the loader finds libcuda.so.1 through the ld cache"
t_is "$(field params)" "ModifyDeviceFiles: 0" "=all: /proc/driver/nvidia/params is masked (ModifyDeviceFiles: 0)"
t_is "$(field gpus)" "${BUSIDS[0]},${BUSIDS[1]}," "=all: /proc/driver/nvidia/gpus shows both GPUs"
t_is "$(field visible)" void "=all: NVIDIA_VISIBLE_DEVICES=void in the container"
t_not "the image's /sbin/ldconfig never ran" ldconfig_ran "$ROOTFS"

cdi_run zero nvidia.com/gpu=0
t_is "$RUN_RC" 0 "podman --device nvidia.com/gpu=0: container ran" || t_diag "$RUN_STDERR"
t_is "$(ngpus)" 1 "=0: nvidia-smi lists one GPU"
t_match "$(field smi)" "${UUIDS[0]}" "=0: it is GPU 0"
t_is "$(field dev)" "nvidia-modeset,nvidia-uvm,nvidia-uvm-tools,nvidia0,nvidiactl," "=0: /dev has GPU 0's node, not GPU 1's"
t_is "$(field gpus)" "${BUSIDS[0]}," "=0: /proc/driver/nvidia/gpus shows only GPU 0"
t_match "$(field cuda)" '^CUDA OK: 1 device' "=0: CUDA sees one GPU"
t_match "$(field open0)" 'No such device or address' "=0: the device cgroup lets /dev/nvidia0 open (ENXIO: no real driver)"
t_match "$(field open7)" 'Operation not permitted' "=0: a GPU node made with mknod is denied"

cdi_run uuid "nvidia.com/gpu=${UUIDS[1]}"
t_is "$RUN_RC" 0 "podman --device nvidia.com/gpu=<UUID>: container ran" || t_diag "$RUN_STDERR"
t_is "$(ngpus)" 1 "=UUID: one GPU"
t_match "$(field smi)" "${UUIDS[1]}" "=UUID: the GPU with that UUID"
t_nomatch "$(field dev)" 'nvidia0' "=UUID of GPU 1: /dev/nvidia0 is absent"

new_rootfs unknown
run_podman "$ROOTFS" "" --device nvidia.com/gpu=7 -- /bin/true
t_not "=7 (no such GPU): podman refuses to start" test "$RUN_RC" -eq 0

# A spec written with --check-requirements: the image's requirements, as the hook path checks them
cdi_install "$T/spec-req.json" gpu-hook-test.json || { echo "Bail out! cannot install the spec"; exit 1; }
new_rootfs req-ok
run_podman "$ROOTFS" "" --device nvidia.com/gpu=0 -e "NVIDIA_REQUIRE_CUDA=cuda>=12.0" -- /bin/sh -c "$PROBE"
t_is "$RUN_RC" 0 "--check-requirements spec, NVIDIA_REQUIRE_CUDA=cuda>=12.0 (CUDA 13.0 driver): container ran" ||
        t_diag "$RUN_STDERR"
t_match "$(field cuda)" '^CUDA OK: 1 device' "... and CUDA works"
new_rootfs req-unmet
run_podman "$ROOTFS" "" --device nvidia.com/gpu=0 -e "NVIDIA_REQUIRE_CUDA=cuda>=13.1" -- /bin/sh -c "$PROBE"
t_not "--check-requirements spec, cuda>=13.1: podman refuses to start it" test "$RUN_RC" -eq 0
# runc passes the hook's line on; crun says only its exit status (4: a requirement not met)
t_match "$RUN_STDERR" "requirement 'cuda>=13\\.1' not met: the driver supports CUDA 13\\.0|hook .*exit code: 4" \
        "... naming the requirement and the driver's CUDA (crun: exit status 4, requirement not met)"
new_rootfs req-legacy
run_podman "$ROOTFS" "" --device nvidia.com/gpu=1 -e CUDA_VERSION=14.0 -- /bin/true
t_not "... a legacy image's CUDA_VERSION=14.0 is refused too" test "$RUN_RC" -eq 0
t_match "$RUN_STDERR" "requirement 'cuda>=14\\.0' not met|hook .*exit code: 4" "... naming cuda>=14.0 (crun: exit status 4)"
cdi_install "$T/spec-default.json" gpu-hook-test.json || { echo "Bail out! cannot install the spec"; exit 1; }

# The same request through the hook path (contrib's hooks.d, gpu-hook -> gpu-cli configure): the
# same files with the same modes and link targets, the same nodes, /proc and ld cache, the same
# mount flags (device nodes aside: the hook binds them, the runtime makes them).
FILESET='
for f in $(find /dev /usr /lib/firmware /run /proc/driver/nvidia /etc 2>/dev/null | grep -Ev "^/dev/(pts|shm|mqueue)(/|$)" | sort); do
        stat -c "%n|%F|%a|%t:%T|%N" "$f"
done
check-ldconfig -p
awk "\$5 !~ /^\\/(dev|proc|sys|etc\\/(hosts|hostname|resolv.conf))(\\/|$)/ || \$5 ~ /^\\/proc\\/driver/ { print \$5, \$6 }" /proc/self/mountinfo | sort
'
mkdir -p "$T/hooks.d"
cat >"$T/hook-config.json" <<EOF
{"cli": {"root": "$T/drv", "path": "$GPU_CLI"}}
EOF
"$GH_PYTHON" - "$GH_SOURCE_DIR/contrib/hooks.d/oci-gpu-hook.json" "$T/hooks.d/oci-gpu-hook.json" "$GPU_HOOK" "$T/hook-config.json" <<'EOF'
import json, sys
src, dst, hook, cfg = sys.argv[1:]
h = json.load(open(src))
h["hook"]["path"] = hook
h["hook"]["args"] = ["gpu-hook", "--config=" + cfg] + [a for a in h["hook"]["args"][1:]]
json.dump(h, open(dst, "w"))
EOF
for dev in 0 all; do
        new_rootfs "set-cdi-$dev"
        run_podman "$ROOTFS" "" --device "nvidia.com/gpu=$dev" -- /bin/sh -c "$FILESET"
        printf '%s\n' "$RUN_STDOUT" >"$T/fileset-cdi-$dev"
        t_is "$RUN_RC" 0 "file set, CDI --device nvidia.com/gpu=$dev: container ran" || t_diag "$RUN_STDERR"
        cdi_install "$T/spec-hookmounts.json" gpu-hook-test.json || { echo "Bail out! cannot install the spec"; exit 1; }
        new_rootfs "set-cdihm-$dev"
        run_podman "$ROOTFS" "" --device "nvidia.com/gpu=$dev" -- /bin/sh -c "$FILESET"
        printf '%s\n' "$RUN_STDOUT" >"$T/fileset-cdihm-$dev"
        t_is "$RUN_RC" 0 "file set, CDI --mounts=hook --device nvidia.com/gpu=$dev: container ran" || t_diag "$RUN_STDERR"
        cdi_install "$T/spec-default.json" gpu-hook-test.json || { echo "Bail out! cannot install the spec"; exit 1; }
        if diff "$T/fileset-cdi-$dev" "$T/fileset-cdihm-$dev" >"$T/fileset-hm.diff"; then
                t_pass "=$dev: the --mounts=hook spec gives the same files, nodes, links, ld cache and mounts as the default one"
        else
                t_fail "=$dev: the --mounts=hook spec gives the same files, nodes, links, ld cache and mounts as the default one"
                t_diag "diff default hook-mounts:"
                t_diag_file "$T/fileset-hm.diff" 30
        fi
        new_rootfs "set-hook-$dev"
        run_podman "$ROOTFS" "$T/hooks.d" -e "NVIDIA_VISIBLE_DEVICES=$dev" -e NVIDIA_DRIVER_CAPABILITIES=all -- /bin/sh -c "$FILESET"
        printf '%s\n' "$RUN_STDOUT" >"$T/fileset-hook-$dev"
        t_is "$RUN_RC" 0 "file set, hook path NVIDIA_VISIBLE_DEVICES=$dev: container ran" || t_diag "$RUN_STDERR"
        # the rootfs path is in no line; the sizes of the ld cache are: compare the rest
        if diff "$T/fileset-hook-$dev" "$T/fileset-cdi-$dev" >"$T/fileset.diff"; then
                t_pass "=$dev: CDI and the hook path give the same files, nodes, links, ld cache and mounts ($(wc -l <"$T/fileset-cdi-$dev") lines)"
        else
                t_fail "=$dev: CDI and the hook path give the same files, nodes, links, ld cache and mounts"
                t_diag "diff hook cdi:"
                t_diag_file "$T/fileset.diff" 30
        fi
done
t_match "$(cat "$T/fileset-cdi-0")" '^/usr/lib/x86_64-linux-gnu/libcuda\.so\.1\|symbolic link\|.*-> .libcuda\.so\.[0-9.]+' \
        "the compared set has the libcuda SONAME link"
t_match "$(cat "$T/fileset-cdi-0")" '^/run/nvidia-persistenced/socket\|socket' "the compared set has the persistenced socket"

# MIG (8gpu-mig): GPU index 0 is minor 2; its MIG device 1 is GPU instance 2 (caps 291, 292)
cdi_install "$T/spec-mig.json" gpu-hook-test.json || { echo "Bail out! cannot install the spec"; exit 1; }
for dev in 0:1 MIG-abe464ae-f961-3abb-30be-d5bafcc4b050; do
        cdi_run "mig-${dev%%-*}" "nvidia.com/gpu=$dev"
        t_is "$RUN_RC" 0 "podman --device nvidia.com/gpu=$dev (MIG): container ran" || t_diag "$RUN_STDERR"
        t_is "$(field caps)" "nvidia-cap291,nvidia-cap292," "=$dev: exactly the MIG device's GPU and compute instance caps"
        t_is "$(field dev)" "nvidia-caps,nvidia-modeset,nvidia-uvm,nvidia-uvm-tools,nvidia2,nvidiactl," "=$dev: the parent GPU's node only"
        t_match "$(field smi)" 'MIG-abe464ae-f961-3abb-30be-d5bafcc4b050' "=$dev: nvidia-smi shows the MIG device"
        t_is "$(field gpus)" "0000:07:00.0," "=$dev: /proc shows the parent GPU only"
done

_gh_cdi_restore
t_is "$(cdi_state)" "$CDI_BEFORE" "the CDI directories hold what they held before"
mountinfo_unchanged "host mount table unchanged" "$T/mounts.before"
t_is "$(cksum </etc/ld.so.cache)" "$(cat "$T/host-cache.before")" "the host's /etc/ld.so.cache is unchanged"
t_done
