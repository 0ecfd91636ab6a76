#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capability.h"
#include "cleanup.h"
#include "driver.h"
#include "jsonread.h"
#include "loaders.h"
#include "log.h"
#include "rootfs.h"

static const struct {
        enum gh_loader_kind kind;
        const char *name;
        const char *subdir;        /* below etc/ and share/ */
        const char *pattern;       /* of the file name; NULL: the profiles file of this driver version */
        const char *container_dir; /* where the loader in the container reads it */
        bool in_etc;               /* also searched under /etc */
} kinds[] = {
        { GH_LOADER_VULKAN_ICD, "vulkan_icd", "vulkan/icd.d", "nvidia_icd*.json", "/usr/share/vulkan/icd.d", true },
        { GH_LOADER_VULKAN_LAYER, "vulkan_layer", "vulkan/implicit_layer.d", "nvidia_layers*.json",
          "/usr/share/vulkan/implicit_layer.d", true },
        { GH_LOADER_EGL_VENDOR, "egl_vendor", "glvnd/egl_vendor.d", "*nvidia*.json", "/usr/share/glvnd/egl_vendor.d",
          true },
        { GH_LOADER_EGL_PLATFORM, "egl_platform", "egl/egl_external_platform.d", "*nvidia*.json",
          "/usr/share/egl/egl_external_platform.d", true },
        { GH_LOADER_APP_PROFILES, "application_profiles", "nvidia", NULL, "/usr/share/nvidia", false },
};

const char *gh_loader_kind_name(enum gh_loader_kind kind)
{
        for (size_t i = 0; i < GH_ARRAY_SIZE(kinds); i++)
                if (kinds[i].kind == kind)
                        return kinds[i].name;
        return "unknown";
}

/* "1.0.0": digits and dots, what every loader's file_format_version looks like. */
static bool is_format_version(const char *s)
{
        int dots = 0;
        if (s[0] < '0' || s[0] > '9')
                return false;
        for (const char *p = s; *p; p++) {
                if (*p == '.') {
                        if (p[1] < '0' || p[1] > '9')
                                return false;
                        dots++;
                } else if (*p < '0' || *p > '9') {
                        return false;
                }
        }
        return dots == 2;
}

static bool is_type(const struct gh_json *doc, int node, enum gh_json_type type)
{
        return node >= 0 && doc->v[node].type == type;
}

static int library_of(const struct gh_json *doc, int obj, const char *where, char **library, gh_error_t *err)
{
        int lp = gh_json_get(doc, obj, "library_path");
        const char *s;

        if (!is_type(doc, lp, GH_JSON_STRING))
                return gh_err(err, 0, "%s has no \"library_path\" string", where);
        s = doc->v[lp].str;
        if (s[0] == '\0' || strlen(s) >= PATH_MAX)
                return gh_err(err, 0, "%s.library_path is empty or too long", where);
        if (*library != NULL && strcmp(*library, s) != 0)
                return gh_err(err, 0, "its layers name different libraries (%s, %s)", *library, s);
        if (*library == NULL && (*library = strdup(s)) == NULL)
                return gh_err(err, ENOMEM, "reading a loader file");
        return 0;
}

static int check(enum gh_loader_kind kind, const struct gh_json *doc, char **lib, gh_error_t *err)
{
        int v;

        if (!is_type(doc, 0, GH_JSON_OBJECT))
                return gh_err(err, 0, "not a JSON object");
        if (kind == GH_LOADER_APP_PROFILES) {
                if (!is_type(doc, gh_json_get(doc, 0, "profiles"), GH_JSON_ARRAY) &&
                    !is_type(doc, gh_json_get(doc, 0, "rules"), GH_JSON_ARRAY))
                        return gh_err(err, 0, "has neither a \"profiles\" nor a \"rules\" array");
                return 0;
        }
        v = gh_json_get(doc, 0, "file_format_version");
        if (!is_type(doc, v, GH_JSON_STRING) || !is_format_version(doc->v[v].str))
                return gh_err(err, 0, "has no \"file_format_version\" like \"1.0.0\"");
        if (kind == GH_LOADER_VULKAN_LAYER) {
                int layers = gh_json_get(doc, 0, "layers");
                if (is_type(doc, layers, GH_JSON_ARRAY) && doc->v[layers].child >= 0) {
                        for (int l = doc->v[layers].child; l >= 0; l = doc->v[l].next)
                                if (library_of(doc, l, "layers[]", lib, err) < 0)
                                        return -1;
                        return 0;
                }
                return library_of(doc, gh_json_get(doc, 0, "layer"), "\"layer\"", lib, err);
        }
        return library_of(doc, gh_json_get(doc, 0, "ICD"), "\"ICD\"", lib, err);
}

