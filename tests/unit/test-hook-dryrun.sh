#!/bin/bash
# gpu-hook --dry-run, table-driven: every rule of docs/environment.md through the real binary (state on
# stdin, <bundle>/config.json, the hook's config file), then bad input of every kind.  Needs no root.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"

UUID=GPU-12345678-1234-1234-1234-123456789abc
UUID2=GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee
MIG=MIG-87654321-4321-4321-4321-cba987654321
ALLCAPS='"compat32","compute","display","graphics","ngx","utility","video"'
DEFCAPS='"compute","utility"'

json_str() {
        local s=${1//\\/\\\\}
        s=${s//\"/\\\"}
        printf '"%s"' "$s"
}

# write_config FLAGS: the hook's configuration file for a case.
write_config() {
        local flags=$1 f extra=""
        for f in ${flags//,/ }; do
                case $f in
                noenv) extra+='"accept-visible-devices-envvar-when-unprivileged": false, ' ;;
                vol) extra+='"accept-visible-devices-as-volume-mounts": true, ' ;;
                dr) extra+='"disable-require": true, ' ;;
                swarm) extra+='"swarm-resource": ["DOCKER_RESOURCE_GPU", "SWARM_B"], ' ;;
                sup=*) f=${f#sup=}; extra+="\"supported-driver-capabilities\": \"${f//+/,}\", " ;;
                esac
        done
        printf '{ %s"log": {"file": ""} }\n' "$extra" >"$T/hook.json"
}

# write_bundle FLAGS ENV: config.json with ENV ('|'-separated K=V entries).
write_bundle() {
        local flags=$1 env=$2 f caps='["CAP_KILL"]' effcaps= capsjson mounts="" ver=1.0.2 e envjson="" sep=""
        for f in ${flags//,/ }; do
                case $f in
                priv) caps='["CAP_KILL","CAP_SYS_ADMIN"]' ;;
                # Other CAP_SYS_* capabilities, and CAP_SYS_ADMIN outside the bounding set: unprivileged.
                nearpriv) caps='["CAP_KILL","CAP_SYS_PTRACE","CAP_SYS_CHROOT","CAP_SYS_ADMINX"]' ;;
                effadmin) effcaps='["CAP_KILL","CAP_SYS_ADMIN"]' ;;
                rc) ver=1.0.0-rc2 ;;
                mnt=*)
                        local d devs
                        IFS=+ read -ra devs <<<"${f#mnt=}"
                        for d in "${devs[@]}"; do
                                mounts+="{\"destination\": \"/var/run/nvidia-container-devices/$d\", \"source\": \"/dev/null\", \"type\": \"bind\"},"
                        done
                        ;;
                mntbad)
                        mounts+='{"destination": "/var/run/nvidia-container-devices/7", "source": "/tmp/x", "type": "bind"},'
                        mounts+='{"destination": "/var/run/nvidia-container-devices/a/b", "source": "/dev/null", "type": "bind"},'
                        mounts+='{"destination": "/var/run/nvidia-container-devicesX", "source": "/dev/null", "type": "bind"},'
                        ;;
                esac
        done
        if [ "$ver" = 1.0.0-rc2 ]; then
                capsjson=$caps
        else
                capsjson="{\"bounding\": $caps, \"effective\": ${effcaps:-$caps}}"
        fi
        if [ -n "$env" ]; then
                IFS='|' read -ra entries <<<"$env"
                for e in "${entries[@]}"; do
                        envjson+="$sep$(json_str "$e")"
                        sep=", "
                done
        fi
        mkdir -p "$T/b"
        cat >"$T/b/config.json" <<EOF
{"ociVersion": "$ver", "process": {"args": ["/bin/true"], "env": [$envjson], "capabilities": $capsjson},
 "root": {"path": "rootfs"}, "mounts": [${mounts%,}]}
EOF
}

STATE='{"ociVersion":"1.0.2","id":"dry","status":"creating","pid":4242,"bundle":"'$T/b'"}'

# dry_run: runs the hook; sets OUT, ERR, RC.
dry_run() {
        OUT=$(printf '%s' "${1:-$STATE}" | "$GPU_HOOK" --config="$T/hook.json" --dry-run createRuntime 2>"$T/err")
        RC=$?
        ERR=$(cat "$T/err")
}

# expected SPEC: builds the dry-run prefix (without rootfs/pid) from "D=..;C=..;R=..;M=..;N=..;I=..".
expected() {
        local D='[]' C=$DEFCAPS R='[]' M=null N=null I='[]' kv
        IFS=';' read -ra kvs <<<"$1"
        for kv in "${kvs[@]}"; do
                case $kv in
                D=*) D=${kv#D=} ;;
                C=*) C=${kv#C=} ;;
                R=*) R=${kv#R=} ;;
                M=*) M=${kv#M=} ;;
                N=*) N=${kv#N=} ;;
                I=*) I=${kv#I=} ;;
                esac
        done
        printf '{"gpu_container":true,"devices":%s,"capabilities":[%s],"requirements":%s,"mig_config":%s,"mig_monitor":%s,"imex_channels":%s,"mps_group":null' \
                "$D" "$C" "$R" "$M" "$N" "$I"
}

