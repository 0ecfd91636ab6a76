/* `gpu-cli setup containerd`: the CRI settings gpu-hook needs, written into containerd's own
 * config.toml (docs/engines.md, "Kubernetes").
 *
 * Why in place and not a drop-in: containerd 1.x merges an imported file by plugin, so a drop-in
 * with any [plugins."io.containerd.grpc.v1.cri"...] table replaces the node's whole CRI
 * configuration (sandbox image, cgroup driver, registry settings) with containerd's defaults; and a
 * config that names any runtime handler loses the built-in "runc" one, which the CRI plugin then
 * refuses to start without.  Both were measured with containerd 1.7.24 (`containerd config dump`).
 *
 * The editor is line based and exact: every line it adds ends with MARK, it adds whole lines only,
 * and --undo removes exactly the marked lines, which gives back the file as it was byte for byte.
 * A run first takes its own lines out and then adds them again, so a second run changes nothing.
 * Tables are found by their [header] lines (bare, "quoted" and 'literal' key parts); a table
 * written as dotted keys or an inline table is not seen, and containerd then refuses the file with
 * a duplicate key, which says where. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "setup.h"

#define MARK "# gpu-cli setup containerd"
#define MARK_CREATED MARK " (created the file)"
#define KEY_MAX 8

struct line {
        const char *s;
        size_t len;
};

struct doc {
        struct line *v;
        size_t n;
};

static void doc_free(struct doc *d)
{
        free(d->v);
        d->v = NULL;
        d->n = 0;
}

static int doc_split(const char *text, struct doc *d)
{
        size_t cap = 64;

        d->n = 0;
        d->v = malloc(cap * sizeof(*d->v));
        if (d->v == NULL)
                return -1;
        for (const char *s = text; s && *s;) {
                const char *e = strchrnul(s, '\n');
                if (d->n == cap) {
                        struct line *g = reallocarray(d->v, cap *= 2, sizeof(*d->v));
                        if (g == NULL)
                                return -1;
                        d->v = g;
                }
                d->v[d->n++] = (struct line) { s, (size_t) (e - s) + (*e ? 1 : 0) };
                s = *e ? e + 1 : e;
        }
        return 0;
}

/* A line of ours ends (before its newline) with MARK or MARK_CREATED. */
static bool marked(const struct line *l, bool *created)
{
        size_t n = l->len;
        while (n > 0 && (l->s[n - 1] == '\n' || l->s[n - 1] == ' ' || l->s[n - 1] == '\t' || l->s[n - 1] == '\r'))
                n--;
        if (n >= strlen(MARK_CREATED) &&
            memcmp(l->s + n - strlen(MARK_CREATED), MARK_CREATED, strlen(MARK_CREATED)) == 0) {
                if (created)
                        *created = true;
                return true;
        }
        return n >= strlen(MARK) && memcmp(l->s + n - strlen(MARK), MARK, strlen(MARK)) == 0;
}

/* The header's key as its parts joined by '\x1f' ("plugins\x1fio.containerd.grpc.v1.cri"), or
 * NULL when the line is no [table] or [[array]] header.  *indent: its leading blanks. */
static char *header_key(const struct line *l, size_t *indent)
{
        _cleanup_free_ char *k = calloc(l->len + 1, 1);
        const char *s = l->s, *end = l->s + l->len;
        size_t n = 0;

        while (s < end && (*s == ' ' || *s == '\t'))
                s++;
        *indent = (size_t) (s - l->s);
        if (k == NULL || s == end || *s != '[')
                return NULL;
        s++;
        if (s < end && *s == '[')
                s++;
        for (;;) {
                while (s < end && (*s == ' ' || *s == '\t'))
                        s++;
                if (s < end && (*s == '"' || *s == '\'')) {
                        char q = *s++;
                        while (s < end && *s != q && *s != '\n') {
                                if (q == '"' && *s == '\\' && s + 1 < end)
                                        s++;
                                k[n++] = *s++;
                        }
                        if (s == end || *s != q)
                                return NULL;
                        s++;
                } else {
                        const char *b = s;
                        while (s < end && (strchr("-_", *s) || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
                                           (*s >= '0' && *s <= '9')))
                                k[n++] = *s++;
                        if (s == b)
                                return NULL;
                }
                while (s < end && (*s == ' ' || *s == '\t'))
                        s++;
                if (s < end && *s == '.') {
                        k[n++] = '\x1f';
                        s++;
                        continue;
                }
                return s < end && *s == ']' ? steal_pointer(&k) : NULL;
        }
}

