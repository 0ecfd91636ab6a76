/* A plan kept in the driver-state cache (lib/core/plancache.c).  Besides "no crash": an accepted text
 * names only absolute paths without "." or ".." components, no host path, device rules in range, and
 * writing it again gives the same text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "plancache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_free_ char *text = NULL, *again = NULL;
        struct gh_plan p, q;

        if (gh_plan_from_text((const char *) data, size, &p, &err) < 0) {
                if (err == NULL || err->msg == NULL || p.items != NULL || p.n != 0)
                        abort();
                return 0;
        }
        for (size_t i = 0; i < p.n; i++)
                if (p.items[i].dst == NULL || p.items[i].dst[0] != '/' || strstr(p.items[i].dst, "/../") != NULL ||
                    (p.items[i].kind != GH_ITEM_SYMLINK && (p.items[i].src == NULL || p.items[i].src[0] != '/')) ||
                    p.items[i].host_src)
                        abort();
        if (gh_cgroup_check_rules(p.rules, p.nrules, &err) < 0)
                abort();
        text = gh_plan_to_text(&p);
        if (text == NULL || gh_plan_from_text(text, strlen(text), &q, &err) < 0)
                abort();
        again = gh_plan_to_text(&q);
        if (again == NULL || strcmp(text, again) != 0)
                abort();
        gh_plan_free(&q);
        gh_plan_free(&p);
        return 0;
}
