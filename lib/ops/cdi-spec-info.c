/* What a CDI spec on this host says about itself (cdi-specs.h): the hook programs it runs, who wrote
 * it, whether it still matches the loaded driver and how to write it again.  Split from cdi-specs.c,
 * which reads, checks and resolves the specs. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "cdi-hook.h"
#include "cdi-specs.h"
#include "cdi.h"
#include "cleanup.h"
#include "strutil.h"

#define STAT_MAX 100000 /* host paths looked up per spec: bounds the work a hostile spec can ask for */

static bool starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

/* ---------------------------------------------------------------------------------------------
 * Every edit of the spec: its own and each device's. */

typedef bool (*edit_fn)(json_t *edits, void *ctx);

static void for_each_edits(json_t *doc, edit_fn fn, void *ctx)
{
        json_t *d;
        size_t i;

        if (json_object_get(doc, "containerEdits") && !fn(json_object_get(doc, "containerEdits"), ctx))
                return;
        json_array_foreach (json_object_get(doc, "devices"), i, d)
                if (!fn(json_object_get(d, "containerEdits"), ctx))
                        return;
}

struct hooks_ctx {
        const char **paths;
        size_t n, max;
};

static bool hook_paths(json_t *edits, void *vctx)
{
        struct hooks_ctx *c = vctx;
        json_t *h;
        size_t i;

        json_array_foreach (json_object_get(edits, "hooks"), i, h) {
                const char *path = json_string_value(json_object_get(h, "path"));
                bool seen = false;
                for (size_t k = 0; path && k < c->n && !seen; k++)
                        seen = strcmp(c->paths[k], path) == 0;
                if (path != NULL && !seen && c->n < c->max)
                        c->paths[c->n++] = path;
        }
        return c->n < c->max;
}

char *gh_cdi_spec_hook_broken(json_t *doc)
{
        const char *paths[16];
        size_t n = gh_cdi_spec_hook_paths(doc, paths, GH_ARRAY_SIZE(paths));
        char why[PATH_MAX + 128];

        for (size_t i = 0; i < n; i++) {
                enum gh_hook_binary b = gh_cdi_hook_binary(paths[i], NULL, why, sizeof(why));
                if (b == GH_HOOK_BINARY_MISSING || b == GH_HOOK_BINARY_NOT_EXEC)
                        return gh_cdi_printable(why, sizeof(why));
        }
        return NULL;
}

size_t gh_cdi_spec_hook_paths(json_t *doc, const char **paths, size_t max)
{
        struct hooks_ctx c = { paths, 0, max };

        if (max > 0)
                for_each_edits(doc, hook_paths, &c);
        return c.n;
}

struct writer_ctx {
        bool ours, nvidia;
};

static bool hook_writer(json_t *edits, void *vctx)
{
        struct writer_ctx *c = vctx;
        json_t *h;
        size_t i;

        json_array_foreach (json_object_get(edits, "hooks"), i, h) {
                const char *path = json_string_value(json_object_get(h, "path"));
                json_t *args = json_object_get(h, "args"), *a;
                const char *a0 = json_string_value(json_array_get(args, 0));
                const char *b = path ? gh_base_name(path) : "";
                size_t k;
                if (strcmp(b, "nvidia-cdi-hook") == 0 || strcmp(b, "nvidia-ctk") == 0 ||
                    (a0 && (strcmp(a0, "nvidia-cdi-hook") == 0 || strcmp(a0, "nvidia-ctk") == 0)))
                        c->nvidia = true;
                if (strcmp(b, "gpu-cli") == 0 || strcmp(b, "gpu-cdi-hook") == 0 || (a0 && strcmp(a0, "gpu-cli") == 0))
                        json_array_foreach (args, k, a)
                                if (json_is_string(a) && strcmp(json_string_value(a), "cdi-hook") == 0)
                                        c->ours = true;
        }
        return true;
}

enum gh_cdi_writer gh_cdi_spec_writer(json_t *doc, const char *path)
{
        const char *kind = json_string_value(json_object_get(doc, "kind"));
        const char *base = gh_base_name(path);
        struct writer_ctx c = { 0 };
        json_t *d;
        size_t i;

        if (kind == NULL)
                return GH_CDI_WRITER_UNKNOWN;
        if (starts_with(kind, "k8s.device-plugin.nvidia.com/") || starts_with(base, "k8s.device-plugin.nvidia.com-"))
                return GH_CDI_WRITER_DEVICE_PLUGIN;
        if (starts_with(kind, "k8s.gpu.nvidia.com/") || starts_with(base, "k8s.gpu.nvidia.com-"))
                return GH_CDI_WRITER_DRA;
        for_each_edits(doc, hook_writer, &c);
        if (c.ours) {
                bool mps = true;
                json_array_foreach (json_object_get(doc, "devices"), i, d)
                        if (!starts_with(json_string_value(json_object_get(d, "name")), GH_CDI_MPS_PREFIX))
                                mps = false;
                return mps ? GH_CDI_WRITER_OURS_MPS : GH_CDI_WRITER_OURS;
        }
        if (c.nvidia || (starts_with(kind, "nvidia.com/") &&
                         (strcmp(base, "nvidia.yaml") == 0 || strcmp(base, "nvidia.json") == 0)))
                return GH_CDI_WRITER_NVIDIA_CTK;
        return GH_CDI_WRITER_UNKNOWN;
}

