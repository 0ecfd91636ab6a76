/* The sandboxed host ldconfig.  Root only: the test unshares a private mount namespace (standing in
 * for the container's), builds small roots with real shared objects, runs the host's /sbin/ldconfig
 * through gh_ldconfig_run() and checks what a user would see: the cache lists the libraries, the
 * image's /sbin/ldconfig never ran, and nothing outside the root changed.  Static probe programs
 * stand in for ldconfig to show the sandbox (pid 1, empty environment, limits, seccomp, timeout).
 * Run once with the new mount API and once with --no-new-mount-api (legacy bind + chdir). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "ldconfig.h"
#include "rootfs.h"
#include "syscalls.h"
#include "tap.h"

static char top[PATH_MAX - 64];

static int xsystemf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int xsystemf(const char *fmt, ...)
{
        char cmd[8192];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(cmd, sizeof(cmd), fmt, ap);
        va_end(ap);
        return system(cmd);
}

static void must(int rc, const char *what)
{
        if (rc != 0) {
                printf("Bail out! %s\n", what);
                exit(1);
        }
}

static char *slurp_cmd(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *slurp_cmd(const char *fmt, ...)
{
        char cmd[8192], *buf = calloc(1, 65536);
        size_t n = 0;
        va_list ap;
        FILE *f;
        va_start(ap, fmt);
        vsnprintf(cmd, sizeof(cmd), fmt, ap);
        va_end(ap);
        f = popen(cmd, "r");
        if (f) {
                n = fread(buf, 1, 65535, f);
                pclose(f);
        }
        buf[n] = '\0';
        return buf;
}

static bool exists(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static bool exists(const char *fmt, ...)
{
        char p[PATH_MAX];
        struct stat st;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p, sizeof(p), fmt, ap);
        va_end(ap);
        return lstat(p, &st) == 0;
}

/* A root like an image: two library directories (one listed in ld.so.conf, one only passed on the
 * command line) and a /sbin/ldconfig that must never run. */
static void make_root(const char *name)
{
        must(xsystemf(
                     "set -e; R=%s/%s; mkdir -p $R/etc $R/sbin $R/opt/conf-lib $R/opt/extra $R/var/cache\n"
                     "echo /opt/conf-lib > $R/etc/ld.so.conf\n"
                     "cp %s/libghone.so.1.0 $R/opt/extra/; cp %s/libghtwo.so.2.0 $R/opt/conf-lib/\n"
                     "printf '#!/bin/sh\\necho ran > %s/outside/marker\\n' > $R/sbin/ldconfig; chmod 755 $R/sbin/ldconfig",
                     top, name, top, top, top),
             "building a root");
}

static int run_in(const char *name, int memfd, const char *const *dirs, gh_error_t *err)
{
        char p[PATH_MAX];
        _cleanup_close_ int rootfd = -1;
        snprintf(p, sizeof(p), "%s/%s", top, name);
        rootfd = gh_rootfs_open(p, err);
        if (rootfd < 0)
                return -1;
        return gh_ldconfig_run(memfd, rootfd, dirs, err);
}

static void snapshot(char *buf, size_t size)
{
        _cleanup_free_ char *s = slurp_cmd("(cat /proc/self/mountinfo; find %s/outside -printf '%%p %%s %%T@\\n';"
                                           " stat -c '%%i %%s %%Y' /etc/ld.so.cache) 2>&1 | md5sum",
                                           top);
        snprintf(buf, size, "%s", s);
}

static int open_probe(const char *name, const char *source)
{
        _cleanup_error_ gh_error_t err = NULL;
        char spec[PATH_MAX + 1];
        if (xsystemf("printf '%%s' '%s' > %s/%s.c && cc -static -O1 -o %s/%s %s/%s.c 2>/dev/null", source, top, name,
                     top, name, top, name) != 0)
                return -1;
        snprintf(spec, sizeof(spec), "@%s/%s", top, name);
        return gh_ldconfig_open(spec, &err);
}

