/* /dev/char links for NVIDIA's device nodes (devchar.h says which and why). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cleanup.h"
#include "file.h"
#include "devchar.h"
#include "gpus.h"
#include "readfile.h"
#include "rootfs.h"

static bool starts_with(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

/* DRIVER_ROOT + rel ("/dev/nvidia0"), without a doubled slash. */
static void under_root(const char *root, const char *rel, char *out, size_t size)
{
        size_t rl = strlen(root);
        while (rl > 0 && root[rl - 1] == '/')
                rl--;
        snprintf(out, size, "%.*s%s", (int) rl, root, rel);
}

static void describe(const char *path, const char *target, unsigned maj, unsigned min, struct gh_devchar_link *l)
{
        struct stat st;
        char got[PATH_MAX];
        ssize_t n;

        l->state = GH_DEVCHAR_MISSING;
        if (lstat(path, &st) < 0)
                return;
        if (S_ISLNK(st.st_mode) && (n = readlink(path, got, sizeof(got) - 1)) > 0) {
                got[n] = '\0';
                struct stat node;
                if (strcmp(got, target) == 0 ||
                    (stat(path, &node) == 0 && S_ISCHR(node.st_mode) && node.st_rdev == makedev(maj, min))) {
                        l->state = GH_DEVCHAR_OK;
                        return;
                }
                l->state = GH_DEVCHAR_OTHER;
                snprintf(l->other, sizeof(l->other), "a link to %s", got);
                return;
        }
        if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(maj, min)) {
                l->state = GH_DEVCHAR_OK;
                return;
        }
        l->state = GH_DEVCHAR_OTHER;
        snprintf(l->other, sizeof(l->other), "%s",
                 S_ISDIR(st.st_mode)   ? "a directory"
                 : S_ISREG(st.st_mode) ? "a regular file"
                 : S_ISCHR(st.st_mode) ? "another character device"
                                       : "not a link");
}

static int add(struct gh_devchar_list *l, const char *root, const char *dev_char, const char *rel, unsigned maj,
               unsigned min, gh_error_t *err)
{
        struct gh_devchar_link *grown;

        for (size_t i = 0; i < l->n; i++)
                if (l->v[i].major == maj && l->v[i].minor == min)
                        return 0; /* one link per number (the first node found has it) */
        grown = realloc(l->v, (l->n + 1) * sizeof(*grown));
        if (grown == NULL)
                return gh_err(err, ENOMEM, "listing /dev/char links");
        l->v = grown;
        struct gh_devchar_link *k = &l->v[l->n++];
        memset(k, 0, sizeof(*k));
        k->major = maj;
        k->minor = min;
        under_root(root, rel, k->target, sizeof(k->target));
        snprintf(k->path, sizeof(k->path), "%s/%u:%u", dev_char, maj, min);
        describe(k->path, k->target, maj, min, k);
        return 0;
}

static bool excluded(const char *name)
{
        return starts_with(name, "nvidia-fs") || starts_with(name, "nvidia-nvswitch") ||
               starts_with(name, "nvidia-nvlink") || strcmp(name, "nvidia-caps") == 0;
}

static int cmp_dirent(const struct dirent **a, const struct dirent **b) { return strcmp((*a)->d_name, (*b)->d_name); }

