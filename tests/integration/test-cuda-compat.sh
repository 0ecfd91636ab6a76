#!/bin/bash
# CUDA forward compatibility (docs/cuda-compat.md) with the fake driver (580.95.05) and the fake
# compat packages of tests/fake-driver (make-compat.py): for each package, the hook path (gpu-hook
# -> gpu-cli configure), our own CDI spec (gpu-cli cdi-hook --cuda-compat) and NVIDIA's spec
# (nvidia-cdi-hook enable-cuda-compat, then update-ldcache: two processes) must agree on whether
# the image's libcuda is the one CUDA loads.  The plan (configure --dry-run) says which and why;
# the configuration key cuda-compat and --no-cuda-compat turn it off.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
t_need_root
t_need_cmd runc
NVHOOK=${NVIDIA_CDI_HOOK:-$GH_BUILD_DIR/cli/nvidia-cdi-hook}
COMPAT=$GH_SOURCE_DIR/tests/fake-driver/make-compat.py
APPLY=$GH_SOURCE_DIR/tests/helpers/cdi-apply.py
CUDA_PROBE=$(find "$GH_BUILD_DIR/tests/fake-driver" -name cuda-probe -type f -perm -u+x | head -n1)
LIBDIR=/usr/lib/x86_64-linux-gnu

bash "$GH_SOURCE_DIR/tests/fake-driver/make-root.sh" "$T/drv" >"$T/mkroot.log" 2>&1 ||
        { t_diag_file "$T/mkroot.log"; echo "Bail out! make-root.sh"; exit 1; }
"$GPU_CLI" "--root=$T/drv" cdi generate "--output=$T/ours.json" 2>"$T/gen.err" || { t_diag_file "$T/gen.err"; echo "Bail out! cdi generate"; exit 1; }
# NVIDIA's spec in its own structure: the driver in the GPU machine's layout, at its host paths
bash "$GH_SOURCE_DIR/tests/fake-driver/make-root.sh" "$T/drv-l" --layout local >"$T/mkroot.log" 2>&1 ||
        { t_diag_file "$T/mkroot.log"; echo "Bail out! make-root.sh --layout local"; exit 1; }
"$GH_PYTHON" "$GH_SOURCE_DIR/tests/helpers/nvidia-spec.py" --sample "$GH_SOURCE_DIR/tests/data/nvidia-ctk-1.18-h200.json" \
        --root "$T/drv-l" --hook "$NVHOOK" --driver-root-arg --output "$T/nv.json" ||
        { echo "Bail out! nvidia-spec.py"; exit 1; }
# the same hooks in the other order: update-ldcache first, enable-cuda-compat after it
"$GH_PYTHON" - "$T/nv.json" >"$T/nv-rev.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
h = s["containerEdits"]["hooks"]
order = {"create-symlinks": 0, "update-ldcache": 1, "enable-cuda-compat": 2, "disable-device-node-modification": 3}
h.sort(key=lambda x: order[[a for a in x["args"] if a in order][0]])
print(json.dumps(s))
EOF
t_match "$("$GH_PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["containerEdits"]["hooks"][0]["args"])' "$T/ours.json")" \
        "'--cuda-compat=580\\.95\\.05'" "our spec asks the hook to decide on CUDA compat for driver 580.95.05"
echo '{"cli": {"root": "'"$T/drv"'", "path": "'"$GPU_CLI"'"}}' >"$T/hook.json"
echo '{"cuda-compat": false, "cli": {"root": "'"$T/drv"'", "path": "'"$GPU_CLI"'"}}' >"$T/hook-off.json"

PROBE='echo "which:$(cuda-probe --which 2>&1 | tail -n1)"; echo "cache:$(check-ldconfig -p | grep -E "libcuda\.so\.1 " | head -n1 | tr -s "\t " " ")"; echo "record:$(cat /etc/ld.so.conf.d/00-compat-gpu-hook.conf 2>&1)"'
field() { printf '%s\n' "$RUN_STDOUT" | sed -n "s/^$1://p"; }