int main(int argc, char **argv)
{
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_close_ int memfd = -1;
        const char *const dirs[] = { "/opt/extra", NULL };
        char before[128], after[128], spec[PATH_MAX + 1];
        char tmpl[] = "/tmp/gh-ldconfig-XXXXXX";
        int r;

        if (geteuid() != 0)
                tap_skip_all("needs root (namespaces, pivot_root)");
        if (argc > 1 && strcmp(argv[1], "--no-new-mount-api") == 0)
                gh_syscall_disable(GH_SYS_NEW_MOUNT_API);
        if (mkdtemp(tmpl) == NULL)
                tap_skip_all("mkdtemp failed");
        snprintf(top, sizeof(top), "%s", tmpl);
        /* Our private mount namespace plays the container's. */
        must(unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)");
        must(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), "making / private");
        must(xsystemf("set -e; cd %s; mkdir outside; echo host > outside/keep\n"
                      "echo 'int gh_one(void){return 1;}' > one.c; echo 'int gh_two(void){return 2;}' > two.c\n"
                      "cc -shared -fPIC -Wl,-soname,libghone.so.1 -o libghone.so.1.0 one.c\n"
                      "cc -shared -fPIC -Wl,-soname,libghtwo.so.2 -o libghtwo.so.2.0 two.c",
                      top),
             "building test libraries");

        /* Specs. */
        r = gh_ldconfig_open("/sbin/ldconfig", &err);
        ok(r < 0 && err && strstr(err->msg, "@/"), "a spec without '@' is refused: %s", err ? err->msg : "accepted");
        gh_error_free(&err);
        r = gh_ldconfig_open("@sbin/ldconfig", &err);
        ok(r < 0, "a relative host path is refused");
        gh_error_free(&err);
        make_root("good");
        snprintf(spec, sizeof(spec), "@%s/good/sbin/ldconfig", top);
        r = gh_ldconfig_open(spec, &err);
        ok(r < 0 && err && strstr(err->msg, "script"), "a script is refused with a hint: %s",
           err ? err->msg : "accepted");
        gh_error_free(&err);
        r = gh_ldconfig_open("@/bin/ls", &err);
        ok(r < 0 && err && strstr(err->msg, "dynamically linked"), "a dynamically linked program is refused: %s",
           err ? err->msg : "accepted");
        gh_error_free(&err);

        memfd = gh_ldconfig_open("@/sbin/ldconfig", &err);
        if (memfd < 0) {
                tap_diag("host ldconfig unusable here: %s", err ? err->msg : "?");
                xsystemf("rm -rf %s", top);
                tap_skip_all("/sbin/ldconfig is not a static ELF program on this host");
        }
        int seals = fcntl(memfd, F_GET_SEALS);
        ok(seals >= 0 && (seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL)) ==
                                 (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL),
           "the memfd is sealed against shrink, grow, write and further changes");
        ok(write(memfd, "x", 1) < 0 && errno == EPERM, "writing into the sealed binary fails with EPERM");
        ok(fcntl(memfd, F_GETFD) & FD_CLOEXEC, "the memfd is close-on-exec");

        /* A good root. */
        snapshot(before, sizeof(before));
        r = run_in("good", memfd, dirs, &err);
        ok(r == 0, "ldconfig ran in the good root: %s", err ? err->msg : "ok");
        gh_error_free(&err);
        {
                _cleanup_free_ char *p = slurp_cmd("ldconfig -p -C %s/good/etc/ld.so.cache 2>&1", top);
                ok(strstr(p, "libghone.so.1 ") && strstr(p, "/opt/extra/libghone.so.1"),
                   "the cache lists the library of the directory given on the command line");
                ok(strstr(p, "libghtwo.so.2 ") && strstr(p, "/opt/conf-lib/libghtwo.so.2"),
                   "the cache lists the library of the directory in the image's ld.so.conf");
                if (!strstr(p, "libghone"))
                        tap_diag("ldconfig -p: %s", p);
        }
        ok(exists("%s/good/opt/extra/libghone.so.1", top), "the SONAME link was created in the root");
        ok(!exists("%s/outside/marker", top), "the image's /sbin/ldconfig did not run");
        snapshot(after, sizeof(after));
        is_str(after, before, "mounts, the outside directory and the host's /etc/ld.so.cache are unchanged");

        /* A root owned by another user (user-namespaced image): ldconfig runs as that owner. */
        make_root("owned");
        must(xsystemf("chown -R 4321:4321 %s/owned", top), "chown");
        r = run_in("owned", memfd, dirs, &err);
        ok(r == 0, "ldconfig ran in a root owned by uid 4321: %s", err ? err->msg : "ok");
        gh_error_free(&err);
        {
                struct stat st;
                char p[PATH_MAX];
                snprintf(p, sizeof(p), "%s/owned/etc/ld.so.cache", top);
                ok(stat(p, &st) == 0 && st.st_uid == 4321, "its cache belongs to the root's owner, not to host root");
        }

        /* Hostile roots: /etc is a symlink to a host directory, absolute or climbing with "..". */
        make_root("abs");
        must(xsystemf("cd %s/abs && rm -rf etc && ln -s %s/outside etc", top, top), "symlinking /etc");
        make_root("rel");
        must(xsystemf("cd %s/rel && rm -rf etc && ln -s ../../../../../../../..%s/outside etc", top, top),
             "symlinking /etc");
        snapshot(before, sizeof(before));
        r = run_in("abs", memfd, dirs, &err);
        ok(r < 0 && err && strstr(err->msg, "ldconfig"),
           "/etc -> host dir (absolute): ldconfig fails inside the root: %s", err ? err->msg : "succeeded");
        gh_error_free(&err);
        r = run_in("rel", memfd, dirs, &err);
        ok(r < 0, "/etc -> host dir (via ..): ldconfig fails inside the root: %s", err ? err->msg : "succeeded");
        gh_error_free(&err);
        ok(!exists("%s/outside/ld.so.cache", top) && !exists("%s/outside/ld.so.cache~", top),
           "no cache was written into the host directory");
        snapshot(after, sizeof(after));
        is_str(after, before, "hostile roots: mounts, the outside directory and the host cache are unchanged");

        /* Probes in place of ldconfig. */
        _cleanup_close_ int probe = open_probe(
                "probe", "#include <stdio.h>\n#include <unistd.h>\n#include <sys/resource.h>\n"
                         "extern char **environ;\n"
                         "int main(int c, char **v) { int n = 0; struct rlimit r; while (environ[n]) n++;\n"
                         "getrlimit(RLIMIT_NOFILE, &r);\n"
                         "printf(\"pid=%d env=%d argv=%s,%s uid=%d nofile=%d\\n\", (int) getpid(), n, v[0],\n"
                         "c > 1 ? v[1] : \"\", (int) getuid(), (int) r.rlim_max); return 3; }\n");
        if (probe >= 0) {
                r = run_in("good", probe, dirs, &err);
                ok(r < 0 && err &&
                           strstr(err->msg, "exit status 3: pid=1 env=0 argv=ldconfig,/opt/extra uid=0 nofile=256"),
                   "the program runs as pid 1 with an empty environment, the lib dirs as arguments and rlimits: %s",
                   err ? err->msg : "succeeded");
                gh_error_free(&err);
        } else {
                tap_diag("no static C toolchain: probe checks skipped");
        }
        _cleanup_close_ int sock = open_probe(
                "sock",
                "#include <sys/socket.h>\nint main(void) { return socket(AF_UNIX, SOCK_STREAM, 0) < 0 ? 5 : 6; }\n");
        if (sock >= 0) {
                r = run_in("good", sock, dirs, &err);
                ok(r < 0 && err && strstr(err->msg, "seccomp"), "a syscall outside the allowlist kills it: %s",
                   err ? err->msg : "succeeded");
                gh_error_free(&err);
        }
        _cleanup_close_ int spin = open_probe("spin", "int main(void) { for (;;) ; }\n");
        if (spin >= 0) {
                struct timespec t0, t1;
                gh_ldconfig_set_timeout(1000);
                clock_gettime(CLOCK_MONOTONIC, &t0);
                r = run_in("good", spin, dirs, &err);
                ok(r < 0 && err && err->code == ETIMEDOUT, "a program that never ends is killed at the timeout: %s",
                   err ? err->msg : "succeeded");
                clock_gettime(CLOCK_MONOTONIC, &t1);
                ok(t1.tv_sec - t0.tv_sec < 5, "and the call returned within the timeout (%lds)",
                   (long) (t1.tv_sec - t0.tv_sec));
                gh_error_free(&err);
                gh_ldconfig_set_timeout(0);
                int left = -1;
                for (int i = 0; i < 20 && left != 0; i++) {
                        _cleanup_free_ char *n =
                                slurp_cmd("ls -l /proc/[0-9]*/exe 2>/dev/null | grep -c memfd:ldconfig");
                        left = atoi(n);
                        if (left)
                                usleep(50 * 1000);
                }
                is_int(left, 0, "no sandbox process is left behind");
        }
        snapshot(after, sizeof(after));
        is_str(after, before, "after the probes: mounts and the outside directory are unchanged");

        xsystemf("rm -rf %s", top);
        return tap_done();
}
