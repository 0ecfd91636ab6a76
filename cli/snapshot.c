/* The snapshot behind gpu-cli ps, top and metrics. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "mps.h"
#include "container.h"
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
        if (g->user != NULL && gh_service_parse_user(g->user, &gopts.uid, &gopts.gid, &err) < 0) {
                fprintf(stderr, "gpu-cli: %s\n", err->msg);
                return GH_EXIT_USAGE;
        }
        rootfd = gh_rootfs_open(g->root, &err);
        if (rootfd < 0) {
                fprintf(stderr, "gpu-cli: %s: %s; check --root\n", cmd, err->msg);
                return GH_EXIT_NO_DRIVER;
        }
        if (gh_gpus_driver_version(rootfd, version, sizeof(version), &err) < 0) {
                fprintf(stderr, "gpu-cli: %s: %s\n", cmd, err->msg);
                return err->code == ENOENT || err->code == ENOTDIR ? GH_EXIT_NO_DRIVER : gh_error_exit_status(err);
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

struct cli_container_sum *cli_container_sums(const struct gh_gpu_list *list, bool hosts, size_t *nout)
{
        struct cli_container_sum *out;
        size_t max = 0, n = 0;

        *nout = 0;
        for (size_t g = 0; g < list->n; g++)
                max += list->gpus[g].usage ? list->gpus[g].usage->nprocs : 0;
        if (max == 0 || (out = calloc(max, sizeof(*out))) == NULL)
                return NULL;
        for (size_t g = 0; g < list->n; g++) {
                const struct gh_gpu_usage *u = list->gpus[g].usage;
                for (size_t i = 0; u && i < u->nprocs; i++) {
                        const struct gh_gpu_proc *p = &u->procs[i];
                        struct cli_container_sum *s = NULL;
                        if (!p->owner.in_container && !hosts)
                                continue;
                        for (size_t k = 0; k < n && s == NULL; k++)
                                if (out[k].gpu == &list->gpus[g] &&
                                    out[k].owner->in_container == p->owner.in_container &&
                                    strcmp(out[k].owner->id, p->owner.id) == 0 &&
                                    strcmp(out[k].owner->runtime, p->owner.runtime) == 0)
                                        s = &out[k];
                        if (s == NULL) {
                                s = &out[n++];
                                *s = (struct cli_container_sum) { .gpu = &list->gpus[g],
                                                                  .owner = &p->owner,
                                                                  .util = -1 };
                        }
                        s->procs++;
                        if (p->used_memory != GH_UNKNOWN_U64) {
                                s->memory += p->used_memory;
                                s->memory_known = true;
                        }
                        if (p->sm_util >= 0)
                                s->util = s->util < 0                  ? p->sm_util
                                          : s->util + p->sm_util > 100 ? 100
                                                                       : s->util + p->sm_util;
                }
        }
        *nout = n;
        return out;
}

void cli_unowned_of(const struct gh_gpu *gpu, struct cli_unowned *u)
{
        *u = (struct cli_unowned) { .known = gpu->usage != NULL };
        for (size_t i = 0; gpu->usage && i < gpu->usage->nprocs; i++) {
                const struct gh_gpu_proc *p = &gpu->usage->procs[i];
                uint64_t m = p->used_memory == GH_UNKNOWN_U64 ? 0 : p->used_memory;
                if (!gh_owner_unowned(p->owner.kind))
                        continue;
                u->procs++;
                if (p->used_memory == GH_UNKNOWN_U64)
                        u->known = false;
                if (p->owner.kind == GH_OWNER_CONTAINER_GONE)
                        u->container_gone += m;
                else if (p->owner.kind == GH_OWNER_MPS_STOPPED)
                        u->mps_stopped += m;
                else
                        u->host += m;
        }
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
