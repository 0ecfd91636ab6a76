#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "capability.h"
#include "cleanup.h"
#include "driver.h"
#include "readfile.h"
#include "elf.h"
#include "ldcache.h"
#include "log.h"
#include "rootfs.h"
#include "strutil.h"

/* A non-GLVND libGL/libEGL/libGLES is NVIDIA's only if it is built on NVIDIA's GL core; Mesa's
 * libraries of the same names are not. */
#define NEEDS_NVIDIA_CORE 1u
/* Libraries NVIDIA ships with their own version (libnvidia-egl-wayland.so.1.1.19): any `.so.N.N...`. */
#define OWN_VERSION 2u

static const struct {
        const char *stem;
        unsigned cap;
        unsigned flags;
} library_table[] = {
        { "libnvidia-ml", GH_CAP_UTILITY, 0 },
        { "libnvidia-cfg", GH_CAP_UTILITY, 0 },
        { "libnvidia-nscq", GH_CAP_UTILITY, 0 },
        { "libcuda", GH_CAP_COMPUTE, 0 },
        { "libcudadebugger", GH_CAP_COMPUTE, 0 },
        { "libnvidia-opencl", GH_CAP_COMPUTE, 0 },
        /* NVIDIA's shared shader compiler: the GL and Vulkan cores use it as much as CUDA does. */
        { "libnvidia-gpucomp", GH_CAP_COMPUTE | GH_CAP_GRAPHICS, 0 },
        { "libnvidia-ptxjitcompiler", GH_CAP_COMPUTE, 0 },
        { "libnvidia-fatbinaryloader", GH_CAP_COMPUTE, 0 },
        { "libnvidia-allocator", GH_CAP_COMPUTE, 0 },
        { "libnvidia-compiler", GH_CAP_COMPUTE, 0 },
        { "libnvidia-pkcs11", GH_CAP_COMPUTE, 0 },
        { "libnvidia-pkcs11-openssl3", GH_CAP_COMPUTE, 0 },
        { "libnvidia-nvvm", GH_CAP_COMPUTE, 0 },
        { "libvdpau_nvidia", GH_CAP_VIDEO, 0 },
        { "libnvidia-encode", GH_CAP_VIDEO, 0 },
        { "libnvidia-opticalflow", GH_CAP_VIDEO, 0 },
        { "libnvcuvid", GH_CAP_VIDEO, 0 },
        { "libnvidia-eglcore", GH_CAP_GRAPHICS, 0 },
        { "libnvidia-glcore", GH_CAP_GRAPHICS, 0 },
        { "libnvidia-tls", GH_CAP_GRAPHICS, 0 },
        { "libnvidia-glsi", GH_CAP_GRAPHICS, 0 },
        { "libnvidia-fbc", GH_CAP_GRAPHICS, 0 },
        { "libnvidia-ifr", GH_CAP_GRAPHICS, 0 },
        { "libnvidia-rtcore", GH_CAP_GRAPHICS, 0 },
        { "libnvoptix", GH_CAP_GRAPHICS, 0 },
        { "libGLX_nvidia", GH_CAP_GRAPHICS, 0 },
        { "libEGL_nvidia", GH_CAP_GRAPHICS, 0 },
        { "libGLESv2_nvidia", GH_CAP_GRAPHICS, 0 },
        { "libGLESv1_CM_nvidia", GH_CAP_GRAPHICS, 0 },
        { "libnvidia-glvkspirv", GH_CAP_GRAPHICS, 0 },
        { "libnvidia-cbl", GH_CAP_GRAPHICS, 0 },
        { "libnvidia-egl-wayland", GH_CAP_GRAPHICS, OWN_VERSION },
        { "libnvidia-egl-gbm", GH_CAP_GRAPHICS, OWN_VERSION },
        { "libnvidia-egl-xcb", GH_CAP_GRAPHICS, OWN_VERSION },
        { "libnvidia-egl-xlib", GH_CAP_GRAPHICS, OWN_VERSION },
        { "libGL", GH_CAP_GRAPHICS, NEEDS_NVIDIA_CORE },
        { "libEGL", GH_CAP_GRAPHICS, NEEDS_NVIDIA_CORE },
        { "libGLESv1_CM", GH_CAP_GRAPHICS, NEEDS_NVIDIA_CORE },
        { "libGLESv2", GH_CAP_GRAPHICS, NEEDS_NVIDIA_CORE },
        { "libnvidia-ngx", GH_CAP_NGX, 0 },
};

