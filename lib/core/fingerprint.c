/* The driver-state fingerprint (fingerprint.h, docs/statecache.md): what the driver-state cache is
 * keyed by, and how the driver's own libnvidia-ml/libcuda are told from other copies. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "driver.h"
#include "gpuhook.h"
#include "ldcache.h"
#include "log.h"
#include "rootfs.h"
#include "fingerprint.h"

#define MAX_FP (256 * 1024)
#define CAPS_MAX_DEPTH 6
#define CAPS_MAX_ENTRIES 8192
#define PROC_NVIDIA "proc/driver/nvidia"

static const char *const lib_names[GH_DRIVER_FP_NLIBS] = { "libnvidia-ml.so.1", "libcuda.so.1" };

/* ---- a growing text buffer ---- */

struct text {
        char *p;
        size_t len, cap;
        bool failed;
};

__attribute__((format(printf, 2, 3))) static void put(struct text *t, const char *fmt, ...)
{
        va_list ap;
        int n;

        if (t->failed)
                return;
        for (;;) {
                size_t room = t->cap - t->len;
                va_start(ap, fmt);
                n = vsnprintf(t->p ? t->p + t->len : NULL, room, fmt, ap);
                va_end(ap);
                if (n < 0) {
                        t->failed = true;
                        return;
                }
                if ((size_t) n < room) {
                        t->len += (size_t) n;
                        return;
                }
                size_t cap = t->cap ? t->cap * 2 : 1024;
                while (cap - t->len <= (size_t) n)
                        cap *= 2;
                char *p = cap > MAX_FP ? NULL : realloc(t->p, cap);
                if (p == NULL) {
                        t->failed = true; /* t->p stays the caller's to free */
                        return;
                }
                t->p = p;
                t->cap = cap;
        }
}

/* ---- fingerprint ---- */

void gh_driver_fp_free(struct gh_driver_fp *fp)
{
        if (fp == NULL)
                return;
        free(fp->text);
        for (size_t i = 0; i < GH_DRIVER_FP_NLIBS; i++)
                free(fp->libs[i]);
        for (size_t i = 0; i < fp->nbusids; i++)
                free(fp->busids[i]);
        free(fp->busids);
        memset(fp, 0, sizeof(*fp));
}

static void put_identity(struct text *t, const struct stat *st)
{
        put(t, "%lu:%lu:%lld:%lld.%09ld", (unsigned long) st->st_dev, (unsigned long) st->st_ino,
            (long long) st->st_size, (long long) st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
}

/* A small file read whole; control characters become blanks so the text stays one line. */
static int read_line_file(int dirfd, const char *path, bool in_root, char *buf, size_t size, gh_error_t *err)
{
        _cleanup_close_ int fd = -1;
        ssize_t n;

        fd = in_root ? gh_resolve(dirfd, path, O_RDONLY, err) : open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return in_root ? -1 : gh_err(err, errno, "reading %s", path);
        do
                n = read(fd, buf, size - 1);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return gh_err(err, errno, "reading %s", path);
        buf[n] = '\0';
        return (int) n;
}

static void flatten(char *s)
{
        size_t n = strlen(s);
        while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == ' '))
                s[--n] = '\0';
        for (; *s; s++)
                if ((unsigned char) *s < 0x20 || *s == 0x7f)
                        *s = ' ';
}

/* The in-root path opened (O_PATH) when it resolves to a file named after the running driver's
 * version (the driver's own library, not another copy an ld.so.cache may list first), else -1. */
static int driver_file(int rootfd, const char *path, const char *version)
{
        _cleanup_close_ int fd = gh_resolve(rootfd, path, O_PATH, NULL);
        char link[64], target[PATH_MAX];
        ssize_t n;
        size_t vlen = strlen(version);

        if (fd < 0)
                return -1;
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        n = readlink(link, target, sizeof(target) - 1);
        if (n <= 0)
                return -1;
        target[n] = '\0';
        if ((size_t) n > vlen + 1 && target[n - (ssize_t) vlen - 1] == '.' && strcmp(target + n - vlen, version) == 0)
                return TAKE_FD(fd);
        return -1;
}

/* The files the fingerprint follows: for each SONAME, the root's ld.so.cache (open on ldfd, -1 when
 * there is none) 64-bit entry whose file carries the driver's version (what the driver's own
 * libraries are named), else its first 64-bit entry (what the NVML service's dlopen, chrooted there
 * with an empty environment, loads).  fds[i]: the file found by its version, opened, else -1. */
