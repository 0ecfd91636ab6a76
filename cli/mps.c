/* gpu-cli mps: start, stop and list MPS groups (lib/ops/mps-daemon.h, docs/mps.md). */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capability.h"
#include "cdi.h"
#include "cleanup.h"
#include "discover.h"
#include "cli.h"
#include "driver.h"
#include "gpus.h"
#include "json.h"
#include "mps-cdi.h"
#include "mps-clients.h"
#include "mps-daemon.h"
#include "oci.h"
#include "rootfs.h"
#include "select.h"
#include "service.h"
#include "usage.h"

static void usage(FILE *out)
{
        fprintf(out,
                "Usage: gpu-cli [GLOBAL OPTIONS] mps [--mps-dir=DIR] start NAME --device=ID [--threads=PERCENT]\n"
                "                                          [--memory=SIZE] [--cdi-spec=FILE|none]\n"
                "       gpu-cli [GLOBAL OPTIONS] mps [--mps-dir=DIR] stop NAME\n"
                "       gpu-cli [GLOBAL OPTIONS] mps [--mps-dir=DIR] list [--json]\n"
                "\n"
                "An MPS group is one CUDA MPS control daemon, for one GPU, with its own pipe directory and its own\n"
                "/dev/shm.  Limits are set on the daemon, so they bind every client of the group: containers join\n"
                "with the annotation "
                "org.gpu-hook.mps-group=NAME"
                ",\n"
                "or through CDI: podman run --device nvidia.com/gpu=mps-NAME (see docs/mps.md).\n"
                "\n"
                "  -d, --device=ID    the GPU: index, UUID or PCI bus id\n"
                "  --threads=PERCENT  set_default_active_thread_percentage (1-100)\n"
                "  --memory=SIZE      set_default_device_pinned_mem_limit, e.g. 4G or 512M\n"
                "  --cdi-spec=FILE    where start writes the group's CDI spec, with the one device\n"
                "                     nvidia.com/gpu=mps-NAME (default /var/run/cdi/nvidia.com-gpu-mps-NAME.json);\n"
                "                     none: no spec.  stop removes the spec start wrote.\n"
                "  --mps-dir=DIR, --dir=DIR  where groups live (default " GH_MPS_DEFAULT_DIR ")\n"
                "  --json             list as JSON: [{\"name\", \"gpu_uuid\", \"gpu_index\", \"compute_mode\"\n"
                "                     (\"Default\", \"Exclusive_Process\", ... or null: unknown), \"threads\",\n"
                "                     \"memory_mib\", \"pid\", \"alive\", \"clients\": [pid], \"dir\",\n"
                "                     \"cdi_spec\", \"cdi_device\" (null: no spec)}]\n"
                "\n"
                "The compute mode is never changed: enforcement against processes that bypass MPS needs the\n"
                "EXCLUSIVE_PROCESS mode, an administrator's choice (nvidia-smi -c EXCLUSIVE_PROCESS).\n"
                "Exit status: 0 success, 1 failure, 2 usage error, 3 no driver found.\n");
}

static int find_control(const struct cli_globals *g, int rootfd, char **path, gh_error_t *err)
{
        return gh_mps_find_control(rootfd, g->root, g->ldcache, path, err);
}

/* The group's CDI spec (lib/ops/mps-cdi.c): what `cdi generate --mps-group` writes. */
static int write_group_spec(const struct cli_globals *g, const char *dir, const char *name, const char *want,
                            char **written, gh_error_t *err)
{
        struct gh_cdi_opts o = {
                .root = g->root,
                .ldcache = g->ldcache,
                .vendor = "nvidia.com",
                .class_ = "gpu",
                .caps = GH_CAP_ALL,
                .uid = g->uid,
                .gid = g->gid,
                .mps_group = name,
                .mps_dir = dir,
        };
        char self[PATH_MAX];

        *written = NULL;
        if (cli_cdi_hook_path(self, sizeof(self)) < 0)
                return gh_err(err, errno, "finding our own path for the CDI hook");
        o.hook_path = self;
        if (gh_layout_named("debian", &o.layout, err) < 0)
                return -1;
        return gh_mps_cdi_write(&o, want, written, err);
}

/* What the command line of `mps` says (one getopt_long table for the three commands). */
struct mps_args {
        const char *dir, *device, *memory, *cdi_spec;
        int threads;
        bool json, start_only, list_only;
};

