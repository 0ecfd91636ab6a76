/* The snapshot behind gpu-cli ps, top and metrics. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "container.h"
#include "rootfs.h"
#include "service.h"
#include "snapshot.h"

int cli_usage_option(int c, const char *arg, struct cli_usage_opts *o, const char *cmd)
{
        if (c == 'S') {
                if (arg[0] != '/') {
                        fprintf(stderr, "gpu-cli: %s: --state-dir '%s' must be an absolute path\n", cmd, arg);
                        return CLI_EXIT_USAGE;
                }
                if (o->nstate >= CLI_MAX_STATE_DIRS) {
                        fprintf(stderr, "gpu-cli: %s: at most %d --state-dir options\n", cmd, CLI_MAX_STATE_DIRS);
                        return CLI_EXIT_USAGE;
                }
                o->state_dirs[o->nstate++] = arg;
                o->state_dirs[o->nstate] = NULL;
                return 0;
        }
        char *end;
        long s = strtol(arg, &end, 10);
        if (*arg == '\0' || *end != '\0' || s < 1 || s > 3600) {
                fprintf(stderr, "gpu-cli: %s: --timeout '%s' must be 1..3600 seconds\n", cmd, arg);
                return CLI_EXIT_USAGE;
        }
        o->timeout_ms = (int) s * 1000;
        return 0;
}

int cli_usage_load(const struct cli_globals *g, const struct cli_usage_opts *o, const char *cmd,
                   struct gh_gpu_list *list)
{
        struct gh_gpus_opts gopts = GH_GPUS_OPTS_DEFAULT;
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_close_ int rootfd = -1;
        char version[GH_VERSION_MAX];

        gopts.with_usage = true;
        gopts.timeout_ms = o->timeout_ms;
        if (g->user != NULL && gh_service_parse_user(g->user, &gopts.uid, &gopts.gid, &err) < 0) {
                fprintf(stderr, "gpu-cli: %s\n", err->msg);
                return CLI_EXIT_USAGE;
        }
        rootfd = gh_rootfs_open(g->root, &err);
        if (rootfd < 0) {
                fprintf(stderr, "gpu-cli: %s: %s; check --root\n", cmd, err->msg);
                return CLI_EXIT_NO_DRIVER;
        }
        if (gh_gpus_driver_version(rootfd, version, sizeof(version), &err) < 0) {
                fprintf(stderr, "gpu-cli: %s: %s\n", cmd, err->msg);
                return err->code == ENOENT || err->code == ENOTDIR ? CLI_EXIT_NO_DRIVER : gh_error_exit_status(err);
        }
        if (gh_gpus_load(rootfd, &gopts, list, &err) < 0) {
                fprintf(stderr, "gpu-cli: %s: %s; check the driver with 'gpu-cli doctor'\n", cmd, err->msg);
                return CLI_EXIT_FAILURE;
        }
        gh_usage_attribute(list, o->state_dirs);
        return CLI_EXIT_OK;
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
