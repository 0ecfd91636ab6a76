#!/bin/bash
# gpu-cli setup dev-char-links (docs/engines.md, "Device access that survives daemon-reload") with the
# fake driver root and a temp dev-char directory and record: the links NVIDIA's
# create-dev-char-symlinks makes (absolute targets, nvidia-fs/-nvswitch/-nvlink left out),
# --create-all from proc/devices and mig-minors, --dry-run, --undo of our links only, anything else
# at a link path left alone, and doctor's dev-char-links check agreeing with what the command makes.
. "${GH_SOURCE_DIR:?}/tests/lib.sh"
t_need_root
bash "$GH_SOURCE_DIR/tests/fake-driver/make-root.sh" "$T/drv" >"$T/mkroot.log" 2>&1 || { t_diag_file "$T/mkroot.log"; echo "Bail out! make-root.sh"; exit 1; }
D=$T/dc/char
REC=$T/rec/dev-char-links
links() { "$GPU_CLI" setup dev-char-links --driver-root="$T/drv" --dev-char-path="$D" --record="$REC" "$@"; }
doctor_dc() { "$GPU_CLI" "--root=$T/drv" doctor --dev-char-path="$D" --cgroup-manager=systemd --hooks-dir="$T" --cdi-dir="$T/none" 2>&1 | grep -E '^(ok|warn|fail) +dev-char-links'; }
rdev() { printf '%d:%d' "0x$(stat -c %t "$1")" "0x$(stat -c %T "$1")"; }
# the nodes of the fake root, as MAJ:MIN -> path, sorted
expected() {
        local n
        for n in "$T/drv"/dev/nvidia* "$T/drv"/dev/nvidia-caps/nvidia-*; do
                case ${n##*/} in nvidia-fs* | nvidia-nvswitch* | nvidia-nvlink*) continue ;; esac
                [ -c "$n" ] && [ ! -L "$n" ] && printf '%s -> %s\n' "$(rdev "$n")" "$n"
        done | sort
}
made() { for l in "$D"/*; do printf '%s -> %s\n' "${l##*/}" "$(readlink "$l")"; done | sort; }

# extra nodes that must get no link, and a symlink in dev/ that is not a node
mknod "$T/drv/dev/nvidia-nvswitch0" c 236 0
mknod "$T/drv/dev/nvidia-fs0" c 237 0
ln -s nvidia0 "$T/drv/dev/nvidia-alias"

t_match "$(doctor_dc)" "^warn +dev-char-links +$(expected | wc -l) of $(expected | wc -l) missing: $D/" "doctor before: every link missing (systemd)"
out=$(links --dry-run)
t_is "$(echo "$out" | grep -c '^would link ')" "$(expected | wc -l)" "--dry-run: one line per node"
t_is "$(ls -A "$T/dc" 2>/dev/null | wc -l)" 0 "--dry-run creates nothing"
t_is "$(ls -A "$T/rec" 2>/dev/null | wc -l)" 0 "--dry-run writes no record"
t_ok "setup dev-char-links" links
t_is "$(made)" "$(expected)" "a link MAJ:MIN -> the node's absolute path for every NVIDIA node (not nvidia-fs, -nvswitch)"
t_is "$(stat -c %a "$T/dc/char")" 755 "the dev-char directory is made 0755"
t_is "$(wc -l <"$REC")" "$(expected | wc -l)" "the record lists the links made"
t_match "$(doctor_dc)" "^ok +dev-char-links +$D links exist for the $(expected | wc -l) NVIDIA node" "doctor agrees: every link exists"
t_is "$(links)" "dev-char-links: nothing to change ($(expected | wc -l) link(s) in $D)" "a second run changes nothing"

# links made by someone else (udev's relative form) count as present and are not ours
rm "$D/195:1"
ln -s ../../drv/dev/nvidia1 "$D/195:1"
t_match "$(doctor_dc)" "^ok " "doctor: a relative link that resolves to the node is fine"

# hostile: a directory, a regular file and a link elsewhere at link paths
rm "$D/195:0" "$D/195:255"
mkdir "$D/195:0"
echo keep >"$D/195:255"
rm "$D/195:254"
ln -s /etc/passwd "$D/195:254"
links >"$T/out" 2>"$T/err"
t_is "$?" 1 "something else at a link path: exit 1"
t_match "$(cat "$T/err")" "$D/195:0 is a directory, not a link to $T/drv/dev/nvidia0: left alone" "a directory is left alone, with a warning"
t_match "$(cat "$T/err")" "$D/195:255 is a regular file, not a link" "a regular file is left alone"
t_match "$(cat "$T/err")" "$D/195:254 is a link to /etc/passwd, not a link" "a link elsewhere is left alone"
t_is "$(cat "$D/195:255")" keep "the file keeps its content"
t_is "$(readlink "$D/195:254")" /etc/passwd "the foreign link keeps its target"
t_match "$(doctor_dc)" "^warn +dev-char-links +3 of [0-9]+ missing: .*$D/195:0 is a directory" "doctor reports them"

# undo: only ours, only where they still point where we made them
t_is "$(links --undo --dry-run 2>/dev/null | grep -c '^would remove ')" "$(( $(expected | wc -l) - 4 ))" "--undo --dry-run: our untouched links"
t_is "$(ls "$D" | wc -l)" "$(expected | wc -l)" "--undo --dry-run removes nothing"
links --undo >"$T/out" 2>"$T/err"
t_is "$?" 0 "--undo"
t_is "$(ls "$D" | sort | tr '\n' ' ')" "195:0 195:1 195:254 195:255 " "left: the directory, the file, the foreign and the replaced link"
t_match "$(cat "$T/err")" "195:1 left alone: it now points to ../../drv/dev/nvidia1" "a link replaced since is kept, said so"
t_is "$(ls -A "$T/rec")" "" "the record is gone once empty"
t_is "$(links --undo)" "dev-char-links: no link of ours in $D" "a second --undo has nothing to do"

# the record keeps other directories' links
D2=$T/dc2
"$GPU_CLI" setup dev-char-links --driver-root="$T/drv" --dev-char-path="$D2" --record="$REC" >/dev/null
rm -r "$D"
t_ok "links in a new directory" links
links --undo >/dev/null
t_is "$(wc -l <"$REC")" "$(expected | wc -l)" "--undo of one directory keeps the record of another"
t_is "$(ls "$D2" | wc -l)" "$(expected | wc -l)" "... and its links"

# --create-all: every node the driver can have, from proc/devices, GPUs and mig-minors
printf 'Character devices:\n  1 mem\n195 nvidia-frontend\n195 nvidia\n238 nvidia-uvm\n241 nvidia-caps\n\nBlock devices:\n  8 sd\n' >"$T/drv/proc/devices"
rm -rf "$T/dc3"
"$GPU_CLI" setup dev-char-links --create-all --driver-root="$T/drv" --dev-char-path="$T/dc3" --record="$T/rec3" >/dev/null
t_is "$(readlink "$T/dc3/195:255") $(readlink "$T/dc3/195:254") $(readlink "$T/dc3/238:0") $(readlink "$T/dc3/238:1")" \
        "$T/drv/dev/nvidiactl $T/drv/dev/nvidia-modeset $T/drv/dev/nvidia-uvm $T/drv/dev/nvidia-uvm-tools" \
        "--create-all: control nodes with the majors of proc/devices (uvm 238 though the node is 511)"
ngpu=$(ls "$T/drv/proc/driver/nvidia/gpus" | wc -l)
t_is "$(ls "$T/dc3" | grep -c '^195:[0-9]$')" "$ngpu" "--create-all: one 195:N per GPU"
t_is "$(readlink "$T/dc3/241:1") $(readlink "$T/dc3/241:2")" "$T/drv/dev/nvidia-caps/nvidia-cap1 $T/drv/dev/nvidia-caps/nvidia-cap2" \
        "--create-all: MIG config and monitor"
t_is "$(readlink "$T/dc3/241:3")" "$T/drv/dev/nvidia-caps/nvidia-cap3" "--create-all: gpu0's instance capabilities"
rm "$T/drv/proc/devices"
"$GPU_CLI" setup dev-char-links --create-all --driver-root="$T/drv" --dev-char-path="$T/dc4" --record="$T/rec4" >/dev/null 2>"$T/err"
t_is "$?" 1 "--create-all without proc/devices fails"
t_match "$(cat "$T/err")" "proc/devices" "... naming it"
t_is "$(ls -A "$T/dc4" 2>/dev/null | wc -l)" 0 "... and makes nothing"

"$GPU_CLI" setup dev-char-links --dev-char-path=relative >/dev/null 2>&1
t_is "$?" 2 "a relative --dev-char-path is a usage error"
t_match "$("$GPU_CLI" setup dev-char-links --help)" "--create-all" "--help"
t_done
