/* Driver capabilities (NVIDIA_DRIVER_CAPABILITIES, configure --compute/--utility/...): a bitmask. */
#ifndef GH_CAPABILITY_H
#define GH_CAPABILITY_H

#include <stdbool.h>

#include "error.h"

enum {
        GH_CAP_COMPUTE = 1 << 0,
        GH_CAP_COMPAT32 = 1 << 1,
        GH_CAP_DISPLAY = 1 << 2,
        GH_CAP_GRAPHICS = 1 << 3,
        GH_CAP_NGX = 1 << 4,
        GH_CAP_UTILITY = 1 << 5,
        GH_CAP_VIDEO = 1 << 6,
        GH_CAP_ALL = (1 << 7) - 1,
};

/* Name of a single capability bit ("compute"), or NULL. */
const char *gh_capability_name(unsigned bit);

/* Parses one name (case-sensitive, as NVIDIA's hook) into its bit; 0 when unknown. */
unsigned gh_capability_from_name(const char *name);

/* Parses a comma list ("utility,compute", blanks trimmed, empty items dropped, "all" = every
 * capability in `supported`).  A name outside `supported` is an error naming it (unless the value
 * is "all").  Implications are NOT applied here (see gh_capability_expand). */
int gh_capability_parse(const char *list, unsigned supported, unsigned *mask, gh_error_t *err);

/* Applies the implications: video implies compute, display implies graphics. */
unsigned gh_capability_expand(unsigned mask);

/* Writes "compat32,compute,..." (sorted by name) into buf. */
void gh_capability_format(unsigned mask, char *buf, size_t size);

#endif
