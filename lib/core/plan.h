/* The injection plan: everything a container gets, decided on the host before touching it.
 *
 *   gh_layout_detect()   where the container keeps its libraries (from its rootfs), or a fixed
 *                        layout given by the caller (list, CDI) when there is no rootfs
 *   gh_discover()        the driver's files and the GPUs the request needs (discover.h)
 *   gh_plan_build()      the plan: device nodes with major:minor, files and directories to bind
 *                        with their container paths and mount flags, symlinks, the content of the
 *                        masked /proc/driver/nvidia, the device cgroup rules and the ld cache
 *                        entries.  `gpu-cli list` prints it, `gpu-cli configure --dry-run` prints
 *                        it as JSON (docs/plan.md), `gpu-cli configure` applies it.
 *
 * Applying it happens in two halves (inject.c): sources are opened in the host's mount namespace
 * (gh_plan_open_sources), then attached inside the container's (gh_plan_apply). */
#ifndef GH_PLAN_H
#define GH_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "cgroup.h"
#include "compat.h"
#include "driver.h"
#include "error.h"
#include "gpus.h"
#include "mount.h"
#include "request.h"

enum gh_item_kind {
        GH_ITEM_FILE,    /* bind a file (library, binary, firmware, socket) */
        GH_ITEM_DIR,     /* bind a directory (MPS pipe directory) */
        GH_ITEM_DEVICE,  /* a character device node: bind, or mknod with --no-devbind */
        GH_ITEM_SYMLINK, /* create a symlink dst -> target */
};

/* Why an item is in the plan (list's sections). */
enum gh_item_role {
        GH_ROLE_DEVICE,
        GH_ROLE_LIBRARY,
        GH_ROLE_BINARY,
        GH_ROLE_FIRMWARE,
        GH_ROLE_IPC,
        GH_ROLE_LINK,   /* a symlink next to a library (SONAME, development and GLX indirect links) or at the
                         * absolute library path a loader file names */
        GH_ROLE_CONFIG, /* a graphics loader file (Vulkan ICD/layer, EGL vendor/platform, app profiles) */
};

struct gh_item {
        enum gh_item_kind kind;
        enum gh_item_role role;
        char *src;      /* path inside the driver root (FILE, DIR, DEVICE) */
        char *dst;      /* path inside the container */
        char *target;   /* SYMLINK */
        unsigned flags; /* GH_MNT_* */
        dev_t rdev;     /* DEVICE: expected st_rdev */
        bool optional;  /* a failure is a warning (e.g. a symlink the image already has as a file) */
        bool replace;   /* SYMLINK: a file the image has there is replaced (CDI create-symlinks) */
        unsigned cap;   /* the GH_CAP_* bit that brought it in (0: always) */
        bool compat32;  /* an i386 library */
        char *soname;   /* LIBRARY: its SONAME (NULL when it has none) */
        bool host_src;  /* src is a host path, not one under the driver root (an MPS group's dirs) */
        struct gh_source source;
};

/* A GPU's /proc/driver/nvidia/gpus/<bus id> directory to show in the container. */
struct gh_proc_gpu {
        char *busid;
        struct gh_source source;
};

/* One entry of the container's ld cache. */
struct gh_plan_lib {
        char *soname;
        char *path; /* in the container */
        bool compat32;
};

/* The container's library directories. */
struct gh_layout {
        char libdir[128];   /* 64-bit libraries, e.g. /usr/lib/x86_64-linux-gnu */
        char libdir32[128]; /* i386 libraries, e.g. /usr/lib/i386-linux-gnu */
};

struct gh_plan {
        char *driver_version;
        struct gh_layout layout;
        struct gh_item *items; /* devices first, then libraries and their links, binaries, firmware, IPC,
                                * graphics loader files */
        size_t n, cap;
        /* /proc/driver/nvidia masking: file contents read on the host. */
        bool mask_proc;
        char *params, *version, *registry;
        size_t params_len, version_len, registry_len;
        struct gh_proc_gpu *proc_gpus;
        size_t nproc_gpus;
        struct gh_plan_lib *libs; /* ld cache entries */
        size_t nlibs;
        struct gh_dev_rule *rules; /* device cgroup rules: exactly the planned nodes */
        size_t nrules;
        bool no_devbind;
        bool used_nvml; /* the GPU list came from NVML */
        bool mps_group; /* the container joins an MPS group (docs/mps.md) */
        /* CUDA forward compatibility (docs/cuda-compat.md): the image's compat libraries, looked at
         * by gh_plan_cuda_compat() when there is an image (compat.checked); when used, libs holds
         * their entries in place of the driver's. */
        struct gh_cuda_compat compat;
};