/* "key = value" in a table: the key (bare or quoted, one part) and the value's text, trimmed. */
static bool key_value(const struct line *l, char *key, size_t ksize, const char **val, size_t *vlen)
{
        const char *s = l->s, *end = l->s + l->len, *b;
        size_t n = 0;

        while (s < end && (*s == ' ' || *s == '\t'))
                s++;
        if (s < end && (*s == '"' || *s == '\'')) {
                char q = *s++;
                b = s;
                while (s < end && *s != q)
                        s++;
                if (s == end)
                        return false;
                n = (size_t) (s - b);
                s++;
        } else {
                b = s;
                while (s < end && *s != '=' && *s != ' ' && *s != '\t' && *s != '#' && *s != '\n' && *s != '[')
                        s++;
                n = (size_t) (s - b);
        }
        while (s < end && (*s == ' ' || *s == '\t'))
                s++;
        if (n == 0 || n >= ksize || s == end || *s != '=')
                return false;
        memcpy(key, b, n);
        key[n] = '\0';
        s++;
        while (s < end && (*s == ' ' || *s == '\t'))
                s++;
        *val = s;
        while (end > s && strchr(" \t\r\n", end[-1]))
                end--;
        *vlen = (size_t) (end - s);
        return true;
}

/* Equal TOML value texts, blanks outside strings ignored: ["a", "b"] and ["a","b"] are one value. */
static bool same_value(const char *a, size_t alen, const char *b)
{
        size_t i = 0, j = 0, blen = strlen(b);
        char qa = 0, qb = 0;

        for (;;) {
                while (!qa && i < alen && (a[i] == ' ' || a[i] == '\t'))
                        i++;
                while (!qb && j < blen && (b[j] == ' ' || b[j] == '\t'))
                        j++;
                if (i == alen || j == blen)
                        return i == alen && j == blen;
                if (a[i] != b[j])
                        return false;
                if (a[i] == '"' || a[i] == '\'')
                        qa = qa == a[i] ? 0 : qa ? qa : a[i];
                qb = qa;
                i++, j++;
        }
}

struct want_key {
        const char *key, *value;
};

struct table {
        const char *parts[KEY_MAX]; /* relative to the CRI plugin's table */
        struct want_key keys[3];
        bool ours_only; /* a table of its own: one that is already there, not from us, is refused */
};

static char *table_key(const char *cri, const char *const *parts)
{
        char *k = NULL;
        size_t len = strlen("plugins") + 1 + strlen(cri) + 1;

        for (size_t i = 0; parts[i]; i++)
                len += strlen(parts[i]) + 1;
        k = malloc(len);
        if (k == NULL)
                return NULL;
        strcpy(k, "plugins\x1f");
        strcat(k, cri);
        for (size_t i = 0; parts[i]; i++) {
                strcat(k, "\x1f");
                strcat(k, parts[i]);
        }
        return k;
}

/* The header as TOML: plugins."io.containerd.grpc.v1.cri".containerd.runtimes.gpu */
static char *table_header(const char *cri, const char *const *parts)
{
        char *s = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&s, &size);

        if (f == NULL)
                return NULL;
        fprintf(f, "[plugins.\"%s\"", cri);
        for (size_t i = 0; parts[i]; i++)
                fprintf(f, ".%s", parts[i]);
        fputc(']', f);
        return fclose(f) == 0 ? s : (free(s), NULL);
}

/* Where a table is in the document: its header's line, or -1. */
static ssize_t find_table(const struct doc *d, const char *key, size_t *indent)
{
        for (size_t i = 0; i < d->n; i++) {
                _cleanup_free_ char *k = header_key(&d->v[i], indent);
                if (k != NULL && strcmp(k, key) == 0)
                        return (ssize_t) i;
        }
        return -1;
}

/* A key of the table whose header is at line h: its line, or -1. */
static ssize_t find_key(const struct doc *d, size_t h, const char *key, const char **val, size_t *vlen)
{
        char k[128];
        size_t ind;

        for (size_t i = h + 1; i < d->n; i++) {
                _cleanup_free_ char *hk = header_key(&d->v[i], &ind);
                if (hk != NULL)
                        break;
                if (key_value(&d->v[i], k, sizeof(k), val, vlen) && strcmp(k, key) == 0)
                        return (ssize_t) i;
        }
        return -1;
}

/* Any [..runtimes.NAME] table under the CRI plugin's containerd table. */
static bool has_runtimes(const struct doc *d, const char *cri)
{
        _cleanup_free_ char *prefix = table_key(cri, (const char *const[]) { "containerd", "runtimes", NULL });
        size_t ind;

        for (size_t i = 0; prefix && i < d->n; i++) {
                _cleanup_free_ char *k = header_key(&d->v[i], &ind);
                if (k != NULL && strncmp(k, prefix, strlen(prefix)) == 0 && k[strlen(prefix)] == '\x1f')
                        return true;
        }
        return false;
}

