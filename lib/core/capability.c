#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "capability.h"
#include "cleanup.h"
#include "strutil.h"

/* Sorted by name, so formatting walks it in order. */
static const struct {
        const char *name;
        unsigned bit;
} capabilities[] = {
        { "compat32", GH_CAP_COMPAT32 }, { "compute", GH_CAP_COMPUTE }, { "display", GH_CAP_DISPLAY },
        { "graphics", GH_CAP_GRAPHICS }, { "ngx", GH_CAP_NGX },         { "utility", GH_CAP_UTILITY },
        { "video", GH_CAP_VIDEO },
};

const char *gh_capability_name(unsigned bit)
{
        for (size_t i = 0; i < GH_ARRAY_SIZE(capabilities); i++)
                if (capabilities[i].bit == bit)
                        return capabilities[i].name;
        return NULL;
}

unsigned gh_capability_from_name(const char *name)
{
        for (size_t i = 0; i < GH_ARRAY_SIZE(capabilities); i++)
                if (strcmp(capabilities[i].name, name) == 0)
                        return capabilities[i].bit;
        return 0;
}

int gh_capability_parse(const char *list, unsigned supported, unsigned *mask, gh_error_t *err)
{
        _cleanup_free_ char *copy = strdup(list ? list : "");
        char *save = NULL, *item;
        unsigned m = 0;

        if (copy == NULL)
                return gh_err(err, ENOMEM, "parsing driver capabilities");
        for (item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
                unsigned bit;
                item = gh_trim(item);
                if (*item == '\0')
                        continue;
                if (strcmp(item, "all") == 0) {
                        m |= supported;
                        continue;
                }
                bit = gh_capability_from_name(item);
                if (bit == 0)
                        return gh_err(
                                err, 0,
                                "unknown driver capability '%s'; use a comma list of compute, compat32, display, graphics, ngx, utility, video, or all",
                                item);
                if (!(bit & supported))
                        return gh_err(
                                err, 0,
                                "driver capability '%s' is not supported by this host's configuration (supported-driver-capabilities)",
                                item);
                m |= bit;
        }
        *mask = m;
        return 0;
}

unsigned gh_capability_expand(unsigned mask)
{
        if (mask & GH_CAP_VIDEO)
                mask |= GH_CAP_COMPUTE;
        if (mask & GH_CAP_DISPLAY)
                mask |= GH_CAP_GRAPHICS;
        return mask;
}

void gh_capability_format(unsigned mask, char *buf, size_t size)
{
        size_t n = 0;
        if (size == 0)
                return;
        buf[0] = '\0';
        for (size_t i = 0; i < GH_ARRAY_SIZE(capabilities); i++) {
                if (!(mask & capabilities[i].bit))
                        continue;
                int w = snprintf(buf + n, size - n, "%s%s", n ? "," : "", capabilities[i].name);
                if (w < 0 || (size_t) w >= size - n)
                        break;
                n += (size_t) w;
        }
}