static const struct {
        const char *name;
        unsigned cap;
} binary_table[] = {
        { "nvidia-smi", GH_CAP_UTILITY },
        { "nvidia-debugdump", GH_CAP_UTILITY },
        { "nvidia-persistenced", GH_CAP_UTILITY },
        { "nv-fabricmanager", GH_CAP_UTILITY },
        { "nvidia-cuda-mps-control", GH_CAP_COMPUTE },
        { "nvidia-cuda-mps-server", GH_CAP_COMPUTE },
};

/* Discovery state: the root's own path (to turn fd paths back into in-root paths). */
struct ctx {
        int rootfd;
        char *root_prefix; /* "" for "/" */
        unsigned caps;
        const struct gh_driver_opts *opts;
        struct gh_driver *d;
        char *ml_dir; /* directory holding the x86-64 libnvidia-ml, inside the root */
};

static int table_index(const char *key)
{
        for (size_t i = 0; i < GH_ARRAY_SIZE(library_table); i++) {
                size_t len = strlen(library_table[i].stem);
                if (strncmp(key, library_table[i].stem, len) == 0 && strncmp(key + len, ".so", 3) == 0 &&
                    (key[len + 3] == '\0' || key[len + 3] == '.'))
                        return (int) i;
        }
        return -1;
}

static unsigned first_bit(unsigned mask) { return mask & -mask; }

unsigned gh_driver_library_cap(const char *key)
{
        int i = table_index(key);
        return i < 0 ? 0 : first_bit(library_table[i].cap);
}

bool gh_driver_name_has_version(const char *name, const char *version)
{
        size_t n = strlen(name), v = strlen(version);
        return v > 0 && n > v + 4 && strcmp(name + n - v, version) == 0 && memcmp(name + n - v - 4, ".so.", 4) == 0;
}

static bool is_version_token(const char *s, size_t len)
{
        bool dot = false;
        if (len == 0 || s[0] < '0' || s[0] > '9' || s[len - 1] == '.')
                return false;
        for (size_t i = 0; i < len; i++) {
                if (s[i] == '.') {
                        if (s[i - 1] == '.')
                                return false;
                        dot = true;
                } else if (s[i] < '0' || s[i] > '9') {
                        return false;
                }
        }
        return dot;
}

int gh_driver_parse_version(const char *text, size_t len, char *buf, size_t size, gh_error_t *err)
{
        static const char tag[] = "NVRM version:";
        const char *p = text, *end = text + len;

        while (p < end) {
                const char *eol = memchr(p, '\n', (size_t) (end - p));
                if (eol == NULL)
                        eol = end;
                if ((size_t) (eol - p) >= sizeof(tag) - 1 && memcmp(p, tag, sizeof(tag) - 1) == 0) {
                        const char *t = p + sizeof(tag) - 1;
                        while (t < eol) {
                                const char *te;
                                while (t < eol && (*t == ' ' || *t == '\t'))
                                        t++;
                                te = t;
                                while (te < eol && *te != ' ' && *te != '\t')
                                        te++;
                                if (is_version_token(t, (size_t) (te - t))) {
                                        if ((size_t) (te - t) >= size)
                                                return gh_err(err, 0, "driver version '%.*s' is too long",
                                                              (int) (te - t), t);
                                        memcpy(buf, t, (size_t) (te - t));
                                        buf[te - t] = '\0';
                                        return 0;
                                }
                                t = te;
                        }
                        return gh_err(err, 0, "the NVRM version line has no version number");
                }
                p = eol + 1;
        }
        return gh_err(err, 0, "no 'NVRM version:' line");
}

static int read_version(struct ctx *c, gh_error_t *err)
{
        static const char path[] = "/proc/driver/nvidia/version";
        _cleanup_free_ char *text = NULL;
        char version[64];
        size_t n;

        if (gh_read_at(c->rootfd, path, 65536, false, &text, &n, err) < 0) {
                if ((*err)->code != ENOENT)
                        return -1; /* the resolver names the file and the system error */
                gh_error_free(err);
                gh_err(err, 0,
                       "no NVIDIA driver found: %s%s is missing; load the nvidia kernel module or pass the right --root",
                       c->root_prefix, path);
                return gh_err_kind(err, GH_ERR_NO_DRIVER);
        }
        if (gh_driver_parse_version(text, n, version, sizeof(version), err) < 0)
                return gh_err_wrap(err, "reading the driver version from %s%s", c->root_prefix, path);
        c->d->version = strdup(version);
        if (c->d->version == NULL)
                return gh_err(err, ENOMEM, "reading the driver version");
        return 0;
}

