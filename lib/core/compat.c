/* CUDA forward compatibility: the rule in docs/cuda-compat.md, written once for the plan and the
 * CDI hooks.  Reading the image goes through the in-root resolver; a file is opened only once it
 * is known to be a regular file, and its ELF is read (lib/core/elf.c, lib/core/ldscan-elf.c), never
 * loaded. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "compat.h"
#include "elf.h"
#include "jsonread.h"
#include "ldcache.h"
#include "ldscan.h"
#include "log.h"
#include "require.h"
#include "rootfs.h"

#define LIBCUDA_PREFIX "libcuda.so."

static int set_reason(struct gh_cuda_compat *c, gh_error_t *err, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static int set_reason(struct gh_cuda_compat *c, gh_error_t *err, const char *fmt, ...)
{
        va_list ap;
        int r;

        free(c->reason);
        c->reason = NULL;
        va_start(ap, fmt);
        r = vasprintf(&c->reason, fmt, ap);
        va_end(ap);
        if (r < 0) {
                c->reason = NULL;
                return gh_err(err, ENOMEM, "deciding on CUDA forward compatibility");
        }
        return 0;
}

/* "libcuda.so.590.44.01": a version of two or three numbers after the prefix (NVIDIA's pattern is
 * libcuda.so.*.*: libcuda.so.1 is the SONAME link, not the file). */
static const char *libcuda_version(const char *name)
{
        const char *v = name + strlen(LIBCUDA_PREFIX);
        if (strncmp(name, LIBCUDA_PREFIX, strlen(LIBCUDA_PREFIX)) != 0 || strchr(v, '.') == NULL)
                return NULL;
        return v;
}

static unsigned long major_of(const char *version) { return strtoul(version, NULL, 10); }

int gh_cuda_compat_parse_note(const char *json, size_t len, struct gh_cuda_compat *c, gh_error_t *err)
{
        struct gh_json doc = { 0 };
        int cv, drv, r = -1;

        /* Some writers pad the descriptor with NULs. */
        while (len > 0 && json[len - 1] == '\0')
                len--;
        if (gh_jsonread_parse(json, len, &doc, err) < 0)
                return gh_err_wrap(err, "its " GH_CUDA_COMPAT_NOTE_SECTION " note");
        if (doc.n == 0 || doc.v[0].type != GH_JSON_OBJECT) {
                gh_err(err, 0, "its " GH_CUDA_COMPAT_NOTE_SECTION " note is not a JSON object");
                goto out;
        }
        cv = gh_json_get(&doc, 0, "CUDA Version");
        if (cv >= 0) {
                if (doc.v[cv].type != GH_JSON_STRING || gh_version_compare(doc.v[cv].str, "0") == -2) {
                        gh_err(err, 0,
                               "its " GH_CUDA_COMPAT_NOTE_SECTION " note has a \"CUDA Version\" that is not a version");
                        goto out;
                }
                if ((c->cuda_version = strdup(doc.v[cv].str)) == NULL) {
                        gh_err(err, ENOMEM, "reading the compat note");
                        goto out;
                }
        }
        drv = gh_json_get(&doc, 0, "Driver");
        if (drv >= 0) {
                if (doc.v[drv].type != GH_JSON_ARRAY) {
                        gh_err(err, 0, "its " GH_CUDA_COMPAT_NOTE_SECTION " note has a \"Driver\" that is not a list");
                        goto out;
                }
                for (int e = doc.v[drv].child; e >= 0; e = doc.v[e].next) {
                        long long b;
                        if (gh_json_integer(&doc, e, &b) < 0 || b < 0 || b > 100000) {
                                gh_err(err, 0,
                                       "its " GH_CUDA_COMPAT_NOTE_SECTION
                                       " note lists a driver branch that is not a number");
                                goto out;
                        }
                        if (c->nbranches < GH_CUDA_COMPAT_MAX_BRANCHES)
                                c->branches[c->nbranches++] = (unsigned) b;
                }
        }
        c->has_note = true;
        r = 0;
out:
        gh_json_free(&doc);
        return r;
}

