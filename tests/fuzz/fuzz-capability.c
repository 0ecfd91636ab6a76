/* Smoke target for the fuzz infrastructure: the NVIDIA_DRIVER_CAPABILITIES parser.  Besides "no
 * crash", it checks a property a user relies on: whatever parses, formats back to a list that
 * parses to the same mask. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "capability.h"
#include "cleanup.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_free_ char *s = NULL;
        unsigned mask = 0, again = 0, supported;
        char buf[128];

        if (size < 1 || size > 4096)
                return 0;
        /* The first byte picks the configured supported set, the rest is the variable's value. */
        supported = data[0] & GH_CAP_ALL;
        s = strndup((const char *) data + 1, size - 1);
        if (s == NULL)
                return 0;
        if (gh_capability_parse(s, supported, &mask, &err) < 0) {
                if (err == NULL || err->msg == NULL)
                        abort(); /* a refusal must say why */
                return 0;
        }
        if (mask & ~supported)
                abort();
        gh_capability_format(gh_capability_expand(mask), buf, sizeof(buf));
        if (gh_capability_parse(buf, GH_CAP_ALL, &again, &err) < 0 || again != gh_capability_expand(mask))
                abort();
        return 0;
}
