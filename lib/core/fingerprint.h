/* The driver-state fingerprint: what the driver-state cache (front/statecache.h) is keyed by.  The
 * cache keeps NVML's answers (gpus.h) in a root-owned file under /run and reuses them while this
 * fingerprint is unchanged; docs/statecache.md says what it covers and why.
 *
 * The fingerprint is text, one "key value" line per input: the cache's format and writer version,
 * the boot id, the driver root's identity, /proc/driver/nvidia/version, the identity (dev, inode,
 * size, mtime) of the driver root's ld.so.cache and of the real files behind libnvidia-ml.so.1 and
 * libcuda.so.1, the /proc/driver/nvidia/gpus entries and the tree under
 * /proc/driver/nvidia/capabilities (names and inode numbers).  It is computed BEFORE asking NVML,
 * so a change during the query leaves a cache that no longer matches.  It needs only libc, so the
 * core computes it (gpus.c also uses it to find the driver's own libcuda). */
#ifndef GH_FINGERPRINT_H
#define GH_FINGERPRINT_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "gpumodel.h"

#define GH_STATECACHE_FORMAT 1 /* the cache file's format; part of the fingerprint */
#define GH_DRIVER_FP_NLIBS 2   /* libnvidia-ml.so.1, libcuda.so.1 */
#define GH_STATECACHE_MAX_GPUS 1024

struct gh_driver_fp {
        char *text;                          /* "key value\n" lines */
        char *libs[GH_DRIVER_FP_NLIBS];      /* in-root paths the ld.so.cache gave; "" when absent */
        char driver_version[GH_VERSION_MAX]; /* NVRM version read on the way */
        char **busids;                       /* normalised names of proc/driver/nvidia/gpus/ */
        size_t nbusids;
};

void gh_driver_fp_free(struct gh_driver_fp *fp);
#define _cleanup_driver_fp_ __attribute__((cleanup(gh_driver_fp_free)))

/* Computes the fingerprint of the driver under rootfd.  libs NULL: looks the libraries up in the
 * root's /etc/ld.so.cache (the one the NVML service's dlopen uses); else uses these paths. */
int gh_driver_fingerprint(int rootfd, char *const *libs, struct gh_driver_fp *fp, gh_error_t *err);

/* The library paths a fingerprint text names (its "lib" lines; "" for one it found absent), each
 * malloc'ed into libs, for taking the fingerprint again without looking them up in the
 * ld.so.cache: 0, or -1 (libs all NULL) when the text has not both lines.  A path read wrong only
 * makes the new text differ, never match. */
int gh_driver_fp_libs_of(const char *text, char **libs);

#endif
