/* `configure`: inject the driver into one container (docs/architecture.md, docs/threat-model.md rules 1-7).
 *
 * Phases, each with its own capabilities (caps.h):
 *   discover  driver files (driver.h), GPUs (gpus.h; NVML only when needed), selection, requirements
 *   plan      what goes where (plan.h), sources opened on the host
 *   enter     setns() into the container's mount namespace, open its rootfs there
 *   mount     device nodes, files, symlinks, /proc/driver/nvidia masking
 *   ldcache   the container's /etc/ld.so.cache, written natively (or the host's ldconfig, sandboxed)
 *   cgroup    device rules for exactly the injected nodes (v1 devices.allow / v2 eBPF) */
#ifndef GH_CONFIGURE_H
#define GH_CONFIGURE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"

#include "plan.h"
#include "request.h"

struct gh_configure_opts {
        pid_t pid;
        const char *rootfs;           /* the container's root as a host path; absolute, not "/" */
        const char *root;             /* driver root, "/" by default */
        const char *ldcache;          /* ld.so.cache of the driver root (inside it), NULL = /etc/ld.so.cache */
        const char *path;             /* PATH searched for binaries under the driver root, NULL = default */
        const struct gh_request *req; /* what the container asks for */
};

/* Timings of the last gh_configure() call, microseconds, for logs and benchmarks.  Parts: gpus_us
 * of discover_us (the rest is the driver's files), open_us of plan_us (the sources opened on the
 * host; the rest is the namespaces and the plan itself), enter_us of mount_us (setns and the rootfs;
 * the rest is applying the plan). */
struct gh_configure_timings {
        long discover_us, plan_us, mount_us, ldcache_us, cgroup_us, total_us;
        long gpus_us, open_us, enter_us;
        bool used_nvml;  /* NVML's facts were needed (from the service or the driver-state cache) */
        int gpus_origin; /* enum gh_gpus_origin: where they came from */
        size_t items;    /* plan items applied */
};

/* Returns 0, or -1 with *err filled (its kind: GH_ERR_NO_DRIVER, GH_ERR_REQUIREMENT, ...). */
int gh_configure(const struct gh_configure_opts *opts, struct gh_configure_timings *timings, gh_error_t *err);

#endif
