/* What the fake libnvidia-ml's two files (nvml.c: devices; nvml-usage.c: usage and processes) share. */
#pragma once

#include <sys/types.h>

#include "nvml-api.h"

struct fake_nvml_device {
        struct fake_nvml_device *parent; /* non-NULL for a MIG device */
        unsigned int index, minor;
        dev_t rdev; /* of dev/nvidia<minor> in the root */
        char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
        char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
        unsigned int domain, bus, dev, fn;
        unsigned int pci_device_id, pci_subsystem_id;
        nvmlBrandType_t brand;
        int cc_major, cc_minor;
        int mig_mode; /* -1 unsupported, 0 disabled, 1 enabled */
        unsigned int gi, ci;
        char profile[32];
        unsigned int n_mig;
        struct fake_nvml_device *mig;
        /* usage (fake-nvml keys; see README.md) */
        unsigned long long memory_total_mib, process_memory_mib;
        unsigned int process_sm_util, temperature, power_mw, compute_mode;
        unsigned int memory_util, sm_clock_mhz, mem_clock_mhz;
};

const char *fake_root(void);
void root_path(char *buf, size_t size, const char *rel);
int fake_initialised(void);
void fake_usage_defaults(struct fake_nvml_device *gpu);
void fake_usage_key(struct fake_nvml_device *gpu, const char *key, const char *value);

#define CHECK_INIT()                                                                                                   \
        do {                                                                                                           \
                if (!fake_initialised())                                                                               \
                        return NVML_ERROR_UNINITIALIZED;                                                               \
        } while (0)
#define CHECK_ARGS(dev, out)                                                                                           \
        do {                                                                                                           \
                CHECK_INIT();                                                                                          \
                if (!(dev) || !(out))                                                                                  \
                        return NVML_ERROR_INVALID_ARGUMENT;                                                            \
        } while (0)
