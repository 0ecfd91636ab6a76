#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jsonread.h"

struct parser {
        const char *s;
        size_t len, pos;
        struct gh_json *doc;
        const char *why;         /* the first error */
        const char *const *keep; /* gh_jsonread_parse_only's paths; NULL: keep everything */
        char path[256];          /* the dotted path of the member being parsed */
        size_t plen;
};

static int fail(struct parser *p, const char *why)
{
        if (p->why == NULL)
                p->why = why;
        return -1;
}

static void skip_ws(struct parser *p)
{
        while (p->pos < p->len &&
               (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
                p->pos++;
}

static int new_node(struct parser *p, enum gh_json_type type)
{
        struct gh_json *d = p->doc;

        if (d->n == d->cap) {
                size_t ncap = d->cap ? d->cap * 2 : 32;
                struct gh_json_node *v;
                if (ncap > INT32_MAX || (v = reallocarray(d->v, ncap, sizeof(*v))) == NULL)
                        return fail(p, "out of memory");
                d->v = v;
                d->cap = ncap;
        }
        d->v[d->n] = (struct gh_json_node) { .type = type, .child = -1, .next = -1 };
        return (int) d->n++;
}

static int hex4(struct parser *p, unsigned *out)
{
        *out = 0;
        if (p->len - p->pos < 4)
                return fail(p, "a \\u escape needs four hex digits");
        for (int i = 0; i < 4; i++) {
                char c = p->s[p->pos++];
                unsigned d = c >= '0' && c <= '9'   ? (unsigned) (c - '0')
                             : c >= 'a' && c <= 'f' ? (unsigned) (c - 'a' + 10)
                             : c >= 'A' && c <= 'F' ? (unsigned) (c - 'A' + 10)
                                                    : 16u;
                if (d == 16)
                        return fail(p, "a \\u escape needs four hex digits");
                *out = *out << 4 | d;
        }
        return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
        if (o == NULL)
                return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
        if (cp < 0x80) {
                o[0] = (char) cp;
                return 1;
        }
        if (cp < 0x800) {
                o[0] = (char) (0xc0 | cp >> 6);
                o[1] = (char) (0x80 | (cp & 0x3f));
                return 2;
        }
        if (cp < 0x10000) {
                o[0] = (char) (0xe0 | cp >> 12);
                o[1] = (char) (0x80 | ((cp >> 6) & 0x3f));
                o[2] = (char) (0x80 | (cp & 0x3f));
                return 3;
        }
        o[0] = (char) (0xf0 | cp >> 18);
        o[1] = (char) (0x80 | ((cp >> 12) & 0x3f));
        o[2] = (char) (0x80 | ((cp >> 6) & 0x3f));
        o[3] = (char) (0x80 | (cp & 0x3f));
        return 4;
}

#define PUT(c)                                                                                                         \
        do {                                                                                                           \
                if (o != NULL)                                                                                         \
                        o[n] = (c);                                                                                    \
                n++;                                                                                                   \
        } while (0)

/* A string at p->pos (the opening quote), decoded into a new allocation (out NULL: checked the same
 * way, not kept).  An escape never makes the text longer than its source, so the source length
 * bounds the result. */
static int parse_string(struct parser *p, char **out)
{
        size_t start = ++p->pos, n = 0;
        char *o = NULL;

        while (p->pos < p->len && p->s[p->pos] != '"')
                p->pos += p->s[p->pos] == '\\' ? 2 : 1;
        if (p->pos >= p->len)
                return fail(p, "a string does not end");
        if (out != NULL && (o = malloc(p->pos - start + 1)) == NULL)
                return fail(p, "out of memory");
        p->pos = start;
        while (p->s[p->pos] != '"') {
                unsigned char c = (unsigned char) p->s[p->pos++];
                unsigned cp, lo;
                if (c < 0x20) {
                        free(o);
                        return fail(p, "a control character in a string");
                }
                if (c != '\\') {
                        PUT((char) c);
                        continue;
                }
                switch (p->s[p->pos++]) {
                case '"': PUT('"'); break;
                case '\\': PUT('\\'); break;
                case '/': PUT('/'); break;
                case 'b': PUT('\b'); break;
                case 'f': PUT('\f'); break;
                case 'n': PUT('\n'); break;
                case 'r': PUT('\r'); break;
                case 't': PUT('\t'); break;
                case 'u':
                        if (hex4(p, &cp) < 0)
                                break;
                        if (cp >= 0xd800 && cp < 0xdc00) {
                                if (p->len - p->pos < 2 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u') {
                                        fail(p, "a lone UTF-16 surrogate");
                                        break;
                                }
                                p->pos += 2;
                                if (hex4(p, &lo) < 0)
                                        break;
                                if (lo < 0xdc00 || lo > 0xdfff) {
                                        fail(p, "a lone UTF-16 surrogate");
                                        break;
                                }
                                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                        } else if (cp >= 0xdc00 && cp <= 0xdfff) {
                                fail(p, "a lone UTF-16 surrogate");
                                break;
                        } else if (cp == 0) {
                                fail(p, "a NUL (\\u0000) in a string");
                                break;
                        }
                        n += put_utf8(o ? o + n : NULL, cp);
                        break;
                default: fail(p, "an unknown escape in a string");
                }
                if (p->why != NULL) {
                        free(o);
                        return -1;
                }
        }
        p->pos++;
        if (o != NULL) {
                o[n] = '\0';
                *out = o;
        }
        return 0;
}
#undef PUT

static bool digits(struct parser *p)
{
        size_t start = p->pos;
        while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9')
                p->pos++;
        return p->pos > start;
}

static int parse_number(struct parser *p)
{
        if (p->s[p->pos] == '-')
                p->pos++;
        if (p->pos < p->len && p->s[p->pos] == '0')
                p->pos++;
        else if (!digits(p))
                return fail(p, "a malformed number");
        if (p->pos < p->len && p->s[p->pos] == '.') {
                p->pos++;
                if (!digits(p))
                        return fail(p, "a malformed number");
        }
        if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
                p->pos++;
                if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-'))
                        p->pos++;
                if (!digits(p))
                        return fail(p, "a malformed number");
        }
        return 0;
}

static int parse_value(struct parser *p, int depth, bool keep);

/* Whether the member at the dotted path p->path is kept: it lies on or below one of the paths asked
 * for, or above one. */
static bool wanted(const struct parser *p)
{
        if (p->keep == NULL)
                return true;
        for (const char *const *k = p->keep; *k != NULL; k++) {
                size_t kl = strlen(*k), n = kl < p->plen ? kl : p->plen;
                if (strncmp(*k, p->path, n) == 0 &&
                    (kl == p->plen || (kl < p->plen ? p->path[kl] : (*k)[p->plen]) == '.'))
                        return true;
        }
        return false;
}

/* The elements (arrays) or members (objects) of node, up to the closing bracket.  Not keep: checked
 * the same way, nothing stored (node is meaningless). */
static int parse_container(struct parser *p, int node, bool object, int depth, bool keep)
{
        int last = -1;
        char close = object ? '}' : ']';

        if (depth >= GH_JSON_MAX_DEPTH)
                return fail(p, "nested too deeply");
        p->pos++;
        skip_ws(p);
        if (p->pos < p->len && p->s[p->pos] == close) {
                p->pos++;
                return 0;
        }
        for (;;) {
                char *key = NULL;
                int child;

                skip_ws(p);
                if (object) {
                        if (p->pos >= p->len || p->s[p->pos] != '"')
                                return fail(p, "an object member needs a string name");
                        if (parse_string(p, keep ? &key : NULL) < 0)
                                return -1;
                        for (int c = keep ? p->doc->v[node].child : -1; c >= 0; c = p->doc->v[c].next)
                                if (strcmp(p->doc->v[c].key, key) == 0) {
                                        free(key);
                                        return fail(p, "a duplicate key in an object");
                                }
                        skip_ws(p);
                        if (p->pos >= p->len || p->s[p->pos] != ':') {
                                free(key);
                                return fail(p, "a ':' is missing after an object member's name");
                        }
                        p->pos++;
                }
                {
                        size_t saved = p->plen;
                        bool keep_child = keep;
                        if (object && keep && p->keep != NULL) {
                                size_t kl = strlen(key);
                                if (p->plen + 1 + kl >= sizeof(p->path)) {
                                        keep_child = false; /* deeper than any path asked for */
                                } else {
                                        if (p->plen > 0)
                                                p->path[p->plen++] = '.';
                                        memcpy(p->path + p->plen, key, kl + 1);
                                        p->plen += kl;
                                        keep_child = wanted(p);
                                }
                        }
                        child = parse_value(p, depth + 1, keep_child);
                        p->plen = saved;
                        p->path[saved] = '\0';
                        if (child < 0 || !keep_child) {
                                free(key);
                                if (child < 0)
                                        return -1;
                                goto next;
                        }
                }
                p->doc->v[child].key = key;
                if (last < 0)
                        p->doc->v[node].child = child;
                else
                        p->doc->v[last].next = child;
                last = child;
        next:
                skip_ws(p);
                if (p->pos < p->len && p->s[p->pos] == ',') {
                        p->pos++;
                        continue;
                }
                if (p->pos < p->len && p->s[p->pos] == close) {
                        p->pos++;
                        return 0;
                }
                return fail(p, object ? "a ',' or '}' is missing" : "a ',' or ']' is missing");
        }
}

static int parse_value(struct parser *p, int depth, bool keep)
{
        static const struct {
                const char *word;
                enum gh_json_type type;
        } literals[] = {
                { "true", GH_JSON_BOOL },
                { "false", GH_JSON_BOOL },
                { "null", GH_JSON_NULL },
        };
        int node;
        char c;

        skip_ws(p);
        if (p->pos >= p->len)
                return fail(p, "a value is missing");
        c = p->s[p->pos];
        if (c == '{' || c == '[') {
                node = keep ? new_node(p, c == '{' ? GH_JSON_OBJECT : GH_JSON_ARRAY) : 0;
                return node < 0 || parse_container(p, node, c == '{', depth, keep) < 0 ? -1 : node;
        }
        if (c == '"') {
                char *s = NULL;
                if (parse_string(p, keep ? &s : NULL) < 0)
                        return -1;
                if (!keep)
                        return 0;
                node = new_node(p, GH_JSON_STRING);
                if (node < 0) {
                        free(s);
                        return -1;
                }
                p->doc->v[node].str = s;
                return node;
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
                size_t start = p->pos;
                char *text;
                if (parse_number(p) < 0)
                        return -1;
                if (!keep)
                        return 0;
                /* Its text, for a reader that wants the value (gh_json_integer). */
                if ((text = strndup(p->s + start, p->pos - start)) == NULL)
                        return fail(p, "out of memory");
                node = new_node(p, GH_JSON_NUMBER);
                if (node < 0) {
                        free(text);
                        return -1;
                }
                p->doc->v[node].str = text;
                return node;
        }
        for (size_t i = 0; i < sizeof(literals) / sizeof(literals[0]); i++) {
                size_t n = strlen(literals[i].word);
                if (p->len - p->pos >= n && memcmp(p->s + p->pos, literals[i].word, n) == 0) {
                        p->pos += n;
                        return keep ? new_node(p, literals[i].type) : 0;
                }
        }
        return fail(p, "an unexpected character");
}

int gh_jsonread_parse(const char *text, size_t len, struct gh_json *doc, gh_error_t *err)
{
        return gh_jsonread_parse_only(text, len, NULL, doc, err);
}

int gh_jsonread_parse_only(const char *text, size_t len, const char *const *keep, struct gh_json *doc, gh_error_t *err)
{
        struct parser p = { .s = text, .len = len, .doc = doc, .keep = keep };
        size_t line = 1, col = 1;

        memset(doc, 0, sizeof(*doc));
        if (parse_value(&p, 0, true) >= 0) {
                skip_ws(&p);
                if (p.pos == p.len)
                        return 0;
                fail(&p, "text after the value");
        }
        for (size_t i = 0; i < p.pos && i < len; i++) {
                if (text[i] == '\n') {
                        line++;
                        col = 1;
                } else {
                        col++;
                }
        }
        gh_json_free(doc);
        return gh_err(err, strcmp(p.why, "out of memory") == 0 ? ENOMEM : 0, "not valid JSON: line %zu column %zu: %s",
                      line, col, p.why);
}

int gh_json_get(const struct gh_json *doc, int obj, const char *key)
{
        if (obj < 0 || (size_t) obj >= doc->n || doc->v[obj].type != GH_JSON_OBJECT)
                return -1;
        for (int c = doc->v[obj].child; c >= 0; c = doc->v[c].next)
                if (strcmp(doc->v[c].key, key) == 0)
                        return c;
        return -1;
}

int gh_json_integer(const struct gh_json *doc, int node, long long *out)
{
        const char *t;
        char *end;

        if (node < 0 || (size_t) node >= doc->n || doc->v[node].type != GH_JSON_NUMBER ||
            (t = doc->v[node].str) == NULL || strpbrk(t, ".eE") != NULL)
                return -1;
        errno = 0;
        *out = strtoll(t, &end, 10);
        return errno == 0 && *end == '\0' ? 0 : -1;
}

void gh_json_free(struct gh_json *doc)
{
        for (size_t i = 0; i < doc->n; i++) {
                free(doc->v[i].key);
                free(doc->v[i].str);
        }
        free(doc->v);
        memset(doc, 0, sizeof(*doc));
}
