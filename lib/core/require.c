/* Requirement expressions: parse once, evaluate per selected GPU, explain a failure. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cleanup.h"
#include "require.h"
#include "strutil.h"

/* Long enough for any sensible expression; anything longer is rejected before it is copied. */
#define EXPR_MAX 4096
#define VERSION_PARTS_MAX 8

enum key { KEY_CUDA, KEY_DRIVER, KEY_ARCH, KEY_BRAND };
_Static_assert(1u << KEY_CUDA == GH_REQUIRE_KEY_CUDA && 1u << KEY_DRIVER == GH_REQUIRE_KEY_DRIVER &&
                       1u << KEY_ARCH == GH_REQUIRE_KEY_ARCH && 1u << KEY_BRAND == GH_REQUIRE_KEY_BRAND,
               "gh_require_keys() bits follow enum key");
enum op { OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE };

static const char *const key_names[] = { "cuda", "driver", "arch", "brand" };

struct cond {
        enum key key;
        enum op op;
        char *value;
        char *text; /* "cuda>=11.0", for messages */
};

struct alt {
        struct cond *conds;
        size_t n;
};

struct gh_require {
        char *text;
        struct alt *alts;
        size_t n;
};

/* Splits a dotted number into parts; false when s is not one ("", "1.", ".1", "1a", too long). */
static bool version_parts(const char *s, unsigned long parts[VERSION_PARTS_MAX], size_t *n)
{
        *n = 0;
        if (s == NULL || *s == '\0')
                return false;
        for (;;) {
                unsigned long v = 0;
                size_t digits = 0;
                while (isdigit((unsigned char) *s)) {
                        if (++digits > 9)
                                return false;
                        v = v * 10 + (unsigned long) (*s++ - '0');
                }
                if (digits == 0 || *n == VERSION_PARTS_MAX)
                        return false;
                parts[(*n)++] = v;
                if (*s == '\0')
                        return true;
                if (*s++ != '.')
                        return false;
        }
}

int gh_version_compare(const char *a, const char *b)
{
        unsigned long pa[VERSION_PARTS_MAX], pb[VERSION_PARTS_MAX];
        size_t na, nb;

        if (!version_parts(a, pa, &na) || !version_parts(b, pb, &nb))
                return -2;
        for (size_t i = 0; i < na || i < nb; i++) {
                unsigned long x = i < na ? pa[i] : 0, y = i < nb ? pb[i] : 0;
                if (x != y)
                        return x < y ? -1 : 1;
        }
        return 0;
}

void gh_require_free(struct gh_require *req)
{
        if (req == NULL)
                return;
        for (size_t i = 0; i < req->n; i++) {
                for (size_t j = 0; j < req->alts[i].n; j++) {
                        free(req->alts[i].conds[j].value);
                        free(req->alts[i].conds[j].text);
                }
                free(req->alts[i].conds);
        }
        free(req->alts);
        free(req->text);
        free(req);
}

const char *gh_require_text(const struct gh_require *req) { return req->text; }

unsigned gh_require_keys(const struct gh_require *req)
{
        unsigned keys = 0;

        for (size_t i = 0; i < req->n; i++)
                for (size_t j = 0; j < req->alts[i].n; j++)
                        keys |= 1u << req->alts[i].conds[j].key;
        return keys;
}

static int parse_cond(const char *expr, const char *s, size_t len, struct cond *c, gh_error_t *err)
{
        static const struct {
                const char *tok;
                enum op op;
        } ops[] = {
                { "<=", OP_LE }, { ">=", OP_GE }, { "!=", OP_NE }, { "=", OP_EQ }, { "<", OP_LT }, { ">", OP_GT },
        };
        size_t klen = 0, olen = 0;
        bool found = false;

        while (klen < len && isalpha((unsigned char) s[klen]))
                klen++;
        for (size_t k = 0; k < GH_ARRAY_SIZE(key_names) && !found; k++) {
                if (klen == strlen(key_names[k]) && strncasecmp(s, key_names[k], klen) == 0) {
                        c->key = (enum key) k;
                        found = true;
                }
        }
        if (!found)
                return gh_err(err, 0,
                              "invalid expression '%s': unknown key in '%.*s' (keys: cuda, driver, arch, brand)", expr,
                              (int) len, s);
        found = false;
        for (size_t o = 0; o < GH_ARRAY_SIZE(ops) && !found; o++) {
                size_t n = strlen(ops[o].tok);
                if (len - klen >= n && strncmp(s + klen, ops[o].tok, n) == 0) {
                        c->op = ops[o].op;
                        olen = n;
                        found = true;
                }
        }
        if (!found)
                return gh_err(err, 0, "invalid expression '%s': no operator in '%.*s' (use = != < <= > >=)", expr,
                              (int) len, s);
        if (klen + olen == len)
                return gh_err(err, 0, "invalid expression '%s': no value in '%.*s'", expr, (int) len, s);
        c->value = strndup(s + klen + olen, len - klen - olen);
        c->text = strndup(s, len);
        if (c->value == NULL || c->text == NULL)
                return gh_err(err, ENOMEM, "parsing requirement '%s'", expr);
        if (c->key == KEY_BRAND) {
                if (c->op != OP_EQ && c->op != OP_NE)
                        return gh_err(err, 0, "invalid expression '%s': brand allows only = and != in '%s'", expr,
                                      c->text);
                for (const char *p = c->value; *p; p++)
                        if (!isalnum((unsigned char) *p) && *p != '-' && *p != '_')
                                return gh_err(err, 0, "invalid expression '%s': bad brand name in '%s'", expr, c->text);
        } else {
                unsigned long parts[VERSION_PARTS_MAX];
                size_t n;
                if (!version_parts(c->value, parts, &n))
                        return gh_err(err, 0, "invalid expression '%s': '%s' is not a version like 12.4 in '%s'", expr,
                                      c->value, c->text);
        }
        return 0;
}