NONGPU='{"gpu_container":false,"devices":[],"capabilities":[],"requirements":[],"mig_config":null,"mig_monitor":null,"imex_channels":[],"mps_group":null'

# check NAME FLAGS ENV WANT: WANT is "-" (not a GPU container), "!REGEX" (an error whose message
# matches), or an expected() spec.
check() {
        local name=$1 flags=$2 env=$3 want=$4 got
        write_config "$flags"
        write_bundle "$flags" "$env"
        dry_run
        case $want in
        !*)
                if [ $RC -ne 0 ] && [ -z "$OUT" ] && printf '%s' "$ERR" | grep -Eq -- "${want#!}" &&
                        [ "$(printf '%s\n' "$ERR" | wc -l)" -eq 1 ]; then
                        t_pass "$name"
                else
                        t_fail "$name"
                        t_diag "exit $RC, stdout '$OUT'" "stderr: $ERR" "want one error line matching /${want#!}/"
                fi
                return
                ;;
        -) want=$NONGPU ;;
        *) want=$(expected "$want") ;;
        esac
        got=${OUT%,\"rootfs\":*}
        if [ $RC -eq 0 ] && [ "$got" = "$want" ] && [ -z "$ERR" ]; then
                t_pass "$name"
        else
                t_fail "$name"
                t_diag "exit $RC, stderr '$ERR'" "got:  $got" "want: $want"
        fi
}

# --- NVIDIA_VISIBLE_DEVICES ------------------------------------------------------------------
check "unset: not a GPU container" "" "PATH=/bin" -
check "empty: not a GPU container" "" "NVIDIA_VISIBLE_DEVICES=" -
check "blanks only: not a GPU container" "" "NVIDIA_VISIBLE_DEVICES=   " -
check "commas only: not a GPU container" "" "NVIDIA_VISIBLE_DEVICES= , ,," -
check "void" "" "NVIDIA_VISIBLE_DEVICES=void" -
check "VOID (any case)" "" "NVIDIA_VISIBLE_DEVICES=VOID" -
check "void among indices" "" "NVIDIA_VISIBLE_DEVICES=0,void,1" -
check "void wins over an unknown item (no error)" "" "NVIDIA_VISIBLE_DEVICES=void,bogus" -
check "all" "" "NVIDIA_VISIBLE_DEVICES=all" 'D=["all"]'
check "ALL (case-insensitive)" "" "NVIDIA_VISIBLE_DEVICES=ALL" 'D=["all"]'
check "all among indices" "" "NVIDIA_VISIBLE_DEVICES=0,all" 'D=["all"]'
check "none: GPU container without devices" "" "NVIDIA_VISIBLE_DEVICES=none" 'D=[]'
check "index" "" "NVIDIA_VISIBLE_DEVICES=0" 'D=["0"]'
check "indices with blanks and empty items" "" "NVIDIA_VISIBLE_DEVICES= 0 , 1 ,, " 'D=["0","1"]'
check "duplicates removed, order kept" "" "NVIDIA_VISIBLE_DEVICES=1,0,1,0" 'D=["1","0"]'
check "GPU UUID" "" "NVIDIA_VISIBLE_DEVICES=$UUID" "D=[\"$UUID\"]"
check "GPU UUIDs differing in case are one device" "" \
        "NVIDIA_VISIBLE_DEVICES=$UUID,${UUID,,},$UUID2" "D=[\"$UUID\",\"$UUID2\"]"
check "MIG UUID" "" "NVIDIA_VISIBLE_DEVICES=$MIG" "D=[\"$MIG\"]"
check "GPU:MIG pair" "" "NVIDIA_VISIBLE_DEVICES=0:1" 'D=["0:1"]'
check "PCI bus id" "" "NVIDIA_VISIBLE_DEVICES=0000:00:06.0" 'D=["0000:00:06.0"]'
check "short PCI bus id" "" "NVIDIA_VISIBLE_DEVICES=00:06.0" 'D=["00:06.0"]'
check "mixed list" "" "NVIDIA_VISIBLE_DEVICES=0,$UUID,0:1" "D=[\"0\",\"$UUID\",\"0:1\"]"
check "unknown device is an error naming it" "" "NVIDIA_VISIBLE_DEVICES=0,bogus" "!unknown device 'bogus'"
check "last duplicate env entry wins" "" "NVIDIA_VISIBLE_DEVICES=0|NVIDIA_VISIBLE_DEVICES=1" 'D=["1"]'
check "last duplicate void wins" "" "NVIDIA_VISIBLE_DEVICES=0|NVIDIA_VISIBLE_DEVICES=void" -
check "last duplicate over void" "" "NVIDIA_VISIBLE_DEVICES=void|NVIDIA_VISIBLE_DEVICES=0" 'D=["0"]'
check "a similar name is not the variable" "" "NVIDIA_VISIBLE_DEVICESX=0|XNVIDIA_VISIBLE_DEVICES=0" -

