/* Which container a host process belongs to, and where a container's runtime keeps its state.
 *
 * A process is attributed from /proc/PID/cgroup: every runtime names the cgroup it creates after the
 * container id in its own way (docker-<id>.scope, /docker/<id>, cri-containerd-<id>.scope,
 * crio-<id>.scope, libpod-<id>.scope, runc-<id>.scope, and plain /<id> for runc and crun with the
 * cgroupfs manager), and /proc/PID/status's NSpid gives the PID the process has inside its PID
 * namespace.  Plain names say no runtime: they are looked up in the runtimes' state directories. */
#ifndef GH_CONTAINER_H
#define GH_CONTAINER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"
#include "usage.h"

/* Parses the text of /proc/PID/cgroup (len bytes).  Returns 1 with runtime and id set when a
 * runtime's naming is recognised, 0 with id = the last component of the cgroup path (or "" for
 * "/") and runtime "" otherwise, -1 on malformed text.  Ids keep only [A-Za-z0-9_.:@-]. */
int gh_cgroup_container(const char *text, size_t len, char runtime[GH_RUNTIME_MAX], char id[GH_CONTAINER_ID_MAX]);

/* A container id as runtimes write them: 1-127 of [A-Za-z0-9_.:@-], not starting with '.'. */
bool gh_container_id_valid(const char *id);

/* Attributes host PID pid.  state_roots: extra runtime state directories (NULL-terminated, may be
 * NULL), searched after the defaults.  A process that has gone is -1 (ESRCH). */
int gh_proc_owner(pid_t pid, const char *const *state_roots, struct gh_proc_owner *out, gh_error_t *err);

struct gh_container_ref {
        char runtime[GH_RUNTIME_MAX];
        char id[GH_CONTAINER_ID_MAX];
        pid_t pid;             /* its init process, on the host */
        char bundle[PATH_MAX]; /* "" when the state does not say */
};

/* Finds a running container by id, or by a unique prefix of at least 4 characters, in the default
 * state directories (runc, crun, Docker's and containerd's runc roots) and state_roots. */
int gh_container_find(const char *id, const char *const *state_roots, struct gh_container_ref *out, gh_error_t *err);

#endif
