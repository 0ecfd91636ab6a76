#!/bin/bash
# CDI specs written by others (docs/cdi.md, "Specs written by others"): `gpu-cli cdi list` and
# `gpu-cli doctor` read specs in the shapes nvidia-ctk (JSON and YAML), the Kubernetes device plugin
# and NVIDIA's DRA driver write (tests/helpers/foreign-specs.py, for the fake driver), ours and an
# MPS group's; name their writer; resolve devices as CDI readers do (a later directory wins, two
# specs of one directory defining a device make it unresolvable, .yml is not read); report a spec
# stale after a driver upgrade with the command that writes it again; and give one line, never a
# crash, for malformed, huge, deeply nested and hostile specs.  All in temp directories.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
t_need_root
FS=$GH_SOURCE_DIR/tests/helpers/foreign-specs.py
bash "$GH_SOURCE_DIR/tests/fake-driver/make-root.sh" "$T/drv" >"$T/mkroot.log" 2>&1 || { t_diag_file "$T/mkroot.log"; echo "Bail out! make-root.sh"; exit 1; }
V=$(grep -o '[0-9]\+\.[0-9]\+\.[0-9]\+' "$T/drv/proc/driver/nvidia/version" | head -n1)
OLD=570.86.10
cli() { "$GPU_CLI" "--root=$T/drv" "$@"; }
fs() { "$GH_PYTHON" "$FS" --root="$T/drv" "$@"; }
# list DIR...: the table on $T/out, stderr on $T/err
list() {
        local a=() d
        for d in "$@"; do a+=("--cdi-dir=$d"); done
        cli cdi list "${a[@]}" >"$T/out" 2>"$T/err"
}
row() { awk -v n="$1" '$1 == n { print $2, $3, $4 }' "$T/out"; }
doctor_cdi() { cli doctor --hooks-dir="$T/none" --cgroup-manager=cgroupfs "$@" >"$T/doc" 2>&1; grep -E '^(ok|warn|fail) +cdi ' "$T/doc"; }

# ---------------------------------------------------------------------------------------------
# every writer's shape, current: listed with its writer

mkdir -p "$T/etc" "$T/run" "$T/none" "$T/bin"
# the hook programs the specs name, present (doctor warns about a spec whose hook program is missing)
for p in nvidia-cdi-hook nvidia-ctk; do printf '#!/bin/sh\nexit 0\n' >"$T/bin/$p" && chmod 0755 "$T/bin/$p"; done
fs --writer=nvidia-ctk --hook="$T/bin/nvidia-cdi-hook" --output="$T/etc/nvidia.yaml"
fs --writer=device-plugin --hook="$T/bin/nvidia-ctk" --output="$T/run/k8s.device-plugin.nvidia.com-gpu.json"
fs --writer=dra-base --hook="$T/bin/nvidia-cdi-hook" --output="$T/run/k8s.gpu.nvidia.com-device_base.yaml"
mkdir -p "$T/mps/shm" "$T/mps/pipe"
fs --writer=dra-claim --hook="$T/bin/nvidia-cdi-hook" --mps-dir="$T/mps" --output="$T/run/k8s.gpu.nvidia.com-claim_2f1c2a9e-7c1b-4d7e-9a51-3b0c8d1e6f42.yaml"
cli cdi generate --vendor=example.com --output="$T/run/example.com-gpu.json"
t_ok "a YAML spec of nvidia-ctk is read" list "$T/etc" "$T/run"
t_is "$(row nvidia.com/gpu=0)" "nvidia-ctk ok $T/etc/nvidia.yaml" "nvidia-ctk's YAML spec: device 0, writer nvidia-ctk, ok"
t_is "$(row nvidia.com/gpu=all)" "nvidia-ctk ok $T/etc/nvidia.yaml" "... and its device all"
uuids() { sed -n 's/^GPU UUID:[[:space:]]*//p' "$T/drv/proc/driver/nvidia/gpus/"*/information; }
UUID0=$(uuids | sed -n 1p)
t_match "$(row "k8s.device-plugin.nvidia.com/gpu=$UUID0")" "^device-plugin ok " "the device plugin's spec: devices by UUID, writer device-plugin"
t_is "$(row k8s.gpu.nvidia.com/device=gpu-1)" "dra-driver ok $T/run/k8s.gpu.nvidia.com-device_base.yaml" "the DRA driver's base spec (YAML): gpu-1"
t_match "$(row k8s.gpu.nvidia.com/claim=2f1c2a9e-7c1b-4d7e-9a51-3b0c8d1e6f42-gpu-0)" "^dra-driver ok " "the DRA driver's claim spec"
t_is "$(row example.com/gpu=1)" "gpu-hook ok $T/run/example.com-gpu.json" "ours: writer gpu-hook"
t_is "$(head -n1 "$T/out" | tr -s ' ')" "DEVICE WRITER STATE SPEC" "the table's header"
t_is "$(cat "$T/err")" "" "nothing on stderr when every spec is current"
t_is "$(cli cdi list --quiet --cdi-dir="$T/etc" | tr '\n' ' ')" \
        "nvidia.com/gpu=0 nvidia.com/gpu=$UUID0 nvidia.com/gpu=1 nvidia.com/gpu=$(uuids | sed -n 2p) nvidia.com/gpu=all " \
        "--quiet: the names only"