# --- legacy CUDA images ----------------------------------------------------------------------
check "legacy image: unset means all, all caps, cuda requirement" "" "CUDA_VERSION=11.6" \
        "D=[\"all\"];C=$ALLCAPS;R=[\"cuda>=11.6\"]"
check "legacy CUDA_VERSION 9.0.116 requires cuda>=9.0" "" "CUDA_VERSION=9.0.116" \
        "D=[\"all\"];C=$ALLCAPS;R=[\"cuda>=9.0\"]"
check "legacy CUDA_VERSION v11.6" "" "CUDA_VERSION=v11.6" "D=[\"all\"];C=$ALLCAPS;R=[\"cuda>=11.6\"]"
check "legacy CUDA_VERSION 12 (major only)" "" "CUDA_VERSION=12" "D=[\"all\"];C=$ALLCAPS;R=[\"cuda>=12.0\"]"
check "legacy CUDA_VERSION with a pre-release" "" "CUDA_VERSION=12.4.1-rc1" \
        "D=[\"all\"];C=$ALLCAPS;R=[\"cuda>=12.4\"]"
check "legacy with explicit devices" "" "CUDA_VERSION=11.6|NVIDIA_VISIBLE_DEVICES=0" \
        "D=[\"0\"];C=$ALLCAPS;R=[\"cuda>=11.6\"]"
check "legacy with void" "" "CUDA_VERSION=11.6|NVIDIA_VISIBLE_DEVICES=void" -
check "legacy with empty NVIDIA_VISIBLE_DEVICES" "" "CUDA_VERSION=11.6|NVIDIA_VISIBLE_DEVICES=" -
check "empty CUDA_VERSION is no legacy image" "" "CUDA_VERSION=" -
check "NVIDIA_REQUIRE_CUDA set: not legacy" "" "CUDA_VERSION=11.6|NVIDIA_REQUIRE_CUDA=cuda>=11.6" -
check "empty NVIDIA_REQUIRE_CUDA: still legacy" "" "CUDA_VERSION=11.6|NVIDIA_REQUIRE_CUDA=" \
        "D=[\"all\"];C=$ALLCAPS;R=[\"cuda>=11.6\"]"
check "legacy with capabilities set" "" "CUDA_VERSION=11.6|NVIDIA_DRIVER_CAPABILITIES=compute" \
        'D=["all"];C="compute";R=["cuda>=11.6"]'
check "malformed CUDA_VERSION is an error" "" "CUDA_VERSION=eleven" "!CUDA_VERSION 'eleven' is not a version"
check "CUDA_VERSION with leading zero is malformed" "" "CUDA_VERSION=11.06" "!CUDA_VERSION '11.06'"
check "CUDA_VERSION with four components is malformed" "" "CUDA_VERSION=11.6.0.1" "!CUDA_VERSION"
check "malformed CUDA_VERSION ignored when requirements are disabled" "" \
        "CUDA_VERSION=eleven|NVIDIA_DISABLE_REQUIRE=1" "D=[\"all\"];C=$ALLCAPS"

# --- NVIDIA_DRIVER_CAPABILITIES --------------------------------------------------------------
check "capabilities unset: utility,compute" "" "NVIDIA_VISIBLE_DEVICES=all" 'D=["all"]'
check "capabilities empty: utility,compute" "" "NVIDIA_VISIBLE_DEVICES=all|NVIDIA_DRIVER_CAPABILITIES=" 'D=["all"]'
check "capabilities only commas: utility,compute" "" \
        "NVIDIA_VISIBLE_DEVICES=all|NVIDIA_DRIVER_CAPABILITIES= , " 'D=["all"]'
check "capabilities all" "" "NVIDIA_VISIBLE_DEVICES=all|NVIDIA_DRIVER_CAPABILITIES=all" "D=[\"all\"];C=$ALLCAPS"
check "capabilities list with blanks, sorted" "" \
        "NVIDIA_VISIBLE_DEVICES=all|NVIDIA_DRIVER_CAPABILITIES= utility , ngx,compute" \
        'D=["all"];C="compute","ngx","utility"'
check "video implies compute" "" "NVIDIA_VISIBLE_DEVICES=all|NVIDIA_DRIVER_CAPABILITIES=video" \
        'D=["all"];C="compute","video"'
check "display implies graphics" "" "NVIDIA_VISIBLE_DEVICES=all|NVIDIA_DRIVER_CAPABILITIES=display" \
        'D=["all"];C="display","graphics"'
check "unknown capability is an error naming it" "" \
        "NVIDIA_VISIBLE_DEVICES=all|NVIDIA_DRIVER_CAPABILITIES=compute,bogus" "!NVIDIA_DRIVER_CAPABILITIES.*'bogus'"
check "unsupported capability is an error" "sup=compute+utility" \
        "NVIDIA_VISIBLE_DEVICES=all|NVIDIA_DRIVER_CAPABILITIES=graphics" "!'graphics' is not supported"
check "all means the supported set" "sup=compute+utility" \
        "NVIDIA_VISIBLE_DEVICES=all|NVIDIA_DRIVER_CAPABILITIES=all" 'D=["all"];C="compute","utility"'
