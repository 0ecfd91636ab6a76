#!/bin/bash
# The manifests in contrib/kubernetes/, checked by kubectl 1.32 (the Debian 13 bed's) without an API
# server.  `kubectl create/apply --dry-run=client` need one (they ask it for the kinds), so:
#   - every document decodes as YAML into an object with apiVersion and kind (tests/engine/k8s.sh);
#   - `kubectl set image --local` decodes each into kubectl's own typed API object: a kind unknown
#     at that apiVersion, a field of the wrong type or a malformed quantity fails here.  For kinds
#     with a pod template (Pod, DaemonSet) it prints the typed object back, and every field we wrote
#     must still be there: a misspelled or unknown field, which typed decoding drops silently, fails;
#   - what ties them together: the handler the RuntimeClass names is the one `gpu-cli setup
#     containerd` writes, the DaemonSet runs node-install.sh where the Containerfile puts it, the
#     DRA pod's claim template is in its file.
# What this does not prove: what an API server would refuse (admission, quotas, immutable fields).
# The pods also run through containerd's CRI in test-cri.sh.
# Runs inside the engine bed (meson: bed-run.sh --test); started by hand, it enters the bed itself.
[ -n "${GH_BED:-}" ] || exec bash "${GH_SOURCE_DIR:?}/tests/engine/bed-run.sh" --test -- "$(realpath "$0")" "$@"
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
. "$GH_SOURCE_DIR/tests/engine/k8s.sh"
t_need_cmd kubectl python3
K8S=$GH_SOURCE_DIR/contrib/kubernetes
export HOME=$T # kubectl's cache

t_match "$(kubectl version --client 2>&1)" 'Client Version: v1\.32\.' "kubectl is 1.32"

# typed FILE.json: kubectl's typed decoding of one object; TYPED: its output, or the error
typed() {
        TYPED=$(kubectl set image --local -o json -f "$1" '*=gpu-hook.test/image' 2>&1)
        TYPED_RC=$?
}
# lost IN.json OUT: the fields of IN that the typed object OUT lacks or changed (images aside)
lost() {
        python3 - "$1" "$2" <<'PY'
import json, sys
a = json.load(open(sys.argv[1])); b = json.loads(sys.argv[2])
def walk(x, y, path):
    if isinstance(x, dict):
        for k, v in x.items():
            if k == "image" or v in ({}, [], None):
                continue
            if not isinstance(y, dict) or k not in y:
                print(path + "." + k)
            else:
                walk(v, y[k], path + "." + k)
    elif isinstance(x, list):
        if not isinstance(y, list) or len(x) != len(y):
            print(path)
        else:
            for i, (v, w) in enumerate(zip(x, y)):
                walk(v, w, f"{path}[{i}]")
    elif str(x) != str(y) and not (isinstance(x, bool) and str(x).lower() == str(y).lower()):
        print(f"{path} ({x!r} became {y!r})")
walk(a, b, "")
PY
}

