#!/bin/bash
# The library's shape, as a user of it sees it: libgpuhook.so exports only gpuhook_*, needs no
# jansson and carries none of the hook-only modules; the pkg-config file builds and links a program
# against it; the GPU model header is shared without an include cycle.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
: "${GH_BUILD_DIR:?}"
SO=$GH_BUILD_DIR/lib/libgpuhook.so
t_need_cmd readelf
t_need_cmd nm

t_nomatch "$(readelf -d "$SO" | grep NEEDED)" "jansson" "libgpuhook.so does not need libjansson"
t_is "$(nm -D --defined-only "$SO" | awk '$2 == "T" {print $3}' | grep -v '^gpuhook_' | tr '\n' ' ')" "" \
        "libgpuhook.so exports only gpuhook_* functions"
t_is "$(nm "$SO" | grep -Eo ' (gh_oci_|gh_env_|gh_config_|gh_hooklog_|json_)[a-z_]*' | sort -u | tr '\n' ' ')" "" \
        "libgpuhook.so carries no OCI, env decision, hook configuration, hook log or jansson code"
t_match "$(nm "$GH_BUILD_DIR/hook/gpu-hook" | grep -c ' gh_env_decide$')" '^1$' "gpu-hook has the env decision"

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

# The GPU model types have their own header: the service and its protocol do not include gpus.h.
t_is "$(grep -l '#include "gpus.h"' "$GH_SOURCE_DIR"/lib/service.[ch] "$GH_SOURCE_DIR"/lib/rpc.[ch] | tr '\n' ' ')" "" \
        "service and rpc use gpumodel.h, not gpus.h (no include cycle)"
t_done
