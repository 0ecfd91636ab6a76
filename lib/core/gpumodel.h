/* The GPU model: what is known about a GPU and its MIG devices, whichever source filled it (the
 * fast path of gpus.h or the NVML service of service.h/rpc.h).  Its own header so that enumeration,
 * the service and its protocol share the types without including each other. */
#ifndef GH_GPUMODEL_H
#define GH_GPUMODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define GH_UUID_MAX 96  /* "GPU-<36>" is 40; legacy MIG UUIDs "MIG-GPU-<36>/<gi>/<ci>" are longer */
#define GH_BUSID_MAX 32 /* normalised "0000:00:06.0" (lowercase hex, 4-digit domain) */
#define GH_MODEL_MAX 96
#define GH_BRAND_MAX 32
#define GH_ARCH_MAX 16 /* compute capability "9.0" */
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
        struct gh_gpu_usage *usage; /* with gh_gpus_opts.with_usage (usage.h); else NULL */
};

struct gh_gpu_list {
        char driver_version[GH_VERSION_MAX]; /* kernel module (NVRM) version, "580.95.05" */
        char cuda_version[16];               /* "13.0"; "" on the fast path */
        struct gh_gpu *gpus;
        size_t n;
        bool from_nvml; /* NVML's facts are here (asked now, or from the cache) */
        enum gh_gpus_origin {
                GH_ORIGIN_PROC,  /* the fast path */
                GH_ORIGIN_NVML,  /* the NVML service, now */
                GH_ORIGIN_CACHE, /* the driver-state cache (statecache.h) */
                GH_ORIGIN_CUDA,  /* the fast path, and the CUDA version from libcuda */
        } origin;
};

/* "proc", "nvml", "cache", "proc+libcuda": what `gpu-cli info` prints as "source". */
const char *gh_gpus_origin_name(enum gh_gpus_origin origin);

enum gh_gpus_source {
        GH_GPUS_NVML, /* the driver service; fails when NVML cannot answer */
        GH_GPUS_FAST, /* proc/driver/nvidia only */
        GH_GPUS_CUDA, /* the fast path plus the CUDA version from libcuda (no NVML, no cuInit) */
};

struct gh_gpu_list;
struct gh_driver_fp;
struct gpuhook_error;
/* The driver-state cache as the core sees it: the front end that has one hands it down
 * (front/statecache.h's gh_statecache); libgpuhook.so has none.  lookup returns 1 with *list filled
 * on a hit, 0 on a miss (why gets a short reason); save stores what NVML answered under the
 * fingerprint taken before asking. */
struct gh_gpu_cache {
        int (*lookup)(int rootfd, const char *path, struct gh_gpu_list *list, char *why, size_t size);
        int (*save)(const char *path, const struct gh_driver_fp *fp, const struct gh_gpu_list *list,
                    struct gpuhook_error **err);
        /* Plans (plancache.h), kept by the same cache: plan_lookup returns 1 with *fingerprint (the
         * fingerprint text it was kept under) and *text, both malloc'ed, when a plan is kept under
         * key, else 0; plan_save keeps one.  Either may be NULL (no plans kept). */
        int (*plan_lookup)(const char *path, const char *key, char **fingerprint, char **text);
        int (*plan_save)(const char *path, const char *key, const char *fingerprint, const char *text,
                         struct gpuhook_error **err);
};

struct gh_gpus_opts {
        enum gh_gpus_source source;
        uid_t uid;      /* identity of the driver service child; (uid_t) -1 = the overflow uid */
        gid_t gid;      /* (gid_t) -1 = the overflow gid */
        int timeout_ms; /* per RPC; <= 0 = the default (5 s) */
        /* GH_GPUS_NVML only: the driver-state cache file (statecache.h), NULL = none.  A hit answers
         * without starting the service; a miss asks NVML and then saves the answer. */
        const char *state_file;
        const struct gh_gpu_cache *cache; /* the cache's code (below); NULL = none, state_file unused */
        bool refresh;                     /* skip the lookup: always ask NVML, then save */
        bool with_usage;                  /* NVML only: also each GPU's utilisation, memory and processes */
        /* GH_GPUS_NVML: of NVML's facts only the CUDA version is needed.  When the cache misses (or
         * there is none) the GPUs come from the fast path and the CUDA version from libcuda
         * (GH_ORIGIN_CUDA); NVML is asked only if that fails.  That answer is not saved. */
        bool cuda_enough;
};
#define GH_GPUS_OPTS_DEFAULT                                                                                           \
        {                                                                                                              \
                .source = GH_GPUS_NVML, .uid = (uid_t) -1, .gid = (gid_t) -1, .timeout_ms = 0, .with_usage = false     \
        }

void gh_gpu_list_free(struct gh_gpu_list *list);
#define _cleanup_gpu_list_ __attribute__((cleanup(gh_gpu_list_free)))

/* Lookups; NULL when absent. */
const struct gh_gpu *gh_gpu_by_index(const struct gh_gpu_list *list, unsigned index);

/* Normalises a PCI bus id ("00:06.0", "0000:00:06.0", "00000000:00:06.0", any case) into
 * "0000:00:06.0".  Returns -1 (no error object: callers phrase their own) when it is not one. */
int gh_busid_normalize(const char *in, char *out, size_t size);

/* True when s is a dotted decimal version with at least one dot ("580.95.05", "13.0"). */
bool gh_version_is_dotted(const char *s);

#endif
