/* The snapshot behind gpu-cli ps, top and metrics. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "container.h"
#include "discover.h"
#include "mps.h"
#include "rootfs.h"
#include "service.h"
#include "snapshot.h"

int cli_usage_option(int c, const char *arg, struct cli_usage_opts *o, const char *cmd)
{
        if (c == 'f') {
                o->config = arg;
                return 0;
        }
        if (c == 'M') {
                if (arg[0] != '/') {
                        fprintf(stderr, "gpu-cli: %s: --mps-dir '%s' must be an absolute path\n", cmd, arg);
                        return GH_EXIT_USAGE;
                }
                o->mps_dir = arg;
                return 0;
        }
        if (c == 'S') {
                if (arg[0] != '/') {
                        fprintf(stderr, "gpu-cli: %s: --state-dir '%s' must be an absolute path\n", cmd, arg);
                        return GH_EXIT_USAGE;
                }
                if (o->nstate >= CLI_MAX_STATE_DIRS) {
                        fprintf(stderr, "gpu-cli: %s: at most %d --state-dir options\n", cmd, CLI_MAX_STATE_DIRS);
                        return GH_EXIT_USAGE;
                }
                o->state_dirs[o->nstate++] = arg;
                o->state_dirs[o->nstate] = NULL;
                return 0;
        }
        char *end;
        long s = strtol(arg, &end, 10);
        if (*arg == '\0' || *end != '\0' || s < 1 || s > 3600) {
                fprintf(stderr, "gpu-cli: %s: --timeout '%s' must be 1..3600 seconds\n", cmd, arg);
                return GH_EXIT_USAGE;
        }
        o->timeout_ms = (int) s * 1000;
        return 0;
}

int cli_usage_config(struct cli_usage_opts *o, const char *cmd)
{
        _cleanup_error_ gh_error_t err = NULL;

        if (o->have_cfg)
                return GH_EXIT_OK;
        if (gh_config_load(&o->cfg, o->config ? o->config : GPUHOOK_DEFAULT_CONFIG, &err) < 0) {
                fprintf(stderr, "gpu-cli: %s: %s; fix it or pass --config\n", cmd, err->msg);
                return GH_EXIT_USAGE;
        }
        o->have_cfg = true;
        return GH_EXIT_OK;
}

void cli_attribution(const struct cli_usage_opts *o, struct gh_attribution *a)
{
        *a = (struct gh_attribution) {
                .state_roots = o->state_dirs,
                .records_dir = o->have_cfg ? o->cfg.containers.dir : NULL,
                .mps_dir = o->mps_dir    ? o->mps_dir
                           : o->have_cfg ? o->cfg.mps.dir
                                         : GH_MPS_DEFAULT_DIR,
                /* only root may remove records; anyone else only reads what it may */
                .collect = geteuid() == 0,
        };
}

void cli_usage_opts_free(struct cli_usage_opts *o)
{
        if (o->have_cfg)
                gh_config_free(&o->cfg);
        o->have_cfg = false;
}

int cli_usage_load(const struct cli_globals *g, struct cli_usage_opts *o, const char *cmd, struct gh_gpu_list *list)
{
        struct gh_attribution a;
        int r;
        struct gh_gpus_opts gopts = GH_GPUS_OPTS_DEFAULT;
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_close_ int rootfd = -1;
        char version[GH_VERSION_MAX];

        if ((r = cli_usage_config(o, cmd)) != GH_EXIT_OK)
                return r;
        gopts.with_usage = true;
        gopts.timeout_ms = o->timeout_ms;
        gopts.uid = g->uid;
        gopts.gid = g->gid;
        rootfd = gh_driver_root_open(g->root, &err);
        if (rootfd < 0) {
                fprintf(stderr, "gpu-cli: %s: %s; check --root\n", cmd, err->msg);
                return gh_error_exit_status(err);
        }
        if (gh_gpus_driver_version(rootfd, version, sizeof(version), &err) < 0) {
                fprintf(stderr, "gpu-cli: %s: %s\n", cmd, err->msg);
                return gh_error_exit_status(err);
        }
        if (gh_gpus_load(rootfd, &gopts, list, &err) < 0) {
                fprintf(stderr, "gpu-cli: %s: %s; check the driver with 'gpu-cli doctor'\n", cmd, err->msg);
                return GH_EXIT_FAILURE;
        }
        cli_attribution(o, &a);
        gh_usage_attribute(list, &a);
        return GH_EXIT_OK;
}

static enum cli_sort sort_key;

static int cmp_rows(const void *pa, const void *pb)
{
        const struct cli_proc_row *a = pa, *b = pb;

        if (sort_key == CLI_SORT_MEMORY && a->proc->used_memory != b->proc->used_memory) {
                /* unknown sorts last */
                uint64_t x = a->proc->used_memory == GH_UNKNOWN_U64 ? 0 : a->proc->used_memory + 1;
                uint64_t y = b->proc->used_memory == GH_UNKNOWN_U64 ? 0 : b->proc->used_memory + 1;
                if (x != y)
                        return x > y ? -1 : 1;
        }
        if (sort_key == CLI_SORT_UTIL && a->proc->sm_util != b->proc->sm_util)
                return a->proc->sm_util > b->proc->sm_util ? -1 : 1;
        if (a->gpu->index != b->gpu->index)
                return a->gpu->index < b->gpu->index ? -1 : 1;
        return a->proc->pid < b->proc->pid ? -1 : a->proc->pid > b->proc->pid;
}

struct cli_proc_row *cli_proc_rows(const struct gh_gpu_list *list, enum cli_sort sort, size_t *n)
{
        struct cli_proc_row *rows;
        size_t total = 0;

        *n = 0;
        for (size_t g = 0; g < list->n; g++)
                total += list->gpus[g].usage ? list->gpus[g].usage->nprocs : 0;
        if (total == 0 || (rows = calloc(total, sizeof(*rows))) == NULL)
                return NULL;
        for (size_t g = 0; g < list->n; g++)
                for (size_t i = 0; list->gpus[g].usage && i < list->gpus[g].usage->nprocs; i++)
                        rows[(*n)++] = (struct cli_proc_row) { &list->gpus[g], &list->gpus[g].usage->procs[i] };
        sort_key = sort;
        qsort(rows, *n, sizeof(*rows), cmp_rows);
        return rows;
}

void cli_format_mib(uint64_t bytes, char *buf, size_t size)
{
        if (bytes == GH_UNKNOWN_U64)
                snprintf(buf, size, "-");
        else
                snprintf(buf, size, "%" PRIu64 "MiB", bytes >> 20);
}

void cli_pod_name(const struct gh_proc_owner *o, char *buf, size_t size)
{
        if (!o->in_container || o->pod.name[0] == '\0')
                snprintf(buf, size, "-");
        else if (o->pod.namespace_[0] == '\0')
                snprintf(buf, size, "%s", o->pod.name);
        else
                snprintf(buf, size, "%s/%s", o->pod.namespace_, o->pod.name);
}
