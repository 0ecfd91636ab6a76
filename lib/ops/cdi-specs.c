/* Reading every CDI spec on the host (cdi-specs.h says what and why). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cdi-specs.h"
#include "cdi.h"
#include "cleanup.h"
#include "oci.h"
#include "readfile.h"
#include "strutil.h"
#include "yaml-read.h"

const char *gh_cdi_writer_name(enum gh_cdi_writer w)
{
        switch (w) {
        case GH_CDI_WRITER_OURS: return "gpu-hook";
        case GH_CDI_WRITER_OURS_MPS: return "gpu-hook-mps";
        case GH_CDI_WRITER_NVIDIA_CTK: return "nvidia-ctk";
        case GH_CDI_WRITER_DEVICE_PLUGIN: return "device-plugin";
        case GH_CDI_WRITER_DRA: return "dra-driver";
        case GH_CDI_WRITER_UNKNOWN:
        default: return "unknown";
        }
}

char *gh_cdi_printable(const char *s, size_t max)
{
        size_t n = strlen(s), o = 0;
        char *out = malloc((n < max ? n : max) * 4 + 4);

        if (out == NULL)
                return NULL;
        for (size_t i = 0; i < n && o < max; i++) {
                unsigned char c = (unsigned char) s[i];
                if (c >= 0x20 && c < 0x7f)
                        out[o++] = (char) c;
                else
                        o += (size_t) sprintf(out + o, "\\x%02x", c);
        }
        if (o >= max && strlen(s) > max)
                memcpy(out + o, "...", 3), o += 3;
        out[o] = '\0';
        return out;
}

/* ---------------------------------------------------------------------------------------------
 * Shape: what Go's CDI package requires before it offers a spec's devices. */

struct where {
        char buf[256];
};

static int bad(gh_error_t *err, const char *name, const struct where *w, const char *what)
{
        return gh_err(err, 0, "%s is not a valid CDI spec: %s%s%s", name, w->buf, w->buf[0] ? ": " : "", what);
}

static void at(struct where *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void at(struct where *w, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->buf, sizeof(w->buf), fmt, ap);
        va_end(ap);
}

static int check_strings(json_t *a, const char *name, const char *path, gh_error_t *err)
{
        struct where w;
        json_t *v;
        size_t i;

        if (a == NULL)
                return 0;
        if (!json_is_array(a))
                return at(&w, "%s", path), bad(err, name, &w, "not a list");
        json_array_foreach (a, i, v)
                if (!json_is_string(v))
                        return at(&w, "%s[%zu]", path, i), bad(err, name, &w, "not a string");
        return 0;
}

/* Each listed field, when present, has the type given: s string, i integer, a list of strings. */
static int check_fields(json_t *o, const char *name, const char *path, const char *const fields[][2], gh_error_t *err)
{
        struct where w;

        for (size_t i = 0; fields[i][0] != NULL; i++) {
                json_t *v = json_object_get(o, fields[i][0]);
                char t = fields[i][1][0];
                bool required = fields[i][1][1] == '!';
                at(&w, "%s.%s", path, fields[i][0]);
                if (v == NULL) {
                        if (required)
                                return bad(err, name, &w, "missing");
                        continue;
                }
                if (t == 's' && !json_is_string(v))
                        return bad(err, name, &w, "not a string");
                if (t == 'i' && !json_is_integer(v))
                        return bad(err, name, &w, "not an integer");
                if (t == 'a' && check_strings(v, name, w.buf, err) < 0)
                        return -1;
        }
        return 0;
}

static int check_list(json_t *edits, const char *key, const char *name, const char *path, const char *const fields[][2],
                      gh_error_t *err)
{
        json_t *a = json_object_get(edits, key), *v;
        struct where w;
        size_t i;

        if (a == NULL)
                return 0;
        at(&w, "%s.%s", path, key);
        if (!json_is_array(a))
                return bad(err, name, &w, "not a list");
        json_array_foreach (a, i, v) {
                char p[256];
                snprintf(p, sizeof(p), "%s.%s[%zu]", path, key, i);
                if (!json_is_object(v))
                        return at(&w, "%s", p), bad(err, name, &w, "not a mapping");
                if (check_fields(v, name, p, fields, err) < 0)
                        return -1;
        }
        return 0;
}