static int start(const struct cli_globals *g, const struct mps_args *a, const char *name)
{
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_close_ int rootfd = -1;
        _cleanup_free_ char *control = NULL;
        _cleanup_gpu_list_ struct gh_gpu_list gpus = { 0 };
        _cleanup_select_request_ struct gh_select_request req = { 0 };
        _cleanup_selection_ struct gh_selection sel = { 0 };
        struct gh_mps_start o = { .dir = a->dir, .name = name, .threads = a->threads };
        struct gh_mps_group grp;
        _cleanup_free_ char *spec_written = NULL;
        bool want_spec = a->cdi_spec == NULL || strcmp(a->cdi_spec, "none") != 0;

        if (want_spec && a->cdi_spec != NULL && a->cdi_spec[0] != '/') {
                fprintf(stderr, "gpu-cli: mps start: --cdi-spec '%s' must be an absolute path (or none)\n",
                        a->cdi_spec);
                return GH_EXIT_USAGE;
        }
        if (gh_mps_name_check(o.name, &err) < 0 ||
            (a->memory && gh_mps_parse_size(a->memory, &o.memory_mib, &err) < 0)) {
                fprintf(stderr, "gpu-cli: mps start: %s\n", err->msg);
                return GH_EXIT_USAGE;
        }
        if (a->device == NULL) {
                fprintf(stderr, "gpu-cli: mps start: --device=ID is required (a GPU index, UUID or bus id)\n");
                return GH_EXIT_USAGE;
        }
        if (want_spec && gh_cdi_check_mps_name(o.name, &err) < 0) {
                fprintf(stderr, "gpu-cli: mps start: %s, or give --cdi-spec=none\n", err->msg);
                return GH_EXIT_USAGE;
        }
        rootfd = gh_driver_root_open(g->root, &err);
        if (rootfd < 0 || gh_gpus_fast(rootfd, &gpus, &err) < 0 || find_control(g, rootfd, &control, &err) < 0)
                goto fail;
        if (gh_select_parse(a->device, &req, &err) < 0 || gh_select_resolve(&req, &gpus, &sel, &err) < 0)
                goto fail;
        if (req.all || req.none || req.is_void || sel.ngpus != 1 || sel.nmigs != 0) {
                fprintf(stderr, "gpu-cli: mps start: --device=%s must name exactly one whole GPU\n", a->device);
                return GH_EXIT_USAGE;
        }
        o.control = control;
        o.gpu = sel.gpus[0];
        if (gh_mps_start(&o, &grp, &err) < 0)
                goto fail;
        printf("MPS group %s started on GPU %u (%s): daemon pid %d%s%s\n", grp.name, grp.gpu_index, grp.gpu_uuid,
               (int) grp.pid, o.threads ? ", threads limited" : "", o.memory_mib ? ", memory limited" : "");
        /* the group is up and usable through the annotation: a spec that cannot be written is a warning */
        if (want_spec && write_group_spec(g, a->dir, grp.name, a->cdi_spec, &spec_written, &err) < 0)
                fprintf(stderr, "gpu-cli: mps start: warning: group %s runs, but has no CDI spec: %s\n", grp.name,
                        err->msg);
        else if (want_spec)
                printf("CDI device nvidia.com/gpu=" GH_CDI_MPS_PREFIX "%s: %s\n", grp.name, spec_written);
        return GH_EXIT_OK;
fail:
        fprintf(stderr, "gpu-cli: mps start: %s\n", err->msg);
        return gh_error_exit_status(err);
}

static int stop(const struct cli_globals *g, const char *dir, const char *name)
{
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_free_ char *control = NULL;
        _cleanup_close_ int rootfd = gh_driver_root_open(g->root, &err);

        /* without the control program the daemon is still stopped, by signal */
        if (rootfd < 0 || find_control(g, rootfd, &control, &err) < 0)
                gh_error_free(&err);
        if (gh_mps_stop(dir, name, control, 0, &err) < 0) {
                fprintf(stderr, "gpu-cli: mps stop: %s\n", err->msg);
                return err->code == ENOENT ? GH_EXIT_USAGE : GH_EXIT_FAILURE;
        }
        printf("MPS group %s stopped\n", name);
        return GH_EXIT_OK;
}

/* Client pids of a live group (none when the driver's control program is missing). */
static json_t *group_clients(const char *dir, const struct gh_mps_group *grp, const char *control)
{
        json_t *arr = json_array();
        _cleanup_free_ pid_t *pids = NULL;
        _cleanup_error_ gh_error_t e = NULL;
        size_t n = 0;

        if (arr == NULL || !grp->alive || control == NULL || gh_mps_clients(dir, grp->name, control, &pids, &n, &e) < 0)
                return arr;
        for (size_t i = 0; i < n; i++)
                json_array_append_new(arr, json_integer(pids[i]));
        return arr;
}

