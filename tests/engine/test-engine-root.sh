#!/bin/bash
# Engines that run in another root: the paths an engine passes (the rootfs in the bundle, the driver
# root in the configuration) are paths in the engine's root, which need not be the root of the
# container's mount namespace.  Each case builds a small root for the engine (a tmpfs holding the
# host's /usr and a copy of /etc, with this test's directory at /gh-engine-root, a path the host
# does not have) in a private mount namespace, and runs the engine in it:
#   - runc under plain chroot (dockerd, containerd or a build sandbox started with chroot):
#     gpu-hook as createRuntime hook, and a CDI spec's createContainer hook (gpu-cli cdi-hook);
#   - runc pivot_root'ed into that root (an engine in a container: Docker-in-Docker, kind nodes);
#   - a running container started with `runc run --no-pivot` (chroot instead of pivot_root),
#     configured by hand with gpu-cli configure --pid;
#   - dockerd under plain chroot with `docker run --gpus`.
# On the host this is Debian 12's runc and Docker 20.10; the engines13 suite runs it again in the
# Debian 13 bed (Docker 26), where the bed itself is a pivoted root around all of it.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
. "$GH_SOURCE_DIR/tests/engine/engine.sh"
t_need_root
t_need_cmd runc unshare chroot

engine_setup
ER=/gh-engine-root
[ ! -e "$ER" ] || t_fatal "$ER exists on this machine: the test needs a path only the engine's root has"
NR=$T/engine-root   # the engine's root, a tmpfs in each case's private mount namespace
mkdir -p "$NR"
host_mountinfo_snapshot "$T/mounts.before"

# in_engine_root chroot|pivot CMD...: CMD as root of the engine's root, in a private mount namespace.
# A subshell that becomes CMD: started with &, $! is CMD's pid.
in_engine_root() (
        how=$1
        shift
        exec unshare --mount --propagation private bash -c '
                set -e
                nr=$1 er=$2 t=$3 how=$4
                shift 4
                mount -t tmpfs -o mode=755 gh-engine-root "$nr"
                mkdir -p "$nr"/{usr,proc,sys,dev,run,tmp,var/tmp,var/lib,root} "$nr$er"
                chmod 1777 "$nr/tmp" "$nr/var/tmp"
                for d in bin sbin lib lib64; do
                        if [ -L "/$d" ]; then ln -s "$(readlink "/$d")" "$nr/$d"; elif [ -d "/$d" ]; then mkdir "$nr/$d"; mount --rbind "/$d" "$nr/$d"; fi
                done
                mount --rbind /usr "$nr/usr"
                cp -a /etc "$nr/etc"
                mount --rbind /proc "$nr/proc"
                mount --rbind /sys "$nr/sys"
                mount --rbind /dev "$nr/dev"
                mount --bind "$t" "$nr$er"
                for d in "$GH_SOURCE_DIR" "$GH_BUILD_DIR"; do
                        mkdir -p "$nr$d"
                        mount --rbind "$d" "$nr$d"
                done
                if [ "$how" = chroot ]; then
                        exec chroot "$nr" "$@"
                fi
                cd "$nr"
                mkdir .old
                pivot_root . .old
                umount -l /.old
                rmdir /.old
                exec "$@"
        ' engine-root "$NR" "$ER" "$T" "$how" "$@"
)

PROBE='echo "smi:$(nvidia-smi -L 2>&1 | tr "\n" "|")"; echo "cuda:$(cuda-probe 2>&1 | head -n1)"; echo "dev:$(ls /dev | grep -E "^nvidia" | sort | tr "\n" ",")"'
field() { printf '%s\n' "$RUN_STDOUT" | sed -n "s/^$1://p"; }
ngpus() { field smi | tr '|' '\n' | grep -c '^GPU '; }
printf '{"cli": {"root": "%s/drv", "path": "%s"}, "log": {"file": "%s/hook.log"}}\n' "$ER" "$GPU_CLI" "$ER" >"$T/hook.json"

