# shellcheck shell=bash
# Kubernetes manifests in the engine bed's kubectl 1.32 (no API server: client-side only).
#
#   k8s_json FILE OUT   FILE (YAML, one or more documents) as JSON in OUT: the object, or a List of
#                       the objects when there are several.  kubectl decodes the YAML (the
#                       `annotate --local` of an annotation that is not there: nothing changes but
#                       an empty metadata.annotations).
k8s_json() {
        kubectl annotate --local -o json -f "$1" gpu-hook.test/none- 2>"$2.err" |
                python3 -c 'import json, sys
text, objs, dec, i = sys.stdin.read(), [], json.JSONDecoder(), 0
while True:
    while i < len(text) and text[i].isspace(): i += 1
    if i >= len(text): break
    o, i = dec.raw_decode(text, i)
    objs.append(o)
if not objs: sys.exit("no object")
json.dump(objs[0] if len(objs) == 1 else {"apiVersion": "v1", "kind": "List", "items": objs}, open(sys.argv[1], "w"))' "$2"
}
