/* gpu-cli ps: which processes use which GPU, in which container and pod, and the GPU memory that no
 * running container owns. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "attribute.h"
#include "container.h"
#include "discover.h"
#include "json.h"
#include "mps-clients.h"
#include "oci.h"
#include "rootfs.h"
#include "snapshot.h"

static void ps_usage(FILE *out)
{
        fprintf(out,
                "Usage: gpu-cli [GLOBAL OPTIONS] ps [--json] [--no-trunc] [--state-dir=DIR]... [--timeout=SECONDS]\n"
                "                                   [--config=FILE] [--mps-dir=DIR]\n"
                "\n"
                "Lists the processes using each GPU (NVML's compute and graphics processes), the container\n"
                "each belongs to (runtime and id from its cgroup, its PID inside the container from NSpid)\n"
                "and the container's pod when a CRI runtime named it (gpu-hook's record of the container, or\n"
                "its bundle's annotations).  Then the GPU memory no running container owns: host processes,\n"
                "processes left over by a container whose init is gone, MPS servers of a stopped group.\n"
                "\n"
                "  --json            one JSON object, schema below\n"
                "  --no-trunc        show container ids and pods in full (default: 12 and 24 characters)\n" CLI_USAGE_HELP
                "\n"
                "Columns: GPU index, host PID, container runtime and id ('-': not in a container), PID in the\n"
                "container, type (C compute, G graphics), GPU memory, SM and memory utilisation (%%, '-'\n"
                "when the driver gives no sample), NAMESPACE/POD ('-': unknown), command name.  Then, when MPS\n"
                "groups exist, each group's clients (as its control daemon lists them).\n"
                "\n"
                "JSON schema (null: the driver, or the container's record, does not say):\n"
                "  { \"driver_version\": string, \"gpus\": [ { \"index\": int, \"uuid\": string, \"model\": string,\n"
                "      \"utilization_gpu\": int|null, \"utilization_memory\": int|null, \"memory_used_bytes\": int|null,\n"
                "      \"memory_total_bytes\": int|null, \"memory_free_bytes\": int|null, \"temperature_c\": int|null,\n"
                "      \"power_mw\": int|null, \"sm_clock_mhz\": int|null, \"mem_clock_mhz\": int|null,\n"
                "      \"unowned\": { \"bytes\": int, \"host_bytes\": int, \"container_gone_bytes\": int,\n"
                "                   \"mps_stopped_bytes\": int, \"processes\": int, \"complete\": bool },\n"
                "      \"processes\": [ { \"pid\": int, \"owner\": \"container\"|\"container-gone\"|\"host\"|\n"
                "                         \"mps-server\"|\"mps-stopped\", \"mps_group\": string|null,\n"
                "                       \"container\": null | CONTAINER, \"container_pid\": int|null,\n"
                "                       \"type\": \"C\"|\"G\"|\"C+G\", \"used_memory_bytes\": int|null, \"sm_util\": int|null,\n"
                "                       \"mem_util\": int|null, \"command\": string } ] } ],\n"
                "    \"mps_groups\": [ { \"name\": string, \"gpu_index\": int, \"gpu_uuid\": string, \"alive\": bool,\n"
                "      \"clients\": [ { \"pid\": int, \"container\": null | CONTAINER, \"container_pid\": int|null,\n"
                "                     \"command\": string } ] } ] }\n"
                "  CONTAINER: { \"runtime\": string, \"id\": string, \"running\": bool|null (null: no state found),\n"
                "               \"pod\": null | { \"name\", \"namespace\", \"container\", \"uid\": string|null } }\n"
                "\n"
                "Exit status: 0 success, 1 failure (NVML failed), 2 usage error, 3 no driver.\n");
}

/* ---- MPS groups: their clients, attributed to containers like GPU processes ---- */