/* The layout of the container whose root is rootfd (in-root resolver): Debian-style
 * (/usr/lib/x86_64-linux-gnu, /usr/lib/i386-linux-gnu) when it has /etc/debian_version, else
 * /usr/lib64 and /usr/lib32 (or /usr/lib when there is no /usr/lib32). */
void gh_layout_detect(int rootfd, struct gh_layout *out);
/* A named layout: "debian" or "lib64" (the two gh_layout_detect() picks from); -1 when unknown. */
int gh_layout_named(const char *name, struct gh_layout *out, gh_error_t *err);

/* Builds the plan for req: resolves its devices against gpus, checks its requirements (an unmet
 * one fails with kind GH_ERR_REQUIREMENT), collects the device nodes under the driver root, places
 * the driver's files in layout and reads /proc/driver/nvidia for the mask.  *out is filled on
 * success and empty on failure. */
int gh_plan_build(int driver_rootfd, const struct gh_driver *drv, const struct gh_gpu_list *gpus,
                  const struct gh_request *req, const struct gh_layout *layout, struct gh_plan *out, gh_error_t *err);

/* The part of the plan that depends on the image: CUDA forward compatibility.  Looks at the
 * image's compat directory (dir, NULL: /usr/local/cuda/compat) in the root rootfd, decides with
 * the plan's driver version, records the decision in plan->compat and, when the compat libraries
 * are to be preferred, makes them the plan's ld cache entries for their SONAMEs (replacing the
 * driver's, e.g. libcuda.so.1) and adds the others.  The hook path (configure), `configure
 * --dry-run` and `list --rootfs` call it after gh_plan_build(); so do the CDI hooks, with the
 * version their spec names.  -1 only when memory runs out. */
int gh_plan_cuda_compat(struct gh_plan *plan, int rootfd, int procfd, const char *dir, const char *host_driver,
                        const char *host_cuda, gh_error_t *err);

/* The image's part of the plan for req, one rule for every front end that has an image (the hook
 * path, `configure --dry-run ROOTFS`, `list --rootfs`): CUDA forward compatibility unless
 * req->no_cuda_compat or the plan has no ld cache entries (no libcuda to prefer anything over). */
int gh_plan_for_image(struct gh_plan *plan, int rootfd, int procfd, const struct gh_request *req, gh_error_t *err);

/* Host side: opens every source under the driver root and checks device nodes' st_rdev. */
int gh_plan_open_sources(struct gh_plan *plan, int driver_rootfd, const char *driver_root, gh_error_t *err);

/* Container side: creates every target with the in-root resolver and attaches the sources,
 * creates the symlinks and masks /proc/driver/nvidia. */
int gh_plan_apply(struct gh_plan *plan, int rootfd, gh_error_t *err);

void gh_plan_free(struct gh_plan *plan);

/* Building blocks of gh_plan_build (an item whose dst is already planned is skipped). */
int gh_plan_add(struct gh_plan *plan, enum gh_item_kind kind, const char *src, const char *dst, unsigned flags,
                gh_error_t *err);
int gh_plan_add_device(struct gh_plan *plan, const char *src, const char *dst, dev_t rdev, gh_error_t *err);
int gh_plan_add_symlink(struct gh_plan *plan, const char *dst, const char *target, bool optional, gh_error_t *err);
int gh_plan_add_library(struct gh_plan *plan, const char *soname, const char *path, bool compat32, gh_error_t *err);
int gh_plan_add_proc_gpu(struct gh_plan *plan, const char *busid, gh_error_t *err);
/* Reads proc/driver/nvidia/{params,version,registry} under the driver root (params with
 * ModifyDeviceFiles rewritten to 0) for the masking tmpfs. */
int gh_plan_read_proc(struct gh_plan *plan, int driver_rootfd, gh_error_t *err);

#endif
