/* lib/core/capability.c: NVIDIA_DRIVER_CAPABILITIES and configure's --compute/--utility/...: names,
 * comma lists, "all", the host's supported set, implications and the printed form. */
#include <string.h>

#include "capability.h"
#include "cleanup.h"
#include "tests/tap.h"

static int parse(const char *list, unsigned supported, unsigned *mask, char *msg, size_t size)
{
        _cleanup_error_ gh_error_t err = NULL;
        int r;

        *mask = 0xdead;
        r = gh_capability_parse(list, supported, mask, &err);
        snprintf(msg, size, "%s", r < 0 ? err->msg : "");
        return r;
}

int main(void)
{
        char buf[128], msg[256];
        unsigned m;

        is_str(gh_capability_name(GH_CAP_COMPUTE), "compute", "bit -> name");
        ok(gh_capability_name(GH_CAP_COMPUTE | GH_CAP_UTILITY) == NULL && gh_capability_name(1u << 20) == NULL,
           "two bits or an unknown bit have no name");
        is_int(gh_capability_from_name("video"), GH_CAP_VIDEO, "name -> bit");
        is_int(gh_capability_from_name("Compute"), 0, "names are case-sensitive, as NVIDIA's hook reads them");
        is_int(gh_capability_from_name("all"), 0, "'all' is not one capability");

        ok(parse("utility,compute", GH_CAP_ALL, &m, msg, sizeof(msg)) == 0 && m == (GH_CAP_UTILITY | GH_CAP_COMPUTE),
           "utility,compute");
        ok(parse(" utility , ,compute,", GH_CAP_ALL, &m, msg, sizeof(msg)) == 0 &&
                   m == (GH_CAP_UTILITY | GH_CAP_COMPUTE),
           "blanks trimmed, empty items dropped");
        ok(parse("", GH_CAP_ALL, &m, msg, sizeof(msg)) == 0 && m == 0, "an empty list is no capability");
        ok(parse("all", GH_CAP_ALL, &m, msg, sizeof(msg)) == 0 && m == GH_CAP_ALL, "all is every capability");
        ok(parse("all", GH_CAP_UTILITY | GH_CAP_COMPUTE, &m, msg, sizeof(msg)) == 0 &&
                   m == (GH_CAP_UTILITY | GH_CAP_COMPUTE),
           "all is every supported capability");
        ok(parse("compute,gpu", GH_CAP_ALL, &m, msg, sizeof(msg)) < 0 && strstr(msg, "'gpu'") &&
                   strstr(msg, "compute, compat32, display"),
           "an unknown name is refused, naming it and the known ones: %s", msg);
        ok(parse("graphics", GH_CAP_UTILITY | GH_CAP_COMPUTE, &m, msg, sizeof(msg)) < 0 && strstr(msg, "'graphics'") &&
                   strstr(msg, "supported-driver-capabilities"),
           "a name the host does not support is refused, naming the setting: %s", msg);

        is_int(gh_capability_expand(GH_CAP_VIDEO), GH_CAP_VIDEO | GH_CAP_COMPUTE, "video implies compute");
        is_int(gh_capability_expand(GH_CAP_DISPLAY), GH_CAP_DISPLAY | GH_CAP_GRAPHICS, "display implies graphics");
        is_int(gh_capability_expand(GH_CAP_UTILITY), GH_CAP_UTILITY, "utility implies nothing");
        is_int(gh_capability_expand(GH_CAP_GRAPHICS), GH_CAP_GRAPHICS, "nor does graphics imply display");

        gh_capability_format(GH_CAP_VIDEO | GH_CAP_COMPAT32 | GH_CAP_UTILITY, buf, sizeof(buf));
        is_str(buf, "compat32,utility,video", "printed sorted by name");
        gh_capability_format(0, buf, sizeof(buf));
        is_str(buf, "", "no capability prints as nothing");
        gh_capability_format(GH_CAP_ALL, buf, 12);
        ok(strlen(buf) < 12, "a short buffer is not overrun ('%s')", buf);
        gh_capability_format(GH_CAP_ALL, buf, sizeof(buf));
        ok(parse(buf, GH_CAP_ALL, &m, msg, sizeof(msg)) == 0 && m == GH_CAP_ALL, "the printed form parses back");
        return tap_done();
}
