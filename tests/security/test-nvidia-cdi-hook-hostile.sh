#!/bin/bash
# Hostile images through every nvidia-cdi-hook subcommand (docs/nvidia-cdi-hook.md, docs/threat-model.md):
# an NVIDIA-format spec for the fake driver applied to runc bundles (tests/helpers/cdi-apply.py),
# images whose library folder, link names, compat libraries, ld.so.conf.d and application profile
# directory lead out of the rootfs, and LD_PRELOAD / LD_LIBRARY_PATH in the image's environment
# and in the hook's (runc gives a hook without an `env` the container's variables and its rootfs as
# working directory: CVE-2025-23266).  Each container must start or fail cleanly, nothing outside
# the rootfs may change, and nothing of the image may run in the hook.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
t_need_root
t_need_cmd runc
t_need_cmd cc
NVHOOK=${NVIDIA_CDI_HOOK:-$GH_BUILD_DIR/cli/nvidia-cdi-hook}
APPLY=$GH_SOURCE_DIR/tests/helpers/cdi-apply.py
COMPAT=$GH_SOURCE_DIR/tests/fake-driver/make-compat.py
LIB=/usr/local/nvidia/lib64
CUDA_PROBE=$(find "$GH_BUILD_DIR/tests/fake-driver" -name cuda-probe -type f -perm -u+x | head -n1)

bash "$GH_SOURCE_DIR/tests/fake-driver/make-root.sh" "$T/drv" --layout local >"$T/mkroot.log" 2>&1 ||
        { t_diag_file "$T/mkroot.log"; echo "Bail out! make-root.sh"; exit 1; }
gen() {
        local out=$1
        shift
        "$GH_PYTHON" "$GH_SOURCE_DIR/tests/helpers/nvidia-spec.py" --sample "$GH_SOURCE_DIR/tests/data/nvidia-ctk-1.18-h200.json" \
                --root "$T/drv" --hook "$NVHOOK" --driver-root-arg --output "$out" "$@" || { echo "Bail out! nvidia-spec.py"; exit 1; }
}
gen "$T/spec.json"
# more HOOK-ARGS-JSON... : the spec with more hooks of ours (args after the program name)
more() {
        local out=$1
        shift
        "$GH_PYTHON" - "$T/spec.json" "$NVHOOK" "$T/drv" "$@" >"$out" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
for a in sys.argv[4:]:
    s["containerEdits"]["hooks"].append({"hookName": "createContainer", "path": sys.argv[2],
        "args": ["nvidia-cdi-hook", "--driver-root=" + sys.argv[3]] + json.loads(a), "env": ["NVIDIA_CTK_DEBUG=false"]})
print(json.dumps(s))
EOF
}

# The host's files an image tries to reach.
HOST=$T/host
mkdir -p "$HOST/lib" "$HOST/linkdir" "$HOST/etc-nvidia" "$HOST/confd" "$HOST/decoy"
"$GH_PYTHON" "$COMPAT" "$HOST/pkg" newer --dir /c >/dev/null || { echo "Bail out! make-compat.py"; exit 1; }
cp "$HOST/pkg/c/libcuda.so.590.44.01" "$HOST/lib/libcuda.so.590.44.01"  # a newer libcuda on the host
cp "$HOST/pkg/c/libcuda.so.590.44.01" "$HOST/lib/libevil.so.1"          # a library no image may index
"$GH_PYTHON" "$COMPAT" "$HOST/decoy" newer >/dev/null                    # a newer package under a host process's root
cp "$BUSYBOX" "$HOST/decoy/busybox" && chmod 755 "$HOST/decoy/busybox"  # ... which runs there (3.)
snapshot_host() {
        { find "$HOST" -printf '%p %y %m %s %l\n' | sort; find "$HOST" -type f -exec cksum {} + | sort;
          cksum </etc/ld.so.cache; ls -A /etc/ld.so.conf.d /etc/nvidia 2>&1; } 2>&1
}
snapshot_host >"$T/host.before"
host_mountinfo_snapshot "$T/mounts.before"

PROBE='
echo "cuda:$(cuda-probe --which 2>&1 | tail -n1)"
echo "cache:$(check-ldconfig -p 2>&1 | grep -E "libcuda\.so\.1 |libevil" | tr -s "\t " " " | tr "\n" "|")"
echo "params:$(grep ModifyDeviceFiles /proc/driver/nvidia/params 2>&1)"
echo "profile:$(cat /etc/nvidia/nvidia-application-profiles-rc.d/10-container.conf 2>&1 | head -c 200)"
'
field() { printf '%s\n' "$RUN_STDOUT" | sed -n "s/^$1://p"; }
# container NAME: a fresh image in $ROOTFS and its bundle in $BUNDLE; run_it SPEC [NAME]
container() {
        ROOTFS=$T/$1/rootfs
        BUNDLE=$T/$1/bundle
        NAME=$1
        make_busybox_rootfs "$ROOTFS" --glibc || { echo "Bail out! rootfs"; exit 1; }
        install -m 755 "$CUDA_PROBE" "$ROOTFS/usr/local/bin/cuda-probe"
        make_bundle "$BUNDLE" "$ROOTFS" /bin/sh -c "$PROBE"
}
run_it() {
        "$GH_PYTHON" "$APPLY" --spec "$1" "$BUNDLE" nvidia.com/gpu=0 || { echo "Bail out! cdi-apply"; exit 1; }
        run_runc "$BUNDLE" "$NAME"
}
driver_cuda() {
        t_match "$(field cuda)" "^libcuda: $LIB/libcuda\\.so\\.1 CUDA 13000$" "$1: CUDA loads the driver's libcuda, nothing of the host's or the image's"
}

