/* lib/core/service.c: the sandboxed driver service and its lifecycle.  Without root: --user parsing,
 * the overflow ids, and the one clear error of a service that cannot chroot.  As root, with the
 * fake driver: the child as a user sees it while it runs (the overflow uid or --user's, no
 * capabilities, no_new_privs, chrooted into the driver root, fds 0-3 only),
 * and a service that hangs, crashes or fails ends in one error with the child killed and reaped. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "gpus.h"
#include "rootfs.h"
#include "service.h"
#include "tests/tap.h"
#include "tests/testutil.h"

#define VER "580.95.05"

static char T[64], R[PATH_MAX];

static double now(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static bool no_child_left(void) { return waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD; }

static void test_parse_user(void)
{
        static const struct {
                const char *spec;
                long uid, gid; /* -1: refused */
        } cases[] = {
                { "1000", 1000, 1000 },   { "1000:44", 1000, 44 },
                { "0:0", 0, 0 },          { "4294967294", 4294967294L, 4294967294L },
                { "4294967295", -1, -1 }, { "12345678901", -1, -1 },
                { "", -1, -1 },           { "nobody", -1, -1 },
                { "1000:", -1, -1 },      { ":44", -1, -1 },
                { "-1", -1, -1 },         { "1000:44:1", -1, -1 },
                { " 1000", -1, -1 },      { "1000:nogroup", -1, -1 },
        };
        for (size_t i = 0; i < GH_ARRAY_SIZE(cases); i++) {
                _cleanup_error_ gh_error_t err = NULL;
                uid_t u = 7;
                gid_t g = 7;
                int r = gh_service_parse_user(cases[i].spec, &u, &g, &err);
                if (cases[i].uid >= 0)
                        ok(r == 0 && u == (uid_t) cases[i].uid && g == (gid_t) cases[i].gid, "--user=%s is %ld:%ld",
                           cases[i].spec, cases[i].uid, cases[i].gid);
                else
                        ok(r < 0 && strstr(err->msg, "numeric UID or UID:GID") && strstr(err->msg, cases[i].spec) &&
                                   u == 7 && g == 7,
                           "--user='%s' is refused, naming it, ids untouched", cases[i].spec);
        }
}

static void test_overflow_ids(void)
{
        char *u = sh_output("cat /proc/sys/kernel/overflowuid"), *g = sh_output("cat /proc/sys/kernel/overflowgid");

        ok(u && (unsigned long) gh_overflow_uid() == strtoul(u, NULL, 10), "the overflow uid is the kernel's (%s)",
           u ? strtok(u, "\n") : "?");
        ok(g && (unsigned long) gh_overflow_gid() == strtoul(g, NULL, 10), "the overflow gid is the kernel's");
        free(u);
        free(g);
}

/* Without root the child cannot chroot into a driver root that is not the host's: it says so
 * through the protocol, and the parent reaps it. */
static void test_unprivileged(void)
{
        struct gh_gpus_opts opts = GH_GPUS_OPTS_DEFAULT;
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_gpu_list list;
        char dir[PATH_MAX];
        int fds, r;

        snprintf(dir, sizeof(dir), "%s/not-the-host", T);
        if (mkdir(dir, 0755) < 0)
                abort();
        _cleanup_close_ int fd = gh_rootfs_open(dir, &err);
        fds = count_fds();
        double t0 = now();
        r = gh_service_query(fd, &opts, &list, &err);
        ok(r < 0 && strstr(err->msg, "querying the driver through NVML") && strstr(err->msg, "chroot") &&
                   strstr(err->msg, "run as root") && !strchr(err->msg, '\n'),
           "not root: one line that says what to do: %s", r < 0 ? err->msg : "");
        ok(now() - t0 < 2.0, "at once");
        ok(no_child_left(), "the service child is reaped");
        is_int(count_fds(), fds, "no descriptor leaked");
}

/* ---- as root, with the fake driver ---- */

/* What a watcher saw of the service child while it ran. */
static struct {
        pid_t parent;
        bool found;
        char status[4096], root[PATH_MAX];
        int nfds;
        char cwd[PATH_MAX];
} seen;

/* The first size-1 bytes of a file, NUL-terminated; its length, or -1. */
static long read_small(const char *path, char *buf, size_t size)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd < 0 ? -1 : read(fd, buf, size - 1);

        if (fd >= 0)
                close(fd);
        buf[n < 0 ? 0 : n] = '\0';
        return (long) n;
}

static int count_dir(const char *path)
{
        DIR *d = opendir(path);
        int n = 0;

        if (d == NULL)
                return -1;
        for (struct dirent *de; (de = readdir(d)) != NULL;)
                n += de->d_name[0] != '.';
        closedir(d);
        return n;
}

/* Samples the child until it is gone: the last sample is of the child hung in NVML, after the
 * sandbox and the dlopen (an earlier one may catch the loader with the library's file open). */
