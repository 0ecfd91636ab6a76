#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "ldcache.h"
#include "ldconf.h"
#include "log.h"
#include "rootfs.h"

/* The library types a directory line may name, with the cache flag each stands for. */
static const struct {
        const char *name;
        int flag;
} lib_types[] = {
        { "libc4", GH_LDCACHE_FLAG_LIBC4 },
        { "libc5", GH_LDCACHE_FLAG_ELF_LIBC5 },
        { "libc6", GH_LDCACHE_FLAG_ELF_LIBC6 },
        { "glibc2", GH_LDCACHE_FLAG_ELF_LIBC6 },
};

static int add_item(struct gh_ldconf *c, enum gh_ldconf_kind kind, const char *text, size_t len, int flag,
                    unsigned line, gh_error_t *err)
{
        if (c->n >= GH_LDCONF_MAX_DIRS)
                return gh_err(err, E2BIG, "more than %u directories and includes", GH_LDCONF_MAX_DIRS);
        if (c->n == c->cap) {
                size_t cap = c->cap ? c->cap * 2 : 16;
                struct gh_ldconf_item *v = reallocarray(c->v, cap, sizeof(*v));
                if (v == NULL)
                        return gh_err(err, ENOMEM, "reading ld.so.conf");
                c->v = v;
                c->cap = cap;
        }
        c->v[c->n].text = strndup(text, len);
        if (c->v[c->n].text == NULL)
                return gh_err(err, ENOMEM, "reading ld.so.conf");
        c->v[c->n].kind = kind;
        c->v[c->n].flag = flag;
        c->v[c->n].line = line;
        c->n++;
        return 0;
}

/* A directory line: "PATH" or "PATH=TYPE".  The type is split off first, then trailing white
 * space and then trailing slashes are removed from the path (in that order, as ldconfig does). */
static int parse_dir(struct gh_ldconf *c, const char *s, unsigned line, gh_error_t *err)
{
        const char *eq = strchr(s, '=');
        size_t len = eq ? (size_t) (eq - s) : strlen(s);
        int flag = GH_LDCONF_FLAG_ANY;

        if (eq != NULL)
                for (size_t i = 0; i < GH_ARRAY_SIZE(lib_types); i++)
                        if (strcmp(eq + 1, lib_types[i].name) == 0)
                                flag = lib_types[i].flag;
        while (len > 0 && isspace((unsigned char) s[len - 1]))
                len--;
        while (len > 0 && s[len - 1] == '/')
                len--;
        if (len == 0)
                return 0;
        return add_item(c, GH_LDCONF_DIR, s, len, flag, line, err);
}

static int parse_line(struct gh_ldconf *c, char *s, unsigned line, gh_error_t *err)
{
        char *hash = strchr(s, '#');

        if (hash != NULL)
                *hash = '\0';
        while (isspace((unsigned char) *s))
                s++;
        if (*s == '\0')
                return 0;
        if (strncmp(s, "include", 7) == 0 && (s[7] == ' ' || s[7] == '\t')) {
                /* Words separated by single blanks; empty words (two blanks) are skipped. */
                for (char *w = s + 8, *end; w != NULL; w = end ? end + 1 : NULL) {
                        end = strpbrk(w, " \t");
                        size_t len = end ? (size_t) (end - w) : strlen(w);
                        if (len > 0 && add_item(c, GH_LDCONF_INCLUDE, w, len, 0, line, err) < 0)
                                return -1;
                }
                return 0;
        }
        if (strncasecmp(s, "hwcap", 5) == 0 && (s[5] == ' ' || s[5] == '\t')) {
                gh_debug("ld.so.conf line %u: hwcap directive ignored", line);
                return 0;
        }
        return parse_dir(c, s, line, err);
}

int gh_ldconf_parse(const char *text, size_t len, struct gh_ldconf *out, gh_error_t *err)
{
        unsigned line = 0;
        size_t at = 0;

        while (at < len) {
                const char *nl = memchr(text + at, '\n', len - at);
                size_t n = nl ? (size_t) (nl - (text + at)) : len - at;
                _cleanup_free_ char *s = strndup(text + at, n); /* stops at a NUL, like the C string ldconfig sees */

                if (s == NULL)
                        return gh_err(err, ENOMEM, "reading ld.so.conf");
                line++;
                if (parse_line(out, s, line, err) < 0)
                        return -1;
                at += n + 1;
        }
        return 0;
}

void gh_ldconf_free(struct gh_ldconf *c)
{
        for (size_t i = 0; i < c->n; i++)
                free(c->v[i].text);
        free(c->v);
        *c = (struct gh_ldconf) { 0 };
}

