#!/bin/bash
# gpu-cli setup against sample configurations in a temp dir: what it adds, what it keeps, that a
# second run changes nothing, --dry-run changes nothing and shows a diff, --undo gives the original
# back, malformed input is refused with the file untouched, NVIDIA's hook is never replaced.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
CLI=$GPU_CLI
D=$T/etc
mkdir -p "$D/hooks.d"
RTP=/opt/gh/bin/gpu-runtime HKP=/opt/gh/bin/gpu-hook
common=(--runtime-path="$RTP" --hook-path="$HKP" --hooks-dir="$D/hooks.d")

# setup ARGS...: runs gpu-cli setup; OUT and RC.
setup() {
        OUT=$("$CLI" setup "${common[@]}" "$@" 2>&1)
        RC=$?
}
jq_py() { "$GH_PYTHON" -c "import json,sys; c=json.load(open(sys.argv[1])); print($2)" "$1"; }
snap() { (cd "$D" && find . -printf '%p %y %l\n' | sort && find . -type f -exec md5sum {} + | sort); }

# ---- docker ---------------------------------------------------------------------------------
DJ=$D/daemon.json
cat >"$DJ" <<'EOF'
{
    "log-driver": "journald",
    "runtimes": {"other": {"path": "/usr/bin/other-runtime", "runtimeArgs": ["--debug"]}},
    "registry-mirrors": ["https://mirror.example"]
}
EOF
chmod 600 "$DJ"
cp "$DJ" "$T/dj.orig"
# Docker 20.10 (Debian 12's): --gpus takes the prestart hook; nothing of CDI is touched
DK=(docker --config="$DJ" --hook-link="$D/bin/nvidia-container-runtime-hook" --docker-version=20.10.24
        --cdi-hook-link="$D/bin/nvidia-cdi-hook" --cdi-spec="$D/cdi/nvidia.com-gpu.json")
mkdir -p "$D/bin"

before=$(snap)
setup "${DK[@]}" --default --dry-run
t_is "$RC" 0 "docker --dry-run: exit 0"
t_match "$OUT" '^\+ +"gpu": \{' "--dry-run shows the added runtime as a diff line"
t_match "$OUT" '^\+ *"default-runtime": "gpu"' "--dry-run shows default-runtime"
t_match "$OUT" '^\+-> /opt/gh/bin/gpu-hook' "--dry-run shows the hook link"
t_is "$(snap)" "$before" "--dry-run changed no file"

setup "${DK[@]}" --default
t_is "$RC" 0 "docker: exit 0" || t_diag "$OUT"
t_is "$(jq_py "$DJ" 'c["runtimes"]["gpu"]')" "{'path': '$RTP'}" "daemon.json: runtimes.gpu names gpu-runtime"
t_is "$(jq_py "$DJ" 'c["default-runtime"]')" gpu "daemon.json: default-runtime gpu (--default)"
t_is "$(jq_py "$DJ" '[c["log-driver"], c["runtimes"]["other"], c["registry-mirrors"]]')" \
        "['journald', {'path': '/usr/bin/other-runtime', 'runtimeArgs': ['--debug']}, ['https://mirror.example']]" \
        "daemon.json: every other key kept"
t_is "$(stat -c %a "$DJ")" 600 "daemon.json keeps its mode"
t_ok "the original is backed up" cmp "$T/dj.orig" "$DJ.gpu-cli.bak"
t_is "$(readlink "$D/bin/nvidia-container-runtime-hook")" "$HKP" "nvidia-container-runtime-hook -> gpu-hook"
t_match "$OUT" 'restart dockerd' "it says what to restart"

after=$(snap)
setup "${DK[@]}" --default
t_is "$RC:$OUT" "0:docker: nothing to change" "a second run: nothing to change"
t_is "$(snap)" "$after" "a second run changed no file"

setup "${DK[@]}" --undo
t_is "$RC" 0 "docker --undo: exit 0" || t_diag "$OUT"
t_ok "--undo gives daemon.json back byte for byte" cmp "$T/dj.orig" "$DJ"
t_not "--undo removes the link" test -L "$D/bin/nvidia-container-runtime-hook"
t_not "--undo removes the backup it restored" test -e "$DJ.gpu-cli.bak"
setup "${DK[@]}" --undo
t_is "$RC:$OUT" "0:docker: nothing to change" "a second --undo: nothing to change"