static void *watch(void *unused)
{
        bool gone = false;

        for (int tries = 0; tries < 1000 && !gone; tries++) {
                DIR *d = opendir("/proc");
                struct dirent *de;
                bool found_now = false;

                while (d && (de = readdir(d)) != NULL && !found_now) {
                        char path[PATH_MAX], st[4096], root[PATH_MAX] = "", cwd[PATH_MAX] = "", again[PATH_MAX];
                        pid_t pid = (pid_t) atoi(de->d_name);
                        const char *ppid;
                        ssize_t n;

                        snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
                        if (pid <= 0 || read_small(path, st, sizeof(st)) <= 0 || (ppid = strstr(st, "PPid:")) == NULL)
                                continue;
                        /* Our child, once the sandbox is in place (no_new_privs is its last step). */
                        if (atoi(ppid + 5) != seen.parent || strstr(st, "NoNewPrivs:\t1") == NULL)
                                continue;
                        snprintf(path, sizeof(path), "/proc/%d/root", (int) pid);
                        n = readlink(path, root, sizeof(root) - 1);
                        root[n < 0 ? 0 : n] = '\0';
                        snprintf(path, sizeof(path), "/proc/%d/cwd", (int) pid);
                        n = readlink(path, cwd, sizeof(cwd) - 1);
                        cwd[n < 0 ? 0 : n] = '\0';
                        snprintf(path, sizeof(path), "/proc/%d/fd", (int) pid);
                        int nfds = count_dir(path);
                        snprintf(path, sizeof(path), "/proc/%d/root", (int) pid);
                        if (nfds < 0 || root[0] == '\0' || readlink(path, again, sizeof(again)) < 0 ||
                            strstr(st, "State:\tZ"))
                                continue; /* it ended while we looked: keep the sample before */
                        snprintf(seen.status, sizeof(seen.status), "%s", st);
                        snprintf(seen.root, sizeof(seen.root), "%s", root);
                        snprintf(seen.cwd, sizeof(seen.cwd), "%s", cwd);
                        seen.nfds = nfds;
                        seen.found = found_now = true;
                }
                if (d)
                        closedir(d);
                gone = seen.found && !found_now;
                nanosleep(&(struct timespec) { .tv_nsec = 5 * 1000 * 1000 }, NULL);
        }
        return NULL;
}

static void set_mode(const char *mode) { sh("echo %s > '%s/etc/fake-nvml-mode'", mode, R); }

/* A hanging NVML keeps the sandboxed child alive long enough to look at it. */
static void test_sandbox(uid_t uid, gid_t gid, const char *who)
{
        struct gh_gpus_opts opts = GH_GPUS_OPTS_DEFAULT;
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_gpu_list list;
        char want[64];
        pthread_t th;
        int r;

        set_mode("hang");
        memset(&seen, 0, sizeof(seen));
        seen.parent = getpid();
        opts.timeout_ms = 1500;
        opts.uid = uid;
        opts.gid = gid;
        if (uid == (uid_t) -1) {
                uid = gh_overflow_uid();
                gid = gh_overflow_gid();
        }
        _cleanup_close_ int fd = gh_rootfs_open(R, &err);
        pthread_create(&th, NULL, watch, NULL);
        double t0 = now();
        r = gh_service_query(fd, &opts, &list, &err);
        double secs = now() - t0;
        pthread_join(th, NULL);
        if (!ok(seen.found, "%s: the service child was seen while it ran", who))
                return;
        snprintf(want, sizeof(want), "Uid:\t%u\t%u\t%u\t%u\n", uid, uid, uid, uid);
        ok(strstr(seen.status, want) != NULL, "%s: it runs as uid %u (real, effective, saved, fs)", who, uid);
        snprintf(want, sizeof(want), "Gid:\t%u\t%u\t%u\t%u\n", gid, gid, gid, gid);
        ok(strstr(seen.status, want) != NULL, "%s: and gid %u", who, gid);
        const char *groups = strstr(seen.status, "Groups:");
        ok(groups && strspn(groups + 7, " \t") == strcspn(groups + 7, "\n"), "%s: with no supplementary groups", who);
        ok(strstr(seen.status, "CapEff:\t0000000000000000") && strstr(seen.status, "CapPrm:\t0000000000000000") &&
                   strstr(seen.status, "CapBnd:\t0000000000000000") && strstr(seen.status, "CapAmb:\t0000000000000000"),
           "%s: with no capability, none left in the bounding set", who);
        ok(strstr(seen.status, "NoNewPrivs:\t1") != NULL, "%s: with no_new_privs", who);
        is_str(seen.root, R, "chrooted into the driver root");
        is_int(seen.nfds, 4, "with fds 0-3 only (stdin, stdout, stderr, the socket)");
        is_str(seen.cwd, R, "working in its root");
        ok(r < 0 && err && strstr(err->msg, "did not answer the driver version within 1500 ms"),
           "%s: the hung NVML is a timeout: %s", who, r < 0 ? err->msg : "");
        ok(secs < 3.5, "%s: after %.2f s (timeout 1.5 s)", who, secs);
        ok(no_child_left(), "%s: the hung child was killed and reaped", who);
}

