/* What gpu-cli ps, top and metrics share: their common options and one snapshot of the GPUs'
 * usage with every process attributed to its container. */
#ifndef GH_CLI_SNAPSHOT_H
#define GH_CLI_SNAPSHOT_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

#include "attribute.h"
#include "cli.h"
#include "config.h"
#include "gpus.h"
#include "hookconfig.h"
#include "usage.h"

#define CLI_MAX_STATE_DIRS 16

struct cli_usage_opts {
        const char *state_dirs[CLI_MAX_STATE_DIRS + 1]; /* NULL-terminated */
        size_t nstate;
        int timeout_ms;
        const char *config;   /* --config: gpu-hook's configuration; NULL: the compiled default */
        const char *mps_dir;  /* --mps-dir; NULL: the configuration's mps.dir */
        struct gh_config cfg; /* loaded by cli_usage_config (containers.dir, mps.dir, metrics.*) */
        bool have_cfg;
};

/* The long options every usage command takes ('S' --state-dir, 'T' --timeout, 'f' --config,
 * 'M' --mps-dir). */
#define CLI_USAGE_OPTIONS                                                                                              \
        { "state-dir", required_argument, NULL, 'S' }, { "timeout", required_argument, NULL, 'T' },                    \
                { "config", required_argument, NULL, 'f' },                                                            \
        {                                                                                                              \
                "mps-dir", required_argument, NULL, 'M'                                                                \
        }
#define CLI_USAGE_HELP                                                                                                 \
        "  --state-dir=DIR   also look for container ids in this runtime state directory (runc --root);\n"             \
        "                    /run/runc, /run/crun, Docker's and containerd's are searched anyway\n"                    \
        "  --timeout=SECONDS how long to wait for each NVML answer (default 5)\n"                                      \
        "  --config=FILE     gpu-hook's configuration: where container records (containers.dir) and MPS\n"             \
        "                    groups (mps.dir) are, the metrics.* keys (default " GPUHOOK_DEFAULT_CONFIG ")\n"          \
        "  --mps-dir=DIR     where MPS groups live (default: the configuration's mps.dir)\n"

/* Handles 'S', 'T', 'f' and 'M'; returns 0, or GH_EXIT_USAGE after a message. */
int cli_usage_option(int c, const char *arg, struct cli_usage_opts *o, const char *cmd);

/* Loads the configuration once (done by cli_usage_load too); returns GH_EXIT_OK or an exit status
 * after a message. */
int cli_usage_config(struct cli_usage_opts *o, const char *cmd);

/* How processes are attributed: the state directories, records and MPS groups of o. */
void cli_attribution(const struct cli_usage_opts *o, struct gh_attribution *a);

void cli_usage_opts_free(struct cli_usage_opts *o);
#define _cleanup_usage_opts_ __attribute__((cleanup(cli_usage_opts_free)))

/* Loads the snapshot; returns GH_EXIT_OK or an exit status after a message. */
int cli_usage_load(const struct cli_globals *g, struct cli_usage_opts *o, const char *cmd, struct gh_gpu_list *list);

/* Every process of every GPU, flattened. */
struct cli_proc_row {
        const struct gh_gpu *gpu;
        const struct gh_gpu_proc *proc;
};
enum cli_sort { CLI_SORT_GPU, CLI_SORT_MEMORY, CLI_SORT_UTIL };
/* Returns a malloc'ed array (n rows) sorted as asked, or NULL with *n = 0 when there is none. */
struct cli_proc_row *cli_proc_rows(const struct gh_gpu_list *list, enum cli_sort sort, size_t *n);

/* "ns/pod", "pod", or "-" when the owner's pod is unknown. */
void cli_pod_name(const struct gh_proc_owner *o, char *buf, size_t size);

/* ---- text (usage-print.c) ---- */

/* "C", "G" or "C+G". */
const char *cli_proc_type(const struct gh_gpu_proc *p);
/* "40", "-" when unknown (-1). */
void cli_percent(int v, char *buf, size_t size);
/* The width of the POD column: the longest pod's name, at least 3, at most 24 (64 with no_trunc). */
int cli_pod_width(const struct gh_gpu_list *list, bool no_trunc);
/* The process table; width > 0 cuts every line to that many columns (a terminal). */
void cli_print_procs(const struct gh_gpu_list *list, enum cli_sort sort, bool no_trunc, int width, FILE *out);
/* The processes whose memory no running container owns, a heading first; prints nothing when
 * there is none.  Returns the number of processes. */
int cli_print_unowned(const struct gh_gpu_list *list, bool no_trunc, int width, FILE *out);

/* "1024MiB", "-" when unknown. */
void cli_format_mib(uint64_t bytes, char *buf, size_t size);

#endif