static int check_edits(json_t *e, const char *name, const char *path, gh_error_t *err)
{
        static const char *const nodes[][2] = { { "path", "s!" },       { "hostPath", "s" }, { "type", "s" },
                                                { "major", "i" },       { "minor", "i" },    { "fileMode", "i" },
                                                { "permissions", "s" }, { "uid", "i" },      { "gid", "i" },
                                                { NULL, NULL } };
        static const char *const mounts[][2] = {
                { "hostPath", "s!" }, { "containerPath", "s!" }, { "options", "a" }, { "type", "s" }, { NULL, NULL }
        };
        static const char *const hooks[][2] = { { "hookName", "s!" }, { "path", "s!" },   { "args", "a" },
                                                { "env", "a" },       { "timeout", "i" }, { NULL, NULL } };
        struct where w;
        char p[256];

        if (!json_is_object(e))
                return at(&w, "%s", path), bad(err, name, &w, "not a mapping");
        snprintf(p, sizeof(p), "%s.env", path);
        if (check_strings(json_object_get(e, "env"), name, p, err) < 0 ||
            check_list(e, "deviceNodes", name, path, nodes, err) < 0 ||
            check_list(e, "mounts", name, path, mounts, err) < 0 || check_list(e, "hooks", name, path, hooks, err) < 0)
                return -1;
        return 0;
}

/* CDI's device names: letters, digits, '_', '-', '.', ':', starting and ending with a letter or digit. */
static bool device_name_ok(const char *s)
{
        size_t n = strlen(s);
        const char *alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

        if (n == 0 || n > 255 || !strchr(alnum, s[0]) || !strchr(alnum, s[n - 1]))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!strchr(alnum, s[i]) && !strchr("_-.:", s[i]))
                        return false;
        return true;
}

static int cmp_device_name(const void *a, const void *b)
{
        return strcmp(*(const char *const *) a, *(const char *const *) b);
}

static int check_spec(json_t *doc, const char *name, gh_error_t *err)
{
        _cleanup_error_ gh_error_t kerr = NULL;
        _cleanup_free_ const char **names = NULL;
        json_t *devices, *d;
        const char *kind, *slash;
        struct where w = { "" };
        char vendor[256];
        size_t i;

        if (!json_is_object(doc))
                return bad(err, name, &w, "not a mapping");
        if (!json_is_string(json_object_get(doc, "cdiVersion")))
                return at(&w, "cdiVersion"), bad(err, name, &w, "missing or not a string");
        kind = json_string_value(json_object_get(doc, "kind"));
        if (kind == NULL)
                return at(&w, "kind"), bad(err, name, &w, "missing or not a string");
        slash = strchr(kind, '/');
        if (slash == NULL || (size_t) (slash - kind) >= sizeof(vendor))
                return at(&w, "kind"), bad(err, name, &w, "not VENDOR/CLASS");
        snprintf(vendor, sizeof(vendor), "%.*s", (int) (slash - kind), kind);
        if (gh_cdi_check_kind(vendor, slash + 1, &kerr) < 0)
                return at(&w, "kind"), bad(err, name, &w, kerr->msg);
        if (json_object_get(doc, "containerEdits") &&
            check_edits(json_object_get(doc, "containerEdits"), name, "containerEdits", err) < 0)
                return -1;
        devices = json_object_get(doc, "devices");
        if (!json_is_array(devices) || json_array_size(devices) == 0)
                return at(&w, "devices"), bad(err, name, &w, "missing or empty");
        names = calloc(json_array_size(devices), sizeof(*names));
        if (names == NULL)
                return gh_err(err, ENOMEM, "reading %s", name);
        json_array_foreach (devices, i, d) {
                char p[64];
                const char *dn = json_string_value(json_object_get(d, "name"));
                json_t *e = json_object_get(d, "containerEdits");
                snprintf(p, sizeof(p), "devices[%zu]", i);
                if (!json_is_object(d))
                        return at(&w, "%s", p), bad(err, name, &w, "not a mapping");
                if (dn == NULL)
                        return at(&w, "%s.name", p), bad(err, name, &w, "missing or not a string");
                if (!device_name_ok(dn))
                        return at(&w, "%s.name", p),
                               bad(err, name, &w,
                                   "not a CDI device name (letters, digits, _-.:, a letter or digit at both ends)");
                snprintf(p + strlen(p), sizeof(p) - strlen(p), ".containerEdits");
                if (e == NULL || (json_is_object(e) && json_object_size(e) == 0))
                        return at(&w, "%s", p), bad(err, name, &w, "missing or empty");
                if (check_edits(e, name, p, err) < 0)
                        return -1;
                names[i] = dn;
        }
        qsort(names, json_array_size(devices), sizeof(*names), cmp_device_name);
        for (i = 1; i < json_array_size(devices); i++)
                if (strcmp(names[i - 1], names[i]) == 0) {
                        _cleanup_free_ char *pn = gh_cdi_printable(names[i], 80);
                        char msg[160];
                        snprintf(msg, sizeof(msg), "device %s is defined twice", pn ? pn : "?");
                        at(&w, "devices");
                        return bad(err, name, &w, msg);
                }
        return 0;
}

