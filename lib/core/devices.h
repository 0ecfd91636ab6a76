/* Device nodes a container gets (docs/architecture.md#what-a-container-gets), looked up under the driver root's /dev.
 *
 *   /dev/nvidiactl                       always (required)
 *   /dev/nvidia-uvm, /dev/nvidia-uvm-tools  with compute
 *   /dev/nvidia-modeset                  with display
 *   /dev/nvidiaN                         per selected GPU minor (required)
 *   /dev/nvidia-caps/nvidia-capN         per selected MIG device (GPU instance and compute instance
 *                                        access), MIG config and monitor; N is the DeviceFileMinor
 *                                        of proc/driver/nvidia/capabilities/...
 *   /dev/nvidia-caps-imex-channels/channelN  per requested IMEX channel
 *
 * Each node is resolved in the root, stat'ed, and must be a character device (with the expected
 * major:minor where it is fixed).  A missing optional node is skipped with a debug line. */
#ifndef GH_DEVICES_H
#define GH_DEVICES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"

#define GH_NVIDIA_MAJOR 195
#define GH_NVIDIACTL_MINOR 255
#define GH_NVIDIA_MODESET_MINOR 254

/* A MIG device, by its parent's minor and its GPU/compute instance ids. */
struct gh_devices_mig {
        unsigned gpu_minor;
        unsigned gi, ci;
};

struct gh_devices_request {
        unsigned caps; /* GH_CAP_*; implications applied here */
        const unsigned *minors;
        size_t nminors;
        const struct gh_devices_mig *migs;
        size_t nmigs;
        bool mig_config, mig_monitor;
        const unsigned *imex_channels;
        size_t nimex;
};

struct gh_device_node {
        char *path; /* inside the driver root, e.g. "/dev/nvidia0" */
        dev_t rdev;
};

struct gh_device_list {
        struct gh_device_node *v;
        size_t n, cap;
};

int gh_devices_collect(int rootfd, const struct gh_devices_request *req, struct gh_device_list *out, gh_error_t *err);
void gh_device_list_free(struct gh_device_list *list);

/* Reads `DeviceFileMinor: N` from a proc/driver/nvidia/capabilities/.../access file in the root. */
int gh_devices_cap_minor(int rootfd, const char *path, unsigned *minor, gh_error_t *err);

#endif
