/* The driver service: a short-lived child that loads NVML so the privileged process never does.
 *
 * The child chroots into the driver root, drops to an unprivileged uid/gid, drops every
 * capability, sets no_new_privs, dies with its parent, runs with an empty environment, dlopens
 * libnvidia-ml.so.1 and answers the protocol of lib/core/nvml.x over a socketpair (rpc-server.c).  A call that
 * does not return in time, a crash or an NVML error ends with the child killed and reaped. */
#ifndef GH_SERVICE_H
#define GH_SERVICE_H

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"
#include "gpumodel.h"

/* Starts the service for the driver root, asks it for everything and stops it.  opts->uid/gid
 * (uid_t) -1 means the kernel's overflow uid/gid. */
int gh_service_query(int rootfd, const struct gh_gpus_opts *opts, struct gh_gpu_list *list, gh_error_t *err);

/* The same sandboxed child, loading libcuda instead of NVML, answers the CUDA driver version
 * ("13.0") from cuDriverGetVersion without cuInit.  lib: its path inside the driver root (the
 * driver's own file: an ld.so.cache may list another libcuda.so.1 first); NULL = by SONAME. */
int gh_service_cuda_version(int rootfd, const struct gh_gpus_opts *opts, const char *lib, char *cuda, size_t size,
                            gh_error_t *err);

/* False in a program without a dynamic loader (a static PIE: gpu-hook, nvidia-cdi-hook): its dlopen
 * would need the very glibc it was linked with, not the host's.  There the child execs the helper
 * set below (gpu-cli, whose hidden command driver-service calls gh_service_child) right after fork;
 * with no helper set the two calls above refuse at once, with code ELIBACC and nothing started. */
bool gh_service_can_load(void);
/* path: a program run as `PATH driver-service --root-fd=N --socket-fd=N --uid=U --gid=G
 * --parent=PID [--cuda=LIB]`, with only PATH in its environment; the string must outlive its use. */
void gh_service_set_helper(const char *path);
/* The child's part: sandbox, load NVML (or libcuda when cuda; cuda_lib "" or NULL: by SONAME) and
 * answer on sock until EOF.  rootfd: the driver root; parent: the process that must stay alive. */
__attribute__((noreturn)) void gh_service_child(int rootfd, int sock, uid_t uid, gid_t gid, pid_t parent, bool cuda,
                                                const char *cuda_lib);

/* Parses --user: "UID", "UID:GID" (numbers only; a name would need the host's NSS, which runs
 * code from outside our control).  GID defaults to UID. */
int gh_service_parse_user(const char *spec, uid_t *uid, gid_t *gid, gh_error_t *err);

/* The overflow uid/gid from /proc/sys/kernel/overflow{u,g}id (65534 when unreadable). */
uid_t gh_overflow_uid(void);
gid_t gh_overflow_gid(void);

#endif
