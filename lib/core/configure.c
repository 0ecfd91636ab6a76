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
#include "ldcache.h"
#include "ldconfig.h"
#include "log.h"
#include "mount.h"
#include "ns.h"
#include "plan.h"
#include "require.h"
#include "rootfs.h"
#include "select.h"

static long now_us(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

int gh_configure(const struct gh_configure_opts *o, struct gh_configure_timings *t, gh_error_t *err)
{
        _cleanup_close_ int rootfd = -1, ldconfig_fd = -1;
        const struct gh_request *req = o->req;
        struct gh_discovery d = GH_DISCOVERY_INIT;
        struct gh_plan plan = { 0 };
        struct gh_layout layout;
        struct gh_ns ns;
        long t0 = now_us(), t1;
        int ret = -1;

        memset(t, 0, sizeof(*t));
        memset(&ns, 0, sizeof(ns));
        ns.self_mnt = ns.target_mnt = ns.proc_fd = ns.host_rootfs = -1;

        if (gh_caps_init(err) < 0 || gh_caps_enter(GH_PHASE_DISCOVER, err) < 0)
                return -1;

        /* Discover: everything here reads the driver root only; the same path as list and CDI. */
        if (gh_discover(o->root, o->ldcache, o->path, req, &d, err) < 0)
                goto out;
        t->used_nvml = d.gpus.from_nvml;
        t->gpus_origin = d.gpus.origin;
        t1 = now_us();
        t->gpus_us = d.gpus_us;
        t->discover_us = t1 - t0;

        /* Plan: decide every target and open every source while still on the host.  Looking at
         * another process's /proc/PID/{root,ns} needs the enter phase's CAP_SYS_PTRACE. */
        if (gh_caps_enter(GH_PHASE_ENTER, err) < 0 || gh_ns_open(o->pid, o->rootfs, &ns, err) < 0 ||
            gh_caps_enter(GH_PHASE_DISCOVER, err) < 0)
                goto out;
        /* The rootfs is the same directory on the host: decide the library directory from it. */
        gh_layout_detect(ns.host_rootfs, &layout);
        if (gh_plan_build(d.droot, d.drv, &d.gpus, req, &layout, &plan, err) < 0)
                goto out;
        /* The image's CUDA compat libraries are read on the host side too, through the same fd. */
        if (gh_plan_for_image(&plan, ns.host_rootfs, AT_FDCWD, req, err) < 0)
                goto out;
        if (req->ldconfig != NULL) {
                ldconfig_fd = gh_ldconfig_open(req->ldconfig, err);
                if (ldconfig_fd < 0)
                        goto out;
        }
        /* open_tree(OPEN_TREE_CLONE) needs CAP_SYS_ADMIN: the mount phase's capabilities. */
        long td = now_us();
        if (gh_caps_enter(GH_PHASE_MOUNT, err) < 0 || gh_plan_open_sources(&plan, d.droot, o->root, err) < 0)
                goto out;
        t->open_us = now_us() - td;
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
        if (gh_plan_apply(&plan, rootfd, err) < 0) {
                gh_err_wrap(
                        err,
                        "cannot inject the driver into this image (check that the path below is a plain directory or file in the image, not a link out of it)");
                goto out;
        }
        t->mount_us = now_us() - t1;

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

        if (gh_caps_enter(GH_PHASE_ENTER, err) < 0 || gh_ns_leave(&ns, err) < 0)
                goto out;
        gh_mount_set_procfd(AT_FDCWD);
        gh_mount_set_engine_root(AT_FDCWD);

        t1 = now_us();
        if (!req->no_cgroups && plan.nrules > 0) {
                if (gh_caps_enter(GH_PHASE_CGROUP, err) < 0 ||
                    gh_cgroup_allow_devices(o->pid, plan.rules, plan.nrules, err) < 0)
                        goto out;
        }
        t->cgroup_us = now_us() - t1;
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
        t->total_us = now_us() - t0;
        return ret;
}
