#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "caps.h"
#include "cdi-hook.h"
#include "cleanup.h"
#include "discover.h"
#include "devices.h"
#include "gpus.h"
#include "ldcache.h"
#include "log.h"
#include "oci.h"
#include "plan.h"
#include "rootfs.h"

int gh_cdi_pair_parse(const char *opt, char *arg, bool b_abs, struct gh_cdi_pair *out, gh_error_t *err)
{
        char *sep = strstr(arg, "::");

        if (sep == NULL || sep == arg || sep[2] == '\0' || (b_abs && sep[2] != '/'))
                return gh_err_usage(err, "invalid --%s '%s': write it as %s", opt, arg,
                                    b_abs ? "NAME::/ABSOLUTE/PATH" : "A::B");
        *sep = '\0';
        out->a = arg;
        out->b = sep + 2;
        return 0;
}

static bool same_ns(int dirfd, const char *path, const struct stat *self)
{
        struct stat st;
        return fstatat(dirfd, path, &st, 0) == 0 && st.st_dev == self->st_dev && st.st_ino == self->st_ino;
}

/* A createContainer hook runs in the container's mount namespace, before pivot_root, after the
 * runtime mounted the container's /proc.  Anywhere else (a createRuntime or prestart hook, a
 * shell) its mounts would be made in the host's namespace and its files written through the
 * host's view of the rootfs: refuse.  Two facts prove where we are: ROOTFS/proc, resolved in the
 * root, is a procfs (in the host's namespace it is the image's empty directory), and the
 * container's init shares our mount namespace.  The state's pid is that init, numbered in the
 * container's pid namespace (runc: 1) or the runtime's: it is looked up in that procfs, then in
 * ours.  crun passes no pid (0) to these hooks: then the init is pid 1 of that procfs. */
static int check_container_namespace(pid_t pid, int rootfd, const char *rootfs, gh_error_t *err)
{
        static const char where[] =
                "gpu-cli cdi-hook must run as a createContainer hook (the CDI spec's hookName), not createRuntime, prestart or by hand";
        _cleanup_error_ gh_error_t e = NULL;
        _cleanup_close_ int cproc = -1;
        struct stat self, root, fs;
        struct statfs sfs;
        char path[64];

        if (stat("/", &root) < 0 || fstat(rootfd, &fs) < 0)
                return gh_err(err, errno, "looking at the container root %s", rootfs);
        if (root.st_dev == fs.st_dev && root.st_ino == fs.st_ino)
                return gh_err(err, EINVAL, "the container root %s is our own /: %s", rootfs, where);
        if (stat("/proc/self/ns/mnt", &self) < 0)
                return gh_err(err, errno, "reading our mount namespace");
        cproc = gh_resolve(rootfd, "/proc", O_RDONLY | O_DIRECTORY, &e);
        if (cproc < 0 || fstatfs(cproc, &sfs) < 0 || sfs.f_type != PROC_SUPER_MAGIC)
                return gh_err(err, EPERM, "not in the container's mount namespace (its /proc is not mounted here): %s",
                              where);
        snprintf(path, sizeof(path), "%d/ns/mnt", pid > 0 ? (int) pid : 1);
        if (same_ns(cproc, path, &self))
                return 0;
        snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int) pid);
        if (pid > 0 && same_ns(AT_FDCWD, path, &self))
                return 0;
        return gh_err(err, EPERM, "not in the container's mount namespace: %s", where);
}

/* The GPUs whose /dev/nvidiaN the runtime was told to create: their /proc/driver/nvidia/gpus
 * entries are shown in the container, the others are not. */
static int plan_proc_gpus(struct gh_plan *plan, int droot, const struct gh_oci_spec *spec, gh_error_t *err)
{
        _cleanup_gpu_list_ struct gh_gpu_list gpus = { 0 };
        bool any = false;

        for (size_t i = 0; i < spec->n_devices; i++)
                any |= spec->devices[i].type == 'c' && spec->devices[i].major == GH_NVIDIA_MAJOR &&
                       spec->devices[i].minor < GH_NVIDIA_MODESET_MINOR;
        if (!any)
                return 0;
        if (gh_gpus_fast(droot, &gpus, err) < 0)
                return gh_err_wrap(err, "listing the GPUs for /proc/driver/nvidia/gpus");
        for (size_t g = 0; g < gpus.n; g++)
                for (size_t i = 0; i < spec->n_devices; i++) {
                        const struct gh_oci_device *d = &spec->devices[i];
                        if (d->type == 'c' && d->major == GH_NVIDIA_MAJOR &&
                            d->minor == (long long) gpus.gpus[g].minor) {
                                if (gh_plan_add_proc_gpu(plan, gpus.gpus[g].busid, err) < 0)
                                        return -1;
                                break;
                        }
                }
        return 0;
}

