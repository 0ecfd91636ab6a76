/* Building the plan (plan.h): what a container gets, decided from the driver root and the request. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "capability.h"
#include "cleanup.h"
#include "devices.h"
#include "log.h"
#include "mps.h"
#include "plan.h"
#include "readfile.h"
#include "require.h"
#include "rootfs.h"
#include "select.h"
#include "strutil.h"

static int grow(void **arr, size_t *cap, size_t n, size_t elem)
{
        if (n < *cap)
                return 0;
        size_t ncap = *cap ? *cap * 2 : 32;
        void *p = realloc(*arr, ncap * elem);
        if (p == NULL)
                return -1;
        memset((char *) p + *cap * elem, 0, (ncap - *cap) * elem);
        *arr = p;
        *cap = ncap;
        return 0;
}

static struct gh_item *new_item(struct gh_plan *plan, gh_error_t *err)
{
        if (grow((void **) &plan->items, &plan->cap, plan->n, sizeof(*plan->items)) < 0) {
                gh_err(err, ENOMEM, "planning the injection");
                return NULL;
        }
        struct gh_item *it = &plan->items[plan->n++];
        memset(it, 0, sizeof(*it));
        it->source.fd = -1;
        return it;
}

static bool same_dst(const struct gh_plan *plan, const char *dst)
{
        for (size_t i = 0; i < plan->n; i++)
                if (strcmp(plan->items[i].dst, dst) == 0)
                        return true;
        return false;
}

int gh_plan_add(struct gh_plan *plan, enum gh_item_kind kind, const char *src, const char *dst, unsigned flags,
                gh_error_t *err)
{
        struct gh_item *it;

        if (same_dst(plan, dst)) {
                gh_debug("plan: %s already planned, skipping %s", dst, src);
                return 0;
        }
        it = new_item(plan, err);
        if (it == NULL)
                return -1;
        it->kind = kind;
        it->src = strdup(src);
        it->dst = strdup(dst);
        it->flags = flags;
        if (it->src == NULL || it->dst == NULL)
                return gh_err(err, ENOMEM, "planning the injection");
        return 0;
}

int gh_plan_add_device(struct gh_plan *plan, const char *src, const char *dst, dev_t rdev, gh_error_t *err)
{
        size_t before = plan->n;

        if (gh_plan_add(plan, GH_ITEM_DEVICE, src, dst, GH_MNT_DEV, err) < 0)
                return -1;
        if (plan->n > before) {
                plan->items[plan->n - 1].role = GH_ROLE_DEVICE;
                plan->items[plan->n - 1].rdev = rdev;
        }
        return 0;
}

int gh_plan_add_symlink(struct gh_plan *plan, const char *dst, const char *target, bool optional, gh_error_t *err)
{
        struct gh_item *it;

        if (same_dst(plan, dst))
                return 0;
        it = new_item(plan, err);
        if (it == NULL)
                return -1;
        it->kind = GH_ITEM_SYMLINK;
        it->role = GH_ROLE_LINK;
        it->dst = strdup(dst);
        it->target = strdup(target);
        it->optional = optional;
        if (it->dst == NULL || it->target == NULL)
                return gh_err(err, ENOMEM, "planning the injection");
        return 0;
}

int gh_plan_add_library(struct gh_plan *plan, const char *soname, const char *path, bool compat32, gh_error_t *err)
{
        void *p = realloc(plan->libs, (plan->nlibs + 1) * sizeof(*plan->libs));
        if (p == NULL)
                return gh_err(err, ENOMEM, "planning the injection");
        plan->libs = p;
        plan->libs[plan->nlibs].soname = strdup(soname);
        plan->libs[plan->nlibs].path = strdup(path);
        plan->libs[plan->nlibs].compat32 = compat32;
        plan->nlibs++;
        return 0;
}

int gh_plan_add_proc_gpu(struct gh_plan *plan, const char *busid, gh_error_t *err)
{
        void *p = realloc(plan->proc_gpus, (plan->nproc_gpus + 1) * sizeof(*plan->proc_gpus));
        if (p == NULL)
                return gh_err(err, ENOMEM, "planning the injection");
        plan->proc_gpus = p;
        plan->proc_gpus[plan->nproc_gpus].busid = strdup(busid);
        plan->proc_gpus[plan->nproc_gpus].source.fd = -1;
        plan->proc_gpus[plan->nproc_gpus].source.path = NULL;
        plan->nproc_gpus++;
        return 0;
}

/* Reads a small file under the driver root; a missing one yields NULL and no error. */
static int read_root_file(int rootfd, const char *path, char **out, size_t *len, gh_error_t *err)
{
        _cleanup_error_ gh_error_t e = NULL;

        *out = NULL;
        *len = 0;
        if (gh_read_at(rootfd, path, 65536, true, out, len, &e) == 0)
                return 0;
        if (e->code == ENOENT)
                return 0;
        return gh_err(err, 0, "%s of the driver root: %s", path, e->msg);
}