static bool branch_listed(const struct gh_cuda_compat *c, unsigned long major)
{
        for (size_t i = 0; i < c->nbranches; i++)
                if (c->branches[i] == major)
                        return true;
        return false;
}

static int branches_text(const struct gh_cuda_compat *c, char *buf, size_t size)
{
        size_t off = 0;
        buf[0] = '\0';
        for (size_t i = 0; i < c->nbranches && off < size; i++)
                off += (size_t) snprintf(buf + off, size - off, "%s%u", i ? "," : "", c->branches[i]);
        return 0;
}

/* The decision, once the library and its note are known.  Sets used and reason. */
static int decide(struct gh_cuda_compat *c, const char *host_driver, const char *host_cuda, gh_error_t *err)
{
        bool have_driver = host_driver != NULL && gh_version_compare(host_driver, "0") != -2;
        char list[GH_CUDA_COMPAT_MAX_BRANCHES * 7 + 1];

        branches_text(c, list, sizeof(list));
        if (have_driver && c->has_note) {
                /* Newer compat libraries say which driver branches they run on. */
                if (!branch_listed(c, major_of(host_driver)))
                        return set_reason(
                                c, err,
                                "not used: its note lists the driver branches %s, not the host's %lu (driver %s)",
                                c->nbranches ? list : "(none)", major_of(host_driver), host_driver);
                if (gh_version_compare(c->version, host_driver) <= 0)
                        return set_reason(c, err, "not used: %s is not newer than the host driver %s", c->version,
                                          host_driver);
                c->used = true;
                return set_reason(c, err, "used: %s is newer than the host driver %s and lists its branch %lu",
                                  c->version, host_driver, major_of(host_driver));
        }
        if (have_driver) {
                /* Without a note: the major versions (what NVIDIA's toolkit 1.18 compares). */
                if (major_of(c->version) <= major_of(host_driver))
                        return set_reason(
                                c, err,
                                "not used: it has no compatibility note and its major version %lu is not above the host driver's %lu",
                                major_of(c->version), major_of(host_driver));
                c->used = true;
                return set_reason(
                        c, err, "used: no compatibility note, and its major version %lu is above the host driver's %lu",
                        major_of(c->version), major_of(host_driver));
        }
        if (c->cuda_version != NULL && host_cuda != NULL && gh_version_compare(host_cuda, "0") != -2) {
                if (gh_version_compare(c->cuda_version, host_cuda) <= 0)
                        return set_reason(c, err, "not used: its CUDA %s is not newer than the host's CUDA %s",
                                          c->cuda_version, host_cuda);
                c->used = true;
                return set_reason(c, err, "used: its CUDA %s is newer than the host's CUDA %s (driver version unknown)",
                                  c->cuda_version, host_cuda);
        }
        return set_reason(c, err, "not used: the host driver's version is unknown");
}

static int add_lib(struct gh_cuda_compat *c, const char *soname, const char *path, gh_error_t *err)
{
        struct gh_compat_lib *v;

        for (size_t i = 0; i < c->nlibs; i++)
                if (strcmp(c->libs[i].soname, soname) == 0)
                        return 0; /* the first file of a SONAME (libcuda's own comes first) */
        if (c->nlibs >= GH_CUDA_COMPAT_MAX_LIBS)
                return 0;
        v = reallocarray(c->libs, c->nlibs + 1, sizeof(*v));
        if (v == NULL)
                return gh_err(err, ENOMEM, "listing the CUDA compat libraries");
        c->libs = v;
        v[c->nlibs].soname = strdup(soname);
        v[c->nlibs].path = strdup(path);
        if (v[c->nlibs].soname == NULL || v[c->nlibs].path == NULL) {
                free(v[c->nlibs].soname);
                free(v[c->nlibs].path);
                return gh_err(err, ENOMEM, "listing the CUDA compat libraries");
        }
        c->nlibs++;
        return 0;
}

