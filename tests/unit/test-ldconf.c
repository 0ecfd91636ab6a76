/* lib/core/ldconf.c: the ld.so.conf parser line by line, and reading a hostile image's configuration:
 * include loops, includes and library directories that are symlinks out of the root, FIFOs, huge
 * files, a glob matching hundreds of files.  The work stays bounded, nothing outside the root is
 * read (a library directory planted outside never shows up in the cache), the host is untouched. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "ldcache.h"
#include "ldconf.h"
#include "ldscan.h"
#include "plan.h"
#include "tests/tap.h"
#include "tests/testutil.h"

static char T[256], ROOT[300];

/* The items of a text, one "D:path:flag" or "I:pattern" per line. */
static char *parse(const char *text, size_t len)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_ldconf c = { 0 };
        char *buf = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&buf, &n);

        if (gh_ldconf_parse(text, len, &c, &err) < 0)
                fprintf(f, "error: %s\n", err->msg);
        for (size_t i = 0; i < c.n; i++) {
                if (c.v[i].kind == GH_LDCONF_DIR)
                        fprintf(f, "D:%s:%d\n", c.v[i].text, c.v[i].flag);
                else
                        fprintf(f, "I:%s\n", c.v[i].text);
        }
        fclose(f);
        gh_ldconf_free(&c);
        return buf;
}

#define PARSES(text, want, desc)                                                                                       \
        do {                                                                                                           \
                _cleanup_free_ char *_got = parse(text, sizeof(text) - 1);                                             \
                is_str(_got, want, desc);                                                                              \
        } while (0)

static void parser(void)
{
        PARSES("/usr/lib\n/usr/local/lib", "D:/usr/lib:-1\nD:/usr/local/lib:-1\n",
               "one directory a line, the last without a newline");
        PARSES("  /a/b//  \t\n", "D:/a/b:-1\n", "leading and trailing blanks and trailing slashes go");
        PARSES("/a/ /\n", "D:/a/ :-1\n", "blanks are trimmed before slashes, once each (as ldconfig does)");
        PARSES("/a # comment\n# whole line\n\n   \n", "D:/a:-1\n", "comments and blank lines");
        PARSES("/a=libc6\n/b=glibc2\n/c=libc5\n/d=libc4\n/e=elf\n", "D:/a:3\nD:/b:3\nD:/c:2\nD:/d:0\nD:/e:-1\n",
               "library types after '='");
        PARSES("include /etc/a/*.conf  b.conf\tc\n", "I:/etc/a/*.conf\nI:b.conf\nI:c\n",
               "include takes several patterns");
        PARSES("include\t/x\ninclude\ninclude2 /y\n", "I:/x\nD:include:-1\nD:include2 /y:-1\n",
               "\"include\" needs a blank after it; otherwise the line is a directory");
        PARSES("hwcap 0 nosegneg\nHWCAP 1 x\n", "", "hwcap lines are ignored");
        PARSES("/a\0/ignored\n/b\n", "D:/a:-1\nD:/b:-1\n", "a line ends at a NUL byte");
        PARSES("/a\r\n", "D:/a:-1\n", "a CR is trailing white space");
        PARSES("=libc6\n///\n", "", "lines with no path");
}

static bool cache_has(const char *key, const char *value_prefix)
{
        _cleanup_error_ gh_error_t err = NULL;
        char path[400];
        _cleanup_close_ int fd = -1;
        struct gh_ldcache *c = NULL;
        bool found = false;

        snprintf(path, sizeof(path), "%s/etc/ld.so.cache", ROOT);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || gh_ldcache_open(fd, path, &c, &err) < 0)
                return false;
        for (size_t i = 0; i < c->n; i++)
                found |=
                        (key == NULL || strcmp(c->entries[i].key, key) == 0) &&
                        (value_prefix == NULL || strncmp(c->entries[i].value, value_prefix, strlen(value_prefix)) == 0);
        gh_ldcache_close(c);
        return found;
}

static int update(gh_error_t *err)
{
        _cleanup_close_ int rootfd = open(ROOT, O_PATH | O_DIRECTORY | O_CLOEXEC);
        struct gh_plan plan = { 0 };
        return gh_ldcache_update(&plan, rootfd, AT_FDCWD, err);
}

