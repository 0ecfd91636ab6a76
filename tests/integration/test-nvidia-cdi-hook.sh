#!/bin/bash
# A CDI spec in NVIDIA's format (the structure of tests/data/nvidia-ctk-1.18-h200.json, which
# nvidia-ctk 1.18 wrote on the GPU machine) for the fake driver in the GPU machine's layout, its
# hooks run by our nvidia-cdi-hook: under runc (the spec applied by tests/helpers/cdi-apply.py) and
# podman.  Every hook form (the static nvidia-cdi-hook, gpu-cli under that name, `nvidia-ctk hook`,
# `gpu-cli nvidia-cdi-hook`), every subcommand and flag, and what happens with unknown ones.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
t_need_root
t_need_cmd runc
NVHOOK=${NVIDIA_CDI_HOOK:-$GH_BUILD_DIR/cli/nvidia-cdi-hook}
SAMPLE=$GH_SOURCE_DIR/tests/data/nvidia-ctk-1.18-h200.json
GEN=$GH_SOURCE_DIR/tests/helpers/nvidia-spec.py
APPLY=$GH_SOURCE_DIR/tests/helpers/cdi-apply.py
LIB=/usr/local/nvidia/lib64
CUDA_PROBE=$(find "$GH_BUILD_DIR/tests/fake-driver" -name cuda-probe -type f -perm -u+x | head -n1)

bash "$GH_SOURCE_DIR/tests/fake-driver/make-root.sh" "$T/drv" --layout local >"$T/mkroot.log" 2>&1 ||
        { t_diag_file "$T/mkroot.log"; echo "Bail out! make-root.sh"; exit 1; }
