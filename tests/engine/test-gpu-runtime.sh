#!/bin/bash
# gpu-runtime on its own: argv passthrough for every command Docker and containerd use, config.json
# fidelity (unknown fields kept, mode and owner kept, only the hook and the device nodes added), the
# plan kept in a driver-state cache (used while the driver is the same), a MIG device (NVML, through
# gpu-cli for a static gpu-runtime),
# hostile config.json refused before the real runtime runs, and a GPU container under real runc from
# a bundle that has no hook at all.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
. "$GH_SOURCE_DIR/tests/engine/engine.sh"
t_need_root
t_need_cmd "$ENGINE_OCI"
RT=$GH_ENGINE_RUNTIME

engine_setup

# A stand-in runtime that records its arguments (NUL-separated) and the bundle's config.json.
REC=$T/rec
mkdir -p "$REC"
cat >"$T/recorder" <<RECORDER
#!/bin/sh
printf '%s\0' "\$@" >"$REC/argv"
b=.; prev=
for a in "\$@"; do
        case \$prev in --bundle|-b) b=\$a ;; esac
        case \$a in --bundle=*) b=\${a#--bundle=} ;; esac
        prev=\$a
done
[ -f "\$b/config.json" ] && cp "\$b/config.json" "$REC/config.json"
exit \${REC_EXIT:-0}
RECORDER
chmod 755 "$T/recorder"
engine_write_config "{\"runtime\": {\"runtimes\": [\"/nonexistent/runc\", \"$T/recorder\"], \"hook-path\": \"$GPU_HOOK\"}}"

new_bundle() {
        BUNDLE=$T/$1
        make_bundle "$BUNDLE" "$IMGROOT" /bin/sh -c "${2:-true}"
}

# passthrough DESC ARGS...: gpu-runtime ARGS runs the recorder with exactly ARGS and its status.
passthrough() {
        local desc=$1 rc want
        shift
        rm -f "$REC/argv"
        REC_EXIT=3 "$RT" "$@" </dev/null >/dev/null 2>"$T/err"
        rc=$?
        want=$(printf '%s\0' "$@" | od -c)
        if [ "$rc" = 3 ] && [ -f "$REC/argv" ] && [ "$(od -c <"$REC/argv")" = "$want" ]; then
                t_pass "passthrough: $desc"
        else
                t_fail "passthrough: $desc"
                t_diag "exit $rc (want 3); recorded: $(tr '\0' ' ' <"$REC/argv" 2>/dev/null)"
                t_diag_file "$T/err"
        fi
}

new_bundle plain
G=(--root /run/x --log "$T/log.json" --log-format json)
passthrough "create (not a GPU container)" "${G[@]}" create --bundle "$BUNDLE" --pid-file "$T/pid" ctr1
passthrough "start" "${G[@]}" start ctr1
passthrough "kill" "${G[@]}" kill ctr1 9
passthrough "kill --all" "${G[@]}" kill --all ctr1 KILL
passthrough "delete" "${G[@]}" delete ctr1
passthrough "delete --force" "${G[@]}" delete --force ctr1
passthrough "exec --process" "${G[@]}" exec --process "$T/p.json" --detach --pid-file "$T/p" ctr1
passthrough "state" "${G[@]}" state ctr1
passthrough "ps" "${G[@]}" ps --format json ctr1
passthrough "pause" "${G[@]}" pause ctr1
passthrough "resume" "${G[@]}" resume ctr1
passthrough "update from stdin" "${G[@]}" update --resources - ctr1
passthrough "features" features
passthrough "--version" --version
passthrough "no arguments at all"
passthrough "an unknown command with odd arguments" --systemd-cgroup frobnicate 'a b' '' -- --bundle
cp "$BUNDLE/config.json" "$T/plain.orig"
cd "$BUNDLE" || exit 1
passthrough "run, bundle from the current directory" run --detach ctr2
cd - >/dev/null || exit 1
t_ok "a non-GPU bundle's config.json is untouched" cmp "$T/plain.orig" "$BUNDLE/config.json"

# ---- fidelity -------------------------------------------------------------------------------
new_bundle gpu
bundle_set_env "$BUNDLE" NVIDIA_VISIBLE_DEVICES=1 NVIDIA_DRIVER_CAPABILITIES=utility
bundle_edit "$BUNDLE" '
c["x-vendor"] = {"nested": [1, 2.5, {"deep": None}], "unicode": "\u00e9\u2603"}
c["annotations"] = {"org.example/a": "b"}
c["process"]["x-extra"] = True
c["linux"]["devices"] = [{"path": "/dev/fuse", "type": "c", "major": 10, "minor": 229}]'
chmod 640 "$BUNDLE/config.json"
chown 123:45 "$BUNDLE/config.json"
cp "$BUNDLE/config.json" "$T/gpu.orig"
rm -f "$REC/config.json"
REC_EXIT=0 "$RT" "${G[@]}" create -b "$BUNDLE" --pid-file "$T/pid" ctr3 2>"$T/err"
t_is "$?" 0 "create of a GPU bundle (-b) runs the real runtime" || t_diag_file "$T/err"
t_is "$(stat -c %a:%u:%g "$BUNDLE/config.json")" "640:123:45" "the rewritten config.json keeps mode and owner"
t_ok "the real runtime saw the rewritten config.json" cmp "$REC/config.json" "$BUNDLE/config.json"
check=$("$GH_PYTHON" - "$T/gpu.orig" "$BUNDLE/config.json" "$GPU_HOOK" "$GH_ENGINE_CONFIG" <<'PY'
import json, sys
old, new = (json.load(open(p)) for p in sys.argv[1:3])
hook, cfg = sys.argv[3:5]
out = []
hooks = new.get("hooks", {}).get("createRuntime", [])
want = {"path": hook, "args": ["gpu-hook", "--config=" + cfg, "createRuntime"], "env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"]}
out.append("hook:" + ("ok" if hooks == [want] else repr(hooks)))
devs = sorted((d["path"], d["major"], d["minor"], d["type"]) for d in new["linux"]["devices"])
out.append("devices:" + ",".join(p for p, *_ in devs))
rules = new["linux"]["resources"]["devices"]
out.append("rules:" + ",".join("%s%d:%d" % ("+" if r["allow"] else "-", r.get("major", -1), r.get("minor", -1)) for r in rules))
# Take the additions out again: what is left must equal the original exactly (order-insensitive).
del new["hooks"]
new["linux"]["devices"] = [d for d in new["linux"]["devices"] if not d["path"].startswith("/dev/nvidia")]
new["linux"]["resources"]["devices"] = [r for r in rules if r.get("major") != 195]
out.append("rest:" + ("equal" if new == old else "DIFFERENT"))
print("\n".join(out))
PY
)
field() { printf '%s\n' "$check" | sed -n "s/^$1://p"; }
t_is "$(field hook)" ok "one createRuntime hook: gpu-hook, --config, createRuntime, env exactly PATH"
t_is "$(field devices)" "/dev/fuse,/dev/nvidia1,/dev/nvidiactl" "linux.devices: the bundle's own plus nvidia1 and nvidiactl (utility: no UVM)"
t_is "$(field rules)" '--1:-1,+195:255,+195:1' "resources.devices: allow rules for exactly those nodes, after the deny-all"
t_is "$(field rest)" equal "every other field is kept (unknown ones, annotations, unicode, reals)"

