/* What gpu-cli ps, top and metrics share: their common options and one snapshot of the GPUs'
 * usage with every process attributed to its container. */
#ifndef GH_CLI_SNAPSHOT_H
#define GH_CLI_SNAPSHOT_H

#include <getopt.h>
#include <stdint.h>

#include "cli.h"
#include "gpus.h"
#include "usage.h"

#define CLI_MAX_STATE_DIRS 16

struct cli_usage_opts {
        const char *state_dirs[CLI_MAX_STATE_DIRS + 1]; /* NULL-terminated */
        size_t nstate;
        int timeout_ms;
};

/* The long options every usage command takes ('S' --state-dir, 'T' --timeout). */
#define CLI_USAGE_OPTIONS                                                                                              \
        { "state-dir", required_argument, NULL, 'S' }, { "timeout", required_argument, NULL, 'T' }
#define CLI_USAGE_HELP                                                                                                 \
        "  --state-dir=DIR   also look for container ids in this runtime state directory (runc --root);\n"             \
        "                    /run/runc, /run/crun, Docker's and containerd's are searched anyway\n"                    \
        "  --timeout=SECONDS how long to wait for each NVML answer (default 5)\n"

/* Handles 'S' and 'T'; returns 0, or GH_EXIT_USAGE after a message. */
int cli_usage_option(int c, const char *arg, struct cli_usage_opts *o, const char *cmd);

/* Loads the snapshot; returns GH_EXIT_OK or an exit status after a message. */
int cli_usage_load(const struct cli_globals *g, const struct cli_usage_opts *o, const char *cmd,
                   struct gh_gpu_list *list);

/* Every process of every GPU, flattened. */
struct cli_proc_row {
        const struct gh_gpu *gpu;
        const struct gh_gpu_proc *proc;
};
enum cli_sort { CLI_SORT_GPU, CLI_SORT_MEMORY, CLI_SORT_UTIL };
/* Returns a malloc'ed array (n rows) sorted as asked, or NULL with *n = 0 when there is none. */
struct cli_proc_row *cli_proc_rows(const struct gh_gpu_list *list, enum cli_sort sort, size_t *n);

/* "1024MiB", "-" when unknown. */
void cli_format_mib(uint64_t bytes, char *buf, size_t size);

#endif
