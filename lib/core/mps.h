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
 *   cdi-spec  the CDI spec `gpu-cli mps start` wrote for the group (ops/mps-cdi.c): path, kind, device
 *             and inode of the file, so that stop removes that file and no other
 *   shm/      a tmpfs the daemon sees as /dev/shm (its own mount namespace); a container of the
 *             group gets it at /dev/shm
 * The daemon runs `nvidia-cuda-mps-control -f` from the driver, in a new session and a private
 * mount namespace, with CUDA_VISIBLE_DEVICES set to the group's GPU UUID and a fixed environment.
 *
 * This header is the group directory and its state (what the plan, the env decision and CDI read);
 * starting and stopping daemons is ops/mps-daemon.h. */
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

/* A group name: 1-64 of [A-Za-z0-9_.-], not starting with '.' or '-'. */
int gh_mps_name_check(const char *name, gh_error_t *err);

/* Parses "4G", "512M", "1024" (MiB), "4GiB", "512MiB" into MiB; 0 is refused. */
int gh_mps_parse_size(const char *s, unsigned long long *mib, gh_error_t *err);

/* DIR, or GH_MPS_DEFAULT_DIR when dir is NULL: where groups live. */
const char *gh_mps_dir(const char *dir);

/* The one place a group's paths are built: <dir>/<name>[/<sub>]. */
void gh_mps_group_path(char *buf, size_t size, const char *dir, const char *name, const char *sub);

/* Whether the group's recorded daemon (pid and start time) still runs. */
bool gh_mps_group_alive(const struct gh_mps_group *g);

/* Writes the group's state file (atomically, see gh_mps_kv_write). */
int gh_mps_save(const char *dir, const struct gh_mps_group *g, gh_error_t *err);

/* Reads one group's state (refusing files that are not root-owned regular files of sane size). */
int gh_mps_load(const char *dir, const char *name, struct gh_mps_group *g, gh_error_t *err);

/* gh_mps_load, and the group's daemon must be running (what a container joining it, or a CDI spec
 * for it, needs); otherwise an error that says how to restart it. */
int gh_mps_load_running(const char *dir, const char *name, struct gh_mps_group *g, gh_error_t *err);

/* Every group under dir, sorted by name.  A missing dir is an empty list. */
int gh_mps_list(const char *dir, struct gh_mps_group **groups, size_t *n, gh_error_t *err);

/* The small KEY=VALUE files of a group's directory (its state, the record of its CDI spec), in
 * one place.  gh_mps_kv_write writes `text` whole through the one writer (atomic: a temporary
 * file renamed over PATH, no fsync).
 * gh_mps_kv_read calls line() for each KEY=VALUE line, but only of a file of ours: a regular file
 * owned by our uid, not writable by group or other, at most GH_MPS_KV_MAX bytes.  It fails with
 * the code ENOENT when there is no file, EBADMSG when the file is not such a file. */
#define GH_MPS_KV_MAX (4096 + 512)
int gh_mps_kv_write(const char *path, const char *text, gh_error_t *err);
int gh_mps_kv_read(const char *path, void (*line)(const char *key, const char *value, void *data), void *data,
                   gh_error_t *err);

#endif
