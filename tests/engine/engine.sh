# shellcheck shell=bash
# Helpers for the engine tests (sourced after tests/lib.sh): the fake driver root, the configuration
# the engine copies of gpu-hook/gpu-runtime read by default, and a private dockerd.
#
#   engine_setup                  lock, fake driver in $DRV, $GH_ENGINE_CONFIG written, $IMGROOT built
#   engine_runtime_json           the "runtime" member of that config: [$ENGINE_OCI], hook-path
#   docker_start DAEMON_JSON      dockerd on $T/docker.sock, hook dir first on its PATH
#   dk ARGS...                    the docker client against it
#   docker_stop                   TERM by PID, wait, then clean what dockerd leaves on the host

# The OCI runtime gpu-runtime execs and podman runs: GH_OCI_RUNTIME (runc or crun; the engines13
# suite runs the podman suites with both).  RUNC follows it, so lib.sh's runners use it too.
ENGINE_OCI=${GH_OCI_RUNTIME:-runc}
[ "$ENGINE_OCI" = runc ] || RUNC=$ENGINE_OCI
ENGINE_HOOKDIR=$T/hookdir
DOCKER_SOCK=$T/docker.sock
DOCKER_PID=
_engine_host_leftovers=""

engine_setup() {
        local mkroot=$GH_SOURCE_DIR/tests/fake-driver/make-root.sh probe
        : "${GH_ENGINE_CONFIG:?run under meson (GH_ENGINE_CONFIG)}"
        # One engine test at a time per build directory: they share the compiled-in config path, and
        # dockerd's few global paths (/run/docker, /etc/docker/key.json).
        exec 9>"$GH_ENGINE_CONFIG.lock"
        flock 9
        DRV=$T/drv
        bash "$mkroot" "$DRV" >"$T/mkroot.log" 2>&1 || { t_diag_file "$T/mkroot.log"; echo "Bail out! make-root.sh failed"; exit 1; }
        engine_write_config "{}"
        mkdir -p "$ENGINE_HOOKDIR"
        IMGROOT=$T/imgroot
        make_busybox_rootfs "$IMGROOT" --glibc || { echo "Bail out! cannot build the rootfs"; exit 1; }
        probe=$(find "$GH_BUILD_DIR/tests/fake-driver" -name cuda-probe -type f -perm -u+x | head -n1)
        [ -n "$probe" ] && install -m 755 "$probe" "$IMGROOT/usr/local/bin/cuda-probe"
        UUID0=$(sed -n 's/^GPU UUID:[[:space:]]*//p' "$(ls -d "$DRV"/proc/driver/nvidia/gpus/* | sort | head -n1)/information")
        UUID1=$(sed -n 's/^GPU UUID:[[:space:]]*//p' "$(ls -d "$DRV"/proc/driver/nvidia/gpus/* | sort | sed -n 2p)/information")
}

engine_runtime_json() { printf '"runtime": {"runtimes": ["%s"], "hook-path": "%s"}' "$ENGINE_OCI" "$GPU_HOOK"; }

# engine_write_config EXTRA_JSON_MEMBERS: the shared configuration, with the fake driver root and the
# build's gpu-cli; EXTRA is merged at the top level ("{}" for nothing), an object member into the
# object of that name ("cli" keeps the root and path unless EXTRA names them).
engine_write_config() {
        "$GH_PYTHON" - "$GH_ENGINE_CONFIG" "$DRV" "$GPU_CLI" "$T/hook.log" "$1" <<'PY'
import json, os, sys
path, drv, cli, log, extra = sys.argv[1:]
c = {"cli": {"root": drv, "path": cli}, "log": {"file": log}, "containers": {"dir": os.path.dirname(log) + "/records"}}
for k, v in json.loads(extra).items():
    if isinstance(v, dict) and isinstance(c.get(k), dict):
        c[k].update(v)
    else:
        c[k] = v
with open(path + ".tmp", "w") as f:
    json.dump(c, f)
os.rename(path + ".tmp", path)
PY
}

# What dockerd leaves outside its data and exec roots: removed at the end only if it was not there before.
_engine_note_host() {
        local p
        for p in /etc/docker/key.json /etc/docker /run/docker /run/containerd; do
                [ -e "$p" ] || _engine_host_leftovers+="$p "
        done
}

dk() { docker -H "unix://$DOCKER_SOCK" "$@"; }

# _daemon_ready PID LOG CMD...: waits up to 10 s for CMD to succeed while PID lives; when it does
# not, shows LOG and returns 1.
_daemon_ready() {
        local pid=$1 log=$2 i
        shift 2
        for i in $(seq 1 100); do
                "$@" >/dev/null 2>&1 && return 0
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
        done
        t_diag_file "$log"
        return 1
}

