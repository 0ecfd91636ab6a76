#!/bin/bash
# One request, one plan: for every fake driver profile, capability set and device selection, what a
# runc container configured by gpu-cli holds (device nodes with their numbers, files, sockets,
# links, the ld cache, /proc/driver/nvidia) is exactly what `gpu-cli list --json` plans for the
# same request, and `gpu-cli configure --dry-run` prints that same plan.  Also the defects that a
# second, diverging planner caused (MIG capability nodes under --device=all, --user, IMEX limits).
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
t_need_root
t_need_cmd runc
MKROOT=$GH_SOURCE_DIR/tests/fake-driver/make-root.sh
PROFILES=$GH_SOURCE_DIR/tests/fake-driver/profiles
COMPARE=$GH_SOURCE_DIR/tests/integration/plan-compare.py

# Each fake root is built once.
declare -A DRV
for p in default 8gpu-mig 64gpu; do
        DRV[$p]=$T/drv-$p
        bash "$MKROOT" "${DRV[$p]}" --profile "$PROFILES/$p.json" --sockets >"$T/mkroot-$p.log" 2>&1 ||
                { t_diag_file "$T/mkroot-$p.log"; t_fail "make-root.sh --profile $p"; t_done; exit; }
done
DRV[local]=$T/drv-local
bash "$MKROOT" "${DRV[local]}" --layout local >"$T/mkroot-local.log" 2>&1 ||
        { t_diag_file "$T/mkroot-local.log"; t_fail "make-root.sh --layout local"; t_done; exit; }

make_busybox_rootfs "$T/template" || { t_fail "busybox rootfs"; t_done; exit; }

# What the container prints: every non-directory under the directories the driver goes to (and the
# directories under /run and /tmp, where IPC directories go), then /proc/driver/nvidia.
LISTING='
for d in /dev /usr /lib /lib64 /etc /run /var /tmp /bin /sbin; do find $d 2>/dev/null; done | sort | while read -r p; do
        if [ -L "$p" ]; then echo "l $p $(readlink "$p")"
        elif [ -c "$p" ]; then echo "c $p $(stat -c %t:%T "$p")"
        elif [ -S "$p" ]; then echo "s $p"
        elif [ -d "$p" ]; then echo "d $p"
        elif [ -f "$p" ]; then echo "f $p"
        else echo "o $p"; fi
done
echo "--proc--"
cd /proc/driver/nvidia 2>/dev/null && find . -maxdepth 2 | sed -n "s|^\./||p" | sort
true
'

gpu_uuids() {
        local d
        for d in $(ls "$1/proc/driver/nvidia/gpus" | sort); do
                sed -n 's/^GPU UUID:[[:space:]]*//p' "$1/proc/driver/nvidia/gpus/$d/information"
        done
}

