#!/bin/bash
# The driver-state cache against the fake driver: the first NVML query fills it, the next answer
# comes from it with NO NVML start (the fake NVML appends a line to etc/fake-nvml-inits per
# nvmlInit); every fingerprint input that changes forces a fresh, correct answer; hostile cache
# files are never trusted and get replaced; concurrent cold starts leave a valid file; a container
# with NVIDIA_REQUIRE_CUDA starts on a warm cache without NVML.  Never touches /run: every command
# names its own --state-file under $T.
. "${GH_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib.sh"

t_need_root
MAKE_ROOT=$GH_SOURCE_DIR/tests/fake-driver/make-root.sh
PROFILES=$GH_SOURCE_DIR/tests/fake-driver/profiles
CONF=${GH_BUILD_DIR:+$GH_BUILD_DIR/tests/fake-driver/fake-driver.conf}
[ -n "$CONF" ] && [ -f "$CONF" ] || t_skip_all "no built fake driver (GH_BUILD_DIR=${GH_BUILD_DIR:-unset})"

R=$T/drv
SF=$T/cache/driver-state.json
"$MAKE_ROOT" "$R" --profile "$PROFILES/8gpu-mig.json" >"$T/make.log" 2>&1 || { t_diag_file "$T/make.log"; t_skip_all "make-root failed"; }
install -m 0666 /dev/null "$R/etc/fake-nvml-inits"