# Edited after setup: undo takes out only its keys.
setup "${DK[@]}"
"$GH_PYTHON" - "$DJ" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1])); c["debug"] = True; json.dump(c, open(sys.argv[1], "w"))
EOF
setup "${DK[@]}" --undo
t_is "$(jq_py "$DJ" '(sorted(c), sorted(c["runtimes"]))')" "(['debug', 'log-driver', 'registry-mirrors', 'runtimes'], ['other'])" \
        "--undo after a hand edit removes only runtimes.gpu, keeps the edit"
rm -f "$DJ.gpu-cli.bak"

# No daemon.json yet.
rm -f "$DJ"
setup "${DK[@]}" --hook-link=none
t_is "$(jq_py "$DJ" 'c')" "{'runtimes': {'gpu': {'path': '$RTP'}}}" "no daemon.json: created with the runtime only"
setup "${DK[@]}" --hook-link=none --undo
t_is "$(jq_py "$DJ" 'c')" "{}" "--undo leaves an empty object"

# Malformed or conflicting: refused, untouched.
refused() {
        local desc=$1 want=$2
        shift 2
        cp "$DJ" "$T/dj.before"
        before=$(snap)
        setup "${DK[@]}" "$@"
        t_is "$RC" 1 "$desc: refused (exit 1)"
        t_match "$OUT" "$want" "$desc: the message says why"
        t_is "$(snap)" "$before" "$desc: nothing changed"
}
printf '{"log-driver": "journald",' >"$DJ"
refused "truncated daemon.json" 'refusing to edit it: .*not valid JSON'
printf '{"a": 1, "a": 2}' >"$DJ"
refused "duplicate keys" 'duplicate'
printf '["not", "an", "object"]' >"$DJ"
refused "an array" 'not a JSON object'
printf '{"runtimes": []}' >"$DJ"
refused "runtimes not an object" '"runtimes" is not an object'
printf '{"runtimes": {"gpu": {"path": "/usr/bin/nvidia-container-runtime"}}}' >"$DJ"
refused "runtimes.gpu already taken" 'runtimes.gpu already names /usr/bin/nvidia-container-runtime'
printf '{"default-runtime": "nvidia"}' >"$DJ"
refused "another default-runtime with --default" 'default-runtime.*already "nvidia"' --default
ln -sf "$T/elsewhere.json" "$DJ.link"
setup docker --config="$DJ.link" --hook-link=none --docker-version=20.10.24
t_match "$RC:$OUT" '^1:.*symbolic link' "a symlinked daemon.json is refused"

# NVIDIA's own hook: never replaced.
echo '{}' >"$DJ"
printf '#!/bin/sh\necho nvidia\n' >"$D/bin/nvidia-container-runtime-hook"
cp "$D/bin/nvidia-container-runtime-hook" "$T/nv.orig"
setup "${DK[@]}"
t_is "$RC" 0 "with NVIDIA's hook at the link path: exit 0"
t_ok "NVIDIA's hook is left as it was" cmp "$T/nv.orig" "$D/bin/nvidia-container-runtime-hook"
t_match "$OUT" "not gpu-cli's link" "... and setup says so"
setup "${DK[@]}" --undo
t_ok "--undo leaves NVIDIA's hook alone too" cmp "$T/nv.orig" "$D/bin/nvidia-container-runtime-hook"

# ---- docker >= 29.2: --gpus goes through CDI when dockerd finds nvidia-cdi-hook ------------------
bash "$GH_SOURCE_DIR/tests/fake-driver/make-root.sh" "$T/drv" >"$T/mkroot.log" 2>&1 || { t_diag_file "$T/mkroot.log"; t_fatal "make-root.sh"; }
DJ29=$D/daemon-29.json
NVH=/opt/gh/libexec/gpu-hook/nvidia-cdi-hook
SPEC=$D/cdi/nvidia.com-gpu.json
DK29=(docker --config="$DJ29" --hook-link=none --docker-version=29.2.0 --cdi-hook-link="$D/bin/nvidia-cdi-hook"
        --cdi-hook="$NVH" --cdi-spec="$SPEC")
