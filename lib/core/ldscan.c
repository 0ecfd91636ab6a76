#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "ldconf.h"
#include "ldscan.h"
#include "log.h"
#include "rootfs.h"

/* Debian 12's ldconfig (x86-64) adds the loader's trusted directories after the configured
 * ones.  (glibc would add lib64/libx32 siblings of a directory ending in "/lib", but Debian's list
 * spells them with a trailing slash, so it never does: /lib64 is not indexed.) */
static const char *const trusted_dirs[] = {
        "/lib/x86_64-linux-gnu",
        "/usr/lib/x86_64-linux-gnu",
        "/lib",
        "/usr/lib",
};

/* Legacy hwcap subdirectory names and the cache's hwcap bit for each (ldconfig covers both i386
 * and x86-64 names). */
static const struct {
        const char *name;
        unsigned bit;
} hwcap_names[] = {
        { "sse2", 0 },  { "x86_64", 1 },   { "avx512_1", 2 },  { "i586", 48 },
        { "i686", 49 }, { "haswell", 50 }, { "xeon_phi", 51 }, { "tls", 63 },
};

struct dir {
        char *path;   /* as configured: cache values start with it */
        char *hwcaps; /* glibc-hwcaps subdirectory name, or NULL */
        int flag;
        dev_t dev;
        ino_t ino;
};

struct scan {
        int rootfd, procfd;
        struct dir *dirs;
        size_t ndirs, cap;
        size_t dirents;
        bool stopped;      /* a limit was hit: scan no further */
        bool dirs_full;    /* more directories than GH_LDSCAN_MAX_DIRS: add no more */
        bool link_or_file; /* gh_ldscan_dirs: the SONAME link only when it is there, else the file */
        struct gh_ldcache_set *out;
};

/* One library of a directory: per SONAME the file ldconfig keeps. */
struct lib {
        char *name, *soname;
        int flag;
        bool is_link;
        unsigned isa_level;
};

static int hwcap_bit(const char *name)
{
        for (size_t i = 0; i < GH_ARRAY_SIZE(hwcap_names); i++)
                if (strcmp(name, hwcap_names[i].name) == 0)
                        return (int) hwcap_names[i].bit;
        return -1;
}

/* The hwcap bits of trailing hwcap components of a path ("/usr/lib/tls/x86_64"). */
static uint64_t path_hwcap(const char *path)
{
        const char *end = path + strlen(path);
        uint64_t hwcap = 0;

        for (;;) {
                const char *slash = end;
                char comp[16];
                int bit;
                while (slash > path && slash[-1] != '/')
                        slash--;
                if (slash == path || (size_t) (end - slash) >= sizeof(comp))
                        break;
                memcpy(comp, slash, (size_t) (end - slash));
                comp[end - slash] = '\0';
                if ((bit = hwcap_bit(comp)) < 0)
                        break;
                hwcap += UINT64_C(1) << bit; /* a sum, as in ldconfig */
                end = slash - 1;
        }
        return hwcap;
}

/* lib*.so*, ld-*.so*, ld.so.*, ld64.so.*: names ldconfig looks at. */
static bool is_dso_name(const char *n)
{
        return ((strncmp(n, "lib", 3) == 0 || strncmp(n, "ld-", 3) == 0) && strstr(n, ".so") != NULL) ||
               strncmp(n, "ld.so.", 6) == 0 || strncmp(n, "ld64.so.", 8) == 0;
}

/* prelink's temporary files: NAME.#prelink# and NAME.#prelink#.XXXXXX */
static bool is_prelink_temp(const char *n)
{
        size_t len = strlen(n);
        return (len >= 10 && strcmp(n + len - 10, ".#prelink#") == 0) ||
               (len >= 17 && memcmp(n + len - 17, ".#prelink#.", 11) == 0);
}

/* stat() of a path inside the root, following symlinks inside it. */
static int stat_in_root(const struct scan *s, const char *path, struct stat *st)
{
        _cleanup_error_ gh_error_t e = NULL;
        _cleanup_close_ int fd = gh_resolve(s->rootfd, path, O_PATH, &e);
        return fd < 0 || fstat(fd, st) < 0 ? -1 : 0;
}

/* Adds a directory unless one with the same inode is there already (then that one takes the new
 * library type).  Returns 1 when added. */
