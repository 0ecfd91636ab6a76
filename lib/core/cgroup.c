/* Finding a process's device cgroup, and the cgroup v1 devices.allow writer.  The cgroup v2 (BPF)
 * half lives in cgroup-bpf.c. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "cgroup.h"
#include "cleanup.h"
#include "log.h"
#include "syscalls.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

static bool list_has(const char *list, const char *word)
{
        size_t len = strlen(word);

        for (const char *p = list; p && *p;) {
                const char *end = strchrnul(p, ',');
                if ((size_t) (end - p) == len && strncmp(p, word, len) == 0)
                        return true;
                p = *end ? end + 1 : end;
        }
        return false;
}

static int set_once(char **slot, const char *path, const char *what, gh_error_t *err)
{
        /* Two lines for one hierarchy can only come from a cgroup name holding a newline that
         * forges a line; trusting either could point us at someone else's cgroup. */
        if (*slot != NULL)
                return gh_err(err, 0, "more than one %s line in the cgroup membership list", what);
        *slot = strdup(path);
        return *slot ? 0 : gh_err(err, ENOMEM, "reading cgroup membership");
}

int gh_cgroup_parse_membership(FILE *f, char **v1, char **v2, gh_error_t *err)
{
        _cleanup_free_ char *line = NULL, *dev = NULL, *unified = NULL;
        size_t cap = 0;
        ssize_t len;

        while ((len = getline(&line, &cap, f)) > 0) {
                char *ctrl, *path;

                if (line[len - 1] == '\n')
                        line[len - 1] = '\0';
                ctrl = strchr(line, ':');
                path = ctrl ? strchr(ctrl + 1, ':') : NULL;
                if (path == NULL || path[1] != '/')
                        return gh_err(err, 0, "malformed cgroup membership line '%s'", line);
                *ctrl++ = '\0';
                *path++ = '\0';
                if (strcmp(line, "0") == 0 && *ctrl == '\0') {
                        if (set_once(&unified, path, "unified (0::)", err) < 0)
                                return -1;
                } else if (list_has(ctrl, "devices")) {
                        if (set_once(&dev, path, "devices", err) < 0)
                                return -1;
                }
        }
        *v1 = steal_pointer(&dev);
        *v2 = steal_pointer(&unified);
        return 0;
}

