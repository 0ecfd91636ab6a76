#!/usr/bin/python3
"""A small kubelet for tests: runs Kubernetes Pod manifests through a CRI runtime (containerd).

It does what the kubelet does for one pod, through the CRI API only: RunPodSandbox, then for each
container CreateContainer, StartContainer, wait until it exits, read its log, and at the end
StopContainer, RemoveContainer, StopPodSandbox, RemovePodSandbox.  The requests are derived from
the manifest (as JSON: `kubectl ... -o json` turns YAML into it), the way the kubelet derives them:

  metadata.name/namespace/uid, labels, annotations   -> PodSandboxConfig
  spec.runtimeClassName                              -> runtime_handler, through the RuntimeClass
                                                        objects given with --runtime-class
  containers[].image/command/args/env/workingDir     -> ContainerConfig
  containers[].securityContext.privileged            -> linux.security_context.privileged
  containers[].resources.limits["nvidia.com/gpu"]    -> what NVIDIA's device plugin answers to
                                                        Allocate with --device-list-strategy
                                                        (envvar, volume-mounts, cdi-annotations,
                                                        cdi-cri), on the GPUs given with --gpus
  containers[].resources.claims + spec.resourceClaims -> the CDI devices a DRA driver prepared for
                                                        the claim (--claim NAME=DEVICE,...), in the
                                                        CDI_devices field (kubelet 1.31 and later)

The stubs are generated at run time from the CRI api.proto (Debian's
golang-github-kubernetes-cri-api-dev) with grpc_tools; the gogoproto options are stripped first.

Output: one JSON object per pod on stdout, {"pod": ..., "containers": [{"name", "exit_code", "log",
"start_ms"}]}.  Exit status 0 when every CRI call succeeded (whatever the containers exited
with), 1 when one failed (its message on stderr), 2 for bad usage or input.
"""

import argparse
import json
import os
import random
import re
import statistics
import sys
import time
import uuid

DEFAULT_PROTO = "/usr/share/gocode/src/k8s.io/cri-api/pkg/apis/runtime/v1/api.proto"
GPU_RESOURCE = "nvidia.com/gpu"
STRATEGIES = ("envvar", "volume-mounts", "cdi-annotations", "cdi-cri")
VOLUME_MOUNTS_ROOT = "/var/run/nvidia-container-devices"

pb = None       # api_pb2, once loaded
pb_grpc = None  # api_pb2_grpc


class Usage(Exception):
    pass


class CriError(Exception):
    pass


def load_stubs(proto, outdir):
    """Generates api_pb2.py and api_pb2_grpc.py from the CRI .proto into outdir and imports them."""
    global pb, pb_grpc
    os.makedirs(outdir, exist_ok=True)
    if not os.path.exists(os.path.join(outdir, "api_pb2_grpc.py")):
        try:
            with open(proto) as f:
                text = f.read()
        except OSError as e:
            raise Usage(f"cannot read the CRI proto {proto}: {e.strerror} "
                        "(install golang-github-kubernetes-cri-api-dev or pass --proto)")
        # gogoproto is Go-only: drop its import, its file options and any field option.
        text = "\n".join(line for line in text.splitlines()
                         if not re.match(r'\s*(import\s+"github.com/gogo/|option\s+\(gogoproto\.)', line))
        text = re.sub(r"\[\s*\(gogoproto\.[^\]]*\]", "", text)
        with open(os.path.join(outdir, "api.proto"), "w") as f:
            f.write(text + "\n")
        from grpc_tools import protoc
        import grpc_tools
        include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
        rc = protoc.main(["protoc", "-I" + outdir, "-I" + include, "--python_out=" + outdir,
                          "--grpc_python_out=" + outdir, os.path.join(outdir, "api.proto")])
        if rc != 0:
            raise Usage(f"protoc failed on {proto} (exit {rc})")
    sys.path.insert(0, outdir)
    import api_pb2
    import api_pb2_grpc
    pb, pb_grpc = api_pb2, api_pb2_grpc


# ---- the manifest side: what the kubelet would ask for ---------------------------------------

def load_json(path, what):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise Usage(f"{what} {path}: {e}")


