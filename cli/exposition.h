/* gpu-cli metrics' text: the Prometheus exposition format, with gpu-hook's own names, with the names
 * and labels of NVIDIA's dcgm-exporter, or both (docs/metrics.md). */
#ifndef GH_CLI_EXPOSITION_H
#define GH_CLI_EXPOSITION_H

#include <stdio.h>

#include "gpus.h"

struct cli_exposition {
        int names;            /* GH_METRICS_BOTH, _DCGM or _GPUHOOK (hookconfig.h) */
        const char *hostname; /* dcgm-exporter's Hostname label */
};

/* The whole exposition of one snapshot (its processes attributed) into f.  Series the driver
 * does not report are left out. */
void cli_write_metrics(const struct gh_gpu_list *list, const struct cli_exposition *o, FILE *f);

/* dcgm-exporter's pci_bus_id, NVML's form of a bus id: "00000000:00:06.0" for "0000:00:06.0". */
void cli_nvml_busid(const char *busid, char *buf, size_t size);

#endif