cli cdi list --json --cdi-dir="$T/etc" --cdi-dir="$T/run" >"$T/list.json"
t_is "$("$GH_PYTHON" -c 'import json,sys; j=json.load(open(sys.argv[1])); print(sorted(set((s["writer"], s["stale"], s["error"]) for s in j["specs"])))' "$T/list.json")" \
        "[('device-plugin', None, None), ('dra-driver', None, None), ('gpu-hook', None, None), ('nvidia-ctk', None, None)]" \
        "--json: every spec with its writer, none stale"
t_match "$(doctor_cdi --cdi-dir="$T/etc" --cdi-dir="$T/run")" "^ok +cdi +5 CDI spec\\(s\\), current for driver $V: nvidia.yaml \\(nvidia-ctk\\)" "doctor: five specs, current"

# a spec whose hook program is missing: its devices cannot start (no-hook), said on stderr, in --json
mkdir -p "$T/nohook"
fs --writer=nvidia-ctk --hook="$T/bin/gone/nvidia-cdi-hook" --output="$T/nohook/nvidia.yaml"
list "$T/nohook"
t_is "$(row nvidia.com/gpu=all)" "nvidia-ctk no-hook $T/nohook/nvidia.yaml" "a missing hook program: its devices are no-hook"
t_match "$(cat "$T/err")" "^gpu-cli: cdi list: $T/nohook/nvidia.yaml \\(nvidia-ctk\\): its hook cannot run: $T/bin/gone/nvidia-cdi-hook does not exist" \
        "... and stderr names the program"
t_is "$(cli cdi list --quiet --cdi-dir="$T/nohook" | wc -l)" 0 "--quiet: no device a runtime can use"
cli cdi list --json --cdi-dir="$T/nohook" >"$T/nohook.json"
t_match "$("$GH_PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["specs"][0]["hook_error"])' "$T/nohook.json")" \
        "nvidia-cdi-hook does not exist" "--json: hook_error"
t_match "$(doctor_cdi --cdi-dir="$T/nohook")" "^warn +cdi +$T/nohook/nvidia.yaml: $T/bin/gone/nvidia-cdi-hook does not exist" "doctor: the same spec, a warning"

# nvidia-ctk's JSON form and its older hook (nvidia-ctk hook ...), an MPS group's spec of ours
mkdir -p "$T/j"
fs --writer=nvidia-ctk --format=json --hook="$T/bin/nvidia-ctk" --output="$T/j/nvidia.json"
list "$T/j"
t_is "$(row nvidia.com/gpu=1)" "nvidia-ctk ok $T/j/nvidia.json" "nvidia-ctk's JSON spec with 'nvidia-ctk hook' hooks"
mkdir -p "$T/m"
"$GH_PYTHON" - "$T/run/example.com-gpu.json" "$T/m/nvidia.com-gpu-mps-team.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
s["kind"] = "nvidia.com/gpu"
s["devices"] = [dict(s["devices"][0], name="mps-team")]
json.dump(s, open(sys.argv[2], "w"))
EOF
list "$T/m"
t_is "$(row nvidia.com/gpu=mps-team)" "gpu-hook-mps ok $T/m/nvidia.com-gpu-mps-team.json" "an MPS group's spec: writer gpu-hook-mps"

# ---------------------------------------------------------------------------------------------
# stale after a driver upgrade: each writer, the command that writes it again

