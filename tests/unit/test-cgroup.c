/* The device cgroup module, proven by opening devices.
 *
 * Major 195 is not registered on the CPU test bed, so opening a 195:N node gives ENXIO when the
 * cgroup allows it and EPERM when the cgroup denies it.  A "probe" child sits in the test cgroup
 * and opens (or mknods) whatever the test asks, reporting errno.
 *
 * The parsers run everywhere; the rest needs root, a cgroup v1 devices hierarchy at
 * /sys/fs/cgroup/devices and a cgroup2 hierarchy at /sys/fs/cgroup/unified (or /sys/fs/cgroup). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/bpf.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"
#include "syscalls.h"
#include "cleanup.h"
#include "tap.h"

#define V1_ROOT "/sys/fs/cgroup/devices"

static char tmpdir[] = "/tmp/gh-cgroup-XXXXXX";
static char n0[PATH_MAX], n1[PATH_MAX], mk[PATH_MAX];
static const char *v2_root;

/* --- helpers ------------------------------------------------------------------------------- */

static int write_file(const char *path, const char *s)
{
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        ssize_t w;

        if (fd < 0)
                return -errno;
        w = write(fd, s, strlen(s));
        w = w < 0 ? -errno : 0;
        close(fd);
        return (int) w;
}

static char *read_text(const char *path)
{
        static char buf[8192];
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

        if (fd >= 0)
                close(fd);
        buf[n < 0 ? 0 : n] = '\0';
        return buf;
}

static bool has_line(const char *text, const char *line)
{
        size_t n = strlen(line);
        for (const char *p = text; (p = strstr(p, line)) != NULL; p++)
                if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
                        return true;
        return false;
}

struct probe {
        pid_t pid;
        int req, resp;
};
struct probe_req {
        char op; /* 'o' open O_RDWR, 'm' mknod 195:0 */
        char path[PATH_MAX];
};

/* Forks a child that moves itself into the cgroup whose cgroup.procs is PROCS, then serves
 * requests until its pipe closes. */
static int probe_start(struct probe *p, const char *procs)
{
        int req[2], resp[2], ready = -1;

        if (pipe2(req, O_CLOEXEC) < 0 || pipe2(resp, O_CLOEXEC) < 0)
                return -1;
        p->pid = fork();
        if (p->pid < 0)
                return -1;
        if (p->pid == 0) {
                struct probe_req r;
                char self[32];
                int e;

                close(req[1]);
                close(resp[0]);
                snprintf(self, sizeof(self), "%d", (int) getpid());
                e = write_file(procs, self);
                if (write(resp[1], &e, sizeof(e)) != sizeof(e))
                        _exit(1);
                while (read(req[0], &r, sizeof(r)) == sizeof(r)) {
                        int fd = -1;
                        errno = 0;
                        if (r.op == 'o')
                                fd = open(r.path, O_RDWR | O_CLOEXEC);
                        else
                                fd = mknod(r.path, S_IFCHR | 0600, makedev(195, 0));
                        e = fd < 0 ? errno : 0;
                        if (r.op == 'o' && fd >= 0)
                                close(fd);
                        if (r.op == 'm' && fd == 0)
                                unlink(r.path);
                        if (write(resp[1], &e, sizeof(e)) != sizeof(e))
                                _exit(1);
                }
                _exit(0);
        }
        close(req[0]);
        close(resp[1]);
        p->req = req[1];
        p->resp = resp[0];
        if (read(p->resp, &ready, sizeof(ready)) != sizeof(ready) || ready != 0) {
                tap_diag("probe could not join %s: %s", procs, strerror(-ready));
                return -1;
        }
        return 0;
}

static int probe_do(struct probe *p, char op, const char *path)
{
        struct probe_req r = { .op = op };
        int e = -1;

        snprintf(r.path, sizeof(r.path), "%s", path);
        if (write(p->req, &r, sizeof(r)) != sizeof(r) || read(p->resp, &e, sizeof(e)) != sizeof(e))
                return -1;
        return e;
}

static void probe_stop(struct probe *p)
{
        if (p->pid <= 0)
                return;
        close(p->req);
        close(p->resp);
        kill(p->pid, SIGKILL);
        waitpid(p->pid, NULL, 0);
        p->pid = 0;
}

static const char *strerr(int e) { return e < 0 ? "probe died" : e == 0 ? "success" : strerror(e); }

/* With the NVIDIA driver loaded (the GPU test bed) an allowed 195:0 really opens; without it the
 * open reaches the unregistered major and fails with ENXIO.  Either way it is not EPERM. */
#define is_allowed(got, ...)                                                                                           \
        do {                                                                                                           \
                int _g = (got);                                                                                        \
                if (!ok(_g == 0 || _g == ENXIO || _g == ENODEV, __VA_ARGS__))                                          \
                        printf("#   got %s, want success, ENXIO or ENODEV\n", strerr(_g));                             \
        } while (0)

#define is_errno(got, want, ...)                                                                                       \
        do {                                                                                                           \
                int _g = (got);                                                                                        \
                if (!ok(_g == (want), __VA_ARGS__))                                                                    \
                        printf("#   got %s, want %s\n", strerr(_g), strerr(want));                                     \
        } while (0)

static const struct gh_dev_rule rule0[] = { { 'c', 195, 0 } };

/* --- parsers (no root) ---------------------------------------------------------------------- */

static int parse_membership(const char *text, char **v1, char **v2, gh_error_t *err)
{
        FILE *f = fmemopen((void *) text, strlen(text), "r");
        int r = gh_cgroup_parse_membership(f, v1, v2, err);
        fclose(f);
        return r;
}