int gh_loader_parse(enum gh_loader_kind kind, const char *text, size_t len, char **library, gh_error_t *err)
{
        _cleanup_free_ char *lib = NULL;
        struct gh_json doc;
        int r;

        *library = NULL;
        if (gh_jsonread_parse(text, len, &doc, err) < 0)
                return -1;
        r = check(kind, &doc, &lib, err);
        gh_json_free(&doc);
        if (r < 0)
                return -1;
        *library = steal_pointer(&lib);
        return 0;
}

/* Absolute, and every component a plain name: what a loader would dlopen as is. */
static bool is_canonical_path(const char *p)
{
        if (p[0] != '/' || p[1] == '\0')
                return false;
        for (const char *c = p + 1;;) {
                const char *end = strchrnul(c, '/');
                size_t n = (size_t) (end - c);
                if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
                        return false;
                if (*end == '\0')
                        return true;
                c = end + 1;
        }
}

/* Is the named library one the driver root provides?  *src gets the in-root file to place at an
 * absolute name. */
static bool library_provided(int rootfd, const char *library, const struct gh_driver_files *libs, char **src,
                             const char **why)
{
        _cleanup_error_ gh_error_t e = NULL;
        _cleanup_close_ int fd = -1;
        struct stat st;

        *src = NULL;
        if (strchr(library, '/') == NULL) {
                for (size_t i = 0; i < libs->n; i++)
                        if (libs->v[i].soname && strcmp(libs->v[i].soname, library) == 0)
                                return true;
                *why = "is not the SONAME of a library this driver provides";
                return false;
        }
        if (!is_canonical_path(library)) {
                *why = "is neither a bare library name nor a plain absolute path";
                return false;
        }
        /* Configure mounts the library at that path in the container: never into its kernel
         * filesystems. */
        if (strncmp(library, "/proc/", 6) == 0 || strncmp(library, "/sys/", 5) == 0 ||
            strncmp(library, "/dev/", 5) == 0) {
                *why = "is under /proc, /sys or /dev";
                return false;
        }
        fd = gh_resolve(rootfd, library, O_PATH, &e);
        if (fd < 0 || fstat(fd, &st) < 0) {
                *why = "does not exist in the driver root";
                return false;
        }
        for (size_t i = 0; i < libs->n; i++)
                if (libs->v[i].st_dev == st.st_dev && libs->v[i].st_ino == st.st_ino) {
                        *src = strdup(libs->v[i].path);
                        if (*src == NULL)
                                *why = "out of memory";
                        return *src != NULL;
                }
        *why = "is not one of the libraries this driver provides";
        return false;
}

struct search {
        int rootfd;
        const char *root_prefix;
        const struct gh_driver_files *libs;
        struct gh_loader_files *out;
};

static bool have(const struct gh_loader_files *f, const char *dst, const struct stat *st)
{
        for (size_t i = 0; i < f->n; i++)
                if (strcmp(f->v[i].dst, dst) == 0 || (f->v[i].st_dev == st->st_dev && f->v[i].st_ino == st->st_ino))
                        return true;
        return false;
}

static int add(struct gh_loader_files *f, const struct gh_loader_file *file, gh_error_t *err)
{
        if (f->n == f->cap) {
                size_t ncap = f->cap ? f->cap * 2 : 8;
                struct gh_loader_file *v = reallocarray(f->v, ncap, sizeof(*v));
                if (v == NULL)
                        return gh_err(err, ENOMEM, "recording loader files");
                f->v = v;
                f->cap = ncap;
        }
        f->v[f->n++] = *file;
        return 0;
}

