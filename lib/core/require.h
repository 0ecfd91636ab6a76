/* Requirement expressions (NVIDIA_REQUIRE_*, configure --require; docs/environment.md#requirement-expressions).
 *
 * "cuda>=11.0 brand=tesla,driver>=470": blank-separated alternatives are OR, comma-separated
 * conditions inside one alternative are AND.  Keys cuda, driver, arch, brand (any case); operators
 * = != < <= > >=; versions compare per numeric component with missing trailing components as 0;
 * brand allows only = and != and compares case-insensitively. */
#ifndef GH_REQUIRE_H
#define GH_REQUIRE_H

#include <stdbool.h>

#include "error.h"
#include "gpus.h"
#include "select.h"

struct gh_require; /* a parsed expression */

/* What a requirement is checked against.  arch or brand NULL means "no GPU": those conditions
 * pass.  cuda or driver NULL/"" means unknown: those conditions fail. */
struct gh_require_facts {
        const char *cuda;   /* "13.0" */
        const char *driver; /* "580.95.05" */
        const char *arch;   /* "9.0" */
        const char *brand;  /* "Tesla" */
};

/* Parses EXPR.  Errors: "invalid expression '<expr>': <why>" (unknown key, bad operator, a brand
 * with an ordering operator, a version that is not numeric, empty expression). */
int gh_require_parse(const char *expr, struct gh_require **out, gh_error_t *err);
void gh_require_free(struct gh_require *req);
#define _cleanup_require_ __attribute__((cleanup(gh_require_freep)))
static inline void gh_require_freep(struct gh_require **r)
{
        if (*r)
                gh_require_free(*r);
}

/* The expression as given (for messages). */
const char *gh_require_text(const struct gh_require *req);

/* Which keys the expression's conditions use: GH_REQUIRE_KEY_* bits. */
#define GH_REQUIRE_KEY_CUDA (1u << 0)
#define GH_REQUIRE_KEY_DRIVER (1u << 1)
#define GH_REQUIRE_KEY_ARCH (1u << 2)
#define GH_REQUIRE_KEY_BRAND (1u << 3)
unsigned gh_require_keys(const struct gh_require *req);

/* True when the facts satisfy the expression.  When false and failed is not NULL, *failed points at
 * the text of the first failing condition of the first alternative (valid while req lives). */
bool gh_require_eval(const struct gh_require *req, const struct gh_require_facts *facts, const char **failed);

/* Checks one requirement on every selected GPU (a MIG device counts as its parent; sel may be NULL
 * or empty: then checked once with arch/brand passing).  A failing requirement is an error naming
 * the requirement, the failing condition and the GPU; a cuda condition also says to update the
 * driver.  The error's kind is GH_ERR_REQUIREMENT, so front ends exit with their "requirement not
 * met" status. */
int gh_require_check(const struct gh_require *req, const struct gh_gpu_list *list, const struct gh_selection *sel,
                     gh_error_t *err);

/* Parses and checks EXPR in one go (a parse error keeps its own message and code 0). */
int gh_require_check_expr(const char *expr, const struct gh_gpu_list *list, const struct gh_selection *sel,
                          gh_error_t *err);

/* Compares two dotted numeric versions: <0, 0, >0.  Returns -2 (and sets nothing) when either is not
 * a dotted number. */
int gh_version_compare(const char *a, const char *b);

#endif
