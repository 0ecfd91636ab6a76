/* `configure`: inject the driver into one container (REFERENCE §2-4, SECURITY rules 1-7).
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
        const char *rootfs;  /* the container's root as a host path; absolute, not "/" */
        const char *root;    /* driver root, "/" by default */
        const char *ldcache; /* ld.so.cache of the driver root (inside it), NULL = /etc/ld.so.cache */
        const char *path;    /* PATH searched for binaries under the driver root, NULL = default */
        const struct gh_request *req; /* what the container asks for */
};

/* Timings of the last gh_configure() call, microseconds, for logs and benchmarks. */
struct gh_configure_timings {
        long discover_us, plan_us, mount_us, ldcache_us, cgroup_us, total_us;
        bool used_nvml;
        size_t items; /* plan items applied */
};

/* Returns 0, or a negative value: GH_CONFIGURE_NO_DRIVER when no driver was found under the root,
 * GH_CONFIGURE_UNMET when a requirement does not hold, -1 for anything else. */
#define GH_CONFIGURE_NO_DRIVER (-3)
#define GH_CONFIGURE_UNMET (-4)
int gh_configure(const struct gh_configure_opts *opts, struct gh_configure_timings *timings, gh_error_t *err);

/* Writes the container's /etc/ld.so.cache: the image's entries (read only from a regular file) plus
 * the plan's libraries, which win over the image's own of the same name.  rootfd is the container's
 * root, procfd a procfs of our pid namespace (or AT_FDCWD). */
struct gh_plan;
int gh_configure_update_ldcache(const struct gh_plan *plan, int rootfd, int procfd, gh_error_t *err);

#endif