# A bundle whose paths are the engine's: rootfs /gh-engine-root/rootfs-NAME.
N=0
er_bundle() {
        N=$((N + 1))
        BNAME=b$N
        cp -a "$IMGROOT" "$T/rootfs-$BNAME"
        make_bundle "$T/$BNAME" "$T/rootfs-$BNAME" /bin/sh -c "$PROBE"
        bundle_edit "$T/$BNAME" 'c["root"]["path"] = args[0]' "$ER/rootfs-$BNAME"
}
# er_runc HOW ARGS...: runc run of the last bundle in the engine's root; RUN_* as lib.sh's runners.
er_runc() {
        local how=$1
        shift
        timeout -k 5 "$GH_RUN_TIMEOUT" bash -c 'in_engine_root "$@"' x "$how" runc --root "$ER/runc" run "$@" -b "$ER/$BNAME" "gh-er-$$-$N" \
                </dev/null >"$T/.run.out" 2>"$T/.run.err"
        RUN_RC=$?
        _gh_finish_run
}
export -f in_engine_root
export NR ER T GH_SOURCE_DIR GH_BUILD_DIR

for how in chroot pivot; do
        case $how in
        chroot) what="runc under plain chroot" ;;
        pivot) what="runc pivoted into its own root (an engine in a container)" ;;
        esac
        er_bundle
        bundle_set_env "$T/$BNAME" NVIDIA_VISIBLE_DEVICES=1
        bundle_add_hook "$T/$BNAME" createRuntime "$GPU_HOOK" "--config=$ER/hook.json" createRuntime
        er_runc "$how"
        t_is "$RUN_RC" 0 "$what, gpu-hook as createRuntime hook: container ran" || t_diag "$RUN_STDERR"
        t_is "$(ngpus)" 1 "... nvidia-smi lists one GPU"
        t_match "$(field smi)" "$UUID1" "... GPU 1"
        t_match "$(field cuda)" '^CUDA OK: 1 device' "... libcuda loads"
        t_is "$(field dev)" "nvidia-uvm,nvidia-uvm-tools,nvidia1,nvidiactl," "... with GPU 1's node"

        # CDI: the spec's createContainer hook runs in the container's namespaces, from the
        # engine's root.  The spec is generated in the engine's root, so its paths are the engine's.
        in_engine_root chroot "$GPU_CLI" --root="$ER/drv" cdi generate --output="$ER/spec.json" >"$T/gen.log" 2>&1 ||
                t_diag_file "$T/gen.log"
        er_bundle
        "$GH_PYTHON" "$GH_SOURCE_DIR/tests/helpers/cdi-apply.py" --spec "$T/spec.json" "$T/$BNAME" nvidia.com/gpu=0 2>"$T/apply.err" ||
                t_diag_file "$T/apply.err"
        er_runc "$how"
        t_is "$RUN_RC" 0 "$what, CDI nvidia.com/gpu=0 (gpu-cli cdi-hook): container ran" || t_diag "$RUN_STDERR"
        t_match "$(field smi)" "^GPU 0: .*$UUID0" "... nvidia-smi sees GPU 0"
        t_match "$(field cuda)" '^CUDA OK: 1 device' "... libcuda loads"
done
mountinfo_unchanged "the host's mount table is as before" "$T/mounts.before"

# A running container whose runtime used chroot, not pivot_root: its root is the rootfs while the
# namespace's root is still the host's tree.
er_bundle
bundle_edit "$T/$BNAME" 'c["process"]["args"] = ["/bin/sleep", "60"]'
RID=gh-er-np-$$
in_engine_root pivot sh -c "exec runc --root $ER/runc run --no-pivot -d -b $ER/$BNAME $RID" </dev/null >/dev/null 2>"$T/np.err"
PID=$(in_engine_root pivot runc --root "$ER/runc" state "$RID" 2>/dev/null | sed -n 's/.*"pid": *\([0-9]*\).*/\1/p')
if [ -z "$PID" ]; then
        t_fail "runc run --no-pivot -d: a running container"
        t_diag_file "$T/np.err"