# run_listing NAME DRIVER_ROOT [CONFIGURE ARGS...]: a fresh copy of the template in a runc container,
# configured from a createRuntime hook when args are given; the listing lands in $T/NAME.{txt,proc}.
run_listing() {
        local name=$1 drv=$2 a args=""
        shift 2
        rm -rf "$T/$name"
        mkdir -p "$T/$name"
        cp -a "$T/template" "$T/$name/rootfs"
        make_bundle "$T/$name/b" "$T/$name/rootfs" /bin/sh -c "$LISTING"
        if [ $# -gt 0 ]; then
                for a in "$@"; do args="$args '$a'"; done
                cat >"$T/$name/hook" <<EOS
#!/bin/sh
pid=\$(sed -n 's/.*"pid": *\([0-9]*\).*/\1/p')
exec $GPU_CLI --root=$drv configure --pid=\$pid $args $T/$name/rootfs
EOS
                chmod 755 "$T/$name/hook"
                bundle_add_hook "$T/$name/b" createRuntime "$T/$name/hook"
        fi
        run_runc "$T/$name/b" "$name"
        printf '%s\n' "$RUN_STDOUT" | sed '/^--proc--$/,$d' >"$T/$name.txt"
        printf '%s\n' "$RUN_STDOUT" | sed '1,/^--proc--$/d' >"$T/$name.proc"
        return "$RUN_RC"
}

run_listing baseline "${DRV[default]}" || { t_fail "baseline container ran"; t_diag "$RUN_STDERR"; }

# check PROFILE DESC ARGS...: list --json == configure --dry-run, and == the configured container.
check() {
        local prof=$1 desc="$1: $2" drv=${DRV[$1]} name=c$((++N))
        shift 2
        if ! "$GPU_CLI" --root="$drv" list --json --rootfs="$T/template" "$@" >"$T/$name.plan" 2>"$T/$name.err"; then
                t_fail "$desc: list --json"
                t_diag_file "$T/$name.err"
                return
        fi
        if "$GPU_CLI" --root="$drv" configure --dry-run "$@" "$T/template" >"$T/$name.dry" 2>"$T/$name.err" &&
                "$GH_PYTHON" -c 'import json,sys; sys.exit(json.load(open(sys.argv[1])) != json.load(open(sys.argv[2])))' \
                        "$T/$name.plan" "$T/$name.dry"; then
                t_pass "$desc: configure --dry-run prints the plan list --json prints"
        else
                t_fail "$desc: configure --dry-run prints the plan list --json prints"
                t_diag_file "$T/$name.err"
                diff "$T/$name.plan" "$T/$name.dry" | head -n 10 | sed 's/^/# /'
        fi
        if ! run_listing "$name" "$drv" "$@"; then
                t_fail "$desc: the container ran"
                t_diag "$RUN_STDERR"
                return
        fi
        if "$GH_PYTHON" "$COMPARE" "$T/$name.plan" "$T/baseline.txt" "$T/$name.txt" "$T/$name.proc" \
                >"$T/$name.cmp" 2>"$T/$name.cmp.err"; then
                t_pass "$desc: the container holds exactly the plan ($(cat "$T/$name.cmp.err"))"
        else
                t_fail "$desc: the container holds exactly the plan"
                t_diag_file "$T/$name.cmp" 15
                t_diag_file "$T/$name.cmp.err"
        fi
}

N=0
ALLCAPS=(--compute --utility --video --graphics --display --ngx --compat32)
uuids=($(gpu_uuids "${DRV[default]}"))
check default "all, compute+utility" --device=all --compute --utility
check default "index 1, utility" --device=1 --utility
check default "a UUID, every capability" --device="${uuids[1]}" "${ALLCAPS[@]}"
uuids=($(gpu_uuids "${DRV[local]}"))
check local "all, compute+utility" --device=all --compute --utility
check local "a UUID, every capability" --device="${uuids[0]}" "${ALLCAPS[@]}"
check 64gpu "all, compute+utility" --device=all --compute --utility
check 64gpu "indices 63 and 0, graphics" --device=63,0 --graphics
check 8gpu-mig "index 1, utility" --device=1 --utility
MIGS=($("$GH_PYTHON" -c 'import json,sys
for g in json.load(open(sys.argv[1]))["gpus"]:
    for m in g.get("mig", {}).get("devices", []): print(m["uuid"])' "$PROFILES/8gpu-mig.json"))
check 8gpu-mig "MIG 1:1, compute" --device=1:1 --compute
check 8gpu-mig "a MIG UUID, every capability, MIG config and monitor" --device="${MIGS[0]}" "${ALLCAPS[@]}" \
        --mig-config=all --mig-monitor=all
check 8gpu-mig "all, every capability" --device=all "${ALLCAPS[@]}"

# --device=all on a driver with MIG instances gives every MIG device's capability nodes: the old
# configure planned its devices without NVML and gave none of them, while list gave them.
want=$("$GPU_CLI" --root="${DRV[8gpu-mig]}" list --device=all | grep -c "^${DRV[8gpu-mig]}/dev/nvidia-caps/")
run_listing mig-all "${DRV[8gpu-mig]}" --device=all --compute
got=$(grep -c '^c /dev/nvidia-caps/' "$T/mig-all.txt")
want_profile=$("$GH_PYTHON" -c 'import json,sys
m = [d for g in json.load(open(sys.argv[1]))["gpus"] for d in g.get("mig", {}).get("devices", [])]
print(len(set(d["gi_minor"] for d in m) | set(d["ci_minor"] for d in m)))' "$PROFILES/8gpu-mig.json")
t_is "$want" "$want_profile" "8gpu-mig: list --device=all plans every MIG device's GI and CI node ($want_profile)"
t_is "$got" "$want" "8gpu-mig: configure --device=all gives the container those $want /dev/nvidia-caps nodes"

# --user is parsed once, for every command: a bad one is a usage error before anything runs.
for cmd in "info" "list" "configure --dry-run $T/template" "configure --pid=1 $T/template"; do
        out=$("$GPU_CLI" --root="${DRV[default]}" --user=65534:x $cmd 2>&1 >/dev/null)
        t_is "$?" 2 "--user=65534:x before '$cmd' is refused (exit 2)"
        t_match "$out" "65534:x" "--user=65534:x: the message names it"
        [ "${cmd%% *}" = info ] && continue
        sub=${cmd%% *}
        rest=${cmd#"$sub"}
        "$GPU_CLI" --root="${DRV[default]}" $sub --user=65534:x $rest >/dev/null 2>&1
        t_is "$?" 2 "$sub --user=65534:x is refused (exit 2)"
done
# A good --user reaches the service child: 4242:4343 is who NVML runs as (the MIG request needs it).
"$GPU_CLI" --root="${DRV[8gpu-mig]}" --debug="$T/user.log" list --user=4242:4343 --device=1:1 >/dev/null 2>&1
t_is "$?" 0 "list --user=4242:4343 --device=1:1 works"

# IMEX: the hook's dry run and gpu-cli accept the same channels.
chans=$(seq -s, 0 64)
"$GPU_CLI" --root="${DRV[default]}" configure --dry-run --imex-channel="$chans" "$T/template" >/dev/null 2>"$T/imex.err"
t_is "$?" 0 "configure --dry-run takes 65 IMEX channels (the hook's dry run does)" || t_diag_file "$T/imex.err"
chans=$(seq -s, 0 2048)
"$GPU_CLI" --root="${DRV[default]}" configure --dry-run --imex-channel="$chans" "$T/template" >/dev/null 2>"$T/imex.err"
t_is "$?" 2 "configure --dry-run refuses 2049 IMEX channels (usage), as the hook does"
t_match "$(cat "$T/imex.err")" "more than 2048 IMEX channels" "the message says the limit"

# "No driver" is a kind of error, not an errno: a driver version file that exists but fails to
# open with a real ENODEV (a misc device node whose minor no driver registered) is a failure (exit
# 1) naming the system's error; only a missing file is "no driver" (exit 3).
bash "$MKROOT" "$T/drv-enodev" >/dev/null 2>&1
minor=$(for m in $(seq 150 180); do grep -q "^ *$m " /proc/misc || { echo "$m"; break; }; done)
rm -f "$T/drv-enodev/proc/driver/nvidia/version"
if mknod "$T/drv-enodev/proc/driver/nvidia/version" c 10 "$minor" && ! head -c1 "$T/drv-enodev/proc/driver/nvidia/version" 2>"$T/enodev.probe"; then
        t_match "$(cat "$T/enodev.probe")" "No such device" "misc 10:$minor opens with ENODEV here"
        for cmd in "list" "configure --dry-run $T/template" "info --fast"; do
                out=$("$GPU_CLI" --root="$T/drv-enodev" $cmd 2>&1 >/dev/null)
                t_is "$?" 1 "ENODEV opening the version file: ${cmd%% *} exits 1, not 3 (no driver)"
                t_match "$out" "No such device" "${cmd%% *}: the message says the system's error"
        done
else
        t_fail "a misc device node that fails with ENODEV (10:$minor)"
fi
rm -f "$T/drv-enodev/proc/driver/nvidia/version"
for cmd in "list" "configure --dry-run $T/template" "info --fast"; do
        "$GPU_CLI" --root="$T/drv-enodev" $cmd >/dev/null 2>&1
        t_is "$?" 3 "no version file: ${cmd%% *} exits 3 (no driver)"
done
"$GPU_CLI" --root="$T/nonexistent" list >/dev/null 2>&1
t_is "$?" 3 "a --root that does not exist: list exits 3 (no driver)"
# The same rule on every path from a driver root (gh_driver_root_open): configure itself too.
for cmd in "configure --dry-run $T/template" "configure --pid=$$ --device=0 $T/template" "info --fast" \
        "cdi generate --output=-" "cache show"; do
        "$GPU_CLI" --root="$T/nonexistent" --state-file="$T/state.json" $cmd >/dev/null 2>&1
        t_is "$?" 3 "a --root that does not exist: ${cmd% *} exits 3 (no driver)"
done

t_done