/* version = N before the first table; 0 when there is none. */
static int config_version(const struct doc *d)
{
        char k[32];
        const char *v;
        size_t vlen, ind;

        for (size_t i = 0; i < d->n; i++) {
                _cleanup_free_ char *hk = header_key(&d->v[i], &ind);
                if (hk != NULL)
                        return 0;
                if (key_value(&d->v[i], k, sizeof(k), &v, &vlen) && strcmp(k, "version") == 0)
                        return vlen == 1 && v[0] >= '1' && v[0] <= '9' ? v[0] - '0' : -1;
        }
        return 0;
}

static bool blank(const char *s) { return s == NULL || strspn(s, " \t\r\n") == strlen(s); }

/* TOML basic string of a path (only printable characters are accepted). */
static char *toml_string(const char *s)
{
        char *q = malloc(2 * strlen(s) + 3), *p = q;

        if (q == NULL)
                return NULL;
        *p++ = '"';
        for (; *s; s++) {
                if ((unsigned char) *s < 0x20 || *s == 0x7f) {
                        free(q);
                        errno = EINVAL;
                        return NULL;
                }
                if (*s == '"' || *s == '\\')
                        *p++ = '\\';
                *p++ = *s;
        }
        *p++ = '"';
        *p = '\0';
        return q;
}

/* Inserts are collected per line: after[i] is the text that goes after line i (i == n: the end). */
struct edits {
        char **after;
        size_t n;
};

static void edits_free(struct edits *e)
{
        for (size_t i = 0; e->after && i <= e->n; i++)
                free(e->after[i]);
        free(e->after);
}