static int find_mount(const char *text, enum gh_cgroup_version v, const char *cgpath, char **mnt, const char **rel)
{
        _cleanup_error_ gh_error_t err = NULL;
        FILE *f = fmemopen((void *) text, strlen(text), "r");
        int r = gh_cgroup_find_mount(f, v, cgpath, mnt, rel, &err);
        fclose(f);
        return r;
}

static void test_parsers(void)
{
        static const char mountinfo[] =
                "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
                "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
                "36 31 0:33 / /sys/fs/cgroup/devices rw,relatime shared:9 - cgroup cgroup rw,devices\n"
                "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
                "50 31 0:33 /kube /mnt/dev\\040ices rw - cgroup cgroup rw,devices\n"
                "51 31 0:33 /kubeX /mnt/other rw - cgroup cgroup rw,devices\n";
        _cleanup_free_ char *v1 = NULL, *v2 = NULL, *mnt = NULL;
        _cleanup_error_ gh_error_t err = NULL;
        const char *rel = NULL;

        ok(parse_membership("12:pids:/a\n5:devices:/x/y:z\n1:name=systemd:/s\n0::/u/v\n", &v1, &v2, &err) == 0 && v1 &&
                   v2,
           "membership: hybrid list parses");
        is_str(v1, "/x/y:z", "membership: the devices line gives the v1 path (colons kept)");
        is_str(v2, "/u/v", "membership: the 0:: line gives the v2 path");
        free(v1), free(v2), v1 = v2 = NULL;
        ok(parse_membership("4:cpu,devices,memory:/c\n", &v1, &v2, &err) == 0 && v1 && !v2 && strcmp(v1, "/c") == 0,
           "membership: devices found in a co-mounted controller list, no v2 line");
        free(v1), v1 = NULL;
        ok(parse_membership("4:devicesx:/c\n0::/\n", &v1, &v2, &err) == 0 && !v1 && v2,
           "membership: 'devicesx' is not the devices controller");
        free(v2), v2 = NULL;
        ok(parse_membership("5:devices:/a\n5:devices:/b\n", &v1, &v2, &err) < 0 && err &&
                   strstr(err->msg, "more than one devices line"),
           "membership: a forged second devices line is refused");
        gh_error_free(&err);
        ok(parse_membership("garbage\n", &v1, &v2, &err) < 0 && err && strstr(err->msg, "malformed"),
           "membership: a malformed line is an error naming it");
        gh_error_free(&err);

        ok(find_mount(mountinfo, GH_CGROUP_V1, "/a/b", &mnt, &rel) == 0 && mnt && strcmp(rel, "a/b") == 0,
           "mountinfo: v1 path below the devices mount");
        is_str(mnt, "/sys/fs/cgroup/devices", "mountinfo: the devices mount point, not cpu's");
        free(mnt), mnt = NULL;
        ok(find_mount(mountinfo, GH_CGROUP_V1, "/kube/pod1", &mnt, &rel) == 0 && mnt &&
                   strcmp(mnt, "/mnt/dev ices") == 0 && strcmp(rel, "pod1") == 0,
           "mountinfo: the closest root wins and \\040 is decoded");
        free(mnt), mnt = NULL;
        ok(find_mount(mountinfo, GH_CGROUP_V1, "/kubeX", &mnt, &rel) == 0 && strcmp(mnt, "/mnt/other") == 0 &&
                   strcmp(rel, "") == 0,
           "mountinfo: a path equal to a mount's root maps to that mount ('/kube' is not its prefix)");
        free(mnt), mnt = NULL;
        ok(find_mount(mountinfo, GH_CGROUP_V2, "/u", &mnt, &rel) == 0 && strcmp(mnt, "/sys/fs/cgroup/unified") == 0 &&
                   strcmp(rel, "u") == 0,
           "mountinfo: cgroup2 mount for v2");
        free(mnt), mnt = NULL;
        ok(find_mount("41 31 0:38 /sub /x rw - cgroup2 cgroup2 rw\n", GH_CGROUP_V2, "/other", &mnt, &rel) < 0,
           "mountinfo: a mount whose root is not an ancestor is not used");

        struct gh_dev_rule bad_type[] = { { 'x', 1, 3 } }, bad_major[] = { { 'c', 4096, 0 } };
        ok(gh_cgroup_check_rules(bad_type, 1, &err) < 0 && strstr(err->msg, "'x'"), "rules: bad type refused");
        gh_error_free(&err);
        ok(gh_cgroup_check_rules(bad_major, 1, &err) < 0 && strstr(err->msg, "4096:0"), "rules: bad major refused");
        gh_error_free(&err);
        ok(gh_cgroup_check_rules(rule0, 1, &err) == 0, "rules: c 195:0 accepted");
}

/* --- error cases (root) --------------------------------------------------------------------- */

static int report_fd = -1;

/* Runs fn in a child and returns its error message ("" on success). */
static char *in_child(int (*fn)(void))
{
        static char msg[1024];
        int pfd[2];
        ssize_t n;
        pid_t pid;

        if (pipe(pfd) < 0)
                return NULL;
        pid = fork();
        if (pid == 0) {
                close(pfd[0]);
                report_fd = pfd[1];
                _exit(fn() == 0 ? 0 : 1);
        }
        close(pfd[1]);
        n = read(pfd[0], msg, sizeof(msg) - 1);
        msg[n < 0 ? 0 : n] = '\0';
        close(pfd[0]);
        waitpid(pid, NULL, 0);
        return msg;
}