mkdir -p "$T/old"
fs --writer=nvidia-ctk --hook="$T/bin/nvidia-cdi-hook" --version=$OLD --output="$T/old/nvidia.yaml"
fs --writer=device-plugin --hook="$T/bin/nvidia-ctk" --version=$OLD --output="$T/old/k8s.device-plugin.nvidia.com-gpu.json"
fs --writer=dra-base --hook="$T/bin/nvidia-cdi-hook" --version=$OLD --output="$T/old/k8s.gpu.nvidia.com-device_base.yaml"
sed "s/$V/$OLD/g" "$T/run/example.com-gpu.json" >"$T/old/example.com-gpu.json"
list "$T/old"
t_is "$(row nvidia.com/gpu=0)" "nvidia-ctk stale $T/old/nvidia.yaml" "an old nvidia-ctk spec: stale"
t_match "$(cat "$T/err")" "$T/old/nvidia.yaml \\(nvidia-ctk\\) is stale: it names driver $OLD \\(lib[^)]*\\.so\\.$OLD\\), the loaded driver is $V; nvidia-ctk cdi generate --output=$T/old/nvidia.yaml \\(or ours in its place: gpu-cli cdi generate --output=$T/old/nvidia.com-gpu.json && rm $T/old/nvidia.yaml\\)" \
        "... why, and nvidia-ctk's command or ours in its place"
t_match "$(cat "$T/err")" "k8s.device-plugin.nvidia.com-gpu.json \\(device-plugin\\) is stale: it names driver $OLD.*restart NVIDIA's device plugin on this node" \
        "the device plugin's: restart the plugin"
t_match "$(cat "$T/err")" "k8s.gpu.nvidia.com-device_base.yaml \\(dra-driver\\) is stale: .*restart NVIDIA's DRA kubelet plugin" "the DRA driver's: restart its kubelet plugin"
t_match "$(cat "$T/err")" "example.com-gpu.json \\(gpu-hook\\) is stale: it names driver $OLD.*; gpu-cli --root=$T/drv cdi generate --output=$T/old/example.com-gpu.json\$" \
        "ours: gpu-cli cdi generate --output=FILE (with the --root it was written with)"
doctor_cdi --cdi-dir="$T/old" >"$T/doccdi"
t_is "$(grep -cE '^warn +cdi ' "$T/doccdi")" 4 "doctor: one warning per stale spec"
t_match "$(grep -A2 'nvidia.yaml: it names' "$T/doc")" "fix: +nvidia-ctk cdi generate --output=$T/old/nvidia.yaml" "doctor gives the same fix"

# only --host-driver-version differs (the files are today's)
mkdir -p "$T/hdv"
fs --writer=nvidia-ctk --hook="$T/bin/nvidia-cdi-hook" --output="$T/hdv/nvidia.yaml"
sed -i "s/--host-driver-version=$V/--host-driver-version=$OLD/" "$T/hdv/nvidia.yaml"
list "$T/hdv"
t_match "$(cat "$T/err")" "is stale: it names driver $OLD \\(--host-driver-version=$OLD\\)" "a --host-driver-version= of another driver is stale"
# the version is right, a file is gone
mkdir -p "$T/gone"
fs --writer=device-plugin --hook="$T/bin/nvidia-ctk" --format=json --output="$T/gone/k8s.device-plugin.nvidia.com-gpu.json"
sed -i "s|$T/drv/usr/bin/nvidia-smi|$T/drv/usr/bin/nvidia-smi-gone|" "$T/gone/k8s.device-plugin.nvidia.com-gpu.json"
list "$T/gone"
t_match "$(cat "$T/err")" "is stale: $T/drv/usr/bin/nvidia-smi-gone does not exist" "a hostPath that does not exist is stale"
# the same in our --mounts=hook spec: the file is named in cdi-hook's --mount argument
mkdir -p "$T/gone-hm"
"$GPU_CLI" "--root=$T/drv" cdi generate --mounts=hook --output="$T/gone-hm/nvidia.com-gpu.json"
sed -i "s|=$T/drv/usr/bin/nvidia-smi::|=$T/drv/usr/bin/nvidia-smi-gone::|" "$T/gone-hm/nvidia.com-gpu.json"
list "$T/gone-hm"
t_match "$(cat "$T/err")" "is stale: $T/drv/usr/bin/nvidia-smi-gone does not exist" "a --mounts=hook spec whose --mount file is gone is stale"
# a device number that is not the host's (nvidia-uvm's major changes at boot)
mkdir -p "$T/num"
"$GH_PYTHON" - "$T/run/example.com-gpu.json" "$T/num/example.com-gpu.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
for n in s["containerEdits"]["deviceNodes"]:
    if n["path"] == "/dev/nvidia-uvm":
        n["major"] = 499