/* The in-root path of an fd opened under the root, from the kernel's view of it. */
static char *in_root_path(const struct ctx *c, int fd)
{
        _cleanup_free_ char *full = gh_fd_path(fd);
        size_t len = strlen(c->root_prefix);

        if (full == NULL || full[0] != '/' || strncmp(full, c->root_prefix, len) != 0 ||
            (full[len] != '/' && full[len] != '\0'))
                return NULL;
        return strdup(full[len] ? full + len : "/");
}

static char *dir_name(const char *path)
{
        const char *slash = strrchr(path, '/');
        if (slash == NULL || slash == path)
                return strdup("/");
        return strndup(path, (size_t) (slash - path));
}

static bool seen(const struct gh_driver_files *f, const struct stat *st)
{
        for (size_t i = 0; i < f->n; i++)
                if (f->v[i].st_dev == st->st_dev && f->v[i].st_ino == st->st_ino)
                        return true;
        return false;
}

/* Takes ownership of path and soname. */
static int add_file(struct gh_driver_files *f, char *path, char *soname, unsigned cap, bool compat32,
                    const struct stat *st, gh_error_t *err)
{
        if (f->n == f->cap) {
                size_t cap_ = f->cap ? f->cap * 2 : 16;
                struct gh_driver_file *v = reallocarray(f->v, cap_, sizeof(*v));
                if (v == NULL) {
                        free(path);
                        free(soname);
                        return gh_err(err, ENOMEM, "recording driver files");
                }
                f->v = v;
                f->cap = cap_;
        }
        f->v[f->n++] = (struct gh_driver_file) {
                .path = path,
                .soname = soname,
                .cap = cap,
                .compat32 = compat32,
                .type = st->st_mode & S_IFMT,
                .st_dev = st->st_dev,
                .st_ino = st->st_ino,
        };
        return 0;
}

static bool has_own_version(const char *name, const char *stem)
{
        size_t len = strlen(stem);
        return strncmp(name, stem, len) == 0 && strncmp(name + len, ".so.", 4) == 0 &&
               is_version_token(name + len + 4, strlen(name + len + 4));
}

/* One ld.so.cache entry: resolve, check, record.  A rejected candidate is a debug line. */
static int consider_library(struct ctx *c, const struct gh_ldcache_entry *e, int idx, bool compat32, gh_error_t *err)
{
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *real = NULL;
        _cleanup_error_ gh_error_t why = NULL;
        struct gh_elf_lib lib = { 0 };
        char *soname;
        bool wanted = (library_table[idx].cap & c->caps) != 0;
        bool is_ml = !compat32 && strcmp(library_table[idx].stem, "libnvidia-ml") == 0;
        struct stat st;

        if (!wanted && !(is_ml && c->ml_dir == NULL))
                return 0;
        fd = gh_resolve(c->rootfd, e->value, O_RDONLY, &why);
        if (fd < 0) {
                gh_debug("skipping %s -> %s: %s", e->key, e->value, why->msg);
                return 0;
        }
        if (fstat(fd, &st) < 0)
                return gh_err(err, errno, "inspecting %s%s", c->root_prefix, e->value);
        /* Caches list each library several times (SONAME, .so, symlinks from /lib): a file already
         * taken needs no second ELF check. */
        if (seen(&c->d->libs, &st) && (wanted || c->ml_dir != NULL))
                return 0;
        real = in_root_path(c, fd);
        if (!S_ISREG(st.st_mode) || real == NULL) {
                gh_debug("skipping %s -> %s: not a regular file inside the driver root", e->key, e->value);
                return 0;
        }
        if ((library_table[idx].flags & OWN_VERSION) ? !has_own_version(gh_base_name(real), library_table[idx].stem)
                                                     : !gh_driver_name_has_version(gh_base_name(real), c->d->version)) {
                gh_debug("skipping %s -> %s: its file %s is not named *.so.%s", e->key, e->value, real, c->d->version);
                return 0;
        }
        if (gh_elf_check_library(fd, real, compat32, &lib, &why) < 0) {
                gh_debug("skipping %s: %s", e->key, why->msg);
                return 0;
        }
        if ((library_table[idx].flags & NEEDS_NVIDIA_CORE) && !gh_elf_needs(&lib, "libnvidia-glcore") &&
            !gh_elf_needs(&lib, "libnvidia-eglcore")) {
                gh_debug("skipping %s: %s does not depend on libnvidia-glcore or libnvidia-eglcore (not NVIDIA's)",
                         e->key, real);
                gh_elf_lib_free(&lib);
                return 0;
        }
        if (is_ml && c->ml_dir == NULL && (c->ml_dir = dir_name(real)) == NULL) {
                gh_elf_lib_free(&lib);
                return gh_err(err, ENOMEM, "recording driver files");
        }
        if (!wanted || seen(&c->d->libs, &st)) {
                gh_elf_lib_free(&lib);
                return 0;
        }
        gh_debug("library %s (%s%s)", real, lib.soname, compat32 ? ", compat32" : "");
        soname = steal_pointer(&lib.soname);
        gh_elf_lib_free(&lib);
        return add_file(&c->d->libs, steal_pointer(&real), soname, first_bit(library_table[idx].cap & c->caps),
                        compat32, &st, err);
}