static int add_dir(struct scan *s, const char *path, const char *hwcaps, int flag, const struct stat *st,
                   gh_error_t *err)
{
        for (size_t i = 0; i < s->ndirs; i++) {
                if (s->dirs[i].dev == st->st_dev && s->dirs[i].ino == st->st_ino) {
                        s->dirs[i].flag = flag;
                        return 0;
                }
        }
        if (s->ndirs >= GH_LDSCAN_MAX_DIRS) {
                if (!s->dirs_full)
                        gh_warn("the image has more than %u library directories; the rest are not indexed",
                                GH_LDSCAN_MAX_DIRS);
                s->dirs_full = true;
                return 0;
        }
        if (s->ndirs == s->cap) {
                size_t cap = s->cap ? s->cap * 2 : 32;
                struct dir *v = reallocarray(s->dirs, cap, sizeof(*v));
                if (v == NULL)
                        return gh_err(err, ENOMEM, "listing library directories");
                s->dirs = v;
                s->cap = cap;
        }
        s->dirs[s->ndirs] = (struct dir) { .path = strdup(path),
                                           .hwcaps = hwcaps ? strdup(hwcaps) : NULL,
                                           .flag = flag,
                                           .dev = st->st_dev,
                                           .ino = st->st_ino };
        if (s->dirs[s->ndirs].path == NULL || (hwcaps && s->dirs[s->ndirs].hwcaps == NULL)) {
                free(s->dirs[s->ndirs].path);
                free(s->dirs[s->ndirs].hwcaps);
                return gh_err(err, ENOMEM, "listing library directories");
        }
        s->ndirs++;
        return 1;
}

/* DIR/glibc-hwcaps/NAME directories (not hidden, no ':' in the name) of a configured directory. */
static int add_hwcaps_subdirs(struct scan *s, const char *path, int flag, gh_error_t *err)
{
        _cleanup_free_ char *hw = NULL;
        _cleanup_error_ gh_error_t e = NULL;
        _cleanup_close_ int fd = -1;
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;

        if (asprintf(&hw, "%s/glibc-hwcaps", path) < 0)
                return gh_err(err, ENOMEM, "listing library directories");
        fd = gh_resolve(s->rootfd, hw, O_RDONLY | O_DIRECTORY, &e);
        if (fd < 0 || (d = fdopendir(fd)) == NULL)
                return 0;
        fd = -1;
        while ((de = readdir(d)) != NULL) {
                _cleanup_free_ char *sub = NULL;
                struct stat st;
                if (++s->dirents > GH_LDSCAN_MAX_DIRENTS)
                        return 0;
                if (de->d_name[0] == '.' || de->d_type == DT_REG || strchr(de->d_name, ':') != NULL)
                        continue;
                if (asprintf(&sub, "%s/%s", hw, de->d_name) < 0)
                        return gh_err(err, ENOMEM, "listing library directories");
                if (stat_in_root(s, sub, &st) < 0 || !S_ISDIR(st.st_mode))
                        continue;
                if (add_dir(s, sub, de->d_name, flag, &st, err) < 0)
                        return -1;
        }
        return 0;
}

/* A directory from the configuration or the trusted list. */
static int add_configured(struct scan *s, const char *path, int flag, gh_error_t *err)
{
        struct stat st;
        int r;

        if (stat_in_root(s, path, &st) < 0)
                return 0;
        r = add_dir(s, path, NULL, flag, &st, err);
        return r <= 0 ? r : add_hwcaps_subdirs(s, path, flag, err);
}

static void lib_free(struct lib *l)
{
        free(l->name);
        free(l->soname);
}

/* Records a library of the directory: per SONAME, a file beats a link, then the higher version
 * (glibc's name order) wins.  Takes soname. */
static int keep_lib(struct lib **libs, size_t *n, const char *name, char *soname, int flag, bool is_link,
                    unsigned isa_level, gh_error_t *err)
{
        for (size_t i = 0; i < *n; i++) {
                struct lib *l = &(*libs)[i];
                if (strcmp(l->soname, soname) != 0)
                        continue;
                free(soname);
                if ((!is_link && l->is_link) || (is_link == l->is_link && gh_ldcache_libcmp(l->name, name) < 0)) {
                        char *copy = strdup(name);
                        if (copy == NULL)
                                return gh_err(err, ENOMEM, "scanning libraries");
                        if (l->flag != flag &&
                            ((l->flag == GH_LDCACHE_FLAG_ELF &&
                              (flag == GH_LDCACHE_FLAG_ELF_LIBC5 || flag == GH_LDCACHE_FLAG_ELF_LIBC6)) ||
                             ((l->flag == GH_LDCACHE_FLAG_ELF_LIBC5 || l->flag == GH_LDCACHE_FLAG_ELF_LIBC6) &&
                              flag == GH_LDCACHE_FLAG_ELF)))
                                l->flag = flag;
                        free(l->name);
                        l->name = copy;
                        l->is_link = is_link;
                        l->isa_level = isa_level;
                }
                return 0;
        }
        struct lib *v = reallocarray(*libs, *n + 1, sizeof(*v));
        if (v == NULL) {
                free(soname);
                return gh_err(err, ENOMEM, "scanning libraries");
        }
        *libs = v;
        v[*n] = (struct lib) {
                .name = strdup(name), .soname = soname, .flag = flag, .is_link = is_link, .isa_level = isa_level
        };
        if (v[*n].name == NULL) {
                free(soname);
                return gh_err(err, ENOMEM, "scanning libraries");
        }
        (*n)++;
        return 0;
}

