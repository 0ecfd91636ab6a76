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
#include "driver.h"
#include "gpus.h"
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

/* Copies the container's cache into memory first: a running container could truncate the file
 * under a mapping and crash us. */
static int read_container_cache(int rootfd, int procfd, struct gh_ldcache **cache, gh_error_t *err)
{
        _cleanup_error_ gh_error_t e = NULL;
        /* Only a regular file is ever opened: an image's device node or FIFO there is not touched. */
        _cleanup_close_ int fd = gh_open_regular(rootfd, "/etc/ld.so.cache", procfd, &e);
        _cleanup_close_ int mfd = -1;
        char buf[65536];
        ssize_t n;
        size_t total = 0;

        *cache = NULL;
        if (fd < 0) {
                if (e->code != ENOENT)
                        gh_warn("the container's %s; writing a fresh /etc/ld.so.cache", e->msg);
                return 0; /* no usable cache in the image: start a new one */
        }
        mfd = memfd_create("ld.so.cache", MFD_CLOEXEC);
        if (mfd < 0)
                return gh_err(err, errno, "reading the container's /etc/ld.so.cache");
        while ((n = read(fd, buf, sizeof(buf))) > 0) {
                total += (size_t) n;
                if (total > GH_LDCACHE_MAX_SIZE)
                        return gh_err(err, EFBIG, "the container's /etc/ld.so.cache is too large");
                if (write(mfd, buf, (size_t) n) != n)
                        return gh_err(err, errno, "reading the container's /etc/ld.so.cache");
        }
        if (n < 0)
                return gh_err(err, errno, "reading the container's /etc/ld.so.cache");
        if (total == 0)
                return 0;
        if (gh_ldcache_open(mfd, "the container's /etc/ld.so.cache", cache, &e) < 0) {
                /* A broken cache in the image is replaced rather than trusted. */
                gh_warn("%s; writing a fresh one", e->msg);
                *cache = NULL;
        }
        return 0;
}

int gh_configure_update_ldcache(const struct gh_plan *plan, int rootfd, int procfd, gh_error_t *err)
{
        struct gh_ldcache *old = NULL;
        struct gh_ldcache_set set = { 0 };
        _cleanup_close_ int etc = -1;
        int r = -1;

        if (read_container_cache(rootfd, procfd, &old, err) < 0)
                return -1;
        for (size_t i = 0; old && i < old->n; i++)
                if (gh_ldcache_set_add(&set, &old->entries[i], err) < 0)
                        goto out;
        for (size_t i = 0; i < plan->nlibs; i++) {
                struct gh_ldcache_entry e = {
                        .key = plan->libs[i].soname,
                        .value = plan->libs[i].path,
                        .flags = plan->libs[i].compat32 ? GH_LDCACHE_FLAGS_I386 : GH_LDCACHE_FLAGS_X86_64,
                };
                if (gh_ldcache_set_merge(&set, &e, 1, err) < 0)
                        goto out;
        }
        etc = gh_mkdir_p(rootfd, "/etc", 0755, err);
        if (etc < 0)
                goto out;
        r = gh_ldcache_write(etc, "ld.so.cache", set.entries, set.n, err);
        if (r < 0)
                gh_err_wrap(err, "writing the container's /etc/ld.so.cache");
out:
        gh_ldcache_set_free(&set);
        if (old)
                gh_ldcache_close(old);
        return r;
}