/* One candidate file: read it (a regular file only), check it, record it. */
static int consider(struct search *s, size_t k, const char *dir, const char *name, gh_error_t *err)
{
        _cleanup_free_ char *path = NULL, *full = NULL, *text = NULL, *library = NULL, *src = NULL, *dst = NULL;
        _cleanup_error_ gh_error_t why = NULL;
        _cleanup_close_ int fd = -1;
        size_t max = kinds[k].kind == GH_LOADER_APP_PROFILES ? GH_LOADER_PROFILES_MAX : GH_LOADER_JSON_MAX;
        size_t plen = strlen(s->root_prefix);
        const char *reason = NULL;
        struct stat st;
        ssize_t n;

        if (asprintf(&path, "%s/%s", dir, name) < 0 || asprintf(&dst, "%s/%s", kinds[k].container_dir, name) < 0)
                return gh_err(err, ENOMEM, "searching for loader files");
        fd = gh_open_regular(s->rootfd, path, AT_FDCWD, &why);
        if (fd < 0) {
                gh_debug("skipping %s: %s", path, why->msg);
                return 0;
        }
        if (fstat(fd, &st) < 0)
                return gh_err(err, errno, "inspecting %s%s", s->root_prefix, path);
        if (have(s->out, dst, &st))
                return 0;
        full = gh_fd_path(fd);
        if (full == NULL || strncmp(full, s->root_prefix, plen) != 0 || full[plen] != '/') {
                gh_debug("skipping %s: not inside the driver root", path);
                return 0;
        }
        if ((size_t) st.st_size > max) {
                gh_debug("skipping %s: %lld bytes, more than the %zu a loader file may have", path,
                         (long long) st.st_size, max);
                return 0;
        }
        text = malloc(max + 1);
        if (text == NULL)
                return gh_err(err, ENOMEM, "reading %s", path);
        for (size_t got = 0;; got += (size_t) n) {
                n = read(fd, text + got, max + 1 - got);
                if (n < 0 && errno == EINTR) {
                        n = 0;
                        continue;
                }
                if (n < 0)
                        return gh_err(err, errno, "reading %s%s", s->root_prefix, path);
                if (n == 0 || got + (size_t) n > max) {
                        n = (ssize_t) (got + (size_t) n);
                        break;
                }
        }
        if ((size_t) n > max) {
                gh_debug("skipping %s: larger than %zu bytes", path, max);
                return 0;
        }
        if (gh_loader_parse(kinds[k].kind, text, (size_t) n, &library, &why) < 0) {
                gh_debug("skipping %s: %s", path, why->msg);
                return 0;
        }
        if (library != NULL && !library_provided(s->rootfd, library, s->libs, &src, &reason)) {
                gh_debug("skipping %s: its library %s %s", path, library, reason);
                return 0;
        }
        gh_debug("loader file %s (%s) -> %s%s%s", full + plen, kinds[k].name, dst, library ? ", library " : "",
                 library ? library : "");
        struct gh_loader_file f = {
                .kind = kinds[k].kind,
                .dst = steal_pointer(&dst),
                .library = steal_pointer(&library),
                .library_src = steal_pointer(&src),
                .cap = GH_CAP_GRAPHICS,
                .st_dev = st.st_dev,
                .st_ino = st.st_ino,
        };
        f.path = strdup(full + plen);
        if (f.path == NULL || add(s->out, &f, err) < 0) {
                free(f.path);
                free(f.dst);
                free(f.library);
                free(f.library_src);
                return f.path == NULL ? gh_err(err, ENOMEM, "recording loader files") : -1;
        }
        return 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *) a, *(char *const *) b); }

