#!/bin/bash
# make-ldimage.sh ROOT: an image of this machine's real libraries for the ld.so.cache tests (Debian
# layout, merged /usr): the x86-64 libraries under 3 MB of /usr/lib/x86_64-linux-gnu (files and
# their symlinks, some links left dangling), the i386 ones of /usr/lib32, a glibc-hwcaps/x86-64-v3
# and a legacy tls/ subdirectory, and an /etc/ld.so.conf with includes, comments, a library type
# and a directory given twice.  Files are hard links when /tmp and /usr share a filesystem (the
# tests only read them), copies otherwise.  Prints the number of library files.
set -euo pipefail
root=$1
src=/usr/lib/x86_64-linux-gnu
mkdir -p "$root"/usr/lib/x86_64-linux-gnu "$root"/usr/lib32 "$root"/usr/lib64 "$root"/etc/ld.so.conf.d \
        "$root"/usr/local/lib "$root"/usr/bin "$root"/tmp
for d in lib lib32 lib64 bin; do ln -sfn usr/$d "$root/$d"; done

copy() { # copy SRC... DIR: hard links when possible
        local dir=${*: -1}
        cp -al "${@:1:$#-1}" "$dir" 2>/dev/null || cp -a "${@:1:$#-1}" "$dir"
}
mapfile -d '' libs < <(find "$src" -maxdepth 1 -name 'lib*.so*' \( -type l -o -size -3072k \) -print0)
copy "${libs[@]}" "$root/usr/lib/x86_64-linux-gnu/"
copy "$src"/ld-linux-x86-64.so.2 "$root/usr/lib/x86_64-linux-gnu/"
# Debian's loader link (an absolute symlink, resolved inside the image).
cp -a /lib64/ld-linux-x86-64.so.2 "$root/usr/lib64/" 2>/dev/null ||
        ln -sfn /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$root/usr/lib64/ld-linux-x86-64.so.2"
# i386: libc6-i386 (gcc-multilib).
if [ -d /usr/lib32 ]; then
        mapfile -d '' libs32 < <(find /usr/lib32 -maxdepth 1 \( -name 'lib*.so*' -o -name 'ld-*.so*' \) \( -type l -o -size -3072k \) -print0)
        [ ${#libs32[@]} -eq 0 ] || copy "${libs32[@]}" "$root/usr/lib32/"
        [ -e /usr/lib/ld-linux.so.2 ] && cp -a /usr/lib/ld-linux.so.2 "$root/usr/lib/"
fi
# glibc-hwcaps and legacy hwcap subdirectories, each with real libraries in them.
mkdir -p "$root"/usr/lib/x86_64-linux-gnu/glibc-hwcaps/x86-64-v3 "$root"/usr/lib/x86_64-linux-gnu/tls \
        "$root"/usr/lib/x86_64-linux-gnu/glibc-hwcaps/.hidden "$root"/usr/local/lib/x86_64
for f in "$src"/libz.so.1.* "$src"/libzstd.so.1.* "$src"/liblzma.so.5.*; do
        [ -f "$f" ] && copy "$f" "$root"/usr/lib/x86_64-linux-gnu/glibc-hwcaps/x86-64-v3/
done
for f in "$src"/libbz2.so.1.0.* "$src"/libz.so.1.*; do
        [ -f "$f" ] && copy "$f" "$root"/usr/lib/x86_64-linux-gnu/tls/
done
[ -f "$src"/libexpat.so.1.* ] 2>/dev/null || true
for f in "$src"/libexpat.so.1.*; do [ -f "$f" ] && copy "$f" "$root"/usr/local/lib/x86_64/; done
# A development link to a SONAME link (indexed under its own name), a stale copy elsewhere, and
# files that only look like libraries.
ln -sfn libz.so.1 "$root"/usr/local/lib/libz.so
printf 'GROUP ( libfoo.so.1 )\n' >"$root"/usr/local/lib/libfoo.so
: >"$root"/usr/local/lib/libempty.so.1
printf 'not an elf file at all, just text long enough\n%.0s' 1 2 3 >"$root"/usr/local/lib/libtext.so.1
cat >"$root"/etc/ld.so.conf <<'EOF'
# like Debian's, plus a few things ldconfig must cope with
include /etc/ld.so.conf.d/*.conf
/usr/local/lib/   # a trailing slash and a comment
hwcap 0 nosegneg
/usr/lib32=libc6
EOF
printf '# libc default configuration\n/usr/local/lib\n' >"$root"/etc/ld.so.conf.d/libc.conf
printf '# Multiarch support\n/usr/local/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu\n' \
        >"$root"/etc/ld.so.conf.d/x86_64-linux-gnu.conf
printf '/lib32\n/usr/lib32\n' >"$root"/etc/ld.so.conf.d/zz_i386-biarch-compat.conf
printf '/nonexistent\n' >"$root"/etc/ld.so.conf.d/not-matched.conf.disabled
find "$root" -name 'lib*.so*' -type f | wc -l
