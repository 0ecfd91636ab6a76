#!/bin/bash
# Where configure's time goes on this machine: runs a GPU container N times with gpu-cli configure
# (--debug) as the createRuntime hook and prints gpu-cli's own per-phase timings.  Run after run.sh
# (which prepares the kit's runc libraries).  Usage: bash tests/gpu/profile-configure.sh [N]
KIT=${GH_KIT:-$(cd "$(dirname "$0")/../.." && pwd)/.gpukit}
export RUNC=${RUNC:-$KIT/bin/runc} GPU_CLI=${GPU_CLI:-$KIT/bin/gpu-cli} BUSYBOX=${BUSYBOX:-$KIT/bin/busybox}
. "$(dirname "$0")/../lib.sh"
N=${1:-10}
make_busybox_rootfs "$T/r" --glibc || exit 1
make_bundle "$T/b" "$T/r" /bin/true
cat >"$T/hook" <<EOF
#!/bin/sh
pid=\$(sed -n 's/.*"pid": *\([0-9]*\).*/\1/p')
exec $GPU_CLI --debug=$T/cli.log configure --pid=\$pid --device=all --compute --utility $T/r
EOF
chmod 755 "$T/hook"
bundle_add_hook "$T/b" createRuntime "$T/hook"
for i in $(seq "$N"); do run_runc "$T/b" prof || { echo "$RUN_STDERR"; exit 1; }; done
grep -E "configure done|discover|driver discovery" "$T/cli.log" | sed "s/^.*debug: //"
echo "injected items per run: $(grep -c 'injected' "$T/cli.log") / $N"
