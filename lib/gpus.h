/* GPU enumeration: which GPUs (and MIG devices) the driver under a driver root has.
 *
 * Two sources.  The fast path reads proc/driver/nvidia/{version,gpus/<bus id>/information} under
 * the root and needs no NVML: it knows index, minor, UUID, bus id, model and the driver version.
 * The NVML service (service.h) runs libnvidia-ml in an unprivileged chrooted child and adds the
 * CUDA version, brand, architecture and MIG devices.  Either way GPUs are ordered by bus id and the
 * position in that order is the index users write in NVIDIA_VISIBLE_DEVICES. */
#ifndef GH_GPUS_H
#define GH_GPUS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"

#define GH_UUID_MAX 96   /* "GPU-<36>" is 40; legacy MIG UUIDs "MIG-GPU-<36>/<gi>/<ci>" are longer */
#define GH_BUSID_MAX 32  /* normalised "0000:00:06.0" (lowercase hex, 4-digit domain) */
#define GH_MODEL_MAX 96
#define GH_BRAND_MAX 32
#define GH_ARCH_MAX 16   /* compute capability "9.0" */
#define GH_VERSION_MAX 32

struct gh_mig {
        unsigned parent_index; /* gh_gpu.index of the parent */
        unsigned index;        /* position among the parent's MIG devices: the "1" of "0:1" */
        unsigned gi, ci;       /* GPU instance and compute instance ids */
        char uuid[GH_UUID_MAX];
        /* minors of /dev/nvidia-caps/nvidia-capN from capabilities/gpu<minor>/mig/gi<gi>/access and
         * .../gi<gi>/ci<ci>/access; 0 with has_caps false when the driver root has no such file. */
        unsigned gi_cap_minor, ci_cap_minor;
        bool has_caps;
};

struct gh_gpu {
        unsigned index; /* position in bus-id order */
        unsigned minor; /* /dev/nvidia<minor> */
        char uuid[GH_UUID_MAX];
        char busid[GH_BUSID_MAX];
        char model[GH_MODEL_MAX];
        char brand[GH_BRAND_MAX]; /* NVML brand name ("Tesla", "GeForce", ...); "" on the fast path */
        char arch[GH_ARCH_MAX];   /* compute capability "9.0"; "" on the fast path */
        bool mig_enabled;
        struct gh_mig *migs;
        size_t nmigs;
};

struct gh_gpu_list {
        char driver_version[GH_VERSION_MAX]; /* kernel module (NVRM) version, "580.95.05" */
        char cuda_version[16];               /* "13.0"; "" on the fast path */
        struct gh_gpu *gpus;
        size_t n;
        bool from_nvml;                      /* NVML's facts are here (asked now, or from the cache) */
        enum gh_gpus_origin {
                GH_ORIGIN_PROC,              /* the fast path */
                GH_ORIGIN_NVML,              /* the NVML service, now */
                GH_ORIGIN_CACHE,             /* the driver-state cache (statecache.h) */
                GH_ORIGIN_CUDA,              /* the fast path, and the CUDA version from libcuda */
        } origin;
};

/* "proc", "nvml", "cache", "proc+libcuda": what `gpu-cli info` prints as "source". */
const char *gh_gpus_origin_name(enum gh_gpus_origin origin);

enum gh_gpus_source {
        GH_GPUS_NVML, /* the driver service; fails when NVML cannot answer */
        GH_GPUS_FAST, /* proc/driver/nvidia only */
        GH_GPUS_CUDA, /* the fast path plus the CUDA version from libcuda (no NVML, no cuInit) */
};

struct gh_gpus_opts {
        enum gh_gpus_source source;
        uid_t uid; /* identity of the driver service child; (uid_t) -1 = the overflow uid */
        gid_t gid; /* (gid_t) -1 = the overflow gid */
        int timeout_ms; /* per RPC; <= 0 = the default (5 s) */
        /* GH_GPUS_NVML only: the driver-state cache file (statecache.h), NULL = none.  A hit answers
         * without starting the service; a miss asks NVML and then saves the answer. */
        const char *state_file;
        bool refresh; /* skip the lookup: always ask NVML, then save */
};
#define GH_GPUS_OPTS_DEFAULT { .source = GH_GPUS_NVML, .uid = (uid_t) -1, .gid = (gid_t) -1, .timeout_ms = 0 }

/* Fills *list from the driver root (an O_PATH|O_DIRECTORY fd, see gh_rootfs_open).  On failure
 * *list is left empty.  Free the result with gh_gpu_list_free(). */
int gh_gpus_load(int rootfd, const struct gh_gpus_opts *opts, struct gh_gpu_list *list, gh_error_t *err);

/* The fast path alone. */
int gh_gpus_fast(int rootfd, struct gh_gpu_list *list, gh_error_t *err);

void gh_gpu_list_free(struct gh_gpu_list *list);
#define _cleanup_gpu_list_ __attribute__((cleanup(gh_gpu_list_free)))

/* Reads proc/driver/nvidia/version under the root: the NVRM version ("580.95.05"). */
int gh_gpus_driver_version(int rootfd, char *buf, size_t size, gh_error_t *err);

/* Parses one gpus/<bus id>/information file (text, len bytes, need not be NUL-terminated) into
 * gpu's minor, uuid, busid and model.  Fields may be separated by tabs or spaces in any amount;
 * unknown lines are ignored.  `what` names the file in errors.  A missing Device Minor or GPU UUID
 * is an error. */
int gh_gpus_parse_information(const char *text, size_t len, const char *what, struct gh_gpu *gpu,
                              gh_error_t *err);

/* Normalises a PCI bus id ("00:06.0", "0000:00:06.0", "00000000:00:06.0", any case) into
 * "0000:00:06.0".  Returns -1 (no error object: callers phrase their own) when it is not one. */
int gh_busid_normalize(const char *in, char *out, size_t size);

/* Fills the MIG devices' cap minors from proc/driver/nvidia/capabilities under the root. */
int gh_gpus_read_mig_caps(int rootfd, struct gh_gpu_list *list, gh_error_t *err);

/* True when s is a dotted decimal version with at least one dot ("580.95.05", "13.0"). */
bool gh_version_is_dotted(const char *s);

/* Lookups; NULL when absent. */
const struct gh_gpu *gh_gpu_by_index(const struct gh_gpu_list *list, unsigned index);

#endif