elif [ "${GH_EXPECT_NO_MOUNT_API:-0}" = 1 ]; then
        OUT=$("$GPU_CLI" --root="$DRV" configure --pid="$PID" --device=0 --compute --utility "$T/rootfs-$BNAME" 2>&1)
        t_match "$OUT" 'already running and open_tree/move_mount are not available' \
                "a running --no-pivot container, without the new mount API: refused, saying why"
else
        t_ok "configure by hand into a running container started with runc --no-pivot" \
                "$GPU_CLI" --root="$DRV" configure --pid="$PID" --device=0 --compute --utility "$T/rootfs-$BNAME"
        OUT=$(timeout 20 bash -c 'in_engine_root pivot runc --root "$ER/runc" exec "$1" nvidia-smi -L' x "$RID" 2>&1)
        t_match "$OUT" "^GPU 0: .*$UUID0" "... nvidia-smi in it sees GPU 0"
fi
in_engine_root pivot runc --root "$ER/runc" delete -f "$RID" >/dev/null 2>&1

# dockerd under plain chroot: its data root, bundles and rootfs paths are all in the chroot.
if ! have_cmd dockerd || ! have_cmd docker; then
        [ -n "${GH_BED:-}" ] && t_fatal "dockerd is in the $GH_BED engine bed"
        t_skip "dockerd under chroot, docker run --gpus" "dockerd is not installed"
        t_done
fi
mkdir -p "$ENGINE_HOOKDIR"
ln -sf "$GH_ENGINE_HOOK" "$ENGINE_HOOKDIR/nvidia-container-runtime-hook"
DRV=$ER/drv T=$ER engine_write_config "{$(engine_runtime_json)}"
echo '{"log-level": "warn"}' >"$T/daemon.json"
DOCKER_SOCK=$T/docker.sock
PATH="$ER/hookdir:/usr/sbin:/usr/bin:/sbin:/bin" in_engine_root chroot \
        dockerd --config-file "$ER/daemon.json" --iptables=false --ip6tables=false --ip-forward=false --ip-masq=false \
        --bridge=none --storage-driver=vfs --data-root "$ER/docker/data" --exec-root "$ER/docker/exec" \
        --pidfile "$ER/docker/pid" -H "unix://$ER/docker.sock" >>"$T/dockerd.log" 2>&1 &
DOCKER_PID=$!
if ! _daemon_ready "$DOCKER_PID" "$T/dockerd.log" dk info; then
        t_fatal "dockerd starts under chroot"
fi
# $! is the shell around it; docker_stop stops dockerd itself (the same pid namespace).
DOCKER_PID=$(cat "$T/docker/pid")
docker_import gh-er || t_fatal "docker import into the chrooted dockerd"
timeout -k 5 "$GH_RUN_TIMEOUT" docker -H "unix://$DOCKER_SOCK" run --rm --network none --gpus device=1 gh-er /bin/sh -c "$PROBE" \
        </dev/null >"$T/.run.out" 2>"$T/.run.err"
RUN_RC=$?
_gh_finish_run
t_is "$RUN_RC" 0 "dockerd $(dk version --format '{{.Server.Version}}' 2>/dev/null) under plain chroot, --gpus device=1: container ran" ||
        t_diag "$RUN_STDERR"
t_is "$(ngpus)" 1 "... nvidia-smi lists one GPU"
t_match "$(field smi)" "$UUID1" "... GPU 1"
t_match "$(tail -n 1 "$T/hook.log" 2>/dev/null)" '"stage":"prestart"' "... through Docker's prestart hook"
docker_stop
mountinfo_unchanged "the host's mount table is as before, dockerd stopped" "$T/mounts.before"
# gpu-hook configures in its own process and writes its log and record after leaving the
# container's namespace: back in the engine's chroot, not at the host's root.
t_not "nothing the hooks wrote landed at $ER in the host's root" test -e "$ER"
t_done
