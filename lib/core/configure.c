#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "capability.h"
#include "caps.h"
#include "cgroup.h"
#include "cleanup.h"
#include "configure.h"
#include "devices.h"
#include "discover.h"
#include "fingerprint.h"
#include "ldcache.h"
#include "ldconfig.h"
#include "log.h"
#include "mount.h"
#include "ns.h"
#include "plan.h"
#include "plancache.h"
#include "require.h"
#include "rootfs.h"
#include "select.h"
#include "steps.h"

static long now_us(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

/* The plan kept in the driver-state cache for this request, driver and image layout (plancache.h).
 * Returns 1 with *plan filled on a hit, 0 otherwise.  *key and *fp_text are set (when there is a
 * cache to keep plans in and the driver has a fingerprint) so that gh_configure can keep the plan it
 * builds; the fingerprint is taken before anything is discovered, so a driver that changes meanwhile
 * leaves a kept plan that no longer matches.  ns is opened here (its layout is part of the key) when
 * it can be; a failure to open it is left to the caller's own attempt, so a miss reports what it
 * always reported, in the order it always did (a missing driver: discovery says so in its words). */
static int kept_plan(const struct gh_configure_opts *o, int droot, struct gh_ns *ns, struct gh_layout *layout,
                     struct gh_plan *plan, char **key, char **fp_text)
{
        const struct gh_request *req = o->req;

        *key = *fp_text = NULL;
        {
                _cleanup_error_ gh_error_t e1 = NULL, e2 = NULL;
                int r = gh_caps_enter(GH_PHASE_ENTER, &e1) < 0 ? -1 : gh_ns_open(o->pid, o->rootfs, ns, &e1);
                if (gh_caps_enter(GH_PHASE_DISCOVER, &e2) < 0 || r < 0) {
                        gh_ns_close(ns); /* every fd back to -1: the caller opens it again and says why not */
                        return 0;
                }
        }
        GH_STEP("driver.ns");
        gh_layout_detect(ns->host_rootfs, layout);
        GH_STEP("driver.layout");
        /* Bound device nodes are checked as they are opened (gh_plan_open_sources: a node that is
         * gone or changed makes gh_configure build the plan anew); nodes made with mknod are
         * opened by nobody, so gh_plan_cache_find checks those. */
        return gh_plan_cache_find(droot, o->root, o->ldcache, o->path, req, layout, false, plan, key, fp_text);
}

/* Discovery (the one path, discover.h), the container's namespaces (unless kept_plan opened them)
 * and the plan built from them. */
static int build_plan(const struct gh_configure_opts *o, struct gh_discovery *d, struct gh_ns *ns,
                      struct gh_layout *layout, struct gh_plan *plan, struct gh_configure_timings *t, long t0, long *t1,
                      gh_error_t *err)
{
        const struct gh_request *req = o->req;

        if (gh_discover(o->root, o->ldcache, o->path, req, d, err) < 0)
                return -1;
        t->used_nvml = d->gpus.from_nvml;
        t->gpus_origin = d->gpus.origin;
        t->gpus_us = d->gpus_us;
        *t1 = now_us();
        t->discover_us = *t1 - t0;

        /* Plan: decide every target and open every source while still on the host.  Looking at
         * another process's /proc/PID/{root,ns} needs the enter phase's CAP_SYS_PTRACE. */
        if (ns->self_mnt < 0) {
                if (gh_caps_enter(GH_PHASE_ENTER, err) < 0 || gh_ns_open(o->pid, o->rootfs, ns, err) < 0 ||
                    gh_caps_enter(GH_PHASE_DISCOVER, err) < 0)
                        return -1;
                /* The rootfs is the same directory on the host: decide the library directory from it. */
                gh_layout_detect(ns->host_rootfs, layout);
        }
        return gh_plan_build(d->droot, d->drv, &d->gpus, req, layout, plan, err);
}

int gh_configure(const struct gh_configure_opts *o, struct gh_configure_timings *t, gh_error_t *err)
{
        _cleanup_close_ int rootfd = -1, ldconfig_fd = -1, kroot = -1;
        const struct gh_request *req = o->req;
        struct gh_discovery d = GH_DISCOVERY_INIT;
        _cleanup_free_ char *plan_key = NULL, *plan_fp = NULL;
        struct gh_plan plan = { 0 };
        struct gh_layout layout;
        struct gh_ns ns;
        long t0 = now_us(), t1;
        bool kept = false;
        int ret = -1, droot;

        memset(t, 0, sizeof(*t));
        memset(&ns, 0, sizeof(ns));
        ns.self_mnt = ns.self_root = ns.self_cwd = ns.target_mnt = ns.proc_fd = ns.host_rootfs = ns.init_root = -1;

        GH_STEP("hook");
        if (gh_caps_init(err) < 0 || gh_caps_enter(GH_PHASE_DISCOVER, err) < 0)
                return -1;
        GH_STEP("caps");

        /* A plan kept for this request on this driver and this layout (not with --no-cache): then
         * discovery and the plan are what an earlier start decided, and everything from the sources
         * on is done anew. */
        if (req->cache != NULL && req->cache->plan_lookup != NULL && req->cache->plan_save != NULL &&
            req->state_file != NULL) {
                _cleanup_error_ gh_error_t e = NULL;
                kroot = gh_driver_root_open(o->root, &e); /* a failure: gh_discover says it again */
                GH_STEP("driver.root");
                if (kroot >= 0)
                        kept = kept_plan(o, kroot, &ns, &layout, &plan, &plan_key, &plan_fp) == 1;
        }
        if (kept) {
                t->used_nvml = plan.used_nvml;
                t->gpus_origin = GH_ORIGIN_CACHE;
                t1 = now_us();
                t->discover_us = t1 - t0;
        } else {
        build:
                /* Discover: everything here reads the driver root only; the same path as list and CDI. */
                if (build_plan(o, &d, &ns, &layout, &plan, t, t0, &t1, err) < 0)
                        goto out;
                /* Kept for the next start of this request. */
                gh_plan_cache_keep(req, plan_key, plan_fp, &plan);
        }
        /* The image's part (CUDA forward compatibility), decided for this image whether the plan was
         * kept or built: a kept plan is keyed by the request and layout, not by the image.  The image
         * is read on the host side, through the same fd. */
        GH_STEP("plan");
        if (gh_plan_for_image(&plan, ns.host_rootfs, AT_FDCWD, req, err) < 0)
                goto out;
        GH_STEP("plan.image");
        droot = kept ? kroot : d.droot;
        if (req->ldconfig != NULL && ldconfig_fd < 0) {
                ldconfig_fd = gh_ldconfig_open(req->ldconfig, err);
                if (ldconfig_fd < 0)
                        goto out;
        }
        /* open_tree(OPEN_TREE_CLONE) needs CAP_SYS_ADMIN: the mount phase's capabilities. */
        long td = now_us();
        if (gh_caps_enter(GH_PHASE_MOUNT, err) < 0)
                goto out;
        if (gh_plan_open_sources(&plan, droot, o->root, err) < 0) {
                if (!kept)
                        goto out;
                /* A file the kept plan names is gone (or changed kind) while the fingerprint held:
                 * build the plan as if none was kept, and keep that one instead. */
                gh_debug("plan: the kept one no longer opens (%s); building it", (*err)->msg);
                gh_error_free(err);
                gh_plan_free(&plan);
                memset(&plan, 0, sizeof(plan));
                kept = false;
                if (gh_caps_enter(GH_PHASE_DISCOVER, err) < 0)
                        goto out;
                goto build;
        }
        t->open_us = now_us() - td;
        GH_STEP("open");
        /* A host mount can reach an already pivoted container only as a detached clone. */
        if (ns.pivoted) {
                for (size_t i = 0; i < plan.n; i++) {
                        if (plan.items[i].source.fd >= 0 && !plan.items[i].source.detached) {
                                gh_err(err, ENOSYS,
                                       "container %d is already running and open_tree/move_mount are not available here (Linux 5.2+, not blocked by seccomp): configure it from a createRuntime or prestart hook instead",
                                       (int) o->pid);
                                goto out;
                        }
                }
        }
        t->plan_us = now_us() - t1;
        t->items = plan.n;

        /* Enter: from here on we are inside the container's mount namespace. */
        t1 = now_us();
        if (gh_caps_enter(GH_PHASE_ENTER, err) < 0 || gh_ns_enter(&ns, o->rootfs, &rootfd, err) < 0)
                goto out;
        gh_mount_set_procfd(ns.proc_fd);
        gh_mount_set_engine_root(ns.init_root);
        if (gh_caps_enter(GH_PHASE_MOUNT, err) < 0)
                goto out;
        t->enter_us = now_us() - t1;
        GH_STEP("enter");
        if (gh_plan_apply(&plan, rootfd, err) < 0) {
                gh_err_wrap(
                        err,
                        "cannot inject the driver into this image (check that the path below is a plain directory or file in the image, not a link out of it)");
                goto out;
        }
        t->mount_us = now_us() - t1;
        GH_STEP("apply.end");

        t1 = now_us();
        if (ldconfig_fd >= 0) {
                /* The compat package first: ldconfig's first directory wins a SONAME. */
                const char *dirs[4] = { NULL, NULL, NULL, NULL };
                size_t nd = 0;
                if (plan.compat.used)
                        dirs[nd++] = plan.compat.dir;
                dirs[nd++] = plan.layout.libdir;
                if (gh_request_caps(req) & GH_CAP_COMPAT32)
                        dirs[nd++] = plan.layout.libdir32;
                if (gh_caps_enter(GH_PHASE_LDCONFIG, err) < 0 || gh_ldconfig_run(ldconfig_fd, rootfd, dirs, err) < 0)
                        goto out;
        } else if (plan.nlibs > 0) {
                if (gh_caps_enter(GH_PHASE_LDCACHE, err) < 0 || gh_ldcache_update(&plan, rootfd, ns.proc_fd, err) < 0)
                        goto out;
        }
        t->ldcache_us = now_us() - t1;
        GH_STEP("ldcache");

        if (gh_caps_enter(GH_PHASE_ENTER, err) < 0 || gh_ns_leave(&ns, err) < 0)
                goto out;
        gh_mount_set_procfd(AT_FDCWD);
        gh_mount_set_engine_root(AT_FDCWD);

        GH_STEP("leave");
        t1 = now_us();
        if (!req->no_cgroups && plan.nrules > 0) {
                if (gh_caps_enter(GH_PHASE_CGROUP, err) < 0 ||
                    gh_cgroup_allow_devices(o->pid, plan.rules, plan.nrules, err) < 0)
                        goto out;
        }
        t->cgroup_us = now_us() - t1;
        GH_STEP("cgroup");
        ret = 0;
out:
        gh_mount_set_procfd(AT_FDCWD);
        gh_mount_set_engine_root(AT_FDCWD);
        if (ns.entered) {
                gh_error_t e = NULL;
                gh_caps_enter(GH_PHASE_ENTER, &e);
                gh_error_free(&e);
        }
        gh_ns_close(&ns);
        gh_plan_free(&plan);
        gh_discovery_free(&d);
        {
                gh_error_t e = NULL;
                gh_caps_enter(GH_PHASE_DONE, &e);
                gh_error_free(&e);
        }
        GH_STEP("free");
        t->total_us = now_us() - t0;
        return ret;
}
