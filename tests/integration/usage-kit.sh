# shellcheck shell=bash
# What the tests of gpu-cli ps, top, metrics and the pod records share (sourced after tests/lib.sh):
# a fake driver whose NVML sees GPU users, gpu-cli run where it can see them, and containers whose
# processes hold a fake GPU.
#
# The fake NVML sees GPU users through procfs mounted at fake-proc/ in the driver root (the NVML
# service is chrooted there), and only those of its own uid: the overflow uid
# (tests/fake-driver/README.md).  A process "uses" GPU N while it holds /dev/nvidiaN open (hold-fd).

FD=${FAKE_DRIVER_DIR:-$GH_BUILD_DIR/tests/fake-driver}
HOLD=$FD/hold-fd
NOBODY=$(cat /proc/sys/kernel/overflowuid)
DRV=$T/drv

# usage_driver [PYTHON]: the fake driver root at $DRV from the default profile, edited by PYTHON
# (`p` is the profile), and $T/config.json pointing gpu-hook at it.
usage_driver() {
        "$GH_PYTHON" -c '
import json, sys
p = json.load(open(sys.argv[1]))
exec(sys.argv[2])
json.dump(p, sys.stdout)' "$GH_SOURCE_DIR/tests/fake-driver/profiles/default.json" "${1:-}" >"$T/profile.json" &&
                bash "$GH_SOURCE_DIR/tests/fake-driver/make-root.sh" "$DRV" --profile "$T/profile.json" \
                        >"$T/mkroot.log" 2>&1 || { t_diag_file "$T/mkroot.log"; t_fatal "make-root.sh"; }
        printf '{"cli": {"root": "%s", "path": "%s"}, "log": {"file": "%s"}, "containers": {"dir": "%s"}}\n' \
                "$DRV" "$GPU_CLI" "$T/hook.log" "$T/records" >"$T/config.json"
}

# gpucli ARGS...: gpu-cli with procfs at the driver root's fake-proc/, in a private mount namespace.
gpucli() {
        unshare -m --propagation private sh -c 'mount -t proc proc "$0/fake-proc" && exec "$@"' "$DRV" \
                "$GPU_CLI" --root="$DRV" "$@"
}

# make_container NAME CMD: a bundle ($T/NAME/bundle) running CMD (sh -c) as the overflow uid with no
# capability, hold-fd in its rootfs.
make_container() {
        local rootfs=$T/$1/rootfs bundle=$T/$1/bundle
        make_busybox_rootfs "$rootfs" --glibc || return 1
        install -m 755 "$HOLD" "$rootfs/usr/bin/hold-fd"
        make_bundle "$bundle" "$rootfs" /bin/sh -c "$2"
        bundle_edit "$bundle" '
c["process"]["user"] = {"uid": int(args[0]), "gid": int(args[0])}
c["process"]["capabilities"] = {k: [] for k in ("bounding", "effective", "permitted", "ambient")}' "$NOBODY"
}

# wait_ready FILE: prints the PID of hold-fd's "ready PID" line once it is there (10 s at most).
wait_ready() {
        for _ in $(seq 100); do
                grep -q '^ready' "$1" 2>/dev/null && { sed -n 's/^ready //p' "$1" | head -n1; return 0; }
                sleep 0.1
        done
        return 1
}

# listen_start PORT ARGS...: `gpu-cli metrics --listen=127.0.0.1:PORT ARGS...` in the background
# (LISTEN_PID is gpu-cli itself: unshare and sh exec it), once it answers (5 s at most).
LISTEN_PID=
listen_start() {
        local port=$1
        shift
        (exec unshare -m --propagation private sh -c 'mount -t proc proc "$0/fake-proc" && exec "$@"' "$DRV" \
                "$GPU_CLI" --root="$DRV" metrics --listen="127.0.0.1:$port" "$@") 2>"$T/listen.err" &
        LISTEN_PID=$!
        for _ in $(seq 50); do
                "$GH_PYTHON" -c 'import sys, urllib.request as u; u.urlopen(sys.argv[1], timeout=5)' \
                        "http://127.0.0.1:$port/metrics" 2>/dev/null && return 0
                sleep 0.1
        done
        return 1
}

# start_gpu_container NAME ID GPU CMD [PYTHON]: make_container NAME CMD asking for GPU (an index),
# gpu-hook as its createRuntime hook with $T/config.json, PYTHON editing its config.json (`c`)
# first (annotations, namespaces, ...), then `runc run -d` as ID.  Its stdout is $T/NAME.out.
start_gpu_container() {
        local name=$1 id=$2 gpu=$3 cmd=$4 edit=${5:-}
        make_container "$name" "$cmd" || return 1
        bundle_set_env "$T/$name/bundle" "NVIDIA_VISIBLE_DEVICES=$gpu"
        bundle_add_hook "$T/$name/bundle" createRuntime "$GPU_HOOK" "--config=$T/config.json" createRuntime
        [ -z "$edit" ] || bundle_edit "$T/$name/bundle" "$edit"
        mkdir -p "$T_RUNC_ROOT"
        "$RUNC" --root "$T_RUNC_ROOT" run -d -b "$T/$name/bundle" "$id" >"$T/$name.out" 2>"$T/$name.err" </dev/null
}

# annotate KEY=VALUE...: the Python for start_gpu_container that sets those annotations.
annotate() {
        local a py='c.setdefault("annotations", {}).update({'
        for a in "$@"; do
                py="$py$("$GH_PYTHON" -c 'import json, sys; k, v = sys.argv[1].split("=", 1); print("%s: %s," % (json.dumps(k), json.dumps(v)))' "$a")"
        done
        printf '%s})\n' "$py"
}
