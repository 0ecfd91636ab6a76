/* The driver-state cache: NVML's answers (gpus.h) kept in a root-owned file under /run, reused
 * while a fingerprint of the driver state is unchanged, so that a container start that needs
 * NVML's facts (requirements, brand, architecture, MIG) does not start NVML.  docs/statecache.md
 * says what the fingerprint covers and why.
 *
 * The fingerprint is text, one "key value" line per input: the cache's format and writer version,
 * the boot id, the driver root's identity, /proc/driver/nvidia/version, the identity (dev, inode,
 * size, mtime) of the driver root's ld.so.cache and of the real files behind libnvidia-ml.so.1 and
 * libcuda.so.1, the /proc/driver/nvidia/gpus entries and the tree under
 * /proc/driver/nvidia/capabilities (names and inode numbers).  It is computed BEFORE asking NVML,
 * so a change during the query leaves a cache that no longer matches. */
#ifndef GH_STATECACHE_H
#define GH_STATECACHE_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "gpus.h"

#define GH_STATECACHE_DEFAULT "/run/gpu-hook/driver-state.json"
#define GH_STATECACHE_MAX_SIZE (1024 * 1024)
#define GH_STATECACHE_NLIBS 2 /* libnvidia-ml.so.1, libcuda.so.1 */

struct gh_statecache_fp {
        char *text;                          /* "key value\n" lines */
        char *libs[GH_STATECACHE_NLIBS];     /* in-root paths the ld.so.cache gave; "" when absent */
        char driver_version[GH_VERSION_MAX]; /* NVRM version read on the way */
        char **busids;                       /* normalised names of proc/driver/nvidia/gpus/ */
        size_t nbusids;
};

void gh_statecache_fp_free(struct gh_statecache_fp *fp);
#define _cleanup_statecache_fp_ __attribute__((cleanup(gh_statecache_fp_free)))

/* Computes the fingerprint of the driver under rootfd.  libs NULL: looks the libraries up in the
 * root's /etc/ld.so.cache (the one the NVML service's dlopen uses); else uses these paths. */
int gh_statecache_fingerprint(int rootfd, char *const *libs, struct gh_statecache_fp *fp, gh_error_t *err);

/* A parsed cache file. */
struct gh_statecache_entry {
        char *fingerprint;
        char *libs[GH_STATECACHE_NLIBS];
        struct gh_gpu_list list;
};

void gh_statecache_entry_free(struct gh_statecache_entry *e);
#define _cleanup_statecache_entry_ __attribute__((cleanup(gh_statecache_entry_free)))

/* Parses a cache file's bytes (untrusted: fuzzed).  Every field is checked: a string too long or
 * with control characters, a number out of range, an unknown key, GPUs not in strictly ascending
 * bus-id order or sharing a minor are errors.  GPU indices are assigned in order. */
int gh_statecache_parse(const char *buf, size_t len, struct gh_statecache_entry *e, gh_error_t *err);

/* Serialises (the inverse of gh_statecache_parse). */
char *gh_statecache_format(const struct gh_statecache_fp *fp, const struct gh_gpu_list *list);

/* Reads the file at path: only a regular file owned by root, not writable by group or other, not a
 * symlink, at most GH_STATECACHE_MAX_SIZE bytes.  An error says why it was not taken. */
int gh_statecache_read(const char *path, struct gh_statecache_entry *e, gh_error_t *err);

/* Looks for a cache entry that still holds for the driver under rootfd.  Returns 1 and fills list
 * on a hit; 0 on a miss (why, when not NULL, gets a short reason: "missing", "stale: gpus", ...). */
int gh_statecache_lookup(int rootfd, const char *path, struct gh_gpu_list *list, char *why, size_t size);

/* Writes list with fingerprint fp to path atomically (a temp file in the same directory, then
 * rename).  The directory is created (0755) when missing; it must be owned by root and not writable
 * by group or other. */
int gh_statecache_save(const char *path, const struct gh_statecache_fp *fp, const struct gh_gpu_list *list,
                       gh_error_t *err);

/* Removes the file (and temp files a killed writer left).  Missing is not an error. */
int gh_statecache_clear(const char *path, gh_error_t *err);

#endif