int gh_cdi_spec_parse(const char *buf, size_t len, const char *name, json_t **doc, gh_error_t *err)
{
        json_t *j = gh_ends_with(name, ".yaml") || gh_ends_with(name, ".yml") ? gh_yaml_parse(buf, len, name, err)
                                                                              : gh_json_parse(buf, len, name, err);

        *doc = NULL;
        if (j == NULL)
                return -1;
        if (check_spec(j, name, err) < 0) {
                json_decref(j);
                return -1;
        }
        *doc = j;
        return 0;
}

int gh_cdi_spec_read(const char *path, json_t **doc, gh_error_t *err)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        size_t len;

        *doc = NULL;
        if (fd < 0)
                return gh_err(err, errno, "%s", path);
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return gh_err(err, 0, "%s is not a regular file", path);
        if (gh_read_bounded(fd, GH_CDI_SPEC_MAX, &buf, &len, path, err) < 0)
                return -1;
        return gh_cdi_spec_parse(buf, len, path, doc, err);
}

/* ---------------------------------------------------------------------------------------------
 * The set of specs, resolved. */

static int add_spec(struct gh_cdi_set *set, const char *path, int priority, const char *driver_version, bool ignored,
                    gh_error_t *err)
{
        _cleanup_error_ gh_error_t rerr = NULL;
        struct gh_cdi_spec *grown = realloc(set->specs, (set->nspecs + 1) * sizeof(*grown)), *s;

        if (grown == NULL)
                return gh_err(err, ENOMEM, "reading CDI specs");
        set->specs = grown;
        s = &set->specs[set->nspecs++];
        memset(s, 0, sizeof(*s));
        s->path = strdup(path);
        s->priority = priority;
        if (s->path == NULL)
                return gh_err(err, ENOMEM, "reading CDI specs");
        if (ignored) {
                _cleanup_free_ char *p = gh_cdi_printable(path, PATH_MAX);
                if (asprintf(&s->error,
                             "%s is not read by any runtime: CDI reads .json and .yaml files only; "
                             "rename it to .yaml",
                             p ? p : "?") < 0)
                        return s->error = NULL, gh_err(err, ENOMEM, "reading CDI specs");
                return 0;
        }
        if (gh_cdi_spec_read(path, &s->doc, &rerr) < 0) {
                s->error = gh_cdi_printable(rerr && rerr->msg ? rerr->msg : "unreadable", 400);
                return s->error ? 0 : gh_err(err, ENOMEM, "reading CDI specs");
        }
        s->writer = gh_cdi_spec_writer(s->doc, path);
        s->stale = gh_cdi_spec_stale(s->doc, driver_version);
        s->hook = gh_cdi_spec_hook_broken(s->doc);
        if (s->stale != NULL)
                s->fix = gh_cdi_spec_fix(s->doc, path, s->writer);
        s->ndevices = json_array_size(json_object_get(s->doc, "devices"));
        return 0;
}

static int sort_names(const struct dirent **a, const struct dirent **b) { return strcmp((*a)->d_name, (*b)->d_name); }

static int spec_file_name(const struct dirent *d)
{
        return gh_ends_with(d->d_name, ".json") || gh_ends_with(d->d_name, ".yaml") || gh_ends_with(d->d_name, ".yml");
}

static int load_dir(struct gh_cdi_set *set, const char *dir, int priority, const char *driver_version, gh_error_t *err)
{
        struct dirent **ents = NULL;
        int n = scandir(dir, &ents, spec_file_name, sort_names), r = 0;

        for (int i = 0; i < n; i++) {
                char path[PATH_MAX];
                struct stat st;
                if (r == 0 && snprintf(path, sizeof(path), "%s/%s", dir, ents[i]->d_name) < (int) sizeof(path) &&
                    !(lstat(path, &st) == 0 && S_ISDIR(st.st_mode)))
                        r = add_spec(set, path, priority, driver_version, gh_ends_with(path, ".yml"), err);
                free(ents[i]);
        }
        free(ents);
        return r;
}

struct entry {
        const char *name;
        size_t dev;
};

static int cmp_entry(const void *a, const void *b)
{
        const struct entry *x = a, *y = b;
        int c = strcmp(x->name, y->name);
        return c ? c : (x->dev > y->dev) - (x->dev < y->dev);
}