int gh_plan_read_proc(struct gh_plan *plan, int driver_rootfd, gh_error_t *err)
{
        char *p;

        if (read_root_file(driver_rootfd, "/proc/driver/nvidia/params", &plan->params, &plan->params_len, err) < 0 ||
            read_root_file(driver_rootfd, "/proc/driver/nvidia/version", &plan->version, &plan->version_len, err) < 0 ||
            read_root_file(driver_rootfd, "/proc/driver/nvidia/registry", &plan->registry, &plan->registry_len, err) <
                    0)
                return -1;
        /* The container must not ask the driver to create device nodes for GPUs it was not given. */
        if (plan->params != NULL && (p = strstr(plan->params, "ModifyDeviceFiles: 1")) != NULL)
                p[strlen("ModifyDeviceFiles: ")] = '0';
        plan->mask_proc = true;
        return 0;
}

/* ---- layout ---- */

static void set_layout(struct gh_layout *out, const char *lib, const char *lib32)
{
        snprintf(out->libdir, sizeof(out->libdir), "%s", lib);
        snprintf(out->libdir32, sizeof(out->libdir32), "%s", lib32);
}

void gh_layout_detect(int rootfd, struct gh_layout *out)
{
        _cleanup_close_ int fd = gh_resolve(rootfd, "/etc/debian_version", O_PATH, NULL);
        _cleanup_close_ int l32 = -1;

        if (fd >= 0) {
                set_layout(out, "/usr/lib/x86_64-linux-gnu", "/usr/lib/i386-linux-gnu");
                return;
        }
        l32 = gh_resolve(rootfd, "/usr/lib32", O_PATH | O_DIRECTORY, NULL);
        set_layout(out, "/usr/lib64", l32 >= 0 ? "/usr/lib32" : "/usr/lib");
}

int gh_layout_named(const char *name, struct gh_layout *out, gh_error_t *err)
{
        if (strcmp(name, "debian") == 0)
                set_layout(out, "/usr/lib/x86_64-linux-gnu", "/usr/lib/i386-linux-gnu");
        else if (strcmp(name, "lib64") == 0)
                set_layout(out, "/usr/lib64", "/usr/lib32");
        else
                return gh_err_usage(err, "unknown layout '%s': use debian or lib64", name);
        return 0;
}

/* ---- building ---- */

/* gh_plan_add, then tags the new item (an already planned destination adds nothing). */
static int add_file(struct gh_plan *plan, enum gh_item_kind kind, enum gh_item_role role,
                    const struct gh_driver_file *f, const char *dst, unsigned flags, gh_error_t *err)
{
        size_t before = plan->n;
        struct gh_item *it;

        if (gh_plan_add(plan, kind, f->path, dst, flags, err) < 0)
                return -1;
        if (plan->n == before)
                return 0;
        it = &plan->items[plan->n - 1];
        it->role = role;
        it->cap = f->cap;
        it->compat32 = f->compat32;
        if (f->soname != NULL && (it->soname = strdup(f->soname)) == NULL)
                return gh_err(err, ENOMEM, "planning the injection");
        return 0;
}

