/* The device nodes a GPU container gets, for linux.devices and linux.resources.devices.
 *
 * Same lookups as configure's (gpus.c fast path, select.c, devices.c) under the configured driver
 * root; gpu-cli configure later injects exactly these nodes again (a node the runtime already
 * created with the right number is accepted). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "devices.h"
#include "gpus.h"
#include "rootfs.h"
#include "runtime.h"
#include "select.h"

static bool needs_nvml(const struct gh_env_decision *d)
{
        for (size_t i = 0; i < d->devices.n; i++)
                if (d->devices.items[i].kind == GH_SELECT_MIG_UUID || d->devices.items[i].kind == GH_SELECT_MIG_INDEX)
                        return true;
        return d->mig_config || d->mig_monitor;
}

int gh_rt_devices_for(const struct gh_config *cfg, const struct gh_env_decision *d, struct gh_rt_devices *out,
                      gh_error_t *err)
{
        _cleanup_close_ int droot = -1;
        _cleanup_gpu_list_ struct gh_gpu_list gpus = { 0 };
        _cleanup_selection_ struct gh_selection sel = { 0 };
        _cleanup_free_ unsigned *minors = NULL;
        struct gh_device_list list = { 0 };
        struct gh_devices_request req = { .caps = d->capabilities };

        memset(out, 0, sizeof(*out));
        /* MIG devices are known only to NVML, which the runtime does not load: gpu-hook injects them. */
        if (needs_nvml(d))
                return 0;
        droot = gh_rootfs_open(cfg->cli.root, err);
        if (droot < 0)
                return gh_err_wrap(err, "driver root (cli.root)");
        if (!d->devices.is_void && (d->devices.all || d->devices.n > 0)) {
                if (gh_gpus_fast(droot, &gpus, err) < 0 || gh_select_resolve(&d->devices, &gpus, &sel, err) < 0)
                        return -1;
                minors = calloc(sel.ngpus + 1, sizeof(*minors));
                if (minors == NULL)
                        return gh_err(err, ENOMEM, "listing device nodes");
                for (size_t i = 0; i < sel.ngpus; i++)
                        minors[i] = sel.gpus[i]->minor;
                req.minors = minors;
                req.nminors = sel.ngpus;
        }
        req.imex_channels = d->imex_channels;
        req.nimex = d->n_imex_channels;
        if (gh_devices_collect(droot, &req, &list, err) < 0)
                return -1;
        out->v = calloc(list.n + 1, sizeof(*out->v));
        if (out->v == NULL) {
                gh_device_list_free(&list);
                return gh_err(err, ENOMEM, "listing device nodes");
        }
        for (size_t i = 0; i < list.n; i++) {
                out->v[i].path = steal_pointer(&list.v[i].path);
                out->v[i].rdev = list.v[i].rdev;
        }
        out->n = list.n;
        gh_device_list_free(&list);
        return 0;
}

void gh_rt_devices_free(struct gh_rt_devices *devs)
{
        for (size_t i = 0; i < devs->n; i++)
                free(devs->v[i].path);
        free(devs->v);
        memset(devs, 0, sizeof(*devs));
}