/* ---------------------------------------------------------------------------------------------
 * Staleness. */

/* The first driver version (three or more digits, a dot, digits, optionally another dot and
 * digits: 580.95.05, 535.183.01, 570.86) in s, into v; libnvidia-egl-wayland.so.1.1.19 has none. */
static bool find_version(const char *s, char *v, size_t size)
{
        const char *p = s;

        while (*p) {
                size_t n = strspn(p, "0123456789.");
                if (n == 0) {
                        p++;
                        continue;
                }
                const char *run = p;
                size_t rn = n;
                while (rn > 0 && *run == '.')
                        run++, rn--;
                while (rn > 0 && run[rn - 1] == '.')
                        rn--;
                size_t major = strspn(run, "0123456789");
                if (major >= 3 && major < rn && run[major] == '.') {
                        size_t dots = 0;
                        bool ok = true;
                        for (size_t i = major; i < rn; i++)
                                if (run[i] == '.') {
                                        if (i + 1 >= rn || run[i + 1] == '.')
                                                ok = false;
                                        dots++;
                                }
                        if (ok && dots <= 2 && rn < size) {
                                snprintf(v, size, "%.*s", (int) rn, run);
                                return true;
                        }
                }
                p += n;
        }
        return false;
}

struct stale_ctx {
        const char *version;
        char named[64], where[128]; /* another version, and the text that names it */
        char node[PATH_MAX + 64];   /* a device node whose numbers differ */
        char missing[PATH_MAX];     /* the first host path that does not exist */
        size_t nmissing, nstat;
};

static void see_version(struct stale_ctx *c, const char *s)
{
        char v[64];

        if (c->version == NULL || c->named[0] != '\0' || !find_version(s, v, sizeof(v)) || strcmp(v, c->version) == 0)
                return;
        _cleanup_free_ char *p = gh_cdi_printable(gh_base_name(s), 100);
        snprintf(c->named, sizeof(c->named), "%s", v);
        snprintf(c->where, sizeof(c->where), "%s", p ? p : "");
}

static void see_path(struct stale_ctx *c, const char *host)
{
        struct stat st;

        if (host[0] != '/' || c->nstat++ >= STAT_MAX)
                return;
        if (stat(host, &st) < 0 && (errno == ENOENT || errno == ENOTDIR)) {
                if (c->nmissing++ == 0)
                        snprintf(c->missing, sizeof(c->missing), "%s", host);
        }
}

static bool stale_edits(json_t *edits, void *vctx)
{
        struct stale_ctx *c = vctx;
        json_t *v, *a;
        size_t i, k;

        json_array_foreach (json_object_get(edits, "mounts"), i, v) {
                const char *hp = json_string_value(json_object_get(v, "hostPath"));
                see_version(c, hp);
                see_path(c, hp);
        }
        json_array_foreach (json_object_get(edits, "deviceNodes"), i, v) {
                const char *host = json_string_value(json_object_get(v, "hostPath"));
                json_t *maj = json_object_get(v, "major"), *min = json_object_get(v, "minor");
                struct stat st;
                if (host == NULL)
                        host = json_string_value(json_object_get(v, "path"));
                see_path(c, host);
                if (json_is_integer(maj) && json_is_integer(min) && c->node[0] == '\0' && c->nstat < STAT_MAX &&
                    stat(host, &st) == 0 &&
                    (!S_ISCHR(st.st_mode) || major(st.st_rdev) != json_integer_value(maj) ||
                     minor(st.st_rdev) != json_integer_value(min))) {
                        _cleanup_free_ char *p = gh_cdi_printable(host, 200);
                        snprintf(c->node, sizeof(c->node), "%s is %s%u:%u on this host, the spec says %lld:%lld", p,
                                 S_ISCHR(st.st_mode) ? "" : "not a character device, ", major(st.st_rdev),
                                 minor(st.st_rdev), (long long) json_integer_value(maj),
                                 (long long) json_integer_value(min));
                }
        }
        json_array_foreach (json_object_get(edits, "hooks"), i, v)
                json_array_foreach (json_object_get(v, "args"), k, a) {
                        const char *s = json_string_value(a), *eq;
                        see_version(c, s);
                        /* cdi-hook's --mount*=HOST::PATH (cdi generate --mounts=hook): HOST as a hostPath */
                        if (s != NULL && strncmp(s, "--mount", 7) == 0 && (eq = strchr(s, '=')) != NULL) {
                                const char *sep = strstr(eq + 1, "::");
                                char host[PATH_MAX];
                                if (sep != NULL && (size_t) (sep - eq - 1) < sizeof(host)) {
                                        snprintf(host, sizeof(host), "%.*s", (int) (sep - eq - 1), eq + 1);
                                        see_path(c, host);
                                }
                        }
                }
        return true;
}