# image NAME KIND: a fresh image (Debian-like) with that compat package
image() {
        ROOTFS=$T/$1/rootfs
        make_busybox_rootfs "$ROOTFS" --glibc || { echo "Bail out! rootfs"; exit 1; }
        install -m 755 "$CUDA_PROBE" "$ROOTFS/usr/local/bin/cuda-probe"
        [ "$2" = none ] || "$GH_PYTHON" "$COMPAT" "$ROOTFS" "$2" >/dev/null || { echo "Bail out! make-compat.py $2"; exit 1; }
        make_bundle "$T/$1/bundle" "$ROOTFS" /bin/sh -c "$PROBE"
        BUNDLE=$T/$1/bundle
}
# run_hook_path NAME KIND [CONFIG]: gpu-hook as a createRuntime hook
run_hook_path() {
        image "$1" "$2"
        bundle_set_env "$BUNDLE" NVIDIA_VISIBLE_DEVICES=0 NVIDIA_DRIVER_CAPABILITIES=compute,utility
        bundle_add_hook "$BUNDLE" createRuntime "$GPU_HOOK" "--config=${3:-$T/hook.json}" createRuntime
        run_runc "$BUNDLE" "$1"
}
# run_cdi NAME KIND SPEC
run_cdi() {
        image "$1" "$2"
        "$GH_PYTHON" "$APPLY" --spec "$3" "$BUNDLE" nvidia.com/gpu=0 || { echo "Bail out! cdi-apply"; exit 1; }
        run_runc "$BUNDLE" "$1"
}
# expect DESC used|driver VERSION: which libcuda CUDA loaded
expect() {
        local desc=$1 want=$2 v=${3:-}
        t_is "$RUN_RC" 0 "$desc: container ran" || t_diag "$RUN_STDERR"
        if [ "$want" = used ]; then
                # (the host's ldconfig names the SONAME link, our writer the file)
                t_match "$(field which)" "^libcuda: /usr/local/cuda/compat/libcuda\\.so\\.(1|$v) CUDA 1[0-9]+$" \
                        "$desc: CUDA loads the image's compat libcuda.so.$v"
        else
                t_match "$(field which)" "^libcuda: ${DRIVER_LIBDIR:-$LIBDIR}/libcuda\\.so\\.1 CUDA 13000$" "$desc: CUDA loads the driver's libcuda"
        fi
}

declare -A WANT=([newer]=used [samebranch]=used [nonote]=used [older]=driver [otherbranch]=driver [badnote]=driver [none]=driver)
declare -A VERSION=([newer]=590.44.01 [samebranch]=580.105.08 [nonote]=590.44.01 [older]=575.57.08 [otherbranch]=590.44.01 [badnote]=590.44.01 [none]=-)
for kind in newer samebranch nonote older otherbranch badnote none; do
        want=${WANT[$kind]} v=${VERSION[$kind]}
        image "plan-$kind" "$kind"
        "$GPU_CLI" "--root=$T/drv" configure --dry-run --compute --utility "$ROOTFS" >"$T/plan-$kind.json" 2>"$T/err"
        used=$("$GH_PYTHON" -c 'import json,sys; c=json.load(open(sys.argv[1]))["cuda_compat"]; print(c["used"], c["reason"])' "$T/plan-$kind.json")
        t_match "$used" "^$([ "$want" = used ] && echo True || echo False) " "$kind: the plan says $([ "$want" = used ] && echo 'use' || echo 'do not use') the compat package (${used#* })"
        run_hook_path "hook-$kind" "$kind"
        expect "$kind, hook path" "$want" "$v"
        run_cdi "cdi-$kind" "$kind" "$T/ours.json"
        expect "$kind, our CDI spec" "$want" "$v"
        run_cdi "nv-$kind" "$kind" "$T/nv.json"
        DRIVER_LIBDIR=/usr/local/nvidia/lib64 expect "$kind, NVIDIA's spec (enable-cuda-compat, then update-ldcache)" "$want" "$v"
        if [ "$want" = used ]; then
                t_is "$(field record)" /usr/local/cuda/compat "$kind, NVIDIA's spec: the compat directory recorded in /etc/ld.so.conf.d"
        fi
