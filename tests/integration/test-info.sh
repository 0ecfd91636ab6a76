#!/bin/bash
# gpu-cli info against the fake driver: the JSON must say exactly what each profile implies (the
# expectation is computed here from the profile JSON, not saved), and the NVML service must fail
# cleanly: one-line error, non-zero exit, bounded time, no process left, sandboxed while it runs.
. "${GH_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib.sh"

t_need_root
MAKE_ROOT=$GH_SOURCE_DIR/tests/fake-driver/make-root.sh
PROFILES=$GH_SOURCE_DIR/tests/fake-driver/profiles
CONF=${GH_BUILD_DIR:+$GH_BUILD_DIR/tests/fake-driver/fake-driver.conf}
[ -n "$CONF" ] && [ -f "$CONF" ] || t_fatal "no built fake driver (GH_BUILD_DIR=${GH_BUILD_DIR:-unset})"
VER=$(sed -n 's/^version=//p' "$CONF")

# expected_json PROFILE fast|nvml: the info --json a user should get for that profile.
expected_json() {
        "$GH_PYTHON" - "$1" "$2" "$VER" <<'EOF'
import json, sys
prof, mode, ver = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
nvml = mode == "nvml"
# NVML brand names as gpu-cli prints them, keyed by the fake profile's brand words.
brands = {"quadro": "Quadro", "tesla": "Tesla", "nvs": "NVS", "grid": "GRID", "geforce": "GeForce",
          "titan": "TITAN", "nvidia_rtx": "NvidiaRTX", "nvidia": "Nvidia", "geforce_rtx": "GeForceRTX",
          "titan_rtx": "TitanRTX"}
def bus_key(g):
    d, b, rest = g["bus_id"].split(":")
    dev, fn = rest.split(".")
    return (int(d, 16), int(b, 16), int(dev, 16), int(fn, 16))
def bus_norm(g):
    return "%04x:%02x:%02x.%x" % bus_key(g)
gpus = []
for i, g in enumerate(sorted(prof["gpus"], key=bus_key)):
    mig = g.get("mig")
    devs = (mig or {}).get("devices", []) if nvml else []
    gpus.append({
        "index": i, "minor": g["minor"], "model": g["model"],
        "brand": brands.get(g.get("brand", "nvidia"), "Unknown") if nvml else None,
        "uuid": g["uuid"], "bus_location": bus_norm(g),
        "architecture": g["compute_capability"] if nvml else None,
        "mig_enabled": (mig is not None or g.get("mig_mode") == "enabled") if nvml else None,
        "mig_devices": [{"index": j, "gpu_instance": d["gi"], "compute_instance": d["ci"], "uuid": d["uuid"],
                         "gi_cap_minor": d["gi_minor"], "ci_cap_minor": d["ci_minor"]} for j, d in enumerate(devs)],
    })
cuda = prof.get("cuda_driver_version", 13000)
print(json.dumps({"nvrm_version": ver,
                  "cuda_version": "%d.%d" % (cuda // 1000, cuda % 1000 // 10) if nvml else None,
                  "source": "nvml" if nvml else "proc", "gpus": gpus}, indent=2, sort_keys=True))
EOF
}

canon() { "$GH_PYTHON" -c 'import json,sys; print(json.dumps(json.load(sys.stdin), indent=2, sort_keys=True))'; }

# Processes whose root directory is DIR: a driver service that outlived gpu-cli.
procs_rooted_at() {
        # one find for every process (a readlink per process took minutes on a loaded machine)
        find /proc -mindepth 2 -maxdepth 2 -name root -lname "$1" 2>/dev/null | cut -d/ -f3
        return 0
}

# --- every profile, NVML and fast path ---------------------------------------------------------
for prof in default 8gpu-mig 64gpu; do
        R=$T/root-$prof
        "$MAKE_ROOT" "$R" --profile "$PROFILES/$prof.json" >"$T/make.log" 2>&1 || {
                t_fail "make-root $prof"; t_diag_file "$T/make.log"; continue; }
        for mode in nvml fast; do
                if "$GPU_CLI" --root="$R" info --json --$mode >"$T/out.json" 2>"$T/err"; then
                        got=$(canon <"$T/out.json")
                        want=$(expected_json "$PROFILES/$prof.json" $mode)
                        if [ "$got" = "$want" ]; then
                                t_pass "$prof, --$mode: info --json is exactly what the profile implies"
                        else
                                t_fail "$prof, --$mode: info --json is exactly what the profile implies"
                                diff <(echo "$want") <(echo "$got") | head -20 | sed 's/^/#   /'
                        fi
                else
                        t_fail "$prof, --$mode: info --json exits 0"
                        t_diag_file "$T/err"
                fi
        done
        t_is "$(procs_rooted_at "$R")" "" "$prof: no driver service left behind"
done

# --- text and CSV on the 8-GPU profile -----------------------------------------------------------
R=$T/root-8gpu-mig
"$GPU_CLI" --root="$R" info >"$T/out.txt" 2>&1
t_is "$(head -3 "$T/out.txt")" "NVRM version:   $VER
CUDA version:   13.0
Source:         nvml" "text: NVRM and CUDA version lines, and where the answer came from"
t_is "$(grep -c '^Device Index:' "$T/out.txt")" 8 "text: eight GPU blocks"
t_is "$(sed -n 5,11p "$T/out.txt")" "Device Index:   0
Device Minor:   2
Model:          NVIDIA A100-SXM4-40GB
Brand:          Tesla
GPU UUID:       GPU-251d6671-a69d-f73f-4b40-8c63a5443051
Bus Location:   0000:07:00.0
Architecture:   8.0" "text: GPU 0 is the lowest bus id, with its own minor (2)"
"$GPU_CLI" --root="$R" info --csv >"$T/out.csv" 2>&1
t_is "$(sed -n 4p "$T/out.csv")" "Device Index,Device Minor,Model,Brand,GPU UUID,Bus Location,Architecture" "csv: GPU header"
t_is "$(grep -c '^[0-9],[0-9],[0-9]*,[0-9]*,MIG-' "$T/out.csv")" 13 "csv: 13 MIG rows (3 + 3 + 7)"

# --- failures ------------------------------------------------------------------------------------
t_is "$("$GPU_CLI" --root="$T" info >/dev/null 2>&1; echo $?)" 3 "no driver under --root: exit 3"
t_is "$("$GPU_CLI" --root="$R" --user=nobody info >/dev/null 2>&1; echo $?)" 2 "--user=nobody (not numeric): exit 2"

for m in crash hang error; do
        R=$T/root-$m
        "$MAKE_ROOT" "$R" --nvml-mode $m >"$T/make.log" 2>&1 || { t_fail "make-root --nvml-mode $m"; continue; }
        start=$(date +%s%N)
        "$GPU_CLI" --root="$R" info --timeout=2 >"$T/out" 2>"$T/err"
        rc=$?
        ms=$(( ($(date +%s%N) - start) / 1000000 ))
        t_is "$rc" 1 "nvml-mode $m: exit 1"
        case $m in
        crash) want="crashed the NVML service \\(Segmentation fault\\)" ;;
        hang) want="did not answer the driver version within 2000 ms" ;;
        error) want="NVML initialisation failed: Driver Not Loaded" ;;
        esac
        t_match "$(cat "$T/err")" "^gpu-cli: info: .*$want.*use 'gpu-cli info --fast'" "nvml-mode $m: says what happened and what to do"
        t_is "$(wc -l <"$T/err")" 1 "nvml-mode $m: the error is one line"
        t_is "$(wc -c <"$T/out")" 0 "nvml-mode $m: nothing on stdout"
        if [ "$ms" -lt 4000 ]; then t_pass "nvml-mode $m: done in $ms ms (timeout 2 s)"; else t_fail "nvml-mode $m: took $ms ms"; fi
        t_is "$(procs_rooted_at "$R")" "" "nvml-mode $m: no driver service left behind"
        t_ok "nvml-mode $m: --fast still works" "$GPU_CLI" --root="$R" info --fast
