/* The text tables gpu-cli ps and top share: processes, and the memory no running container owns. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "snapshot.h"

const char *cli_proc_type(const struct gh_gpu_proc *p)
{
        return p->compute && p->graphics ? "C+G" : p->graphics ? "G" : "C";
}

void cli_percent(int v, char *buf, size_t size)
{
        if (v < 0)
                snprintf(buf, size, "-");
        else
                snprintf(buf, size, "%d", v);
}

void cli_print_procs(const struct gh_gpu_list *list, enum cli_sort sort, bool no_trunc, int width, FILE *out)
{
        _cleanup_free_ struct cli_proc_row *rows = NULL;
        int idw = no_trunc ? 64 : 12, podw;
        size_t n;
        char line[1024];

        rows = cli_proc_rows(list, sort, &n);
        podw = cli_pod_width(list, no_trunc);
        snprintf(line, sizeof(line), "%-3s %8s  %-8s %-*s %8s %-4s %9s %4s %4s  %-*s %s", "GPU", "PID", "RUNTIME", idw,
                 "CONTAINER", "CPID", "TYPE", "MEMORY", "SM%", "MEM%", podw, "POD", "COMMAND");
        fprintf(out, "%.*s\n", width > 0 ? width : (int) sizeof(line), line);
        for (size_t i = 0; i < n; i++) {
                const struct gh_gpu_proc *p = rows[i].proc;
                char mem[32], sm[8], mu[8], cpid[16], pod[2 * GH_POD_FIELD_MAX];
                bool c = p->owner.in_container;

                cli_format_mib(p->used_memory, mem, sizeof(mem));
                cli_percent(p->sm_util, sm, sizeof(sm));
                cli_percent(p->mem_util, mu, sizeof(mu));
                cli_pod_name(&p->owner, pod, sizeof(pod));
                snprintf(cpid, sizeof(cpid), "%d", (int) p->owner.ns_pid);
                snprintf(line, sizeof(line), "%-3u %8d  %-8s %-*.*s %8s %-4s %9s %4s %4s  %-*.*s %s",
                         rows[i].gpu->index, (int) p->pid, c ? p->owner.runtime : "host", idw, idw,
                         c ? p->owner.id : "-", c ? cpid : "-", cli_proc_type(p), mem, sm, mu, podw, podw, pod,
                         p->owner.comm);
                fprintf(out, "%.*s\n", width > 0 ? width : (int) sizeof(line), line);
        }
        if (n == 0)
                fprintf(out, "No process uses a GPU.\n");
}

int cli_pod_width(const struct gh_gpu_list *list, bool no_trunc)
{
        int w = 3, max = no_trunc ? 64 : 24;
        char pod[2 * GH_POD_FIELD_MAX];

        for (size_t g = 0; g < list->n; g++)
                for (size_t i = 0; list->gpus[g].usage && i < list->gpus[g].usage->nprocs; i++) {
                        cli_pod_name(&list->gpus[g].usage->procs[i].owner, pod, sizeof(pod));
                        if ((int) strlen(pod) > w)
                                w = (int) strlen(pod) < max ? (int) strlen(pod) : max;
                }
        return w;
}

/* What holds the memory, in words. */
static void owner_words(const struct gh_proc_owner *o, bool no_trunc, char *buf, size_t size)
{
        switch (o->kind) {
        case GH_OWNER_CONTAINER_GONE:
                snprintf(buf, size, "left over by %s container %.*s, whose init is gone", o->runtime,
                         no_trunc ? 64 : 12, o->id);
                break;
        case GH_OWNER_MPS_STOPPED:
                snprintf(buf, size, "MPS server of group %s, whose control daemon is gone", o->mps_group);
                break;
        case GH_OWNER_HOST:
        case GH_OWNER_CONTAINER:
        case GH_OWNER_MPS_SERVER:
        default: snprintf(buf, size, "host process (in no container)"); break;
        }
}

int cli_print_unowned(const struct gh_gpu_list *list, bool no_trunc, int width, FILE *out)
{
        char line[1024], mem[32], words[256];
        int printed = 0;

        for (size_t g = 0; g < list->n; g++) {
                const struct gh_gpu_usage *u = list->gpus[g].usage;
                for (size_t i = 0; u && i < u->nprocs; i++) {
                        const struct gh_gpu_proc *p = &u->procs[i];
                        if (!gh_owner_unowned(p->owner.kind))
                                continue;
                        if (printed++ == 0) {
                                fprintf(out, "\nGPU memory no running container owns:\n");
                                snprintf(line, sizeof(line), "%-3s %8s %9s  %-16s %s", "GPU", "PID", "MEMORY",
                                         "COMMAND", "HELD BY");
                                fprintf(out, "%.*s\n", width > 0 ? width : (int) sizeof(line), line);
                        }
                        cli_format_mib(p->used_memory, mem, sizeof(mem));
                        owner_words(&p->owner, no_trunc, words, sizeof(words));
                        snprintf(line, sizeof(line), "%-3u %8d %9s  %-16s %s", list->gpus[g].index, (int) p->pid, mem,
                                 p->owner.comm, words);
                        fprintf(out, "%.*s\n", width > 0 ? width : (int) sizeof(line), line);
                }
        }
        return printed;
}
