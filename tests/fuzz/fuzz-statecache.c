/* The driver-state cache file (lib/front/statecache.c).  Besides "no crash": an accepted file holds only
 * values in range (minors, string lengths, bus ids strictly ascending, MIG devices pointing at their
 * parent), and formatting it again gives a file that parses to the same thing. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "statecache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct gh_gpu_list *l)
{
        if (l->n > 1024 || l->origin != GH_ORIGIN_CACHE || !gh_version_is_dotted(l->cuda_version) ||
            !gh_version_is_dotted(l->driver_version))
                abort();
        for (size_t i = 0; i < l->n; i++) {
                const struct gh_gpu *g = &l->gpus[i];
                if (g->index != i || g->minor > 254 || strnlen(g->uuid, sizeof(g->uuid)) == sizeof(g->uuid) ||
                    strnlen(g->model, sizeof(g->model)) == sizeof(g->model) || g->nmigs > 64 ||
                    (i > 0 && strcmp(l->gpus[i - 1].busid, g->busid) >= 0) || (g->nmigs > 0 && !g->mig_enabled))
                        abort();
                for (size_t m = 0; m < g->nmigs; m++)
                        if (g->migs[m].parent_index != i || g->migs[m].gi > 4095 || g->migs[m].ci > 4095)
                                abort();
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        _cleanup_statecache_entry_ struct gh_statecache_entry e = { 0 };
        _cleanup_statecache_entry_ struct gh_statecache_entry again = { 0 };
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_free_ char *text = NULL;
        struct gh_driver_fp fp = { 0 };

        if (gh_statecache_parse((const char *) data, size, &e, &err) < 0) {
                if (err == NULL || err->msg == NULL || e.list.n != 0 || e.fingerprint != NULL)
                        abort();
                return 0;
        }
        check(&e.list);
        fp.text = e.fingerprint;
        for (size_t i = 0; i < GH_DRIVER_FP_NLIBS; i++)
                fp.libs[i] = e.libs[i];
        text = gh_statecache_format(&fp, &e.list);
        if (text == NULL || gh_statecache_parse(text, strlen(text), &again, &err) < 0)
                abort();
        if (again.list.n != e.list.n || strcmp(again.fingerprint, e.fingerprint) != 0 ||
            strcmp(again.list.cuda_version, e.list.cuda_version) != 0)
                abort();
        for (size_t i = 0; i < e.list.n; i++)
                if (memcmp(&again.list.gpus[i], &e.list.gpus[i], offsetof(struct gh_gpu, migs)) != 0 ||
                    again.list.gpus[i].nmigs != e.list.gpus[i].nmigs)
                        abort();
        return 0;
}
