/* lib/core/ldscan.c and lib/core/ldcache-merge.c against glibc's own ldconfig, on an image of this machine's
 * real libraries (tests/unit/make-ldimage.sh: x86-64 and i386, glibc-hwcaps and tls
 * subdirectories, ld.so.conf includes).  When the image's /etc/ld.so.cache is absent, empty,
 * garbage, a FIFO, a symlink out of the root or too large, the cache written has the same entries
 * in the same order as `ldconfig -X -r ROOT` writes, `ldconfig -p` lists both the same, and (as
 * root, in a chroot) the dynamic loader opens the same file for every name with either cache.
 * Then the injected driver's entries and development links win over the image's. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "ldcache.h"
#include "ldscan.h"
#include "plan.h"
#include "tests/tap.h"
#include "tests/testutil.h"

static char T[256], ROOT[300];
static const char *LDCONFIG = "/sbin/ldconfig";

static struct gh_ldcache *open_cache(const char *path)
{
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct gh_ldcache *c = NULL;

        if (fd < 0 || gh_ldcache_open(fd, path, &c, &err) < 0) {
                tap_diag("cannot read %s: %s", path, err ? err->msg : strerror(errno));
                return NULL;
        }
        return c;
}

static bool same_entry(const struct gh_ldcache_entry *a, const struct gh_ldcache_entry *b)
{
        return a->flags == b->flags && a->hwcap == b->hwcap && strcmp(a->key, b->key) == 0 &&
               strcmp(a->value, b->value) == 0 &&
               (a->hwcaps ? b->hwcaps && strcmp(a->hwcaps, b->hwcaps) == 0 : !b->hwcaps);
}

/* Entry for entry, in order; says where they first differ. */
static bool same_cache(const char *got_path, const char *want_path, size_t *n)
{
        struct gh_ldcache *got = open_cache(got_path), *want = open_cache(want_path);
        bool same = got && want && got->n == want->n;

        *n = want ? want->n : 0;
        if (got && want && got->n != want->n)
                tap_diag("%zu entries, ldconfig wrote %zu", got->n, want->n);
        for (size_t i = 0; got && want && i < got->n && i < want->n; i++) {
                const struct gh_ldcache_entry *g = &got->entries[i], *w = &want->entries[i];
                if (!same_entry(g, w)) {
                        tap_diag("entry %zu: ours %s -> %s (flags %#x, hwcap %#" PRIx64
                                 ", %s), ldconfig's %s -> %s (flags %#x, hwcap %#" PRIx64 ", %s)",
                                 i, g->key, g->value, (unsigned) g->flags, g->hwcap, g->hwcaps ? g->hwcaps : "-",
                                 w->key, w->value, (unsigned) w->flags, w->hwcap, w->hwcaps ? w->hwcaps : "-");
                        same = false;
                        break;
                }
        }
        gh_ldcache_close(got);
        gh_ldcache_close(want);
        return same;
}

static int update(const struct gh_plan *plan, gh_error_t *err)
{
        _cleanup_close_ int rootfd = open(ROOT, O_PATH | O_DIRECTORY | O_CLOEXEC);
        return gh_ldcache_update(plan, rootfd, AT_FDCWD, err);
}

/* Lines of ldprobe's output that name a file (not "NAME -"). */
static int count_resolved(const char *out)
{
        int n = 0;
        while (out && *out) {
                const char *end = strchrnul(out, '\n');
                n += !(end - out >= 2 && strncmp(end - 2, " -", 2) == 0);
                out = *end ? end + 1 : end;
        }
        return n;
}

