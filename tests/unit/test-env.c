/* lib/front/env.c helpers that the dry-run table cannot reach one by one: CUDA_VERSION parsing (the legacy
 * requirement) and NVIDIA_DISABLE_REQUIRE spellings.  The rules themselves are tested through
 * gpu-hook --dry-run in test-hook-dryrun.sh. */
#include <string.h>

#include "env.h"
#include "tap.h"

int main(void)
{
        static const struct {
                const char *in, *want; /* want NULL: malformed */
        } versions[] = {
                { "11.6", "11.6" },
                { "v11.6", "11.6" },
                { "9.0.116", "9.0" },
                { "12", "12.0" },
                { "v12", "12.0" },
                { "12.4.1-rc1", "12.4" },
                { "12.4.1+build.5", "12.4" },
                { "0.0", "0.0" },
                { "10.0.130", "10.0" },
                { "", NULL },
                { "v", NULL },
                { "eleven", NULL },
                { "11.06", NULL },
                { "011.6", NULL },
                { "11.6.0.1", NULL },
                { "11.6-rc1", NULL },
                { "11.", NULL },
                { ".6", NULL },
                { "11..6", NULL },
                { " 11.6", NULL },
                { "11.6 ", NULL },
                { "vv11.6", NULL },
                { "11.6.1-", NULL },
                { "11.6.1-r c", NULL },
                { "99999999999.0", NULL },
                { "-1.0", NULL },
        };
        char out[48];

        for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
                int r = gh_env_cuda_major_minor(versions[i].in, out, sizeof(out));
                if (versions[i].want)
                        ok(r == 0 && strcmp(out, versions[i].want) == 0, "CUDA_VERSION '%s' -> %s", versions[i].in,
                           versions[i].want);
                else
                        ok(r < 0, "CUDA_VERSION '%s' is malformed", versions[i].in);
        }
        ok(gh_env_cuda_major_minor(NULL, out, sizeof(out)) < 0, "unset CUDA_VERSION is malformed");

        static const char *const yes[] = { "1", "t", "T", "true", "TRUE", "True" };
        static const char *const no[] = { "0", "f", "false", "yes", "on", "", " true", "tRUE", "2" };
        for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
                ok(gh_env_parse_bool(yes[i]), "NVIDIA_DISABLE_REQUIRE='%s' is true", yes[i]);
        for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
                ok(!gh_env_parse_bool(no[i]), "NVIDIA_DISABLE_REQUIRE='%s' is false", no[i]);
        ok(!gh_env_parse_bool(NULL), "unset NVIDIA_DISABLE_REQUIRE is false");
        return tap_done();
}
