/* Requirement expressions.  Besides "no crash": a refusal says why and says "invalid expression";
 * an accepted expression keeps its text; and since "no GPU" makes arch/brand conditions pass, an
 * expression that holds for a GPU must also hold with no GPU. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "require.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static const struct gh_require_facts gpus[] = {
                { .cuda = "13.0", .driver = "580.95.05", .arch = "9.0", .brand = "Nvidia" },
                { .cuda = "11.8", .driver = "470.42.01", .arch = "8.0", .brand = "Tesla" },
                { .cuda = "", .driver = "", .arch = "", .brand = "" },
        };
        _cleanup_require_ struct gh_require *req = NULL;
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_free_ char *s = NULL;

        if (size > 8192)
                return 0;
        s = strndup((const char *) data, size);
        if (s == NULL)
                return 0;
        if (gh_require_parse(s, &req, &err) < 0) {
                if (err == NULL || err->msg == NULL || strstr(err->msg, "invalid expression") == NULL)
                        abort();
                return 0;
        }
        if (strcmp(gh_require_text(req), s) != 0)
                abort();
        for (size_t i = 0; i < sizeof(gpus) / sizeof(gpus[0]); i++) {
                struct gh_require_facts nogpu = { .cuda = gpus[i].cuda, .driver = gpus[i].driver };
                const char *failed = NULL;
                bool with = gh_require_eval(req, &gpus[i], &failed);
                if (!with && (failed == NULL || strstr(s, failed) == NULL))
                        abort(); /* the failing condition is part of the expression */
                if (with && !gh_require_eval(req, &nogpu, NULL))
                        abort();
        }
        return 0;
}