json.dump(s, open(sys.argv[2], "w"))
EOF
list "$T/num"
t_match "$(cat "$T/err")" "is stale: $T/drv/dev/nvidia-uvm is [0-9]+:0 on this host, the spec says 499:0" "a device node's major that differs is stale"
# the DRA claim whose MPS directories are gone
rm -r "$T/mps"
list "$T/run"
t_match "$(cat "$T/err")" "claim_2f1c2a9e-7c1b-4d7e-9a51-3b0c8d1e6f42.yaml \\(dra-driver\\) is stale: $T/mps/shm does not exist \\(and 1 more missing host path\\)" \
        "a DRA claim spec whose MPS directories are gone is stale"
# no driver loaded: the version is not compared, the host paths still are
t_ok "cdi list without a driver" "$GPU_CLI" --root="$T/none" cdi list --cdi-dir="$T/hdv"

# ---------------------------------------------------------------------------------------------
# resolution: priority, conflicts, .yml

mkdir -p "$T/p0" "$T/p1"
fs --writer=nvidia-ctk --hook="$T/bin/nvidia-cdi-hook" --output="$T/p0/nvidia.yaml"
cli cdi generate --output="$T/p1/nvidia.com-gpu.json"
list "$T/p0" "$T/p1"
t_is "$(row nvidia.com/gpu=all | sort | tr '\n' ' ')" "gpu-hook ok $T/p1/nvidia.com-gpu.json nvidia-ctk overridden $T/p0/nvidia.yaml " \
        "the same device in a later directory wins; the earlier one is overridden"
cp "$T/p0/nvidia.yaml" "$T/p1/nvidia.yaml"
list "$T/p0" "$T/p1"
t_is "$(row nvidia.com/gpu=0 | awk '{print $2}' | sort | uniq -c | tr -s ' \n' '  ')" " 2 conflict 1 overridden " "two specs of one directory: conflict"
t_match "$(cat "$T/err")" "$T/p1/nvidia.com-gpu.json and $T/p1/nvidia.yaml, of the same priority, both define nvidia.com/gpu=0 and 4 more: runtimes refuse them" \
        "one line per conflicting pair"
t_is "$(cli cdi list --quiet --cdi-dir="$T/p1" 2>/dev/null | wc -l)" 0 "--quiet: no usable device when both define them"
doctor_cdi --cdi-dir="$T/p1" >/dev/null
t_match "$(grep -A2 'both define' "$T/doc")" "fix: +keep one of them: rm " "doctor: the conflict, and which file to remove"
mkdir -p "$T/yml"
cp "$T/etc/nvidia.yaml" "$T/yml/nvidia.yml"
list "$T/yml"
t_match "$(cat "$T/err")" "skipped: $T/yml/nvidia.yml is not read by any runtime: CDI reads .json and .yaml files only" ".yml: said to be read by no runtime"
t_is "$(wc -l <"$T/out")" 1 "... and it offers no device"

# ---------------------------------------------------------------------------------------------
# bad specs: one line naming the file, no crash, the others still listed