/* One alternative: comma-separated conditions; empty items (a trailing comma) are dropped. */
static int parse_alt(const char *expr, const char *s, size_t len, struct alt *a, gh_error_t *err)
{
        const char *end = s + len;

        while (s < end) {
                const char *comma = memchr(s, ',', (size_t) (end - s));
                const char *stop = comma ? comma : end;
                if (stop > s) {
                        struct cond *grown = realloc(a->conds, (a->n + 1) * sizeof(*grown));
                        if (grown == NULL)
                                return gh_err(err, ENOMEM, "parsing requirement '%s'", expr);
                        a->conds = grown;
                        memset(&a->conds[a->n], 0, sizeof(a->conds[a->n]));
                        a->n++;
                        if (parse_cond(expr, s, (size_t) (stop - s), &a->conds[a->n - 1], err) < 0)
                                return -1;
                }
                s = comma ? comma + 1 : end;
        }
        return 0;
}

int gh_require_parse(const char *expr, struct gh_require **out, gh_error_t *err)
{
        struct gh_require *req;
        const char *p;

        *out = NULL;
        if (strnlen(expr, EXPR_MAX + 1) > EXPR_MAX)
                return gh_err(err, 0, "invalid expression '%.40s...': longer than %d characters", expr, EXPR_MAX);
        req = calloc(1, sizeof(*req));
        if (req == NULL || (req->text = strdup(expr)) == NULL) {
                free(req);
                return gh_err(err, ENOMEM, "parsing requirement '%s'", expr);
        }
        p = expr;
        while (*p) {
                const char *s, *e;
                while (gh_is_blank(*p))
                        p++;
                if (*p == '\0')
                        break;
                s = p;
                while (*p && !gh_is_blank(*p))
                        p++;
                e = p;
                struct alt *grown = realloc(req->alts, (req->n + 1) * sizeof(*grown));
                if (grown == NULL) {
                        gh_require_free(req);
                        return gh_err(err, ENOMEM, "parsing requirement '%s'", expr);
                }
                req->alts = grown;
                memset(&req->alts[req->n], 0, sizeof(req->alts[req->n]));
                req->n++;
                if (parse_alt(expr, s, (size_t) (e - s), &req->alts[req->n - 1], err) < 0) {
                        gh_require_free(req);
                        return -1;
                }
                if (req->alts[req->n - 1].n == 0) {
                        gh_require_free(req);
                        return gh_err(err, 0, "invalid expression '%s': an alternative has no condition", expr);
                }
        }
        if (req->n == 0) {
                gh_require_free(req);
                return gh_err(err, 0, "invalid expression '%s': it is empty", expr);
        }
        *out = req;
        return 0;
}

static bool apply_op(enum op op, int cmp)
{
        switch (op) {
        case OP_EQ: return cmp == 0;
        case OP_NE: return cmp != 0;
        case OP_LT: return cmp < 0;
        case OP_LE: return cmp <= 0;
        case OP_GT: return cmp > 0;
        case OP_GE: return cmp >= 0;
        default: return false;
        }
}

static bool eval_cond(const struct cond *c, const struct gh_require_facts *f)
{
        const char *have = NULL;

        switch (c->key) {
        case KEY_CUDA: have = f->cuda; break;
        case KEY_DRIVER: have = f->driver; break;
        case KEY_ARCH:
                if (f->arch == NULL)
                        return true;
                have = f->arch;
                break;
        case KEY_BRAND:
                if (f->brand == NULL)
                        return true;
                if (f->brand[0] == '\0')
                        return false;
                return apply_op(c->op, strcasecmp(f->brand, c->value) == 0 ? 0 : 1);
        default: return false;
        }
        if (have == NULL || have[0] == '\0')
                return false;
        int cmp = gh_version_compare(have, c->value);
        return cmp != -2 && apply_op(c->op, cmp);
}

