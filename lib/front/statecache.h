/* The driver-state cache: NVML's answers (gpus.h) kept in a root-owned file under /run, reused
 * while the driver-state fingerprint (core/fingerprint.h) is unchanged, so that a container start
 * that needs NVML's facts (requirements, brand, architecture, MIG) does not start NVML.
 * docs/statecache.md says what the fingerprint covers and why.  The core reaches this code only
 * through the gh_gpu_cache interface (gpumodel.h): gh_statecache is that interface. */
#ifndef GH_STATECACHE_H
#define GH_STATECACHE_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "fingerprint.h"
#include "gpus.h"

#define GH_STATECACHE_DEFAULT "/run/gpu-hook/driver-state.json"
#define GH_STATECACHE_MAX_SIZE (1024 * 1024)
#define GH_DRIVER_FP_NLIBS 2 /* libnvidia-ml.so.1, libcuda.so.1 */

/* A parsed cache file. */
struct gh_statecache_entry {
        char *fingerprint;
        char *libs[GH_DRIVER_FP_NLIBS];
        struct gh_gpu_list list;
};

void gh_statecache_entry_free(struct gh_statecache_entry *e);
#define _cleanup_statecache_entry_ __attribute__((cleanup(gh_statecache_entry_free)))

/* Parses a cache file's bytes (untrusted: fuzzed).  Every field is checked: a string too long or
 * with control characters, a number out of range, an unknown key, GPUs not in strictly ascending
 * bus-id order or sharing a minor are errors.  GPU indices are assigned in order. */
int gh_statecache_parse(const char *buf, size_t len, struct gh_statecache_entry *e, gh_error_t *err);

/* Serialises (the inverse of gh_statecache_parse). */
char *gh_statecache_format(const struct gh_driver_fp *fp, const struct gh_gpu_list *list);

/* Reads the file at path: only a regular file owned by root, not writable by group or other, not a
 * symlink, at most GH_STATECACHE_MAX_SIZE bytes.  An error says why it was not taken. */
int gh_statecache_read(const char *path, struct gh_statecache_entry *e, gh_error_t *err);

/* Looks for a cache entry that still holds for the driver under rootfd.  Returns 1 and fills list
 * on a hit; 0 on a miss (why, when not NULL, gets a short reason: "missing", "stale: gpus", ...). */
int gh_statecache_lookup(int rootfd, const char *path, struct gh_gpu_list *list, char *why, size_t size);

/* Writes list with fingerprint fp to path atomically (a temp file in the same directory, then
 * rename).  The directory is created (0755) when missing; it must be owned by root and not writable
 * by group or other. */
int gh_statecache_save(const char *path, const struct gh_driver_fp *fp, const struct gh_gpu_list *list,
                       gh_error_t *err);

/* Removes the file (and temp files a killed writer left).  Missing is not an error. */
int gh_statecache_clear(const char *path, gh_error_t *err);

/* Plans kept next to the cache file (core/plancache.h): lookup returns 1 with *fingerprint (the
 * driver's fingerprint text the plan was kept under) and *text, both malloc'ed, when a plan is kept
 * under key, else 0 (the caller compares the fingerprint: plancache.c); save keeps one (at most
 * GH_STATECACHE_MAX_PLANS; clear removes them with the cache). */
#define GH_STATECACHE_MAX_PLANS 32
int gh_statecache_plan_lookup(const char *path, const char *key, char **fingerprint, char **text);
int gh_statecache_plan_save(const char *path, const char *key, const char *fingerprint, const char *text,
                            gh_error_t *err);

/* The cache as the core's gh_gpu_cache interface (gpumodel.h): lookup and save above. */
extern const struct gh_gpu_cache gh_statecache;

#endif