struct loader {
        int rootfd, procfd;
        unsigned files; /* configuration files opened */
        bool warned_depth, warned_files;
        size_t looked_at; /* directory entries read while expanding patterns */
        struct gh_ldconf *dirs;
};

struct strv {
        char **v;
        size_t n, cap;
};

static void strv_free(struct strv *s)
{
        for (size_t i = 0; i < s->n; i++)
                free(s->v[i]);
        free(s->v);
        *s = (struct strv) { 0 };
}

static int strv_add(struct strv *s, char *p, gh_error_t *err)
{
        if (p == NULL)
                return gh_err(err, ENOMEM, "expanding an ld.so.conf include");
        if (s->n == s->cap) {
                size_t cap = s->cap ? s->cap * 2 : 8;
                char **v = reallocarray(s->v, cap, sizeof(*v));
                if (v == NULL) {
                        free(p);
                        return gh_err(err, ENOMEM, "expanding an ld.so.conf include");
                }
                s->v = v;
                s->cap = cap;
        }
        s->v[s->n++] = p;
        return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *) a, *(char *const *) b); }

static bool has_magic(const char *s, size_t len)
{
        for (size_t i = 0; i < len; i++)
                if (s[i] == '*' || s[i] == '?' || s[i] == '[')
                        return true;
        return false;
}

/* Expands an absolute glob pattern inside the root, one path component at a time: a component
 * with wildcards is matched (fnmatch, a leading '.' only explicitly) against the entries of each
 * directory reached so far; a plain one is appended.  Symlinks are followed by the in-root
 * resolver only, so a pattern never reaches outside the root.  Results sorted bytewise. */
static int glob_in_root(struct loader *l, const char *pattern, struct strv *out, gh_error_t *err)
{
        struct strv cur = { 0 }, next = { 0 };
        const char *p = pattern;
        int r = -1;

        if (strv_add(&cur, strdup(""), err) < 0)
                return -1;
        while (*p != '\0') {
                size_t len;
                while (*p == '/')
                        p++;
                len = strcspn(p, "/");
                if (len == 0)
                        break;
                for (size_t i = 0; i < cur.n; i++) {
                        if (!has_magic(p, len)) {
                                char *s;
                                if (asprintf(&s, "%s/%.*s", cur.v[i], (int) len, p) < 0)
                                        s = NULL;
                                if (strv_add(&next, s, err) < 0)
                                        goto out;
                                continue;
                        }
                        _cleanup_free_ char *comp = strndup(p, len);
                        _cleanup_error_ gh_error_t e = NULL;
                        _cleanup_close_ int dfd =
                                gh_resolve(l->rootfd, cur.v[i][0] ? cur.v[i] : "/", O_RDONLY | O_DIRECTORY, &e);
                        _cleanup_closedir_ DIR *d = NULL;
                        struct dirent *de;

                        if (comp == NULL) {
                                gh_err(err, ENOMEM, "expanding an ld.so.conf include");
                                goto out;
                        }
                        if (dfd < 0 || (d = fdopendir(dfd)) == NULL)
                                continue; /* not a directory: no match, as for glob(3) */
                        dfd = -1;
                        while ((de = readdir(d)) != NULL) {
                                char *s;
                                if (++l->looked_at > GH_LDCONF_MAX_GLOB_ENTRIES) {
                                        gh_err(err, E2BIG, "ld.so.conf includes look at more than %u directory entries",
                                               GH_LDCONF_MAX_GLOB_ENTRIES);
                                        goto out;
                                }
                                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
                                    fnmatch(comp, de->d_name, FNM_PERIOD) != 0)
                                        continue;
                                if (asprintf(&s, "%s/%s", cur.v[i], de->d_name) < 0)
                                        s = NULL;
                                if (strv_add(&next, s, err) < 0)
                                        goto out;
                                if (next.n > GH_LDCONF_MAX_FILES) {
                                        gh_err(err, E2BIG, "an ld.so.conf include matches more than %u files",
                                               GH_LDCONF_MAX_FILES);
                                        goto out;
                                }
                        }
                }
                strv_free(&cur);
                cur = next;
                next = (struct strv) { 0 };
                p += len;
        }
        /* Only what exists matches. */
        for (size_t i = 0; i < cur.n; i++) {
                _cleanup_error_ gh_error_t e = NULL;
                _cleanup_close_ int fd = gh_resolve(l->rootfd, cur.v[i][0] ? cur.v[i] : "/", O_PATH, &e);
                if (fd >= 0 && strv_add(out, steal_pointer(&cur.v[i]), err) < 0)
                        goto out;
        }
        if (out->n > 1) /* qsort(NULL, 0, ...) is undefined */
                qsort(out->v, out->n, sizeof(*out->v), cmp_str);
        r = 0;
out:
        strv_free(&cur);
        strv_free(&next);
        return r;
}

