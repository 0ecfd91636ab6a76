/* From a driver root to what a plan is built from: the one path that gpu-cli configure (and its
 * --dry-run), list, cdi generate, doctor and gpu-runtime take (docs/plan.md).
 *
 *   gh_driver_root_open()  the driver root as an fd; a root that does not exist has no driver
 *                          (GH_ERR_NO_DRIVER, exit status 3), the one "missing root" rule
 *   gh_discover()          the root, its driver's files and the GPUs the request needs to know
 *                          about (NVML only when it must)
 *   gh_plan_for_root()     gh_discover(), then gh_plan_build() (plan.h) for a given layout;
 *                          gh_plan_for_root_kept() may take the plan kept in the driver-state cache;
 *                          configure builds from gh_discover() itself, once it has opened the
 *                          container and detected the layout from its rootfs */
#ifndef GH_DISCOVER_H
#define GH_DISCOVER_H

#include "driver.h"
#include "error.h"
#include "gpus.h"
#include "plan.h"
#include "request.h"

/* Opens a driver root (absolute path, O_PATH directory).  A root that is missing or not a
 * directory fails with kind GH_ERR_NO_DRIVER; a relative one is a usage error. */
int gh_driver_root_open(const char *driver_root, gh_error_t *err);

/* What discovery found under a driver root. */
struct gh_discovery {
        int droot;               /* the driver root (gh_driver_root_open) */
        struct gh_driver *drv;   /* the driver's files (driver.h) */
        struct gh_gpu_list gpus; /* what the request needs to know about the GPUs */
        long gpus_us;            /* how long loading them took (for configure's timings) */
};
#define GH_DISCOVERY_INIT                                                                                              \
        {                                                                                                              \
                .droot = -1                                                                                            \
        }

/* Opens driver_root, discovers its driver (ldcache, path: the root's ld.so.cache and PATH, NULL
 * for the defaults) for req's capabilities and switches, and loads the GPUs req needs
 * (gh_plan_load_gpus).  Fails with kind GH_ERR_NO_DRIVER when the root has no driver (or does not
 * exist); *out is empty on failure.  Free with gh_discovery_free. */
int gh_discover(const char *driver_root, const char *ldcache, const char *path, const struct gh_request *req,
                struct gh_discovery *out, gh_error_t *err);
void gh_discovery_free(struct gh_discovery *d);

/* Loads what the request needs to know about the GPUs into *gpus (left empty when it names no GPU
 * and has no requirement).  NVML (the driver service, as req->uid/gid) is asked only when the
 * request needs what only it knows: requirements, MIG devices named, or "all" on a driver that has
 * MIG instances; "all" falls back to the GPUs without their MIG devices, with a warning, when NVML
 * cannot answer.  Requirements that use only the cuda key (no MIG involved) take the CUDA version
 * from libcuda instead when the cache misses, and NVML only if that fails. */
int gh_plan_load_gpus(int driver_rootfd, const struct gh_request *req, struct gh_gpu_list *gpus, gh_error_t *err);

/* The driver discovery options of a request (caps, no_* switches, the MPS pipe dir); ldcache and
 * path are the driver root's (NULL: defaults). */
void gh_plan_driver_opts(const struct gh_request *req, const char *ldcache, const char *path,
                         struct gh_driver_opts *out);

/* gh_discover(), then gh_plan_build() for layout.  Fails with kind GH_ERR_NO_DRIVER when the root
 * has no driver (or does not exist). */
int gh_plan_for_root(const char *driver_root, const char *ldcache, const char *path, const struct gh_request *req,
                     const struct gh_layout *layout, struct gh_plan *out, gh_error_t *err);

/* The same; with keep, and when req has a cache that keeps plans (req->cache with plan_lookup and
 * plan_save, req->state_file), the plan kept for this request, layout and driver is taken instead
 * (every device node it names checked against the root), and one built is kept: the same plans,
 * under the same keys, as gh_configure's (plancache.h).  For a caller that wants the plan a start
 * gets (gpu-runtime), not one that explains or lists the driver as it is now. */
int gh_plan_for_root_kept(const char *driver_root, const char *ldcache, const char *path, const struct gh_request *req,
                          const struct gh_layout *layout, bool keep, struct gh_plan *out, gh_error_t *err);

#endif