/* Decodes mountinfo's octal escapes (\040 for a space, \011, \012, \134) in place. */
static void unescape(char *s)
{
        char *out = s;

        for (; *s; s++) {
                if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' &&
                    s[3] <= '7') {
                        *out++ = (char) ((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
                        s += 3;
                } else {
                        *out++ = *s;
                }
        }
        *out = '\0';
}

/* Returns the part of CGPATH below ROOT ("" for ROOT itself), or NULL when ROOT is not CGPATH or an
 * ancestor of it. */
static const char *below(const char *root, const char *cgpath)
{
        size_t n = strlen(root);

        if (strcmp(root, "/") == 0)
                return cgpath + 1;
        if (strncmp(cgpath, root, n) != 0)
                return NULL;
        if (cgpath[n] == '\0')
                return cgpath + n;
        return cgpath[n] == '/' ? cgpath + n + 1 : NULL;
}

int gh_cgroup_find_mount(FILE *mountinfo, enum gh_cgroup_version version, const char *cgpath, char **mnt,
                         const char **rel, gh_error_t *err)
{
        _cleanup_free_ char *line = NULL, *best = NULL;
        const char *best_rel = NULL;
        size_t cap = 0, best_len = 0;

        while (getline(&line, &cap, mountinfo) > 0) {
                char *fields[6] = { 0 }, *fstype, *opts, *save = NULL, *tok, *dash;
                const char *r;
                int i = 0;

                line[strcspn(line, "\n")] = '\0';
                dash = strstr(line, " - ");
                if (dash == NULL)
                        continue;
                *dash = '\0';
                for (tok = strtok_r(line, " ", &save); tok && i < 6; tok = strtok_r(NULL, " ", &save))
                        fields[i++] = tok;
                fstype = strtok_r(dash + 3, " ", &save);
                (void) strtok_r(NULL, " ", &save); /* source */
                opts = strtok_r(NULL, " ", &save);
                if (i < 5 || fstype == NULL)
                        continue;
                if (version == GH_CGROUP_V1 ? strcmp(fstype, "cgroup") != 0 || !list_has(opts, "devices")
                                            : strcmp(fstype, "cgroup2") != 0)
                        continue;
                unescape(fields[3]);
                unescape(fields[4]);
                r = below(fields[3], cgpath);
                /* The mount whose root is the closest ancestor shows the most of the tree. */
                if (r == NULL || (best && strlen(fields[3]) <= best_len))
                        continue;
                free(best);
                best = strdup(fields[4]);
                if (best == NULL)
                        return gh_err(err, ENOMEM, "reading mountinfo");
                best_len = strlen(fields[3]);
                best_rel = r;
        }
        if (best == NULL)
                return gh_err(err, 0,
                              "no cgroup%s %s hierarchy holding %s is mounted here (call from the host mount "
                              "namespace)",
                              version == GH_CGROUP_V1 ? " v1" : "2", version == GH_CGROUP_V1 ? "devices" : "unified",
                              cgpath);
        *mnt = steal_pointer(&best);
        *rel = best_rel;
        return 0;
}

/* Opens REL below the mount MNTFD.  cgroupfs has no symlinks, so any symlink, "." or ".." here
 * means the membership text was forged: refuse instead of resolving.  One openat2 does the walk
 * (beneath MNTFD, no symlinks, no mount crossed); where the kernel or a seccomp filter refuses
 * openat2, one component at a time with O_NOFOLLOW (check_dir then catches a mount on the last). */
static int open_below(int mntfd, const char *rel, gh_error_t *err)
{
        _cleanup_free_ char *copy = strdup(rel);
        _cleanup_close_ int cur = -EBADF;
        char *save = NULL;
        int fd = -1;

        if (copy == NULL)
                return gh_err(err, ENOMEM, "opening cgroup %s", rel);
        for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save))
                if (strcmp(c, ".") == 0 || strcmp(c, "..") == 0)
                        return gh_err(err, 0, "cgroup path %s has a '%s' component", rel, c);
        if (rel[strspn(rel, "/")] != '\0') {
                for (int tries = 0; tries < 8; tries++) {
                        fd = gh_openat2(mntfd, rel, O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
                                        RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
                                                RESOLVE_NO_XDEV);
                        if (fd >= 0 || errno != EAGAIN)
                                break;
                }
                if (fd >= 0)
                        return fd;
                if (errno != ENOSYS && errno != EPERM)
                        return gh_err(err, errno, "opening cgroup directory %s", rel);
        }
        cur = fcntl(mntfd, F_DUPFD_CLOEXEC, 3);
        if (cur < 0)
                return gh_err(err, errno, "opening cgroup %s", rel);
        strcpy(copy, rel);
        save = NULL;
        for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
                int next = openat(cur, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

                if (next < 0)
                        return gh_err(err, errno, "opening cgroup directory %s", rel);
                close(cur);
                cur = next;
        }
        return TAKE_FD(cur);
}

/* The file system type a hierarchy of version v has. */
static long cgroup_magic(enum gh_cgroup_version v)
{
        return v == GH_CGROUP_V1 ? (long) CGROUP_SUPER_MAGIC : (long) CGROUP2_SUPER_MAGIC;
}

/* Checks the opened cgroup directory FD (below the mount MNTFD) before we write to it. */
static int check_dir(enum gh_cgroup_version v, int mntfd, int fd)
{
        struct statfs sfs;
        struct stat mst, st;

        /* A mount on top of a cgroup directory would send our writes elsewhere. */
        if (fstat(mntfd, &mst) < 0 || fstat(fd, &st) < 0 || fstatfs(fd, &sfs) < 0)
                return -errno;
        if (st.st_dev != mst.st_dev || (long) sfs.f_type != cgroup_magic(v))
                return -ENOTDIR;
        return 0;
}

static int set_found(enum gh_cgroup_version v, const char *mnt, const char *rel, int *fd, struct gh_cgroup *cg,
                     gh_error_t *err)
{
        if (asprintf(&cg->path, "%s%s%s", mnt, *rel ? "/" : "", rel) < 0)
                return gh_err(err, ENOMEM, "opening cgroup");
        cg->version = v;
        cg->dirfd = TAKE_FD(*fd);
        return 0;
}

