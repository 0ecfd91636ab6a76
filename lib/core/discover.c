/* From a driver root to what a plan is built from (discover.h): the one discovery path. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "discover.h"
#include "fingerprint.h"
#include "log.h"
#include "plancache.h"
#include "require.h"
#include "rootfs.h"

static long now_us(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

int gh_driver_root_open(const char *driver_root, gh_error_t *err)
{
        int fd;

        if (driver_root == NULL || driver_root[0] != '/')
                return gh_err_usage(err, "driver root '%s' must be an absolute path", driver_root ? driver_root : "");
        fd = open(driver_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0)
                return fd;
        gh_err(err, errno, "opening the driver root %s", driver_root);
        /* A root that does not exist has no driver either. */
        if ((*err)->code == ENOENT || (*err)->code == ENOTDIR)
                gh_err_kind(err, GH_ERR_NO_DRIVER);
        return -1;
}

/* ---- GPUs ---- */

/* True when some GPU has a MIG GPU instance: only then does "all" include MIG devices, and only
 * NVML can name them.  The capabilities directory tells without loading NVML. */
static bool has_mig_instances(int droot, const struct gh_gpu_list *gpus)
{
        for (size_t i = 0; i < gpus->n; i++) {
                char path[96];
                _cleanup_error_ gh_error_t e = NULL;
                _cleanup_closedir_ DIR *dir = NULL;
                struct dirent *de;
                int fd;

                snprintf(path, sizeof(path), "/proc/driver/nvidia/capabilities/gpu%u/mig", gpus->gpus[i].minor);
                fd = gh_resolve(droot, path, O_RDONLY | O_DIRECTORY, &e);
                if (fd < 0)
                        continue;
                dir = fdopendir(fd);
                if (dir == NULL) {
                        close(fd);
                        continue;
                }
                while ((de = readdir(dir)) != NULL)
                        if (strncmp(de->d_name, "gi", 2) == 0)
                                return true;
        }
        return false;
}

static bool names_mig(const struct gh_select_request *d)
{
        for (size_t i = 0; i < d->n; i++)
                if (d->items[i].kind == GH_SELECT_MIG_UUID || d->items[i].kind == GH_SELECT_MIG_INDEX)
                        return true;
        return false;
}

/* True when the CUDA version is all of NVML's facts the request needs: every requirement uses only
 * the cuda key, no MIG device is named, no MIG capability node is asked for, and "all" includes no
 * MIG device.  Then a cold cache gets the CUDA version from libcuda instead of starting NVML. */
static bool cuda_enough(int droot, const struct gh_request *req, bool wants)
{
        for (size_t i = 0; i < req->nrequirements; i++) {
                _cleanup_error_ gh_error_t e = NULL;
                _cleanup_require_ struct gh_require *r = NULL;
                if (gh_require_parse(req->requirements[i], &r, &e) < 0 || gh_require_keys(r) != GH_REQUIRE_KEY_CUDA)
                        return false;
        }
        if (req->mig_config || req->mig_monitor || (wants && names_mig(&req->devices)))
                return false;
        if (wants && req->devices.all) {
                _cleanup_error_ gh_error_t e = NULL;
                _cleanup_gpu_list_ struct gh_gpu_list fast = { 0 };
                if (gh_gpus_fast(droot, &fast, &e) < 0 || has_mig_instances(droot, &fast))
                        return false;
        }
        return true;
}

int gh_plan_load_gpus(int droot, const struct gh_request *req, struct gh_gpu_list *gpus, gh_error_t *err)
{
        struct gh_gpus_opts go = GH_GPUS_OPTS_DEFAULT;
        bool wants = gh_request_wants_gpus(req);

        *gpus = (struct gh_gpu_list) { 0 };
        if (!wants && req->nrequirements == 0)
                return 0;
        go.uid = req->uid;
        go.gid = req->gid;
        go.state_file = req->state_file;
        go.cache = req->cache;
        if (req->nrequirements > 0 || (wants && names_mig(&req->devices))) {
                go.source = GH_GPUS_NVML;
                go.cuda_enough = cuda_enough(droot, req, wants);
                return gh_gpus_load(droot, &go, gpus, err);
        }
        if (gh_gpus_fast(droot, gpus, err) < 0)
                return -1;
        if (!req->devices.all || !has_mig_instances(droot, gpus))
                return 0;
        /* "all" on a driver with MIG instances: every MIG device too, which only NVML knows. */
        _cleanup_error_ gh_error_t e = NULL;
        struct gh_gpu_list full = { 0 };
        go.source = GH_GPUS_NVML;
        if (gh_gpus_load(droot, &go, &full, &e) < 0) {
                if (e->code == ELIBACC) { /* a static program: gpu-cli answers with them */
                        if (err != NULL)
                                *err = steal_pointer(&e);
                        return -1;
                }
                gh_warn("%s; MIG devices are left out of \"all\"", e->msg);
                return 0;
        }
        gh_gpu_list_free(gpus);
        *gpus = full;
        return 0;
}