/* The character devices named PREFIX* directly in DRIVER_ROOT/dir. */
static int existing(int rootfd, const char *root, const char *dev_char, const char *dir, const char *prefix,
                    struct gh_devchar_list *l, gh_error_t *err)
{
        _cleanup_close_ int dfd = openat(rootfd, dir + 1, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct dirent **ents = NULL;
        int n, r = 0;

        if (dfd < 0)
                return 0;
        n = scandirat(dfd, ".", &ents, NULL, cmp_dirent);
        for (int i = 0; i < n; i++) {
                struct stat st;
                const char *name = ents[i]->d_name;
                char rel[PATH_MAX];
                if (r == 0 && starts_with(name, prefix) && !excluded(name) &&
                    fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISCHR(st.st_mode)) {
                        snprintf(rel, sizeof(rel), "%s/%s", dir, name);
                        r = add(l, root, dev_char, rel, major(st.st_rdev), minor(st.st_rdev), err);
                }
                free(ents[i]);
        }
        free(ents);
        return r;
}

/* The character major named `name` in proc/devices under the root; -1 when the module is not loaded. */
static long proc_major(const char *text, const char *name)
{
        const char *p = strstr(text, "Character devices:");
        const char *end = strstr(text, "Block devices:");

        for (p = p ? strchr(p, '\n') : NULL; p && *p && (end == NULL || p < end); p = strchr(p + 1, '\n')) {
                char nm[64];
                long maj;
                if (sscanf(p + 1, "%ld %63s", &maj, nm) == 2 && strcmp(nm, name) == 0)
                        return maj;
        }
        return -1;
}

static int all_possible(int rootfd, const char *root, const char *dev_char, struct gh_devchar_list *l, gh_error_t *err)
{
        _cleanup_gpu_list_ struct gh_gpu_list gpus = { 0 };
        _cleanup_free_ char *devices = NULL, *mig = NULL;
        size_t len;
        long gpu_major, uvm, caps;

        if (gh_read_at(rootfd, "proc/devices", 1 << 20, true, &devices, &len, err) < 0)
                return gh_err_wrap(err, "--create-all needs the driver's majors");
        gpu_major = proc_major(devices, "nvidia-frontend");
        if (gpu_major < 0)
                gpu_major = proc_major(devices, "nvidia");
        if (gpu_major < 0)
                return gh_err(err, ENODEV, "no nvidia character device in %s/proc/devices: the driver is not loaded",
                              strcmp(root, "/") ? root : "");
        uvm = proc_major(devices, "nvidia-uvm");
        caps = proc_major(devices, "nvidia-caps");
        if (gh_gpus_fast(rootfd, &gpus, err) < 0)
                return -1;
        if (add(l, root, dev_char, "/dev/nvidiactl", (unsigned) gpu_major, 255, err) < 0 ||
            add(l, root, dev_char, "/dev/nvidia-modeset", (unsigned) gpu_major, 254, err) < 0)
                return -1;
        if (uvm >= 0 && (add(l, root, dev_char, "/dev/nvidia-uvm", (unsigned) uvm, 0, err) < 0 ||
                         add(l, root, dev_char, "/dev/nvidia-uvm-tools", (unsigned) uvm, 1, err) < 0))
                return -1;
        for (size_t i = 0; i < gpus.n; i++) {
                char rel[64];
                snprintf(rel, sizeof(rel), "/dev/nvidia%u", gpus.gpus[i].minor);
                if (add(l, root, dev_char, rel, (unsigned) gpu_major, gpus.gpus[i].minor, err) < 0)
                        return -1;
        }
        /* MIG: config, monitor, and each GPU's instance capabilities ("gpu0/gi1/ci0/access 12") */
        if (caps < 0 || gh_read_at(rootfd, "proc/driver/nvidia-caps/mig-minors", 4 << 20, true, &mig, &len, NULL) < 0)
                return 0;
        for (char *line = mig, *next; line && *line; line = next) {
                char name[128], rel[64];
                unsigned minor_, g;
                bool wanted = false;
                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                if (sscanf(line, "%127s %u", name, &minor_) != 2)
                        continue;
                if (strcmp(name, "config") == 0 || strcmp(name, "monitor") == 0)
                        wanted = true;
                else if (sscanf(name, "gpu%u/", &g) == 1)
                        for (size_t i = 0; i < gpus.n; i++)
                                wanted = wanted || gpus.gpus[i].minor == g;
                snprintf(rel, sizeof(rel), "/dev/nvidia-caps/nvidia-cap%u", minor_);
                if (wanted && add(l, root, dev_char, rel, (unsigned) caps, minor_, err) < 0)
                        return -1;
        }
        return 0;
}

int gh_devchar_plan(const char *driver_root, const char *dev_char, bool create_all, struct gh_devchar_list *out,
                    gh_error_t *err)
{
        _cleanup_close_ int rootfd = gh_rootfs_open(driver_root, err);

        memset(out, 0, sizeof(*out));
        if (rootfd < 0)
                return -1;
        if (create_all ? all_possible(rootfd, driver_root, dev_char, out, err) < 0
                       : existing(rootfd, driver_root, dev_char, "/dev", "nvidia", out, err) < 0 ||
                                 existing(rootfd, driver_root, dev_char, "/dev/nvidia-caps", "nvidia-", out, err) < 0) {
                gh_devchar_list_free(out);
                return -1;
        }
        return 0;
}

/* ---------------------------------------------------------------------------------------------
 * The record. */

struct record {
        char (*link)[PATH_MAX];
        char (*target)[PATH_MAX];
        size_t n;
};

static void record_free(struct record *r)
{
        free(r->link);
        free(r->target);
        memset(r, 0, sizeof(*r));
}

static int record_add(struct record *r, const char *link, const char *target)
{
        void *a = realloc(r->link, (r->n + 1) * sizeof(*r->link)), *b;
        if (a == NULL)
                return -1;
        r->link = a;
        b = realloc(r->target, (r->n + 1) * sizeof(*r->target));
        if (b == NULL)
                return -1;
        r->target = b;
        snprintf(r->link[r->n], PATH_MAX, "%s", link);
        snprintf(r->target[r->n], PATH_MAX, "%s", target);
        r->n++;
        return 0;
}

/* Opens (creating 0755 when missing) the record's directory, locked against a parallel run (udev
 * starts one per GPU bind), and reads the record. */
static int record_open(const char *path, struct record *r, char *base, size_t bsize, gh_error_t *err)
{
        char dir[PATH_MAX];
        const char *slash = strrchr(path, '/');
        _cleanup_free_ char *buf = NULL;
        size_t len;
        int dfd;

        memset(r, 0, sizeof(*r));
        if (slash == NULL || slash[1] == '\0' || (size_t) (slash - path) >= sizeof(dir))
                return gh_err_usage(err, "--record '%s': give an absolute file name", path);
        snprintf(dir, sizeof(dir), "%.*s", (int) (slash - path), path);
        snprintf(base, bsize, "%s", slash + 1);
        if (dir[0] != '\0' && gh_mkdir_p_trusted(AT_FDCWD, dir, 0755, err) < 0)
                return -1;
        dfd = open(dir[0] ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return gh_err(err, errno, "opening %s", dir);
        if (flock(dfd, LOCK_EX) < 0) {
                int e = errno;
                close(dfd);
                return gh_err(err, e, "locking %s", dir);
        }
        _cleanup_close_ int fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0 && errno != ENOENT) {
                int e = errno;
                close(dfd);
                return gh_err(err, e, "opening %s", path);
        }
        if (fd >= 0 && gh_read_bounded(fd, 4 << 20, &buf, &len, path, err) < 0) {
                close(dfd);
                return -1;
        }
        for (char *line = buf, *next; line && *line; line = next) {
                char *tab;
                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                tab = strchr(line, '\t');
                if (tab == NULL || line[0] != '/' || strlen(line) >= PATH_MAX || strlen(tab + 1) >= PATH_MAX)
                        continue; /* not a line of ours */
                *tab = '\0';
                if (record_add(r, line, tab + 1) < 0) {
                        close(dfd);
                        record_free(r);
                        return gh_err(err, ENOMEM, "reading %s", path);
                }
        }
        return dfd;
}

/* Writes the record whole through the one writer (atomic, synced: --undo needs it after a
 * reboot); an empty record is removed. */
static int record_write(int dfd, const char *base, const char *path, const struct record *r, gh_error_t *err)
{
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        FILE *f;

        if (r->n == 0) {
                if (unlinkat(dfd, base, 0) < 0 && errno != ENOENT)
                        return gh_err(err, errno, "removing %s", path);
                return 0;
        }
        f = open_memstream(&text, &len);
        if (f == NULL)
                return gh_err(err, errno, "writing %s", path);
        for (size_t i = 0; i < r->n; i++)
                fprintf(f, "%s\t%s\n", r->link[i], r->target[i]);
        if (fclose(f) != 0)
                return gh_err(err, ENOMEM, "writing %s", path);
        if (gh_write_file_at(dfd, base, text, len, 0644, GH_WRITE_ATOMIC | GH_WRITE_SYNC, NULL, err) < 0)
                return gh_err_wrap(err, "the dev-char record");
        return 0;
}

static bool line_safe(const char *s) { return strpbrk(s, "\t\n") == NULL; }

int gh_devchar_create(const char *dev_char, struct gh_devchar_list *list, const char *record, gh_error_t *err)
{
        struct record rec;
        char base[NAME_MAX + 1];
        int dfd = -1, r = 0;
        size_t made = 0;

        if (!line_safe(dev_char))
                return gh_err_usage(err, "--dev-char-path must not contain a tab or a newline");
        for (size_t i = 0; i < list->n; i++)
                if (list->v[i].state == GH_DEVCHAR_MISSING)
                        made++;
        if (made == 0)
                return 0;
        dfd = record_open(record, &rec, base, sizeof(base), err);
        if (dfd < 0)
                return -1;
        if (gh_mkdir_p_trusted(AT_FDCWD, dev_char, 0755, err) < 0)
                r = -1;
        _cleanup_close_ int cfd = r == 0 ? open(dev_char, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
        if (r == 0 && cfd < 0)
                r = gh_err(err, errno, "opening %s", dev_char);
        for (size_t i = 0; i < list->n && r == 0; i++) {
                struct gh_devchar_link *l = &list->v[i];
                const char *name = strrchr(l->path, '/') + 1;
                if (l->state != GH_DEVCHAR_MISSING)
                        continue;
                if (!line_safe(l->target)) {
                        l->done = GH_DEVCHAR_FAILED;
                        l->error = EINVAL;
                        continue;
                }
                if (symlinkat(l->target, cfd, name) < 0) {
                        l->error = errno;
                        describe(l->path, l->target, l->major, l->minor, l);
                        /* another run made it meanwhile: fine; anything else failed */
                        l->done = l->state == GH_DEVCHAR_OK ? GH_DEVCHAR_NOTHING : GH_DEVCHAR_FAILED;
                        continue;
                }
                l->done = GH_DEVCHAR_MADE;
                l->state = GH_DEVCHAR_OK;
                bool known = false;
                for (size_t k = 0; k < rec.n; k++)
                        if (strcmp(rec.link[k], l->path) == 0) {
                                snprintf(rec.target[k], PATH_MAX, "%s", l->target);
                                known = true;
                        }
                if (!known && record_add(&rec, l->path, l->target) < 0)
                        r = gh_err(err, ENOMEM, "recording %s", l->path);
        }
        if (r == 0)
                r = record_write(dfd, base, record, &rec, err);
        record_free(&rec);
        close(dfd);
        return r;
}

int gh_devchar_undo(const char *dev_char, const char *record, bool dry_run, struct gh_devchar_undo *out,
                    gh_error_t *err)
{
        struct record rec, keep = { 0 };
        char base[NAME_MAX + 1], prefix[PATH_MAX];
        int dfd, r = 0;

        memset(out, 0, sizeof(*out));
        dfd = record_open(record, &rec, base, sizeof(base), err);
        if (dfd < 0)
                return -1;
        snprintf(prefix, sizeof(prefix), "%s/", dev_char);
        for (size_t i = 0; i < rec.n && r == 0; i++) {
                const char *link = rec.link[i];
                if (strncmp(link, prefix, strlen(prefix)) != 0 || strchr(link + strlen(prefix), '/') != NULL) {
                        if (record_add(&keep, link, rec.target[i]) < 0)
                                r = gh_err(err, ENOMEM, "reading %s", record);
                        continue;
                }
                struct gh_devchar_undo_entry *grown = realloc(out->v, (out->n + 1) * sizeof(*grown));
                if (grown == NULL) {
                        r = gh_err(err, ENOMEM, "reading %s", record);
                        break;
                }
                out->v = grown;
                struct gh_devchar_undo_entry *e = &out->v[out->n++];
                memset(e, 0, sizeof(*e));
                snprintf(e->path, sizeof(e->path), "%s", link);
                snprintf(e->target, sizeof(e->target), "%s", rec.target[i]);
                struct stat st;
                char got[PATH_MAX];
                ssize_t n = -1;
                if (lstat(link, &st) < 0)
                        snprintf(e->kept, sizeof(e->kept), "it is gone");
                else if (!S_ISLNK(st.st_mode) || (n = readlink(link, got, sizeof(got) - 1)) < 0)
                        snprintf(e->kept, sizeof(e->kept), "it is no longer a link");
                else if ((got[n] = '\0', strcmp(got, rec.target[i]) != 0))
                        snprintf(e->kept, sizeof(e->kept), "it now points to %.*s", PATH_MAX - 1, got);
                else if (!dry_run && unlink(link) < 0)
                        r = gh_err(err, errno, "removing %s", link);
                else
                        e->removed = true;
        }
        if (r == 0 && !dry_run)
                r = record_write(dfd, base, record, &keep, err);
        record_free(&rec);
        record_free(&keep);
        close(dfd);
        return r;
}

void gh_devchar_list_free(struct gh_devchar_list *l)
{
        free(l->v);
        memset(l, 0, sizeof(*l));
}

void gh_devchar_undo_free(struct gh_devchar_undo *u)
{
        free(u->v);
        memset(u, 0, sizeof(*u));
}