cp "$BUNDLE/config.json" "$T/gpu.once"
REC_EXIT=0 "$RT" create --bundle="$BUNDLE" ctr4 2>"$T/err"
t_ok "a second create (--bundle=) adds nothing twice" cmp "$T/gpu.once" "$BUNDLE/config.json"

# ---- the plan kept in a driver-state cache: used while the driver is the same, never after -------
engine_write_config "{\"runtime\": {\"runtimes\": [\"$T/recorder\"], \"hook-path\": \"$GPU_HOOK\"}, \"cli\": {\"state-file\": \"$T/state.json\"}}"
new_bundle kept
bundle_set_env "$BUNDLE" NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=utility
cp "$BUNDLE/config.json" "$T/kept.orig"
# kept_devices: a create from the original bundle; prints linux.devices as path:major:minor.
kept_devices() {
        cp "$T/kept.orig" "$BUNDLE/config.json"
        REC_EXIT=0 "$RT" create --bundle "$BUNDLE" kept 2>"$T/err" || { t_diag_file "$T/err"; return 1; }
        "$GH_PYTHON" -c 'import json,sys; print(" ".join("%s:%d:%d" % (d["path"], d["major"], d["minor"]) for d in sorted(json.load(open(sys.argv[1]))["linux"]["devices"], key=lambda d: d["path"])))' "$BUNDLE/config.json"
}
first=$(kept_devices)
t_is "$first" "/dev/nvidia0:195:0 /dev/nvidia1:195:1 /dev/nvidiactl:195:255" "cache: the first create lists both GPUs and nvidiactl"
t_ok "cache: the plan is kept beside the state file" compgen -G "$T/state.json.plan-*"
t_is "$(kept_devices)" "$first" "cache: the next create (the kept plan) lists the same nodes"
G1=$(ls "$DRV/proc/driver/nvidia/gpus" | sort | tail -n1)
mv "$DRV/proc/driver/nvidia/gpus/$G1" "$T/gpu1-away"
t_is "$(kept_devices)" "/dev/nvidia0:195:0 /dev/nvidiactl:195:255" "cache: a GPU gone from the driver is gone from the next create"
mv "$T/gpu1-away" "$DRV/proc/driver/nvidia/gpus/$G1"
t_is "$(kept_devices)" "$first" "cache: and back once it is back"
# A node replaced under the same driver (the fingerprint does not cover /dev): the kept plan is
# checked against the root's nodes, and the create says what it says without a cache.
mv "$DRV/dev/nvidia1" "$T/nvidia1.away"
mknod -m 666 "$DRV/dev/nvidia1" c 195 7
cp "$T/kept.orig" "$BUNDLE/config.json"
REC_EXIT=0 "$RT" create --bundle "$BUNDLE" kept 2>"$T/err"
t_is "$?" 1 "cache: a device node that no longer matches its GPU fails the create"
t_match "$(cat "$T/err")" '/dev/nvidia1 has device number 195:7, expected 195:1' "... naming the node, as without a cache"
rm -f "$DRV/dev/nvidia1"
mv "$T/nvidia1.away" "$DRV/dev/nvidia1"
t_is "$(kept_devices)" "$first" "cache: and as it was once restored"

