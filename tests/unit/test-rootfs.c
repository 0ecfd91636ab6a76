/* Hostile trees for the in-root resolver.  Every case builds a root next to an "outside" directory
 * holding host markers, resolves or creates something inside the root, and asserts that nothing
 * outside was opened or created.  Run once normally and once with --no-openat2 (the component walk).
 * As root, one more case mounts procfs inside the root to test real magic links. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "rootfs.h"
#include "syscalls.h"
#include "tap.h"

static char top[PATH_MAX], root[PATH_MAX], outside[PATH_MAX];
static int rootfd = -1;
static struct stat marker_st, outside_st;

static void xsystemf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void xsystemf(const char *fmt, ...)
{
        char cmd[8192];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(cmd, sizeof(cmd), fmt, ap);
        va_end(ap);
        if (system(cmd) != 0) {
                printf("Bail out! %s\n", cmd);
                exit(1);
        }
}

/* Counts entries under outside/ (recursively) so a test can prove nothing appeared there. */
static int count_outside(void)
{
        char cmd[PATH_MAX + 64];
        int n = -1;
        snprintf(cmd, sizeof(cmd), "find '%s' | wc -l", outside);
        FILE *f = popen(cmd, "r");
        if (f && fscanf(f, "%d", &n) != 1)
                n = -1;
        if (f)
                pclose(f);
        return n;
}

static bool is_outside(int fd)
{
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                return false;
        return (st.st_dev == marker_st.st_dev && st.st_ino == marker_st.st_ino) ||
               (st.st_dev == outside_st.st_dev && st.st_ino == outside_st.st_ino);
}

static bool is_under_root(int fd)
{
        _cleanup_free_ char *p = gh_fd_path(fd);
        return p && strncmp(p, root, strlen(root)) == 0;
}