mkdir -p "$T/bad"
cp "$T/etc/nvidia.yaml" "$T/bad/good.yaml"
printf 'cdiVersion: 0.5.0\nkind: [\n' >"$T/bad/syntax.yaml"
printf '{"cdiVersion": "0.5.0", "kind": "a.com/b", "devices": [' >"$T/bad/truncated.json"
printf 'cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices: []\n' >"$T/bad/nodevices.yaml"
printf 'cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: "x\\e[2J"\n  containerEdits: {env: [A=1]}\n' >"$T/bad/hostile-name.yaml"
printf 'cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: a\n  containerEdits:\n    mounts:\n    - {hostPath: 7, containerPath: /x}\n' >"$T/bad/type.yaml"
printf 'a: &a [x, x, x]\nb: &b [*a, *a, *a]\nc: [*b, *b, *b]\n' >"$T/bad/alias.yaml"
"$GH_PYTHON" -c 'print("a:" + " [" * 5000 + "]" * 5000)' >"$T/bad/deep.yaml"
"$GH_PYTHON" -c 'print("[" * 5000 + "]" * 5000)' >"$T/bad/deep.json"
head -c 17000000 /dev/zero | tr '\0' ' ' >"$T/bad/huge.json"
printf 'kind: a.com/b\nkind: a.com/c\n' >"$T/bad/dup.yaml"
printf '\xff\xfe\x00k' >"$T/bad/binary.yaml"
mkfifo "$T/bad/fifo.json"
mkdir "$T/bad/dir.json"
ln -s /nonexistent "$T/bad/dangling.json"
: >"$T/bad/empty.yaml"
printf 'cdiVersion: 0.5.0\nkind: "nvidia.com/gpu"\ndevices:\n- name: a\n  containerEdits:\n    mounts:\n    - hostPath: "/x\\n\\e]0;pwned\\a"\n      containerPath: /x\n' >"$T/bad/hostile-path.yaml"
timeout 60 "$GPU_CLI" "--root=$T/drv" cdi list --cdi-dir="$T/bad" >"$T/out" 2>"$T/err"
t_is "$?" 0 "cdi list over a directory of bad specs exits 0 (runtimes skip them too)"
t_is "$(awk '$4 ~ /good.yaml$/ {print $1, $3}' "$T/out" | sort | tr '\n' ' ')" \
        "$(printf '%s ok\n' nvidia.com/gpu=0 nvidia.com/gpu=1 "nvidia.com/gpu=$UUID0" "nvidia.com/gpu=$(uuids | sed -n 2p)" nvidia.com/gpu=all | sort | tr '\n' ' ')" \
        "the good spec's devices are listed"
for f in syntax.yaml truncated.json nodevices.yaml hostile-name.yaml type.yaml alias.yaml deep.yaml deep.json huge.json dup.yaml binary.yaml fifo.json dangling.json empty.yaml; do
        t_is "$(grep -c "^gpu-cli: cdi list: skipped: $T/bad/$f" "$T/err")" 1 "bad spec $f: one line naming it"
done
t_is "$(grep -c 'dir.json' "$T/err")" 0 "a directory named *.json is skipped, as CDI readers do"
t_match "$(grep alias.yaml "$T/err")" "aliases" "aliases are refused, not expanded"
t_match "$(grep deep.yaml "$T/err")" "deeper than 64" "deep YAML: refused at 64 levels"
t_match "$(grep huge.json "$T/err")" "huge.json" "a 17 MB file is refused"
t_match "$(grep hostile-path.yaml "$T/err")" 'is stale: /x\\x0a\\x1b\]0;pwned\\x07 does not exist' "a hostile host path is printed escaped, on one line"
t_is "$(LC_ALL=C grep -c $'[\x01-\x08\x0b-\x1f\x7f]' "$T/err")" 0 "no control character reaches the terminal"
timeout 60 "$GPU_CLI" "--root=$T/drv" doctor --hooks-dir="$T/none" --cgroup-manager=cgroupfs --cdi-dir="$T/bad" >"$T/doc" 2>&1
t_is "$(grep -cE '^warn +cdi ' "$T/doc")" 15 "doctor: one warning per bad or stale spec"
t_is "$(grep -cE '^warn +cdi .*syntax.yaml: line 3' "$T/doc")" 1 "doctor names the file and the line"
# libyaml is loaded only to read a YAML spec: never by the cdi-hook, nor for JSON specs
t_is "$(readelf -d "$GPU_CLI" | grep -c 'NEEDED.*yaml')" 0 "gpu-cli does not link libyaml"
t_is "$(LD_DEBUG=files "$GPU_CLI" "--root=$T/drv" cdi list --cdi-dir="$T/j" 2>&1 >/dev/null | grep -c 'libyaml')" 0 \
        "reading JSON specs does not load libyaml"
t_match "$(LD_DEBUG=files "$GPU_CLI" "--root=$T/drv" cdi list --cdi-dir="$T/etc" 2>&1 >/dev/null | grep 'file=libyaml' | head -n1)" "libyaml-0.so.2" \
        "reading a YAML spec loads it"
"$GPU_CLI" cdi list "$T/bad/syntax.yaml" >/dev/null 2>&1
t_is "$?" 1 "cdi list FILE of a bad spec exits 1"
t_ok "cdi list FILE reads YAML" "$GPU_CLI" cdi list "$T/etc/nvidia.yaml"

t_done
