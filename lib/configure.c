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

static const char *base_name(const char *p)
{
        const char *s = strrchr(p, '/');
        return s ? s + 1 : p;
}

/* The container's library directory (REFERENCE §3): Debian-style when the image says it is Debian. */
static const char *library_dir(int rootfd, bool compat32)
{
        _cleanup_error_ gh_error_t e = NULL;
        _cleanup_close_ int fd = gh_resolve(rootfd, "/etc/debian_version", O_PATH, &e);
        if (fd >= 0)
                return compat32 ? "/usr/lib/i386-linux-gnu" : "/usr/lib/x86_64-linux-gnu";
        if (compat32) {
                _cleanup_error_ gh_error_t e2 = NULL;
                _cleanup_close_ int l32 = gh_resolve(rootfd, "/usr/lib32", O_PATH | O_DIRECTORY, &e2);
                return l32 >= 0 ? "/usr/lib32" : "/usr/lib";
        }
        return "/usr/lib64";
}

/* Extra links users expect next to the SONAME links. */
static int plan_extra_links(struct gh_plan *plan, const char *dir, const char *soname, const char *file,
                            gh_error_t *err)
{
        char dst[PATH_MAX];

        if (strcmp(soname, "libcuda.so.1") == 0 || strcmp(soname, "libnvidia-opticalflow.so.1") == 0) {
                snprintf(dst, sizeof(dst), "%s/%.*s", dir, (int) (strlen(soname) - 2), soname);
                if (gh_plan_add_symlink(plan, dst, soname, true, err) < 0)
                        return -1;
        }
        if (strncmp(soname, "libGLX_nvidia.so.", 17) == 0) {
                snprintf(dst, sizeof(dst), "%s/libGLX_indirect.so.0", dir);
                if (gh_plan_add_symlink(plan, dst, file, true, err) < 0)
                        return -1;
        }
        return 0;
}

static int plan_libraries(struct gh_plan *plan, const struct gh_driver *drv, int rootfd, gh_error_t *err)
{
        for (size_t i = 0; i < drv->libs.n; i++) {
                const struct gh_driver_file *f = &drv->libs.v[i];
                const char *dir = library_dir(rootfd, f->compat32);
                const char *file = base_name(f->path);
                char dst[PATH_MAX], link[PATH_MAX];

                snprintf(dst, sizeof(dst), "%s/%s", dir, file);
                if (gh_plan_add(plan, GH_ITEM_FILE, f->path, dst, GH_MNT_FILE, err) < 0)
                        return -1;
                if (f->soname == NULL)
                        continue;
                if (strcmp(f->soname, file) != 0) {
                        snprintf(link, sizeof(link), "%s/%s", dir, f->soname);
                        if (gh_plan_add_symlink(plan, link, file, true, err) < 0)
                                return -1;
                } else {
                        snprintf(link, sizeof(link), "%s", dst);
                }
                if (gh_plan_add_library(plan, f->soname, link, f->compat32, err) < 0 ||
                    plan_extra_links(plan, dir, f->soname, file, err) < 0)
                        return -1;
        }
        return 0;
}

static int plan_files(struct gh_plan *plan, const struct gh_driver *drv, gh_error_t *err)
{
        char dst[PATH_MAX];

        for (size_t i = 0; i < drv->bins.n; i++) {
                snprintf(dst, sizeof(dst), "/usr/bin/%s", base_name(drv->bins.v[i].path));
                if (gh_plan_add(plan, GH_ITEM_FILE, drv->bins.v[i].path, dst, GH_MNT_FILE, err) < 0)
                        return -1;
        }
        for (size_t i = 0; i < drv->firmware.n; i++)
                if (gh_plan_add(plan, GH_ITEM_FILE, drv->firmware.v[i].path, drv->firmware.v[i].path, GH_MNT_FILE, err) < 0)
                        return -1;
        for (size_t i = 0; i < drv->ipcs.n; i++) {
                const struct gh_driver_file *f = &drv->ipcs.v[i];
                if (gh_plan_add(plan, S_ISDIR(f->type) ? GH_ITEM_DIR : GH_ITEM_FILE, f->path, f->path, GH_MNT_IPC, err) < 0)
                        return -1;
        }
        return 0;
}