def load_pod(path):
    """The Pod in a manifest: a Pod, or a List (kubectl's output for several documents) with one."""
    obj = load_json(path, "pod manifest")
    items = obj.get("items", []) if obj.get("kind") == "List" else [obj]
    pods = [i for i in items if i.get("kind") == "Pod"]
    if len(pods) != 1:
        raise Usage(f"{path}: want exactly one Pod, found {len(pods)}")
    return pods[0]


def handler_for(pod, runtime_classes):
    name = pod.get("spec", {}).get("runtimeClassName")
    if not name:
        return ""
    for rc in runtime_classes:
        if rc.get("kind") == "RuntimeClass" and rc.get("metadata", {}).get("name") == name:
            return rc.get("handler", "")
    raise Usage(f"pod {pod['metadata'].get('name')}: RuntimeClass {name!r} is not among --runtime-class")


class DevicePlugin:
    """NVIDIA's device plugin's Allocate answer for one container, per device list strategy."""

    def __init__(self, strategy, gpus, kind):
        self.strategy, self.gpus, self.kind = strategy, gpus, kind

    def allocate(self, count):
        if self.strategy is None:
            raise Usage(f"a container asks for {GPU_RESOURCE} but no --device-plugin strategy was given")
        if count > len(self.gpus):
            raise Usage(f"{count} GPUs asked for, the node has {len(self.gpus)} (--gpus)")
        ids = self.gpus[:count]
        out = {"envs": {}, "mounts": [], "annotations": {}, "cdi": []}
        if self.strategy == "envvar":
            out["envs"]["NVIDIA_VISIBLE_DEVICES"] = ",".join(ids)
        elif self.strategy == "volume-mounts":
            out["envs"]["NVIDIA_VISIBLE_DEVICES"] = VOLUME_MOUNTS_ROOT
            out["mounts"] = [("/dev/null", f"{VOLUME_MOUNTS_ROOT}/{i}") for i in ids]
        elif self.strategy == "cdi-annotations":
            # The CDI package's UpdateAnnotations: one key per plugin and response.
            key = f"cdi.k8s.io/nvidia-device-plugin_{uuid.uuid4()}"
            out["annotations"][key] = ",".join(f"{self.kind}={i}" for i in ids)
        else:
            out["cdi"] = [f"{self.kind}={i}" for i in ids]
        return out


def container_claims(pod, container, claims):
    """CDI devices of the DRA claims a container uses (kubelet's GetResources)."""
    devices = []
    pod_claims = {c.get("name"): c for c in pod.get("spec", {}).get("resourceClaims", [])}
    for ref in container.get("resources", {}).get("claims", []):
        name = ref.get("name")
        if name not in pod_claims:
            raise Usage(f"container {container['name']} uses claim {name!r} that the pod does not list")
        if name not in claims:
            raise Usage(f"claim {name!r}: no prepared CDI devices given (--claim {name}=DEVICE)")
        devices += claims[name]
    return devices


def sandbox_config(pod, args, log_dir):
    meta = pod.get("metadata", {})
    spec = pod.get("spec", {})
    ns = meta.get("namespace", "default")
    uid = meta.get("uid") or str(uuid.uuid4())
    host_net = args.host_network or spec.get("hostNetwork", False)
    nso = pb.NamespaceOption(network=pb.NODE if host_net else pb.POD,
                             pid=pb.NODE if spec.get("hostPID") else pb.CONTAINER,
                             ipc=pb.NODE if spec.get("hostIPC") else pb.POD)
    labels = dict(meta.get("labels", {}))
    labels.update({"io.kubernetes.pod.name": meta["name"], "io.kubernetes.pod.namespace": ns,
                   "io.kubernetes.pod.uid": uid})
    return pb.PodSandboxConfig(
        metadata=pb.PodSandboxMetadata(name=meta["name"], uid=uid, namespace=ns, attempt=0),
        # With host networking and no UTS namespace of its own the pod keeps the node's name.
        hostname="" if host_net else meta["name"],
        log_directory=log_dir,
        labels=labels,
        annotations=meta.get("annotations", {}),
        linux=pb.LinuxPodSandboxConfig(
            cgroup_parent=args.cgroup_parent or "",
            security_context=pb.LinuxSandboxSecurityContext(namespace_options=nso)),
    ), nso