static int find_libs(int rootfd, int ldfd, const char *version, char **libs, int *fds, gh_error_t *err)
{
        struct gh_ldcache *cache = NULL;
        _cleanup_error_ gh_error_t e = NULL;

        for (size_t i = 0; i < GH_DRIVER_FP_NLIBS; i++)
                libs[i] = NULL;
        if (ldfd >= 0 && gh_ldcache_open(ldfd, "the driver root's /etc/ld.so.cache", &cache, &e) < 0)
                cache = NULL;
        for (size_t i = 0; i < GH_DRIVER_FP_NLIBS; i++) {
                const char *found = "";
                for (size_t k = 0; cache && k < cache->n; k++) {
                        const struct gh_ldcache_entry *en = &cache->entries[k];
                        if (en->hwcaps != NULL || en->flags != GH_LDCACHE_FLAGS_X86_64 ||
                            strcmp(en->key, lib_names[i]) != 0)
                                continue;
                        if (found[0] == '\0')
                                found = en->value;
                        if ((fds[i] = driver_file(rootfd, en->value, version)) >= 0) {
                                found = en->value;
                                break;
                        }
                }
                libs[i] = strdup(found);
                if (libs[i] == NULL) {
                        if (cache)
                                gh_ldcache_close(cache);
                        return gh_err(err, ENOMEM, "fingerprinting the driver");
                }
        }
        if (cache)
                gh_ldcache_close(cache);
        return 0;
}

struct dirent64_raw {
        unsigned long long d_ino;
        long long d_off;
        unsigned short d_reclen;
        unsigned char d_type;
        char d_name[];
};