/* Loads the GPUs: the fast path unless something needs NVML's answers. */
static int load_gpus(int droot, const struct gh_configure_opts *o, const struct gh_select_request *req,
                     struct gh_gpu_list *gpus, gh_error_t *err)
{
        struct gh_gpus_opts go = GH_GPUS_OPTS_DEFAULT;
        bool need_nvml = o->nrequires > 0 || o->mig_config || o->mig_monitor;

        for (size_t i = 0; i < req->n; i++)
                need_nvml |= req->items[i].kind == GH_SELECT_MIG_UUID || req->items[i].kind == GH_SELECT_MIG_INDEX;
        if (req->all) {
                /* "all" includes MIG devices: only NVML knows them, but only if some GPU has MIG on;
                 * the capabilities directory tells us without loading NVML. */
                _cleanup_error_ gh_error_t e = NULL;
                _cleanup_close_ int fd = gh_resolve(droot, "/proc/driver/nvidia/capabilities/mig", O_PATH, &e);
                (void) fd;
        }
        if (o->user != NULL) {
                char *end;
                unsigned long u = strtoul(o->user, &end, 10);
                if (end == o->user || (*end != '\0' && *end != ':'))
                        return gh_err(err, 0, "invalid --user '%s': use UID[:GID]", o->user);
                go.uid = (uid_t) u;
                go.gid = *end == ':' ? (gid_t) strtoul(end + 1, NULL, 10) : (gid_t) u;
        }
        go.source = need_nvml ? GH_GPUS_NVML : GH_GPUS_FAST;
        if (gh_gpus_load(droot, &go, gpus, err) < 0)
                return -1;
        gh_debug("GPUs from %s: %zu", gpus->from_nvml ? "NVML service" : "fast path", gpus->n);
        return 0;
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

static int plan_devices(struct gh_plan *plan, int droot, const struct gh_configure_opts *o, unsigned caps,
                        const struct gh_selection *sel, struct gh_dev_rule **rules, size_t *nrules, gh_error_t *err)
{
        struct gh_device_list devs = { 0 };
        _cleanup_free_ unsigned *minors = calloc(sel->ngpus + 1, sizeof(*minors));
        _cleanup_free_ struct gh_devices_mig *migs = calloc(sel->nmigs + 1, sizeof(*migs));
        struct gh_devices_request dr = {
                .caps = caps,
                .minors = minors,
                .nminors = sel->ngpus,
                .migs = migs,
                .nmigs = sel->nmigs,
                .mig_config = o->mig_config != NULL,
                .mig_monitor = o->mig_monitor != NULL,
                .imex_channels = o->imex,
                .nimex = o->nimex,
        };
        int r = -1;

        if (minors == NULL || migs == NULL)
                return gh_err(err, ENOMEM, "planning device nodes");
        for (size_t i = 0; i < sel->ngpus; i++)
                minors[i] = sel->gpus[i]->minor;
        for (size_t i = 0; i < sel->nmigs; i++) {
                const struct gh_gpu *parent = NULL;
                for (size_t g = 0; g < sel->ngpus; g++)
                        if (sel->gpus[g]->index == sel->migs[i]->parent_index)
                                parent = sel->gpus[g];
                migs[i].gpu_minor = parent ? parent->minor : 0;
                migs[i].gi = sel->migs[i]->gi;
                migs[i].ci = sel->migs[i]->ci;
        }
        if (gh_devices_collect(droot, &dr, &devs, err) < 0)
                return -1;
        *rules = calloc(devs.n ? devs.n : 1, sizeof(**rules));
        if (*rules == NULL) {
                gh_err(err, ENOMEM, "planning device rules");
                goto out;
        }
        for (size_t i = 0; i < devs.n; i++) {
                if (gh_plan_add_device(plan, devs.v[i].path, devs.v[i].path, devs.v[i].rdev, err) < 0)
                        goto out;
                (*rules)[*nrules].type = 'c';
                (*rules)[*nrules].major = major(devs.v[i].rdev);
                (*rules)[*nrules].minor = minor(devs.v[i].rdev);
                (*nrules)++;
        }
        r = 0;
out:
        gh_device_list_free(&devs);
        return r;
}

int gh_configure(const struct gh_configure_opts *o, struct gh_configure_timings *t, gh_error_t *err)
{
        _cleanup_close_ int droot = -1, rootfd = -1, ldconfig_fd = -1;
        _cleanup_select_request_ struct gh_select_request req = { 0 };
        _cleanup_selection_ struct gh_selection sel = { 0 };
        _cleanup_gpu_list_ struct gh_gpu_list gpus = { 0 };
        _cleanup_free_ struct gh_dev_rule *rules = NULL;
        struct gh_driver *drv = NULL;
        struct gh_plan plan = { 0 };
        struct gh_ns ns;
        struct gh_driver_opts dopts = { 0 };
        size_t nrules = 0;
        unsigned caps = gh_capability_expand(o->caps);
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
        dopts.ldcache = o->ldcache;
        dopts.path = o->path;
        dopts.caps = caps;
        dopts.no_persistenced = o->no_persistenced;
        dopts.no_fabricmanager = o->no_fabricmanager;
        dopts.no_gsp_firmware = o->no_gsp_firmware;
        long td = now_us();
        if (gh_driver_discover(droot, &dopts, &drv, err) < 0) {
                ret = (*err && (*err)->code == GH_DRIVER_ENODRIVER) ? GH_CONFIGURE_NO_DRIVER : -1;
                goto out;
        }
        gh_debug("discover: driver files %ld us", now_us() - td);
        td = now_us();
        if (gh_select_parse(o->device, &req, err) < 0)
                goto out;
        if (o->device != NULL && !req.is_void && (req.all || req.n > 0 || o->nrequires > 0)) {
                if (load_gpus(droot, o, &req, &gpus, err) < 0)
                        goto out;
                t->used_nvml = gpus.from_nvml;
                if (gh_select_resolve(&req, &gpus, &sel, err) < 0)
                        goto out;
        } else if (o->nrequires > 0) {
                if (load_gpus(droot, o, &req, &gpus, err) < 0)
                        goto out;
                t->used_nvml = gpus.from_nvml;
        }
        for (size_t i = 0; i < o->nrequires; i++) {
                if (gh_require_check_expr(o->requires[i], &gpus, &sel, err) < 0) {
                        ret = (*err && (*err)->code == GH_REQUIRE_UNMET) ? GH_CONFIGURE_UNMET : -1;
                        goto out;
                }
        }
        t1 = now_us();
        gh_debug("discover: GPUs, selection, requirements %ld us", t1 - td);
        t->discover_us = t1 - t0;

        /* Plan: decide every target and open every source while still on the host. */
        plan.no_devbind = o->no_devbind;
        /* Looking at another process's /proc/PID/{root,ns} needs the enter phase's CAP_SYS_PTRACE. */
        if (gh_caps_enter(GH_PHASE_ENTER, err) < 0 || gh_ns_open(o->pid, o->rootfs, &ns, err) < 0 ||
            gh_caps_enter(GH_PHASE_DISCOVER, err) < 0)
                goto out;
        if (plan_devices(&plan, droot, o, caps, &sel, &rules, &nrules, err) < 0)
                goto out;
        if (gh_plan_read_proc(&plan, droot, err) < 0)
                goto out;
        for (size_t i = 0; i < sel.ngpus; i++)
                if (gh_plan_add_proc_gpu(&plan, sel.gpus[i]->busid, err) < 0)
                        goto out;
        if (o->ldconfig != NULL) {
                ldconfig_fd = gh_ldconfig_open(o->ldconfig, err);
                if (ldconfig_fd < 0)
                        goto out;
        }

        /* The rootfs is the same directory on the host: decide the library directory from it. */
        if (plan_libraries(&plan, drv, ns.host_rootfs, err) < 0 || plan_files(&plan, drv, err) < 0)
                goto out;
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
                const char *dirs[4] = { NULL };
                size_t nd = 0;
                dirs[nd++] = library_dir(rootfd, false);
                if (caps & GH_CAP_COMPAT32)
                        dirs[nd++] = library_dir(rootfd, true);
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
        if (!o->no_cgroups && nrules > 0) {
                if (gh_caps_enter(GH_PHASE_CGROUP, err) < 0 || gh_cgroup_allow_devices(o->pid, rules, nrules, err) < 0)
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
