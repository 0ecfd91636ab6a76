/* The injection plan: everything `configure` will put into a container, decided on the host before
 * touching the container.  Building the plan needs the driver root only; executing it happens in
 * two halves: sources are opened in the host's mount namespace (gh_plan_open_sources), then
 * attached inside the container's (gh_plan_apply). */
#ifndef GH_PLAN_H
#define GH_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"
#include "mount.h"

enum gh_item_kind {
        GH_ITEM_FILE,    /* bind a file (library, binary, firmware, socket) */
        GH_ITEM_DIR,     /* bind a directory (MPS pipe directory) */
        GH_ITEM_DEVICE,  /* a character device node: bind, or mknod with --no-devbind */
        GH_ITEM_SYMLINK, /* create a symlink dst -> target */
};

struct gh_item {
        enum gh_item_kind kind;
        char *src;    /* path inside the driver root (FILE, DIR, DEVICE) */
        char *dst;    /* path inside the container */
        char *target; /* SYMLINK */
        unsigned flags; /* GH_MNT_* */
        dev_t rdev;     /* DEVICE: expected st_rdev */
        bool optional;  /* a failure is a warning (e.g. a symlink the image already has as a file) */
        struct gh_source source;
};

/* A GPU's /proc/driver/nvidia/gpus/<bus id> directory to show in the container. */
struct gh_proc_gpu {
        char *busid;
        struct gh_source source;
};

struct gh_plan {
        struct gh_item *items;
        size_t n, cap;
        /* /proc/driver/nvidia masking: file contents read on the host. */
        bool mask_proc;
        char *params, *version, *registry;
        size_t params_len, version_len, registry_len;
        struct gh_proc_gpu *proc_gpus;
        size_t nproc_gpus;
        /* Libraries for the container's ld cache: key = SONAME, value = container path. */
        struct { char *soname; char *path; bool compat32; } *libs;
        size_t nlibs;
        bool no_devbind;
};

int gh_plan_add(struct gh_plan *plan, enum gh_item_kind kind, const char *src, const char *dst, unsigned flags,
                gh_error_t *err);
int gh_plan_add_device(struct gh_plan *plan, const char *src, const char *dst, dev_t rdev, gh_error_t *err);
int gh_plan_add_symlink(struct gh_plan *plan, const char *dst, const char *target, bool optional, gh_error_t *err);
int gh_plan_add_library(struct gh_plan *plan, const char *soname, const char *path, bool compat32, gh_error_t *err);
int gh_plan_add_proc_gpu(struct gh_plan *plan, const char *busid, gh_error_t *err);

/* Reads proc/driver/nvidia/{params,version,registry} under the driver root (params with
 * ModifyDeviceFiles rewritten to 0) for the masking tmpfs. */
int gh_plan_read_proc(struct gh_plan *plan, int driver_rootfd, gh_error_t *err);

/* Host side: opens every source under the driver root and checks device nodes' st_rdev. */
int gh_plan_open_sources(struct gh_plan *plan, int driver_rootfd, const char *driver_root, gh_error_t *err);

/* Container side: creates every target with the in-root resolver and attaches the sources,
 * creates the symlinks and masks /proc/driver/nvidia. */
int gh_plan_apply(struct gh_plan *plan, int rootfd, gh_error_t *err);

void gh_plan_free(struct gh_plan *plan);

#endif