static int plan_devices(struct gh_plan *plan, int droot, const struct gh_request *req, const struct gh_gpu_list *gpus,
                        const struct gh_selection *sel, gh_error_t *err)
{
        struct gh_device_list devs = { 0 };
        _cleanup_free_ unsigned *minors = calloc(sel->ngpus + 1, sizeof(*minors));
        _cleanup_free_ struct gh_devices_mig *migs = calloc(sel->nmigs + 1, sizeof(*migs));
        struct gh_devices_request dr = {
                .caps = gh_request_caps(req),
                .minors = minors,
                .nminors = sel->ngpus,
                .migs = migs,
                .nmigs = sel->nmigs,
                .mig_config = req->mig_config,
                .mig_monitor = req->mig_monitor,
                .imex_channels = req->imex,
                .nimex = req->nimex,
        };
        int r = -1;

        if (minors == NULL || migs == NULL)
                return gh_err(err, ENOMEM, "planning device nodes");
        for (size_t i = 0; i < sel->ngpus; i++)
                minors[i] = sel->gpus[i]->minor;
        for (size_t i = 0; i < sel->nmigs; i++) {
                const struct gh_gpu *parent = gh_gpu_by_index(gpus, sel->migs[i]->parent_index);
                migs[i] = (struct gh_devices_mig) { .gpu_minor = parent ? parent->minor : 0,
                                                    .gi = sel->migs[i]->gi,
                                                    .ci = sel->migs[i]->ci };
        }
        if (gh_devices_collect(droot, &dr, &devs, err) < 0)
                return -1;
        plan->rules = calloc(devs.n ? devs.n : 1, sizeof(*plan->rules));
        if (plan->rules == NULL) {
                gh_err(err, ENOMEM, "planning device rules");
                goto out;
        }
        for (size_t i = 0; i < devs.n; i++) {
                if (gh_plan_add_device(plan, devs.v[i].path, devs.v[i].path, devs.v[i].rdev, err) < 0)
                        goto out;
                plan->rules[plan->nrules++] = (struct gh_dev_rule) {
                        .type = 'c',
                        .major = major(devs.v[i].rdev),
                        .minor = minor(devs.v[i].rdev),
                };
        }
        r = 0;
out:
        gh_device_list_free(&devs);
        return r;
}

/* Links users expect next to the SONAME links: the development links of libcuda and
 * libnvidia-opticalflow (what dlopen("libcuda.so") finds), and libGLX_indirect for GLVND.  A
 * development link also gets its own ld cache entry, as ldconfig gives it (docs/ldcache.md);
 * libGLX_indirect.so.0 does not (its target's SONAME is another name). */
static int plan_extra_links(struct gh_plan *plan, const char *dir, const char *soname, const char *file, bool compat32,
                            gh_error_t *err)
{
        char dst[PATH_MAX];

        if (strcmp(soname, "libcuda.so.1") == 0 || strcmp(soname, "libnvidia-opticalflow.so.1") == 0) {
                snprintf(dst, sizeof(dst), "%s/%.*s", dir, (int) (strlen(soname) - 2), soname);
                if (gh_plan_add_symlink(plan, dst, soname, true, err) < 0 ||
                    gh_plan_add_library(plan, gh_base_name(dst), dst, compat32, err) < 0)
                        return -1;
        }
        if (strncmp(soname, "libGLX_nvidia.so.", 17) == 0) {
                snprintf(dst, sizeof(dst), "%s/libGLX_indirect.so.0", dir);
                if (gh_plan_add_symlink(plan, dst, file, true, err) < 0)
                        return -1;
        }
        return 0;
}

static int plan_libraries(struct gh_plan *plan, const struct gh_driver *drv, gh_error_t *err)
{
        for (size_t i = 0; i < drv->libs.n; i++) {
                const struct gh_driver_file *f = &drv->libs.v[i];
                const char *dir = f->compat32 ? plan->layout.libdir32 : plan->layout.libdir;
                const char *file = gh_base_name(f->path);
                char dst[PATH_MAX], link[PATH_MAX];

                snprintf(dst, sizeof(dst), "%s/%s", dir, file);
                if (add_file(plan, GH_ITEM_FILE, GH_ROLE_LIBRARY, f, dst, GH_MNT_FILE, err) < 0)
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
                    plan_extra_links(plan, dir, f->soname, file, f->compat32, err) < 0)
                        return -1;
        }
        return 0;
}

static int plan_files(struct gh_plan *plan, const struct gh_driver *drv, gh_error_t *err)
{
        char dst[PATH_MAX];

        for (size_t i = 0; i < drv->bins.n; i++) {
                snprintf(dst, sizeof(dst), "/usr/bin/%s", gh_base_name(drv->bins.v[i].path));
                if (add_file(plan, GH_ITEM_FILE, GH_ROLE_BINARY, &drv->bins.v[i], dst, GH_MNT_FILE, err) < 0)
                        return -1;
        }
        for (size_t i = 0; i < drv->firmware.n; i++)
                if (add_file(plan, GH_ITEM_FILE, GH_ROLE_FIRMWARE, &drv->firmware.v[i], drv->firmware.v[i].path,
                             GH_MNT_FILE, err) < 0)
                        return -1;
        for (size_t i = 0; i < drv->ipcs.n; i++) {
                const struct gh_driver_file *f = &drv->ipcs.v[i];
                /* a container in an MPS group talks to the group's daemon, not the host's default one */
                if (S_ISDIR(f->type) && plan->mps_group)
                        continue;
                if (add_file(plan, S_ISDIR(f->type) ? GH_ITEM_DIR : GH_ITEM_FILE, GH_ROLE_IPC, f, f->path, GH_MNT_IPC,
                             err) < 0)
                        return -1;
        }
        return 0;
}

