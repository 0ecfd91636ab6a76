/* MPS groups' control daemons (docs/mps.md): one nvidia-cuda-mps-control per group, started in a
 * new session and a private mount namespace (its own /dev/shm), stopped with everything it
 * started.  The group directory and its state files are core/mps.h; the CDI spec written for a
 * group is recorded by mps-cdi.c; the group's clients are mps-clients.h. */
#ifndef GH_MPS_DAEMON_H
#define GH_MPS_DAEMON_H

#include <limits.h>
#include <sys/types.h>

#include "error.h"
#include "gpus.h"
#include "mps.h"

struct gh_mps_start {
        const char *dir; /* NULL = GH_MPS_DEFAULT_DIR */
        const char *name;
        const char *control; /* host path of nvidia-cuda-mps-control */
        const struct gh_gpu *gpu;
        int threads;                   /* 0 = none */
        unsigned long long memory_mib; /* 0 = none */
        int timeout_ms;                /* how long to wait for the daemon to answer; <= 0 = 10 s */
};

/* Starts a group: creates its directory (an existing group is an error with code EEXIST), mounts
 * its shm, starts the daemon, waits until it answers, applies the limits and records the state.
 * On failure nothing is left behind: no directory, no mount, no process. */
int gh_mps_start(const struct gh_mps_start *opts, struct gh_mps_group *out, gh_error_t *err);

/* Stops a group: `quit` through the control interface, then SIGKILL to whatever is left in the
 * daemon's session after timeout_ms (<= 0: 5 s); unmounts shm and removes the directory. */
int gh_mps_stop(const char *dir, const char *name, const char *control, int timeout_ms, gh_error_t *err);

/* Runs the control client with `commands` on its stdin (the group's environment) and returns its
 * stdout in *output (caller frees).  A client that exits non-zero is an error quoting its output. */
int gh_mps_control(const char *dir, const char *name, const char *control, const char *commands, char **output,
                   gh_error_t *err);

#endif