/* The compute mode of the GPU with this UUID, from NVML through the driver service; -1 unknown. */
static int compute_mode(const struct gh_gpu_list *gpus, const char *uuid)
{
        for (size_t i = 0; gpus && i < gpus->n; i++)
                if (strcasecmp(gpus->gpus[i].uuid, uuid) == 0 && gpus->gpus[i].usage != NULL)
                        return gpus->gpus[i].usage->compute_mode;
        return -1;
}

static int list(const struct cli_globals *g, const char *dir, bool json)
{
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_free_ struct gh_mps_group *groups = NULL;
        _cleanup_free_ char *control = NULL;
        _cleanup_close_ int rootfd = -1;
        size_t n = 0;
        json_t *arr;

        if (gh_mps_list(dir, &groups, &n, &err) < 0) {
                fprintf(stderr, "gpu-cli: mps list: %s\n", err->msg);
                return GH_EXIT_FAILURE;
        }
        /* clients need the control program; a missing driver only loses that column */
        rootfd = gh_driver_root_open(g->root, &err);
        if (rootfd < 0 || find_control(g, rootfd, &control, &err) < 0)
                gh_error_free(&err);
        /* the compute mode needs NVML; without it the mode is unknown (said on stderr) */
        _cleanup_gpu_list_ struct gh_gpu_list gpus = { 0 };
        struct gh_gpus_opts gopts = GH_GPUS_OPTS_DEFAULT;
        bool have_gpus = false;
        gopts.with_usage = true;
        gopts.uid = g->uid;
        gopts.gid = g->gid;
        if (n > 0 && rootfd >= 0) {
                have_gpus = gh_gpus_load(rootfd, &gopts, &gpus, &err) == 0;
                if (!have_gpus)
                        fprintf(stderr, "gpu-cli: mps list: compute modes unknown: %s\n", err->msg);
                gh_error_free(&err);
        }
        arr = json_array();
        for (size_t i = 0; i < n && arr; i++) {
                const struct gh_mps_group *grp = &groups[i];
                char path[4096];
                int mode = compute_mode(have_gpus ? &gpus : NULL, grp->gpu_uuid);
                struct gh_mps_cdi cdi;
                json_t *spec = json_null(), *dev = json_null();
                snprintf(path, sizeof(path), "%s/%s", dir ? dir : GH_MPS_DEFAULT_DIR, grp->name);
                if (gh_mps_cdi_load(dir, grp->name, &cdi, &err) > 0) {
                        spec = json_string(cdi.path);
                        dev = json_sprintf("%s=" GH_CDI_MPS_PREFIX "%s", cdi.kind, grp->name);
                } else if (err != NULL) {
                        fprintf(stderr, "gpu-cli: mps list: %s\n", err->msg);
                        gh_error_free(&err);
                }
                json_array_append_new(arr, json_pack("{s:s, s:s, s:i, s:o, s:i, s:I, s:i, s:b, s:o, s:s, s:o, s:o}",
                                                     "name", grp->name, "gpu_uuid", grp->gpu_uuid, "gpu_index",
                                                     (int) grp->gpu_index, "compute_mode",
                                                     mode >= 0 ? json_string(gh_compute_mode_name(mode)) : json_null(),
                                                     "threads", grp->threads, "memory_mib",
                                                     (json_int_t) grp->memory_mib, "pid", (int) grp->pid, "alive",
                                                     grp->alive, "clients", group_clients(dir, grp, control), "dir",
                                                     path, "cdi_spec", spec, "cdi_device", dev));
        }
        if (arr == NULL)
                return GH_EXIT_FAILURE;
        if (json)
                return gh_json_print(arr) < 0 ? GH_EXIT_FAILURE : GH_EXIT_OK;
        {
                printf("%-20s %-5s %-17s %-8s %-10s %-8s %-6s %-12s %s\n", "NAME", "GPU", "MODE", "THREADS", "MEMORY",
                       "PID", "STATE", "CLIENTS", "CDI DEVICE");
                size_t i;
                json_t *o;
                json_array_foreach (arr, i, o) {
                        const struct gh_mps_group *grp = &groups[i];
                        char threads[16] = "-", memory[32] = "-", clients[256] = "";
                        size_t k, len = 0;
                        json_t *c;
                        if (grp->threads)
                                snprintf(threads, sizeof(threads), "%d%%", grp->threads);
                        if (grp->memory_mib)
                                snprintf(memory, sizeof(memory), "%lluM", grp->memory_mib);
                        json_array_foreach (json_object_get(o, "clients"), k, c)
                                if (len < sizeof(clients) - 16)
                                        len += (size_t) snprintf(clients + len, sizeof(clients) - len, "%s%lld",
                                                                 len ? "," : "", (long long) json_integer_value(c));
                        json_t *dev = json_object_get(o, "cdi_device");
                        printf("%-20s %-5u %-17s %-8s %-10s %-8d %-6s %-12s %s\n", grp->name, grp->gpu_index,
                               gh_compute_mode_name(compute_mode(have_gpus ? &gpus : NULL, grp->gpu_uuid)), threads,
                               memory, (int) grp->pid, grp->alive ? "alive" : "dead", len ? clients : "-",
                               json_is_string(dev) ? json_string_value(dev) : "-");
                }
        }
        json_decref(arr);
        return GH_EXIT_OK;
}

