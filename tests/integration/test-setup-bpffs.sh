#!/bin/bash
# gpu-cli setup bpffs (docs/performance.md, "Device programs kept"): in a private mount namespace, so
# the host's /sys/fs/bpf stays as it is: --dry-run changes nothing, the mount has systemd's flags and
# mode, a second run changes nothing, --undo unmounts only a bpffs that holds nothing but our pins,
# and doctor's device-programs check (cgroup v2 only: a cgroup2 mount over /sys/fs/cgroup inside the
# namespace) warns without a bpffs and is ok with one.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
t_need_root
t_need_cmd unshare
grep -qw bpf /proc/filesystems || t_skip_all "this kernel has no bpf filesystem"
[ -d /sys/fs/bpf ] || t_skip_all "no /sys/fs/bpf directory here"
bash "$GH_SOURCE_DIR/tests/fake-driver/make-root.sh" "$T/drv" >"$T/mkroot.log" 2>&1 || { t_diag_file "$T/mkroot.log"; echo "Bail out! make-root.sh"; exit 1; }

# Everything below runs in one private mount namespace; its TAP lines come back through a file.
cat >"$T/inner.sh" <<'EOF'
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
T_COUNT=0
mount --make-rprivate / || { echo "Bail out! mount --make-rprivate /"; exit 1; }
bpf_line() { awk '$5 == "/sys/fs/bpf" { print }' /proc/self/mountinfo; }
# an existing bpffs (a systemd host): start from none, as a host without systemd has
while [ -n "$(bpf_line)" ]; do umount /sys/fs/bpf || break; done
t_is "$(bpf_line)" "" "the namespace starts without a bpffs at /sys/fs/bpf"
doctor_dp() { "$GPU_CLI" "--root=$DRV" doctor --hooks-dir="$DRV" --cdi-dir="$DRV/none" 2>&1 | grep -E '^(ok|warn|fail) +device-programs'; }
V2=0
if mount -t cgroup2 none /sys/fs/cgroup 2>/dev/null; then V2=1; fi

out=$("$GPU_CLI" setup bpffs --dry-run)
t_is "$out" "would mount bpffs at /sys/fs/bpf (mode=0700)" "--dry-run says what it would mount"
t_is "$(bpf_line)" "" "--dry-run mounts nothing"
if [ "$V2" = 1 ]; then
        t_match "$(doctor_dp)" "^warn +device-programs +no bpffs at /sys/fs/bpf" "doctor without a bpffs: device-programs warns"
        t_match "$("$GPU_CLI" "--root=$DRV" doctor --hooks-dir="$DRV" --cdi-dir="$DRV/none" 2>&1)" "gpu-cli setup bpffs" "doctor names the command that fixes it"
else
        t_skip "doctor without a bpffs" "no cgroup2 mount could be made here"
        t_skip "doctor names the fix" "no cgroup2 mount could be made here"
fi
t_ok "setup bpffs" "$GPU_CLI" setup bpffs
line=$(bpf_line)
t_match "$line" " - bpf [^ ]+ rw,mode=700" "a bpffs at /sys/fs/bpf, mode 0700"
t_match "$line" "^[0-9]+ [0-9]+ [0-9:]+ / /sys/fs/bpf rw,nosuid,nodev,noexec,relatime " "mounted nosuid,nodev,noexec,relatime (systemd's flags)"
t_is "$("$GPU_CLI" setup bpffs)" "bpffs: already mounted at /sys/fs/bpf: nothing to change" "a second run changes nothing"
t_is "$(bpf_line | wc -l)" 1 "and mounts no second one"
if [ "$V2" = 1 ]; then
        t_match "$(doctor_dp)" "^ok +device-programs +kept in /sys/fs/bpf/gpu-hook" "doctor with the bpffs: device-programs ok"
else
        t_skip "doctor with the bpffs" "no cgroup2 mount could be made here"
fi

# --undo: our pin directory goes with it; anything else keeps it mounted
mkdir /sys/fs/bpf/gpu-hook
t_is "$("$GPU_CLI" setup bpffs --undo --dry-run)" "would remove /sys/fs/bpf/gpu-hook and unmount /sys/fs/bpf" "--undo --dry-run says what it would do"
t_is "$(bpf_line | wc -l)" 1 "--undo --dry-run unmounts nothing"
mkdir /sys/fs/bpf/someone-else
t_not "--undo refuses a bpffs holding other pins" "$GPU_CLI" setup bpffs --undo
t_match "$("$GPU_CLI" setup bpffs --undo 2>&1)" "^gpu-cli: setup bpffs --undo: /sys/fs/bpf holds pins other than gpu-hook's; left mounted$" "and says why in one line"
t_is "$(bpf_line | wc -l)" 1 "that bpffs stays mounted"
rmdir /sys/fs/bpf/someone-else
t_ok "setup bpffs --undo" "$GPU_CLI" setup bpffs --undo
t_is "$(bpf_line)" "" "--undo unmounts it"
t_is "$("$GPU_CLI" setup bpffs --undo)" "bpffs: none at /sys/fs/bpf: nothing to change" "--undo again changes nothing"
t_not "setup bpffs: a stray argument is a usage error" "$GPU_CLI" setup bpffs extra
"$GPU_CLI" setup bpffs extra >/dev/null 2>&1
t_is "$?" 2 "exit status 2 for it"
echo "$T_COUNT $T_FAILED" >"$COUNT_FILE"
EOF
before=$(awk '$5 == "/sys/fs/bpf"' /proc/self/mountinfo)
COUNT_FILE=$T/count DRV=$T/drv GPU_CLI=$GPU_CLI unshare -m bash "$T/inner.sh"
rc=$?
[ -s "$T/count" ] || { echo "Bail out! the namespace's part stopped early (rc $rc)"; exit 1; }
read -r T_COUNT T_FAILED <"$T/count"
t_is "$(awk '$5 == "/sys/fs/bpf"' /proc/self/mountinfo)" "$before" "the host's /sys/fs/bpf is as it was"
t_done