int gh_configure(const struct gh_configure_opts *o, struct gh_configure_timings *t, gh_error_t *err)
{
        _cleanup_close_ int droot = -1, rootfd = -1, ldconfig_fd = -1;
        _cleanup_gpu_list_ struct gh_gpu_list gpus = { 0 };
        const struct gh_request *req = o->req;
        struct gh_driver *drv = NULL;
        struct gh_plan plan = { 0 };
        struct gh_layout layout;
        struct gh_ns ns;
        struct gh_driver_opts dopts;
        long t0 = now_us(), t1;
        int ret = -1;

        memset(t, 0, sizeof(*t));
        memset(&ns, 0, sizeof(ns));
        ns.self_mnt = ns.target_mnt = ns.proc_fd = ns.host_rootfs = -1;

        if (gh_caps_init(err) < 0 || gh_caps_enter(GH_PHASE_DISCOVER, err) < 0)
                return -1;

        /* Discover: everything here reads the driver root only. */
        droot = gh_rootfs_open(o->root, err);
        if (droot < 0)
                return gh_err_wrap(err, "driver root");
        gh_plan_driver_opts(req, o->ldcache, o->path, &dopts);
        long td = now_us();
        if (gh_driver_discover(droot, &dopts, &drv, err) < 0) {
                ret = (*err && (*err)->code == GH_DRIVER_ENODRIVER) ? GH_CONFIGURE_NO_DRIVER : -1;
                goto out;
        }
        gh_debug("discover: driver files %ld us", now_us() - td);
        td = now_us();
        if (gh_plan_load_gpus(droot, req, &gpus, err) < 0)
                goto out;
        t->used_nvml = gpus.from_nvml;
        t1 = now_us();
        gh_debug("discover: GPUs %ld us (%zu, %s)", t1 - td, gpus.n, gpus.from_nvml ? "NVML service" : "fast path");
        t->discover_us = t1 - t0;

        /* Plan: decide every target and open every source while still on the host.  Looking at
         * another process's /proc/PID/{root,ns} needs the enter phase's CAP_SYS_PTRACE. */
        if (gh_caps_enter(GH_PHASE_ENTER, err) < 0 || gh_ns_open(o->pid, o->rootfs, &ns, err) < 0 ||
            gh_caps_enter(GH_PHASE_DISCOVER, err) < 0)
                goto out;
        /* The rootfs is the same directory on the host: decide the library directory from it. */
        gh_layout_detect(ns.host_rootfs, &layout);
        if (gh_plan_build(droot, drv, &gpus, req, &layout, &plan, err) < 0) {
                if (*err && (*err)->code == GH_REQUIRE_UNMET)
                        ret = GH_CONFIGURE_UNMET;
                goto out;
        }
        if (req->ldconfig != NULL) {
                ldconfig_fd = gh_ldconfig_open(req->ldconfig, err);
                if (ldconfig_fd < 0)
                        goto out;
        }
        /* open_tree(OPEN_TREE_CLONE) needs CAP_SYS_ADMIN: the mount phase's capabilities. */
        if (gh_caps_enter(GH_PHASE_MOUNT, err) < 0 || gh_plan_open_sources(&plan, droot, o->root, err) < 0)
                goto out;
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
        if (gh_caps_enter(GH_PHASE_MOUNT, err) < 0)
                goto out;
        if (gh_plan_apply(&plan, rootfd, err) < 0) {
                gh_err_wrap(err, "cannot inject the driver into this image (check that the path below is a plain directory or file in the image, not a link out of it)");
                goto out;
        }
        t->mount_us = now_us() - t1;

        t1 = now_us();
        if (ldconfig_fd >= 0) {
                const char *dirs[3] = { plan.layout.libdir, NULL, NULL };
                if (gh_request_caps(req) & GH_CAP_COMPAT32)
                        dirs[1] = plan.layout.libdir32;
                if (gh_caps_enter(GH_PHASE_LDCONFIG, err) < 0 || gh_ldconfig_run(ldconfig_fd, rootfd, dirs, err) < 0)
                        goto out;
        } else if (plan.nlibs > 0) {
                if (gh_caps_enter(GH_PHASE_LDCACHE, err) < 0 || gh_configure_update_ldcache(&plan, rootfd, ns.proc_fd, err) < 0)
                        goto out;
        }
        t->ldcache_us = now_us() - t1;

        if (gh_caps_enter(GH_PHASE_ENTER, err) < 0 || gh_ns_leave(&ns, err) < 0)
                goto out;
        gh_mount_set_procfd(AT_FDCWD);

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
        if (ns.entered) {
                gh_error_t e = NULL;
                gh_caps_enter(GH_PHASE_ENTER, &e);
                gh_error_free(&e);
        }
        gh_ns_close(&ns);
        gh_plan_free(&plan);
        if (drv)
                gh_driver_free(drv);
        {
                gh_error_t e = NULL;
                gh_caps_enter(GH_PHASE_DONE, &e);
                gh_error_free(&e);
        }
        t->total_us = now_us() - t0;
        return ret;
}