def container_config(pod, c, nso, plugin, claims, command):
    meta = pod.get("metadata", {})
    envs = []
    for e in c.get("env", []):
        if "value" not in e:
            raise Usage(f"container {c['name']}: env {e.get('name')} has no plain value (valueFrom is not supported here)")
        envs.append(pb.KeyValue(key=e["name"], value=str(e["value"])))
    mounts, annotations, cdi = [], {}, []
    limits = c.get("resources", {}).get("limits", {})
    if GPU_RESOURCE in limits:
        a = plugin.allocate(int(limits[GPU_RESOURCE]))
        envs += [pb.KeyValue(key=k, value=v) for k, v in a["envs"].items()]
        mounts += [pb.Mount(host_path=h, container_path=p, readonly=False) for h, p in a["mounts"]]
        annotations.update(a["annotations"])
        cdi += a["cdi"]
    cdi += container_claims(pod, c, claims)
    annotations.update({"io.kubernetes.container.restartCount": "0",
                        "io.kubernetes.pod.terminationGracePeriod": "30"})
    priv = bool(c.get("securityContext", {}).get("privileged", False))
    cfg = pb.ContainerConfig(
        metadata=pb.ContainerMetadata(name=c["name"], attempt=0),
        image=pb.ImageSpec(image=c["image"]),
        command=command if command is not None else c.get("command", []),
        args=[] if command is not None else c.get("args", []),
        working_dir=c.get("workingDir", ""),
        envs=envs,
        mounts=mounts,
        labels={"io.kubernetes.container.name": c["name"], "io.kubernetes.pod.name": meta["name"],
                "io.kubernetes.pod.namespace": meta.get("namespace", "default")},
        annotations=annotations,
        log_path=f"{c['name']}/0.log",
        linux=pb.LinuxContainerConfig(
            resources=pb.LinuxContainerResources(),
            security_context=pb.LinuxContainerSecurityContext(privileged=priv, namespace_options=nso)),
    )
    cfg.CDI_devices.extend(pb.CDIDevice(name=n) for n in cdi)
    return cfg


# ---- the CRI side --------------------------------------------------------------------------

class Runtime:
    def __init__(self, socket, timeout):
        import grpc
        self.grpc = grpc
        self.channel = grpc.insecure_channel("unix://" + socket)
        self.rt = pb_grpc.RuntimeServiceStub(self.channel)
        self.img = pb_grpc.ImageServiceStub(self.channel)
        self.timeout = timeout

    def call(self, what, fn, req):
        try:
            return fn(req, timeout=self.timeout)
        except self.grpc.RpcError as e:
            raise CriError(f"{what}: {e.details() if hasattr(e, 'details') else e}")

    def version(self):
        return self.call("Version", self.rt.Version, pb.VersionRequest(version="v1"))

    def have_image(self, ref):
        r = self.call("ImageStatus", self.img.ImageStatus, pb.ImageStatusRequest(image=pb.ImageSpec(image=ref)))
        return r.image is not None and r.image.id != ""


def read_log(path):
    """The CRI log format: TIMESTAMP STREAM TAG CONTENT, TAG P for a partial line."""
    out, partial = [], ""
    try:
        with open(path, errors="replace") as f:
            for line in f:
                parts = line.rstrip("\n").split(" ", 3)
                if len(parts) < 3:
                    continue
                text = parts[3] if len(parts) == 4 else ""
                if parts[2] == "P":
                    partial += text
                else:
                    out.append(partial + text)
                    partial = ""
    except OSError:
        return None
    if partial:
        out.append(partial)
    return "\n".join(out) + ("\n" if out else "")


