/* Applying a plan (plan.h): sources opened on the host, targets created and attached inside the
 * container with the in-root resolver, /proc/driver/nvidia masked. */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cleanup.h"
#include "file.h"
#include "log.h"
#include "plan.h"
#include "rootfs.h"
#include "steps.h"

/* The container's view of /proc/driver/nvidia/gpus/BUSID: read-only, nothing to run or open. */
#define PROC_GPU_FLAGS (GH_MNT_RDONLY | GH_MNT_NOSUID | GH_MNT_NODEV | GH_MNT_NOEXEC)

int gh_plan_open_sources(struct gh_plan *plan, int driver_rootfd, const char *driver_root, gh_error_t *err)
{
        _cleanup_close_ int hostfd = -1;

        for (size_t i = 0; i < plan->n; i++) {
                struct gh_item *it = &plan->items[i];
                if (it->kind == GH_ITEM_SYMLINK)
                        continue;
                if (it->kind == GH_ITEM_DEVICE && plan->no_devbind)
                        continue;
                if (it->host_src) {
                        if (hostfd < 0 && (hostfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
                                return gh_err(err, errno, "opening /");
                        if (gh_source_open(hostfd, "/", it->src, it->flags, &it->source, err) < 0)
                                return -1;
                        continue;
                }
                if (gh_source_open(driver_rootfd, driver_root, it->src, it->flags, &it->source, err) < 0)
                        return -1;
                if (it->kind == GH_ITEM_DEVICE &&
                    (!S_ISCHR(it->source.st.st_mode) || it->source.st.st_rdev != it->rdev))
                        return gh_err(err, 0, "device node %s is not the character device %u:%u it was a moment ago",
                                      it->source.path, major(it->rdev), minor(it->rdev));
        }
        for (size_t i = 0; i < plan->nproc_gpus; i++) {
                char path[128];
                snprintf(path, sizeof(path), "/proc/driver/nvidia/gpus/%s", plan->proc_gpus[i].busid);
                if (gh_source_open(driver_rootfd, driver_root, path, PROC_GPU_FLAGS, &plan->proc_gpus[i].source, err) <
                    0)
                        return -1;
        }
        return 0;
}

static int make_device_node(int rootfd, const struct gh_item *it, gh_error_t *err)
{
        _cleanup_free_ char *name = NULL;
        _cleanup_close_ int dirfd = gh_resolve_parent(rootfd, it->dst, true, &name, err);
        struct stat st;

        if (dirfd < 0)
                return -1;
        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
                if (S_ISCHR(st.st_mode) && st.st_rdev == it->rdev)
                        return 0;
                if (S_ISDIR(st.st_mode) || unlinkat(dirfd, name, 0) < 0)
                        return gh_err(err, errno ? errno : EEXIST, "replacing %s in the container", it->dst);
        }
        if (mknodat(dirfd, name, S_IFCHR | 0666, it->rdev) < 0)
                return gh_err(err, errno, "creating device node %s in the container", it->dst);
        return 0;
}

/* Where /proc/driver/nvidia can be masked.  Inside a procfs without the driver (the fake driver on
 * a CPU machine) the directory does not exist and procfs refuses mkdir: mask /proc/driver then. */
static int proc_mask_point(int rootfd, const char **base, gh_error_t *err)
{
        _cleanup_close_ int fd = gh_resolve(rootfd, "/proc/driver/nvidia", O_PATH | O_DIRECTORY, NULL);
        struct statfs sfs;

        *base = "/proc/driver/nvidia";
        if (fd >= 0)
                return 0;
        _cleanup_close_ int drv = gh_resolve(rootfd, "/proc/driver", O_RDONLY | O_DIRECTORY, NULL);
        if (drv >= 0 && fstatfs(drv, &sfs) == 0 && sfs.f_type == PROC_SUPER_MAGIC) {
                *base = "/proc/driver";
                return 1;
        }
        return 0;
}

/* A new file in the tmpfs over /proc/driver/nvidia: created, never replaced (not atomic: nobody
 * can see the tmpfs before it is mounted). */
static int write_file_at(int dirfd, const char *name, const char *data, size_t len, gh_error_t *err)
{
        if (gh_write_file_at(dirfd, name, data, len, 0444, 0, NULL, err) < 0)
                return gh_err_wrap(err, "/proc/driver/nvidia in the container");
        return 0;
}

static int apply_proc_mask(struct gh_plan *plan, int rootfd, gh_error_t *err)
{
        _cleanup_close_ int tfd = -1, nvfd = -1, gpusfd = -1;
        const char *base;
        int whole_driver_dir = proc_mask_point(rootfd, &base, err);

        tfd = gh_tmpfs_attach(rootfd, base, "mode=0755,size=1m", err);
        if (tfd < 0)
                return gh_err_wrap(err, "masking /proc/driver/nvidia");
        GH_STEP("mask.tmpfs");
        if (whole_driver_dir) {
                if (mkdirat(tfd, "nvidia", 0555) < 0)
                        return gh_err(err, errno, "creating /proc/driver/nvidia in the container");
                nvfd = openat(tfd, "nvidia", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        } else {
                nvfd = dup(tfd);
        }
        if (nvfd < 0)
                return gh_err(err, errno, "opening /proc/driver/nvidia in the container");
        if ((plan->params && write_file_at(nvfd, "params", plan->params, plan->params_len, err) < 0) ||
            (plan->version && write_file_at(nvfd, "version", plan->version, plan->version_len, err) < 0) ||
            (plan->registry && write_file_at(nvfd, "registry", plan->registry, plan->registry_len, err) < 0))
                return -1;
        if (mkdirat(nvfd, "gpus", 0755) < 0 ||
            (gpusfd = openat(nvfd, "gpus", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
                return gh_err(err, errno, "creating /proc/driver/nvidia/gpus in the container");
        GH_STEP("mask.files");
        /* Each GPU's directory in our own tmpfs, through its fds: mounted a moment ago and private,
         * so no path walk from the root and no propagation check per GPU (a server with 8 GPUs
         * saved some 200 system calls). */
        for (size_t i = 0; i < plan->nproc_gpus; i++) {
                char dst[160];
                snprintf(dst, sizeof(dst), "/proc/driver/nvidia/gpus/%s", plan->proc_gpus[i].busid);
                if (gh_attach_dir_new(&plan->proc_gpus[i].source, rootfd, gpusfd, plan->proc_gpus[i].busid, dst,
                                      PROC_GPU_FLAGS, err) < 0)
                        return -1;
        }
        GH_STEP("mask.gpus");
        if (fchmod(gpusfd, 0555) < 0 || fchmod(nvfd, 0555) < 0 || fchmod(tfd, 0555) < 0)
                return gh_err(err, errno, "sealing /proc/driver/nvidia in the container");
        return gh_remount(rootfd, base, GH_MNT_RDONLY | GH_MNT_NOSUID | GH_MNT_NODEV | GH_MNT_NOEXEC, err);
}

/* The directories the plan's items go into, each resolved (made) once and checked once for shared
 * propagation: a plan of thirty items has four or five (the library directory, /usr/bin, /dev, the
 * firmware directory).  Resolving and checking them per item was two thirds of the apply phase's
 * system calls. */
#define TARGET_DIRS 16
struct target_dirs {
        struct {
                char *path;
                int fd;
                bool checked; /* proved not shared (only asked for mounts; links never were) */
        } d[TARGET_DIRS];
        size_t n;
};

static void target_dirs_free(struct target_dirs *t)
{
        for (size_t i = 0; i < t->n; i++) {
                free(t->d[i].path);
                close(t->d[i].fd);
        }
        t->n = 0;
}

/* The directory of CPATH (made when missing) and in *name its last component; for a mount
 * (mounting), checked not to be shared.  Returns an fd the cache owns, -1 with *err, or -2 when
 * CPATH is not a plain DIR/NAME or the cache is full (the caller takes the per-item way). */
static int target_dir(struct target_dirs *t, int rootfd, const char *cpath, bool mounting, const char **name,
                      gh_error_t *err)
{
        const char *slash = strrchr(cpath, '/');
        size_t len, i;

        if (slash == NULL || cpath[0] != '/' || slash[1] == '\0' || strcmp(slash + 1, ".") == 0 ||
            strcmp(slash + 1, "..") == 0)
                return -2;
        len = slash == cpath ? 1 : (size_t) (slash - cpath);
        *name = slash + 1;
        for (i = 0; i < t->n; i++)
                if (strlen(t->d[i].path) == len && strncmp(t->d[i].path, cpath, len) == 0)
                        break;
        if (i == t->n) {
                if (t->n == TARGET_DIRS)
                        return -2;
                /* Before any directory is made: where they would be made must not be shared. */
                GH_STEP("apply.item");
                if (mounting && gh_check_creation_point(rootfd, cpath, err) < 0)
                        return -1;
                GH_STEP("apply.sharedcheck");
                if ((t->d[i].path = strndup(cpath, len)) == NULL)
                        return gh_err(err, ENOMEM, "resolving %s", cpath);
                t->d[i].fd = gh_mkdir_p(rootfd, t->d[i].path, 0755, err);
                GH_STEP("apply.dirs");
                if (t->d[i].fd < 0) {
                        free(t->d[i].path);
                        return -1;
                }
                t->d[i].checked = mounting;
                t->n++;
        }
        if (mounting && !t->d[i].checked) {
                GH_STEP("apply.item");
                if (gh_check_not_shared(t->d[i].fd, cpath, err) < 0)
                        return -1;
                GH_STEP("apply.sharedcheck");
                t->d[i].checked = true;
        }
        return t->d[i].fd;
}

static int attach_file(struct target_dirs *t, struct gh_source *src, int rootfd, const char *cpath, unsigned flags,
                       gh_error_t *err)
{
        const char *name;
        int dirfd = target_dir(t, rootfd, cpath, true, &name, err);

        if (dirfd == -1)
                return -1;
        if (dirfd == -2)
                return gh_attach(src, rootfd, cpath, GH_TARGET_FILE, flags, err);
        return gh_attach_in(src, rootfd, dirfd, name, cpath, flags, err);
}

static int make_symlink(struct target_dirs *t, int rootfd, const char *cpath, const char *target, bool replace,
                        gh_error_t *err)
{
        const char *name;
        int dirfd = target_dir(t, rootfd, cpath, false, &name, err);

        if (dirfd == -1)
                return -1;
        if (dirfd == -2)
                return gh_create_symlink_over(rootfd, cpath, target, replace, err);
        return gh_create_symlink_at(dirfd, name, cpath, target, replace, err);
}

int gh_plan_apply(struct gh_plan *plan, int rootfd, gh_error_t *err)
{
        _cleanup_(target_dirs_free) struct target_dirs dirs = { .n = 0 };

        for (size_t i = 0; i < plan->n; i++) {
                struct gh_item *it = &plan->items[i];
                _cleanup_error_ gh_error_t e = NULL;
                int r = 0;

                switch (it->kind) {
                case GH_ITEM_DEVICE:
                        r = plan->no_devbind ? make_device_node(rootfd, it, &e)
                                             : attach_file(&dirs, &it->source, rootfd, it->dst, it->flags, &e);
                        break;
                case GH_ITEM_FILE: r = attach_file(&dirs, &it->source, rootfd, it->dst, it->flags, &e); break;
                case GH_ITEM_DIR:
                        r = gh_attach(&it->source, rootfd, it->dst, GH_TARGET_DIR, it->flags, &e);
                        /* A directory mounted over may hide one we hold: resolve again from here on. */
                        target_dirs_free(&dirs);
                        break;
                case GH_ITEM_SYMLINK: r = make_symlink(&dirs, rootfd, it->dst, it->target, it->replace, &e); break;
                default: r = gh_err(&e, EINVAL, "unknown plan item");
                }
                if (r < 0 && it->optional) {
                        gh_warn("%s (skipped)", e->msg);
                        continue;
                }
                if (r < 0) {
                        *err = steal_pointer(&e);
                        return -1;
                }
                GH_STEP(it->kind == GH_ITEM_SYMLINK ? "apply.link" : "apply.item");
                gh_debug("injected %s%s%s", it->dst, it->kind == GH_ITEM_SYMLINK ? " -> " : "",
                         it->kind == GH_ITEM_SYMLINK ? it->target : "");
        }
        GH_STEP("apply.item");
        if (plan->mask_proc && apply_proc_mask(plan, rootfd, err) < 0)
                return -1;
        return 0;
}