/* Calls fn for each entry but . and ..; getdents64 into a stack buffer (no DIR allocation). */
static int each_entry(int dfd, int (*fn)(void *, const struct dirent64_raw *), void *arg)
{
        char buf[8192] __attribute__((aligned(8)));

        for (;;) {
                long n = syscall(SYS_getdents64, dfd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return 0;
                for (long off = 0; off < n;) {
                        const struct dirent64_raw *d = (const void *) (buf + off);
                        off += d->d_reclen;
                        if (d->d_name[0] == '.' &&
                            (d->d_name[1] == '\0' || (d->d_name[1] == '.' && d->d_name[2] == '\0')))
                                continue;
                        int r = fn(arg, d);
                        if (r < 0)
                                return r;
                }
        }
}

struct gpus_walk {
        struct text *t;
        struct gh_driver_fp *fp;
};

static int gpu_entry(void *arg, const struct dirent64_raw *d)
{
        struct gpus_walk *w = arg;
        char norm[GH_BUSID_MAX];
        char **grown;

        put(w->t, " %s@%llu", d->d_name, d->d_ino);
        if (w->fp->nbusids >= GH_STATECACHE_MAX_GPUS)
                return -E2BIG;
        if (gh_busid_normalize(d->d_name, norm, sizeof(norm)) < 0)
                snprintf(norm, sizeof(norm), "?");
        grown = realloc(w->fp->busids, (w->fp->nbusids + 1) * sizeof(*grown));
        if (grown == NULL)
                return -ENOMEM;
        w->fp->busids = grown;
        if ((grown[w->fp->nbusids] = strdup(norm)) == NULL)
                return -ENOMEM;
        w->fp->nbusids++;
        return 0;
}

struct caps_walk {
        struct text *t;
        char path[512];
        int depth;
        size_t entries;
        int dfd;
};

static int caps_entry(void *arg, const struct dirent64_raw *d)
{
        struct caps_walk *w = arg;
        size_t len = strlen(w->path);

        if (++w->entries > CAPS_MAX_ENTRIES)
                return -E2BIG;
        put(w->t, " %s%s@%llu", w->path, d->d_name, d->d_ino);
        if (d->d_type == DT_UNKNOWN) { /* a file system that does not say: ask */
                struct stat st;
                if (fstatat(w->dfd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
                        return 0;
        } else if (d->d_type != DT_DIR) {
                return 0;
        }
        if (w->depth >= CAPS_MAX_DEPTH)
                return 0;
        if (len + strlen(d->d_name) + 2 >= sizeof(w->path))
                return -ENAMETOOLONG;
        int sub = openat(w->dfd, d->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0)
                return errno == ENOENT ? 0 : -errno; /* vanished under us: the text already differs */
        int saved = w->dfd, r;
        strcat(strcat(w->path, d->d_name), "/");
        w->dfd = sub;
        w->depth++;
        r = each_entry(sub, caps_entry, w);
        w->depth--;
        w->dfd = saved;
        w->path[len] = '\0';
        close(sub);
        return r;
}

int gh_driver_fingerprint(int rootfd, char *const *libs, struct gh_driver_fp *fp, gh_error_t *err)
{
        struct text t = { 0 };
        char buf[4096];
        struct stat st;
        int r, lib_fds[GH_DRIVER_FP_NLIBS];
        _cleanup_close_ int ldfd = -1;

        for (size_t i = 0; i < GH_DRIVER_FP_NLIBS; i++)
                lib_fds[i] = -1;

        memset(fp, 0, sizeof(*fp));
        put(&t, "format %d\nwriter %s\n", GH_STATECACHE_FORMAT, gpuhook_version());
        if (read_line_file(AT_FDCWD, "/proc/sys/kernel/random/boot_id", false, buf, 64, err) < 0)
                goto fail;
        flatten(buf);
        put(&t, "boot %s\n", buf);
        if (fstat(rootfd, &st) < 0) {
                gh_err(err, errno, "fingerprinting the driver root");
                goto fail;
        }
        put(&t, "root %lu:%lu\n", (unsigned long) st.st_dev, (unsigned long) st.st_ino);

        if ((r = read_line_file(rootfd, PROC_NVIDIA "/version", true, buf, sizeof(buf), err)) < 0 ||
            gh_driver_parse_version(buf, (size_t) r, fp->driver_version, sizeof(fp->driver_version), err) < 0)
                goto fail;
        flatten(buf);
        put(&t, "nvrm %s\n", buf);

        /* Opened once: its identity here, its entries (when the libraries are to be found) below. */
        ldfd = gh_resolve(rootfd, "etc/ld.so.cache", libs == NULL ? O_RDONLY : O_PATH, NULL);
        put(&t, "ldcache ");
        if (ldfd >= 0 && fstat(ldfd, &st) == 0)
                put_identity(&t, &st);
        else
                put(&t, "absent");
        put(&t, "\n");
        if (libs == NULL) {
                if (find_libs(rootfd, ldfd, fp->driver_version, fp->libs, lib_fds, err) < 0)
                        goto fail;
        } else {
                for (size_t i = 0; i < GH_DRIVER_FP_NLIBS; i++)
                        if ((fp->libs[i] = strdup(libs[i])) == NULL) {
                                gh_err(err, ENOMEM, "fingerprinting the driver");
                                goto fail;
                        }
        }
        for (size_t i = 0; i < GH_DRIVER_FP_NLIBS; i++) {
                /* The file find_libs already opened, or the path resolved now. */
                _cleanup_close_ int fd = lib_fds[i] >= 0  ? TAKE_FD(lib_fds[i])
                                         : fp->libs[i][0] ? gh_resolve(rootfd, fp->libs[i], O_PATH, NULL)
                                                          : -1;
                put(&t, "lib %s %s ", lib_names[i], fp->libs[i][0] ? fp->libs[i] : "-");
                if (fd >= 0 && fstat(fd, &st) == 0)
                        put_identity(&t, &st);
                else
                        put(&t, "absent");
                put(&t, "\n");
        }

        {
                _cleanup_close_ int dfd = gh_resolve(rootfd, PROC_NVIDIA "/gpus", O_RDONLY | O_DIRECTORY, NULL);
                struct gpus_walk w = { .t = &t, .fp = fp };
                put(&t, "gpus");
                if (dfd >= 0 && (r = each_entry(dfd, gpu_entry, &w)) < 0) {
                        gh_err(err, -r, "listing " PROC_NVIDIA "/gpus");
                        goto fail;
                }
                put(&t, "\n");
        }
        {
                _cleanup_close_ int dfd = gh_resolve(rootfd, PROC_NVIDIA "/capabilities", O_RDONLY | O_DIRECTORY, NULL);
                struct caps_walk w = { .t = &t, .dfd = dfd };
                put(&t, "caps");
                if (dfd >= 0 && (r = each_entry(dfd, caps_entry, &w)) < 0) {
                        gh_err(err, -r, "listing " PROC_NVIDIA "/capabilities");
                        goto fail;
                }
                put(&t, "\n");
        }
        if (t.failed) {
                gh_err(err, ENOMEM, "fingerprinting the driver: out of memory or over %d KiB", MAX_FP / 1024);
                goto fail;
        }
        fp->text = t.p;
        return 0;
fail:
        for (size_t i = 0; i < GH_DRIVER_FP_NLIBS; i++)
                if (lib_fds[i] >= 0)
                        close(lib_fds[i]);
        free(t.p);
        gh_driver_fp_free(fp);
        return -1;
}

int gh_driver_fp_libs_of(const char *text, char **libs)
{
        for (size_t i = 0; i < GH_DRIVER_FP_NLIBS; i++)
                libs[i] = NULL;
        for (const char *line = text; line != NULL && *line != '\0';) {
                const char *end = strchr(line, '\n'), *p;
                size_t n;
                if (end == NULL)
                        end = line + strlen(line);
                for (size_t i = 0; i < GH_DRIVER_FP_NLIBS; i++) {
                        n = strlen(lib_names[i]);
                        if (libs[i] != NULL || (size_t) (end - line) < 5 + n + 1 || strncmp(line, "lib ", 4) != 0 ||
                            strncmp(line + 4, lib_names[i], n) != 0 || line[4 + n] != ' ')
                                continue;
                        p = line + 5 + n;
                        n = strcspn(p, " \n");
                        libs[i] = n == 1 && p[0] == '-' ? strdup("") : strndup(p, n);
                        if (libs[i] == NULL)
                                goto fail;
                }
                line = *end ? end + 1 : end;
        }
        for (size_t i = 0; i < GH_DRIVER_FP_NLIBS; i++)
                if (libs[i] == NULL)
                        goto fail;
        return 0;
fail:
        for (size_t i = 0; i < GH_DRIVER_FP_NLIBS; i++) {
                free(libs[i]);
                libs[i] = NULL;
        }
        return -1;
}

/* ---- file format ---- */