static int report(int r, gh_error_t err)
{
        const char *m = r < 0 ? (err ? err->msg : strerror(errno)) : "";
        (void) !write(report_fd, m, strlen(m));
        return r;
}

/* Without the cgroup mounts (a private mount namespace) nothing can be found. */
static int no_mounts(void)
{
        _cleanup_error_ gh_error_t err = NULL;
        int r;

        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return report(-1, NULL);
        /* Lazily detaching /sys/fs/cgroup takes every hierarchy under it (v1, hybrid or v2). */
        umount2(V1_ROOT, MNT_DETACH);
        umount2("/sys/fs/cgroup/unified", MNT_DETACH);
        umount2("/sys/fs/cgroup", MNT_DETACH);
        r = gh_cgroup_allow_devices(getpid(), rule0, 1, &err);
        return report(r, err);
}

static void test_errors(void)
{
        _cleanup_error_ gh_error_t err = NULL;
        pid_t dead = fork();
        char *msg;

        if (dead == 0)
                _exit(0);
        waitpid(dead, NULL, 0);
        ok(gh_cgroup_allow_devices(dead, rule0, 1, &err) < 0 && err && strstr(err->msg, "does not exist") &&
                   !strchr(err->msg, '\n'),
           "a pid that does not exist: one-line error");
        if (err)
                tap_diag("%s", err->msg);
        gh_error_free(&err);

        msg = in_child(no_mounts);
        ok(msg && strstr(msg, "hierarchy holding") && strstr(msg, "call from the host mount namespace"),
           "no devices hierarchy mounted: one-line error saying where to call from");
        tap_diag("%s", msg ? msg : "(null)");
}

/* --- calling the module with a given capability set --------------------------------------- */

enum caps_mode { CAPS_ALL, CAPS_SYS_ADMIN_ONLY, CAPS_NONE };
static pid_t allow_pid;
static enum gh_cgroup_version allow_version;
static const struct gh_dev_rule *allow_rules;
static size_t allow_n;
static enum caps_mode allow_caps;

static int allow_now(void)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_cgroup cg;
        int r;

        if (allow_caps != CAPS_ALL) {
                cap_t c = cap_init();
                cap_value_t v = CAP_SYS_ADMIN;
                if (allow_caps == CAPS_SYS_ADMIN_ONLY) {
                        cap_set_flag(c, CAP_EFFECTIVE, 1, &v, CAP_SET);
                        cap_set_flag(c, CAP_PERMITTED, 1, &v, CAP_SET);
                }
                r = cap_set_proc(c);
                cap_free(c);
                if (r < 0)
                        return report(-1, NULL);
        }
        r = gh_cgroup_find(allow_pid, allow_version, &cg, &err);
        if (r == 0) {
                r = gh_cgroup_allow(&cg, allow_rules, allow_n, &err);
                gh_cgroup_close(&cg);
        }
        return report(r, err);
}

/* Returns "" when the call succeeded, else its error message. */
static const char *allow(pid_t pid, enum gh_cgroup_version v, const struct gh_dev_rule *rules, size_t n,
                         enum caps_mode caps)
{
        allow_pid = pid, allow_version = v, allow_rules = rules, allow_n = n, allow_caps = caps;
        return in_child(allow_now);
}

/* --- finding the cgroup: the usual mount points, and mountinfo ---------------------------- */

static pid_t find_pid;
static ino_t find_want;
static const char *find_over; /* bind-mounted over this mount point first, in a private namespace */
static const char *find_src;
static bool find_no_openat2; /* as on a kernel without openat2: the walk one component at a time */

static int find_now(void)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_cgroup cg;
        struct stat st;
        int r;

        if (find_no_openat2)
                gh_syscall_disable(GH_SYS_OPENAT2);
        if (find_over && (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
                          mount(find_src, find_over, NULL, MS_BIND, NULL) < 0))
                return report(-1, NULL);
        r = gh_cgroup_find(find_pid, allow_version, &cg, &err);
        if (r < 0)
                return report(r, err);
        r = fstat(cg.dirfd, &st) < 0 || st.st_ino != find_want ? -1 : 0;
        if (r < 0) {
                char m[PATH_MAX + 64];
                snprintf(m, sizeof(m), "opened %s, not the process's cgroup", cg.path);
                (void) !write(report_fd, m, strlen(m));
        }
        gh_cgroup_close(&cg);
        return r;
}

/* The usual mount point and mountinfo open the same directory; a directory there that does not list
 * the process (a mount of part of the tree over the usual place) is passed over. */