done

# --- the sandbox, observed while the service hangs -----------------------------------------------
R=$T/root-hang
check_sandbox() { # USERSPEC UID GID
        local pid child="" i
        "$GPU_CLI" --root="$R" ${1:+--user=$1} info --timeout=20 >/dev/null 2>&1 &
        pid=$!
        for i in $(seq 150); do
                child=$(procs_rooted_at "$R")
                [ -n "$child" ] && grep -q libnvidia-ml "/proc/$child/maps" 2>/dev/null && break
                sleep 0.1
        done
        if [ -z "$child" ]; then
                t_fail "service ${1:-default user}: found the service process"
                kill "$pid"; wait "$pid"
                return
        fi
        local st; st=$(cat "/proc/$child/status")
        t_match "$st" "Uid:	$2	$2	$2	$2" "service ${1:-default user}: runs as uid $2"
        t_match "$st" "Gid:	$3	$3	$3	$3" "service ${1:-default user}: runs as gid $3"
        t_match "$st" "CapEff:	0000000000000000" "service ${1:-default user}: no effective capability"
        t_match "$st" "CapBnd:	0000000000000000" "service ${1:-default user}: empty bounding set"
        t_match "$st" "NoNewPrivs:	1" "service ${1:-default user}: no_new_privs"
        t_is "$(ls "/proc/$child/fd" | sort -n | tr '\n' ' ')" "0 1 2 3 " "service ${1:-default user}: only stdio and its socket open"
        t_match "$(cat "/proc/$child/maps")" "libnvidia-ml" "service ${1:-default user}: the child loaded NVML"
        t_nomatch "$(cat "/proc/$pid/maps")" "libnvidia-ml" "service ${1:-default user}: the privileged parent did not"
        kill -9 "$pid"
        wait "$pid" 2>/dev/null
        for i in $(seq 50); do [ -z "$(procs_rooted_at "$R")" ] && break; sleep 0.1; done
        t_is "$(procs_rooted_at "$R")" "" "service ${1:-default user}: dies with its parent (SIGKILLed parent)"
}
check_sandbox "" "$(cat /proc/sys/kernel/overflowuid)" "$(cat /proc/sys/kernel/overflowgid)"
check_sandbox 1234:5678 1234 5678

t_done