static void setup(void)
{
        char tmpl[] = "/tmp/gh-rootfs-XXXXXX";
        if (mkdtemp(tmpl) == NULL) {
                printf("Bail out! mkdtemp\n");
                exit(1);
        }
        snprintf(top, sizeof(top), "%s", tmpl);
        snprintf(root, sizeof(root), "%s/root", top);
        snprintf(outside, sizeof(outside), "%s/outside", top);
        xsystemf("mkdir -p %s/etc %s/usr/lib %s/newdir3/deeper && echo host > %s/marker && echo inside > %s/etc/passwd",
                 root, root, outside, outside, root);
        char p[PATH_MAX + 16];
        snprintf(p, sizeof(p), "%s/marker", outside);
        stat(p, &marker_st);
        stat(outside, &outside_st);
        rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

static void link_in_root(const char *target, const char *name)
{
        char p[PATH_MAX * 2];
        snprintf(p, sizeof(p), "%s/%s", root, name);
        unlink(p);
        if (symlink(target, p) < 0) {
                printf("Bail out! symlink %s: %s\n", p, strerror(errno));
                exit(1);
        }
}

static void expect_not_outside(const char *what, const char *path, int oflags)
{
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_close_ int fd = gh_resolve(rootfd, path, oflags, &err);
        ok(!is_outside(fd) && (fd < 0 || is_under_root(fd)), "%s: '%s' stays inside (%s)", what, path,
           fd >= 0 ? "opened inside" : (err ? err->msg : "?"));
}

int main(int argc, char **argv)
{
        bool no_openat2 = argc > 1 && strcmp(argv[1], "--no-openat2") == 0;
        _cleanup_error_ gh_error_t err = NULL;
        char abs_marker[PATH_MAX + 16], buf[PATH_MAX * 2];
        int before, fd;

        if (no_openat2)
                gh_syscall_disable(GH_SYS_OPENAT2);
        tap_diag("resolver mode: %s", no_openat2 ? "component walk (openat2 disabled)" : "openat2 when available");
        setup();
        before = count_outside();
        snprintf(abs_marker, sizeof(abs_marker), "%s/marker", outside);

        /* 1. absolute symlink in the middle pointing out of the root */
        link_in_root(outside, "usr/lib/nvidia");
        expect_not_outside("absolute symlink out", "usr/lib/nvidia/marker", O_RDONLY);

        /* 2. relative symlink climbing out */
        link_in_root("../../../outside", "usr/lib/rel");
        expect_not_outside("relative symlink out", "usr/lib/rel/marker", O_RDONLY);

        /* 3. the path itself climbs */
        expect_not_outside("../../.. in the path", "../../../outside/marker", O_RDONLY);
        expect_not_outside("many ..", "a/../../../../../../../../../../../../../../outside/marker", O_PATH);

        /* 4. symlink loop */
        link_in_root("loop-b", "loop-a");
        link_in_root("loop-a", "loop-b");
        fd = gh_resolve(rootfd, "loop-a/x", O_PATH, &err);
        ok(fd < 0 && err && err->code == ELOOP, "symlink loop gives ELOOP (%s)", err ? err->msg : "opened");
        if (fd >= 0)
                close(fd);
        gh_error_free(&err);

        /* 5. symlink as the last component pointing at a host file */
        link_in_root(abs_marker, "etc/shadow");
        expect_not_outside("last-component symlink to host file", "etc/shadow", O_RDONLY);
        fd = gh_resolve(rootfd, "etc/shadow", O_PATH | O_NOFOLLOW, &err);
        {
                struct stat st;
                ok(fd >= 0 && fstat(fd, &st) == 0 && S_ISLNK(st.st_mode), "O_NOFOLLOW returns the link itself");
        }
        if (fd >= 0)
                close(fd);
        gh_error_free(&err);

        /* 6. symlink in the middle resolves inside the root: /etc of the root, not the host's */
        link_in_root("/etc", "etc2");
        fd = gh_resolve(rootfd, "etc2/passwd", O_RDONLY, &err);
        {
                char c[16] = { 0 };
                ok(fd >= 0 && read(fd, c, sizeof(c) - 1) > 0 && strncmp(c, "inside", 6) == 0,
                   "absolute symlink /etc is the root's /etc");
        }
        if (fd >= 0)
                close(fd);
        gh_error_free(&err);

        /* 6b. the same from a nested directory: an absolute target starts again at the root, not at
         * the directory that holds the link (images have such links: /usr/lib/... -> /etc/alternatives) */
        link_in_root("/etc", "usr/lib/etc3");
        fd = gh_resolve(rootfd, "usr/lib/etc3/passwd", O_RDONLY, &err);
        {
                char c[16] = { 0 };
                ok(fd >= 0 && read(fd, c, sizeof(c) - 1) > 0 && strncmp(c, "inside", 6) == 0,
                   "nested absolute symlink /etc is the root's /etc (%s)",
                   fd >= 0 ? "opened"
                   : err   ? err->msg
                           : "?");
        }
        if (fd >= 0)
                close(fd);
        gh_error_free(&err);

        /* 7. symlink to / then .. */
        link_in_root("/", "up");
        expect_not_outside("symlink to / then ..", "up/../../outside/marker", O_RDONLY);

        /* 8. regular file where a directory is expected */
        xsystemf("echo x > %s/afile", root);
        fd = gh_resolve(rootfd, "afile/x", O_PATH, &err);
        ok(fd < 0 && err && err->code == ENOTDIR, "file used as directory gives ENOTDIR");
        gh_error_free(&err);
        fd = gh_mkdir_p(rootfd, "afile/sub", 0755, &err);
        ok(fd < 0 && err != NULL, "mkdir -p through a regular file fails");
        gh_error_free(&err);

        /* 9. mkdir -p through an absolute symlink out creates inside the root */
        link_in_root("/outside-new", "lib-out");
        snprintf(buf, sizeof(buf), "%s%s", outside, "-new");
        link_in_root(buf, "lib-out2");
        fd = gh_mkdir_p(rootfd, "lib-out2/x86_64-linux-gnu", 0755, &err);
        {
                struct stat st;
                char inroot[PATH_MAX * 3];
                snprintf(inroot, sizeof(inroot), "%s%s/x86_64-linux-gnu", root, buf);
                ok(fd >= 0 && stat(buf, &st) < 0 && stat(inroot, &st) == 0 && is_under_root(fd),
                   "mkdir -p through absolute symlink creates under the root only");
        }
        if (fd >= 0)
                close(fd);
        gh_error_free(&err);

        /* 10. mkdir -p through a relative symlink that climbs out: from root/usr/lib, three ".." reach
         * the directory above the root (where outside/ is) and more go further; each must stop at the
         * root, so the directories appear as root/outside/newdir{,2}/deeper and never in outside/. */
        for (int i = 0; i < 2; i++) {
                static const char *const targets[] = { "../../../outside/newdir", "../../../../../../outside/newdir2" };
                static const char *const names[] = { "newdir", "newdir2" };
                char host_dir[PATH_MAX * 2], in_root[PATH_MAX * 2];
                struct stat st;

                link_in_root(targets[i], "usr/lib/rel2");
                fd = gh_mkdir_p(rootfd, "usr/lib/rel2/deeper", 0755, &err);
                snprintf(host_dir, sizeof(host_dir), "%s/%s", outside, names[i]);
                snprintf(in_root, sizeof(in_root), "%s/outside/%s/deeper", root, names[i]);
                ok(fd >= 0 && is_under_root(fd) && !is_outside(fd),
                   "mkdir -p through '%s' returns a directory in the root (%s)", targets[i],
                   fd >= 0 ? "ok" : (err ? err->msg : "?"));
                ok(stat(host_dir, &st) < 0 && errno == ENOENT, "... and creates nothing above the root (no %s)",
                   host_dir);
                ok(stat(in_root, &st) == 0 && S_ISDIR(st.st_mode), "... the climb stops at the root: %s exists",
                   in_root);
                if (fd >= 0)
                        close(fd);
                gh_error_free(&err);
        }
        /* ... and resolving (openat2 when available, else the walk) through the same kind of link to a
         * directory that exists only above the root never reaches it. */
        link_in_root("../../../outside/newdir3", "usr/lib/rel2");
        expect_not_outside("relative symlink climbing out, resolved", "usr/lib/rel2/deeper", O_PATH | O_DIRECTORY);

        /* 11. create a file where the image put a symlink to a host marker: link replaced, marker intact */
        link_in_root(abs_marker, "usr/lib/libcuda.so.1");
        fd = gh_create_file(rootfd, "usr/lib/libcuda.so.1", 0644, &err);
        {
                struct stat st;
                char c[16] = { 0 };
                int m = open(abs_marker, O_RDONLY);
                bool marker_ok = m >= 0 && read(m, c, sizeof(c) - 1) > 0 && strncmp(c, "host", 4) == 0;
                if (m >= 0)
                        close(m);
                ok(fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && !is_outside(fd) && marker_ok,
                   "create_file replaces a symlink, host marker untouched");
        }
        if (fd >= 0)
                close(fd);
        gh_error_free(&err);

        /* 12. create a symlink whose parent is a symlink out */
        link_in_root(outside, "bin-out");
        ok(gh_create_symlink(rootfd, "bin-out/evil", "x", &err) == 0,
           "create_symlink through an escaping parent works");
        gh_error_free(&err);
        {
                char p[PATH_MAX + 16];
                struct stat st;
                snprintf(p, sizeof(p), "%s/evil", outside);
                ok(lstat(p, &st) < 0, "... and did not create it outside");
        }

        /* 13. chains: 40 links are fine, 41 are ELOOP */
        for (int i = 0; i < 41; i++) {
                char name[32], target[32];
                snprintf(name, sizeof(name), "chain%d", i);
                snprintf(target, sizeof(target), i == 40 ? "etc" : "chain%d", i + 1);
                link_in_root(target, name);
        }
        fd = gh_resolve(rootfd, "chain1/passwd", O_RDONLY, &err);
        ok(fd >= 0, "a chain of 40 symlinks resolves");
        if (fd >= 0)
                close(fd);
        gh_error_free(&err);
        fd = gh_resolve(rootfd, "chain0/passwd", O_RDONLY, &err);
        ok(fd < 0 && err && err->code == ELOOP, "a chain of 41 symlinks gives ELOOP");
        gh_error_free(&err);

        /* 14. /proc/self/fd of a host directory, as a plain symlink in the image (no proc inside) */
        {
                int hostfd = open(outside, O_PATH | O_DIRECTORY);
                snprintf(buf, sizeof(buf), "/proc/self/fd/%d", hostfd);
                link_in_root(buf, "fdlink");
                expect_not_outside("symlink to /proc/self/fd/N", "fdlink/marker", O_RDONLY);
                close(hostfd);
        }

        /* 15. resolve_parent refuses paths that name no file */
        {
                char *name = NULL;
                ok(gh_resolve_parent(rootfd, "/", true, &name, &err) < 0, "resolve_parent refuses /");
                gh_error_free(&err);
                ok(gh_resolve_parent(rootfd, "a/..", true, &name, &err) < 0, "resolve_parent refuses a trailing ..");
                gh_error_free(&err);
        }

        /* 16. create_file refuses a directory and a symlink to a directory is replaced, not followed */
        fd = gh_create_file(rootfd, "etc", 0644, &err);
        ok(fd < 0 && err && err->code == EISDIR, "create_file on a directory fails with EISDIR");
        gh_error_free(&err);

        /* 17. real magic links: procfs mounted inside the root (root only, private mount namespace) */
        if (geteuid() == 0 && unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0) {
                char procdir[PATH_MAX + 8];
                snprintf(procdir, sizeof(procdir), "%s/proc", root);
                mkdir(procdir, 0555);
                if (mount("proc", procdir, "proc", 0, NULL) == 0) {
                        snprintf(buf, sizeof(buf), "proc/self/root%s", abs_marker);
                        expect_not_outside("magic link /proc/self/root", buf, O_RDONLY);
                        snprintf(buf, sizeof(buf), "proc/%d/root%s/marker", getpid(), outside);
                        expect_not_outside("magic link /proc/PID/root", buf, O_RDONLY);
                        {
                                int hostfd = open(outside, O_PATH | O_DIRECTORY);
                                snprintf(buf, sizeof(buf), "proc/self/fd/%d/marker", hostfd);
                                expect_not_outside("magic link /proc/self/fd/N", buf, O_RDONLY);
                                close(hostfd);
                        }
                        link_in_root("/proc/self/cwd", "cwdlink");
                        expect_not_outside("symlink to magic /proc/self/cwd", "cwdlink/marker", O_RDONLY);
                        umount2(procdir, MNT_DETACH);
                } else {
                        tap_diag("cannot mount proc in the root: %s", strerror(errno));
                }
        } else {
                tap_diag("magic-link cases need root: skipped");
        }

        ok(count_outside() == before, "nothing was created outside the root (%d entries before)", before);
        {
                char c[16] = { 0 };
                int m = open(abs_marker, O_RDONLY);
                ok(m >= 0 && read(m, c, sizeof(c) - 1) == 5 && strcmp(c, "host\n") == 0, "host marker unchanged");
                if (m >= 0)
                        close(m);
        }

        close(rootfd);
        xsystemf("rm -rf %s", top);
        return tap_done();
}