check "all with an unsupported name is still all" "sup=compute+utility" \
        "NVIDIA_VISIBLE_DEVICES=all|NVIDIA_DRIVER_CAPABILITIES=all,video" 'D=["all"];C="compute","utility"'
check "default capped by the supported set" "sup=utility" "NVIDIA_VISIBLE_DEVICES=all" 'D=["all"];C="utility"'
check "legacy default is the supported set" "sup=compute+video" "CUDA_VERSION=12.2" \
        'D=["all"];C="compute","video";R=["cuda>=12.2"]'
check "supported-driver-capabilities all" "sup=all" "NVIDIA_VISIBLE_DEVICES=all|NVIDIA_DRIVER_CAPABILITIES=ngx" \
        'D=["all"];C="ngx"'

# --- requirements ----------------------------------------------------------------------------
check "NVIDIA_REQUIRE_CUDA" "" "NVIDIA_VISIBLE_DEVICES=0|NVIDIA_REQUIRE_CUDA=cuda>=11.0" 'D=["0"];R=["cuda>=11.0"]'
check "OR and AND expression kept as written" "" \
        "NVIDIA_VISIBLE_DEVICES=0|NVIDIA_REQUIRE_CUDA=cuda>=11.0 brand=tesla,driver>=470" \
        'D=["0"];R=["cuda>=11.0 brand=tesla,driver>=470"]'
check "every NVIDIA_REQUIRE_* variable, sorted by name" "" \
        "NVIDIA_VISIBLE_DEVICES=0|NVIDIA_REQUIRE_Z=arch>=8.0|NVIDIA_REQUIRE_CUDA=cuda>=12.0|NVIDIA_REQUIRE_A=driver>=500" \
        'D=["0"];R=["driver>=500","cuda>=12.0","arch>=8.0"]'
check "NVIDIA_REQUIRE_JETPACK* ignored" "" \
        "NVIDIA_VISIBLE_DEVICES=0|NVIDIA_REQUIRE_JETPACK=csv-mounts=all|NVIDIA_REQUIRE_JETPACK_HOST_MOUNTS=x" 'D=["0"]'
check "last duplicate requirement wins" "" \
        "NVIDIA_VISIBLE_DEVICES=0|NVIDIA_REQUIRE_CUDA=cuda>=99.0|NVIDIA_REQUIRE_CUDA=cuda>=11.0" 'D=["0"];R=["cuda>=11.0"]'
check "empty requirement requires nothing" "" "NVIDIA_VISIBLE_DEVICES=0|NVIDIA_REQUIRE_X= " 'D=["0"]'
check "invalid requirement key is an error" "" "NVIDIA_VISIBLE_DEVICES=0|NVIDIA_REQUIRE_CUDA=memory>=8" \
        "!NVIDIA_REQUIRE_CUDA.*invalid expression"
check "brand with an ordering operator is an error" "" "NVIDIA_VISIBLE_DEVICES=0|NVIDIA_REQUIRE_B=brand>tesla" \
        "!invalid expression"
for spelling in 1 t T true TRUE True; do
        check "NVIDIA_DISABLE_REQUIRE=$spelling drops requirements" "" \
                "NVIDIA_VISIBLE_DEVICES=0|NVIDIA_REQUIRE_CUDA=cuda>=99.0|NVIDIA_DISABLE_REQUIRE=$spelling" 'D=["0"]'
done
for spelling in 0 false yes ""; do
        check "NVIDIA_DISABLE_REQUIRE='$spelling' keeps requirements" "" \
                "NVIDIA_VISIBLE_DEVICES=0|NVIDIA_REQUIRE_CUDA=cuda>=99.0|NVIDIA_DISABLE_REQUIRE=$spelling" \
                'D=["0"];R=["cuda>=99.0"]'
done
check "config disable-require drops requirements" "dr" \
        "NVIDIA_VISIBLE_DEVICES=0|NVIDIA_REQUIRE_CUDA=cuda>=99.0" 'D=["0"]'
check "config disable-require drops the legacy requirement" "dr" "CUDA_VERSION=11.6" "D=[\"all\"];C=$ALLCAPS"
check "invalid requirement ignored when disabled" "dr" "NVIDIA_VISIBLE_DEVICES=0|NVIDIA_REQUIRE_CUDA=memory>=8" 'D=["0"]'

# --- privileged gating -----------------------------------------------------------------------
check "unprivileged honoured by default" "" "NVIDIA_VISIBLE_DEVICES=0" 'D=["0"]'
check "unprivileged ignored when the config says so" "noenv" "NVIDIA_VISIBLE_DEVICES=0" -
check "unprivileged legacy image ignored when the config says so" "noenv" "CUDA_VERSION=11.6" -
check "unknown device of an ignored request is no error" "noenv" "NVIDIA_VISIBLE_DEVICES=bogus" -
check "privileged honoured when the config refuses unprivileged" "noenv,priv" "NVIDIA_VISIBLE_DEVICES=0" 'D=["0"]'
check "privileged through an rc-era flat capability list" "noenv,priv,rc" "NVIDIA_VISIBLE_DEVICES=0" 'D=["0"]'
check "rc-era flat list without CAP_SYS_ADMIN is unprivileged" "noenv,rc" "NVIDIA_VISIBLE_DEVICES=0" -
check "other CAP_SYS_* capabilities are not privileged" "noenv,nearpriv" "NVIDIA_VISIBLE_DEVICES=0" -
check "CAP_SYS_ADMIN only in the effective set is not privileged" "noenv,effadmin" "NVIDIA_VISIBLE_DEVICES=0" -

