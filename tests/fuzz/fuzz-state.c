/* The OCI state a runtime writes on the hook's stdin.  Besides "no crash": a refusal says why, and
 * an accepted state always has an absolute bundle (the hook opens it next). */
#include <stdint.h>
#include <stdlib.h>

#include "cleanup.h"
#include "oci.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_oci_state st;

        if (size > GH_OCI_STATE_MAX)
                return 0;
        if (gh_oci_state_parse((const char *) data, size, &st, &err) < 0) {
                if (err == NULL || err->msg == NULL)
                        abort();
                return 0;
        }
        if (st.bundle == NULL || st.bundle[0] != '/' || st.pid < 0)
                abort();
        gh_oci_state_free(&st);
        return 0;
}
