/* libgpuhook: give OCI containers an NVIDIA GPU.
 *
 * This is the only public header.  Every exported symbol starts with gpuhook_; everything else in
 * the library is hidden (see libgpuhook.sym). */
#ifndef GPUHOOK_H
#define GPUHOOK_H

#ifdef __cplusplus
extern "C" {
#endif

/* Errors: functions return a negative value and fill *err; free it with gpuhook_error_free(). */
enum gpuhook_error_kind {
        GPUHOOK_ERR_FAILURE = 0,     /* the operation failed; the message says why */
        GPUHOOK_ERR_SYSTEM = 1,      /* a system call failed; code is its errno */
        GPUHOOK_ERR_USAGE = 2,       /* bad input from the caller: arguments, configuration, request */
        GPUHOOK_ERR_NO_DRIVER = 3,   /* no NVIDIA driver under the driver root */
        GPUHOOK_ERR_REQUIREMENT = 4, /* a requirement (cuda>=..., brand=...) does not hold */
};
struct gpuhook_error {
        int code;  /* errno value when the cause was a system call, else 0 */
        char *msg; /* one line: what failed, on what, and what to do */
        enum gpuhook_error_kind kind;
};
void gpuhook_error_free(struct gpuhook_error *err);

/* The exit status gpu-cli and gpu-hook use for an error: 1 failure (and system), 2 usage, 3 no
 * driver, 4 requirement not met; 1 for NULL. */
int gpuhook_error_exit_status(const struct gpuhook_error *err);

/* The library's version string, e.g. "0.1.0". */
const char *gpuhook_version(void);

#include <stdbool.h>
#include <sys/types.h>

/* A context: one driver root and what was learnt about it.  Not thread-safe; one per thread. */
struct gpuhook_ctx;

/* driver_root: where the driver lives (its ld.so.cache, /dev, /proc/driver/nvidia); NULL means "/".
 * Returns NULL and fills *err on failure (e.g. the directory cannot be opened). */
struct gpuhook_ctx *gpuhook_ctx_new(const char *driver_root, struct gpuhook_error **err);
void gpuhook_ctx_free(struct gpuhook_ctx *ctx);

/* Identity of the unprivileged child that loads NVML (default: the overflow uid/gid). */
void gpuhook_ctx_set_service_user(struct gpuhook_ctx *ctx, uid_t uid, gid_t gid);

/* Loads the GPUs: with_nvml asks NVML through the sandboxed driver service (brand, architecture,
 * CUDA version, MIG devices); without, /proc/driver/nvidia alone answers.  Returns the number of
 * GPUs, or -1 and fills *err.  A later call replaces the earlier answer. */
int gpuhook_load_gpus(struct gpuhook_ctx *ctx, bool with_nvml, struct gpuhook_error **err);

/* What gpuhook_load_gpus() found; strings stay valid until the next load or gpuhook_ctx_free().
 * brand, architecture and cuda_version are "" when NVML was not asked. */
struct gpuhook_gpu_info {
        unsigned index;     /* position in bus-id order: the number NVIDIA_VISIBLE_DEVICES uses */
        unsigned minor;     /* /dev/nvidia<minor> */
        const char *uuid;   /* "GPU-..." */
        const char *bus_id; /* "0000:00:06.0" */
        const char *model;
        const char *brand;
        const char *architecture; /* compute capability, "9.0" */
        unsigned mig_devices;
};
int gpuhook_gpu(const struct gpuhook_ctx *ctx, unsigned index, struct gpuhook_gpu_info *info);
const char *gpuhook_driver_version(const struct gpuhook_ctx *ctx);
const char *gpuhook_cuda_version(const struct gpuhook_ctx *ctx);

/* Injects the driver into a container, exactly as `gpu-cli configure` does (it is the same code),
 * in a forked child, so the caller keeps its capabilities and its mount namespace.  Needs root.  devices: an NVIDIA_VISIBLE_DEVICES-style list or NULL (no GPU node); capabilities: a
 * NVIDIA_DRIVER_CAPABILITIES-style list ("compute,utility", "all") or NULL (none: nodes only);
 * requirements: NULL-terminated expressions ("cuda>=12.0") or NULL.  Returns 0, or -1 and fills
 * *err, whose kind tells GPUHOOK_ERR_NO_DRIVER and GPUHOOK_ERR_REQUIREMENT from other failures. */
enum {
        GPUHOOK_NO_CGROUPS = 1 << 0, /* leave the device cgroup alone */
        GPUHOOK_NO_DEVBIND = 1 << 1, /* mknod device nodes instead of bind-mounting them */
};
int gpuhook_configure(struct gpuhook_ctx *ctx, pid_t pid, const char *rootfs, const char *devices,
                      const char *capabilities, const char *const *requirements, unsigned flags,
                      struct gpuhook_error **err);

#ifdef __cplusplus
}
#endif
#endif