# --- volume-mount device lists ---------------------------------------------------------------
check "volume mounts name the devices" "vol,mnt=0+$UUID" "" "D=[\"0\",\"$UUID\"]"
check "volume mounts work for unprivileged when env is refused" "vol,noenv,mnt=1" "NVIDIA_VISIBLE_DEVICES=0" 'D=["1"]'
check "volume mounts win over the variable" "vol,mnt=1" "NVIDIA_VISIBLE_DEVICES=0" 'D=["1"]'
check "volume mount all" "vol,mnt=all" "" 'D=["all"]'
check "volume mounts ignored unless enabled" "mnt=1" "NVIDIA_VISIBLE_DEVICES=0" 'D=["0"]'
check "only /dev/null sources under the exact directory count" "vol,mntbad" "NVIDIA_VISIBLE_DEVICES=0" 'D=["0"]'
check "no volume mounts and env refused: not a GPU container" "vol,noenv" "NVIDIA_VISIBLE_DEVICES=0" -

# --- swarm-resource --------------------------------------------------------------------------
check "swarm variable replaces NVIDIA_VISIBLE_DEVICES" "swarm" \
        "NVIDIA_VISIBLE_DEVICES=0|DOCKER_RESOURCE_GPU=$UUID" "D=[\"$UUID\"]"
check "all swarm variables are joined" "swarm" "DOCKER_RESOURCE_GPU=0|SWARM_B=1" 'D=["0","1"]'
check "an empty swarm variable means no GPU" "swarm" "NVIDIA_VISIBLE_DEVICES=all|DOCKER_RESOURCE_GPU=" -
check "no swarm variable present: NVIDIA_VISIBLE_DEVICES" "swarm" "NVIDIA_VISIBLE_DEVICES=0" 'D=["0"]'
check "swarm variables unused without the config" "" "NVIDIA_VISIBLE_DEVICES=0|DOCKER_RESOURCE_GPU=1" 'D=["0"]'

# --- the gate across every source: env, swarm, legacy, volume mounts; privileged and not ----------
check "gate: swarm variable of an unprivileged container refused" "swarm,noenv" "DOCKER_RESOURCE_GPU=0" -
check "gate: second swarm variable of an unprivileged container refused" "swarm,noenv" "SWARM_B=0" -
check "gate: swarm next to NVIDIA_VISIBLE_DEVICES, unprivileged, refused" "swarm,noenv" \
        "NVIDIA_VISIBLE_DEVICES=1|DOCKER_RESOURCE_GPU=0" -
check "gate: swarm variable of a privileged container honoured" "swarm,noenv,priv" "DOCKER_RESOURCE_GPU=0" 'D=["0"]'
check "gate: swarm variable of an unprivileged container honoured when allowed" "swarm" "DOCKER_RESOURCE_GPU=0" 'D=["0"]'
check "gate: legacy image of a privileged container honoured" "noenv,priv" "CUDA_VERSION=11.6" "D=[\"all\"];C=$ALLCAPS;R=[\"cuda>=11.6\"]"
check "gate: volume mounts of a privileged container when env is refused" "vol,noenv,priv,mnt=1" "NVIDIA_VISIBLE_DEVICES=0" 'D=["1"]'
check "gate: volume mounts ignored unless enabled, unprivileged, env refused" "noenv,mnt=1" "NVIDIA_VISIBLE_DEVICES=0" -
check "gate: volume mounts ignored unless enabled, privileged, env refused" "noenv,priv,mnt=1" "NVIDIA_VISIBLE_DEVICES=0" 'D=["0"]'
check "gate: volume mounts win over swarm" "vol,swarm,noenv,mnt=1" "DOCKER_RESOURCE_GPU=0" 'D=["1"]'

# --- MIG -------------------------------------------------------------------------------------
check "MIG config in a privileged container" "priv" "NVIDIA_VISIBLE_DEVICES=all|NVIDIA_MIG_CONFIG_DEVICES=all" \
        'D=["all"];M="all"'
check "MIG monitor in a privileged container" "priv" "NVIDIA_VISIBLE_DEVICES=all|NVIDIA_MIG_MONITOR_DEVICES=ALL" \
        'D=["all"];N="all"'
check "MIG config unprivileged is an error" "" "NVIDIA_VISIBLE_DEVICES=all|NVIDIA_MIG_CONFIG_DEVICES=all" \
        "!NVIDIA_MIG_CONFIG_DEVICES is only honoured in privileged containers"
check "MIG monitor unprivileged is an error" "" "NVIDIA_VISIBLE_DEVICES=all|NVIDIA_MIG_MONITOR_DEVICES=all" \
        "!NVIDIA_MIG_MONITOR_DEVICES is only honoured in privileged"