setup29() {
        OUT=$("$CLI" "--root=$T/drv" setup "${common[@]}" "${DK29[@]}" "$@" 2>&1)
        RC=$?
}
rm -rf "$D/cdi" "$D/bin/nvidia-cdi-hook"
before=$(snap)
setup29 --dry-run
t_is "$RC:$(snap)" "0:$before" "Docker 29.2 --dry-run: exit 0, nothing changed"
t_match "$OUT" "docker run --gpus now goes through CDI \\(nvidia.com/gpu=all\\)" "Docker 29.2: setup says that --gpus now goes through CDI"
t_match "$OUT" "^\\+-> $NVH" "--dry-run shows the nvidia-cdi-hook link"
t_match "$OUT" '^\+ *"kind": "nvidia.com/gpu"' "--dry-run shows the spec"
setup29
t_is "$RC" 0 "Docker 29.2: exit 0"
t_is "$(readlink "$D/bin/nvidia-cdi-hook")" "$NVH" "nvidia-cdi-hook -> our static nvidia-cdi-hook"
t_is "$(jq_py "$SPEC" 'c["kind"] + " " + " ".join(d["name"] for d in c["devices"] if d["name"] == "all")')" "nvidia.com/gpu all" \
        "our spec is written, with nvidia.com/gpu=all"
t_match "$(jq_py "$SPEC" 'c["containerEdits"]["hooks"][0]["args"]')" "'cdi-hook'" "... its hook is our cdi-hook"
setup29
t_match "$RC $OUT" "^docker: nothing to change" "a second run changes nothing"
jq_py "$SPEC" 'json.dumps(dict(c, devices=c["devices"][1:]))' >"$SPEC.tmp" && mv "$SPEC.tmp" "$SPEC"
setup29
t_match "$OUT" "updated $SPEC" "a stale spec is refreshed"
t_is "$(jq_py "$SPEC" 'c["devices"][0]["name"]')" 0 "... with every device again"
echo '{"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu", "devices": [{"name": "all", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia0"}]}}]}' >"$D/cdi/nvidia.yaml"
rm -f "$SPEC"
setup29
t_match "$OUT" "$D/cdi/nvidia.yaml also defines nvidia.com/gpu devices: not writing" "another spec of the kind: ours is not written beside it"
t_not "... and it is not" test -e "$SPEC"
rm -f "$D/cdi/nvidia.yaml"
setup29 --undo
t_is "$RC" 0 "Docker 29.2 --undo: exit 0"
t_not "--undo removes our nvidia-cdi-hook link" test -L "$D/bin/nvidia-cdi-hook"
printf '#!/bin/sh\necho nvidia\n' >"$D/bin/nvidia-cdi-hook"
cp "$D/bin/nvidia-cdi-hook" "$T/nvcdi.orig"
setup29
t_ok "NVIDIA's nvidia-cdi-hook is never replaced" cmp "$T/nvcdi.orig" "$D/bin/nvidia-cdi-hook"
t_match "$OUT" "$D/bin/nvidia-cdi-hook exists and is not gpu-cli's link" "... and setup says so"
setup29 --undo
t_ok "--undo leaves NVIDIA's nvidia-cdi-hook alone" cmp "$T/nvcdi.orig" "$D/bin/nvidia-cdi-hook"
t_match "$OUT" "$SPEC left in place" "--undo leaves the spec (other engines may use it), saying so"
rm -f "$D/bin/nvidia-cdi-hook"
OUT=$("$CLI" "--root=$T/drv" setup "${common[@]}" docker --config="$DJ29" --hook-link=none --docker-version=29.1.3 \
        --cdi-hook-link="$D/bin/nvidia-cdi-hook" --cdi-spec="$D/cdi/x.json" 2>&1)
t_nomatch "$OUT" "CDI" "Docker 29.1: --gpus keeps the hook path, nothing about CDI"
t_not "... and no nvidia-cdi-hook, no spec" test -e "$D/bin/nvidia-cdi-hook" -o -e "$D/cdi/x.json"