# check FILE: every object of FILE decodes, typed; pod-bearing ones keep every field
check() {
        local f=$1 name i n kind out
        name=$(basename "$f" .yaml)
        k8s_json "$f" "$T/$name.json" || { t_fail "$name: kubectl decodes the YAML"; t_diag_file "$T/$name.json.err"; return; }
        n=$(python3 -c 'import json, sys
o = json.load(open(sys.argv[1])); items = o["items"] if o.get("kind") == "List" else [o]
for i, x in enumerate(items): json.dump(x, open(f"{sys.argv[2]}.{i}.json", "w"))
print(len(items))' "$T/$name.json" "$T/$name")
        for i in $(seq 0 $((n - 1))); do
                kind=$(python3 -c 'import json, sys; o = json.load(open(sys.argv[1])); print(o["apiVersion"] + " " + o["kind"])' "$T/$name.$i.json")
                typed "$T/$name.$i.json"
                if [ $TYPED_RC -eq 0 ]; then
                        t_pass "$name: $kind decodes into kubectl's typed object"
                        out=$(lost "$T/$name.$i.json" "$TYPED")
                        t_is "$out" "" "$name: $kind keeps every field through typed decoding (none unknown or misspelled)"
                elif grep -q 'does not have a pod template' <<<"$TYPED"; then
                        t_pass "$name: $kind decodes into kubectl's typed object (no pod template)"
                else
                        t_fail "$name: $kind decodes into kubectl's typed object"
                        t_diag "$TYPED"
                fi
        done
}

for f in "$K8S"/*.yaml "$K8S"/examples/*.yaml; do
        check "$f"
done

# The check can fail: a misspelled field, a quantity that is none, a kind that does not exist
mkdir -p "$T/bad"
sed 's/runtimeClassName:/runtimeClasName:/' "$K8S/examples/pod-runtimeclass.yaml" >"$T/bad/misspelled.yaml"
k8s_json "$T/bad/misspelled.yaml" "$T/bad/misspelled.json"
typed "$T/bad/misspelled.json"
t_match "$(lost "$T/bad/misspelled.json" "$TYPED")" '^\.spec\.runtimeClasName$' "a misspelled field is caught (spec.runtimeClasName)"
sed 's|nvidia.com/gpu: 1|nvidia.com/gpu: one|' "$K8S/examples/pod-cdi.yaml" >"$T/bad/quantity.yaml"
k8s_json "$T/bad/quantity.yaml" "$T/bad/quantity.json"
typed "$T/bad/quantity.json"
t_match "$TYPED_RC:$TYPED" '^1:.*quantities must match' "a malformed quantity is caught"
sed 's/^kind: RuntimeClass/kind: RuntimeKlass/' "$K8S/runtimeclass.yaml" >"$T/bad/kind.yaml"
k8s_json "$T/bad/kind.yaml" "$T/bad/kind.json"
typed "$T/bad/kind.json"
t_match "$TYPED_RC:$TYPED" '^1:.*no kind "RuntimeKlass" is registered' "an unknown kind is caught"

# What ties the files together
jq_() { python3 -c "import json, sys; o = json.load(open(sys.argv[1])); print($2)" "$1"; }
t_is "$(jq_ "$T/runtimeclass.json" 'o["metadata"]["name"], o["handler"]')" "gpu gpu" "RuntimeClass gpu, handler gpu"
t_match "$(grep -o '"containerd", "runtimes", "gpu"' "$GH_SOURCE_DIR/cli/setup-containerd.c" | head -n1)" . \
        "... the handler gpu-cli setup containerd writes"
ds='[i for i in o["items"] if i["kind"] == "DaemonSet"][0]["spec"]["template"]["spec"]'
t_is "$(jq_ "$T/daemonset.json" "${ds}['hostPID'], [c['securityContext']['privileged'] for c in ${ds}['initContainers'] + ${ds}['containers']], ${ds}['volumes'][0]['hostPath']['path']")" \
        "True [True, True] /" "DaemonSet: privileged, host PID namespace, the node's / mounted"
t_is "$(jq_ "$T/daemonset.json" "sorted(set(c['command'][0] for c in ${ds}['initContainers'] + ${ds}['containers']))")" \
        "['/opt/gpu-hook/share/gpu-hook/node-install.sh']" "DaemonSet: both containers run node-install.sh from the image"
t_match "$(cat "$K8S/Containerfile")" 'node-install.sh /out/opt/gpu-hook/share/gpu-hook/node-install.sh' "... where the Containerfile puts it"
t_is "$(jq_ "$T/daemonset.json" "[[e['value'] for e in c['env'] if e['name'] == 'HOST'] + [m['mountPath'] for m in c['volumeMounts']] for c in ${ds}['initContainers'] + ${ds}['containers']]")" \
        "[['/host', '/host'], ['/host', '/host']]" "DaemonSet: HOST is where the node's / is mounted"
t_ok "node-install.sh is valid sh" sh -n "$K8S/node-install.sh"
t_is "$(jq_ "$T/pod-dra.json" '[i["metadata"]["name"] for i in o["items"] if i["kind"] == "ResourceClaimTemplate"] == [c["resourceClaimTemplateName"] for i in o["items"] if i["kind"] == "Pod" for c in i["spec"]["resourceClaims"]]')" \
        True "DRA pod: its claim template is in its file"
t_done