static int search_dir(struct search *s, size_t k, const char *dir, const char *pattern, gh_error_t *err)
{
        _cleanup_closedir_ DIR *d = NULL;
        _cleanup_error_ gh_error_t why = NULL;
        _cleanup_close_ int dfd = gh_resolve(s->rootfd, dir, O_RDONLY | O_DIRECTORY, &why);
        struct dirent *de;
        char **names = NULL;
        size_t nnames = 0;
        int r = 0;

        if (dfd < 0)
                return 0;
        d = fdopendir(dfd);
        if (d == NULL)
                return gh_err(err, errno, "listing %s%s", s->root_prefix, dir);
        dfd = -1;
        /* Sorted, so that the result does not depend on the directory's order. */
        while ((de = readdir(d)) != NULL) {
                char **v;
                if (fnmatch(pattern, de->d_name, FNM_PERIOD) != 0)
                        continue;
                v = reallocarray(names, nnames + 1, sizeof(*names));
                if (v == NULL || (v[nnames] = strdup(de->d_name)) == NULL) {
                        names = v ? v : names;
                        r = gh_err(err, ENOMEM, "listing %s", dir);
                        break;
                }
                names = v;
                nnames++;
        }
        if (r == 0 && nnames > 1)
                qsort(names, nnames, sizeof(*names), by_name);
        for (size_t i = 0; i < nnames; i++) {
                if (r == 0)
                        r = consider(s, k, dir, names[i], err);
                free(names[i]);
        }
        free(names);
        return r;
}

/* The driver's prefix: its library directory without the last component, and without a "lib" or
 * "lib64" left above a multiarch directory (/usr/lib/x86_64-linux-gnu -> /usr,
 * /usr/local/nvidia/lib64 -> /usr/local/nvidia). */
static char *driver_prefix(const char *lib_dir)
{
        _cleanup_free_ char *p = strdup(lib_dir);
        char *slash;

        if (p == NULL)
                return NULL;
        for (int i = 0; i < 2; i++) {
                slash = strrchr(p, '/');
                if (slash == NULL)
                        break;
                *slash = '\0';
                slash = strrchr(p, '/');
                if (slash == NULL ||
                    (strcmp(slash + 1, "lib") && strcmp(slash + 1, "lib64") && strcmp(slash + 1, "lib32")))
                        break;
        }
        return steal_pointer(&p);
}

int gh_loader_find(int rootfd, const char *root_prefix, const char *lib_dir, const char *version,
                   const struct gh_driver_files *libs, struct gh_loader_files *out, gh_error_t *err)
{
        struct search s = { .rootfd = rootfd, .root_prefix = root_prefix, .libs = libs, .out = out };
        _cleanup_free_ char *prefix = lib_dir ? driver_prefix(lib_dir) : NULL;
        bool own_prefix;

        if (lib_dir != NULL && prefix == NULL)
                return gh_err(err, ENOMEM, "searching for loader files");
        own_prefix =
                prefix != NULL && prefix[0] != '\0' && strcmp(prefix, "/usr") != 0 && strcmp(prefix, "/usr/local") != 0;
        for (size_t k = 0; k < GH_ARRAY_SIZE(kinds); k++) {
                const char *bases[] = { kinds[k].in_etc ? "/etc" : NULL, "/usr/share", "/usr/local/share", NULL };
                _cleanup_free_ char *pattern = NULL, *own = NULL;

                if ((kinds[k].pattern ? (pattern = strdup(kinds[k].pattern)) == NULL
                                      : asprintf(&pattern, "nvidia-application-profiles-%s-rc", version) < 0) ||
                    (own_prefix && asprintf(&own, "%s/share", prefix) < 0))
                        return gh_err(err, ENOMEM, "searching for loader files");
                bases[3] = own;
                for (size_t b = 0; b < GH_ARRAY_SIZE(bases); b++) {
                        _cleanup_free_ char *dir = NULL;
                        if (bases[b] == NULL)
                                continue;
                        if (asprintf(&dir, "%s/%s", bases[b], kinds[k].subdir) < 0)
                                return gh_err(err, ENOMEM, "searching for loader files");
                        if (search_dir(&s, k, dir, pattern, err) < 0)
                                return -1;
                }
        }
        return 0;
}

void gh_loader_files_free(struct gh_loader_files *files)
{
        for (size_t i = 0; i < files->n; i++) {
                free(files->v[i].path);
                free(files->v[i].dst);
                free(files->v[i].library);
                free(files->v[i].library_src);
        }
        free(files->v);
        memset(files, 0, sizeof(*files));
}