/* Every group with its clients, attributed like GPU processes (lib/ops/mps-clients.c).  Groups
 * that cannot be read are left out; a missing driver control program leaves every client list
 * empty (said on stderr). */
static int mps_load(const struct cli_globals *g, const struct cli_usage_opts *uo, struct gh_mps_usage **out,
                    size_t *nout)
{
        _cleanup_free_ char *control = NULL;
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_close_ int rootfd = -1;
        struct gh_attribution a;

        cli_attribution(uo, &a);
        rootfd = gh_driver_root_open(g->root, &err);
        if (rootfd < 0 || gh_mps_find_control(rootfd, g->root, g->ldcache, &control, &err) < 0) {
                fprintf(stderr, "gpu-cli: ps: MPS clients not listed: %s\n", err->msg);
                gh_error_free(&err);
        }
        if (gh_mps_usage_load(&a, control, out, nout, &err) < 0) {
                fprintf(stderr, "gpu-cli: ps: MPS groups: %s\n", err->msg);
                return err->code == ENOMEM ? -1 : 0;
        }
        return 0;
}

/* null for "" (a pod field the annotations did not give) */
static json_t *text_or_null(const char *s) { return gh_json_string_or_null(s[0] ? s : NULL); }

/* null for a host process, else CONTAINER of the schema */
static json_t *container_json(const struct gh_proc_owner *w)
{
        json_t *c, *pod = json_null();

        if (!w->in_container)
                return json_null();
        c = json_object();
        json_object_set_new(c, "runtime", json_string(w->runtime));
        json_object_set_new(c, "id", json_string(w->id));
        json_object_set_new(c, "running", w->state_known ? json_boolean(w->kind == GH_OWNER_CONTAINER) : json_null());
        if (w->pod.name[0] || w->pod.container[0]) {
                pod = json_object();
                json_object_set_new(pod, "name", text_or_null(w->pod.name));
                json_object_set_new(pod, "namespace", text_or_null(w->pod.namespace_));
                json_object_set_new(pod, "container", text_or_null(w->pod.container));
                json_object_set_new(pod, "uid", text_or_null(w->pod.uid));
        }
        json_object_set_new(c, "pod", pod);
        return c;
}

static json_t *mps_json(const struct gh_mps_usage *rows, size_t n)
{
        json_t *arr = json_array();

        for (size_t i = 0; arr && i < n; i++) {
                const struct gh_mps_group *grp = &rows[i].group;
                json_t *o = json_object(), *clients = json_array();
                json_object_set_new(o, "name", json_string(grp->name));
                json_object_set_new(o, "gpu_index", json_integer(grp->gpu_index));
                json_object_set_new(o, "gpu_uuid", json_string(grp->gpu_uuid));
                json_object_set_new(o, "alive", json_boolean(grp->alive));
                for (size_t k = 0; k < rows[i].n; k++) {
                        const struct gh_proc_owner *w = &rows[i].clients[k].owner;
                        json_t *co = json_object();
                        json_object_set_new(co, "pid", json_integer(rows[i].clients[k].pid));
                        json_object_set_new(co, "container", container_json(w));
                        json_object_set_new(co, "container_pid", gh_json_int_or_null(w->ns_pid, w->in_container));
                        json_object_set_new(co, "command", json_string(w->comm));
                        json_array_append_new(clients, co);
                }
                json_object_set_new(o, "clients", clients);
                json_array_append_new(arr, o);
        }
        return arr;
}