bool gh_require_eval(const struct gh_require *req, const struct gh_require_facts *facts, const char **failed)
{
        const struct cond *first_failed = NULL;

        for (size_t i = 0; i < req->n; i++) {
                bool all = true;
                for (size_t j = 0; j < req->alts[i].n && all; j++) {
                        if (!eval_cond(&req->alts[i].conds[j], facts)) {
                                all = false;
                                if (first_failed == NULL)
                                        first_failed = &req->alts[i].conds[j];
                        }
                }
                if (all)
                        return true;
        }
        if (failed != NULL)
                *failed = first_failed ? first_failed->text : req->text;
        return false;
}

static const struct cond *find_cond(const struct gh_require *req, const char *text)
{
        for (size_t i = 0; i < req->n; i++)
                for (size_t j = 0; j < req->alts[i].n; j++)
                        if (req->alts[i].conds[j].text == text)
                                return &req->alts[i].conds[j];
        return NULL;
}

/* The failure message: what was required, what the host has, and what to do about it. */
static int explain(const struct gh_require *req, const struct cond *c, const struct gh_require_facts *f,
                   const struct gh_gpu *gpu, gh_error_t *err)
{
        _cleanup_free_ char *what = NULL;
        int r;

        if (strcmp(c->text, req->text) == 0)
                r = asprintf(&what, "requirement '%s' not met", req->text);
        else
                r = asprintf(&what, "requirement '%s' not met ('%s' is false)", req->text, c->text);
        if (r < 0)
                return gh_err(err, ENOMEM, "checking requirement '%s'", req->text);
        switch (c->key) {
        case KEY_CUDA:
                if (f->cuda == NULL || f->cuda[0] == '\0')
                        gh_err(err, 0, "%s: the driver's CUDA version is unknown; check the driver with 'gpu-cli info'",
                               what);
                else if (c->op == OP_GE || c->op == OP_GT || c->op == OP_EQ)
                        gh_err(err, 0,
                               "%s: the driver supports CUDA %s; update the NVIDIA driver on the host to one that "
                               "supports CUDA %s%s",
                               what, f->cuda, c->value, c->op == OP_EQ ? "" : " or newer");
                else
                        gh_err(err, 0, "%s: the driver supports CUDA %s; use an image built for this CUDA version",
                               what, f->cuda);
                break;
        case KEY_DRIVER:
                gh_err(err, 0, "%s: the host's NVIDIA driver is %s; install a driver that satisfies '%s'", what,
                       f->driver && f->driver[0] ? f->driver : "unknown", c->text);
                break;
        case KEY_ARCH:
                gh_err(err, 0,
                       "%s on GPU %u (%s, compute capability %s); select other GPUs (NVIDIA_VISIBLE_DEVICES, or the CDI devices asked for)",
                       what, gpu ? gpu->index : 0, gpu ? gpu->model : "?", f->arch && f->arch[0] ? f->arch : "unknown");
                break;
        case KEY_BRAND:
        default:
                gh_err(err, 0,
                       "%s on GPU %u (%s, brand %s); select other GPUs (NVIDIA_VISIBLE_DEVICES, or the CDI devices asked for)",
                       what, gpu ? gpu->index : 0, gpu ? gpu->model : "?",
                       f->brand && f->brand[0] ? f->brand : "unknown");
                break;
        }
        return gh_err_kind(err, GH_ERR_REQUIREMENT);
}

int gh_require_check(const struct gh_require *req, const struct gh_gpu_list *list, const struct gh_selection *sel,
                     gh_error_t *err)
{
        struct gh_require_facts f = {
                .cuda = list ? list->cuda_version : NULL,
                .driver = list ? list->driver_version : NULL,
        };
        const char *failed = NULL;

        if (sel == NULL || sel->ngpus == 0) {
                if (gh_require_eval(req, &f, &failed))
                        return 0;
                return explain(req, find_cond(req, failed), &f, NULL, err);
        }
        for (size_t i = 0; i < sel->ngpus; i++) {
                f.arch = sel->gpus[i]->arch;
                f.brand = sel->gpus[i]->brand;
                if (!gh_require_eval(req, &f, &failed))
                        return explain(req, find_cond(req, failed), &f, sel->gpus[i], err);
        }
        return 0;
}

int gh_require_check_expr(const char *expr, const struct gh_gpu_list *list, const struct gh_selection *sel,
                          gh_error_t *err)
{
        _cleanup_require_ struct gh_require *req = NULL;

        if (gh_require_parse(expr, &req, err) < 0)
                return -1;
        return gh_require_check(req, list, sel, err);
}
