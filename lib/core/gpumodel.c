/* The GPU model (gpumodel.h): helpers on the types, used by enumeration, the service and selection. */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gpumodel.h"
#include "usage.h"

static bool hex_run(const char *s, size_t min, size_t max, unsigned long *v, const char **end)
{
        size_t n = 0;

        *v = 0;
        while (isxdigit((unsigned char) s[n]) && n < max) {
                char c = (char) tolower((unsigned char) s[n]);
                *v = *v * 16 + (unsigned long) (isdigit((unsigned char) c) ? c - '0' : c - 'a' + 10);
                n++;
        }
        *end = s + n;
        return n >= min;
}

bool gh_version_is_dotted(const char *s)
{
        bool dot = false;

        if (!isdigit((unsigned char) *s))
                return false;
        for (; *s; s++) {
                if (*s == '.') {
                        if (!isdigit((unsigned char) s[1]))
                                return false;
                        dot = true;
                } else if (!isdigit((unsigned char) *s)) {
                        return false;
                }
        }
        return dot;
}

void gh_gpu_list_free(struct gh_gpu_list *list)
{
        if (list == NULL)
                return;
        for (size_t i = 0; i < list->n; i++) {
                free(list->gpus[i].migs);
                gh_gpu_usage_free(list->gpus[i].usage);
        }
        free(list->gpus);
        memset(list, 0, sizeof(*list));
}

const struct gh_gpu *gh_gpu_by_index(const struct gh_gpu_list *list, unsigned index)
{
        for (size_t i = 0; i < list->n; i++)
                if (list->gpus[i].index == index)
                        return &list->gpus[i];
        return NULL;
}

int gh_busid_normalize(const char *in, char *out, size_t size)
{
        unsigned long domain = 0, bus, dev, fn;
        const char *p = in, *colon2, *end;

        /* Either DOMAIN:BUS:DEV.FN or BUS:DEV.FN; the domain has 1..8 hex digits. */
        colon2 = strchr(in, ':') ? strchr(strchr(in, ':') + 1, ':') : NULL;
        if (colon2 != NULL) {
                if (!hex_run(p, 1, 8, &domain, &end) || *end != ':' || domain > 0xffff)
                        return -1;
                p = end + 1;
        }
        if (!hex_run(p, 1, 2, &bus, &end) || *end != ':')
                return -1;
        p = end + 1;
        if (!hex_run(p, 1, 2, &dev, &end) || *end != '.' || dev > 0x1f)
                return -1;
        p = end + 1;
        if (!hex_run(p, 1, 1, &fn, &end) || *end != '\0' || fn > 7)
                return -1;
        if ((size_t) snprintf(out, size, "%04lx:%02lx:%02lx.%lx", domain, bus, dev, fn) >= size)
                return -1;
        return 0;
}