int cmd_mps(int argc, char **argv, const struct cli_globals *g)
{
        enum { OPT_THREADS = 0x100, OPT_MEMORY, OPT_CDI_SPEC, OPT_JSON, OPT_MPS_DIR };
        static const struct option opts[] = {
                { "mps-dir", required_argument, NULL, OPT_MPS_DIR },
                { "dir", required_argument, NULL, OPT_MPS_DIR }, /* the first name it had */
                { "device", required_argument, NULL, 'd' },
                { "threads", required_argument, NULL, OPT_THREADS },
                { "memory", required_argument, NULL, OPT_MEMORY },
                { "cdi-spec", required_argument, NULL, OPT_CDI_SPEC },
                { "json", no_argument, NULL, OPT_JSON },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        struct mps_args a = { 0 };
        const char *cmd, *name = NULL;
        char *end;
        long t;
        int c;

        while ((c = getopt_long(argc, argv, "d:h", opts, NULL)) != -1) {
                switch (c) {
                case OPT_MPS_DIR:
                        if (optarg[0] != '/') {
                                fprintf(stderr, "gpu-cli: mps: --mps-dir '%s' must be an absolute path\n", optarg);
                                return GH_EXIT_USAGE;
                        }
                        a.dir = optarg;
                        break;
                case 'd': a.device = optarg, a.start_only = true; break;
                case OPT_THREADS:
                        t = strtol(optarg, &end, 10);
                        if (*end != '\0' || end == optarg || t < 1 || t > 100) {
                                fprintf(stderr,
                                        "gpu-cli: mps start: invalid --threads=%s: give a percentage from 1 to 100\n",
                                        optarg);
                                return GH_EXIT_USAGE;
                        }
                        a.threads = (int) t, a.start_only = true;
                        break;
                case OPT_MEMORY: a.memory = optarg, a.start_only = true; break;
                case OPT_CDI_SPEC: a.cdi_spec = optarg, a.start_only = true; break;
                case OPT_JSON: a.json = true, a.list_only = true; break;
                case 'h': usage(stdout); return GH_EXIT_OK;
                default: usage(stderr); return GH_EXIT_USAGE;
                }
        }
        if (optind >= argc) {
                usage(stderr);
                return GH_EXIT_USAGE;
        }
        cmd = argv[optind++];
        if (strcmp(cmd, "start") != 0 && strcmp(cmd, "stop") != 0 && strcmp(cmd, "list") != 0) {
                fprintf(stderr, "gpu-cli: mps: unknown command '%s'; use start, stop or list\n", cmd);
                return GH_EXIT_USAGE;
        }
        if ((a.start_only && strcmp(cmd, "start") != 0) || (a.list_only && strcmp(cmd, "list") != 0)) {
                fprintf(stderr, "gpu-cli: mps %s: %s is an option of mps %s; see 'gpu-cli mps --help'\n", cmd,
                        a.list_only ? "--json" : "--device, --threads, --memory or --cdi-spec",
                        a.list_only ? "list" : "start");
                return GH_EXIT_USAGE;
        }
        if (strcmp(cmd, "list") != 0) {
                if (optind >= argc) {
                        fprintf(stderr, "gpu-cli: mps %s: name the group: gpu-cli mps %s NAME\n", cmd, cmd);
                        return GH_EXIT_USAGE;
                }
                name = argv[optind++];
        }
        if (optind < argc) {
                fprintf(stderr, "gpu-cli: mps %s: unexpected argument '%s'; see 'gpu-cli mps --help'\n", cmd,
                        argv[optind]);
                return GH_EXIT_USAGE;
        }
        if (strcmp(cmd, "list") == 0)
                return list(g, a.dir, a.json);
        return strcmp(cmd, "start") == 0 ? start(g, &a, name) : stop(g, a.dir, name);
}