/* The loader check: ldprobe (64- and 32-bit) run in a chroot of the image with each cache. */
static void loader_check(void)
{
        static const struct {
                const char *bits, *cflags, *flags_re;
                int min;
        } arch[] = { { "64", "", "x86-64", 200 }, { "32", "-m32", "[(]libc6[)]|[(]ELF[)]", 20 } };

        if (geteuid() != 0) {
                ok(1, "# SKIP the loader check needs root (chroot)");
                return;
        }
        for (size_t a = 0; a < GH_ARRAY_SIZE(arch); a++) {
                _cleanup_free_ char *with_ref = NULL, *with_ours = NULL;
                int resolved;

                if (sh("cc %s -o '%s/probe%s' '%s/tests/helpers/ldprobe.c' 2>/dev/null", arch[a].cflags, ROOT,
                       arch[a].bits, getenv("GH_SOURCE_DIR")) != 0) {
                        ok(1, "# SKIP no C compiler for %s-bit programs (cc %s)", arch[a].bits, arch[a].cflags);
                        continue;
                }
                if (sh("chroot '%s' /probe%s </dev/null >/dev/null 2>&1", ROOT, arch[a].bits) != 0) {
                        ok(1, "# SKIP this kernel cannot run %s-bit programs (no IA32 emulation?)", arch[a].bits);
                        continue;
                }
                /* Every name ldconfig indexed for this architecture. */
                sh("%s -p -C '%s/etc/ld.so.cache.ref' | grep -E '%s' | sed -n 's/^\\t\\([^ ]*\\) .*/\\1/p' | sort -u >'%s/names%s'",
                   LDCONFIG, ROOT, arch[a].flags_re, T, arch[a].bits);
                sh("cp '%s/etc/ld.so.cache' '%s/ours.cache' && cp '%s/etc/ld.so.cache.ref' '%s/etc/ld.so.cache'", ROOT,
                   T, ROOT, ROOT);
                with_ref = sh_output("chroot '%s' /probe%s <'%s/names%s' 2>/dev/null", ROOT, arch[a].bits, T,
                                     arch[a].bits);
                sh("cp '%s/ours.cache' '%s/etc/ld.so.cache'", T, ROOT);
                with_ours = sh_output("chroot '%s' /probe%s <'%s/names%s' 2>/dev/null", ROOT, arch[a].bits, T,
                                      arch[a].bits);
                resolved = count_resolved(with_ref);
                ok(with_ref && with_ours && strcmp(with_ref, with_ours) == 0,
                   "%s-bit: the loader opens the same file for every name with either cache (%d of them load)",
                   arch[a].bits, resolved);
                ok(resolved >= arch[a].min, "%s-bit: at least %d names load in the image", arch[a].bits, arch[a].min);
        }
}

