#!/bin/bash
# The library's shape (docs/architecture.md#layers): lib/ is four folders that are four libraries,
# util < core < front < ops, and a file may include only headers of its own folder and of the
# folders below it.  libgpuhook.so (core + util) exports only gpuhook_*, needs no jansson and
# carries no front or ops code; gpu-hook carries no ops code; the core reaches no layer above it
# (no weak references); the pkg-config file builds and links a program against the library.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
: "${GH_BUILD_DIR:?}"
SO=$GH_BUILD_DIR/lib/libgpuhook.so
LIB=$GH_SOURCE_DIR/lib
t_need_cmd readelf
t_need_cmd nm

# ---- include rules, from the sources ----
declare -A rank=([util]=0 [core]=1 [front]=2 [ops]=3)
declare -A home=()
for d in util core front ops; do
        for h in "$LIB/$d"/*.h; do
                [ -e "$h" ] && home[$(basename "$h")]=$d
        done
done
# Generated or top-level headers every layer may include: the API, the build's config.h, and
# rpcgen's nvml.h (core only, checked below).
home[gpuhook.h]=api
home[config.h]=api
home[nvml.h]=core
home[nvml_xdr.inc]=core
violations=""
unknown=""
for d in util core front ops; do
        for f in "$LIB/$d"/*.[ch]; do
                [ -e "$f" ] || continue
                while read -r inc; do
                        h=${home[$inc]:-}
                        if [ -z "$h" ]; then
                                unknown+="${f#"$LIB"/} includes \"$inc\" (no such header in lib/); "
                        elif [ "$h" != api ] && [ "${rank[$h]}" -gt "${rank[$d]}" ]; then
                                violations+="${f#"$LIB"/} includes $h/$inc; "
                        fi
                done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
        done
done
t_is "$violations" "" "no lib/ file includes a header of a layer above its own (util < core < front < ops)"
t_is "$unknown" "" "every quoted include in lib/ names a header of lib/"
dup=$(for d in util core front ops; do ls "$LIB/$d"/*.h 2>/dev/null | xargs -n1 basename; done | sort | uniq -d | tr '\n' ' ')
t_is "$dup" "" "no header name exists in two folders"
t_is "$(ls "$LIB"/*.c 2>/dev/null | tr '\n' ' ')" "" "no source file outside the four folders"
t_is "$(grep -rlE '#pragma weak|__attribute__\(\(weak' "$LIB" | tr '\n' ' ')" "" \
        "no weak references in lib/: a lower layer is handed what it needs, it never looks up"
t_is "$(grep -l '#include "gpus.h"' "$LIB"/core/service.[ch] "$LIB"/core/rpc*.[ch] | tr '\n' ' ')" "" \
        "service and rpc use gpumodel.h, not gpus.h (no include cycle)"

# ---- what the built libraries and programs carry ----
t_nomatch "$(readelf -d "$SO" | grep NEEDED)" "jansson" "libgpuhook.so does not need libjansson"
t_is "$(nm -D --defined-only "$SO" | awk '$2 == "T" {print $3}' | grep -v '^gpuhook_' | tr '\n' ' ')" "" \
        "libgpuhook.so exports only gpuhook_* functions"
# Every global function the front and ops archives define (their own, not what they pull from the
# core). File-local functions are left out: two static helpers may share a name, and a sanitizer
# build gives every object the same local constructors (asan.module_ctor).
upper=$(nm --defined-only "$GH_BUILD_DIR"/lib/front/libgpuhook-front.a "$GH_BUILD_DIR"/lib/ops/libgpuhook-ops.a |
        awk '$2 == "T" {print $3}' | sort -u)
ops=$(nm --defined-only "$GH_BUILD_DIR"/lib/ops/libgpuhook-ops.a | awk '$2 == "T" {print $3}' | sort -u)
t_match "$(printf '%s\n' "$upper" | grep -c .)" '^[1-9][0-9]+$' "the front and ops archives define functions (the check below has something to look for)"
t_is "$(comm -12 <(printf '%s\n' "$upper") <(nm "$SO" | awk '$2 == "T" || $2 == "t" {print $3}' | sort -u) | tr '\n' ' ')" "" \
        "libgpuhook.so carries no front or ops code (OCI, env decision, hook config and log, cache, doctor, CDI, MPS daemons)"
t_is "$(nm "$SO" | grep -Eo ' json_[a-z_]*' | sort -u | tr '\n' ' ')" "" "libgpuhook.so carries no jansson code"
t_is "$(comm -12 <(printf '%s\n' "$ops") <(nm "$GH_BUILD_DIR/hook/gpu-hook" | awk '$2 == "T" {print $3}' | sort -u) | tr '\n' ' ')" "" \
        "gpu-hook carries no ops code (doctor, CDI, MPS daemons)"
t_match "$(nm "$GH_BUILD_DIR/hook/gpu-hook" | grep -c ' gh_env_decide$')" '^1$' "gpu-hook has the env decision"
t_match "$(nm "$GH_BUILD_DIR/hook/gpu-hook" | grep -c ' gh_configure$')" '^1$' "gpu-hook has the configure step itself (it runs no gpu-cli)"

# pkg-config: a program built from gpuhook.pc alone runs.
PC=$GH_BUILD_DIR/meson-uninstalled
if have_cmd pkg-config; then
        cat >"$T/p.c" <<'EOS'
#include <gpuhook.h>
#include <stdio.h>
int main(void) { struct gpuhook_error e = { .kind = GPUHOOK_ERR_NO_DRIVER }; printf("%s %d\n", gpuhook_version(), gpuhook_error_exit_status(&e)); return 0; }
EOS
        flags=$(PKG_CONFIG_PATH=$PC pkg-config --cflags --libs gpuhook-uninstalled)
        # a sanitizer build's library needs the sanitizer runtime first in the program, too
        readelf -d "$SO" | grep -q 'libasan' && flags="-fsanitize=address,undefined $flags"
        t_ok "cc with pkg-config --cflags --libs gpuhook" cc -o "$T/p" "$T/p.c" $flags
        t_is "$(LD_LIBRARY_PATH=$GH_BUILD_DIR/lib "$T/p")" "$(PKG_CONFIG_PATH=$PC pkg-config --modversion gpuhook-uninstalled) 3" \
                "the program runs: the version and the no-driver exit status"
else
        t_skip "pkg-config" "pkg-config is not installed"
fi
t_done