static void test_lifecycle(void)
{
        static const struct {
                const char *mode, *want;
        } modes[] = {
                { "crash", "libnvidia-ml crashed the NVML service (Segmentation fault)" },
                { "error", "NVML initialisation failed: Driver Not Loaded" },
        };
        struct gh_gpus_opts opts = GH_GPUS_OPTS_DEFAULT;
        _cleanup_close_ int fd = gh_rootfs_open(R, NULL);
        struct gh_gpu_list list;
        char cuda[16];

        set_mode("ok");
        for (int i = 0; i < 2; i++) {
                _cleanup_error_ gh_error_t err = NULL;
                int fds = count_fds(), r = gh_service_query(fd, &opts, &list, &err);
                ok(r == 0 && list.n == 2 && list.from_nvml && strcmp(list.driver_version, VER) == 0,
                   "a healthy service answers (run %d)", i + 1);
                ok(no_child_left(), "and its child is gone afterwards (run %d)", i + 1);
                is_int(count_fds(), fds, "no descriptor leaked (run %d)", i + 1);
                if (r < 0)
                        tap_diag("%s", err->msg);
                gh_gpu_list_free(&list);
        }
        for (size_t i = 0; i < GH_ARRAY_SIZE(modes); i++) {
                _cleanup_error_ gh_error_t err = NULL;
                set_mode(modes[i].mode);
                double t0 = now();
                int r = gh_service_query(fd, &opts, &list, &err);
                ok(r < 0 && strstr(err->msg, modes[i].want) && !strchr(err->msg, '\n') && now() - t0 < 2.0,
                   "NVML %s: %s", modes[i].mode, r < 0 ? err->msg : "");
                ok(no_child_left(), "NVML %s: the child is reaped", modes[i].mode);
        }
        set_mode("ok");

        _cleanup_error_ gh_error_t err = NULL;
        int r = gh_service_cuda_version(fd, &opts, NULL, cuda, sizeof(cuda), &err);
        /* By SONAME the driver root's ld cache decides: the fake root lists a decoy libcuda.so.1 in
         * /usr/local/lib first, which is why gpus.c passes the driver's own file. */
        ok(r < 0 && strstr(err->msg, "libcuda.so.1 has no cuDriverGetVersion"),
           "by SONAME the ld cache's first libcuda.so.1 is loaded (the fake root's decoy): %s", r < 0 ? err->msg : "");
        gh_error_free(&err);
        ok(gh_service_cuda_version(fd, &opts, "/usr/lib/x86_64-linux-gnu/libcuda.so." VER, cuda, sizeof(cuda), &err) ==
                           0 &&
                   strcmp(cuda, "13.0") == 0,
           "and from the driver's own file by path");
        r = gh_service_cuda_version(fd, &opts, "/usr/lib/libcuda-elsewhere.so.1", cuda, sizeof(cuda), &err);
        ok(r < 0 && strstr(err->msg, "asking libcuda for the CUDA version") &&
                   strstr(err->msg, "/usr/lib/libcuda-elsewhere.so.1"),
           "a libcuda that is not in the driver root is named: %s", r < 0 ? err->msg : "");
        ok(no_child_left(), "no libcuda child is left");
}

int main(void)
{
        const char *mkroot = getenv("FAKE_DRIVER_MAKE_ROOT");

        snprintf(T, sizeof(T), "/tmp/test-service.XXXXXX");
        if (mkdtemp(T) == NULL)
                return 1;
        snprintf(R, sizeof(R), "%s/driver", T);
        test_parse_user();
        test_overflow_ids();
        /* This test program has a dynamic loader (PT_INTERP); the static gpu-hook's refusal is
         * tested end to end (tests/integration/test-hook-gpu.sh). */
        ok(gh_service_can_load(), "a dynamically linked program may load the driver's libraries");
        if (geteuid() != 0) {
                test_unprivileged();
                tap_diag("not root: the sandboxed service with the fake driver is skipped");
        } else if (mkroot == NULL) {
                tap_diag("FAKE_DRIVER_MAKE_ROOT not set (run under meson test): the fake driver's service skipped");
        } else if (ok(sh("'%s' '%s' >/dev/null 2>&1", mkroot, R) == 0, "a fake driver root")) {
                test_lifecycle();
                test_sandbox((uid_t) -1, (gid_t) -1, "default");
                test_sandbox(1234, 5678, "--user=1234:5678");
        }
        sh("rm -rf '%s'", T);
        return tap_done();
}
