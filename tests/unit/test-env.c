/* lib/front/env.c helpers that the dry-run table cannot reach one by one: CUDA_VERSION parsing (the legacy
 * requirement), NVIDIA_DISABLE_REQUIRE spellings, and the requirements-only decision that
 * check-requirements makes.  The rules themselves are tested through gpu-hook --dry-run in
 * test-hook-dryrun.sh. */
#include <string.h>

#include "env.h"
#include "hookconfig.h"
#include "oci.h"
#include "tap.h"

/* gh_env_requirements of these variables: the requirements joined by ' | ', or "error: MSG". */
static const char *requirements_of(char **env, size_t n, bool disable_require, char *out, size_t size)
{
        struct gh_oci_spec spec = { .env = env, .n_env = n };
        struct gh_env_decision d;
        struct gh_config cfg;
        gh_error_t err = NULL;
        size_t len = 0;

        out[0] = '\0';
        if (gh_config_init(&cfg, &err) < 0)
                return "error: no config";
        cfg.disable_require = disable_require;
        if (gh_env_requirements(&spec, &cfg, &d, &err) < 0) {
                snprintf(out, size, "error: %s", err->msg);
                gh_error_free(&err);
        } else {
                for (size_t i = 0; i < d.n_requirements; i++)
                        len += (size_t) snprintf(out + len, len < size ? size - len : 0, "%s%s", i ? " | " : "",
                                                 d.requirements[i]);
                gh_env_decision_free(&d);
        }
        gh_config_free(&cfg);
        return out;
}

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

        /* The requirements alone, whatever the device variables say (a CDI container's are "void"). */
        char buf[512];
        char *a[] = { "NVIDIA_VISIBLE_DEVICES=void", "NVIDIA_REQUIRE_CUDA=cuda>=12.0", "NVIDIA_REQUIRE_ARCH=arch>=9.0",
                      "NVIDIA_REQUIRE_JETPACK=csv-mounts=all", "PATH=/bin" };
        is_str(requirements_of(a, 5, false, buf, sizeof(buf)), "arch>=9.0 | cuda>=12.0",
               "requirements: every NVIDIA_REQUIRE_* but JETPACK, by name, with NVIDIA_VISIBLE_DEVICES=void");
        is_str(requirements_of(a, 5, true, buf, sizeof(buf)), "", "requirements: none with disable-require");
        char *b[] = { "CUDA_VERSION=12.4.1", "NVIDIA_REQUIRE_X=driver>=550" };
        is_str(requirements_of(b, 2, false, buf, sizeof(buf)), "driver>=550 | cuda>=12.4",
               "requirements: a legacy image (CUDA_VERSION, no NVIDIA_REQUIRE_CUDA) adds cuda>=12.4");
        char *c[] = { "CUDA_VERSION=12.4.1", "NVIDIA_REQUIRE_CUDA=cuda>=12.2", "NVIDIA_DISABLE_REQUIRE=true" };
        is_str(requirements_of(c, 2, false, buf, sizeof(buf)), "cuda>=12.2",
               "requirements: NVIDIA_REQUIRE_CUDA set: not a legacy image");
        is_str(requirements_of(c, 3, false, buf, sizeof(buf)), "",
               "requirements: none with NVIDIA_DISABLE_REQUIRE=true");
        char *d[] = { "CUDA_VERSION=eleven" };
        ok(strstr(requirements_of(d, 1, false, buf, sizeof(buf)), "error: ") == buf && strstr(buf, "CUDA_VERSION"),
           "requirements: a malformed legacy CUDA_VERSION is an error naming it");
        char *e[] = { "NVIDIA_REQUIRE_CUDA=cuda>=" };
        ok(strstr(requirements_of(e, 1, false, buf, sizeof(buf)), "error: ") == buf &&
                   strstr(buf, "NVIDIA_REQUIRE_CUDA"),
           "requirements: a malformed expression is an error naming the variable");
        return tap_done();
}