static void hostile(void)
{
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_free_ char *before = NULL, *after = NULL;
        struct gh_ldconf dirs = { 0 };
        char snap[1024];
        const char *z = "/usr/lib/x86_64-linux-gnu/libz.so.1";

        snprintf(ROOT, sizeof(ROOT), "%s/root", T);
        /* Outside the root: a configuration and a library directory a symlink could lead to. */
        sh("mkdir -p '%s/out/conf.d' '%s/out/lib' && cp -L %s '%s/out/lib/' && echo '%s/out/lib' >'%s/out/conf.d/x.conf'",
           T, T, z, T, T, T);
        snprintf(snap, sizeof(snap),
                 "cd '%s/out' && find . -printf '%%p %%s %%T@ %%m\\n' | sort; sha256sum /etc/ld.so.cache", T);
        before = sh_output("%s", snap);
        sh("mkdir -p '%s/etc/ld.so.conf.d' '%s/etc/loop' '%s/etc/many' '%s/lib' '%s/usr'", ROOT, ROOT, ROOT, ROOT,
           ROOT);
        sh("cd '%s' && cp -L %s lib/ && ln -s '%s/out/conf.d' etc/abs.d && ln -s ../../../../../../../..%s/out/conf.d etc/rel.d"
           " && ln -s '%s/out/lib' usr/outlib && ln -s ../../../../../../../..%s/out/lib/libz.so.1 lib/libout.so.1"
           " && mkfifo etc/ld.so.conf.d/fifo.conf && mkfifo lib/libfifo.so.1",
           ROOT, z, T, T, T, T);
        sh("cd '%s/etc' && cat >ld.so.conf <<'EOF'\n"
           "include /etc/ld.so.conf\ninclude loop/*.conf\ninclude /etc/abs.d/*.conf\ninclude rel.d/*.conf\n"
           "include /etc/ld.so.conf.d/*.conf\ninclude /etc/many/*.conf\ninclude /etc/huge.conf\n"
           "/usr/outlib\n/lib\nEOF",
           ROOT);
        sh("cd '%s/etc' && echo 'include /etc/loop/a.conf' >loop/a.conf", ROOT);
        sh("cd '%s/etc' && for i in $(seq 1 300); do echo /lib >many/$i.conf; done", ROOT);
        sh("cd '%s/etc' && head -c 300000 /dev/zero | tr '\\0' '/' >huge.conf", ROOT);
        /* Dry: the directory list. */
        {
                _cleanup_close_ int rootfd = open(ROOT, O_PATH | O_DIRECTORY | O_CLOEXEC);
                bool out = false, lib = false;
                ok(gh_ldconf_load(rootfd, AT_FDCWD, "/etc/ld.so.conf", &dirs, &err) == 0,
                   "a hostile ld.so.conf is read without error (loops, FIFOs, 300 includes, a huge file)");
                for (size_t i = 0; i < dirs.n; i++) {
                        out |= strstr(dirs.v[i].text, "/out/") != NULL;
                        lib |= strcmp(dirs.v[i].text, "/lib") == 0;
                }
                ok(!out, "no configuration outside the root was read (%zu directories)", dirs.n);
                ok(lib, "the image's own directories are there");
                ok(dirs.n <= GH_LDCONF_MAX_DIRS, "at most %u directories", GH_LDCONF_MAX_DIRS);
                gh_ldconf_free(&dirs);
        }
        ok(update(&err) == 0, "a cache is written for the hostile image");
        ok(cache_has("libz.so.1", "/lib/"), "the image's own library is indexed");
        ok(!cache_has(NULL, "/usr/outlib"),
           "a library directory that is a symlink out of the root is not indexed from outside");
        ok(!cache_has("libout.so.1", NULL) && !cache_has(NULL, "/lib/libout"),
           "a library symlink out of the root is not followed");
        ok(!cache_has(NULL, "/lib/libfifo"), "a FIFO named like a library is not opened");
        after = sh_output("%s", snap);
        is_str(after, before, "nothing outside the root changed");
}

int main(void)
{
        char cmd[400];

        snprintf(T, sizeof(T), "/tmp/test-ldconf.XXXXXX");
        if (mkdtemp(T) == NULL)
                return 1;
        parser();
        hostile();
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", T);
        sh("%s", cmd);
        return tap_done();
}