void gh_plan_driver_opts(const struct gh_request *req, const char *ldcache, const char *path,
                         struct gh_driver_opts *out)
{
        *out = (struct gh_driver_opts) {
                .caps = gh_request_caps(req),
                .ldcache = ldcache,
                .path = path,
                .mps_pipe_dir = req->mps_pipe_dir,
                .no_persistenced = req->no_persistenced,
                .no_fabricmanager = req->no_fabricmanager,
                .no_gsp_firmware = req->no_gsp_firmware,
        };
}

/* ---- the one path ---- */

int gh_discover(const char *driver_root, const char *ldcache, const char *path, const struct gh_request *req,
                struct gh_discovery *out, gh_error_t *err)
{
        struct gh_driver_opts dopts;
        long t0;

        *out = (struct gh_discovery) GH_DISCOVERY_INIT;
        out->droot = gh_driver_root_open(driver_root, err);
        if (out->droot < 0)
                return -1;
        gh_plan_driver_opts(req, ldcache, path, &dopts);
        t0 = now_us();
        if (gh_driver_discover(out->droot, &dopts, &out->drv, err) < 0)
                goto fail;
        gh_debug("discover: driver files %ld us", now_us() - t0);
        t0 = now_us();
        if (gh_plan_load_gpus(out->droot, req, &out->gpus, err) < 0)
                goto fail;
        out->gpus_us = now_us() - t0;
        gh_debug("discover: GPUs %ld us (%zu, %s)", out->gpus_us, out->gpus.n, gh_gpus_origin_name(out->gpus.origin));
        return 0;
fail:
        gh_discovery_free(out);
        return -1;
}

void gh_discovery_free(struct gh_discovery *d)
{
        if (d->droot >= 0)
                close(d->droot);
        if (d->drv != NULL)
                gh_driver_free(d->drv);
        gh_gpu_list_free(&d->gpus);
        *d = (struct gh_discovery) GH_DISCOVERY_INIT;
}

/* The plan kept for this request (plancache.h) when req has a cache that keeps plans: 1 with *out
 * filled, 0 on a miss (with *key and *fp_text set when the plan built next can be kept).  Every
 * device node of a kept plan is checked against the root: the callers of gh_plan_for_root open no
 * source, and what they list (gpu-runtime: the nodes the runtime creates) must be the root's. */
static int plan_kept(const char *driver_root, const char *ldcache, const char *path, const struct gh_request *req,
                     const struct gh_layout *layout, struct gh_plan *out, char **key, char **fp_text)
{
        _cleanup_error_ gh_error_t e = NULL;
        _cleanup_close_ int droot = -1;

        *key = *fp_text = NULL;
        if (req->cache == NULL || req->cache->plan_lookup == NULL || req->cache->plan_save == NULL ||
            req->state_file == NULL)
                return 0;
        droot = gh_driver_root_open(driver_root, &e);
        if (droot < 0)
                return 0; /* discovery says why in its words */
        return gh_plan_cache_find(droot, driver_root, ldcache, path, req, layout, true, out, key, fp_text);
}

int gh_plan_for_root(const char *driver_root, const char *ldcache, const char *path, const struct gh_request *req,
                     const struct gh_layout *layout, struct gh_plan *out, gh_error_t *err)
{
        return gh_plan_for_root_kept(driver_root, ldcache, path, req, layout, false, out, err);
}

int gh_plan_for_root_kept(const char *driver_root, const char *ldcache, const char *path, const struct gh_request *req,
                          const struct gh_layout *layout, bool keep, struct gh_plan *out, gh_error_t *err)
{
        _cleanup_free_ char *key = NULL, *fp_text = NULL;
        struct gh_discovery d;
        int r;

        memset(out, 0, sizeof(*out));
        if (keep && plan_kept(driver_root, ldcache, path, req, layout, out, &key, &fp_text) == 1)
                return 0;
        if (gh_discover(driver_root, ldcache, path, req, &d, err) < 0)
                return -1;
        r = gh_plan_build(d.droot, d.drv, &d.gpus, req, layout, out, err);
        gh_discovery_free(&d);
        if (r == 0)
                gh_plan_cache_keep(req, key, fp_text, out);
        return r;
}