int main(int argc, char **argv)
{
        bool loader = argc > 1 && strcmp(argv[1], "--loader") == 0;
        _cleanup_free_ char *nlibs = NULL, *want_p = NULL;
        static const struct {
                const char *what, *make;
        } broken[] = {
                { "absent", "rm -f etc/ld.so.cache" },
                { "empty", ": >etc/ld.so.cache" },
                { "garbage", "head -c 4096 /dev/urandom >etc/ld.so.cache" },
                { "a truncated cache", "head -c 100 etc/ld.so.cache.ref >etc/ld.so.cache" },
                { "a FIFO", "mkfifo etc/ld.so.cache" },
                { "a symlink out of the root", "ln -s ../../../../../../../../..$T/host.cache etc/ld.so.cache" },
                { "a symlink to itself", "ln -s /etc/ld.so.cache etc/ld.so.cache" },
                { "larger than 64 MiB",
                  "head -c 48 etc/ld.so.cache.ref >etc/ld.so.cache && truncate -s 65M etc/ld.so.cache" },
        };
        char path[600], want[600], got[600];
        const char *src = getenv("GH_SOURCE_DIR");

        if (access(LDCONFIG, X_OK) != 0)
                tap_skip_all("needs glibc's /sbin/ldconfig (Debian's libc-bin)");
        if (src == NULL)
                tap_skip_all("GH_SOURCE_DIR is not set (run under meson)");
        snprintf(T, sizeof(T), "/tmp/test-ldscan.XXXXXX");
        if (mkdtemp(T) == NULL)
                return 1;
        snprintf(ROOT, sizeof(ROOT), "%s/root", T);
        nlibs = sh_output("bash '%s/tests/unit/make-ldimage.sh' '%s' 2>&1", src, ROOT);
        ok(nlibs && atoi(nlibs) >= 200, "an image of %d real libraries", nlibs ? atoi(nlibs) : 0);
        ok(sh("cd '%s' && %s -X -i -r '%s' -C /etc/ld.so.cache.ref 2>/dev/null", ROOT, LDCONFIG, ROOT) == 0,
           "ldconfig -X -r indexes the image");
        /* A valid cache outside the root, where a symlink out of it would lead. */
        sh("cp '%s/etc/ld.so.cache.ref' '%s/host.cache'", ROOT, T);
        snprintf(want, sizeof(want), "%s/etc/ld.so.cache.ref", ROOT);
        snprintf(got, sizeof(got), "%s/etc/ld.so.cache", ROOT);
        want_p = sh_output("%s -p -C '%s' | tail -n +2 | grep -v '^Cache generated by'", LDCONFIG, want);

        /* --loader: one unusable cache, then what the loader does with it (slow: a dlopen per name). */
        for (size_t i = 0; i < (loader ? 1 : GH_ARRAY_SIZE(broken)); i++) {
                _cleanup_error_ gh_error_t err = NULL;
                _cleanup_free_ char *got_p = NULL, *host_before = NULL, *host_after = NULL;
                struct gh_plan plan = { 0 };
                size_t n = 0;

                host_before = sh_output("sha256sum '%s/host.cache'", T);
                sh("cd '%s' && T='%s' && rm -f etc/ld.so.cache && %s", ROOT, T, broken[i].make);
                if (!ok(update(&plan, &err) == 0, "image cache %s: a cache is written", broken[i].what)) {
                        tap_diag("%s", err ? err->msg : "?");
                        continue;
                }
                bool same = same_cache(got, want, &n);
                ok(same, "image cache %s: the same %zu entries in the same order as ldconfig -r", broken[i].what, n);
                got_p = sh_output("%s -p -C '%s' | tail -n +2 | grep -v '^Cache generated by'", LDCONFIG, got);
                ok(got_p && want_p && strcmp(got_p, want_p) == 0, "image cache %s: ldconfig -p lists both the same",
                   broken[i].what);
                host_after = sh_output("sha256sum '%s/host.cache'; test -L '%s/etc/ld.so.cache' && echo link", T, ROOT);
                is_str(host_after, host_before, "image cache %s: the file outside the root is untouched",
                       broken[i].what);
        }
        if (loader) {
                loader_check();
                goto done;
        }

        /* The injected driver: its libraries and development links win over the image's. */
        {
                _cleanup_error_ gh_error_t err = NULL;
                struct gh_plan plan = { 0 };
                struct gh_ldcache *c;
                bool cuda = false, cuda_dev = false, stale = false, cuda32 = false, zlib = false, glx_indirect = false;

                sh("cd '%s' && rm -f etc/ld.so.cache", ROOT);
                /* A stale libcuda in the image (an old driver's copy). */
                sh("cp '%s/usr/lib/x86_64-linux-gnu/libz.so.1' '%s/usr/local/lib/libcuda.so.1'", ROOT, ROOT);
                sh("patchelf --set-soname libcuda.so.1 '%s/usr/local/lib/libcuda.so.1' 2>/dev/null", ROOT);
                /* As lib/core/plan.c plans them: each library and each development link an entry. */
                gh_plan_add_library(&plan, "libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1", false, &err);
                gh_plan_add_symlink(&plan, "/usr/lib/x86_64-linux-gnu/libcuda.so", "libcuda.so.1", true, &err);
                gh_plan_add_library(&plan, "libcuda.so", "/usr/lib/x86_64-linux-gnu/libcuda.so", false, &err);
                gh_plan_add_library(&plan, "libcuda.so.1", "/usr/lib/i386-linux-gnu/libcuda.so.1", true, &err);
                gh_plan_add_symlink(&plan, "/usr/lib/i386-linux-gnu/libcuda.so", "libcuda.so.1", true, &err);
                gh_plan_add_library(&plan, "libcuda.so", "/usr/lib/i386-linux-gnu/libcuda.so", true, &err);
                /* Not a development link: libGLX_indirect.so.0 -> libGLX_nvidia.so.0. */
                gh_plan_add_library(&plan, "libGLX_nvidia.so.0", "/usr/lib/x86_64-linux-gnu/libGLX_nvidia.so.0", false,
                                    &err);
                gh_plan_add_symlink(&plan, "/usr/lib/x86_64-linux-gnu/libGLX_indirect.so.0", "libGLX_nvidia.so.0", true,
                                    &err);
                ok(err == NULL && update(&plan, &err) == 0, "a cache is written with injected libraries");
                c = open_cache(got);
                for (size_t i = 0; c && i < c->n; i++) {
                        const struct gh_ldcache_entry *e = &c->entries[i];
                        if (strcmp(e->key, "libcuda.so.1") == 0 && e->flags == GH_LDCACHE_FLAGS_X86_64) {
                                cuda |= strcmp(e->value, "/usr/lib/x86_64-linux-gnu/libcuda.so.1") == 0;
                                stale |= strcmp(e->value, "/usr/local/lib/libcuda.so.1") == 0;
                        }
                        cuda_dev |= strcmp(e->key, "libcuda.so") == 0 && e->flags == GH_LDCACHE_FLAGS_X86_64 &&
                                    strcmp(e->value, "/usr/lib/x86_64-linux-gnu/libcuda.so") == 0;
                        cuda32 |= strcmp(e->key, "libcuda.so") == 0 && e->flags == GH_LDCACHE_FLAGS_I386 &&
                                  strcmp(e->value, "/usr/lib/i386-linux-gnu/libcuda.so") == 0;
                        zlib |= strcmp(e->key, "libz.so.1") == 0;
                        glx_indirect |= strcmp(e->key, "libGLX_indirect.so.0") == 0;
                }
                ok(cuda && !stale, "the injected libcuda.so.1 replaces the image's stale one");
                ok(cuda_dev, "dlopen(\"libcuda.so\") finds the injected development link in the cache");
                ok(cuda32, "and the i386 one, with the i386 flags");
                ok(zlib, "the image's own libraries stay in the cache");
                ok(!glx_indirect, "no entry for libGLX_indirect.so.0 (the plan gives it none)");
                gh_ldcache_close(c);
                gh_plan_free(&plan);
        }

done:
        snprintf(path, sizeof(path), "rm -rf '%s'", T);
        sh("%s", path);
        return tap_done();
}