# ---- a MIG device: its nodes need NVML, which a static gpu-runtime asks through gpu-cli ----------
bash "$GH_SOURCE_DIR/tests/fake-driver/make-root.sh" "$T/mig" --profile "$GH_SOURCE_DIR/tests/fake-driver/profiles/8gpu-mig.json" \
        >"$T/mig.log" 2>&1 || t_diag_file "$T/mig.log"
MIGU=$(cat "$T"/mig/proc/driver/nvidia/gpus/*/fake-nvml | grep -o 'MIG-[0-9a-f-]*' | head -n1)
new_bundle mig
bundle_set_env "$BUNDLE" NVIDIA_VISIBLE_DEVICES="$MIGU" NVIDIA_DRIVER_CAPABILITIES=utility
cp "$BUNDLE/config.json" "$T/mig.orig"
engine_write_config "{\"runtime\": {\"runtimes\": [\"$T/recorder\"], \"hook-path\": \"$GPU_HOOK\"}, \"cli\": {\"root\": \"$T/mig\"}}"
REC_EXIT=0 "$RT" create --bundle "$BUNDLE" mig 2>"$T/err"
t_is "$?" 0 "MIG device by UUID ($MIGU): create runs the real runtime" || t_diag_file "$T/err"
t_match "$("$GH_PYTHON" -c 'import json,sys; print(" ".join(sorted(d["path"] for d in json.load(open(sys.argv[1]))["linux"]["devices"])))' "$BUNDLE/config.json")" \
        '^/dev/nvidia-caps/nvidia-cap[0-9]+ /dev/nvidia-caps/nvidia-cap[0-9]+ /dev/nvidia[0-9] /dev/nvidiactl$' \
        "MIG device: its GPU, its two capability nodes and nvidiactl"
if [ "$(elf_linkage "$RT")" = static ]; then
        cp "$T/mig.orig" "$BUNDLE/config.json"
        engine_write_config "{\"runtime\": {\"runtimes\": [\"$T/recorder\"], \"hook-path\": \"$GPU_HOOK\"}, \"cli\": {\"root\": \"$T/mig\", \"path\": \"/nonexistent/gpu-cli\"}}"
        rm -f "$REC/argv"
        "$RT" create --bundle "$BUNDLE" mig 2>"$T/err"
        t_is "$?:$(wc -l <"$T/err")" "1:1" "static gpu-runtime, MIG device, cli.path missing: exit 1, one line"
        t_match "$(cat "$T/err")" '/nonexistent/gpu-cli.*"cli\.path"' "... naming the program and the setting"
        t_not "... and the real runtime did not run" test -e "$REC/argv"
        t_ok "... and config.json is as it was" cmp "$T/mig.orig" "$BUNDLE/config.json"
else
        t_skip "static gpu-runtime, MIG device, cli.path missing" "gpu-runtime is linked dynamically here: it loads NVML itself"
fi
engine_write_config "{\"runtime\": {\"runtimes\": [\"/nonexistent/runc\", \"$T/recorder\"], \"hook-path\": \"$GPU_HOOK\"}}"

new_bundle nvhook
bundle_set_env "$BUNDLE" NVIDIA_VISIBLE_DEVICES=all
bundle_add_hook "$BUNDLE" prestart /usr/bin/nvidia-container-runtime-hook prestart
REC_EXIT=0 "$RT" create --bundle "$BUNDLE" ctr5 2>"$T/err"
t_is "$("$GH_PYTHON" -c 'import json,sys; c=json.load(open(sys.argv[1])); print(len(c["hooks"].get("createRuntime", [])), len(c["linux"]["devices"]))' "$BUNDLE/config.json")" \
        "0 5" "a bundle that already has a GPU hook (docker --gpus) gets no second hook, but the device nodes"

# ---- hostile config.json: refused, the real runtime never runs, the file stays as it was --------
hostile() {
        local desc=$1 want=$2 rc
        rm -f "$REC/argv" "$T/log.json"
        "$RT" "${G[@]}" create --bundle "$BUNDLE" hostile </dev/null >/dev/null 2>"$T/err"
        rc=$?
        t_is "$rc:$(wc -l <"$T/err")" "1:1" "$desc: exit 1 and one line on stderr" || t_diag_file "$T/err"
        t_match "$(cat "$T/err")" "$want" "$desc: the message says what is wrong"
        t_not "$desc: the real runtime did not run" test -e "$REC/argv"
        t_match "$(cat "$T/log.json" 2>/dev/null)" '^\{"level":"error","msg":"gpu-runtime: ' "$desc: the error is in --log as JSON (what engines show)"
}
new_bundle hostile
mv "$BUNDLE/config.json" "$BUNDLE/real.json"
ln -s real.json "$BUNDLE/config.json"
hostile "symlinked config.json" 'symbolic link'
rm "$BUNDLE/config.json"
printf 'not json at all' >"$BUNDLE/config.json"
hostile "not JSON" 'not valid JSON'
"$GH_PYTHON" -c 'print("[" * 100000 + "]" * 100000)' >"$BUNDLE/config.json"
hostile "100000 levels deep" 'nests JSON deeper'
head -c 17000000 /dev/zero | tr '\0' ' ' >"$BUNDLE/config.json"
hostile "17 MB" 'larger than'
rm "$BUNDLE/config.json"
mkfifo "$BUNDLE/config.json"
hostile "a FIFO" 'not a regular file'

# ---- real runc, a bundle with no hook -------------------------------------------------------
engine_write_config "{$(engine_runtime_json)}"
host_mountinfo_snapshot "$T/mounts.before"
PROBE='echo "smi:$(nvidia-smi -L 2>&1 | tr "\n" "|")"; echo "cuda:$(cuda-probe 2>&1 | head -n1)"; echo "dev:$(ls /dev | grep -E "^nvidia" | sort | tr "\n" ",")"'
new_bundle runc1 "$PROBE"
bundle_set_env "$BUNDLE" NVIDIA_VISIBLE_DEVICES=0
RUNC=$RT run_runc "$BUNDLE" rt
t_is "$RUN_RC" 0 "runc through gpu-runtime, NVIDIA_VISIBLE_DEVICES=0, no hook in the bundle: ran" || t_diag "$RUN_STDERR"
t_match "$RUN_STDOUT" "^smi:GPU 0: .*$UUID0" "nvidia-smi lists GPU 0"
t_nomatch "$RUN_STDOUT" "^smi:.*GPU 1" "... and only it"
t_match "$RUN_STDOUT" '^cuda:CUDA OK: 1 device' "libcuda loads and sees one GPU"
t_is "$(printf '%s\n' "$RUN_STDOUT" | sed -n 's/^dev://p')" "nvidia-uvm,nvidia-uvm-tools,nvidia0,nvidiactl," "device nodes: nvidia0, nvidiactl, UVM"
mountinfo_unchanged "host mount table unchanged" "$T/mounts.before"

new_bundle runc2 "$PROBE"
RUNC=$RT run_runc "$BUNDLE" rt
t_is "$RUN_RC" 0 "runc through gpu-runtime, no NVIDIA variable: ran" || t_diag "$RUN_STDERR"
t_is "$(printf '%s\n' "$RUN_STDOUT" | sed -n 's/^dev://p')" "" "... and got no device node"

engine_write_config "{\"runtime\": {\"runtimes\": [\"/nonexistent/runc\"]}}"
"$RT" state x >/dev/null 2>"$T/err"
t_is "$?" 1 "no usable runtime: exit 1"
t_match "$(cat "$T/err")" '^gpu-runtime: no OCI runtime found \(tried /nonexistent/runc\)' "... naming what it tried"
engine_write_config '{"runtime": {"runtimes": []}}'
"$RT" state x >/dev/null 2>"$T/err"
t_match "$(cat "$T/err")" 'runtime.runtimes.*at least one' "an empty runtime list in the configuration is refused by name"
t_done