static void mps_table(const struct gh_mps_usage *rows, size_t n, bool no_trunc, FILE *out)
{
        if (n == 0)
                return;
        fprintf(out, "\n%-20s %-3s %8s  %-8s %-*s %8s  %s\n", "MPS GROUP", "GPU", "PID", "RUNTIME", no_trunc ? 64 : 12,
                "CONTAINER", "CPID", "COMMAND");
        for (size_t i = 0; i < n; i++) {
                const struct gh_mps_group *grp = &rows[i].group;
                if (rows[i].n == 0)
                        fprintf(out, "%-20s %-3u %8s  %s\n", grp->name, grp->gpu_index, "-",
                                grp->alive ? "(no clients)" : "(daemon not running)");
                for (size_t k = 0; k < rows[i].n; k++) {
                        const struct gh_proc_owner *w = &rows[i].clients[k].owner;
                        char cpid[16];
                        snprintf(cpid, sizeof(cpid), "%d", (int) w->ns_pid);
                        fprintf(out, "%-20s %-3u %8d  %-8s %-*.*s %8s  %s\n", grp->name, grp->gpu_index,
                                (int) rows[i].clients[k].pid, w->in_container ? w->runtime : "host", no_trunc ? 64 : 12,
                                no_trunc ? 64 : 12, w->in_container ? w->id : "-", w->in_container ? cpid : "-",
                                w->comm);
                }
        }
}

static json_t *unowned_json(const struct gh_gpu *gpu)
{
        struct gh_unowned u;
        json_t *o = json_object();

        gh_usage_unowned(gpu, &u);
        json_object_set_new(o, "bytes", json_integer((json_int_t) (u.host + u.container_gone + u.mps_stopped)));
        json_object_set_new(o, "host_bytes", json_integer((json_int_t) u.host));
        json_object_set_new(o, "container_gone_bytes", json_integer((json_int_t) u.container_gone));
        json_object_set_new(o, "mps_stopped_bytes", json_integer((json_int_t) u.mps_stopped));
        json_object_set_new(o, "processes", json_integer(u.procs));
        json_object_set_new(o, "complete", json_boolean(u.known));
        return o;
}

static int print_json(const struct gh_gpu_list *list, const struct gh_mps_usage *mps, size_t nmps)
{
        _cleanup_json_ json_t *root = json_object();
        json_t *gpus = json_array();

        if (root == NULL || gpus == NULL)
                return -1;
        json_object_set_new(root, "driver_version", json_string(list->driver_version));
        json_object_set_new(root, "gpus", gpus);
        for (size_t g = 0; g < list->n; g++) {
                const struct gh_gpu *gpu = &list->gpus[g];
                const struct gh_gpu_usage *u = gpu->usage;
                json_t *o = json_object(), *procs = json_array();
                json_object_set_new(o, "index", json_integer(gpu->index));
                json_object_set_new(o, "uuid", json_string(gpu->uuid));
                json_object_set_new(o, "model", json_string(gpu->model));
                json_object_set_new(o, "utilization_gpu", gh_json_int_or_null(u->gpu_util, u->gpu_util >= 0));
                json_object_set_new(o, "utilization_memory", gh_json_int_or_null(u->mem_util, u->mem_util >= 0));
                json_object_set_new(o, "memory_used_bytes",
                                    gh_json_int_or_null((long long) u->mem_used, u->mem_used != GH_UNKNOWN_U64));
                json_object_set_new(o, "memory_total_bytes",
                                    gh_json_int_or_null((long long) u->mem_total, u->mem_total != GH_UNKNOWN_U64));
                json_object_set_new(o, "memory_free_bytes",
                                    gh_json_int_or_null((long long) u->mem_free, u->mem_free != GH_UNKNOWN_U64));
                json_object_set_new(o, "temperature_c", gh_json_int_or_null(u->temperature_c, u->temperature_c >= 0));
                json_object_set_new(o, "power_mw", gh_json_int_or_null(u->power_mw, u->power_mw >= 0));
                json_object_set_new(o, "sm_clock_mhz", gh_json_int_or_null(u->sm_clock_mhz, u->sm_clock_mhz >= 0));
                json_object_set_new(o, "mem_clock_mhz", gh_json_int_or_null(u->mem_clock_mhz, u->mem_clock_mhz >= 0));
                json_object_set_new(o, "unowned", unowned_json(gpu));
                for (size_t i = 0; i < u->nprocs; i++) {
                        const struct gh_gpu_proc *p = &u->procs[i];
                        json_t *po = json_object();
                        json_object_set_new(po, "pid", json_integer(p->pid));
                        json_object_set_new(po, "owner", json_string(gh_owner_kind_name(p->owner.kind)));
                        json_object_set_new(po, "mps_group", text_or_null(p->owner.mps_group));
                        json_object_set_new(po, "container", container_json(&p->owner));
                        json_object_set_new(po, "container_pid",
                                            gh_json_int_or_null(p->owner.ns_pid, p->owner.in_container));
                        json_object_set_new(po, "type", json_string(cli_proc_type(p)));
                        json_object_set_new(
                                po, "used_memory_bytes",
                                gh_json_int_or_null((long long) p->used_memory, p->used_memory != GH_UNKNOWN_U64));
                        json_object_set_new(po, "sm_util", gh_json_int_or_null(p->sm_util, p->sm_util >= 0));
                        json_object_set_new(po, "mem_util", gh_json_int_or_null(p->mem_util, p->mem_util >= 0));
                        json_object_set_new(po, "command", json_string(p->owner.comm));
                        json_array_append_new(procs, po);
                }
                json_object_set_new(o, "processes", procs);
                json_array_append_new(gpus, o);
        }
        json_object_set_new(root, "mps_groups", mps_json(mps, nmps));
        return gh_json_print(steal_pointer(&root));
}