VER=$(grep -m1 '^NVRM version:' "$T/drv/proc/driver/nvidia/version" | grep -Eo '[0-9]+\.[0-9]+\.[0-9]+' | head -n1)
BUSIDS=($(ls "$T/drv/proc/driver/nvidia/gpus" | sort))
mkdir -p "$T/bin"
ln -s "$GPU_CLI" "$T/bin/nvidia-ctk"
# gen OUTPUT [nvidia-spec.py options]: the spec for the fake driver, hooks run by the static program
gen() {
        local out=$1
        shift
        "$GH_PYTHON" "$GEN" --sample "$SAMPLE" --root "$T/drv" --driver-root-arg --output "$out" "$@"
}
gen "$T/spec.json" --hook "$NVHOOK"
json_get() { "$GH_PYTHON" -c 'import json,sys; s=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
t_is "$(json_get "$T/spec.json" '" ".join(h["args"][2] for h in s["containerEdits"]["hooks"])')" \
        "create-symlinks enable-cuda-compat update-ldcache disable-device-node-modification" \
        "the spec has NVIDIA's four createContainer hooks, in the sample's order"
t_match "$(json_get "$T/spec.json" '" ".join(m["containerPath"] for m in s["containerEdits"]["mounts"])')" \
        "/usr/local/nvidia/bin/nvidia-smi .*$LIB/libcuda\.so\.$VER " "... and mounts the driver at its own paths, as the sample does"
if cdi_can_validate; then
        t_is "$(cdi_validate "$T/spec.json")" valid "the NVIDIA-format spec validates against the official CDI schema"
else
        t_skip "the NVIDIA-format spec validates against the official CDI schema" "no CDI schema or python3-jsonschema"
fi

PROBE='
echo "smi:$(/usr/local/nvidia/bin/nvidia-smi -L 2>&1 | tr "\n" "|")"
echo "onpath:$(command -v nvidia-smi || echo none)"
echo "cuda:$(cuda-probe --which 2>&1 | tr "\n" "|")"
echo "cache:$(check-ldconfig -p 2>&1 | grep -E "libcuda\.so\.1 " | head -n1 | tr -s "\t " " ")"
echo "ldsearch:$(LD_DEBUG=libs cuda-probe 2>&1 | sed -n "/find library=libcuda.so.1/,/trying file/p" | tr -s "\t " " " | tr "\n" "|")"
echo "link:$(readlink '$LIB'/libcuda.so.1)"
echo "devlink:$(readlink '$LIB'/libcuda.so)"
echo "params:$(grep ModifyDeviceFiles /proc/driver/nvidia/params 2>&1)"
echo "gpus:$(ls /proc/driver/nvidia/gpus 2>&1 | tr "\n" ",")"
echo "profile:$(cat /etc/nvidia/nvidia-application-profiles-rc.d/10-container.conf 2>&1)"
echo "mode0:$(stat -c %a /dev/nvidia0 2>&1)"
echo "ptmx:$(stat -L -c %a /dev/ptmx 2>&1)"
echo "passwd:$(stat -c %a /etc/passwd 2>&1)"
echo "stub:$(stat -c %F '$LIB'/libcuda.so.1 2>&1)"
'
field() { printf '%s\n' "$RUN_STDOUT" | sed -n "s/^$1://p"; }
new_rootfs() {
        ROOTFS=$T/$1/rootfs
        make_busybox_rootfs "$ROOTFS" --glibc || { echo "Bail out! rootfs"; exit 1; }
        install -m 755 "$CUDA_PROBE" "$ROOTFS/usr/local/bin/cuda-probe"
}
# container NAME SPEC [DEVICE]: a fresh image, the spec's device applied to a runc bundle, run
container() {
        new_rootfs "$1"
        BUNDLE=$T/$1/bundle
        make_bundle "$BUNDLE" "$ROOTFS" /bin/sh -c "$PROBE"
        "$GH_PYTHON" "$APPLY" --spec "$2" "$BUNDLE" "${3:-nvidia.com/gpu=0}" || { echo "Bail out! cdi-apply"; exit 1; }
        run_runc "$BUNDLE" "$1"
}
# expect_gpu0 WHAT: what every form must give a container with nvidia.com/gpu=0
expect_gpu0() {
        t_is "$RUN_RC" 0 "$1: container ran" || t_diag "$RUN_STDERR"
        t_match "$(field smi)" '^GPU 0: NVIDIA H100.*\|$' "$1: nvidia-smi by its full path lists one GPU"
        t_match "$(field cuda)" "^CUDA OK: 1 device\\(s\\)\\|libcuda: $LIB/libcuda\\.so\\.1 CUDA 13000" \
                "$1: CUDA loads the driver's libcuda.so.1 from $LIB and sees one GPU"
        t_match "$(field cache)" "libcuda\\.so\\.1 \\(libc6,x86-64\\) => $LIB/libcuda\\.so\\.1" \
                "$1: the container's ld.so.cache resolves libcuda.so.1"
        t_is "$(field params)" "ModifyDeviceFiles: 0" "$1: /proc/driver/nvidia/params is masked"
        t_is "$(field gpus)" "${BUSIDS[0]}," "$1: /proc/driver/nvidia/gpus shows GPU 0 only"
        t_is "$(field link)" "libcuda.so.$VER" "$1: create-symlinks made the SONAME link"
}

snapshot_host() { { cksum </etc/ld.so.cache; ls -la /usr/local/nvidia 2>&1; ls -A /etc/ld.so.conf.d; } 2>&1; }
snapshot_host >"$T/host.before"
host_mountinfo_snapshot "$T/mounts.before"

# ---------------------------------------------------------------------------------------------
# runc, every form of the hook's command line

container static "$T/spec.json"
expect_gpu0 "nvidia-cdi-hook (static)"
t_match "$(field ldsearch)" "search cache=/etc/ld\\.so\\.cache\\| *[0-9]*: *trying file=$LIB/libcuda\\.so\\.1" \
        "nvidia-cdi-hook: the loader finds libcuda.so.1 through the ld cache, not a search path"
t_is "$(field onpath)" none "as in NVIDIA's spec, nvidia-smi is not on the container's PATH (its host path)"
t_is "$(field devlink)" "libcuda.so.1" "the development link libcuda.so -> libcuda.so.1"
t_not "the image's /sbin/ldconfig never ran" ldconfig_ran "$ROOTFS"
t_is "$(file -b "$NVHOOK" | grep -o 'static-pie linked')" "static-pie linked" \
        "nvidia-cdi-hook is a static program (no dynamic loader to read LD_PRELOAD)"

gen "$T/spec-cli.json" --hook "$GPU_CLI"
container cli "$T/spec-cli.json"
expect_gpu0 "gpu-cli with args[0] nvidia-cdi-hook"

gen "$T/spec-ctk.json" --hook "$T/bin/nvidia-ctk" --ctk
t_is "$(json_get "$T/spec-ctk.json" 's["containerEdits"]["hooks"][0]["args"][:2]')" "['nvidia-ctk', 'hook']" \
        "the older specs' form: nvidia-ctk hook SUBCOMMAND"
container ctk "$T/spec-ctk.json"
expect_gpu0 "nvidia-ctk hook (a link named nvidia-ctk to gpu-cli)"

"$GH_PYTHON" - "$T/spec.json" "$GPU_CLI" "$T/drv" >"$T/spec-sub.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
for h in s["containerEdits"]["hooks"]:
    h["path"] = sys.argv[2]
    h["args"] = ["gpu-cli", "--root=" + sys.argv[3], "nvidia-cdi-hook"] + h["args"][2:]
print(json.dumps(s))
EOF
t_is "$(json_get "$T/spec-sub.json" 's["containerEdits"]["hooks"][0]["args"][:4]')" \
        "['gpu-cli', '--root=$T/drv', 'nvidia-cdi-hook', 'create-symlinks']" "the gpu-cli nvidia-cdi-hook form"
container sub "$T/spec-sub.json"
expect_gpu0 "gpu-cli nvidia-cdi-hook SUBCOMMAND"

container all "$T/spec.json" nvidia.com/gpu=all
t_is "$RUN_RC" 0 "nvidia.com/gpu=all: container ran" || t_diag "$RUN_STDERR"
t_is "$(field smi | tr '|' '\n' | grep -c '^GPU ')" 2 "=all: nvidia-smi lists both GPUs"
t_is "$(field gpus)" "${BUSIDS[0]},${BUSIDS[1]}," "=all: /proc/driver/nvidia/gpus shows both"

# ---------------------------------------------------------------------------------------------
# The subcommands NVIDIA's 1.18 spec does not use, and the flags

# add_hooks SPEC OUT ARGS-JSON...: SPEC with more createContainer hooks (args after the program name)
add_hooks() {
        local spec=$1 out=$2
        shift 2
        "$GH_PYTHON" - "$spec" "$NVHOOK" "$T/drv" "$@" >"$out" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
for a in sys.argv[4:]:
    s["containerEdits"]["hooks"].append({"hookName": "createContainer", "path": sys.argv[2],
        "args": ["nvidia-cdi-hook", "--driver-root=" + sys.argv[3]] + json.loads(a), "env": ["NVIDIA_CTK_DEBUG=false"]})
print(json.dumps(s))
EOF
}
add_hooks "$T/spec.json" "$T/spec-more.json" '["update-application-profile"]' \
        '["chmod", "--mode", "600", "--path", "/dev/nvidia0", "--path", "/dev/ptmx", "--path", "/etc/passwd", "--path", "/dev/nothing"]' \
        '["noop"]' '["a-hook-from-the-future", "--with", "flags"]' \
        '["update-ldcache", "--folder", "/usr/local/nvidia/lib64", "--ldconfig-path", "/no/such/ldconfig", "--a-new-flag", "x"]' \
        '["-d", "--quiet=false", "create-symlinks", "-link=libcuda.so.'"$VER"'::/opt/go-style/libcuda.so.1"]'
container more "$T/spec-more.json"
t_is "$RUN_RC" 0 "every subcommand, an unknown one and an unknown flag: the container starts" || t_diag "$RUN_STDERR"
t_is "$(field profile)" \
        '{"profiles":[{"name":"_container_","settings":["EGLVisibleDGPUDevices",0x1]}],"rules":[{"pattern":[],"profile":"_container_"}]}' \
        "update-application-profile: EGL and Vulkan limited to /dev/nvidia0 (bit 0)"
t_is "$(field mode0)" 600 "chmod --mode 600 --path /dev/nvidia0: changed"
t_is "$(field ptmx)" 666 "chmod: /dev/ptmx leads to devpts, another file system: left alone"
t_is "$(field passwd)" 644 "chmod: /etc/passwd is not under /dev: left alone"
t_match "$(field cache)" "=> $LIB/libcuda\\.so\\.1" "update-ldcache with --ldconfig-path and an unknown flag: the cache is written"
t_not "... and no ldconfig ran" ldconfig_ran "$ROOTFS"
t_is "$(readlink "$ROOTFS/opt/go-style/libcuda.so.1")" "libcuda.so.$VER" "Go-style flags (-link=, -d, --quiet=false) are read"
container more-all "$T/spec-more.json" nvidia.com/gpu=all
t_match "$(field profile)" '"EGLVisibleDGPUDevices",0x3\]' "=all: the profile names both GPUs (0x3)"

# create-symlinks replaces a file or another link at LINK (the image's stub libcuda.so.1)
new_rootfs stub
mkdir -p "$ROOTFS$LIB" && echo "a stub" >"$ROOTFS$LIB/libcuda.so.1" && ln -s /nowhere "$ROOTFS$LIB/libcuda.so"
make_bundle "$T/stub/bundle" "$ROOTFS" /bin/sh -c "$PROBE"
"$GH_PYTHON" "$APPLY" --spec "$T/spec.json" "$T/stub/bundle" nvidia.com/gpu=0
run_runc "$T/stub/bundle" stub
t_is "$(field link)" "libcuda.so.$VER" "create-symlinks: the image's regular file libcuda.so.1 is replaced by the link"
t_is "$(field devlink)" "libcuda.so.1" "create-symlinks: the image's other link libcuda.so is replaced"
t_match "$(field cuda)" '^CUDA OK: 1 device' "... and CUDA works"

# --container-spec FILE: the state from a file; --debug: debug lines on stderr (a wrapper keeps them)
cat >"$T/bin/wrap" <<EOF
#!/bin/bash
cat >"$T/state.json"
exec -a nvidia-cdi-hook "$NVHOOK" "\$@" --container-spec "$T/state.json" </dev/null 2>>"$T/hook.stderr"
EOF
chmod 755 "$T/bin/wrap"
"$GH_PYTHON" - "$T/spec.json" "$T/bin/wrap" "$T/drv" >"$T/spec-wrap.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
s["containerEdits"]["hooks"] = [{"hookName": "createContainer", "path": sys.argv[2],
    "args": ["wrap", "--debug", "--driver-root=" + sys.argv[3], "disable-device-node-modification"],
    "env": ["NVIDIA_CTK_DEBUG=false"]}]
print(json.dumps(s))
EOF
container wrap "$T/spec-wrap.json"
t_is "$(field params)" "ModifyDeviceFiles: 0" "--container-spec FILE: the state read from the file; params masked"
t_match "$(cat "$T/hook.stderr" 2>&1)" 'nvidia-cdi-hook: cdi-hook: .*/proc/driver/nvidia masked' "--debug: debug lines on stderr"

# create-soname-symlinks (ldconfig -n -N, without ldconfig): the SONAME links of a folder's libraries
new_rootfs soname
mkdir -p "$ROOTFS/opt/sl" "$ROOTFS/opt/sl2"
cp "$T/drv$LIB/libcuda.so.$VER" "$T/drv$LIB/libnvidia-ml.so.$VER" "$ROOTFS/opt/sl/"
cp "$T/drv$LIB/libnvidia-cfg.so.$VER" "$ROOTFS/opt/sl2/"
echo "the image's own file" >"$ROOTFS/opt/sl/libnvidia-ml.so.1"
ln -s libcuda.so.0.stale "$ROOTFS/opt/sl2/libcuda.so.9"
make_bundle "$T/soname/bundle" "$ROOTFS" /bin/sh -c "$PROBE"
add_hooks "$T/spec.json" "$T/spec-soname.json" \
        '["create-soname-symlinks", "--folder", "/opt/sl", "--folder=/opt/./sl2/", "--ldconfig-path", "/sbin/ldconfig"]'
"$GH_PYTHON" "$APPLY" --spec "$T/spec-soname.json" "$T/soname/bundle" nvidia.com/gpu=0
run_runc "$T/soname/bundle" soname
t_is "$RUN_RC" 0 "create-soname-symlinks: the container starts" || t_diag "$RUN_STDERR"
t_is "$(readlink "$ROOTFS/opt/sl/libcuda.so.1")" "libcuda.so.$VER" "create-soname-symlinks: libcuda.so.1 -> libcuda.so.$VER beside it"
t_is "$(readlink "$ROOTFS/opt/sl2/libnvidia-cfg.so.1")" "libnvidia-cfg.so.$VER" "... in every --folder (written with ./ and a trailing /)"
t_is "$(cat "$ROOTFS/opt/sl/libnvidia-ml.so.1")" "the image's own file" "... a file of the image at the SONAME's name is left alone"
t_is "$(readlink "$ROOTFS/opt/sl2/libcuda.so.9")" "libcuda.so.0.stale" "... a link that no library's SONAME names is not touched"
t_not "... and no ldconfig ran" ldconfig_ran "$ROOTFS"
t_is "$(ls "$ROOTFS/opt/sl" | tr '\n' ' ')" "libcuda.so.1 libcuda.so.$VER libnvidia-ml.so.1 libnvidia-ml.so.$VER " "... and nothing else was made"

# ---------------------------------------------------------------------------------------------
# check-requirements: the image's NVIDIA_REQUIRE_* against the (fake) driver: CUDA 13.0, driver
# $VER, two H100s (compute capability 9.0)

# req_container NAME DEVICE VAR=VALUE...: a container of spec-req.json whose image has those variables
req_container() {
        local name=$1 dev=$2
        shift 2
        new_rootfs "$name"
        BUNDLE=$T/$name/bundle
        make_bundle "$BUNDLE" "$ROOTFS" /bin/sh -c "$PROBE"
        bundle_set_env "$BUNDLE" "$@"
        "$GH_PYTHON" "$APPLY" --spec "$T/spec-req.json" "$BUNDLE" "$dev" || { echo "Bail out! cdi-apply"; exit 1; }
        run_runc "$BUNDLE" "$name"
}
add_hooks "$T/spec.json" "$T/spec-req.json" '["check-requirements"]'
req_container req-ok nvidia.com/gpu=0 "NVIDIA_REQUIRE_CUDA=cuda>=12.0 brand=tesla,driver>=999"
expect_gpu0 "check-requirements, cuda>=12.0 met"
req_container req-unmet nvidia.com/gpu=0 "NVIDIA_REQUIRE_CUDA=cuda>=13.1"
t_not "check-requirements, cuda>=13.1 on a CUDA 13.0 driver: the container is refused" test "$RUN_RC" -eq 0
t_match "$RUN_STDERR" "requirement 'cuda>=13\\.1' not met: the driver supports CUDA 13\\.0; update the NVIDIA driver" \
        "... with the requirement and the fix in the runtime's error"
t_is "$(field smi)" "" "... and nothing of it ran"
req_container req-disabled nvidia.com/gpu=0 "NVIDIA_REQUIRE_CUDA=cuda>=13.1" "NVIDIA_DISABLE_REQUIRE=true"
t_is "$RUN_RC" 0 "NVIDIA_DISABLE_REQUIRE=true: the unmet requirement is not checked" || t_diag "$RUN_STDERR"
req_container req-legacy nvidia.com/gpu=0 "CUDA_VERSION=13.2.0"
t_not "a legacy image (CUDA_VERSION=13.2.0, no NVIDIA_REQUIRE_CUDA) requires cuda>=13.2: refused" test "$RUN_RC" -eq 0
t_match "$RUN_STDERR" "requirement 'cuda>=13\\.2' not met" "... naming cuda>=13.2"
req_container req-arch nvidia.com/gpu=1 "NVIDIA_REQUIRE_ARCH=arch>=10.0"
t_match "$RUN_STDERR" "requirement 'arch>=10\\.0' not met on GPU 1 \\(NVIDIA H100" \
        "arch>=10.0 with nvidia.com/gpu=1: refused on the container's GPU, GPU 1, named"

# By hand: the check reads config.json and writes nothing, so a state file is enough.
mkdir -p "$T/rq/rootfs"
rq_state() {
        "$GH_PYTHON" - "$T/rq" "$@" <<'EOF'
import json, sys
b, env = sys.argv[1], sys.argv[2:]
json.dump({"ociVersion": "1.0.2", "process": {"args": ["/bin/true"], "env": env}, "root": {"path": "rootfs"},
           "linux": {"devices": [{"path": "/dev/nvidia1", "type": "c", "major": 195, "minor": 1}]}},
          open(b + "/config.json", "w"))
json.dump({"ociVersion": "1.0.2", "id": "rq", "status": "creating", "pid": 1, "bundle": b}, open(b + "/state.json", "w"))
EOF
}
# rq PROGRAM [ARGS...]: check-requirements of $T/rq, stderr in $T/rq.err
rq() {
        "$@" check-requirements --driver-root="$T/drv" --container-spec="$T/rq/state.json" </dev/null >/dev/null 2>"$T/rq.err"
}
rq_state "NVIDIA_REQUIRE_CUDA=cuda>=12.0"
t_ok "check-requirements by hand, cuda>=12.0: exit 0" rq "$NVHOOK"
rq_state "NVIDIA_REQUIRE_DRIVER=driver>=600"
rq "$NVHOOK"
t_is "$?" 1 "driver>=600 on a $VER driver: exit 1"
t_match "$(cat "$T/rq.err")" "^nvidia-cdi-hook: check-requirements: requirement 'driver>=600' not met: the host's NVIDIA driver is $VER" \
        "... one line naming the requirement and the driver"
rq_state "NVIDIA_REQUIRE_BRAND=brand=geforce"
rq "$NVHOOK"
t_match "$?:$(cat "$T/rq.err")" "^1:.*'brand=geforce' not met on GPU 1 " "brand=geforce: refused for the container's GPU (1)"
rq_state "NVIDIA_REQUIRE_X=cuda>>12"
rq "$NVHOOK"
t_match "$?:$(cat "$T/rq.err")" "^1:.*NVIDIA_REQUIRE_X: invalid expression 'cuda>>12'" \
        "a malformed requirement: exit 1 naming the variable"
rq_state "CUDA_VERSION=eleven"
rq "$NVHOOK"
t_match "$?:$(cat "$T/rq.err")" "^1:.*CUDA_VERSION" "a malformed legacy CUDA_VERSION: exit 1 naming it"
rq_state "PATH=/bin"
t_ok "no requirement: exit 0" rq "$NVHOOK"
rq_state "NVIDIA_REQUIRE_CUDA=cuda>=99" "NVIDIA_DISABLE_REQUIRE=1"
t_ok "NVIDIA_DISABLE_REQUIRE=1: exit 0" rq "$NVHOOK"
rq_state "NVIDIA_REQUIRE_CUDA=cuda>=99"
echo '{"disable-require": true}' >"$T/rq-config.json"
t_ok "disable-require in gpu-hook's configuration (--config): exit 0" rq "$NVHOOK" --config="$T/rq-config.json"
t_ok "gpu-cli under the name nvidia-cdi-hook: the same (disable-require: passes)" \
        rq "$GPU_CLI" nvidia-cdi-hook --config="$T/rq-config.json"
rq "$GPU_CLI" nvidia-cdi-hook
t_match "$?:$(cat "$T/rq.err")" "^1:.*'cuda>=99' not met" "gpu-cli nvidia-cdi-hook check-requirements: refused the same way"

# The static program loads no driver library: a cache miss goes to gpu-cli, a hit answers here.
rq_state "NVIDIA_REQUIRE_ARCH=arch>=9.0"
rq "$NVHOOK" --debug
t_match "$?:$(grep -c 'asking the driver through .*/gpu-cli' "$T/rq.err")" "^0:1$" \
        "static nvidia-cdi-hook, no driver-state cache: the check is handed to gpu-cli, and passes"
"$GPU_CLI" --root="$T/drv" --state-file="$T/rq-cache.json" cache refresh >/dev/null 2>&1 || t_diag "cache refresh failed"
rq "$NVHOOK" --debug --state-file="$T/rq-cache.json"
t_match "$?:$(grep -c 'asking the driver through' "$T/rq.err"):$(grep -c '1 met' "$T/rq.err")" "^0:0:1$" \
        "with a warm driver-state cache (--state-file): answered in the static program, no gpu-cli"
rq_state "NVIDIA_REQUIRE_ARCH=arch>=9.1"
rq "$NVHOOK" --state-file="$T/rq-cache.json"
t_match "$?:$(cat "$T/rq.err")" "^1:.*'arch>=9\\.1' not met on GPU 1" "... and refuses from the cache as well"
rm -f "$T/rq-cache.json"

# NVML failing (a hook under the container's device rules can meet that): cuda and driver are still
# checked, from libcuda and /proc; arch and brand pass with a warning.
echo error >"$T/drv/etc/fake-nvml-mode"
rq_state "NVIDIA_REQUIRE_CUDA=cuda>=12.0,brand=nvidia"
rq "$NVHOOK"
t_match "$?:$(cat "$T/rq.err")" "^0:.*warning: check-requirements: .*; arch and brand conditions are not checked" \
        "NVML failing: cuda>=12.0,brand=nvidia passes on the CUDA version, with a warning"
rq_state "NVIDIA_REQUIRE_CUDA=cuda>=13.1,brand=nvidia"
rq "$NVHOOK"
t_match "$?:$(tail -n 1 "$T/rq.err")" "^1:.*'cuda>=13\\.1,brand=nvidia' not met \\('cuda>=13\\.1' is false\\)" \
        "NVML failing: cuda>=13.1 is still refused"
rm -f "$T/drv/etc/fake-nvml-mode"

# ---------------------------------------------------------------------------------------------
# The command line alone (nothing here reads a state)

out=$("$NVHOOK" a-hook-from-the-future --x 1 </dev/null 2>&1)
t_is "$?" 0 "an unknown subcommand: exit 0"
t_match "$out" "warning: unsupported CDI hook 'a-hook-from-the-future'" "... with a warning on stderr"
out=$("$NVHOOK" 2>&1)
t_is "$?.$out" "0.nvidia-cdi-hook: warning: no CDI hook specified; nothing done" "no subcommand: a warning, exit 0"
out=$("$NVHOOK" --some-global-flag noop 2>&1)
t_is "$?" 0 "an unknown global flag: exit 0"
t_match "$out" "unknown flag --some-global-flag" "... warned about"
t_is "$("$NVHOOK" --quiet noop --bogus 2>&1)" "" "--quiet: the unknown-flag warning is not printed"
t_match "$("$NVHOOK" --version)" "^nvidia-cdi-hook version [0-9]" "--version"
t_match "$("$NVHOOK" -v)" "^nvidia-cdi-hook version [0-9]" "-v"
t_match "$("$NVHOOK" --help)" "update-application-profile" "--help lists the subcommands"
t_match "$("$NVHOOK" update-ldcache --help)" "--folder=DIR" "SUBCOMMAND --help lists its flags"
"$NVHOOK" create-symlinks --link no-separator </dev/null >/dev/null 2>"$T/err"
t_is "$?" 1 "create-symlinks --link without :: fails (exit 1)"
t_match "$(cat "$T/err")" "invalid --link 'no-separator'" "... naming the argument"
"$NVHOOK" chmod --path /dev/x </dev/null >/dev/null 2>"$T/err"
t_is "$?" 1 "chmod without --mode fails"
"$NVHOOK" chmod --mode 9 --path /dev/x </dev/null >/dev/null 2>"$T/err"
t_is "$?" 1 "chmod with a mode that is not octal fails"
t_ok "enable-cuda-compat without a host version: nothing to do, exit 0 (no state read)" "$NVHOOK" enable-cuda-compat
t_ok "noop: exit 0" "$NVHOOK" noop
t_ok "gpu-cli nvidia-cdi-hook noop" "$GPU_CLI" nvidia-cdi-hook noop
t_match "$("$T/bin/nvidia-ctk" hook --help 2>&1)" "nvidia-ctk \\[--debug\\] hook SUBCOMMAND" "nvidia-ctk hook --help"
"$T/bin/nvidia-ctk" cdi generate >/dev/null 2>"$T/err"
t_is "$?" 2 "nvidia-ctk cdi generate (not a hook): a usage error"
t_match "$(cat "$T/err")" "answers only 'nvidia-ctk hook" "... saying what this program answers"
echo '{"ociVersion":"1.0.2","id":"x","status":"creating","pid":'$$',"bundle":"'"$T/static/bundle"'"}' >"$T/forged.json"
"$NVHOOK" create-symlinks --link "x::$LIB/evil" <"$T/forged.json" >/dev/null 2>"$T/err"
t_is "$?" 1 "run by hand outside a container (a forged state): exit 1"
t_match "$(cat "$T/err")" "not in the container's mount namespace" "... refused like cdi-hook"
t_not "... nothing created" test -L "$T/static/rootfs$LIB/evil"

# ---------------------------------------------------------------------------------------------
# podman

if have_cmd podman; then
        cdi_install "$T/spec-more.json" nvidia-format.json || { echo "Bail out! cannot install the spec"; exit 1; }
        new_rootfs podman
        run_podman "$ROOTFS" "" --device nvidia.com/gpu=0 -- /bin/sh -c "$PROBE"
        expect_gpu0 "podman --device nvidia.com/gpu=0"
        t_match "$(field profile)" '"EGLVisibleDGPUDevices",0x1\]' "podman: the application profile"
        new_rootfs podman-all
        run_podman "$ROOTFS" "" --device nvidia.com/gpu=all -- /bin/sh -c "$PROBE"
        t_is "$RUN_RC" 0 "podman --device nvidia.com/gpu=all: container ran" || t_diag "$RUN_STDERR"
        t_is "$(field smi | tr '|' '\n' | grep -c '^GPU ')" 2 "podman =all: both GPUs"
        _gh_cdi_restore
else
        t_skip "podman with the NVIDIA-format spec" "podman is not installed"
fi

t_is "$(snapshot_host)" "$(cat "$T/host.before")" "the host's ld cache, /usr/local/nvidia and /etc/ld.so.conf.d are unchanged"
mountinfo_unchanged "host mount table unchanged" "$T/mounts.before"
t_done