char *gh_cdi_spec_stale(json_t *doc, const char *driver_version)
{
        struct stale_ctx c = { .version = driver_version };
        char *out = NULL;

        for_each_edits(doc, stale_edits, &c);
        if (c.named[0] != '\0') {
                if (asprintf(&out, "it names driver %s (%s), the loaded driver is %s", c.named, c.where,
                             driver_version) < 0)
                        out = NULL;
        } else if (c.node[0] != '\0') {
                out = strdup(c.node);
        } else if (c.nmissing > 0) {
                _cleanup_free_ char *p = gh_cdi_printable(c.missing, 200);
                char more[48] = "";
                if (c.nmissing > 1)
                        snprintf(more, sizeof(more), " (and %zu more missing host path%s)", c.nmissing - 1,
                                 c.nmissing > 2 ? "s" : "");
                if (asprintf(&out, "%s does not exist%s", p ? p : "a host path", more) < 0)
                        out = NULL;
        }
        return out;
}

struct root_ctx {
        char root[PATH_MAX];
};

/* Our hook's --root=DIR: the spec was written with gpu-cli --root=DIR. */
static bool find_root(json_t *edits, void *vctx)
{
        struct root_ctx *c = vctx;
        json_t *h, *a;
        size_t i, k;

        json_array_foreach (json_object_get(edits, "hooks"), i, h)
                json_array_foreach (json_object_get(h, "args"), k, a) {
                        const char *s = json_string_value(a);
                        if (s && strcmp(s, "cdi-hook") == 0)
                                break;
                        if (s && starts_with(s, "--root=") && strlen(s) < sizeof(c->root)) {
                                snprintf(c->root, sizeof(c->root), "%s", s + strlen("--root="));
                                return false;
                        }
                }
        return true;
}

char *gh_cdi_spec_fix(json_t *doc, const char *path, enum gh_cdi_writer writer)
{
        _cleanup_free_ char *p = gh_cdi_printable(path, PATH_MAX), *dir = NULL;
        struct root_ctx rc = { "" };
        char *out = NULL;
        int r = -1;

        if (p == NULL)
                return NULL;
        switch (writer) {
        case GH_CDI_WRITER_OURS:
        case GH_CDI_WRITER_OURS_MPS: {
                _cleanup_free_ char *root = NULL;
                const char *name =
                        json_string_value(json_object_get(json_array_get(json_object_get(doc, "devices"), 0), "name"));
                for_each_edits(doc, find_root, &rc);
                root = gh_cdi_printable(rc.root, PATH_MAX);
                if (writer == GH_CDI_WRITER_OURS_MPS)
                        r = asprintf(&out, "gpu-cli%s%s cdi generate --mps-group=%s --output=%s",
                                     rc.root[0] ? " --root=" : "", root ? root : "",
                                     name ? name + strlen(GH_CDI_MPS_PREFIX) : "NAME", p);
                else
                        r = asprintf(&out, "gpu-cli%s%s cdi generate --output=%s", rc.root[0] ? " --root=" : "",
                                     root ? root : "", p);
                break;
        }
        case GH_CDI_WRITER_NVIDIA_CTK:
                dir = strdup(p);
                if (dir == NULL)
                        return NULL;
                if (strrchr(dir, '/'))
                        *strrchr(dir, '/') = '\0';
                r = asprintf(&out,
                             "nvidia-ctk cdi generate%s --output=%s (or ours in its place: gpu-cli cdi generate "
                             "--output=%s/nvidia.com-gpu.json && rm %s)",
                             gh_ends_with(p, ".json") ? " --format=json" : "", p, dir[0] ? dir : "", p);
                break;
        case GH_CDI_WRITER_DEVICE_PLUGIN:
                r = asprintf(&out, "restart NVIDIA's device plugin on this node: it writes %s again when it starts", p);
                break;
        case GH_CDI_WRITER_DRA:
                r = asprintf(&out,
                             "restart NVIDIA's DRA kubelet plugin on this node: it writes its specs again (a claim's "
                             "spec, %s, goes when its claim is released)",
                             p);
                break;
        case GH_CDI_WRITER_UNKNOWN:
        default: r = asprintf(&out, "write it again with the program that wrote it, or remove %s", p); break;
        }
        return r < 0 ? NULL : out;
}
