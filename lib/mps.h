/* MPS groups: a CUDA MPS control daemon per group of containers, each with its own pipe directory
 * and its own /dev/shm, so that limits set on one daemon (active thread percentage, pinned device
 * memory) bind every client of that group and no other (docs/mps.md).
 *
 * A group lives in <dir>/<name>/ (dir defaults to GH_MPS_DEFAULT_DIR, root-owned, 0755):
 *   group     the state: key=value lines (name, gpu_uuid, gpu_index, threads, memory_mib, pid,
 *             starttime); root-owned, written atomically
 *   pipe/     CUDA_MPS_PIPE_DIRECTORY of the daemon; a container of the group gets it at
 *             /tmp/nvidia-mps
 *   log/      CUDA_MPS_LOG_DIRECTORY (and the daemon's stdout/stderr in gpu-cli.log)
 *   cdi-spec  the CDI spec `gpu-cli mps start` wrote for the group (mps-cdi.c): path, kind, device
 *             and inode of the file, so that stop removes that file and no other
 *   shm/      a tmpfs the daemon sees as /dev/shm (its own mount namespace); a container of the
 *             group gets it at /dev/shm
 * The daemon runs `nvidia-cuda-mps-control -f` from the driver, in a new session and a private
 * mount namespace, with CUDA_VISIBLE_DEVICES set to the group's GPU UUID and a fixed environment. */
#ifndef GH_MPS_H
#define GH_MPS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"
#include "gpus.h"

#define GH_MPS_DEFAULT_DIR "/run/gpu-hook/mps"
#define GH_MPS_NAME_MAX 64
#define GH_MPS_CONTROL "nvidia-cuda-mps-control"
/* Where a container of a group finds the group: the default pipe directory of CUDA clients. */
#define GH_MPS_CONTAINER_PIPE_DIR "/tmp/nvidia-mps"
#define GH_MPS_CONTAINER_SHM_DIR "/dev/shm"

struct gh_mps_group {
        char name[GH_MPS_NAME_MAX + 1];
        char gpu_uuid[GH_UUID_MAX];
        unsigned gpu_index;            /* the GPU's index when the group was started */
        int threads;                   /* active thread percentage 1-100; 0 = no limit set */
        unsigned long long memory_mib; /* pinned device memory limit; 0 = no limit set */
        pid_t pid;                     /* the control daemon */
        unsigned long long starttime;  /* its /proc/PID/stat start time, to tell pid reuse */
        bool alive;                    /* filled by gh_mps_load/list: the daemon still runs */
};

struct gh_mps_start {
        const char *dir; /* NULL = GH_MPS_DEFAULT_DIR */
        const char *name;
        const char *control; /* host path of nvidia-cuda-mps-control */
        const struct gh_gpu *gpu;
        int threads;                   /* 0 = none */
        unsigned long long memory_mib; /* 0 = none */
        int timeout_ms;                /* how long to wait for the daemon to answer; <= 0 = 10 s */
};

/* A group name: 1-64 of [A-Za-z0-9_.-], not starting with '.' or '-'. */
int gh_mps_name_check(const char *name, gh_error_t *err);

/* Parses "4G", "512M", "1024" (MiB), "4GiB", "512MiB" into MiB; 0 is refused. */
int gh_mps_parse_size(const char *s, unsigned long long *mib, gh_error_t *err);

/* Starts a group: creates its directory (an existing group is an error with code EEXIST), mounts
 * its shm, starts the daemon, waits until it answers, applies the limits and records the state.
 * On failure nothing is left behind: no directory, no mount, no process. */
int gh_mps_start(const struct gh_mps_start *opts, struct gh_mps_group *out, gh_error_t *err);

/* Stops a group: `quit` through the control interface, then SIGKILL to whatever is left in the
 * daemon's session after timeout_ms (<= 0: 5 s); unmounts shm and removes the directory. */
int gh_mps_stop(const char *dir, const char *name, const char *control, int timeout_ms, gh_error_t *err);

/* Reads one group's state (refusing files that are not root-owned regular files of sane size). */
int gh_mps_load(const char *dir, const char *name, struct gh_mps_group *g, gh_error_t *err);

/* gh_mps_load, and the group's daemon must be running (what a container joining it, or a CDI spec
 * for it, needs); otherwise an error that says how to restart it. */
int gh_mps_load_running(const char *dir, const char *name, struct gh_mps_group *g, gh_error_t *err);

/* Every group under dir, sorted by name.  A missing dir is an empty list. */
int gh_mps_list(const char *dir, struct gh_mps_group **groups, size_t *n, gh_error_t *err);

/* Runs the control client with `commands` on its stdin (the group's environment) and returns its
 * stdout in *output (caller frees).  A client that exits non-zero is an error quoting its output. */
int gh_mps_control(const char *dir, const char *name, const char *control, const char *commands, char **output,
                   gh_error_t *err);

/* The pids of a group's connected clients (get_server_list, then get_client_list of each server),
 * as the daemon reports them (host pids); *pids is NULL when n is 0 (caller frees). */
int gh_mps_clients(const char *dir, const char *name, const char *control, pid_t **pids, size_t *n, gh_error_t *err);

/* The small KEY=VALUE files of a group's directory (its state, the record of its CDI spec), in
 * one place.  gh_mps_kv_write writes `text` whole under PATH.tmp and renames it over PATH.
 * gh_mps_kv_read calls line() for each KEY=VALUE line, but only of a file of ours: a regular file
 * owned by our uid, not writable by group or other, at most GH_MPS_KV_MAX bytes.  It fails with
 * the code ENOENT when there is no file, EBADMSG when the file is not such a file. */
#define GH_MPS_KV_MAX (4096 + 512)
int gh_mps_kv_write(const char *path, const char *text, gh_error_t *err);
int gh_mps_kv_read(const char *path, void (*line)(const char *key, const char *value, void *data), void *data,
                   gh_error_t *err);

/* The CDI spec written for a group (lib/mps-cdi.c). */
struct gh_mps_cdi {
        char path[PATH_MAX];
        char kind[256]; /* VENDOR/CLASS: the device is KIND=mps-NAME */
        dev_t dev;      /* the file written (a file put in its place since is not ours) */
        ino_t ino;
};

/* Records in the group's directory the spec written for it. */
int gh_mps_cdi_record(const char *dir, const char *name, const struct gh_mps_cdi *c, gh_error_t *err);

/* The spec recorded for a group: 1 with *c filled, 0 when none is recorded, -1 on error. */
int gh_mps_cdi_load(const char *dir, const char *name, struct gh_mps_cdi *c, gh_error_t *err);

/* Removes the recorded spec when that file is still the one written (same device and inode, a
 * regular file); a file that is gone is no error, one replaced since is left alone with an error. */
int gh_mps_cdi_remove(const char *dir, const char *name, gh_error_t *err);

/* The host path of nvidia-cuda-mps-control of the driver under root (rootfd open on it). */
int gh_mps_find_control(int rootfd, const char *root, const char *ldcache, char **path, gh_error_t *err);

#endif