check "MIG config other than all is an error" "priv" "NVIDIA_VISIBLE_DEVICES=all|NVIDIA_MIG_CONFIG_DEVICES=0" \
        "!the only value is 'all'"
check "empty MIG config is no request" "" "NVIDIA_VISIBLE_DEVICES=all|NVIDIA_MIG_CONFIG_DEVICES=" 'D=["all"]'
check "MIG config on a non-GPU container is ignored" "" "NVIDIA_MIG_CONFIG_DEVICES=all" -

# --- IMEX ------------------------------------------------------------------------------------
check "IMEX channels" "" "NVIDIA_VISIBLE_DEVICES=0|NVIDIA_IMEX_CHANNELS=0, 5 ,,1" 'D=["0"];I=[0,5,1]'
check "IMEX duplicates removed" "" "NVIDIA_VISIBLE_DEVICES=0|NVIDIA_IMEX_CHANNELS=3,3" 'D=["0"];I=[3]'
check "IMEX largest channel 2^20-1" "" "NVIDIA_VISIBLE_DEVICES=0|NVIDIA_IMEX_CHANNELS=1048575" 'D=["0"];I=[1048575]'
check "IMEX channel 2^20 is an error" "" "NVIDIA_VISIBLE_DEVICES=0|NVIDIA_IMEX_CHANNELS=1048576" \
        "!NVIDIA_IMEX_CHANNELS: '1048576' is not a channel number"
check "IMEX negative channel is an error" "" "NVIDIA_VISIBLE_DEVICES=0|NVIDIA_IMEX_CHANNELS=-1" "!'-1' is not a channel"
check "IMEX word is an error" "" "NVIDIA_VISIBLE_DEVICES=0|NVIDIA_IMEX_CHANNELS=x" "!'x' is not a channel"
check "IMEX empty" "" "NVIDIA_VISIBLE_DEVICES=0|NVIDIA_IMEX_CHANNELS=" 'D=["0"]'

# --- rootfs, pid and the state ---------------------------------------------------------------
write_config ""
write_bundle "" "NVIDIA_VISIBLE_DEVICES=0"
dry_run
t_is "${OUT#*\"rootfs\":}" "\"$T/b/rootfs\",\"pid\":4242}" "relative root.path is joined to the bundle, pid from the state"
sed -i 's|"path": "rootfs"|"path": "./a//rootfs/"|' "$T/b/config.json"
dry_run
t_match "$OUT" "\"rootfs\":\"$T/b/a/rootfs\"" "root.path './a//rootfs/' is cleaned"
sed -i "s|\"path\": \"./a//rootfs/\"|\"path\": \"/srv/rootfs\"|" "$T/b/config.json"
dry_run
t_match "$OUT" '"rootfs":"/srv/rootfs"' "absolute root.path is kept"
dry_run '{"ociVersion":"1.0.0","id":"old","pid":7,"bundlePath":"'$T/b'"}'
t_match "$OUT" '"pid":7}' "old Docker's bundlePath is accepted"
dry_run '{"ociVersion":"1.0.2","id":"crun","status":"created","pid":8,"bundle":"'$T/b'","root":"/x","annotations":{"a":"b"}}'
t_match "$OUT" '"pid":8}' "crun's state with root and annotations is accepted"
OUT=$(env -i NVIDIA_VISIBLE_DEVICES=all CUDA_VERSION=11.0 NVIDIA_DRIVER_CAPABILITIES=bogus \
        "$GPU_HOOK" --config="$T/hook.json" --dry-run createRuntime <<<"$STATE" 2>&1)
t_match "$OUT" '"devices":\["0"\],"capabilities":\["compute","utility"\]' "the hook's own environment changes nothing"

# --- bad input -------------------------------------------------------------------------------
# bad NAME WANT_REGEX [STATE]: one clear error line, non-zero exit, no output.
bad() {
        dry_run "${3:-$STATE}"
        if [ $RC -ne 0 ] && [ $RC -lt 128 ] && [ -z "$OUT" ] && printf '%s' "$ERR" | grep -Eq -- "$2" &&
                [ "$(printf '%s\n' "$ERR" | wc -l)" -eq 1 ]; then
                t_pass "$1"
        else
                t_fail "$1"
                t_diag "exit $RC, stdout '${OUT:0:200}'" "stderr: ${ERR:0:300}" "want one error line matching /$2/"
        fi
}
bad "state not JSON" "OCI state on stdin is not valid JSON" "not json"
bad "state empty" "OCI state on stdin is empty" " "
bad "state is an array" "OCI state on stdin is not a JSON object" "[1]"
bad "state without bundle" 'has no "bundle"' '{"ociVersion":"1.0.2","id":"x","pid":1}'
bad "state with a relative bundle" "is not an absolute path" '{"id":"x","pid":1,"bundle":"b"}'
bad "state with a string pid" '"pid" must be a process id' '{"id":"x","pid":"1","bundle":"/"}'
bad "state with duplicate keys" "duplicate object key" '{"id":"x","id":"y","bundle":"/"}'
bad "state with invalid UTF-8" "not valid UTF-8" "$(printf '{"id":"\xc3\x28","bundle":"/"}')"
bad "state with an overlong UTF-8 form" "not valid UTF-8" "$(printf '{"id":"\xc0\xaf","bundle":"/"}')"
bad "state nested 100000 deep" "nests JSON deeper than" "$(printf '%*s' 100000 '' | tr ' ' '[')"
bad "state nested 65 deep in an object" "nests JSON deeper than" \
        "{\"id\":\"x\",\"bundle\":\"/\",\"a\":$(printf '%*s' 64 '' | tr ' ' '[')1$(printf '%*s' 64 '' | tr ' ' ']')}"
