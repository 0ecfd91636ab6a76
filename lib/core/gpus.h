/* GPU enumeration: which GPUs (and MIG devices) the driver under a driver root has.
 *
 * Two sources.  The fast path reads proc/driver/nvidia/{version,gpus/<bus id>/information} under
 * the root and needs no NVML: it knows index, minor, UUID, bus id, model and the driver version.
 * The NVML service (service.h) runs libnvidia-ml in an unprivileged chrooted child and adds the
 * CUDA version, brand, architecture and MIG devices.  Either way GPUs are ordered by bus id and the
 * position in that order is the index users write in NVIDIA_VISIBLE_DEVICES. */
#ifndef GH_GPUS_H
#define GH_GPUS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"
#include "gpumodel.h"

/* Fills *list from the driver root (an O_PATH|O_DIRECTORY fd, see gh_rootfs_open).  On failure
 * *list is left empty.  Free the result with gh_gpu_list_free(). */
int gh_gpus_load(int rootfd, const struct gh_gpus_opts *opts, struct gh_gpu_list *list, gh_error_t *err);

/* The fast path alone. */
int gh_gpus_fast(int rootfd, struct gh_gpu_list *list, gh_error_t *err);

/* Reads proc/driver/nvidia/version under the root: the NVRM version ("580.95.05"). */
int gh_gpus_driver_version(int rootfd, char *buf, size_t size, gh_error_t *err);

/* Parses one gpus/<bus id>/information file (text, len bytes, need not be NUL-terminated) into
 * gpu's minor, uuid, busid and model.  Fields may be separated by tabs or spaces in any amount;
 * unknown lines are ignored.  `what` names the file in errors.  A missing Device Minor or GPU UUID
 * is an error. */
int gh_gpus_parse_information(const char *text, size_t len, const char *what, struct gh_gpu *gpu, gh_error_t *err);

/* The driver-state cache's answer alone (opts->state_file and opts->cache, both set): 1 and *list
 * filled on a hit, 0 on a miss (why in the debug log).  For a process that cannot ask NVML. */
int gh_gpus_load_cached(int rootfd, const struct gh_gpus_opts *opts, struct gh_gpu_list *list);

/* Fills the MIG devices' cap minors from proc/driver/nvidia/capabilities under the root. */
int gh_gpus_read_mig_caps(int rootfd, struct gh_gpu_list *list, gh_error_t *err);

#endif
