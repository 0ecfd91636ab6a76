/* /proc/PID/cgroup text to a container runtime and id.  Besides "no crash": an id taken is
 * non-empty, bounded and made of [A-Za-z0-9_.:@-] only (it ends up in Prometheus labels). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "container.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char rt[GH_RUNTIME_MAX], id[GH_CONTAINER_ID_MAX];
        int r = gh_cgroup_container((const char *) data, size, rt, id);

        if (r < -1 || r > 1 || strlen(id) >= GH_CONTAINER_ID_MAX || (r == 1 && (id[0] == '\0' || rt[0] == '\0')))
                abort();
        if (strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:@-") != strlen(id))
                abort();
        return 0;
}