/* One directory entry: a library to keep, a hwcap subdirectory to queue, or nothing. */
static int scan_entry(struct scan *s, size_t di, int dfd, const struct dirent *de, struct lib **libs, size_t *nlibs,
                      gh_error_t *err)
{
        const char *name = de->d_name;
        bool in_hwcaps = s->dirs[di].hwcaps != NULL, is_link, is_dir;
        _cleanup_free_ char *file = NULL;
        _cleanup_error_ gh_error_t e = NULL;
        _cleanup_close_ int fd = -1;
        struct stat lst, st;
        char *soname = NULL;
        unsigned isa_level;
        int flag, r;

        if (de->d_type != DT_UNKNOWN && de->d_type != DT_LNK && de->d_type != DT_REG && de->d_type != DT_DIR)
                return 0;
        if (!is_dso_name(name) && (de->d_type == DT_REG || (!in_hwcaps && hwcap_bit(name) < 0)))
                return 0;
        if (is_prelink_temp(name))
                return 0;
        if (asprintf(&file, "%s/%s", s->dirs[di].path, name) < 0)
                return gh_err(err, ENOMEM, "scanning libraries");
        if (fstatat(dfd, name, &lst, AT_SYMLINK_NOFOLLOW) < 0)
                return 0;
        is_link = S_ISLNK(lst.st_mode);
        st = lst;
        if (is_link && stat_in_root(s, file, &st) < 0)
                return 0; /* a dangling link */
        is_dir = S_ISDIR(st.st_mode);
        if (!in_hwcaps && is_dir && hwcap_bit(name) >= 0)
                return add_dir(s, file, NULL, s->dirs[di].flag, &st, err) < 0 ? -1 : 0;
        if (!S_ISREG(st.st_mode))
                return 0; /* only regular files are ever opened */
        fd = gh_open_regular(s->rootfd, file, s->procfd, &e);
        if (fd < 0)
                return 0;
        r = gh_ldscan_identify(fd, name, &flag, &soname, &isa_level, err);
        if (r != 0)
                return r < 0 ? -1 : 0;
        /* A link counts as a link only when it is named after the SONAME or is the "libfoo.so"
         * development link of it; then it is indexed under its own name. */
        if (is_link && strcmp(name, soname) != 0) {
                size_t len = strlen(name);
                if (len < 3 || strcmp(name + len - 3, ".so") != 0 || strncmp(name, soname, len) != 0)
                        is_link = false;
        }
        if (is_link) {
                free(soname);
                if ((soname = strdup(name)) == NULL)
                        return gh_err(err, ENOMEM, "scanning libraries");
        }
        if (flag == GH_LDCACHE_FLAG_ELF &&
            (s->dirs[di].flag == GH_LDCACHE_FLAG_ELF_LIBC5 || s->dirs[di].flag == GH_LDCACHE_FLAG_ELF_LIBC6))
                flag = s->dirs[di].flag;
        return keep_lib(libs, nlibs, name, soname, flag, is_link, isa_level, err);
}