/* The graphics loader files (docs/graphics.md) at the loaders' paths, read-only.  A file naming
 * its library by absolute path gets a link there to the library's place in the container; a bare
 * name resolves through the container's ld cache, where the library's SONAME is. */
static int plan_loader_files(struct gh_plan *plan, const struct gh_driver *drv, gh_error_t *err)
{
        for (size_t i = 0; i < drv->loaders.n; i++) {
                const struct gh_loader_file *f = &drv->loaders.v[i];
                struct gh_driver_file src = { .path = f->path, .cap = f->cap };
                const struct gh_item *lib = NULL;

                if (add_file(plan, GH_ITEM_FILE, GH_ROLE_CONFIG, &src, f->dst, GH_MNT_FILE | GH_MNT_NOEXEC, err) < 0)
                        return -1;
                if (f->library_src == NULL)
                        continue;
                for (size_t j = 0; j < plan->n && lib == NULL; j++)
                        if (plan->items[j].role == GH_ROLE_LIBRARY && strcmp(plan->items[j].src, f->library_src) == 0)
                                lib = &plan->items[j];
                if (lib == NULL) {
                        gh_debug("plan: %s names %s, which is not planned", f->path, f->library);
                        continue;
                }
                if (strcmp(lib->dst, f->library) != 0 && gh_plan_add_symlink(plan, f->library, lib->dst, true, err) < 0)
                        return -1;
        }
        return 0;
}

/* A container in an MPS group gets the group's pipe directory where CUDA looks by default and the
 * group's shm as its /dev/shm (docs/mps.md).  The group must run, on a GPU the container gets. */
static int plan_mps(struct gh_plan *plan, const struct gh_request *req, const struct gh_selection *sel, gh_error_t *err)
{
        struct gh_mps_group g;
        char path[PATH_MAX];
        bool on_selected = false;
        const char *dir = req->mps_dir;
        static const struct {
                const char *sub, *dst;
        } dirs[] = {
                { "pipe", GH_MPS_CONTAINER_PIPE_DIR },
                { "shm", GH_MPS_CONTAINER_SHM_DIR },
        };

        if (gh_mps_load_running(dir, req->mps_group, &g, err) < 0)
                return gh_err_wrap(err, "joining MPS group '%s'", req->mps_group);
        for (size_t i = 0; i < sel->ngpus; i++)
                on_selected |= sel->full[i] && strcasecmp(sel->gpus[i]->uuid, g.gpu_uuid) == 0;
        if (!on_selected)
                return gh_err(err, 0,
                              "MPS group '%s' runs on GPU %s, which this container does not get; select that GPU "
                              "(NVIDIA_VISIBLE_DEVICES=%s) or join another group",
                              g.name, g.gpu_uuid, g.gpu_uuid);
        plan->mps_group = true;
        for (size_t i = 0; i < GH_ARRAY_SIZE(dirs); i++) {
                gh_mps_group_path(path, sizeof(path), dir, g.name, dirs[i].sub);
                if (gh_plan_add(plan, GH_ITEM_DIR, path, dirs[i].dst, GH_MNT_IPC, err) < 0)
                        return -1;
                plan->items[plan->n - 1].role = GH_ROLE_IPC;
                plan->items[plan->n - 1].host_src = true;
                plan->items[plan->n - 1].cap = GH_CAP_COMPUTE;
        }
        return 0;
}

static int build(int droot, const struct gh_driver *drv, const struct gh_gpu_list *gpus, const struct gh_request *req,
                 struct gh_plan *plan, gh_error_t *err)
{
        _cleanup_selection_ struct gh_selection sel = { 0 };