int cmd_ps(int argc, char **argv, const struct cli_globals *g)
{
        static const struct option opts[] = {
                { "json", no_argument, NULL, 'j' },
                { "no-trunc", no_argument, NULL, 'W' },
                { "help", no_argument, NULL, 'h' },
                CLI_USAGE_OPTIONS,
                { NULL, 0, NULL, 0 },
        };
        _cleanup_gpu_list_ struct gh_gpu_list list = { 0 };
        _cleanup_usage_opts_ struct cli_usage_opts uo = { 0 };
        bool json = false, no_trunc = false;
        struct gh_mps_usage *mps = NULL;
        size_t nmps = 0;
        int c, r;

        while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
                switch (c) {
                case 'j': json = true; break;
                case 'W': no_trunc = true; break;
                case 'S':
                case 'T':
                case 'f':
                case 'M':
                        if ((r = cli_usage_option(c, optarg, &uo, "ps")) != 0)
                                return r;
                        break;
                case 'h': ps_usage(stdout); return GH_EXIT_OK;
                default: fprintf(stderr, "gpu-cli: ps: bad option; see 'gpu-cli ps --help'\n"); return GH_EXIT_USAGE;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "gpu-cli: ps: unexpected argument '%s'; see 'gpu-cli ps --help'\n", argv[optind]);
                return GH_EXIT_USAGE;
        }
        if ((r = cli_usage_load(g, &uo, "ps", &list)) != GH_EXIT_OK)
                return r;
        if (mps_load(g, &uo, &mps, &nmps) < 0) {
                fprintf(stderr, "gpu-cli: ps: out of memory listing MPS clients\n");
                return GH_EXIT_FAILURE;
        }
        if (!json) {
                cli_print_procs(&list, CLI_SORT_GPU, no_trunc, 0, stdout);
                cli_print_unowned(&list, no_trunc, 0, stdout);
                mps_table(mps, nmps, no_trunc, stdout);
        } else if (print_json(&list, mps, nmps) < 0) {
                gh_mps_usage_free(mps, nmps);
                fprintf(stderr, "gpu-cli: ps: out of memory writing JSON\n");
                return GH_EXIT_FAILURE;
        }
        gh_mps_usage_free(mps, nmps);
        if (fflush(stdout) != 0) {
                fprintf(stderr, "gpu-cli: ps: writing the output: %m\n");
                return GH_EXIT_FAILURE;
        }
        return GH_EXIT_OK;
}
