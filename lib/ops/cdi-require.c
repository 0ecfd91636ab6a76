/* check-requirements (nvidia-cdi-hook check-requirements, cdi-hook --check-requirements): the
 * image's NVIDIA_REQUIRE_* (and a legacy image's CUDA_VERSION) checked against the host driver,
 * as gpu-hook checks them on the hook path, so that a CDI container whose image needs a newer
 * driver is refused with a line that says so instead of starting and failing in cuInit.
 *
 * The facts are the driver's: its CUDA version (the driver-state cache, else libcuda, else NVML),
 * its version, and, for arch and brand conditions, the GPUs whose /dev/nvidiaN config.json's
 * linux.devices holds (NVIDIA's hook looks at GPU 0 whatever the container has).  Nothing in the
 * container is read or written: the variables come from config.json. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cdi-hook.h"
#include "cleanup.h"
#include "config.h" /* the build's: GPUHOOK_DEFAULT_CONFIG */
#include "discover.h"
#include "env.h"
#include "gpus.h"
#include "hookconfig.h"
#include "log.h"
#include "oci.h"
#include "request.h"
#include "require.h"
#include "select.h"

/* The GPUs of the list whose device node the runtime creates. */
static int container_gpus(const struct gh_gpu_list *gpus, const struct gh_oci_spec *spec, struct gh_selection *sel,
                          gh_error_t *err)
{
        sel->gpus = calloc(gpus->n + 1, sizeof(*sel->gpus));
        sel->full = calloc(gpus->n + 1, sizeof(*sel->full));
        if (sel->gpus == NULL || sel->full == NULL)
                return gh_err(err, ENOMEM, "checking the requirements");
        for (size_t g = 0; g < gpus->n; g++)
                for (size_t i = 0; i < spec->n_devices; i++)
                        if (gh_cdi_gpu_node(&spec->devices[i]) &&
                            spec->devices[i].minor == (long long) gpus->gpus[g].minor) {
                                sel->full[sel->ngpus] = true;
                                sel->gpus[sel->ngpus++] = &gpus->gpus[g];
                                break;
                        }
        return 0;
}

int gh_cdi_check_requirements(const struct gh_cdi_hook_opts *o, int droot, const struct gh_oci_spec *spec,
                              gh_error_t *err)
{
        _cleanup_error_ gh_error_t e = NULL;
        _cleanup_request_ struct gh_request req = GH_REQUEST_INIT;
        _cleanup_gpu_list_ struct gh_gpu_list gpus = { 0 };
        _cleanup_selection_ struct gh_selection sel = { 0 };
        struct gh_env_decision d;
        struct gh_config cfg;
        bool no_gpu_facts = false;
        int r = -1;

        /* disable-require and cli.user are read from the configuration; one that cannot be read must
         * not stop CDI containers: its defaults (check, the overflow user) then. */
        if (gh_config_load(&cfg, o->config ? o->config : GPUHOOK_DEFAULT_CONFIG, &e) < 0) {
                gh_warn("%s; checking the image's requirements with the default settings", e->msg);
                gh_error_free(&e);
                if (gh_config_init(&cfg, err) < 0)
                        return -1;
        }
        if (gh_env_requirements(spec, &cfg, &d, err) < 0) {
                gh_err_wrap(err, "the image's requirements");
                goto out_cfg;
        }
        if (d.n_requirements == 0) {
                gh_debug("check-requirements: the image states none (or NVIDIA_DISABLE_REQUIRE)");
                r = 0;
                goto out;
        }
        for (size_t i = 0; i < d.n_requirements; i++)
                if (gh_request_add_requirement(&req, d.requirements[i], err) < 0)
                        goto out;
        if (cfg.cli.user && gh_request_set_user(&req, cfg.cli.user, err) < 0) {
                gh_err_wrap(err, "\"cli.user\" in the gpu-hook configuration");
                goto out;
        }
        req.state_file = o->cache_file;
        req.cache = o->cache;
        if (o->no_driver_libs) {
                struct gh_gpus_opts go = GH_GPUS_OPTS_DEFAULT;
                go.state_file = o->cache_file;
                go.cache = o->cache;
                if (o->cache == NULL || o->cache_file == NULL || !gh_gpus_load_cached(droot, &go, &gpus)) {
                        gh_debug("check-requirements: no cached driver facts for this driver root");
                        r = 1;
                        goto out;
                }
        } else if (gh_plan_load_gpus(droot, &req, &gpus, &e) < 0) {
                /* NVML can fail where a CUDA version still comes: a createContainer hook runs under the
                 * container's device rules, which deny the nodes of GPUs it does not get.  Then cuda
                 * and driver are checked, arch and brand pass (unknown), with a warning. */
                struct gh_gpus_opts go = GH_GPUS_OPTS_DEFAULT;
                go.source = GH_GPUS_CUDA;
                go.uid = req.uid;
                go.gid = req.gid;
                if (gh_gpus_load(droot, &go, &gpus, err) < 0) {
                        gh_err_wrap(err,
                                    "the image states requirements (%s%s), but the driver could not be asked (%s); "
                                    "set NVIDIA_DISABLE_REQUIRE=true to start it unchecked",
                                    d.requirements[0], d.n_requirements > 1 ? ", ..." : "", e->msg);
                        goto out;
                }
                gh_warn("check-requirements: %s; arch and brand conditions are not checked", e->msg);
                no_gpu_facts = true;
        }
        if (!no_gpu_facts && container_gpus(&gpus, spec, &sel, err) < 0)
                goto out;
        for (size_t i = 0; i < d.n_requirements; i++)
                if (gh_require_check_expr(d.requirements[i], &gpus, no_gpu_facts ? NULL : &sel, err) < 0)
                        goto out;
        gh_debug("check-requirements: %zu met (driver %s, CUDA %s, %zu GPUs of the container)", d.n_requirements,
                 gpus.driver_version, gpus.cuda_version, sel.ngpus);
        r = 0;
out:
        gh_env_decision_free(&d);
out_cfg:
        gh_config_free(&cfg);
        return r;
}