static int load_file(struct loader *l, const char *file, unsigned depth, gh_error_t *err);

static int load_include(struct loader *l, const char *from, const char *pattern, unsigned depth, gh_error_t *err)
{
        _cleanup_free_ char *abs = NULL;
        struct strv files = { 0 };
        int r = 0;

        if (pattern[0] != '/') {
                const char *slash = strrchr(from, '/');
                if (asprintf(&abs, "%.*s/%s", (int) (slash ? slash - from : 0), from, pattern) < 0)
                        return gh_err(err, ENOMEM, "expanding an ld.so.conf include");
                pattern = abs;
        }
        if (glob_in_root(l, pattern, &files, err) < 0) {
                if ((*err)->code != E2BIG)
                        return gh_err_wrap(err, "%s: include %s", from, pattern);
                /* Past the limits: this include is skipped, the rest of the configuration read. */
                gh_warn("ignoring 'include %s' in the image's %s: %s", pattern, from, (*err)->msg);
                gh_error_free(err);
                strv_free(&files);
                return 0;
        }
        for (size_t i = 0; i < files.n && r == 0; i++)
                r = load_file(l, files.v[i], depth + 1, err);
        strv_free(&files);
        return r;
}

/* Reads a whole configuration file, at most GH_LDCONF_MAX_FILE bytes; NULL when it is to be
 * skipped (absent, not a regular file, unreadable, too large). */
static char *read_conf(struct loader *l, const char *file, size_t *len)
{
        _cleanup_error_ gh_error_t e = NULL;
        _cleanup_close_ int fd = gh_open_regular(l->rootfd, file, l->procfd, &e);
        _cleanup_free_ char *buf = NULL;
        size_t n = 0;

        if (fd < 0) {
                if (e->code != ENOENT)
                        gh_warn("ignoring the image's %s: %s", file, e->msg);
                return NULL;
        }
        buf = malloc(GH_LDCONF_MAX_FILE + 1);
        if (buf == NULL)
                return NULL;
        while (n <= GH_LDCONF_MAX_FILE) {
                ssize_t r = read(fd, buf + n, GH_LDCONF_MAX_FILE + 1 - n);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0) {
                        gh_warn("ignoring the image's %s: %s", file, strerror(errno));
                        return NULL;
                }
                if (r == 0)
                        break;
                n += (size_t) r;
        }
        if (n > GH_LDCONF_MAX_FILE) {
                gh_warn("ignoring the image's %s: larger than %u bytes", file, GH_LDCONF_MAX_FILE);
                return NULL;
        }
        *len = n;
        return steal_pointer(&buf);
}

static int load_file(struct loader *l, const char *file, unsigned depth, gh_error_t *err)
{
        struct gh_ldconf items = { 0 };
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r = 0;

        if (depth > GH_LDCONF_MAX_DEPTH) {
                if (!l->warned_depth)
                        gh_warn("the image's %s: includes nested deeper than %u (a loop?); not read", file,
                                GH_LDCONF_MAX_DEPTH);
                l->warned_depth = true;
                return 0;
        }
        if (++l->files > GH_LDCONF_MAX_FILES) {
                if (!l->warned_files)
                        gh_warn("the image's ld.so.conf reads more than %u files; %s and later ones not read",
                                GH_LDCONF_MAX_FILES, file);
                l->warned_files = true;
                return 0;
        }
        text = read_conf(l, file, &len);
        if (text == NULL)
                return 0;
        if (gh_ldconf_parse(text, len, &items, err) < 0) {
                gh_ldconf_free(&items);
                return gh_err_wrap(err, "the image's %s", file);
        }
        for (size_t i = 0; i < items.n && r == 0; i++) {
                const struct gh_ldconf_item *it = &items.v[i];
                if (it->kind == GH_LDCONF_INCLUDE)
                        r = load_include(l, file, it->text, depth, err);
                else
                        r = add_item(l->dirs, GH_LDCONF_DIR, it->text, strlen(it->text), it->flag, it->line, err);
        }
        gh_ldconf_free(&items);
        return r;
}

int gh_ldconf_load(int rootfd, int procfd, const char *file, struct gh_ldconf *dirs, gh_error_t *err)
{
        struct loader l = { .rootfd = rootfd, .procfd = procfd, .dirs = dirs };

        if (load_file(&l, file, 0, err) < 0) {
                /* A configuration past the limits is the image's problem: index what was read. */
                if (*err != NULL && (*err)->code == E2BIG) {
                        gh_warn("%s; indexing the %zu directories read until then", (*err)->msg, dirs->n);
                        gh_error_free(err);
                        return 0;
                }
                return gh_err_wrap(err, "reading the image's library directories");
        }
        return 0;
}
