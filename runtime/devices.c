/* The device nodes a GPU container gets, for linux.devices and linux.resources.devices: the device
 * items of the same plan gpu-cli configure builds (gh_plan_for_root) for the same request the hook
 * builds (gh_env_request).  gpu-cli configure later injects exactly these nodes again (it mounts
 * the host's node over the one the runtime created).
 *
 * Requirements are left out of the runtime's request: they do not change the nodes, checking them
 * may need NVML, and the hook checks them anyway when the container is created.  The request gets
 * the configuration's driver-state cache, so that after the first start of a request on a driver
 * the plan is the one kept then (discover.h) and nothing is discovered again. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "discover.h"
#include "hook.h"
#include "plan.h"
#include "runtime.h"

int gh_rt_devices_for(const struct gh_config *cfg, const struct gh_env_decision *d, struct gh_rt_devices *out,
                      gh_error_t *err)
{
        _cleanup_request_ struct gh_request req = GH_REQUEST_INIT;
        struct gh_plan plan = { 0 };
        struct gh_layout layout;
        int r = -1;

        memset(out, 0, sizeof(*out));
        if (gh_env_request(cfg, d, &req, err) < 0 || gh_layout_named("debian", &layout, err) < 0)
                return -1;
        gh_config_request_setup(cfg, &req);
        for (size_t i = 0; i < req.nrequirements; i++)
                free(req.requirements[i]);
        if (req.requirements != NULL)
                req.requirements[0] = NULL;
        req.nrequirements = 0;
        if (gh_plan_for_root_kept(cfg->cli.root, cfg->cli.ldcache, NULL, &req, &layout, true, &plan, err) < 0)
                return -1;
        out->v = calloc(plan.n + 1, sizeof(*out->v));
        if (out->v == NULL) {
                gh_err(err, ENOMEM, "listing device nodes");
                goto done;
        }
        for (size_t i = 0; i < plan.n; i++) {
                if (plan.items[i].kind != GH_ITEM_DEVICE)
                        continue;
                out->v[out->n].path = strdup(plan.items[i].dst);
                out->v[out->n].rdev = plan.items[i].rdev;
                if (out->v[out->n++].path == NULL) {
                        gh_err(err, ENOMEM, "listing device nodes");
                        goto done;
                }
        }
        r = 0;
done:
        gh_plan_free(&plan);
        if (r < 0)
                gh_rt_devices_free(out);
        return r;
}

void gh_rt_devices_free(struct gh_rt_devices *devs)
{
        for (size_t i = 0; i < devs->n; i++)
                free(devs->v[i].path);
        free(devs->v);
        memset(devs, 0, sizeof(*devs));
}
