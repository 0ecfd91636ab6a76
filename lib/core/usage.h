/* What each GPU is doing now: utilisation, memory, temperature, power and the processes using it.
 *
 * NVML answers inside the sandboxed driver service (service.c); the server half here asks it,
 * the client half checks the answer and turns it into a gh_gpu_usage attached to each gh_gpu
 * (gh_gpus_opts.with_usage).  Every figure has an "unknown" value: drivers and GPUs differ in what
 * they report, and a missing entry point (older drivers) is not an error. */
#ifndef GH_USAGE_H
#define GH_USAGE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"

#define GH_UNKNOWN_U64 UINT64_MAX

/* Who a GPU process belongs to; front/container.c fills it (gh_usage_attribute). */
#define GH_CONTAINER_ID_MAX 128
#define GH_RUNTIME_MAX 16
#define GH_POD_FIELD_MAX 254 /* a Kubernetes name is at most 253 bytes */
#define GH_POD_UID_MAX 64
#define GH_MPS_GROUP_NAME_MAX 65

/* What the orchestrator said about a container (its CRI annotations, front/podrecord.h); "" unknown. */
struct gh_pod {
        char name[GH_POD_FIELD_MAX];
        char namespace_[GH_POD_FIELD_MAX];
        char container[GH_POD_FIELD_MAX]; /* the container's name in its pod */
        char uid[GH_POD_UID_MAX];
};

/* Who holds a GPU process's memory. */
enum gh_owner_kind {
        GH_OWNER_HOST = 0,       /* no container, no MPS group */
        GH_OWNER_CONTAINER,      /* a container whose init runs (or whose state is unknown: see state_known) */
        GH_OWNER_CONTAINER_GONE, /* a container's cgroup, but the container's init is gone: a leftover */
        GH_OWNER_MPS_SERVER,     /* the MPS server of a running group (its clients' memory) */
        GH_OWNER_MPS_STOPPED,    /* the MPS server of a group whose control daemon is gone */
};

/* "host", "container", "container-gone", "mps-server", "mps-stopped". */
const char *gh_owner_kind_name(enum gh_owner_kind kind);

/* True for the kinds whose memory no running container owns (host, container-gone, mps-stopped). */
bool gh_owner_unowned(enum gh_owner_kind kind);

struct gh_proc_owner {
        bool in_container;            /* false: a host process (kind HOST or MPS_*) */
        char runtime[GH_RUNTIME_MAX]; /* "docker", "containerd", "cri-o", "podman", "runc", "crun",
                                         * "cri" (Kubernetes, runtime unknown), "unknown" */
        char id[GH_CONTAINER_ID_MAX]; /* "" for host processes */
        pid_t ns_pid;                 /* PID inside its namespace (the host PID for host processes) */
        char comm[17];
        enum gh_owner_kind kind;
        bool state_known;                      /* CONTAINER: its init was seen running (a record or the runtime's
                                        * state); false: no state found, assumed running */
        struct gh_pod pod;                     /* in_container: from the container's record or bundle */
        char mps_group[GH_MPS_GROUP_NAME_MAX]; /* MPS_*: the group's name */
};

#define GH_MAX_GPU_PROCS 4096

struct gh_gpu_proc {
        pid_t pid; /* as the host sees it */
        bool compute, graphics;
        uint64_t used_memory;       /* bytes; GH_UNKNOWN_U64 when the driver does not say */
        int sm_util, mem_util;      /* percent over the driver's last sample; -1 unknown */
        struct gh_proc_owner owner; /* filled by gh_usage_attribute() */
};

struct gh_gpu_usage {
        int gpu_util, mem_util;          /* percent; -1 unknown */
        uint64_t mem_used, mem_total;    /* bytes; GH_UNKNOWN_U64 unknown */
        uint64_t mem_free;               /* bytes NVML calls free (total - used - reserved); GH_UNKNOWN_U64 */
        int temperature_c;               /* -1 unknown */
        int power_mw;                    /* -1 unknown */
        int compute_mode;                /* GH_COMPUTE_MODE_*; -1 unknown */
        int sm_clock_mhz, mem_clock_mhz; /* current clocks; -1 unknown */
        struct gh_gpu_proc *procs;
        size_t nprocs;
};

/* NVML's compute modes (nvmlComputeMode_t); the driver never sets one by itself. */
enum {
        GH_COMPUTE_MODE_DEFAULT = 0,
        GH_COMPUTE_MODE_EXCLUSIVE_THREAD = 1,
        GH_COMPUTE_MODE_PROHIBITED = 2,
        GH_COMPUTE_MODE_EXCLUSIVE_PROCESS = 3
};

/* "Default", "Exclusive_Thread", "Prohibited", "Exclusive_Process" (nvidia-smi's words); "-" unknown. */
const char *gh_compute_mode_name(int mode);

void gh_gpu_usage_free(struct gh_gpu_usage *u);

/* ---- the protocol halves (rpc-server.c and rpc-client.c call these) ---- */

/* Server: resolves the optional NVML entry points from the loaded library. */
void gh_usage_bind(void *nvml_lib);

struct gh_rpc_usage_res;
/* Server: fills res for the GPU at NVML index. */
void gh_usage_serve(unsigned index, struct gh_rpc_usage_res *res);

struct gh_rpc_usage;
/* Client: validates the reply for GPU index and converts it. */
int gh_usage_convert(const struct gh_rpc_usage *r, unsigned index, struct gh_gpu_usage **out, gh_error_t *err);

#endif