done
t_match "$("$GH_PYTHON" -c 'import json,sys; print([e["path"] for e in json.load(open(sys.argv[1]))["ldcache"] if e["soname"] == "libnvidia-ptxjitcompiler.so.1"])' "$T/plan-newer.json")" \
        "/usr/local/cuda/compat/libnvidia-ptxjitcompiler\\.so\\.590\\.44\\.01" "newer: the package's other libraries are preferred too (libnvidia-ptxjitcompiler)"
t_match "$("$GH_PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["cuda_compat"])' "$T/plan-newer.json")" \
        "'driver_branches': \\[535, 550, 570, 575, 580, 590\\].*'cuda_version': '13.1'|'cuda_version': '13.1'.*'driver_branches': \\[535, 550, 570, 575, 580, 590\\]" \
        "newer: the plan shows the note's CUDA version and driver branches"

# the host's ldconfig (cli.ldconfig = @/sbin/ldconfig) indexes the compat directory first
echo '{"cli": {"root": "'"$T/drv"'", "path": "'"$GPU_CLI"'", "ldconfig": "@/sbin/ldconfig"}}' >"$T/hook-ldconfig.json"
for kind in newer older; do
        run_hook_path "ldconfig-$kind" "$kind" "$T/hook-ldconfig.json"
        expect "$kind, hook path with the host's ldconfig" "${WANT[$kind]}" "${VERSION[$kind]}"
done

run_cdi "nv-rev" newer "$T/nv-rev.json"
expect "newer, NVIDIA's spec with update-ldcache before enable-cuda-compat" used 590.44.01

# Turned off: --no-cuda-compat, the configuration key (hook path, our cdi-hook, nvidia-cdi-hook)
image off-plan newer
"$GPU_CLI" "--root=$T/drv" configure --dry-run --compute --no-cuda-compat "$ROOTFS" >"$T/plan-off.json"
t_is "$("$GH_PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["cuda_compat"])' "$T/plan-off.json")" None \
        "configure --no-cuda-compat: the image is not even looked at"
run_hook_path off-hook newer "$T/hook-off.json"
expect "config cuda-compat: false, hook path" driver
"$GH_PYTHON" - "$T/ours.json" "$T/hook-off.json" >"$T/ours-off.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
s["containerEdits"]["hooks"][0]["args"].append("--config=" + sys.argv[2])
print(json.dumps(s))
EOF
run_cdi off-ours newer "$T/ours-off.json"
expect "config cuda-compat: false, our cdi-hook" driver
"$GH_PYTHON" - "$T/nv.json" "$T/hook-off.json" >"$T/nv-off.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
for h in s["containerEdits"]["hooks"]:
    h["args"].insert(1, "--config=" + sys.argv[2])
print(json.dumps(s))
EOF
run_cdi off-nv newer "$T/nv-off.json"
DRIVER_LIBDIR=/usr/local/nvidia/lib64 expect "config cuda-compat: false, nvidia-cdi-hook" driver
t_is "$(field record)" "cat: can't open '/etc/ld.so.conf.d/00-compat-gpu-hook.conf': No such file or directory" "... and nothing recorded"

# NVIDIA's 1.19 flags: the compat directory elsewhere, the host's CUDA version instead of the driver's
image elsewhere none
"$GH_PYTHON" "$COMPAT" "$ROOTFS" newer --dir /opt/compat >/dev/null
"$GH_PYTHON" - "$T/nv.json" >"$T/nv-dir.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
for h in s["containerEdits"]["hooks"]:
    if "enable-cuda-compat" in h["args"]:
        h["args"] = [a for a in h["args"] if not a.startswith("--host-driver-version")] + ["--host-cuda-version=13.0", "--cuda-compat-container-root=/opt/compat"]
print(json.dumps(s))
EOF
"$GH_PYTHON" "$APPLY" --spec "$T/nv-dir.json" "$BUNDLE" nvidia.com/gpu=0
run_runc "$BUNDLE" elsewhere
t_is "$RUN_RC" 0 "--cuda-compat-container-root=/opt/compat --host-cuda-version=13.0: container ran" || t_diag "$RUN_STDERR"
t_match "$(field which)" '^libcuda: /opt/compat/libcuda\.so\.590\.44\.01 CUDA 13010$' \
        "... the note's CUDA 13.1 is newer than the host's 13.0: the compat libcuda in /opt/compat is used"
t_done