# 1. update-ldcache --folder: the folder is a link out of the root; a folder spelt with ../ out of it
container folder
mkdir -p "$ROOTFS/usr/local/nvidia" && ln -s "$HOST/lib" "$ROOTFS$LIB"
more "$T/spec-folder.json" '["update-ldcache", "--folder", "/../../../../../..'"$HOST"'/lib", "--folder", "'"$HOST"'/lib"]'
run_it "$T/spec-folder.json"
t_is "$RUN_RC" 0 "--folder whose directory is a link to a host directory: the container ran (inside its own root)" || t_diag "$RUN_STDERR"
t_nomatch "$(field cache)" 'libevil' "... the host directory's libraries are in no ld cache entry (also with --folder /../..$HOST/lib)"
# the folder resolved inside the root: the driver's own files the runtime mounted there
t_match "$(field cuda)" "^libcuda: $HOST/lib/libcuda\\.so\\.1 CUDA 13000$" \
        "... CUDA loads the driver's libcuda the runtime mounted there (a path inside the container; normalised)"

# 2. create-symlinks: link names through an image link out of the root and through ../; a target naming a host file
container links
mkdir -p "$ROOTFS/opt" && ln -s "$HOST/linkdir" "$ROOTFS/opt/out"
more "$T/spec-links.json" '["create-symlinks", "--link", "x::/opt/out/evil", "--link", "x::/../../../../..'"$HOST"'/linkdir/evil2", "--link", "'"$HOST"'/lib/libevil.so.1::'"$LIB"'/libevil.so.1"]' \
        '["update-ldcache", "--folder", "'"$LIB"'"]'
run_it "$T/spec-links.json"
t_is "$RUN_RC" 0 "link names leading out of the root: the container ran" || t_diag "$RUN_STDERR"
t_is "$(ls -A "$HOST/linkdir")" "" "... no link was made in the host directory"
t_is "$(readlink "$ROOTFS$HOST/linkdir/evil")" x "... the link through /opt/out was made inside the root"
t_is "$(readlink "$ROOTFS$LIB/libevil.so.1")" "$HOST/lib/libevil.so.1" "a link whose target names a host file is made as written (a string, never followed)"
t_nomatch "$(field cache)" 'libevil' "... and update-ldcache does not index the host file it names"

# 3. enable-cuda-compat with hostile compat libraries: a link out, a link inside the image, a directory,
# a path into /proc/PID/root (a host process whose root holds a newer package), two libraries
chroot "$HOST/decoy" /busybox sleep 300 &
DECOY=$!
for kind in link-out link-in directory proc-root two; do
        container "compat-$kind"
        "$GH_PYTHON" "$COMPAT" "$ROOTFS" "$kind" --host-file "$HOST/lib/libcuda.so.590.44.01" --pid "$DECOY" >/dev/null ||
                { echo "Bail out! make-compat.py $kind"; exit 1; }
        run_it "$T/spec.json"
        t_is "$RUN_RC" 0 "compat library ($kind): the container ran" || t_diag "$RUN_STDERR"
        driver_cuda "compat library ($kind)"
        t_not "compat library ($kind): nothing recorded in the image's ld.so.conf.d" test -e "$ROOTFS/etc/ld.so.conf.d/00-compat-gpu-hook.conf"
        # the hook path decides the same, on the host side (gpu-cli configure --dry-run reads the image there)
        t_match "$("$GPU_CLI" "--root=$T/drv" configure --dry-run --compute "$ROOTFS" 2>/dev/null | "$GH_PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["cuda_compat"]["used"])')" \
                '^False$' "compat library ($kind): the hook path's plan does not use it either"
done
kill "$DECOY" 2>/dev/null
wait "$DECOY" 2>/dev/null

# 4. a forged record in the image (00-compat-gpu-hook.conf naming a directory whose libcuda is a link
# out) and /etc/ld.so.conf.d a link to a host directory
container record
mkdir -p "$ROOTFS/opt/forged"
ln -s "$HOST/lib/libcuda.so.590.44.01" "$ROOTFS/opt/forged/libcuda.so.590.44.01"
rm -rf "$ROOTFS/etc/ld.so.conf.d" && ln -s "$HOST/confd" "$ROOTFS/etc/ld.so.conf.d"
mkdir -p "$ROOTFS$HOST/confd" && echo /opt/forged >"$ROOTFS$HOST/confd/00-compat-gpu-hook.conf"
"$GH_PYTHON" "$COMPAT" "$ROOTFS" newer >/dev/null
run_it "$T/spec.json"
t_is "$RUN_RC" 0 "a forged compat record and ld.so.conf.d -> a host directory: the container ran" || t_diag "$RUN_STDERR"
t_match "$(field cuda)" '^libcuda: /usr/local/cuda/compat/libcuda\.so\.590\.44\.01 CUDA 13010$' \
        "... the genuine compat package wins (enable-cuda-compat records its own directory, inside the root)"