static void test_find(enum gh_cgroup_version v, const char *root)
{
        const char *tag = v == GH_CGROUP_V1 ? "find v1" : "find v2";
        struct probe p = { 0 };
        char cg[PATH_MAX], sub[PATH_MAX], procs[PATH_MAX];
        struct stat st;
        const char *msg;

        snprintf(cg, sizeof(cg), "%s/gh-find-%d", root, (int) getpid());
        snprintf(sub, sizeof(sub), "%s/gh-find-%d", cg, (int) getpid());
        snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
        if (mkdir(cg, 0755) < 0 || mkdir(sub, 0755) < 0 || stat(cg, &st) < 0 || probe_start(&p, procs) < 0) {
                ok(0, "%s: a cgroup with a process in it and an empty one below of the same name: %m", tag);
                goto out;
        }
        find_pid = p.pid, find_want = st.st_ino, allow_version = v, find_over = find_src = NULL;
        msg = in_child(find_now);
        ok(msg && *msg == '\0', "%s: the usual mount point opens the process's cgroup", tag);
        if (msg && *msg)
                tap_diag("%s", msg);
        gh_cgroup_set_known_mounts(false);
        msg = in_child(find_now);
        gh_cgroup_set_known_mounts(true);
        ok(msg && *msg == '\0', "%s: mountinfo opens the same directory", tag);
        if (msg && *msg)
                tap_diag("%s", msg);
        find_no_openat2 = true;
        msg = in_child(find_now);
        ok(msg && *msg == '\0', "%s: without openat2 the walk opens the same directory", tag);
        if (msg && *msg)
                tap_diag("%s", msg);
        find_no_openat2 = false;
        /* Now ROOT shows CG: ROOT/CGPATH is the empty one below, which does not list the process. */
        find_over = root, find_src = cg;
        for (int walk = 0; walk < 2; walk++) {
                find_no_openat2 = walk == 1;
                msg = in_child(find_now);
                ok(msg && *msg == '\0', "%s: a part of the tree mounted over the usual place is passed over%s", tag,
                   walk ? " (without openat2)" : "");
                if (msg && *msg)
                        tap_diag("%s", msg);
        }
        find_no_openat2 = false;
out:
        probe_stop(&p);
        rmdir(sub);
        rmdir(cg);
}

/* --- cgroup v1 ------------------------------------------------------------------------------ */

static int cg_write(const char *cg, const char *file, const char *s)
{
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", cg, file);
        return write_file(path, s);
}

static int start_in(struct probe *p, const char *cg)
{
        char procs[PATH_MAX];
        snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
        return probe_start(p, procs);
}

static void test_v1(enum caps_mode caps)
{
        const char *tag = caps == CAPS_ALL ? "v1" : "v1 (only CAP_SYS_ADMIN)";
        struct probe p = { 0 };
        char cg[PATH_MAX], list[PATH_MAX];
        const char *msg;

        snprintf(cg, sizeof(cg), "%s/gh-test-%d", V1_ROOT, (int) getpid());
        snprintf(list, sizeof(list), "%s/devices.list", cg);
        if (mkdir(cg, 0755) < 0 || cg_write(cg, "devices.deny", "a") < 0 ||
            cg_write(cg, "devices.allow", "c 1:3 rwm") < 0 || start_in(&p, cg) < 0) {
                ok(0, "%s: set up a deny-by-default cgroup with /dev/null allowed: %m", tag);
                goto out;
        }
        is_errno(probe_do(&p, 'o', n0), EPERM, "%s: before: 195:0 is denied", tag);
        msg = allow(p.pid, GH_CGROUP_AUTO, rule0, 1, caps);
        ok(msg && *msg == '\0', "%s: allowing c 195:0 succeeds", tag);
        if (msg && *msg)
                tap_diag("%s", msg);
        ok(has_line(read_text(list), "c 195:0 rw"), "%s: devices.list now holds 'c 195:0 rw'", tag);
        is_allowed(probe_do(&p, 'o', n0), "%s: 195:0 is allowed now", tag);
        is_errno(probe_do(&p, 'o', n1), EPERM, "%s: 195:1 is still denied", tag);
        is_errno(probe_do(&p, 'o', "/dev/null"), 0, "%s: /dev/null (the runtime's rule) still opens", tag);
        is_errno(probe_do(&p, 'm', mk), EPERM, "%s: mknod of 195:0 is still denied (rw, not rwm)", tag);
out:
        probe_stop(&p);
        rmdir(cg);
}

/* A rule the parent cgroup refuses makes the call fail after an earlier rule was written: the
 * earlier one must be taken back. */
static void test_v1_rollback(void)
{
        static const struct gh_dev_rule rules[] = { { 'c', 1, 5 }, { 'c', 195, 1 } };
        char parent[PATH_MAX], cg[PATH_MAX], list[PATH_MAX], before[8192];
        struct probe p = { 0 };
        const char *msg;

        snprintf(parent, sizeof(parent), "%s/gh-test-%d-parent", V1_ROOT, (int) getpid());
        snprintf(cg, sizeof(cg), "%s/child", parent);
        snprintf(list, sizeof(list), "%s/devices.list", cg);
        if (mkdir(parent, 0755) < 0 || cg_write(parent, "devices.deny", "a") < 0 ||
            cg_write(parent, "devices.allow", "c 1:3 rwm") < 0 || cg_write(parent, "devices.allow", "c 1:5 rw") < 0 ||
            mkdir(cg, 0755) < 0 || cg_write(cg, "devices.deny", "c 1:5 rwm") < 0 || start_in(&p, cg) < 0) {
                ok(0, "v1 rollback: set up parent and child cgroups: %m");
                goto out;
        }
        snprintf(before, sizeof(before), "%s", read_text(list));
        msg = allow(p.pid, GH_CGROUP_V1, rules, 2, CAPS_ALL);
        ok(msg && strstr(msg, "c 195:1 rw") && strstr(msg, "devices.allow") && !strchr(msg, '\n'),
           "v1 rollback: a rule the parent refuses is a one-line error naming it");
        tap_diag("%s", msg ? msg : "(null)");
        is_str(read_text(list), before, "v1 rollback: devices.list is as it was");
        is_errno(probe_do(&p, 'o', "/dev/zero"), EPERM,
                 "v1 rollback: 1:5, allowed before the failure, is denied again");
out:
        probe_stop(&p);
        rmdir(cg);
        rmdir(parent);
}

/* --- cgroup v2 ------------------------------------------------------------------------------ */

static int bpf(int cmd, union bpf_attr *a) { return (int) syscall(__NR_bpf, cmd, a, sizeof(*a)); }