inits() { wc -l <"$R/etc/fake-nvml-inits"; }
cli() { "$GPU_CLI" --root="$R" --state-file="$SF" "$@"; }
# info --json without the "source" field, canonical: what a user relies on.
answer() { cli info --json "$@" | "$GH_PYTHON" -c 'import json,sys; d=json.load(sys.stdin); d.pop("source"); print(json.dumps(d, sort_keys=True))'; }
source_of() { cli info --json "$@" | "$GH_PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["source"])'; }
truth() { "$GPU_CLI" --root="$R" --no-cache info --json | "$GH_PYTHON" -c 'import json,sys; d=json.load(sys.stdin); d.pop("source"); print(json.dumps(d, sort_keys=True))'; }

# --- fill, then hit -------------------------------------------------------------------------------
t_is "$(source_of)" nvml "first query: answered by NVML"
t_is "$(inits)" 1 "first query: one NVML start"
t_ok "first query: the cache file exists" test -f "$SF"
t_is "$(stat -c '%U %a' "$SF")" "root 644" "the cache file is root's, mode 0644"
t_is "$(stat -c '%U %a' "$(dirname "$SF")")" "root 755" "its directory was created root's, mode 0755"
t_is "$(source_of)" cache "second query: answered by the cache"
t_is "$(inits)" 1 "second query: NO NVML start"
t_is "$(answer)" "$(truth)" "the cached answer is exactly NVML's (8 GPUs, MIG devices, cap minors)"
n=$(inits)
t_is "$(cli info | sed -n 3p)" "Source:         cache" "text output says where the answer came from"
t_is "$(cli info --no-cache --json | grep -c '"source": "nvml"')" 1 "info --no-cache asks NVML"
t_is "$(inits)" $((n + 1)) "--no-cache: NVML started"
t_match "$(cli cache show | head -n1)" "fresh" "cache show: fresh"
t_is "$(cli cache show >/dev/null; echo $?)" 0 "cache show: exit 0 when fresh"
t_is "$(cli list --device=all | grep -c nvidia-cap)" "$("$GPU_CLI" --root="$R" list --device=all | grep -c nvidia-cap)" \
        "list --device=all on a warm cache: the same MIG cap nodes as with NVML"
n=$(inits)
t_is "$(cli info --fast --json | grep -c '"source": "proc"')" 1 "info --fast: source proc"
"$GPU_CLI" --root="$R" info >/dev/null
t_is "$(inits)" $((n + 1)) "another --root without --state-file: no cache, NVML asked"

# --- another boot -------------------------------------------------------------------------------
# Everything else unchanged, another boot id (bind-mounted over the kernel's in a private mount
# namespace): the cache written before "the reboot" is not used.
cli info >/dev/null
printf '%s\n' 01234567-89ab-cdef-0123-456789abcdef >"$T/boot_id"
after_reboot() { unshare -m sh -c 'mount --bind "$0" /proc/sys/kernel/random/boot_id && exec "$@"' "$T/boot_id" "$@"; }
t_match "$(after_reboot "$GPU_CLI" --root="$R" --state-file="$SF" cache show | head -n1)" "stale: boot changed" \
        "another boot id: cache show says the boot changed"
n=$(inits)
t_is "$(after_reboot "$GPU_CLI" --root="$R" --state-file="$SF" info --json | grep -c '"source": "nvml"')" 1 \
        "another boot id: the answer comes from NVML, not the old cache"
t_is "$(inits)" $((n + 1)) "another boot id: NVML started once"
cli info >/dev/null # refilled for the real boot id: the checks below start from a fresh cache
t_is "$(source_of)" cache "back on the real boot id: a hit again after one refill"

# --- each fingerprint input -----------------------------------------------------------------------
# changed WHAT: after a change, the next query misses, says why (cache show), answers like NVML,
# and the query after that is a hit again.
changed() {
        local what=$1 why n
        why=$(cli cache show | head -n1)
        n=$(inits)
        t_is "$(source_of)" nvml "$what: the cache misses"
        t_match "$why" "stale|ignored|missing" "$what: cache show said it no longer holds ($why)"
        t_is "$(answer)" "$(truth)" "$what: the answer is the new truth"
        t_is "$(source_of)" cache "$what: then a hit again"
        t_is "$(inits)" $((n + 2)) "$what: NVML started for the miss and the truth only"
}

sed -i 's/580\.95\.05/580.95.07/' "$R/proc/driver/nvidia/version"
changed "driver version"
t_match "$(cli info | head -n1)" "580\.95\.07" "driver version: the new version is reported"
sed -i 's/580\.95\.07/580.95.05/' "$R/proc/driver/nvidia/version"
changed "driver version back"

# MIG layout switch: another MIG profile's capability tree and fake NVML data on the same GPUs.
"$GH_PYTHON" - "$PROFILES/8gpu-mig.json" "$T/mig2.json" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
migs = [g for g in p["gpus"] if g.get("mig", {}).get("devices")]
g0 = migs[0]
m = g0["minor"]
# one 7g device instead of the first GPU's layout; the second MIG GPU loses its devices
g0["mig"]["devices"] = [{"gi": 0, "ci": 0, "uuid": "MIG-7a1b2c3d-0000-5000-8000-000000000777", "profile": "7g.80gb",
                         "gi_minor": 3 + 135 * m, "ci_minor": 3 + 135 * m + 1}]
migs[1]["mig"]["devices"] = []
json.dump(p, open(sys.argv[2], "w"))
EOF
"$MAKE_ROOT" "$T/drv2" --profile "$T/mig2.json" >"$T/make2.log" 2>&1 || t_diag_file "$T/make2.log"
rm -rf "$R/proc/driver/nvidia/capabilities"
cp -a "$T/drv2/proc/driver/nvidia/capabilities" "$R/proc/driver/nvidia/"
for d in "$T"/drv2/proc/driver/nvidia/gpus/*; do cat "$d/fake-nvml" >"$R/proc/driver/nvidia/gpus/$(basename "$d")/fake-nvml"; done
t_match "$(cli cache show | head -n1)" "stale: caps changed" "MIG switch: the capability tree is what changed"
changed "MIG layout switch"
t_is "$(cli info --json | grep -c '"uuid": "MIG-7a1b2c3d')" 1 "MIG switch: the new MIG device is listed"

# GPU removed, then added back.
G=$(ls "$R/proc/driver/nvidia/gpus" | sort | tail -n1)
mv "$R/proc/driver/nvidia/gpus/$G" "$T/gpu-away"
changed "GPU removed"
t_is "$(cli info --json | grep -c '"bus_location"')" 7 "GPU removed: 7 GPUs"
mv "$T/gpu-away" "$R/proc/driver/nvidia/gpus/$G"
changed "GPU added"
t_is "$(cli info --json | grep -c '"bus_location"')" 8 "GPU added: 8 GPUs"

# Library replaced (same content, a new file: what a package upgrade does).
ML=$(readlink -f "$R/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1")
cp -p "$ML" "$ML.new" && mv -f "$ML.new" "$ML"
t_match "$(cli cache show | head -n1)" "stale: lib changed" "libnvidia-ml replaced: cache show names the library"
changed "libnvidia-ml replaced"
CU=$(readlink -f "$R/usr/lib/x86_64-linux-gnu/libcuda.so.1")
cp -p "$CU" "$CU.new" && mv -f "$CU.new" "$CU"
changed "libcuda replaced"
ldconfig -r "$R" 2>/dev/null # what a driver install runs
t_match "$(cli cache show | head -n1)" "stale: ldcache changed" "ld.so.cache rebuilt: cache show names it"
changed "ld.so.cache rebuilt"

# --- hostile cache files --------------------------------------------------------------------------
cli info >/dev/null
cp "$SF" "$T/good.json"
# hostile NAME SETUP: the file SETUP leaves is not trusted; the answer is still right; it is replaced.
hostile() {
        local name=$1 n rc
        shift
        rm -rf "$SF"
        "$@"
        n=$(inits)
        out=$(timeout 20 "$GPU_CLI" --root="$R" --state-file="$SF" info --json 2>"$T/err")
        rc=$?
        t_is "$rc" 0 "hostile ($name): info succeeds" || t_diag_file "$T/err"
        t_is "$(printf '%s' "$out" | grep -c '"source": "nvml"')" 1 "hostile ($name): not trusted, NVML asked"
        t_is "$(printf '%s' "$out" | "$GH_PYTHON" -c 'import json,sys; d=json.load(sys.stdin); d.pop("source"); print(json.dumps(d, sort_keys=True))')" \
                "$(truth)" "hostile ($name): the answer is right"
        if [ "$name" = "a directory" ]; then
                t_ok "hostile ($name): left alone (not ours to remove)" test -d "$SF"
                return
        fi
        t_ok "hostile ($name): replaced by a valid cache" test -f "$SF" -a ! -L "$SF"
        t_is "$(source_of)" cache "hostile ($name): the replacement is used"
}
absurd() { "$GH_PYTHON" - "$T/good.json" "$SF" "$1" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(d, open(sys.argv[2], "w"))
EOF
chmod 644 "$SF"; }
hostile "owned by nobody" sh -c "cp '$T/good.json' '$SF' && chown 65534 '$SF'"
hostile "group-writable" sh -c "cp '$T/good.json' '$SF' && chmod 664 '$SF'"
hostile "other-writable" sh -c "cp '$T/good.json' '$SF' && chmod 646 '$SF'"
cp "$T/good.json" "$T/elsewhere.json"
hostile "symlink to a valid cache" ln -s "$T/elsewhere.json" "$SF"
t_is "$(cmp -s "$T/good.json" "$T/elsewhere.json"; echo $?)" 0 "hostile (symlink): its target was not written"
hostile "FIFO" mkfifo -m 644 "$SF"
hostile "huge (2 MiB)" sh -c "cp '$T/good.json' '$SF' && head -c 2097152 /dev/zero | tr '\\0' ' ' >>'$SF'"
hostile "garbage" sh -c "head -c 4096 /dev/urandom >'$SF'"
hostile "truncated" sh -c "head -c 300 '$T/good.json' >'$SF'"
hostile "a directory" mkdir "$SF"
rmdir "$SF"
hostile "minor 9999" absurd 'd["gpus"][0]["minor"] = 9999'
hostile "negative gi" absurd 'd["gpus"][0]["mig_devices"][0]["gpu_instance"] = -1'
hostile "5000 GPUs" absurd 'd["gpus"] = d["gpus"] * 625'
hostile "control character in a UUID" absurd 'd["gpus"][1]["uuid"] = "GPU-\u001b[2J"'
hostile "a 100 kB model name" absurd 'd["gpus"][1]["model"] = "x" * 100000'
hostile "cuda version not a number" absurd 'd["cuda_version"] = "13.0; rm -rf /"'
hostile "an unknown key" absurd 'd["gpus"][0]["evil"] = 1'
hostile "a GPU missing (fingerprint kept)" absurd 'del d["gpus"][3]'
hostile "another driver version (fingerprint kept)" absurd 'd["nvrm_version"] = "999.1"'
hostile "float minor" absurd 'd["gpus"][0]["minor"] = 0.5'
hostile "format 2" absurd 'd["format"] = 2'
hostile "duplicate bus ids" absurd 'd["gpus"][1]["bus_id"] = d["gpus"][0]["bus_id"]'

# --- concurrent cold starts -----------------------------------------------------------------------
rm -f "$SF"
for i in $(seq 8); do
        ( "$GPU_CLI" --root="$R" --state-file="$SF" info --json >"$T/par.$i" 2>&1; echo $? >"$T/par.$i.rc" ) &
done
wait
okc=0
for i in $(seq 8); do
        [ "$(cat "$T/par.$i.rc")" = 0 ] && grep -q '"nvrm_version"' "$T/par.$i" && okc=$((okc + 1))
done
t_is "$okc" 8 "8 concurrent cold starts: all answered"
t_is "$(cli cache show >/dev/null; echo $?)" 0 "8 concurrent cold starts: the cache left is valid and fresh"
t_is "$(ls -A "$(dirname "$SF")")" "$(basename "$SF")" "8 concurrent cold starts: no temporary file left"

# --- cache refresh / clear ------------------------------------------------------------------------
n=$(inits)
t_match "$(cli cache refresh)" "8 GPU\\(s\\), driver 580\\.95\\.05, CUDA 13\\.0" "cache refresh: asks NVML and says what it saved"
t_is "$(inits)" $((n + 1)) "cache refresh: one NVML start"
t_is "$(cli cache clear; echo $?)" 0 "cache clear: exit 0"
t_not "cache clear: the file is gone" test -e "$SF"
t_match "$(cli cache show)" "missing" "cache show after clear: missing"
t_is "$(cli cache show >/dev/null; echo $?)" 1 "cache show: exit 1 when missing"
t_is "$("$GPU_CLI" --root="$R" cache show >/dev/null 2>&1; echo $?)" 2 "cache show for another --root without --state-file: usage error"
t_is "$("$GPU_CLI" --state-file=relative info >/dev/null 2>&1; echo $?)" 2 "--state-file must be absolute: usage error"
t_match "$(cli cache fingerprint --repeat=200)" "^fingerprint: median [0-9.]+ us" "cache fingerprint --repeat prints its cost"

# --- only cuda requirements on a cold cache: libcuda unless MIG is involved ----------------------
plan_inits() { # configure --dry-run ARGS...: prints how many NVML starts it took
        local n
        n=$(inits)
        cli --no-cache configure --dry-run --compute "$@" "$T/plan-rootfs" >/dev/null 2>&1
        echo $(($(inits) - n))
}
mkdir -p "$T/plan-rootfs"
t_is "$(plan_inits -d 0 -R 'cuda>=12.0')" 0 "configure -d 0 -R cuda>=12.0: libcuda, no NVML"
t_is "$(plan_inits -d 0 -R 'cuda>=12.0' -R 'cuda<14')" 0 "two cuda-only requirements: no NVML"
t_is "$(plan_inits -d 0 -R 'cuda>=12.0' --mig-config=all)" 1 "cuda-only with --mig-config: NVML"
t_is "$(plan_inits -d 0 -R 'cuda>=12.0' --mig-monitor=all)" 1 "cuda-only with --mig-monitor: NVML"
mig=$(cli --no-cache info --json | "$GH_PYTHON" -c 'import json,sys; print(next(g["mig_devices"][0]["uuid"] for g in json.load(sys.stdin)["gpus"] if g["mig_devices"]))')
t_is "$(plan_inits -d "$mig" -R 'cuda>=12.0')" 1 "cuda-only with a MIG device named: NVML"
t_is "$(plan_inits -d 0 -R 'cuda>=12.0' -R 'arch>=8.0')" 1 "a cuda and an arch requirement: NVML"

# --- a CUDA container on a warm cache: no NVML, same decisions ------------------------------------
if have_cmd runc; then
        cat >"$T/hook.json" <<EOF
{"cli": {"root": "$R", "path": "$GPU_CLI", "state-file": "$SF"}, "log": {"file": "$T/hook.log"}, "containers": {"dir": "$T/records"}}
EOF
        make_busybox_rootfs "$T/rootfs" || t_fail "busybox rootfs"
        req_run() {
                make_bundle "$T/b-$1" "$T/rootfs" /bin/true
                bundle_set_env "$T/b-$1" "NVIDIA_VISIBLE_DEVICES=${3:-all}" "NVIDIA_REQUIRE_CUDA=$2"
                bundle_add_hook "$T/b-$1" createRuntime "$GPU_HOOK" "--config=$T/hook.json" createRuntime
                run_runc "$T/b-$1" "$1"
        }
        # A cold cache and only cuda requirements: the GPUs from /proc, the CUDA version from libcuda,
        # no NVML start, and nothing saved (that answer lacks brand and architecture).  GPUs 0 and 1:
        # "all" on this driver includes MIG devices, which only NVML names.
        cli cache clear
        n=$(inits)
        req_run cold "cuda>=12.0" 0,1
        t_is "$RUN_RC" 0 "runc + NVIDIA_REQUIRE_CUDA=cuda>=12.0, cold cache: starts" || t_diag "$RUN_STDERR"
        t_is "$(inits)" "$n" "cold cache, only cuda requirements: no NVML start (CUDA version from libcuda)"
        t_not "cold cache, only cuda requirements: the libcuda answer is not saved" test -e "$SF"
        req_run cold-all "cuda>=12.0"
        t_is "$RUN_RC" 0 "cold cache, cuda>=12.0, all GPUs with MIG instances: starts" || t_diag "$RUN_STDERR"
        t_is "$(inits)" $((n + 1)) "cold cache, cuda>=12.0, all GPUs with MIG instances: NVML asked (MIG devices)"
        # Brand, arch and driver still need NVML (and fill the cache).
        i=0
        for e in "cuda>=12.0 brand=tesla" "arch>=8.0" "driver>=500"; do
                i=$((i + 1))
                cli cache clear
                n=$(inits)
                req_run "nvml$i" "$e" 0,1
                t_is "$RUN_RC" 0 "cold cache, NVIDIA_REQUIRE_CUDA=$e: starts" || t_diag "$RUN_STDERR"
                t_is "$(inits)" $((n + 1)) "cold cache, NVIDIA_REQUIRE_CUDA=$e: NVML asked"
                t_ok "cold cache, NVIDIA_REQUIRE_CUDA=$e: NVML's answer saved" test -f "$SF"
        done
        # --no-cache: no lookup, and only cuda requirements still need no NVML.
        printf '{"cli": {"root": "%s", "path": "%s", "no-cache": true}, "log": {"file": "%s"}, "containers": {"dir": "%s"}}\n' \
                "$R" "$GPU_CLI" "$T/hook.log" "$T/records" >"$T/hook-nocache.json"
        nocache_run() {
                make_bundle "$T/b-$1" "$T/rootfs" /bin/true
                bundle_set_env "$T/b-$1" NVIDIA_VISIBLE_DEVICES=0,1 "NVIDIA_REQUIRE_CUDA=$2"
                bundle_add_hook "$T/b-$1" createRuntime "$GPU_HOOK" "--config=$T/hook-nocache.json" createRuntime
                run_runc "$T/b-$1" "$1"
        }
        n=$(inits)
        nocache_run nocache "cuda>=12.0"
        t_is "$RUN_RC" 0 "--no-cache + cuda>=12.0: starts" || t_diag "$RUN_STDERR"
        t_is "$(inits)" "$n" "--no-cache + cuda>=12.0: no NVML start (libcuda)"
        n=$(inits)
        nocache_run nocache2 "cuda>=12.0 brand=tesla"
        t_is "$RUN_RC" 0 "--no-cache + cuda>=12.0 brand=tesla: starts" || t_diag "$RUN_STDERR"
        t_is "$(inits)" $((n + 1)) "--no-cache + a brand requirement: NVML asked"

        # The same decisions and messages from libcuda as from NVML: each expression once through
        # libcuda, once with libcuda unreadable to the service child (which falls back to NVML).
        cudalib=$(readlink -f "$R/usr/lib/x86_64-linux-gnu/libcuda.so.1")
        cudamode=$(stat -c %a "$cudalib")
        decide() { # $1 tag, $2 expression: "started|" or "refused|<requirement message>"
                cli cache clear
                req_run "$1" "$2" 0,1
                printf '%s|%s' "$([ "$RUN_RC" -eq 0 ] && echo started || echo refused)" \
                        "$(printf '%s' "$RUN_STDERR" | grep -o "requirement.*")"
        }
        i=0
        for e in "cuda>=13.1" "cuda<13.0" "cuda>=99.0 cuda<=12.9" "cuda=13.0" "CUDA>=12.0,cuda<14"; do
                i=$((i + 1))
                n=$(inits)
                fast=$(decide "lc$i" "$e")
                t_is "$(inits)" "$n" "'$e' on a cold cache: no NVML start"
                chmod 0600 "$cudalib"
                slow=$(decide "nv$i" "$e")
                chmod "$cudamode" "$cudalib"
                t_is "$(inits)" $((n + 1)) "'$e' with libcuda unusable: falls back to NVML"
                t_is "$fast" "$slow" "'$e': the same decision and message from libcuda and NVML (${fast%%|*})"
        done
        t_is "$fast" "started|" "the last expression is met (the set has both outcomes)"
        t_match "$(decide lc-unmet "cuda>=13.1")" \
                "^refused\|requirement 'cuda>=13\.1' not met: the driver supports CUDA 13\.0" \
                "an unmet cuda requirement from libcuda: refused, naming the driver's CUDA version"

        cli cache refresh >/dev/null
        n=$(inits)
        req_run warm "cuda>=12.0"
        t_is "$RUN_RC" 0 "runc + NVIDIA_REQUIRE_CUDA=cuda>=12.0, warm cache: starts" || t_diag "$RUN_STDERR"
        t_is "$(inits)" "$n" "warm cache: the container started without any NVML start"
        req_run unmet "cuda>=99.0 brand=geforce"
        warm_err=$(printf '%s' "$RUN_STDERR" | grep -o "requirement.*")
        warm_rc=$RUN_RC
        cli cache clear
        req_run unmet-cold "cuda>=99.0 brand=geforce"
        t_not "unmet requirement on a warm cache: the start is aborted" test "$warm_rc" -eq 0
        t_is "$warm_err" "$(printf '%s' "$RUN_STDERR" | grep -o "requirement.*")" "unmet requirement: the same message warm and cold"
else
        t_skip "runc + gpu-hook on a warm cache" "runc is not installed"
fi

t_done
