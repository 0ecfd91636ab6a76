#!/bin/bash
# The CDI refresh when the driver changes (docs/cdi.md, "Keeping the spec current"): gpu-cli cdi
# refresh against the fake driver (not loaded: waits, gives up with one line, writes nothing; loaded
# during the wait: written; current: left alone; another driver's spec: rewritten; libraries of
# another version than the module: not written), and the unit and udev rules that run it and
# `setup dev-char-links`: systemd-analyze verify, and each rule line parsed.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
t_need_root
bash "$GH_SOURCE_DIR/tests/fake-driver/make-root.sh" "$T/drv" >"$T/mkroot.log" 2>&1 || { t_diag_file "$T/mkroot.log"; echo "Bail out! make-root.sh"; exit 1; }
V=$(grep -o '[0-9]\+\.[0-9]\+\.[0-9]\+' "$T/drv/proc/driver/nvidia/version" | head -n1)
OUT=$T/cdi/nvidia.com-gpu.json
refresh() { "$GPU_CLI" "--root=$T/drv" cdi refresh --output="$OUT" "$@"; }
VERSION=$T/drv/proc/driver/nvidia/version

# not loaded: waits --wait seconds, one line, nothing written
mv "$VERSION" "$T/version"
start=$(date +%s%N)
refresh --wait=2 >"$T/out" 2>"$T/err"
rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
t_is "$rc" 1 "driver not loaded: exit 1"
t_is "$([ "$ms" -ge 1900 ] && [ "$ms" -lt 10000 ] && echo waited)" waited "it waited about --wait=2 seconds (${ms} ms)"
t_is "$(wc -l <"$T/err")" 1 "one line"
t_match "$(cat "$T/err")" "^gpu-cli: cdi refresh: the NVIDIA driver is not ready after 2 s \\(.*proc/driver/nvidia/version.*\\); $OUT left as it was\$" "... saying what is missing and that nothing was written"
t_is "$(ls -A "$T/cdi" 2>/dev/null | wc -l)" 0 "nothing written"

# the driver comes during the wait
( sleep 1; mv "$T/version" "$VERSION" ) &
refresh --wait=20 >"$T/out" 2>"$T/err"
t_is "$?" 0 "driver loaded during the wait: exit 0"
wait
t_match "$(cat "$T/out")" "^wrote $OUT \\([0-9]+ devices, driver $V\\)\$" "the spec is written once the driver is there"
t_ok "it is the spec cdi generate writes" "$GPU_CLI" "--root=$T/drv" cdi generate --check="$OUT"
before=$(stat -c %Y.%i "$OUT")
t_is "$(refresh)" "$OUT is current (driver $V)" "a current spec is left alone"
t_is "$(stat -c %Y.%i "$OUT")" "$before" "... not even rewritten"

# a spec of the driver before an upgrade: rewritten
sed -i "s/$V/570.86.10/g" "$OUT"
t_match "$(refresh)" "^wrote $OUT .*it was stale: " "another driver's spec is rewritten"
t_ok "... with today's files" "$GPU_CLI" "--root=$T/drv" cdi generate --check="$OUT"

# a GPU node missing, then libraries of another version than the module: not ready
mv "$T/drv/dev/nvidia1" "$T/nvidia1"
refresh --wait=0 >/dev/null 2>"$T/err"
t_match "$(cat "$T/err")" "dev/nvidia1 is missing" "a GPU's node missing: not ready"
mv "$T/nvidia1" "$T/drv/dev/nvidia1"
sed -i "s/$V/590.10.01/" "$VERSION"
refresh --wait=0 >/dev/null 2>"$T/err"
t_match "$(cat "$T/err")" "is not the kernel module's version 590.10.01" "user-space libraries of another version: not ready"
sed -i "s/590.10.01/$V/" "$VERSION"
# a --mounts=hook spec stays one when it is rewritten (and --mounts=spec turns it back)
"$GPU_CLI" "--root=$T/drv" cdi generate --mounts=hook --output="$OUT" || t_fail "cdi generate --mounts=hook"
sed -i "s/$V/570.86.10/g" "$OUT"
t_match "$(refresh)" "^wrote $OUT .*it was stale: " "a stale --mounts=hook spec is rewritten"
t_ok "... with its mounts in the hook again" "$GPU_CLI" "--root=$T/drv" cdi generate --mounts=hook --check="$OUT"
t_match "$(refresh --mounts=spec)" "^wrote $OUT " "refresh --mounts=spec writes the mounts into the spec"
t_ok "... as cdi generate does by default" "$GPU_CLI" "--root=$T/drv" cdi generate --check="$OUT"
"$GPU_CLI" cdi refresh --check=x >/dev/null 2>&1
t_is "$?" 2 "cdi refresh --check is a usage error"