/* Identifies DIR/NAME (a regular file, checked by the caller) as a 64-bit library of this machine:
 * returns 1 with its SONAME, 0 when it is not one. */
static int identify(int rootfd, int procfd, const char *path, const char *name, char **soname, gh_error_t *err)
{
        _cleanup_error_ gh_error_t e = NULL;
        _cleanup_close_ int fd = gh_open_regular(rootfd, path, procfd, &e);
        unsigned isa;
        int flag, r;

        *soname = NULL;
        if (fd < 0)
                return 0;
        r = gh_ldscan_identify(fd, name, &flag, soname, &isa, err);
        if (r < 0)
                return -1;
        if (r == 1 || flag != GH_LDCACHE_FLAGS_X86_64) {
                free(*soname);
                *soname = NULL;
                return 0;
        }
        return 1;
}

/* The compat package's libraries: regular files named lib*.so.VERSION in the directory, each
 * under its SONAME, libcuda's also under "libcuda.so" (the development name some programs
 * dlopen). */
static int collect(int rootfd, int procfd, int dfd, struct gh_cuda_compat *c, const char *libcuda_name, gh_error_t *err)
{
        _cleanup_closedir_ DIR *d = NULL;
        _cleanup_free_ char *suffix = NULL, *soname = NULL;
        struct dirent *de;
        size_t seen = 0;
        int r;

        if (identify(rootfd, procfd, c->library, libcuda_name, &soname, err) < 0)
                return -1;
        if (soname == NULL || strncmp(soname, "libcuda.so", 10) != 0) {
                c->used = false;
                return set_reason(c, err, "not used: %s is not a libcuda shared library for this machine", c->library);
        }
        if (add_lib(c, soname, c->library, err) < 0 || add_lib(c, "libcuda.so", c->library, err) < 0)
                return -1;
        if (asprintf(&suffix, ".so.%s", c->version) < 0)
                return gh_err(err, ENOMEM, "listing the CUDA compat libraries");
        int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || (d = fdopendir(fd)) == NULL) {
                if (fd >= 0)
                        close(fd);
                return 0;
        }
        while ((de = readdir(d)) != NULL && ++seen <= GH_CUDA_COMPAT_MAX_DIRENTS) {
                _cleanup_free_ char *path = NULL, *so = NULL;
                size_t nl = strlen(de->d_name), sl = strlen(suffix);
                struct stat st;

                if (strncmp(de->d_name, "lib", 3) != 0 || nl <= sl || strcmp(de->d_name + nl - sl, suffix) != 0 ||
                    strcmp(de->d_name, libcuda_name) == 0)
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
                        continue;
                if (asprintf(&path, "%s/%s", c->dir, de->d_name) < 0)
                        return gh_err(err, ENOMEM, "listing the CUDA compat libraries");
                r = identify(rootfd, procfd, path, de->d_name, &so, err);
                if (r < 0)
                        return -1;
                if (r == 1 && add_lib(c, so, path, err) < 0)
                        return -1;
        }
        return 0;
}

int gh_cuda_compat_check(int rootfd, int procfd, const char *dir, const char *host_driver, const char *host_cuda,
                         struct gh_cuda_compat *c, gh_error_t *err)
{
        _cleanup_error_ gh_error_t e = NULL;
        _cleanup_close_ int dfd = -1, fd = -1;
        _cleanup_closedir_ DIR *d = NULL;
        _cleanup_free_ char *found = NULL, *odd = NULL, *note = NULL;
        struct dirent *de;
        size_t nfound = 0, seen = 0, note_len;
        int r;

