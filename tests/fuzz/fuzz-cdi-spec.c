/* The CDI spec reader (lib/ops/cdi-specs.c, YAML through lib/ops/yaml-read.c): any input is refused
 * with a message or accepted with the shape the rest relies on; writer, staleness and the fix are
 * computed for every accepted spec.  The first byte picks the format (even: YAML, odd: JSON). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cdi-specs.h"
#include "cleanup.h"
#include "oci.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        _cleanup_error_ gh_error_t err = NULL;
        const char *name;
        json_t *doc = NULL;

        if (size < 1 || size > (1u << 20))
                return 0;
        name = (data[0] & 1) ? "/fuzz/spec.json" : "/fuzz/spec.yaml";
        if (gh_cdi_spec_parse((const char *) data + 1, size - 1, name, &doc, &err) < 0) {
                if (err == NULL || err->msg == NULL || doc != NULL || strchr(err->msg, '\n') != NULL)
                        abort();
                return 0;
        }
        if (!json_is_object(doc) || !json_is_string(json_object_get(doc, "kind")) ||
            json_array_size(json_object_get(doc, "devices")) == 0)
                abort();
        enum gh_cdi_writer w = gh_cdi_spec_writer(doc, name);
        char *stale = gh_cdi_spec_stale(doc, "580.95.05");
        char *fix = gh_cdi_spec_fix(doc, name, w);
        if (gh_cdi_writer_name(w) == NULL || fix == NULL || (stale && strchr(stale, '\n')))
                abort();
        free(stale);
        free(fix);
        json_decref(doc);
        return 0;
}