# ---------------------------------------------------------------------------------------------
# the unit and the rules

UNIT=$GH_SOURCE_DIR/contrib/systemd/gpu-hook-cdi-refresh.service
if command -v systemd-analyze >/dev/null 2>&1; then
        mkdir -p "$T/units"
        sed "s|/usr/bin/gpu-cli|$GPU_CLI|" "$UNIT" >"$T/units/gpu-hook-cdi-refresh.service"
        sed "s|/usr/bin/gpu-cli|$GPU_CLI|" "$GH_SOURCE_DIR/contrib/systemd/gpu-hook-cache.service" >"$T/units/gpu-hook-cache.service"
        (cd "$T/units" && timeout 120 systemd-analyze verify --man=no gpu-hook-cdi-refresh.service gpu-hook-cache.service) >"$T/verify" 2>&1
        t_is "$?" 0 "systemd-analyze verify (--man=no: the man page is not installed here): exit 0"
        t_is "$(grep -v -e 'nvidia-persistenced.service' "$T/verify")" "" "systemd-analyze verify: no warning"
else
        t_skip "systemd-analyze verify" "no systemd-analyze here"
        t_skip "systemd-analyze verify: no warning" "no systemd-analyze here"
fi
t_match "$(grep '^ExecStart=' "$UNIT")" "^ExecStart=/usr/bin/gpu-cli cdi refresh --wait=[0-9]+\$" "the unit runs cdi refresh with a bounded wait"
t_is "$(sed -n 's/^TimeoutStartSec=//p' "$UNIT")" 180 "its start timeout is longer than the wait"

# udev: `udevadm verify` (systemd 253+) where there is one; else each line parsed here
RULES=("$GH_SOURCE_DIR"/contrib/udev/*.rules)
if command -v udevadm >/dev/null 2>&1 && udevadm verify --help >/dev/null 2>&1; then
        t_ok "udevadm verify" udevadm verify "${RULES[@]}"
else
        t_skip "udevadm verify" "no udevadm verify here (systemd 253+)"
fi
bad=$("$GH_PYTHON" - "${RULES[@]}" <<'PYEOF'
import re, sys
keys = {"ACTION", "SUBSYSTEM", "KERNEL", "DRIVER", "DEVPATH", "RUN"}
tok = re.compile(r'\s*([A-Z]+)(==|!=|\+=|=)"([^"]*)"\s*(,|$)')
for path in sys.argv[1:]:
    for n, line in enumerate(open(path), 1):
        line = line.rstrip("\n")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        pos, seen = 0, []
        while pos < len(line):
            m = tok.match(line, pos)
            if not m or m.group(1) not in keys:
                print("%s:%d: cannot parse at column %d" % (path, n, pos + 1)); break
            if m.group(1) == "RUN" and m.group(2) != "+=":
                print("%s:%d: RUN must be +=" % (path, n))
            if m.group(1) != "RUN" and m.group(2) != "==":
                print("%s:%d: %s must be a match (==)" % (path, n, m.group(1)))
            seen.append(m.group(1)); pos = m.end()
        if "RUN" not in seen or "ACTION" not in seen:
            print("%s:%d: a rule needs ACTION and RUN" % (path, n))
        for cmd in re.findall(r'RUN\+="([^"]*)"', line):
            if not cmd.startswith("/"):
                print("%s:%d: RUN needs an absolute path" % (path, n))
PYEOF
)
t_is "$bad" "" "every udev rule line parses (match keys ==, RUN+= an absolute command)"
t_match "$(cat "$GH_SOURCE_DIR/contrib/udev/71-gpu-hook-cdi.rules")" 'RUN\+="/bin/systemctl --no-block start gpu-hook-cdi-refresh.service"' \
        "the CDI rule starts the refresh unit without blocking udev"
cmd=$(sed -n 's/.*RUN+="\/usr\/bin\/gpu-cli \([^"]*\)".*/\1/p' "$GH_SOURCE_DIR/contrib/udev/71-gpu-hook-dev-char.rules" | sort -u)
t_is "$cmd" "setup dev-char-links --create-all" "the dev-char rule runs setup dev-char-links --create-all"
printf 'Character devices:\n195 nvidia\n511 nvidia-uvm\n' >"$T/drv/proc/devices"
# shellcheck disable=SC2086
t_ok "... a command gpu-cli takes" "$GPU_CLI" --root="$T/drv" $cmd --dev-char-path="$T/dc" --record="$T/rec"
t_done