        if (gh_request_wants_gpus(req) && gh_select_resolve(&req->devices, gpus, &sel, err) < 0)
                return -1;
        for (size_t i = 0; i < req->nrequirements; i++)
                if (gh_require_check_expr(req->requirements[i], gpus, &sel, err) < 0)
                        return -1;
        if (plan_devices(plan, droot, req, gpus, &sel, err) < 0 || gh_plan_read_proc(plan, droot, err) < 0)
                return -1;
        for (size_t i = 0; i < sel.ngpus; i++)
                if (gh_plan_add_proc_gpu(plan, sel.gpus[i]->busid, err) < 0)
                        return -1;
        if (req->mps_group && plan_mps(plan, req, &sel, err) < 0)
                return -1;
        return plan_libraries(plan, drv, err) < 0 || plan_files(plan, drv, err) < 0 ||
                               plan_loader_files(plan, drv, err) < 0
                       ? -1
                       : 0;
}

int gh_plan_build(int driver_rootfd, const struct gh_driver *drv, const struct gh_gpu_list *gpus,
                  const struct gh_request *req, const struct gh_layout *layout, struct gh_plan *out, gh_error_t *err)
{
        static const struct gh_gpu_list no_gpus = { 0 };

        memset(out, 0, sizeof(*out));
        out->layout = *layout;
        out->no_devbind = req->no_devbind;
        out->used_nvml = gpus != NULL && gpus->from_nvml;
        out->driver_version = strdup(drv->version ? drv->version : "");
        if (out->driver_version == NULL)
                return gh_err(err, ENOMEM, "planning the injection");
        if (build(driver_rootfd, drv, gpus ? gpus : &no_gpus, req, out, err) < 0) {
                gh_plan_free(out);
                return -1;
        }
        return 0;
}

int gh_plan_cuda_compat(struct gh_plan *plan, int rootfd, int procfd, const char *dir, const char *host_driver,
                        const char *host_cuda, gh_error_t *err)
{
        gh_cuda_compat_free(&plan->compat);
        if (gh_cuda_compat_check(rootfd, procfd, dir, host_driver ? host_driver : plan->driver_version, host_cuda,
                                 &plan->compat, err) < 0)
                return -1;
        for (size_t k = 0; plan->compat.used && k < plan->compat.nlibs; k++) {
                const struct gh_compat_lib *cl = &plan->compat.libs[k];
                bool replaced = false;
                for (size_t i = 0; i < plan->nlibs; i++) {
                        char *p;
                        if (plan->libs[i].compat32 || strcmp(plan->libs[i].soname, cl->soname) != 0)
                                continue;
                        if ((p = strdup(cl->path)) == NULL)
                                return gh_err(err, ENOMEM, "planning CUDA forward compatibility");
                        free(plan->libs[i].path);
                        plan->libs[i].path = p;
                        replaced = true;
                }
                if (!replaced && gh_plan_add_library(plan, cl->soname, cl->path, false, err) < 0)
                        return -1;
        }
        return 0;
}

int gh_plan_for_image(struct gh_plan *plan, int rootfd, int procfd, const struct gh_request *req, gh_error_t *err)
{
        bool has_libcuda = false;

        for (size_t i = 0; i < plan->nlibs; i++)
                has_libcuda |= !plan->libs[i].compat32 && strcmp(plan->libs[i].soname, "libcuda.so.1") == 0;
        if (req->no_cuda_compat || !has_libcuda)
                return 0;
        return gh_plan_cuda_compat(plan, rootfd, procfd, NULL, NULL, NULL, err);
}

void gh_plan_free(struct gh_plan *plan)
{
        gh_cuda_compat_free(&plan->compat);
        for (size_t i = 0; i < plan->n; i++) {
                gh_source_close(&plan->items[i].source);
                free(plan->items[i].src);
                free(plan->items[i].dst);
                free(plan->items[i].target);
                free(plan->items[i].soname);
        }
        free(plan->items);
        for (size_t i = 0; i < plan->nproc_gpus; i++) {
                gh_source_close(&plan->proc_gpus[i].source);
                free(plan->proc_gpus[i].busid);
        }
        free(plan->proc_gpus);
        for (size_t i = 0; i < plan->nlibs; i++) {
                free(plan->libs[i].soname);
                free(plan->libs[i].path);
        }
        free(plan->libs);
        free(plan->rules);
        free(plan->params);
        free(plan->version);
        free(plan->registry);
        free(plan->driver_version);
        memset(plan, 0, sizeof(*plan));
}
