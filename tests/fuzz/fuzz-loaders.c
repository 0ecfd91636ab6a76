/* Graphics loader files (lib/core/loaders.c, lib/core/jsonread.c).  Besides "no crash": the first byte picks the kind; an
 * accepted file of a kind with a library names one that is non-empty and NUL-free, a refusal says
 * why. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "loaders.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_free_ char *lib = NULL;
        enum gh_loader_kind kind;

        if (size < 1 || size > GH_LOADER_JSON_MAX)
                return 0;
        kind = (enum gh_loader_kind)(data[0] % (GH_LOADER_APP_PROFILES + 1));
        if (gh_loader_parse(kind, (const char *) data + 1, size - 1, &lib, &err) < 0) {
                if (err == NULL || err->msg == NULL || err->msg[0] == '\0' || lib != NULL)
                        abort();
                return 0;
        }
        if (kind == GH_LOADER_APP_PROFILES ? lib != NULL : lib == NULL || lib[0] == '\0')
                abort();
        return 0;
}