# ---- containerd, crio, podman ----------------------------------------------------------------
# containerd: config.toml edited in place (cli/setup-containerd.c); Debian 13's own config.toml first
CT=$D/containerd/config.toml
mkdir -p "$(dirname "$CT")"
cat >"$CT" <<'EOF'
version = 2

[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = "/usr/lib/cni"
      conf_dir = "/etc/cni/net.d"
  [plugins."io.containerd.internal.v1.opt"]
    path = "/var/lib/containerd/opt"
EOF
cp "$CT" "$T/ct.orig"
toml() { "$GH_PYTHON" -c "import sys, tomllib; c = tomllib.load(open(sys.argv[1], 'rb')); p = c['plugins']; print($2)" "$1" 2>&1; }
CRI='p["io.containerd.grpc.v1.cri"]'
setup containerd --config="$CT" --dry-run
t_match "$RC:$OUT" '^0:' "containerd --dry-run: exit 0"
t_match "$OUT" '^\+ *enable_cdi = true  # gpu-cli setup containerd$' "... shows the lines it would add"
t_ok "... and changes nothing" cmp "$T/ct.orig" "$CT"
setup containerd --config="$CT"
t_is "$RC" 0 "containerd: exit 0" || t_diag "$OUT"
t_is "$(toml "$CT" "$CRI['enable_cdi'], $CRI['cdi_spec_dirs']")" "True ['/etc/cdi', '/var/run/cdi']" "containerd: CDI on, with /etc/cdi and /var/run/cdi"
t_is "$(toml "$CT" "$CRI['containerd']['runtimes']['gpu']['options']['BinaryName'], $CRI['containerd']['runtimes']['gpu']['pod_annotations']")" \
        "$RTP ['org.gpu-hook.mps-group']" "containerd: handler gpu = gpu-runtime, passing the MPS pod annotation"
t_is "$(toml "$CT" "$CRI['containerd']['runtimes']['runc']['runtime_type']")" "io.containerd.runc.v2" \
        "containerd: the runc handler written out (a file naming a runtime loses containerd's built-in one)"
t_is "$(toml "$CT" "$CRI['cni']['bin_dir'], p['io.containerd.internal.v1.opt']['path']")" "/usr/lib/cni /var/lib/containerd/opt" \
        "containerd: every setting of the file kept"
t_is "$(grep -vc '# gpu-cli setup containerd$' "$CT")" "$(wc -l <"$T/ct.orig")" "containerd: every added line is marked, no line of the file changed"
setup containerd --config="$CT"
t_is "$OUT" "containerd: nothing to change" "containerd: a second run changes nothing"
sed -i 's|^    path = "/var/lib/containerd/opt"|&\n    # mine|' "$CT"
setup containerd --config="$CT" --undo
t_is "$RC:$(grep -c 'gpu-cli setup' "$CT"):$(grep -c '# mine' "$CT")" "0:0:1" "containerd --undo takes out exactly its lines, an edit made since stays"
sed -i '/# mine/d' "$CT"
t_ok "... which gives back the original byte for byte" cmp "$T/ct.orig" "$CT"
setup containerd --config="$CT"
setup containerd --config="$CT" --undo
t_not "... and the backup goes when undo gave back the original" test -e "$CT.gpu-cli.bak"

# a node whose runc has its own options: kept, no second runc
cat >"$CT" <<'EOF'
version = 2
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
    SystemdCgroup = true
EOF
setup containerd --config="$CT"
t_is "$RC:$(toml "$CT" "$CRI['containerd']['runtimes']['runc']['options']['SystemdCgroup'], $CRI['enable_cdi']")" "0:True True" \
        "containerd: a file's own runc handler is kept as it is"
setup containerd --config="$CT" --undo
rm -f "$CT.gpu-cli.bak"

# no file: created, and --undo removes it
rm -f "$CT"
setup containerd --config="$CT"
t_is "$RC:$(toml "$CT" "c['version'], $CRI['enable_cdi']")" "0:2 True" "containerd: no config.toml: a version 2 one is created"
setup containerd --config="$CT" --undo
t_not "... and --undo removes it" test -e "$CT"

# containerd 2.x: version 3 names the CRI runtime plugin io.containerd.cri.v1.runtime
printf 'version = 3\n\n[plugins."io.containerd.cri.v1.runtime"]\n  enable_unprivileged_ports = true\n' >"$CT"
setup containerd --config="$CT"
V3='p["io.containerd.cri.v1.runtime"]'
t_is "$RC:$(toml "$CT" "$V3['enable_cdi'], $V3['enable_unprivileged_ports'], $V3['containerd']['runtimes']['gpu']['options']['BinaryName']")" \
        "0:True True $RTP" "containerd 2 (version 3): the same settings under io.containerd.cri.v1.runtime"
rm -f "$CT" "$CT.gpu-cli.bak"

# refused, file untouched: a setting that contradicts, a gpu handler that is not ours, no version
refused() {
        printf '%b' "$1" >"$CT"
        cp "$CT" "$T/ct.before"
        setup containerd --config="$CT"
        t_match "$RC:$OUT" "^1:gpu-cli: setup: .*$2" "containerd refuses $3"
        t_ok "... and leaves the file as it was" cmp "$T/ct.before" "$CT"
}
refused 'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  enable_cdi = false\n' \
        'enable_cdi = false; gpu-hook needs true: change it by hand' "enable_cdi = false"
refused 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.gpu]\n  runtime_type = "io.containerd.runc.v2"\n' \
        'already has \[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.gpu\] \(not written by gpu-cli\)' "another runtimes.gpu"