# _daemon_stop PID: TERM, up to 10 s to exit, then KILL; reaped.
_daemon_stop() {
        local pid=$1 i
        [ -n "$pid" ] || return 0
        kill -TERM "$pid" 2>/dev/null
        for i in $(seq 1 100); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
        done
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
}

docker_start() {
        [ -n "$_engine_host_leftovers" ] || _engine_note_host
        mkdir -p "$T/docker"
        PATH=$ENGINE_HOOKDIR:/usr/sbin:/usr/bin:/sbin:/bin dockerd --config-file "$1" \
                --iptables=false --ip6tables=false --ip-forward=false --ip-masq=false --bridge=none \
                --storage-driver=vfs --data-root "$T/docker/data" --exec-root "$T/docker/exec" \
                --pidfile "$T/docker/pid" -H "unix://$DOCKER_SOCK" >>"$T/dockerd.log" 2>&1 &
        DOCKER_PID=$!
        _daemon_ready "$DOCKER_PID" "$T/dockerd.log" dk info
}

# Docker 26 bind-mounts its data root onto itself (to make it a shared mount) and leaves that mount
# behind when it exits; 20.10 did not.  It is dockerd's, not the hook's: take it away with dockerd.
docker_stop() {
        [ -n "$DOCKER_PID" ] || return 0
        _daemon_stop "$DOCKER_PID"
        DOCKER_PID=
        if mountpoint -q "$T/docker/data"; then
                umount "$T/docker/data"
        fi
}

# docker_import NAME: the busybox+glibc rootfs as an image.
docker_import() { tar -C "$IMGROOT" -c . | dk import - "$1" >/dev/null; }

# Runs at exit (before lib.sh's own cleanup, which it then calls).
_engine_cleanup() {
        local p d
        docker_stop
        containerd_stop
        for p in $_engine_host_leftovers; do
                rm -rf "$p" 2>/dev/null
        done
        # Container cgroups dockerd made under each hierarchy's "docker" group: only empty ones go.
        for d in /sys/fs/cgroup/*/docker /sys/fs/cgroup/docker; do
                [ -d "$d" ] || continue
                find "$d" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null
                rmdir "$d" 2>/dev/null
        done
        _gh_cleanup
}
trap _engine_cleanup EXIT

# oci_image_tar ROOTFS NAME OUT [CMD_JSON]: an OCI image layout tarball (one layer) that `ctr images
# import` takes, for engines without a registry; CMD_JSON is the image's command (["/bin/sh"]).
oci_image_tar() {
        "$GH_PYTHON" - "$1" "$2" "$3" "${4:-[\"/bin/sh\"]}" <<'PY'
import gzip, hashlib, io, json, os, sys, tarfile
rootfs, name, out, cmd = sys.argv[1:]
raw = io.BytesIO()
with tarfile.open(fileobj=raw, mode="w") as t:
    t.add(rootfs, arcname=".")
layer_tar = raw.getvalue()
layer = gzip.compress(layer_tar, mtime=0)
def sha(b): return "sha256:" + hashlib.sha256(b).hexdigest()
config = json.dumps({"architecture": "amd64", "os": "linux",
                     "config": {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"], "Cmd": json.loads(cmd)},
                     "rootfs": {"type": "layers", "diff_ids": [sha(layer_tar)]}}).encode()
manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                       "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": sha(config), "size": len(config)},
                       "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": sha(layer), "size": len(layer)}]}).encode()
index = json.dumps({"schemaVersion": 2, "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "digest": sha(manifest), "size": len(manifest),
                    "annotations": {"io.containerd.image.name": name, "org.opencontainers.image.ref.name": "latest"}}]}).encode()
with tarfile.open(out, "w") as t:
    def add(path, data):
        i = tarfile.TarInfo(path); i.size = len(data); t.addfile(i, io.BytesIO(data))
    add("oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
    add("index.json", index)
    for b in (layer, config, manifest):
        add("blobs/sha256/" + sha(b)[7:], b)
PY
}

# containerd_start: containerd alone (no CRI plugin) on $T/ctd/sock, its own root and state.
CTD_SOCK=$T/ctd/sock
CTD_PID=
containerd_start() {
        [ -n "$_engine_host_leftovers" ] || _engine_note_host
        mkdir -p "$T/ctd"
        cat >"$T/ctd/config.toml" <<EOF
version = 2
root = "$T/ctd/root"
state = "$T/ctd/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$CTD_SOCK"
[ttrpc]
  address = "$CTD_SOCK.ttrpc"
EOF
        containerd --config "$T/ctd/config.toml" >>"$T/containerd.log" 2>&1 &
        CTD_PID=$!
        _daemon_ready "$CTD_PID" "$T/containerd.log" ctr -a "$CTD_SOCK" version
}

containerd_stop() {
        _daemon_stop "$CTD_PID"
        CTD_PID=
}