static bool known_mounts = true;

void gh_cgroup_set_known_mounts(bool on) { known_mounts = on; }

/* Whether the cgroup.procs of the cgroup directory FD lists PID.  A process is in exactly one
 * cgroup of a hierarchy, so a directory that lists it is its cgroup, whatever the mount's root or
 * the cgroup namespace it was mounted from.  A list longer than the buffer answers no (the caller
 * then takes the slow way); a container's cgroup holds one process when the hook runs. */
static bool lists_pid(int fd, pid_t pid)
{
        _cleanup_close_ int procs = openat(fd, "cgroup.procs", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        char buf[4096], want[24];
        size_t len = 0, wl;
        ssize_t n;

        if (procs < 0)
                return false;
        while (len < sizeof(buf) - 1 && (n = read(procs, buf + len, sizeof(buf) - 1 - len)) > 0)
                len += (size_t) n;
        if (len == sizeof(buf) - 1)
                return false;
        buf[len] = '\0';
        wl = (size_t) snprintf(want, sizeof(want), "%d\n", (int) pid);
        for (const char *l = buf; *l;) {
                if (strncmp(l, want, wl) == 0)
                        return true;
                l = strchr(l, '\n');
                if (l == NULL)
                        break;
                l++;
        }
        return false;
}

/* The usual places of the hierarchy: the devices controller's v1 mount, the unified mount of a
 * cgroup2 host, the unified mount of a hybrid one.  Trying them saves reading and parsing all of
 * mountinfo, which grows with the host's mounts (hundreds on a busy Kubernetes node).  Anything
 * unexpected (another filesystem there, a mount of part of the tree, a cgroup namespace, a
 * directory that does not list PID) answers -1 and mountinfo decides. */
static int open_known(enum gh_cgroup_version v, pid_t pid, const char *cgpath, struct gh_cgroup *cg)
{
        static const char *const v1_mnts[] = { "/sys/fs/cgroup/devices", NULL };
        static const char *const v2_mnts[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified", NULL };

        if (!known_mounts || cgpath[0] != '/')
                return -1;
        for (const char *const *m = v == GH_CGROUP_V1 ? v1_mnts : v2_mnts; *m; m++) {
                _cleanup_close_ int mntfd = open(*m, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), fd = -1;
                struct statfs sfs;

                if (mntfd < 0 || fstatfs(mntfd, &sfs) < 0 || (long) sfs.f_type != cgroup_magic(v))
                        continue;
                fd = open_below(mntfd, cgpath + 1, NULL);
                if (fd < 0 || check_dir(v, mntfd, fd) < 0 || !lists_pid(fd, pid))
                        continue;
                /* A v1 mount there of another controller would list PID too. */
                if (v == GH_CGROUP_V1 && faccessat(fd, "devices.allow", F_OK, AT_EACCESS) < 0)
                        continue;
                return set_found(v, *m, cgpath + 1, &fd, cg, NULL);
        }
        return -1;
}

static int open_cgroup(enum gh_cgroup_version v, pid_t pid, const char *cgpath, struct gh_cgroup *cg, gh_error_t *err)
{
        _cleanup_fclose_ FILE *mi = NULL;
        _cleanup_free_ char *mnt = NULL;
        _cleanup_close_ int mntfd = -1, fd = -1;
        const char *rel;

        if (open_known(v, pid, cgpath, cg) == 0)
                return 0;
        mi = fopen("/proc/self/mountinfo", "re");
        if (mi == NULL)
                return gh_err(err, errno, "reading /proc/self/mountinfo");
        if (gh_cgroup_find_mount(mi, v, cgpath, &mnt, &rel, err) < 0)
                return -1;
        mntfd = open(mnt, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (mntfd < 0)
                return gh_err(err, errno, "opening cgroup mount %s", mnt);
        fd = open_below(mntfd, rel, err);
        if (fd < 0)
                return gh_err_wrap(err, "in %s", mnt);
        errno = -check_dir(v, mntfd, fd);
        if (errno == ENOTDIR)
                return gh_err(err, 0, "%s/%s is not a cgroup%s directory of the mount %s", mnt, rel,
                              v == GH_CGROUP_V1 ? " v1" : "2", mnt);
        if (errno != 0)
                return gh_err(err, errno, "checking cgroup %s%s", mnt, cgpath);
        return set_found(v, mnt, rel, &fd, cg, err);
}

int gh_cgroup_find(pid_t pid, enum gh_cgroup_version want, struct gh_cgroup *cg, gh_error_t *err)
{
        _cleanup_free_ char *v1 = NULL, *v2 = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        char proc[64];

        cg->dirfd = -1;
        cg->path = NULL;
        if (pid <= 0)
                return gh_err(err, 0, "finding the device cgroup: invalid pid %d", (int) pid);
        snprintf(proc, sizeof(proc), "/proc/%d/cgroup", (int) pid);
        f = fopen(proc, "re");
        if (f == NULL && errno == ENOENT)
                return gh_err(err, 0, "finding the device cgroup: process %d does not exist (did the container exit?)",
                              (int) pid);
        if (f == NULL)
                return gh_err(err, errno, "finding the device cgroup: reading %s", proc);
        if (gh_cgroup_parse_membership(f, &v1, &v2, err) < 0)
                return gh_err_wrap(err, "finding the device cgroup: %s", proc);
        if (want == GH_CGROUP_AUTO)
                want = v1 ? GH_CGROUP_V1 : GH_CGROUP_V2;
        if ((want == GH_CGROUP_V1 ? v1 : v2) == NULL)
                return gh_err(err, 0,
                              "finding the device cgroup: process %d is in no %s (%s); use --no-cgroups if "
                              "the runtime does not confine devices",
                              (int) pid, want == GH_CGROUP_V1 ? "cgroup v1 devices hierarchy" : "cgroup2 hierarchy",
                              proc);
        if (open_cgroup(want, pid, want == GH_CGROUP_V1 ? v1 : v2, cg, err) < 0)
                return gh_err_wrap(err, "finding the device cgroup of process %d", (int) pid);
        return 0;
}

void gh_cgroup_close(struct gh_cgroup *cg)
{
        if (cg->dirfd >= 0)
                close(cg->dirfd);
        cg->dirfd = -1;
        free(cg->path);
        cg->path = NULL;
}

int gh_cgroup_check_rules(const struct gh_dev_rule *rules, size_t n, gh_error_t *err)
{
        if (n > GH_CGROUP_MAX_RULES)
                return gh_err(err, 0, "too many device cgroup rules (%zu, at most %d)", n, GH_CGROUP_MAX_RULES);
        for (size_t i = 0; i < n; i++) {
                if (rules[i].type != 'c' && rules[i].type != 'b')
                        return gh_err(err, 0, "device cgroup rule %zu: type '%c' is neither 'c' nor 'b'", i,
                                      rules[i].type ? rules[i].type : '?');
                if (rules[i].major >= 4096 || rules[i].minor >= (1U << 20))
                        return gh_err(err, 0, "device cgroup rule %zu: %u:%u is not a valid device number", i,
                                      rules[i].major, rules[i].minor);
        }
        return 0;
}

/* cgroup v1 ---------------------------------------------------------------------------------- */

enum { ACC_R = 1, ACC_W = 2, ACC_M = 4 };

static unsigned parse_access(const char *s)
{
        unsigned a = 0;
        for (; *s; s++)
                a |= *s == 'r' ? ACC_R : *s == 'w' ? ACC_W : *s == 'm' ? ACC_M : 0;
        return a;
}

/* Reads devices.list.  Returns 1 when the cgroup allows by default ("a *:* rwm": the kernel then
 * hides its deny exceptions), else 0 and, in before[i], the access the exact exception for rule i
 * already had, so that a rollback takes back only what we added. */
static int read_devices_list(int dirfd, const struct gh_dev_rule *rules, size_t n, unsigned *before, gh_error_t *err)
{
        _cleanup_close_ int fd = openat(dirfd, "devices.list", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *line = NULL;
        size_t cap = 0;

        if (fd < 0 || (f = fdopen(fd, "re")) == NULL)
                return gh_err(err, errno, "reading devices.list");
        TAKE_FD(fd);
        while (getline(&line, &cap, f) > 0) {
                char type, acc[8], maj[16], min[16];

                if (sscanf(line, "%c %15[^:]:%15s %7s", &type, maj, min, acc) != 4)
                        continue;
                if (type == 'a')
                        return 1;
                for (size_t i = 0; i < n; i++) {
                        char want_maj[16], want_min[16];
                        snprintf(want_maj, sizeof(want_maj), "%u", rules[i].major);
                        snprintf(want_min, sizeof(want_min), "%u", rules[i].minor);
                        if (type == rules[i].type && strcmp(maj, want_maj) == 0 && strcmp(min, want_min) == 0)
                                before[i] |= parse_access(acc);
                }
        }
        return 0;
}

static int write_rule(int fd, char type, unsigned major, unsigned minor, const char *acc)
{
        char buf[64];
        int len = snprintf(buf, sizeof(buf), "%c %u:%u %s", type, major, minor, acc);
        ssize_t w = write(fd, buf, (size_t) len);

        if (w == len)
                return 0;
        if (w >= 0)
                errno = EIO;
        return -1;
}

static int allow_v1(const struct gh_cgroup *cg, const struct gh_dev_rule *rules, size_t n, gh_error_t *err)
{
        _cleanup_free_ unsigned *before = calloc(n ? n : 1, sizeof(*before));
        _cleanup_close_ int allow = -1, deny = -1;
        int allow_all;

        if (before == NULL)
                return gh_err(err, ENOMEM, "allowing devices in %s", cg->path);
        allow_all = read_devices_list(cg->dirfd, rules, n, before, err);
        if (allow_all < 0)
                return gh_err_wrap(err, "allowing devices in %s", cg->path);
        allow = openat(cg->dirfd, "devices.allow", O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
        if (allow < 0)
                return gh_err(err, errno, "opening %s/devices.allow", cg->path);
        if (!allow_all)
                deny = openat(cg->dirfd, "devices.deny", O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
        if (!allow_all && deny < 0)
                return gh_err(err, errno, "opening %s/devices.deny", cg->path);

        for (size_t i = 0; i < n; i++) {
                int saved;

                if (write_rule(allow, rules[i].type, rules[i].major, rules[i].minor, "rw") == 0) {
                        gh_debug("cgroup v1: allowed %c %u:%u rw in %s", rules[i].type, rules[i].major, rules[i].minor,
                                 cg->path);
                        continue;
                }
                saved = errno;
                /* Take back what this call added.  In a default-allow cgroup an allow only removed a
                 * deny exception we cannot see, so there is nothing we could restore faithfully. */
                for (size_t j = 0; j < i && !allow_all; j++) {
                        unsigned added = (ACC_R | ACC_W) & ~before[j];
                        char acc[3] = { 0 }, *p = acc;
                        if (added & ACC_R)
                                *p++ = 'r';
                        if (added & ACC_W)
                                *p++ = 'w';
                        if (added && write_rule(deny, rules[j].type, rules[j].major, rules[j].minor, acc) < 0)
                                gh_warn("cgroup v1: could not take back %c %u:%u %s in %s: %m", rules[j].type,
                                        rules[j].major, rules[j].minor, acc, cg->path);
                }
                return gh_err(err, saved, "writing '%c %u:%u rw' to %s/devices.allow%s", rules[i].type, rules[i].major,
                              rules[i].minor, cg->path,
                              saved == EPERM ? " (the parent cgroup does not allow it, or CAP_SYS_ADMIN is missing)"
                                             : "");
        }
        return 0;
}

int gh_cgroup_allow(const struct gh_cgroup *cg, const struct gh_dev_rule *rules, size_t n, gh_error_t *err)
{
        if (gh_cgroup_check_rules(rules, n, err) < 0)
                return -1;
        if (n == 0)
                return 0;
        if (cg->version == GH_CGROUP_V1)
                return allow_v1(cg, rules, n, err);
        return gh_cgroup_bpf_allow(cg->dirfd, cg->path, rules, n, err);
}

int gh_cgroup_allow_devices(pid_t pid, const struct gh_dev_rule *rules, size_t n, gh_error_t *err)
{
        struct gh_cgroup cg;
        int r;

        if (gh_cgroup_check_rules(rules, n, err) < 0)
                return -1;
        if (gh_cgroup_find(pid, GH_CGROUP_AUTO, &cg, err) < 0)
                return -1;
        r = gh_cgroup_allow(&cg, rules, n, err);
        gh_cgroup_close(&cg);
        return r;
}