refused 'root = "/var/lib/containerd"\n' "has no 'version = ' line" "a version 1 config"
rm -f "$CT"

CR=$D/crio.conf.d/99-gpu-hook.conf
mkdir -p "$(dirname "$CR")"
setup crio --config="$CR" --default
t_is "$RC" 0 "crio: exit 0" || t_diag "$OUT"
t_match "$(cat "$CR")" "^runtime_path = \"$RTP\"" "crio drop-in: runtime_path = gpu-runtime"
t_match "$(cat "$CR")" '^default_runtime = "gpu"' "crio drop-in: default_runtime with --default"
t_is "$(jq_py "$D/hooks.d/oci-gpu-hook.json" '(c["hook"]["path"], c["hook"]["env"], c["stages"])')" \
        "('$HKP', ['PATH=/usr/sbin:/usr/bin:/sbin:/bin'], ['createRuntime'])" "crio: the hooks.d file (createRuntime, explicit env)"
t_is "$(jq_py "$D/hooks.d/oci-gpu-hook-poststop.json" '(c["hook"]["path"], c["hook"]["args"], c["stages"])')" \
        "('$HKP', ['gpu-hook', 'poststop'], ['poststop'])" "crio: the poststop hooks.d file (removes the container's record)"
setup crio --config="$CR" --undo
t_not "crio --undo removes the three files" test -e "$CR" -o -e "$D/hooks.d/oci-gpu-hook.json" -o \
        -e "$D/hooks.d/oci-gpu-hook-poststop.json"

setup podman
t_is "$RC" 0 "podman: exit 0"
t_ok "podman: the hooks.d files (createRuntime, poststop)" test -f "$D/hooks.d/oci-gpu-hook.json" -a \
        -f "$D/hooks.d/oci-gpu-hook-poststop.json"
t_match "$OUT" 'nothing to restart' "podman: nothing to restart"
setup podman --undo
t_not "podman --undo removes them" test -e "$D/hooks.d/oci-gpu-hook.json" -o -e "$D/hooks.d/oci-gpu-hook-poststop.json"
# an older setup wrote only the createRuntime file: undo takes it and minds no missing poststop file
setup podman && rm "$D/hooks.d/oci-gpu-hook-poststop.json"
setup podman --undo
t_is "$RC" 0 "podman --undo without the poststop file: exit 0" || t_diag "$OUT"
t_not "and the createRuntime file is gone" test -e "$D/hooks.d/oci-gpu-hook.json"

setup frobnicate
t_is "$RC" 2 "an unknown engine is a usage error"
t_done