static int add_after(struct edits *e, size_t i, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int add_after(struct edits *e, size_t i, const char *fmt, ...)
{
        _cleanup_free_ char *s = NULL;
        char *joined = NULL;
        va_list ap;

        va_start(ap, fmt);
        int r = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (r < 0 || asprintf(&joined, "%s%s", e->after[i] ? e->after[i] : "", s) < 0)
                return -1;
        free(e->after[i]);
        e->after[i] = joined;
        return 0;
}

/* base (the file without our lines) with them, into *out. */
static int add_ours(const char *path, const char *base, const struct doc *d, const char *runtime_path, char **out,
                    gh_error_t *err)
{
        _cleanup_free_ char *binary = toml_string(runtime_path);
        _cleanup_(edits_free) struct edits e = { calloc(d->n + 1, sizeof(char *)), d->n };
        int version = blank(base) ? 2 : config_version(d);
        size_t size = 0, blen = strlen(base);
        bool sep = false, need_runc;
        char *res = NULL;
        const char *cri;
        FILE *f;

        if (version == 0)
                return gh_err(
                        err, 0,
                        "%s has no 'version = ' line (a version 1 config): add version = 2 (containerd 1.x, whose "
                        "tables this uses) or migrate it to version 3 (containerd 2.x)",
                        path);
        if (version != 2 && version != 3)
                return gh_err(err, 0, "%s: config version %d is not one gpu-cli knows (2: containerd 1.6/1.7, 3: 2.x)",
                              path, version);
        if (binary == NULL)
                return gh_err(err, EINVAL, "--runtime-path=%s", runtime_path);
        if (e.after == NULL)
                return gh_err(err, ENOMEM, "editing %s", path);
        cri = version == 2 ? "io.containerd.grpc.v1.cri" : "io.containerd.cri.v1.runtime";
        const struct table tables[] = {
                { { NULL },
                  { { "enable_cdi", "true" }, { "cdi_spec_dirs", "[\"/etc/cdi\", \"/var/run/cdi\"]" } },
                  false },
                { { "containerd", "runtimes", "runc", NULL },
                  { { "runtime_type", "\"io.containerd.runc.v2\"" } },
                  true },
                { { "containerd", "runtimes", "gpu", NULL },
                  { { "runtime_type", "\"io.containerd.runc.v2\"" },
                    { "pod_annotations", "[\"org.gpu-hook.mps-group\"]" } },
                  true },
                { { "containerd", "runtimes", "gpu", "options", NULL }, { { "BinaryName", binary } }, true },
        };
        /* containerd's built-in runc handler goes away once the file names any runtime: when the file
         * names none, ours would take it away, so runc is written out as containerd's default is. */
        need_runc = !has_runtimes(d, cri);
        if (need_runc) {
                _cleanup_free_ char *ck = table_key(cri, (const char *const[]) { "containerd", NULL });
                const char *v;
                size_t vlen, ind;
                ssize_t h = ck ? find_table(d, ck, &ind) : -1;
                if (h >= 0 && find_key(d, (size_t) h, "default_runtime_name", &v, &vlen) >= 0 &&
                    !same_value(v, vlen, "\"runc\""))
                        need_runc = false; /* another default handler: the file's own business */
        }
        if (blank(base) && add_after(&e, d->n, "version = 2  " MARK_CREATED "\n") < 0)
                return gh_err(err, ENOMEM, "editing %s", path);
        for (size_t t = 0; t < GH_ARRAY_SIZE(tables); t++) {
                const struct table *tb = &tables[t];
                _cleanup_free_ char *key = table_key(cri, tb->parts), *hdr = table_header(cri, tb->parts);
                size_t indent = 0;
                ssize_t h;

                if (t == 1 && !need_runc)
                        continue;
                if (key == NULL || hdr == NULL)
                        return gh_err(err, ENOMEM, "editing %s", path);
                h = find_table(d, key, &indent);
                if (h >= 0 && tb->ours_only)
                        return gh_err(err, 0,
                                      "%s already has %s (not written by gpu-cli); remove it or run setup --undo first",
                                      path, hdr);
                if (h < 0) {
                        /* a new table goes at the end, after a line of ours that ends the file's last line */
                        if ((!sep && !blank(base) &&
                             add_after(&e, d->n, "%s" MARK "\n", base[blen - 1] == '\n' ? "" : "\n") < 0) ||
                            add_after(&e, d->n, "%s  " MARK "\n", hdr) < 0)
                                return gh_err(err, ENOMEM, "editing %s", path);
                        sep = true;
                        for (size_t k = 0; k < GH_ARRAY_SIZE(tb->keys) && tb->keys[k].key; k++)
                                if (add_after(&e, d->n, "  %s = %s  " MARK "\n", tb->keys[k].key, tb->keys[k].value) <
                                    0)
                                        return gh_err(err, ENOMEM, "editing %s", path);
                        continue;
                }
                for (size_t k = 0; k < GH_ARRAY_SIZE(tb->keys) && tb->keys[k].key; k++) {
                        const char *v;
                        size_t vlen;
                        if (find_key(d, (size_t) h, tb->keys[k].key, &v, &vlen) >= 0) {
                                if (same_value(v, vlen, tb->keys[k].value))
                                        continue;
                                return gh_err(err, 0, "%s: %s has %s = %.*s; gpu-hook needs %s: change it by hand",
                                              path, hdr, tb->keys[k].key, (int) vlen, v, tb->keys[k].value);
                        }
                        if (add_after(&e, (size_t) h, "%*s  %s = %s  " MARK "\n", (int) indent, "", tb->keys[k].key,
                                      tb->keys[k].value) < 0)
                                return gh_err(err, ENOMEM, "editing %s", path);
                }
        }
        f = open_memstream(&res, &size);
        if (f == NULL)
                return gh_err(err, ENOMEM, "editing %s", path);
        for (size_t i = 0; i < d->n; i++) {
                fwrite(d->v[i].s, 1, d->v[i].len, f);
                if (e.after[i] != NULL)
                        fputs(e.after[i], f);
        }
        if (e.after[d->n] != NULL)
                fputs(e.after[d->n], f);
        if (fclose(f) != 0) {
                free(res);
                return gh_err(err, ENOMEM, "editing %s", path);
        }
        *out = res;
        return 0;
}

int setup_containerd_edit(const char *path, const char *old, const char *runtime_path, bool undo, char **out,
                          gh_error_t *err)
{
        _cleanup_(doc_free) struct doc d = { 0 }, b = { 0 };
        _cleanup_free_ char *base = NULL;
        bool created = false, had_marks = false;
        size_t len = 0;

        *out = NULL;
        if (doc_split(old ? old : "", &d) < 0 || (base = malloc(old ? strlen(old) + 1 : 1)) == NULL)
                return gh_err(err, ENOMEM, "editing %s", path);
        for (size_t i = 0; i < d.n; i++) {
                if (marked(&d.v[i], &created)) {
                        had_marks = true;
                        continue;
                }
                memcpy(base + len, d.v[i].s, d.v[i].len);
                len += d.v[i].len;
        }
        base[len] = '\0';
        if (undo) {
                if (old == NULL || (had_marks && created && blank(base)))
                        return 0; /* no file, or one that setup created and nobody added to: none */
                *out = had_marks ? steal_pointer(&base) : strdup(old);
                return *out ? 0 : gh_err(err, ENOMEM, "editing %s", path);
        }
        if (doc_split(base, &b) < 0)
                return gh_err(err, ENOMEM, "editing %s", path);
        return add_ours(path, base, &b, runtime_path, out, err);
}