#define I(c, d, s, o, i) ((struct bpf_insn) { .code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i) })

static int load_prog(const struct bpf_insn *insns, unsigned n)
{
        union bpf_attr a = { 0 };
        a.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
        a.insns = (uintptr_t) insns;
        a.insn_cnt = n;
        a.license = (uintptr_t) "GPL";
        return bpf(BPF_PROG_LOAD, &a);
}

/* The runtime stand-in: denies by default, allows char 1:3 and, if lenient, also 1:5. */
static int load_runtime_prog(bool lenient)
{
        const struct bpf_insn insns[] = {
                I(BPF_LDX | BPF_W | BPF_MEM, 2, 1, 0, 0),
                I(BPF_ALU | BPF_AND | BPF_K, 2, 0, 0, 0xffff),
                I(BPF_JMP | BPF_JNE | BPF_K, 2, 0, 8, BPF_DEVCG_DEV_CHAR),
                I(BPF_LDX | BPF_W | BPF_MEM, 3, 1, 4, 0),
                I(BPF_JMP | BPF_JNE | BPF_K, 3, 0, 6, 1),
                I(BPF_LDX | BPF_W | BPF_MEM, 3, 1, 8, 0),
                I(BPF_JMP | BPF_JEQ | BPF_K, 3, 0, 2, 3),
                I(BPF_JMP | BPF_JNE | BPF_K, 3, 0, 3, 5),
                I(BPF_JMP | BPF_JEQ | BPF_K, 3, 0, 2, lenient ? -1 : 5), /* 1:5 denied unless lenient */
                I(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 1),
                I(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
                I(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0),
                I(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
        };
        return load_prog(insns, GH_ARRAY_SIZE(insns));
}

/* Denies everything, and refers to a map (as a program we cannot reload would). */
static int load_map_prog(void)
{
        union bpf_attr a = { 0 };
        int map, fd;

        a.map_type = BPF_MAP_TYPE_ARRAY;
        a.key_size = 4;
        a.value_size = 4;
        a.max_entries = 1;
        map = bpf(BPF_MAP_CREATE, &a);
        if (map < 0)
                return -1;
        const struct bpf_insn insns[] = {
                I(BPF_LD | BPF_IMM | BPF_DW, 2, BPF_PSEUDO_MAP_FD, 0, map),
                I(0, 0, 0, 0, 0),
                I(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0),
                I(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
        };
        fd = load_prog(insns, GH_ARRAY_SIZE(insns));
        close(map);
        return fd;
}

static int attach_prog(int cgfd, int prog, unsigned flags)
{
        union bpf_attr a = { 0 };
        a.target_fd = (uint32_t) cgfd;
        a.attach_bpf_fd = (uint32_t) prog;
        a.attach_type = BPF_CGROUP_DEVICE;
        a.attach_flags = flags;
        return bpf(BPF_PROG_ATTACH, &a);
}

static uint32_t attached_id(int cgfd)
{
        uint32_t ids[4] = { 0 };
        union bpf_attr a = { 0 };
        a.query.target_fd = (uint32_t) cgfd;
        a.query.attach_type = BPF_CGROUP_DEVICE;
        a.query.prog_ids = (uintptr_t) ids;
        a.query.prog_cnt = 4;
        return bpf(BPF_PROG_QUERY, &a) == 0 && a.query.prog_cnt >= 1 ? ids[0] : 0;
}

enum v2_case { V2_ONE, V2_TWO, V2_NONE, V2_MAP };

static void test_v2(enum v2_case what, unsigned flags, enum caps_mode caps)
{
        struct probe p = { 0 };
        char cg[PATH_MAX], tag[96];
        _cleanup_close_ int cgfd = -1, prog = -1, prog2 = -1;
        _cleanup_error_ gh_error_t err = NULL;
        unsigned got_flags = 0;
        uint32_t old_id;
        const char *msg;

        snprintf(tag, sizeof(tag), "v2 %s%s%s",
                 what == V2_ONE    ? "runtime program"
                 : what == V2_TWO  ? "two programs"
                 : what == V2_NONE ? "no program"
                                   : "program with a map",
                 what == V2_NONE             ? ""
                 : flags & BPF_F_ALLOW_MULTI ? ", ALLOW_MULTI"
                                             : ", no flags",
                 caps == CAPS_SYS_ADMIN_ONLY ? ", only CAP_SYS_ADMIN"
                 : caps == CAPS_NONE         ? ", no capabilities"
                                             : "");
        snprintf(cg, sizeof(cg), "%s/gh-test-%d", v2_root, (int) getpid());
        if (mkdir(cg, 0755) < 0 || (cgfd = open(cg, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
                ok(0, "%s: create %s: %m", tag, cg);
                goto out;
        }
        if (what != V2_NONE) {
                prog = what == V2_MAP ? load_map_prog() : load_runtime_prog(false);
                if (prog < 0 || attach_prog(cgfd, prog, flags) < 0) {
                        ok(0, "%s: attach the runtime stand-in: %m", tag);
                        goto out;
                }
        }
        if (what == V2_TWO && ((prog2 = load_runtime_prog(true)) < 0 || attach_prog(cgfd, prog2, flags) < 0)) {
                ok(0, "%s: attach a second, more lenient program: %m", tag);
                goto out;
        }
        old_id = attached_id(cgfd);
        if (start_in(&p, cg) < 0) {
                ok(0, "%s: start a process in %s", tag, cg);
                goto out;
        }
        if (what != V2_NONE)
                is_errno(probe_do(&p, 'o', n0), EPERM, "%s: before: 195:0 is denied", tag);

        msg = allow(p.pid, GH_CGROUP_V2, rule0, 1, caps);
        if (what == V2_MAP || caps == CAPS_NONE) {
                ok(msg && *msg && !strchr(msg, '\n') &&
                           strstr(msg, what == V2_MAP ? "uses a BPF map" : "CAP_SYS_ADMIN"),
                   "%s: refused with a one-line error", tag);
                tap_diag("%s", msg ? msg : "(null)");
                is_int(gh_cgroup_bpf_count(cgfd, NULL, &err), 1, "%s: still one program attached", tag);
                is_int(attached_id(cgfd), old_id, "%s: and it is the runtime's, untouched", tag);
                is_errno(probe_do(&p, 'o', n0), EPERM, "%s: 195:0 is still denied", tag);
                goto out;
        }
        ok(msg && *msg == '\0', "%s: allowing c 195:0 succeeds", tag);
        if (msg && *msg)
                tap_diag("%s", msg);
        is_int(gh_cgroup_bpf_count(cgfd, &got_flags, &err),
               what == V2_NONE  ? 0
               : what == V2_TWO ? 2
                                : 1,
               "%s: number of attached programs unchanged", tag);
        if (what == V2_NONE) {
                is_allowed(probe_do(&p, 'o', n0), "%s: 195:0 is allowed (nothing denies it)", tag);
                goto out;
        }
        is_int(got_flags, flags, "%s: attach flags kept", tag);
        ok(attached_id(cgfd) != old_id, "%s: the runtime's program was replaced", tag);
        is_allowed(probe_do(&p, 'o', n0), "%s: 195:0 is allowed now", tag);
        is_errno(probe_do(&p, 'o', n1), EPERM, "%s: 195:1 is still denied", tag);
        is_errno(probe_do(&p, 'o', "/dev/null"), 0, "%s: /dev/null (the runtime's allow) still opens", tag);
        is_errno(probe_do(&p, 'o', "/dev/zero"), EPERM, "%s: /dev/zero (the runtime's deny) is still denied", tag);
        is_errno(probe_do(&p, 'm', mk), EPERM, "%s: mknod of 195:0 is still denied", tag);
out:
        probe_stop(&p);
        rmdir(cg); /* detaches whatever is attached */
}

static int count_pins(const char *dir)
{
        _cleanup_closedir_ DIR *d = opendir(dir);
        struct dirent *de;
        int n = 0;

        if (d == NULL)
                return errno == ENOENT ? 0 : -1;
        while ((de = readdir(d)) != NULL)
                n += strncmp(de->d_name, "dev-", 4) == 0;
        return n;
}

/* One program per rule set: the second container of the same runtime program and rules gets the
 * program the first one loaded (pinned in a bpffs of this test's own); a pin that holds another
 * program is not used; unpinning leaves attached programs alone.  Runs last: it leaves this process
 * in a private mount namespace. */
/* Three cgroups under v2_root, each with the runtime stand-in attached and a probe process in it:
 * the containers of the reuse cases.  0, or -1 after a failed check. */
static int reuse_containers(const char *tag, const char *kind, char cg[3][PATH_MAX], int cgfd[3], struct probe p[3])
{
        for (int i = 0; i < 3; i++) {
                int rt;
                snprintf(cg[i], PATH_MAX, "%s/gh-test-%s%d-%d", v2_root, kind, i, (int) getpid());
                if (mkdir(cg[i], 0755) < 0 || (cgfd[i] = open(cg[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
                    (rt = load_runtime_prog(false)) < 0 || attach_prog(cgfd[i], rt, BPF_F_ALLOW_MULTI) < 0 ||
                    start_in(&p[i], cg[i]) < 0) {
                        ok(0, "%s: cgroup %d with the runtime stand-in: %m", tag, i);
                        return -1;
                }
                close(rt);
        }
        return 0;
}

static void reuse_containers_stop(char cg[3][PATH_MAX], int cgfd[3], struct probe p[3])
{
        for (int i = 0; i < 3; i++) {
                probe_stop(&p[i]);
                if (cgfd[i] >= 0)
                        close(cgfd[i]);
                rmdir(cg[i]);
        }
}

static void test_v2_reuse(void)
{
        const char *tag = "v2 reuse";
        struct probe p[3] = { 0 };
        char bpffs[PATH_MAX], pins[PATH_MAX + 16], cg[3][PATH_MAX], pinned[PATH_MAX + 64] = "";
        _cleanup_close_ int lenient = -1;
        int cgfd[3] = { -1, -1, -1 };
        uint32_t id[3] = { 0 };
        _cleanup_error_ gh_error_t err = NULL;
        const char *msg;

        snprintf(bpffs, sizeof(bpffs), "%s/bpffs", tmpdir);
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
            mkdir(bpffs, 0700) < 0 || mount("bpf", bpffs, "bpf", 0, "mode=0700") < 0) {
                tap_diag("%s: no bpffs of our own (%m): skipped", tag);
                return;
        }
        snprintf(pins, sizeof(pins), "%s/gpu-hook", bpffs);
        gh_cgroup_bpf_set_pin_dir(pins);
        if (reuse_containers(tag, "reuse", cg, cgfd, p) < 0)
                goto out;
        msg = allow(p[0].pid, GH_CGROUP_V2, rule0, 1, CAPS_ALL);
        ok(msg && *msg == '\0', "%s: first container: allowed", tag);
        id[0] = attached_id(cgfd[0]);
        is_int(count_pins(pins), 1, "%s: its program is pinned", tag);
        msg = allow(p[1].pid, GH_CGROUP_V2, rule0, 1, CAPS_ALL);
        ok(msg && *msg == '\0', "%s: second container: allowed", tag);
        id[1] = attached_id(cgfd[1]);
        is_int(id[1], id[0], "%s: the second container gets the first one's program (no load)", tag);
        is_int(count_pins(pins), 1, "%s: still one pin", tag);
        is_allowed(probe_do(&p[1], 'o', n0), "%s: second container: 195:0 is allowed", tag);
        is_errno(probe_do(&p[1], 'o', n1), EPERM, "%s: second container: 195:1 is still denied", tag);
        is_errno(probe_do(&p[1], 'o', "/dev/zero"), EPERM, "%s: second container: the runtime's deny holds", tag);

        /* A pin of that name holding another program (here: the lenient stand-in) is not trusted. */
        {
                _cleanup_closedir_ DIR *d = opendir(pins);
                struct dirent *de;
                while (d != NULL && (de = readdir(d)) != NULL)
                        if (strncmp(de->d_name, "dev-", 4) == 0)
                                snprintf(pinned, sizeof(pinned), "%s/%s", pins, de->d_name);
        }
        union bpf_attr a = { 0 };
        lenient = load_runtime_prog(true);
        a.pathname = (uint64_t) (uintptr_t) pinned;
        a.bpf_fd = (uint32_t) lenient;
        ok(pinned[0] && unlink(pinned) == 0 && lenient >= 0 && bpf(BPF_OBJ_PIN, &a) == 0,
           "%s: the pin replaced by another program", tag);
        msg = allow(p[2].pid, GH_CGROUP_V2, rule0, 1, CAPS_ALL);
        ok(msg && *msg == '\0', "%s: third container: allowed", tag);
        id[2] = attached_id(cgfd[2]);
        ok(id[2] != 0 && id[2] != id[0], "%s: third container: a program loaded anew, not the pin's", tag);
        is_allowed(probe_do(&p[2], 'o', n0), "%s: third container: 195:0 is allowed", tag);
        is_errno(probe_do(&p[2], 'o', "/dev/zero"), EPERM, "%s: third container: the runtime's deny holds", tag);

        ok(gh_cgroup_bpf_forget(&err) >= 1 && count_pins(pins) == 0 && access(pins, F_OK) < 0,
           "%s: forget unpins everything and removes the directory", tag);
        is_int(attached_id(cgfd[1]), id[0], "%s: the program stays attached after forget", tag);
        is_allowed(probe_do(&p[1], 'o', n0), "%s: and still allows 195:0", tag);
out:
        reuse_containers_stop(cg, cgfd, p);
        gh_cgroup_bpf_set_pin_dir(GH_CGROUP_BPF_PIN_DIR);
        umount2(bpffs, MNT_DETACH);
        rmdir(bpffs);
}

/* No bpffs to pin in (some VMs): the program's id is kept instead, and a second container with the
 * same rules gets the first one's program while that one still holds it. */
static void test_v2_reuse_by_id(void)
{
        const char *tag = "v2 reuse by id";
        struct probe p[3] = { 0 };
        char nopin[PATH_MAX], ids[PATH_MAX], cg[3][PATH_MAX], rec[PATH_MAX + 64] = "";
        _cleanup_close_ int lenient = -1;
        int cgfd[3] = { -1, -1, -1 };
        uint32_t id[3] = { 0 };
        _cleanup_error_ gh_error_t err = NULL;
        const char *msg;

        snprintf(nopin, sizeof(nopin), "%s/not-a-bpffs/gpu-hook", tmpdir);
        snprintf(ids, sizeof(ids), "%s/run/gpu-hook/devprog", tmpdir);
        gh_cgroup_bpf_set_pin_dir(nopin);
        gh_cgroup_bpf_set_id_dir(ids);
        if (reuse_containers(tag, "reuseid", cg, cgfd, p) < 0)
                goto out;
        msg = allow(p[0].pid, GH_CGROUP_V2, rule0, 1, CAPS_ALL);
        ok(msg && *msg == '\0', "%s: first container: allowed", tag);
        id[0] = attached_id(cgfd[0]);
        is_int(count_pins(ids), 1, "%s: its program's id is kept (one file)", tag);
        ok(access(nopin, F_OK) < 0, "%s: nothing made where no bpffs is", tag);
        {
                struct stat ds, ps;
                char parent[PATH_MAX + 16];
                snprintf(parent, sizeof(parent), "%s/run/gpu-hook", tmpdir);
                ok(stat(ids, &ds) == 0 && (ds.st_mode & 07777) == 0700 && stat(parent, &ps) == 0 &&
                           (ps.st_mode & 07777) == 0755,
                   "%s: the id directory is made 0700, its missing parents 0755 (readers of the state cache pass)",
                   tag);
        }
        msg = allow(p[1].pid, GH_CGROUP_V2, rule0, 1, CAPS_ALL);
        ok(msg && *msg == '\0', "%s: second container: allowed", tag);
        id[1] = attached_id(cgfd[1]);
        is_int(id[1], id[0], "%s: the second container gets the first one's program by its id (no load)", tag);
        is_allowed(probe_do(&p[1], 'o', n0), "%s: second container: 195:0 is allowed", tag);
        is_errno(probe_do(&p[1], 'o', n1), EPERM, "%s: second container: 195:1 is still denied", tag);
        is_errno(probe_do(&p[1], 'o', "/dev/zero"), EPERM, "%s: second container: the runtime's deny holds", tag);

        /* A record naming another program (here: the lenient stand-in) is not trusted. */
        {
                _cleanup_closedir_ DIR *d = opendir(ids);
                struct dirent *de;
                while (d != NULL && (de = readdir(d)) != NULL)
                        if (strncmp(de->d_name, "dev-", 4) == 0)
                                snprintf(rec, sizeof(rec), "%s/%s", ids, de->d_name);
        }
        struct bpf_prog_info info = { 0 };
        union bpf_attr a = { 0 };
        lenient = load_runtime_prog(true);
        a.info.bpf_fd = (uint32_t) lenient;
        a.info.info_len = sizeof(info);
        a.info.info = (uint64_t) (uintptr_t) &info;
        FILE *f = rec[0] && lenient >= 0 && bpf(BPF_OBJ_GET_INFO_BY_FD, &a) == 0 ? fopen(rec, "w") : NULL;
        ok(f != NULL && fprintf(f, "%u\n", info.id) > 0 && fclose(f) == 0, "%s: the record names another program", tag);
        msg = allow(p[2].pid, GH_CGROUP_V2, rule0, 1, CAPS_ALL);
        ok(msg && *msg == '\0', "%s: third container: allowed", tag);
        id[2] = attached_id(cgfd[2]);
        ok(id[2] != 0 && id[2] != id[0] && id[2] != info.id, "%s: third container: a program loaded anew", tag);
        is_allowed(probe_do(&p[2], 'o', n0), "%s: third container: 195:0 is allowed", tag);
        is_errno(probe_do(&p[2], 'o', "/dev/zero"), EPERM, "%s: third container: the runtime's deny holds", tag);

        ok(gh_cgroup_bpf_forget(&err) >= 1 && access(ids, F_OK) < 0, "%s: forget removes the ids and their directory",
           tag);
        is_int(attached_id(cgfd[1]), id[0], "%s: the program stays attached after forget", tag);
out:
        reuse_containers_stop(cg, cgfd, p);
        gh_cgroup_bpf_set_pin_dir(GH_CGROUP_BPF_PIN_DIR);
        gh_cgroup_bpf_set_id_dir(NULL);
        {
                char d[PATH_MAX + 16];
                snprintf(d, sizeof(d), "%s/run/gpu-hook", tmpdir);
                rmdir(d);
                snprintf(d, sizeof(d), "%s/run", tmpdir);
                rmdir(d);
        }
}

static bool is_cgroup2(const char *dir)
{
        struct statfs sfs;
        return statfs(dir, &sfs) == 0 && sfs.f_type == CGROUP2_SUPER_MAGIC;
}

int main(void)
{
        bool tmp_mounted = false;
        struct statvfs vfs;
        struct stat st;

        test_parsers();
        if (geteuid() != 0) {
                tap_diag("not root: device cgroup cases skipped");
                return tap_done();
        }
        if (mkdtemp(tmpdir) == NULL) {
                printf("Bail out! mkdtemp: %m\n");
                return 1;
        }
        if (statvfs(tmpdir, &vfs) == 0 && (vfs.f_flag & ST_NODEV) &&
            mount("gh-cgroup-test", tmpdir, "tmpfs", MS_NOSUID, "mode=0755") == 0)
                tmp_mounted = true; /* device nodes on a nodev fs would not open at all */
        snprintf(n0, sizeof(n0), "%s/nvidia0", tmpdir);
        snprintf(n1, sizeof(n1), "%s/nvidia1", tmpdir);
        snprintf(mk, sizeof(mk), "%s/made-by-container", tmpdir);
        if (mknod(n0, S_IFCHR | 0666, makedev(195, 0)) < 0 || mknod(n1, S_IFCHR | 0666, makedev(195, 1)) < 0) {
                printf("Bail out! mknod in %s: %m\n", tmpdir);
                return 1;
        }

        test_errors();
        if (stat(V1_ROOT "/devices.allow", &st) == 0) {
                test_find(GH_CGROUP_V1, V1_ROOT);
                test_v1(CAPS_ALL);
                test_v1(CAPS_SYS_ADMIN_ONLY);
                test_v1_rollback();
        } else {
                tap_diag("no cgroup v1 devices hierarchy at " V1_ROOT ": v1 cases skipped");
        }
        v2_root = stat("/sys/fs/cgroup/unified/cgroup.procs", &st) == 0 ? "/sys/fs/cgroup/unified" : "/sys/fs/cgroup";
        if (is_cgroup2(v2_root)) {
                /* No kept ids but in the case about them: the host's /run/gpu-hook is not the tests' */
                gh_cgroup_bpf_set_id_dir(NULL);
                test_find(GH_CGROUP_V2, v2_root);
                test_v2(V2_ONE, BPF_F_ALLOW_MULTI, CAPS_ALL);
                test_v2(V2_ONE, 0, CAPS_ALL);
                test_v2(V2_TWO, BPF_F_ALLOW_MULTI, CAPS_ALL);
                test_v2(V2_NONE, 0, CAPS_ALL);
                test_v2(V2_MAP, BPF_F_ALLOW_MULTI, CAPS_ALL);
                test_v2(V2_ONE, BPF_F_ALLOW_MULTI, CAPS_SYS_ADMIN_ONLY);
                test_v2(V2_ONE, BPF_F_ALLOW_MULTI, CAPS_NONE);
                test_v2_reuse();
                test_v2_reuse_by_id();
        } else {
                tap_diag("no cgroup2 hierarchy: v2 cases skipped");
        }
        unlink(n0);
        unlink(n1);
        if (tmp_mounted)
                umount2(tmpdir, MNT_DETACH);
        rmdir(tmpdir);
        return tap_done();
}