t_is "$(ls -A "$HOST/confd")" "" "... nothing written to the host directory"

# 5. update-application-profile: /etc/nvidia is a link to a host directory
container profile
ln -s "$HOST/etc-nvidia" "$ROOTFS/etc/nvidia"
more "$T/spec-profile.json" '["update-application-profile"]'
run_it "$T/spec-profile.json"
t_is "$RUN_RC" 0 "/etc/nvidia -> a host directory: the container ran" || t_diag "$RUN_STDERR"
t_match "$(field profile)" 'EGLVisibleDGPUDevices' "... the profile is written, inside the root"
t_is "$(ls -A "$HOST/etc-nvidia")" "" "... and nothing in the host directory"

# 6. chmod through ../ to a file of the image, and to a host path
container chmod
more "$T/spec-chmod.json" '["chmod", "--mode", "777", "--path", "/dev/../etc/passwd", "--path", "/dev/../../../..'"$HOST"'/lib"]'
run_it "$T/spec-chmod.json"
t_is "$RUN_RC" 0 "chmod with paths through ../: the container ran" || t_diag "$RUN_STDERR"
t_is "$(stat -c %a "$ROOTFS/etc/passwd")" 644 "... /dev/../etc/passwd is left alone"

# 7. LD_PRELOAD and LD_LIBRARY_PATH in the image's environment, with hooks that have no env of their
# own (runc hands them the container's variables, cwd = rootfs): the payload writes a host marker
cat >"$T/payload.c" <<EOF
#include <fcntl.h>
#include <unistd.h>
__attribute__((constructor)) static void run(void)
{
        int fd = open("$HOST/../preload-ran", O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) { write(fd, "ran\n", 4); close(fd); }
}
EOF
cc -shared -fPIC -o "$T/payload.so" "$T/payload.c" || { echo "Bail out! cannot build the payload"; exit 1; }
preload_image() {
        container "$1"
        cp "$T/payload.so" "$ROOTFS/x.so"
        mkdir -p "$ROOTFS/evil" && cp "$T/payload.so" "$ROOTFS/evil/libc.so.6"
        bundle_set_env "$BUNDLE" LD_PRELOAD=/proc/self/cwd/x.so
        # a libc.so.6 that is the payload would only crash the control program: not for it
        [ "$1" = control ] || bundle_set_env "$BUNDLE" LD_LIBRARY_PATH=/proc/self/cwd/evil
}
rm -f "$T/preload-ran"
# control: a dynamically linked program as such a hook runs the image's payload (the attack is real here)
preload_image control
"$GH_PYTHON" - "$BUNDLE/config.json" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
c.setdefault("hooks", {})["createContainer"] = [{"path": "/bin/true", "args": ["true"]}]
json.dump(c, open(sys.argv[1], "w"))
EOF
run_runc "$BUNDLE" control
t_ok "control: a dynamically linked hook without env loads the image's LD_PRELOAD payload" test -s "$T/preload-ran"
rm -f "$T/preload-ran"
gen "$T/spec-noenv.json" --no-env
t_is "$("$GH_PYTHON" -c 'import json,sys; print(sum("env" in h for h in json.load(open(sys.argv[1]))["containerEdits"]["hooks"]))' "$T/spec-noenv.json")" 0 \
        "a spec whose hooks have no env"
preload_image noenv
run_it "$T/spec-noenv.json"
t_is "$RUN_RC" 0 "image LD_PRELOAD=/proc/self/cwd/x.so and LD_LIBRARY_PATH, hooks without env: the container ran" || t_diag "$RUN_STDERR"
t_not "... the payload never ran in nvidia-cdi-hook" test -e "$T/preload-ran"
t_is "$(field params)" "ModifyDeviceFiles: 0" "... and the hooks did their work (params masked)"
gen "$T/spec-hookenv.json" --hook-env LD_PRELOAD=/proc/self/cwd/x.so --hook-env LD_LIBRARY_PATH=/proc/self/cwd/evil
preload_image hookenv
run_it "$T/spec-hookenv.json"
t_is "$RUN_RC" 0 "LD_PRELOAD and LD_LIBRARY_PATH in the hooks' own env: the container ran" || t_diag "$RUN_STDERR"
t_not "... the payload never ran in nvidia-cdi-hook (a static program has no dynamic loader)" test -e "$T/preload-ran"

for n in folder links record profile chmod noenv hookenv; do
        ldconfig_ran "$T/$n/rootfs" && t_fail "the image's /sbin/ldconfig ran ($n)"
done
t_pass "no image's /sbin/ldconfig ever ran"
t_is "$(snapshot_host)" "$(cat "$T/host.before")" "host files, the host's ld cache, ld.so.conf.d and /etc/nvidia unchanged"
mountinfo_unchanged "host mount table unchanged" "$T/mounts.before"
t_done
