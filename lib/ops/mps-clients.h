/* A running MPS group's clients (docs/mps.md): the control program of the driver, the clients'
 * pids as the group's daemon lists them, and each client attributed to its container the way GPU
 * processes are (container.h), for gpu-cli ps and mps list. */
#ifndef GH_MPS_CLIENTS_H
#define GH_MPS_CLIENTS_H

#include <stddef.h>
#include <sys/types.h>

#include "attribute.h"
#include "error.h"
#include "mps.h"
#include "usage.h"

/* The host path of nvidia-cuda-mps-control of the driver under root (rootfd open on it). */
int gh_mps_find_control(int rootfd, const char *root, const char *ldcache, char **path, gh_error_t *err);

/* The pids of a group's connected clients (get_server_list, then get_client_list of each server),
 * as the daemon reports them (host pids); *pids is NULL when n is 0 (caller frees). */
int gh_mps_clients(const char *dir, const char *name, const char *control, pid_t **pids, size_t *n, gh_error_t *err);

/* Every group under a->mps_dir with its clients, each attributed to its container and pod the way
 * GPU processes are (attribute.h).  control NULL (no control program found): every client list is
 * empty.  A group whose daemon cannot be asked has no clients; a client gone meanwhile is left out. */
struct gh_mps_client {
        pid_t pid;
        struct gh_proc_owner owner;
};
struct gh_mps_usage {
        struct gh_mps_group group;
        struct gh_mps_client *clients;
        size_t n;
};
int gh_mps_usage_load(const struct gh_attribution *a, const char *control, struct gh_mps_usage **out, size_t *n,
                      gh_error_t *err);
void gh_mps_usage_free(struct gh_mps_usage *u, size_t n);

#endif