bad "missing bundle directory" "opening the bundle directory $T/nope" \
        '{"ociVersion":"1.0.2","id":"x","pid":1,"bundle":"'$T/nope'"}'
mkdir -p "$T/empty"
bad "bundle without config.json" "opening $T/empty/config.json" '{"id":"x","pid":1,"bundle":"'$T/empty'"}'
bad_spec() {
        printf '%s' "$2" >"$T/b/config.json"
        bad "$1" "$3"
}
bad_spec "config.json not JSON" '{"ociVersion": ' "config.json: not valid JSON: line 1 column"
bad_spec "config.json without ociVersion" '{"process":{},"root":{"path":"r"}}' 'lacks "ociVersion"'
bad_spec "config.json without process" '{"ociVersion":"1.0.2","root":{"path":"r"}}' 'lacks the "process" object'
bad_spec "config.json without root" '{"ociVersion":"1.0.2","process":{}}' 'lacks the "root" object'
bad_spec "config.json without root.path" '{"ociVersion":"1.0.2","process":{},"root":{}}' 'no "root.path"'
bad_spec "env entry without =" '{"ociVersion":"1.0.2","process":{"env":["A=1","NVIDIA_VISIBLE_DEVICES"]},"root":{"path":"r"}}' \
        "entry 'NVIDIA_VISIBLE_DEVICES' has no '='"
bad_spec "env not an array" '{"ociVersion":"1.0.2","process":{"env":"A=1"},"root":{"path":"r"}}' '"process.env" must be an array'
bad_spec "env entry not a string" '{"ociVersion":"1.0.2","process":{"env":[1]},"root":{"path":"r"}}' "entry 0 is not a string"
bad_spec "env entry with an escaped NUL" '{"ociVersion":"1.0.2","process":{"env":["A=\u0000"]},"root":{"path":"r"}}' "NUL"
bad_spec "capabilities of the wrong type" '{"ociVersion":"1.0.2","process":{"capabilities":1},"root":{"path":"r"}}' \
        '"process.capabilities" must be an object'
bad_spec "mounts of the wrong type" '{"ociVersion":"1.0.2","process":{},"root":{"path":"r"},"mounts":{}}' '"mounts" must be an array'
bad_spec "config.json with invalid UTF-8" "$(printf '{"ociVersion":"1.0.2","process":{"env":["A=\xff"]},"root":{"path":"r"}}')" \
        "config.json is not valid UTF-8"
bad_spec "config.json nested 10000 deep" \
        "{\"ociVersion\":\"1\",\"x\":$(printf '%*s' 10000 '' | tr ' ' '[')$(printf '%*s' 10000 '' | tr ' ' ']')}" \
        "nests JSON deeper than 64"
mkdir -p "$T/dirbundle/config.json"
bad "config.json that is a directory" "config.json is not a regular file" '{"id":"x","pid":1,"bundle":"'$T/dirbundle'"}'

big=$(head -c 1048576 /dev/zero | tr '\0' 'x')
write_bundle "" "BIG=$big|NVIDIA_VISIBLE_DEVICES=0"
dry_run
t_match "$OUT" '"devices":\["0"\]' "a 1 MiB value of another variable is fine"
write_bundle "" "NVIDIA_VISIBLE_DEVICES=$big"
bad "a 1 MiB NVIDIA_VISIBLE_DEVICES is refused" "NVIDIA_VISIBLE_DEVICES is 1048576 bytes long"
write_bundle "" "NVIDIA_VISIBLE_DEVICES=0|NVIDIA_REQUIRE_CUDA=$big"
bad "a 1 MiB requirement is refused" "NVIDIA_REQUIRE_CUDA is (1048576 bytes long|longer than)"
head -c $((1024 * 1024 + 10)) /dev/zero | tr '\0' ' ' >"$T/bigstate"
OUT=$("$GPU_HOOK" --config="$T/hook.json" --dry-run createRuntime <"$T/bigstate" 2>&1)
t_match "$OUT" "OCI state on stdin is larger than 1048576 bytes" "a state over 1 MiB is refused"
{ printf '{"ociVersion":"1.0.2","process":{"env":["A=%s"]},"root":{"path":"r"}}' "$(head -c $((16 * 1024 * 1024)) /dev/zero | tr '\0' x)"; } >"$T/b/config.json"
bad "a config.json over 16 MiB is refused" "config.json is larger than 16777216 bytes"

