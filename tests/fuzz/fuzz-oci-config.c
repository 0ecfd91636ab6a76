/* The bundle's config.json, then the whole docs/environment.md decision on its environment under two
 * policies (defaults, and every optional source switched on with the unprivileged gate closed).
 * Checks: a refusal says why; rootfs is absolute; a non-GPU decision carries nothing; the dry-run
 * object can always be built. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "capability.h"
#include "cleanup.h"
#include "env.h"
#include "hookconfig.h"
#include "oci.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void decide(const struct gh_oci_spec *spec, const struct gh_config *cfg)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_env_decision d;
        json_t *j;

        if (gh_env_decide(spec, cfg, &d, &err) < 0) {
                if (err == NULL || err->msg == NULL)
                        abort();
                return;
        }
        if (!d.gpu_container &&
            (d.devices.n || d.n_requirements || d.capabilities || d.mig_config || d.n_imex_channels))
                abort();
        if (d.capabilities & ~GH_CAP_ALL)
                abort();
        for (size_t i = 0; i < d.n_imex_channels; i++)
                if (d.imex_channels[i] >= GH_IMEX_CHANNEL_LIMIT)
                        abort();
        if ((d.mig_config || d.mig_monitor) && !spec->privileged)
                abort();
        j = gh_env_decision_json(&d, spec->rootfs, 1);
        if (j == NULL)
                abort();
        json_decref(j);
        gh_env_decision_free(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_oci_spec spec;
        struct gh_config cfg;
        static char *swarm[] = { (char *) "DOCKER_RESOURCE_GPU", (char *) "SWARM_B", NULL };

        struct gh_oci_spec brief;
        _cleanup_error_ gh_error_t berr = NULL;
        int br;

        if (size > 1 << 20)
                return 0;
        /* cdi-hook's brief reading: never more lenient about what it reads, never a crash. */
        br = gh_oci_spec_parse_brief((const char *) data, size, "/bundle", &brief, &berr);
        if (br < 0 && (berr == NULL || berr->msg == NULL))
                abort();
        if (gh_oci_spec_parse((const char *) data, size, "/bundle", &spec, &err) < 0) {
                if (err == NULL || err->msg == NULL)
                        abort();
                if (br == 0)
                        gh_oci_spec_free(&brief);
                return 0;
        }
        if (spec.rootfs == NULL || spec.rootfs[0] != '/')
                abort();
        /* What the full reading takes, the brief one takes the same way. */
        if (br < 0 || strcmp(brief.rootfs, spec.rootfs) != 0 || brief.n_devices != spec.n_devices)
                abort();
        for (size_t i = 0; i < spec.n_devices; i++)
                if (strcmp(brief.devices[i].path, spec.devices[i].path) != 0 ||
                    brief.devices[i].type != spec.devices[i].type || brief.devices[i].major != spec.devices[i].major ||
                    brief.devices[i].minor != spec.devices[i].minor)
                        abort();
        gh_oci_spec_free(&brief);
        /* check-requirements' reading (brief + process.env): the full reading's variables, in order. */
        gh_error_free(&berr);
        if (gh_oci_spec_parse_brief_env((const char *) data, size, "/bundle", &brief, &berr) < 0 ||
            brief.n_env != spec.n_env)
                abort();
        for (size_t i = 0; i < spec.n_env; i++)
                if (strcmp(brief.env[i], spec.env[i]) != 0)
                        abort();
        gh_oci_spec_free(&brief);
        if (gh_config_init(&cfg, NULL) == 0) {
                char **saved = cfg.swarm_resource;
                decide(&spec, &cfg);
                cfg.accept_envvar_unprivileged = false;
                cfg.accept_volume_mounts = true;
                cfg.supported_caps = GH_CAP_COMPUTE | GH_CAP_UTILITY | GH_CAP_VIDEO;
                cfg.swarm_resource = swarm;
                cfg.n_swarm_resource = 2;
                decide(&spec, &cfg);
                cfg.swarm_resource = saved;
                gh_config_free(&cfg);
        }
        gh_oci_spec_free(&spec);
        return 0;
}