class Pod:
    """One pod on the runtime; remove() takes away whatever was made, also after a failure."""

    def __init__(self, rt, pod, args, log_root):
        self.rt, self.pod, self.args = rt, pod, args
        meta = pod.get("metadata", {})
        if not meta.get("name"):
            raise Usage("the pod has no metadata.name")
        if not pod.get("spec", {}).get("containers"):
            raise Usage(f"pod {meta['name']} has no containers")
        self.uid = meta.get("uid") or str(uuid.uuid4())
        pod.setdefault("metadata", {})["uid"] = self.uid
        self.log_dir = os.path.join(log_root, f"{meta.get('namespace', 'default')}_{meta['name']}_{self.uid}")
        self.handler = handler_for(pod, args.runtime_classes)
        self.plugin = DevicePlugin(args.device_plugin, args.gpus, args.cdi_kind)
        self.pod_id, self.containers = None, []

    def start_sandbox(self):
        os.makedirs(self.log_dir, exist_ok=True)
        self.sb_config, self.nso = sandbox_config(self.pod, self.args, self.log_dir)
        for c in self.pod["spec"]["containers"]:
            if not self.rt.have_image(c["image"]):
                raise CriError(f"image {c['image']} is not on the node (this client never pulls)")
        r = self.rt.call("RunPodSandbox", self.rt.rt.RunPodSandbox,
                         pb.RunPodSandboxRequest(config=self.sb_config, runtime_handler=self.handler))
        self.pod_id = r.pod_sandbox_id

    def run_container(self, c, command=None, wait=True):
        """CreateContainer + StartContainer (timed), then wait for the exit and read the log."""
        cfg = container_config(self.pod, c, self.nso, self.plugin, self.args.claims, command)
        os.makedirs(os.path.join(self.log_dir, c["name"]), exist_ok=True)
        t0 = time.monotonic()
        r = self.rt.call(f"CreateContainer {c['name']}", self.rt.rt.CreateContainer,
                         pb.CreateContainerRequest(pod_sandbox_id=self.pod_id, config=cfg,
                                                   sandbox_config=self.sb_config))
        cid = r.container_id
        self.containers.append(cid)
        self.rt.call(f"StartContainer {c['name']}", self.rt.rt.StartContainer,
                     pb.StartContainerRequest(container_id=cid))
        start_ms = (time.monotonic() - t0) * 1000.0
        res = {"name": c["name"], "start_ms": round(start_ms, 2)}
        if not wait:
            return res, cid
        deadline = time.monotonic() + self.args.wait
        while True:
            s = self.rt.call("ContainerStatus", self.rt.rt.ContainerStatus,
                             pb.ContainerStatusRequest(container_id=cid)).status
            if s.state == pb.CONTAINER_EXITED:
                res["exit_code"] = s.exit_code
                break
            if time.monotonic() > deadline:
                res["exit_code"] = None
                res["error"] = f"still running after {self.args.wait} s"
                break
            time.sleep(0.02)
        res["log"] = read_log(os.path.join(self.log_dir, c["name"], "0.log"))
        return res, cid

    def remove_container(self, cid):
        for what, fn, req in (("StopContainer", self.rt.rt.StopContainer,
                               pb.StopContainerRequest(container_id=cid, timeout=0)),
                              ("RemoveContainer", self.rt.rt.RemoveContainer,
                               pb.RemoveContainerRequest(container_id=cid))):
            try:
                self.rt.call(what, fn, req)
            except CriError as e:
                print(f"cri-client: cleanup: {e}", file=sys.stderr)
        if cid in self.containers:
            self.containers.remove(cid)

    def remove(self):
        for cid in list(self.containers):
            self.remove_container(cid)
        if self.pod_id is not None:
            for what, fn, req in (("StopPodSandbox", self.rt.rt.StopPodSandbox,
                                   pb.StopPodSandboxRequest(pod_sandbox_id=self.pod_id)),
                                  ("RemovePodSandbox", self.rt.rt.RemovePodSandbox,
                                   pb.RemovePodSandboxRequest(pod_sandbox_id=self.pod_id))):
                try:
                    self.rt.call(what, fn, req)
                except CriError as e:
                    print(f"cri-client: cleanup: {e}", file=sys.stderr)
            self.pod_id = None


def cmd_run(rt, args):
    pod = load_pod(args.pod)
    p = Pod(rt, pod, args, args.log_dir)
    out = {"pod": pod["metadata"]["name"], "handler": p.handler, "containers": []}
    try:
        p.start_sandbox()
        for c in pod["spec"]["containers"]:
            res, cid = p.run_container(c, args.command)
            out["containers"].append(res)
            p.remove_container(cid)
    except CriError as e:
        out["error"] = str(e)
        print(json.dumps(out))
        print(f"cri-client: {e}", file=sys.stderr)
        return 1
    finally:
        p.remove()
    print(json.dumps(out))
    return 0