        memset(c, 0, sizeof(*c));
        c->checked = true;
        if ((c->dir = strdup(dir ? dir : GH_CUDA_COMPAT_DIR)) == NULL)
                return gh_err(err, ENOMEM, "deciding on CUDA forward compatibility");
        /* Most images have none: that answer needs no message built. */
        dfd = gh_resolve(rootfd, c->dir, O_RDONLY | O_DIRECTORY, NULL);
        if (dfd < 0 && errno == ENOENT)
                return set_reason(c, err, "not used: the image has no %s", c->dir);
        if (dfd < 0 && (dfd = gh_resolve(rootfd, c->dir, O_RDONLY | O_DIRECTORY, &e)) < 0)
                return set_reason(c, err, "not used: %s: %s", c->dir, e->msg);
        fd = dup(dfd);
        if (fd < 0 || (d = fdopendir(fd)) == NULL)
                return set_reason(c, err, "not used: cannot list %s", c->dir);
        fd = -1;
        while ((de = readdir(d)) != NULL && ++seen <= GH_CUDA_COMPAT_MAX_DIRENTS) {
                struct stat st;
                if (libcuda_version(de->d_name) == NULL || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                if (!S_ISREG(st.st_mode)) {
                        /* A link (in or out of the image), a directory, a FIFO: never opened. */
                        if (odd == NULL && asprintf(&odd, "%s/%s is %s, not a regular file", c->dir, de->d_name,
                                                    S_ISLNK(st.st_mode)   ? "a symbolic link"
                                                    : S_ISDIR(st.st_mode) ? "a directory"
                                                                          : "a special file") < 0)
                                return gh_err(err, ENOMEM, "deciding on CUDA forward compatibility");
                        continue;
                }
                nfound++;
                if (found == NULL && (found = strdup(de->d_name)) == NULL)
                        return gh_err(err, ENOMEM, "deciding on CUDA forward compatibility");
        }
        if (nfound == 0) {
                if (odd != NULL)
                        gh_warn("CUDA forward compatibility: %s: ignored", odd);
                return odd ? set_reason(c, err, "not used: %s", odd)
                           : set_reason(c, err, "not used: no libcuda.so.X.Y in %s", c->dir);
        }
        if (nfound > 1) {
                gh_warn("CUDA forward compatibility: %zu libcuda.so.X.Y files in %s, expected one: not used", nfound,
                        c->dir);
                return set_reason(c, err, "not used: %zu libcuda.so.X.Y files in %s, expected one", nfound, c->dir);
        }
        if (asprintf(&c->library, "%s/%s", c->dir, found) < 0 || (c->version = strdup(libcuda_version(found))) == NULL)
                return gh_err(err, ENOMEM, "deciding on CUDA forward compatibility");
        if (gh_version_compare(c->version, "0") == -2)
                return set_reason(c, err, "not used: %s has no version number in its name", c->library);

        gh_error_free(&e);
        fd = gh_open_regular(rootfd, c->library, procfd, &e);
        if (fd < 0)
                return set_reason(c, err, "not used: %s", e->msg);
        r = gh_elf_read_note(fd, c->library, GH_CUDA_COMPAT_NOTE_SECTION, GH_CUDA_COMPAT_NOTE_OWNER, &note, &note_len,
                             &e);
        if (r < 0) {
                gh_warn("CUDA forward compatibility: %s: not used", e->msg);
                return set_reason(c, err, "not used: %s", e->msg);
        }
        if (r == 1 && gh_cuda_compat_parse_note(note, note_len, c, &e) < 0) {
                if (e->code == ENOMEM)
                        return gh_err(err, ENOMEM, "%s", e->msg);
                gh_warn("CUDA forward compatibility: %s: %s: not used", c->library, e->msg);
                return set_reason(c, err, "not used: %s", e->msg);
        }
        if (decide(c, host_driver, host_cuda, err) < 0)
                return -1;
        if (c->used && collect(rootfd, procfd, dfd, c, found, err) < 0)
                return -1;
        gh_debug("CUDA forward compatibility: %s %s", c->library, c->reason);
        return 0;
}

void gh_cuda_compat_free(struct gh_cuda_compat *c)
{
        free(c->dir);
        free(c->library);
        free(c->version);
        free(c->cuda_version);
        free(c->reason);
        for (size_t i = 0; i < c->nlibs; i++) {
                free(c->libs[i].soname);
                free(c->libs[i].path);
        }
        free(c->libs);
        memset(c, 0, sizeof(*c));
}