static int build_plan(struct gh_plan *plan, const struct gh_cdi_hook_opts *o, int droot, const struct gh_oci_spec *spec,
                      gh_error_t *err)
{
        for (size_t i = 0; i < o->nlinks; i++)
                if (gh_plan_add_symlink(plan, o->links[i].b, o->links[i].a, true, err) < 0)
                        return -1;
        for (size_t i = 0; i < o->nlibs; i++)
                if (gh_plan_add_library(plan, o->libs[i].a, o->libs[i].b, false, err) < 0)
                        return -1;
        for (size_t i = 0; i < o->nlibs32; i++)
                if (gh_plan_add_library(plan, o->libs32[i].a, o->libs32[i].b, true, err) < 0)
                        return -1;
        if (!o->mask_proc)
                return 0;
        if (gh_plan_read_proc(plan, droot, err) < 0)
                return -1;
        return plan_proc_gpus(plan, droot, spec, err);
}

static void phase(const struct gh_cdi_hook_opts *o, const char *name)
{
        if (o->log != NULL)
                gh_hooklog_phase(o->log, name);
}

int gh_cdi_hook_run(const struct gh_cdi_hook_opts *o, gh_error_t *err)
{
        struct gh_oci_state state = { 0 };
        struct gh_oci_spec spec = { 0 };
        struct gh_plan plan = { 0 };
        _cleanup_close_ int droot = -1, rootfd = -1;
        int ret = -1;

        if (gh_caps_init_phases((1u << GH_PHASE_DISCOVER) | (1u << GH_PHASE_ENTER) | (1u << GH_PHASE_MOUNT) |
                                        (1u << GH_PHASE_LDCACHE),
                                err) < 0 ||
            gh_caps_enter(GH_PHASE_DISCOVER, err) < 0)
                return -1;
        phase(o, "setup");
        if (gh_oci_state_read(o->state_fd, &state, err) < 0)
                return -1;
        gh_log_set_trace_id(state.id);
        if (o->log != NULL) {
                gh_hooklog_set_trace_id(o->log, state.id);
                o->log->container_pid = state.pid;
        }
        phase(o, "state");
        if (gh_oci_spec_load(state.bundle, &spec, err) < 0)
                goto out;
        phase(o, "spec");
        rootfd = gh_rootfs_open(spec.rootfs, err);
        if (rootfd < 0) {
                gh_err_wrap(err, "container root");
                goto out;
        }
        if (gh_caps_enter(GH_PHASE_ENTER, err) < 0 ||
            check_container_namespace(state.pid, rootfd, spec.rootfs, err) < 0 ||
            gh_caps_enter(GH_PHASE_DISCOVER, err) < 0)
                goto out;
        phase(o, "check");
        droot = gh_driver_root_open(o->root, err);
        if (droot < 0)
                goto out;
        if (build_plan(&plan, o, droot, &spec, err) < 0)
                goto out;
        phase(o, "plan");
        /* open_tree(OPEN_TREE_CLONE) of the GPUs' proc directories needs the mount phase. */
        if (gh_caps_enter(GH_PHASE_MOUNT, err) < 0 || gh_plan_open_sources(&plan, droot, o->root, err) < 0)
                goto out;
        phase(o, "open");
        if (gh_plan_apply(&plan, rootfd, err) < 0) {
                gh_err_wrap(err, "container %s", spec.rootfs);
                goto out;
        }
        phase(o, "apply");
        if (plan.nlibs > 0 &&
            (gh_caps_enter(GH_PHASE_LDCACHE, err) < 0 || gh_ldcache_update(&plan, rootfd, AT_FDCWD, err) < 0))
                goto out;
        phase(o, "ldcache");
        gh_debug("cdi-hook: %zu links, %zu libraries in the ld cache, /proc/driver/nvidia %s (%zu GPUs) in %s",
                 o->nlinks, plan.nlibs, o->mask_proc ? "masked" : "untouched", plan.nproc_gpus, spec.rootfs);
        ret = 0;
out : {
        gh_error_t e = NULL;
        gh_caps_enter(GH_PHASE_DONE, &e);
        gh_error_free(&e);
}
        gh_plan_free(&plan);
        gh_oci_spec_free(&spec);
        gh_oci_state_free(&state);
        return ret;
}