def cmd_bench(rt, args):
    """Container starts (CreateContainer + StartContainer) per kind, kinds shuffled every round,
    starts spaced by --space seconds; one sandbox per kind, kept for the whole run."""
    kinds = []
    for spec in args.kinds:
        name, _, rest = spec.partition("=")
        path, _, strategy = rest.partition("@")
        if not path or (strategy and strategy not in STRATEGIES):
            raise Usage(f"kind {spec!r}: want NAME=POD.json[@STRATEGY], STRATEGY one of {', '.join(STRATEGIES)}")
        p = Pod(rt, load_pod(path), args, args.log_dir)
        if strategy:
            p.plugin = DevicePlugin(strategy, args.gpus, args.cdi_kind)
        kinds.append((name, p))
    times = {name: [] for name, _ in kinds}
    try:
        for _, p in kinds:
            p.start_sandbox()
        for r in range(args.warmup + args.rounds):
            order = kinds[:]
            random.shuffle(order)
            for name, p in order:
                time.sleep(args.space)
                c = p.pod["spec"]["containers"][0]
                res, cid = p.run_container(c, args.command)
                if res.get("exit_code") != 0:
                    raise CriError(f"{name}: the container exited {res.get('exit_code')}: {res.get('log')}")
                if r >= args.warmup:
                    times[name].append(res["start_ms"])
                p.remove_container(cid)
    finally:
        for _, p in kinds:
            p.remove()
    print(json.dumps({n: {"median_ms": round(statistics.median(v), 2), "min_ms": min(v), "max_ms": max(v),
                          "n": len(v)} for n, v in times.items()}))
    return 0


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--socket", required=True, help="the CRI runtime's gRPC socket")
    ap.add_argument("--proto", default=DEFAULT_PROTO)
    ap.add_argument("--stubs", required=True, help="directory for the generated stubs")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per CRI call")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("version")
    for name in ("run", "bench"):
        p = sub.add_parser(name)
        if name == "run":
            p.add_argument("pod", help="the Pod manifest as JSON")
        else:
            p.add_argument("kinds", nargs="+", metavar="NAME=POD.json[@STRATEGY]",
                           help="a kind: a pod, and the device plugin strategy for it")
            p.add_argument("--rounds", type=int, default=15)
            p.add_argument("--warmup", type=int, default=2)
            p.add_argument("--space", type=float, default=0.3)
        p.add_argument("--runtime-class", action="append", default=[], metavar="FILE",
                       help="a RuntimeClass manifest as JSON (repeatable)")
        p.add_argument("--device-plugin", choices=STRATEGIES, help="NVIDIA device plugin's --device-list-strategy")
        p.add_argument("--gpus", default="", help="the node's GPU ids the device plugin hands out, in order")
        p.add_argument("--cdi-kind", default=GPU_RESOURCE, help="the CDI kind of the device plugin's devices")
        p.add_argument("--claim", action="append", default=[], metavar="NAME=DEVICE[,DEVICE]",
                       help="the CDI devices a DRA driver prepared for the pod's claim NAME")
        p.add_argument("--host-network", action="store_true", help="run every pod with the node's network")
        p.add_argument("--cgroup-parent", default="")
        p.add_argument("--log-dir", required=True)
        p.add_argument("--wait", type=float, default=30.0, help="seconds to wait for a container to exit")
        p.add_argument("--command", help="JSON list replacing the container's command and args")
    args = ap.parse_args(argv)
    if args.cmd != "version":
        args.runtime_classes = [load_json(f, "RuntimeClass") for f in args.runtime_class]
        args.gpus = [g for g in args.gpus.split(",") if g]
        args.claims = {}
        for c in args.claim:
            name, _, devs = c.partition("=")
            if not devs:
                raise Usage(f"--claim {c!r}: want NAME=DEVICE[,DEVICE]")
            args.claims[name] = devs.split(",")
        if args.command is not None:
            args.command = json.loads(args.command)
            if not isinstance(args.command, list) or not all(isinstance(x, str) for x in args.command):
                raise Usage("--command: want a JSON list of strings")
    return args


def main(argv):
    try:
        args = parse_args(argv)
        load_stubs(args.proto, args.stubs)
        rt = Runtime(args.socket, args.timeout)
        if args.cmd == "version":
            v = rt.version()
            print(json.dumps({"runtime": v.runtime_name, "version": v.runtime_version,
                              "api": v.runtime_api_version}))
            return 0
        return cmd_run(rt, args) if args.cmd == "run" else cmd_bench(rt, args)
    except Usage as e:
        print(f"cri-client: {e}", file=sys.stderr)
        return 2
    except CriError as e:
        print(f"cri-client: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