static int find_libraries(struct ctx *c, gh_error_t *err)
{
        const char *cache_path = c->opts->ldcache ? c->opts->ldcache : GH_DRIVER_DEFAULT_LDCACHE;
        _cleanup_close_ int fd = -1;
        struct gh_ldcache *cache = NULL;
        int r = 0;

        fd = gh_resolve(c->rootfd, cache_path, O_RDONLY, err);
        if (fd < 0) {
                int code = (*err)->code;
                gh_error_free(err);
                gh_err(err, 0,
                       "cannot open the driver's ld.so cache %s%s: %s; pass --ldcache=FILE if it lives elsewhere",
                       c->root_prefix, cache_path, strerror(code));
                return gh_err_code(err, code);
        }
        if (gh_ldcache_open(fd, cache_path, &cache, err) < 0)
                return -1;
        for (size_t i = 0; i < cache->n && r == 0; i++) {
                const struct gh_ldcache_entry *e = &cache->entries[i];
                int idx = table_index(e->key);
                if (idx < 0)
                        continue;
                if (e->flags == GH_LDCACHE_FLAGS_X86_64)
                        r = consider_library(c, e, idx, false, err);
                else if ((e->flags == GH_LDCACHE_FLAGS_I386 || e->flags == GH_LDCACHE_FLAG_ELF) &&
                         (c->caps & GH_CAP_COMPAT32))
                        r = consider_library(c, e, idx, true, err);
        }
        gh_ldcache_close(cache);
        return r;
}

/* The first ELF program `name` along the search directories. */
static int find_binary(struct ctx *c, char **dirs, size_t ndirs, const char *name, unsigned cap, gh_error_t *err)
{
        for (size_t i = 0; i < ndirs; i++) {
                _cleanup_free_ char *candidate = NULL, *real = NULL;
                _cleanup_error_ gh_error_t why = NULL;
                _cleanup_close_ int fd = -1;
                struct stat st;

                if (asprintf(&candidate, "%s/%s", dirs[i], name) < 0)
                        return gh_err(err, ENOMEM, "searching for %s", name);
                fd = gh_resolve(c->rootfd, candidate, O_RDONLY, &why);
                if (fd < 0)
                        continue;
                if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || !(st.st_mode & 0111) ||
                    (real = in_root_path(c, fd)) == NULL) {
                        gh_debug("skipping %s: not an executable file inside the driver root", candidate);
                        continue;
                }
                if (gh_elf_check_binary(fd, real, &why) < 0) {
                        gh_debug("skipping %s: %s", candidate, why->msg);
                        continue;
                }
                if (seen(&c->d->bins, &st))
                        return 0;
                gh_debug("program %s", real);
                return add_file(&c->d->bins, steal_pointer(&real), NULL, cap, false, &st, err);
        }
        gh_debug("program %s not found", name);
        return 0;
}