static int resolve(struct gh_cdi_set *set, gh_error_t *err)
{
        _cleanup_free_ struct entry *e = NULL;
        size_t n = 0;

        for (size_t s = 0; s < set->nspecs; s++)
                n += set->specs[s].doc ? set->specs[s].ndevices : 0;
        set->devices = calloc(n ? n : 1, sizeof(*set->devices));
        e = calloc(n ? n : 1, sizeof(*e));
        if (set->devices == NULL || e == NULL)
                return gh_err(err, ENOMEM, "reading CDI specs");
        for (size_t s = 0; s < set->nspecs; s++) {
                const struct gh_cdi_spec *sp = &set->specs[s];
                json_t *d;
                size_t i;
                if (sp->doc == NULL)
                        continue;
                json_array_foreach (json_object_get(sp->doc, "devices"), i, d) {
                        struct gh_cdi_device *dv = &set->devices[set->ndevices];
                        if (asprintf(&dv->name, "%s=%s", json_string_value(json_object_get(sp->doc, "kind")),
                                     json_string_value(json_object_get(d, "name"))) < 0)
                                return dv->name = NULL, gh_err(err, ENOMEM, "reading CDI specs");
                        dv->spec = s;
                        e[set->ndevices] = (struct entry) { dv->name, set->ndevices };
                        set->ndevices++;
                }
        }
        qsort(e, set->ndevices, sizeof(*e), cmp_entry);
        for (size_t i = 0; i < set->ndevices;) {
                size_t j = i, winner = i;
                bool conflict = false;
                while (j < set->ndevices && strcmp(e[j].name, e[i].name) == 0)
                        j++;
                /* in load order, so priorities do not decrease: the last of the top priority wins, unless
                 * two share a priority (Go's CDI cache then drops the device) */
                for (size_t k = i; k < j; k++) {
                        if (k > i && set->specs[set->devices[e[k].dev].spec].priority ==
                                             set->specs[set->devices[e[k - 1].dev].spec].priority)
                                conflict = true;
                        winner = k;
                }
                for (size_t k = i; k < j; k++) {
                        struct gh_cdi_device *dv = &set->devices[e[k].dev];
                        int prio = set->specs[dv->spec].priority;
                        size_t twin = k, conflicted = k;
                        for (size_t m = i; m < j; m++) {
                                int pm = set->specs[set->devices[e[m].dev].spec].priority;
                                if (m != k && pm == prio)
                                        twin = m;
                                if (m > i && pm == set->specs[set->devices[e[m - 1].dev].spec].priority)
                                        conflicted = m;
                        }
                        if (twin != k) {
                                dv->state = GH_CDI_DEVICE_CONFLICT;
                                dv->other = set->devices[e[twin].dev].spec;
                        } else if (k != winner) {
                                dv->state = GH_CDI_DEVICE_OVERRIDDEN;
                                dv->other = set->devices[e[winner].dev].spec;
                        } else if (conflict) { /* alone at the top, but Go's cache drops a device once conflicted */
                                dv->state = GH_CDI_DEVICE_CONFLICT;
                                dv->other = set->devices[e[conflicted].dev].spec;
                        }
                }
                i = j;
        }
        return 0;
}

int gh_cdi_set_load(const char *const *dirs, const char *const *files, const char *driver_version,
                    struct gh_cdi_set *set, gh_error_t *err)
{
        memset(set, 0, sizeof(*set));
        if (files != NULL) {
                for (int i = 0; files[i] != NULL; i++)
                        if (add_spec(set, files[i], i, driver_version, false, err) < 0)
                                return -1;
        } else {
                for (int i = 0; dirs[i] != NULL; i++)
                        if (load_dir(set, dirs[i], i, driver_version, err) < 0)
                                return -1;
        }
        return resolve(set, err);
}

void gh_cdi_set_conflicts(const struct gh_cdi_set *set, gh_cdi_conflict_fn fn, void *ctx)
{
        for (size_t i = 0; i < set->ndevices; i++) {
                const struct gh_cdi_device *d = &set->devices[i];
                size_t count = 0;
                bool seen = false;
                if (d->state != GH_CDI_DEVICE_CONFLICT || d->spec > d->other)
                        continue;
                for (size_t k = 0; k < set->ndevices; k++) {
                        const struct gh_cdi_device *e = &set->devices[k];
                        if (e->state == GH_CDI_DEVICE_CONFLICT && e->spec == d->spec && e->other == d->other) {
                                if (k < i)
                                        seen = true;
                                count++;
                        }
                }
                if (!seen)
                        fn(set, d->spec, d->other, d->name, count, ctx);
        }
}

void gh_cdi_set_free(struct gh_cdi_set *set)
{
        for (size_t i = 0; i < set->nspecs; i++) {
                free(set->specs[i].path);
                free(set->specs[i].error);
                free(set->specs[i].stale);
                free(set->specs[i].hook);
                free(set->specs[i].fix);
                json_decref(set->specs[i].doc);
        }
        for (size_t i = 0; i < set->ndevices; i++)
                free(set->devices[i].name);
        free(set->specs);
        free(set->devices);
        memset(set, 0, sizeof(*set));
}
