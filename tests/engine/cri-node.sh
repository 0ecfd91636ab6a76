# shellcheck shell=bash
# A Kubernetes node in the engine bed, for tests/engine/test-cri.sh and bench/cri.sh (sourced after
# tests/lib.sh, engine.sh and k8s.sh, inside the bed, after engine_setup):
#
#   cri_node_prepare     containerd's node config ($CTD/config.toml: its own paths and what this
#                        machine needs), an "image" tree for node-install.sh (this build's gpu-cli,
#                        the engine copies of gpu-hook and gpu-runtime), the manifests as JSON in
#                        $T/m; defines node_config EXTRA and node_install ARGS
#   cri_node_start       the images, containerd with the CRI plugin on $CRI_SOCK; CRI=(the client)
# Both return 1 with the reason in CRI_ERR.
CRI_PROTO=/usr/share/gocode/src/k8s.io/cri-api/pkg/apis/runtime/v1/api.proto
K8S=$GH_SOURCE_DIR/contrib/kubernetes
CLIENT=$GH_SOURCE_DIR/tests/helpers/cri-client.py
CRI_ERR=
# kubelet 1.32's sandbox image, made here from busybox; the test image has the examples' image name
PAUSE=registry.k8s.io/pause:3.10
IMAGE=$(sed -n 's/^ *image: *//p' "$K8S/examples/pod-cdi.yaml" | head -n1)
CTD=$T/ctd CRI_SOCK=$T/ctd/cri.sock
OPT=/opt/gpu-hook

# cri_node_missing: why this bed cannot be a node, or nothing
cri_node_missing() {
        local c
        for c in containerd ctr runc kubectl python3; do
                command -v $c >/dev/null 2>&1 || { echo "$c is not installed"; return; }
        done
        [ -r "$CRI_PROTO" ] || { echo "the bed has no CRI api.proto (golang-github-kubernetes-cri-api-dev)"; return; }
        python3 -c 'import grpc, grpc_tools' 2>/dev/null || echo "the bed has no python3-grpcio/python3-grpc-tools"
}

cri_node_prepare() {
        mkdir -p "$CTD" /var/run/cdi "$T/image/bin" "$T/image/share/gpu-hook" "$T/m"
        cat >"$CTD/config.toml" <<EOF
version = 2
root = "$CTD/root"
state = "$CTD/state"
[grpc]
  address = "$CRI_SOCK"
[ttrpc]
  address = "$CRI_SOCK.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "native"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "/etc/cni/net.d"
EOF
        install -m 755 "$GPU_CLI" "$T/image/bin/gpu-cli" &&
                install -m 755 "$GH_ENGINE_HOOK" "$T/image/bin/gpu-hook" &&
                install -m 755 "$GH_ENGINE_RUNTIME" "$T/image/bin/gpu-runtime" &&
                install -m 755 "$K8S/node-install.sh" "$T/image/share/gpu-hook/node-install.sh" ||
                { CRI_ERR="cannot assemble the image tree"; return 1; }
        node_config
        local f n
        for f in "$K8S"/runtimeclass.yaml "$K8S"/examples/*.yaml; do
                n=$(basename "$f" .yaml)
                k8s_json "$f" "$T/m/$n.json" || { CRI_ERR="kubectl cannot read $f: $(head -c 300 "$T/m/$n.json.err")"; return 1; }
        done
}

# node_config EXTRA: the configuration the engine copies read, naming the installed binaries
node_config() {
        engine_write_config "{\"cli\": {\"root\": \"$DRV\", \"path\": \"$OPT/bin/gpu-cli\"}, \"runtime\": {\"runtimes\": [\"runc\"], \"hook-path\": \"$OPT/bin/gpu-hook\"}, \"mps\": {\"dir\": \"$T/mps\"}${1:+, $1}}"
}

# node_install install|refresh: contrib/kubernetes/node-install.sh, the DaemonSet's installer, on this node
node_install() {
        HOST=/ SRC=$T/image DEST=$OPT DRIVER_ROOT=$DRV CONTAINERD_CONFIG=$CTD/config.toml GPU_HOOK_CONFIG=$GH_ENGINE_CONFIG \
                RESTART=none ONCE=1 sh "$K8S/node-install.sh" "$@" 2>&1
}

cri_node_start() {
        make_busybox_rootfs "$T/pauseroot" &&
                oci_image_tar "$T/pauseroot" "$PAUSE" "$T/pause.tar" '["/bin/sleep", "2147483647"]' &&
                oci_image_tar "$IMGROOT" "$IMAGE" "$T/image.tar" || { CRI_ERR="cannot build the images"; return 1; }
        containerd --config "$CTD/config.toml" >>"$T/containerd.log" 2>&1 &
        CTD_PID=$!
        CRI=(python3 "$CLIENT" --socket="$CRI_SOCK" --stubs="$T/stubs")
        _daemon_ready "$CTD_PID" "$T/containerd.log" "${CRI[@]}" version || { CRI_ERR="containerd's CRI did not answer"; return 1; }
        local img
        for img in pause image; do
                ctr -a "$CRI_SOCK" -n k8s.io images import --snapshotter native "$T/$img.tar" >"$T/import.log" 2>&1 ||
                        { CRI_ERR="ctr images import $img: $(tail -n 3 "$T/import.log")"; return 1; }
        done
}