static int find_binaries(struct ctx *c, gh_error_t *err)
{
        _cleanup_free_ char *copy = strdup(c->opts->path ? c->opts->path : GH_DRIVER_DEFAULT_PATH);
        _cleanup_free_ char *ml_bin = NULL;
        _cleanup_free_ char **dirs = NULL;
        size_t ndirs = 0;
        char *save = NULL;

        if (copy == NULL || (dirs = calloc(strlen(copy) + 2, sizeof(*dirs))) == NULL)
                return gh_err(err, ENOMEM, "searching for driver programs");
        for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save))
                if (d[0] == '/')
                        dirs[ndirs++] = d;
        if (c->ml_dir != NULL) {
                _cleanup_free_ char *parent = dir_name(c->ml_dir);
                if (parent == NULL || asprintf(&ml_bin, "%s/bin", strcmp(parent, "/") ? parent : "") < 0)
                        return gh_err(err, ENOMEM, "searching for driver programs");
                dirs[ndirs++] = ml_bin;
        }
        for (size_t i = 0; i < GH_ARRAY_SIZE(binary_table); i++)
                if ((binary_table[i].cap & c->caps) &&
                    find_binary(c, dirs, ndirs, binary_table[i].name, binary_table[i].cap, err) < 0)
                        return -1;
        return 0;
}

static int by_path(const void *a, const void *b)
{
        return strcmp(((const struct gh_driver_file *) a)->path, ((const struct gh_driver_file *) b)->path);
}

/* gsp*.bin in one directory, sorted by name; returns how many were found. */
static int firmware_in(struct ctx *c, const char *dir, gh_error_t *err)
{
        _cleanup_closedir_ DIR *d = NULL;
        _cleanup_close_ int dfd = -1;
        _cleanup_error_ gh_error_t why = NULL;
        struct dirent *de;
        int found = 0;

        dfd = gh_resolve(c->rootfd, dir, O_RDONLY | O_DIRECTORY, &why);
        if (dfd < 0) {
                gh_debug("no firmware in %s: %s", dir, why->msg);
                return 0;
        }
        d = fdopendir(dfd);
        if (d == NULL)
                return gh_err(err, errno, "listing %s%s", c->root_prefix, dir);
        dfd = -1;
        while ((de = readdir(d)) != NULL) {
                _cleanup_free_ char *p = NULL, *real = NULL;
                _cleanup_close_ int fd = -1;
                struct stat st;

                if (fnmatch("gsp*.bin", de->d_name, FNM_PERIOD) != 0)
                        continue;
                if (asprintf(&p, "%s/%s", dir, de->d_name) < 0)
                        return gh_err(err, ENOMEM, "listing firmware");
                fd = gh_resolve(c->rootfd, p, O_PATH, &why);
                gh_error_free(&why);
                if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (real = in_root_path(c, fd)) == NULL ||
                    seen(&c->d->firmware, &st))
                        continue;
                if (add_file(&c->d->firmware, steal_pointer(&real), NULL, 0, false, &st, err) < 0)
                        return -1;
                found++;
        }
        if (found > 1)
                qsort(c->d->firmware.v + c->d->firmware.n - found, (size_t) found, sizeof(*c->d->firmware.v), by_path);
        return found;
}

static int find_firmware(struct ctx *c, gh_error_t *err)
{
        _cleanup_free_ char *standard = NULL, *beside = NULL;
        int n;

        if (asprintf(&standard, "/lib/firmware/nvidia/%s", c->d->version) < 0)
                return gh_err(err, ENOMEM, "searching for firmware");
        n = firmware_in(c, standard, err);
        if (n != 0 || c->ml_dir == NULL)
                return n < 0 ? -1 : 0;
        if (asprintf(&beside, "%s/../firmware/nvidia/%s", c->ml_dir, c->d->version) < 0)
                return gh_err(err, ENOMEM, "searching for firmware");
        return firmware_in(c, beside, err) < 0 ? -1 : 0;
}

static int add_ipc(struct ctx *c, const char *path, mode_t type, unsigned cap, gh_error_t *err)
{
        _cleanup_error_ gh_error_t why = NULL;
        _cleanup_close_ int fd = gh_resolve(c->rootfd, path, O_PATH, &why);
        struct stat st;
        char *real;

        if (fd < 0 || fstat(fd, &st) < 0 || (st.st_mode & S_IFMT) != type || (real = in_root_path(c, fd)) == NULL) {
                gh_debug("no %s here (absent or of the wrong type)", path);
                return 0;
        }
        if (seen(&c->d->ipcs, &st)) {
                free(real);
                return 0;
        }
        return add_file(&c->d->ipcs, real, NULL, cap, false, &st, err);
}

/* Loader files are looked for beside the graphics libraries (the driver's prefix), else beside
 * libnvidia-ml. */