static int scan_dir(struct scan *s, size_t di, gh_error_t *err)
{
        _cleanup_error_ gh_error_t e = NULL;
        _cleanup_close_ int fd = gh_resolve(s->rootfd, s->dirs[di].path, O_RDONLY | O_DIRECTORY, &e);
        _cleanup_closedir_ DIR *d = NULL;
        struct lib *libs = NULL;
        size_t nlibs = 0;
        struct dirent *de;
        uint64_t hwcap = s->dirs[di].hwcaps ? 0 : path_hwcap(s->dirs[di].path);
        int r = 0;

        if (fd < 0 || (d = fdopendir(fd)) == NULL)
                return 0;
        fd = -1;
        while (r == 0 && (de = readdir(d)) != NULL) {
                if (++s->dirents > GH_LDSCAN_MAX_DIRENTS) {
                        if (!s->stopped)
                                gh_warn("the image's library directories hold more than %u entries; the rest are not indexed",
                                        GH_LDSCAN_MAX_DIRENTS);
                        s->stopped = true;
                        break;
                }
                r = scan_entry(s, di, dirfd(d), de, &libs, &nlibs, err);
        }
        /* ldconfig adds a directory's libraries newest-found first. */
        for (size_t i = nlibs; r == 0 && i-- > 0;) {
                const struct dir *dir = &s->dirs[di];
                _cleanup_free_ char *value = NULL;
                struct gh_ldcache_entry ent = { .key = libs[i].soname, .flags = libs[i].flag, .hwcaps = dir->hwcaps };

                if (s->out->n >= GH_LDSCAN_MAX_LIBS) {
                        gh_warn("the image has more than %u libraries; the rest are not indexed", GH_LDSCAN_MAX_LIBS);
                        s->stopped = true;
                        break;
                }
                /* In glibc-hwcaps subdirectories the file itself, elsewhere the SONAME link. */
                if (asprintf(&value, "%s/%s", dir->path, dir->hwcaps ? libs[i].name : libs[i].soname) < 0) {
                        r = gh_err(err, ENOMEM, "scanning libraries");
                        break;
                }
                /* ldconfig would create a missing SONAME link; we write nothing there, so the entry
                 * names the file itself instead of a link that does not exist. */
                struct stat vst;
                if (s->link_or_file && !dir->hwcaps && stat_in_root(s, value, &vst) < 0) {
                        free(value);
                        if (asprintf(&value, "%s/%s", dir->path, libs[i].name) < 0) {
                                value = NULL;
                                r = gh_err(err, ENOMEM, "scanning libraries");
                                break;
                        }
                }
                ent.value = value;
                ent.hwcap = dir->hwcaps ? (uint64_t) libs[i].isa_level << 32 : hwcap;
                r = gh_ldcache_set_add(s->out, &ent, err);
        }
        for (size_t i = 0; i < nlibs; i++)
                lib_free(&libs[i]);
        free(libs);
        return r;
}

int gh_ldscan_dirs(int rootfd, int procfd, const char *const *dirs, size_t ndirs, struct gh_ldcache_set *out,
                   gh_error_t *err)
{
        struct scan s = { .rootfd = rootfd, .procfd = procfd, .out = out, .link_or_file = true };
        int r = -1;

        for (size_t i = 0; i < ndirs; i++)
                if (add_configured(&s, dirs[i], GH_LDCONF_FLAG_ANY, err) < 0)
                        goto out;
        for (size_t i = 0; i < s.ndirs && !s.stopped; i++)
                if (scan_dir(&s, i, err) < 0)
                        goto out;
        gh_debug("ld.so cache entries from %zu given directories: %zu", ndirs, out->n);
        r = 0;
out:
        for (size_t i = 0; i < s.ndirs; i++) {
                free(s.dirs[i].path);
                free(s.dirs[i].hwcaps);
        }
        free(s.dirs);
        return r;
}

int gh_ldscan(int rootfd, int procfd, struct gh_ldcache_set *out, gh_error_t *err)
{
        struct gh_ldconf conf = { 0 };
        struct scan s = { .rootfd = rootfd, .procfd = procfd, .out = out };
        int r = -1;

        if (gh_ldconf_load(rootfd, procfd, "/etc/ld.so.conf", &conf, err) < 0)
                goto out;
        for (size_t i = 0; i < conf.n; i++)
                if (add_configured(&s, conf.v[i].text, conf.v[i].flag, err) < 0)
                        goto out;
        for (size_t i = 0; i < GH_ARRAY_SIZE(trusted_dirs); i++)
                if (add_configured(&s, trusted_dirs[i], GH_LDCONF_FLAG_ANY, err) < 0)
                        goto out;
        /* Legacy hwcap subdirectories found while scanning are appended and scanned in turn. */
        for (size_t i = 0; i < s.ndirs && !s.stopped; i++)
                if (scan_dir(&s, i, err) < 0)
                        goto out;
        gh_debug("ld.so cache from the image's configuration: %zu directories, %zu entries", s.ndirs, out->n);
        r = 0;
out:
        for (size_t i = 0; i < s.ndirs; i++) {
                free(s.dirs[i].path);
                free(s.dirs[i].hwcaps);
        }
        free(s.dirs);
        gh_ldconf_free(&conf);
        return r;
}