# --- the hook's configuration file -----------------------------------------------------------
write_bundle "" "NVIDIA_VISIBLE_DEVICES=0"
bad_config() {
        printf '%s' "$2" >"$T/hook.json"
        bad "$1" "$3"
}
bad_config "config: unknown key named" '{"accept-visible-devices":true}' 'configuration .*: unknown key "accept-visible-devices"'
bad_config "config: unknown cli key named" '{"cli":{"roots":"/"}}' 'unknown key "cli.roots"'
bad_config "config: unknown log key named" '{"log":{"path":"/x"}}' 'unknown key "log.path"'
bad_config "config: wrong type for a bool" '{"disable-require":"yes"}' '"disable-require" must be true or false'
bad_config "config: wrong type for swarm-resource" '{"swarm-resource":"A"}' '"swarm-resource" must be an array'
bad_config "config: unknown capability named" '{"supported-driver-capabilities":"compute,gpu"}' \
        "\"supported-driver-capabilities\": unknown driver capability 'gpu'"
bad_config "config: relative cli.path" '{"cli":{"path":"gpu-cli"}}' '"cli.path" must be an absolute path'
bad_config "config: ldconfig without @ or /" '{"cli":{"ldconfig":"ldconfig"}}' '"cli.ldconfig" must be an absolute path'
bad_config "config: cli not an object" '{"cli":[]}' '"cli" must be an object'
bad_config "config: not JSON" 'disable-require = true' "configuration $T/hook.json is not valid JSON"
bad_config "config: duplicate key" '{"disable-require":true,"disable-require":false}' "duplicate object key"
printf '%s' '{}' >"$T/hook.json"
dry_run
t_match "$OUT" '"devices":\["0"\]' "config: an empty object means defaults"
OUT=$(printf '%s' "$STATE" | "$GPU_HOOK" --config="$T/missing.json" --dry-run createRuntime 2>&1)
t_match "$OUT" '^\{"gpu_container":true,"devices":\["0"\]' "config: a missing file means defaults"
OUT=$(printf '%s' "$STATE" | "$GPU_HOOK" --config="$GH_SOURCE_DIR/contrib/config.json" --dry-run createRuntime 2>&1)
t_match "$OUT" '^\{"gpu_container":true,"devices":\["0"\],"capabilities":\["compute","utility"\]' \
        "contrib/config.json is valid and holds the defaults"

# --- limits: the request's (lib/core/request.h), the same in gpu-cli -----------------------------------
reqs() { local i e="NVIDIA_VISIBLE_DEVICES=0"; for ((i = 1; i <= $1; i++)); do e+="|NVIDIA_REQUIRE_R$i=cuda>=1.$i"; done; printf '%s' "$e"; }
chans() { seq -s, 0 $(($1 - 1)); }
write_config ""
write_bundle "" "$(reqs 64)"
dry_run
t_is "$RC:$(printf '%s' "$OUT" | grep -o 'cuda>=1\.' | wc -l)" "0:64" "64 requirements pass the dry run"
check "65 requirements are refused, as gpu-cli would" "" "$(reqs 65)" "!more than 64 "
write_bundle "" "NVIDIA_VISIBLE_DEVICES=0|NVIDIA_IMEX_CHANNELS=$(chans 2048)"
dry_run
t_is "$RC:$(printf '%s' "$OUT" | grep -o '"imex_channels":\[[0-9,]*\]' | tr -cd , | wc -c)" "0:2047" "2048 IMEX channels pass the dry run"
check "2049 IMEX channels are refused, as gpu-cli would" "" "NVIDIA_VISIBLE_DEVICES=0|NVIDIA_IMEX_CHANNELS=$(chans 2049)" \
        "!more than 2048 "
printf '%s' '{"cli":{"user":"65534:x"}}' >"$T/hook.json"
write_bundle "" "NVIDIA_VISIBLE_DEVICES=0"
dry_run
t_ok_re() { if [ "$RC" -ne 0 ] && [ -z "$OUT" ] && printf '%s' "$ERR" | grep -Eq -- "$1"; then t_pass "$2"; else t_fail "$2"; t_diag "exit $RC, stdout '$OUT', stderr '$ERR'"; fi; }
t_ok_re 'cli.user.*65534:x' "cli.user 65534:x is refused in the dry run (gpu-cli would refuse it)"

# --- command line ----------------------------------------------------------------------------
t_is "$("$GPU_HOOK" poststart </dev/null >/dev/null 2>&1; echo $?)" 0 "poststart exits 0 without reading anything"
t_is "$("$GPU_HOOK" poststop </dev/null >/dev/null 2>&1; echo $?)" 0 "poststop exits 0"
t_is "$("$GPU_HOOK" </dev/null >/dev/null 2>&1; echo $?)" 2 "no stage is a usage error"
t_is "$("$GPU_HOOK" --frobnicate createRuntime </dev/null >/dev/null 2>&1; echo $?)" 2 "unknown option is a usage error"
t_is "$("$GPU_HOOK" createContainer </dev/null >/dev/null 2>&1; echo $?)" 2 "unsupported stage is a usage error"
t_match "$("$GPU_HOOK" --help)" "^Usage: gpu-hook" "--help prints usage"

t_done