static int find_loader_files(struct ctx *c, gh_error_t *err)
{
        _cleanup_free_ char *lib_dir = NULL;

        for (size_t i = 0; i < c->d->libs.n && lib_dir == NULL; i++)
                if ((c->d->libs.v[i].cap & GH_CAP_GRAPHICS) && !c->d->libs.v[i].compat32 &&
                    (lib_dir = dir_name(c->d->libs.v[i].path)) == NULL)
                        return gh_err(err, ENOMEM, "searching for loader files");
        return gh_loader_find(c->rootfd, c->root_prefix, lib_dir ? lib_dir : c->ml_dir, c->d->version, &c->d->libs,
                              &c->d->loaders, err);
}

static int find_ipcs(struct ctx *c, gh_error_t *err)
{
        if ((c->caps & GH_CAP_UTILITY) && !c->opts->no_persistenced &&
            add_ipc(c, "/run/nvidia-persistenced/socket", S_IFSOCK, GH_CAP_UTILITY, err) < 0)
                return -1;
        if ((c->caps & GH_CAP_UTILITY) && !c->opts->no_fabricmanager &&
            add_ipc(c, "/run/nvidia-fabricmanager/socket", S_IFSOCK, GH_CAP_UTILITY, err) < 0)
                return -1;
        if ((c->caps & GH_CAP_COMPUTE) &&
            add_ipc(c, c->opts->mps_pipe_dir ? c->opts->mps_pipe_dir : GH_DRIVER_DEFAULT_MPS_PIPE_DIR, S_IFDIR,
                    GH_CAP_COMPUTE, err) < 0)
                return -1;
        return 0;
}

static void files_free(struct gh_driver_files *f)
{
        for (size_t i = 0; i < f->n; i++) {
                free(f->v[i].path);
                free(f->v[i].soname);
        }
        free(f->v);
}

void gh_driver_free(struct gh_driver *driver)
{
        if (driver == NULL)
                return;
        free(driver->version);
        files_free(&driver->libs);
        files_free(&driver->bins);
        files_free(&driver->firmware);
        files_free(&driver->ipcs);
        gh_loader_files_free(&driver->loaders);
        free(driver);
}

static long now_us(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

int gh_driver_discover(int rootfd, const struct gh_driver_opts *opts, struct gh_driver **out, gh_error_t *err)
{
        static const struct gh_driver_opts defaults = { .caps = GH_CAP_ALL & ~GH_CAP_COMPAT32 };
        _cleanup_free_ char *root = gh_fd_path(rootfd);
        struct ctx c = { .rootfd = rootfd, .opts = opts ? opts : &defaults };
        int r;

        if (root == NULL || root[0] != '/')
                return gh_err(err, ENOMEM, "finding the driver root's path");
        c.root_prefix = strcmp(root, "/") == 0 ? (char *) "" : root;
        c.caps = gh_capability_expand(c.opts->caps);
        c.d = calloc(1, sizeof(*c.d));
        if (c.d == NULL)
                return gh_err(err, ENOMEM, "discovering the driver");
        long t[6] = { now_us() };
        r = read_version(&c, err);
        if (r == 0)
                r = find_libraries(&c, err);
        t[1] = now_us();
        if (r == 0)
                r = find_binaries(&c, err);
        t[2] = now_us();
        if (r == 0 && !c.opts->no_gsp_firmware)
                r = find_firmware(&c, err);
        t[3] = now_us();
        if (r == 0)
                r = find_ipcs(&c, err);
        t[4] = now_us();
        if (r == 0 && (c.caps & GH_CAP_GRAPHICS))
                r = find_loader_files(&c, err);
        t[5] = now_us();
        gh_debug(
                "driver discovery: libraries %ld us, programs %ld us, firmware %ld us, ipcs %ld us, loader files %ld us",
                t[1] - t[0], t[2] - t[1], t[3] - t[2], t[4] - t[3], t[5] - t[4]);
        free(c.ml_dir);
        if (r < 0) {
                gh_driver_free(c.d);
                return -1;
        }
        gh_debug("driver %s: %zu libraries, %zu programs, %zu firmware files, %zu ipcs, %zu loader files", c.d->version,
                 c.d->libs.n, c.d->bins.n, c.d->firmware.n, c.d->ipcs.n, c.d->loaders.n);
        *out = c.d;
        return 0;
}
