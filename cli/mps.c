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
#include "cli.h"
#include "driver.h"
#include "gpus.h"
#include "mps-daemon.h"
#include "oci.h"
#include "rootfs.h"
#include "select.h"
#include "service.h"
#include "usage.h"

static void usage(FILE *out)
{
        fprintf(out,
                "Usage: gpu-cli [GLOBAL OPTIONS] mps start NAME --device=ID [--threads=PERCENT] [--memory=SIZE]\n"
                "                                          [--cdi-spec=FILE|none]\n"
                "       gpu-cli [GLOBAL OPTIONS] mps stop NAME\n"
                "       gpu-cli [GLOBAL OPTIONS] mps list [--json]\n"
                "\n"
                "An MPS group is one CUDA MPS control daemon, for one GPU, with its own pipe directory and its own\n"
                "/dev/shm.  Limits are set on the daemon, so they bind every client of the group: containers join\n"
                "with the annotation "
                "org.gpu-hook.mps-group=NAME"
                ",\n"
                "or through CDI: podman run --device nvidia.com/gpu=mps-NAME (see docs/mps.md).\n"
                "\n"
                "  --device=ID        the GPU: index, UUID or PCI bus id\n"
                "  --threads=PERCENT  set_default_active_thread_percentage (1-100)\n"
                "  --memory=SIZE      set_default_device_pinned_mem_limit, e.g. 4G or 512M\n"
                "  --cdi-spec=FILE    where start writes the group's CDI spec, with the one device\n"
                "                     nvidia.com/gpu=mps-NAME (default /var/run/cdi/nvidia.com-gpu-mps-NAME.json);\n"
                "                     none: no spec.  stop removes the spec start wrote.\n"
                "  --dir=DIR          where groups live (default " GH_MPS_DEFAULT_DIR ")\n"
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

/* Writes the CDI spec of a running group (cdi generate --mps-group) to `want` (NULL: the default
 * path) and records it in the group's directory, for stop.  An existing file is replaced only when
 * it is a spec of this group (one left by a group that was not stopped): never another spec. */
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
        _cleanup_json_ json_t *spec = NULL, *old = NULL;
        _cleanup_free_ char *path = NULL, *device = NULL;
        struct gh_mps_cdi rec = { 0 };
        char self[PATH_MAX];
        struct stat st;

        *written = NULL;
        if (cli_self_path(self, sizeof(self)) < 0)
                return gh_err(err, errno, "finding our own path for the CDI hook");
        o.hook_path = self;
        if (gh_layout_named("debian", &o.layout, err) < 0)
                return -1;
        if (want != NULL)
                path = strdup(want);
        else if (asprintf(&path, CLI_CDI_MPS_SPEC_FMT, o.vendor, o.class_, name) < 0)
                path = NULL;
        if (path == NULL || asprintf(&device, GH_CDI_MPS_PREFIX "%s", name) < 0)
                return gh_err(err, ENOMEM, "writing the CDI spec");
        if (lstat(path, &st) == 0) {
                json_t *devs;
                if (cli_cdi_read(path, &old, err) < 0 || json_array_size(devs = json_object_get(old, "devices")) != 1 ||
                    !json_is_string(json_object_get(json_array_get(devs, 0), "name")) ||
                    strcmp(json_string_value(json_object_get(json_array_get(devs, 0), "name")), device) != 0) {
                        gh_error_free(err);
                        return gh_err(err, EEXIST,
                                      "not replacing %s: it is not a CDI spec of MPS group '%s'; remove it or "
                                      "give --cdi-spec=FILE",
                                      path, name);
                }
        }
        if (gh_cdi_generate(&o, &spec, err) < 0 || cli_cdi_write(spec, path, &st, err) < 0)
                return -1;
        snprintf(rec.path, sizeof(rec.path), "%s", path);
        snprintf(rec.kind, sizeof(rec.kind), "%s", json_string_value(json_object_get(spec, "kind")));
        rec.dev = st.st_dev;
        rec.ino = st.st_ino;
        if (gh_mps_cdi_record(dir, name, &rec, err) < 0) {
                /* stop could not find it: it goes now */
                unlink(path);
                return -1;
        }
        *written = path;
        path = NULL;
        return 0;
}

static int start(int argc, char **argv, const struct cli_globals *g, const char *dir)
{
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_close_ int rootfd = -1;
        _cleanup_free_ char *control = NULL;
        _cleanup_gpu_list_ struct gh_gpu_list gpus = { 0 };
        _cleanup_select_request_ struct gh_select_request req = { 0 };
        _cleanup_selection_ struct gh_selection sel = { 0 };
        struct gh_mps_start o = { .dir = dir };
        struct gh_mps_group grp;
        const char *device = NULL, *memory = NULL, *cdi_spec = NULL;
        _cleanup_free_ char *spec_written = NULL;
        bool want_spec = true;
        char *end;

        for (int i = 2; i < argc; i++) {
                if (strncmp(argv[i], "--device=", 9) == 0)
                        device = argv[i] + 9;
                else if (strncmp(argv[i], "--threads=", 10) == 0) {
                        long t = strtol(argv[i] + 10, &end, 10);
                        if (*end != '\0' || end == argv[i] + 10 || t < 1 || t > 100) {
                                fprintf(stderr, "gpu-cli mps: invalid %s: give a percentage from 1 to 100\n", argv[i]);
                                return GH_EXIT_USAGE;
                        }
                        o.threads = (int) t;
                } else if (strncmp(argv[i], "--memory=", 9) == 0)
                        memory = argv[i] + 9;
                else if (strncmp(argv[i], "--cdi-spec=", 11) == 0) {
                        cdi_spec = argv[i] + 11;
                        want_spec = strcmp(cdi_spec, "none") != 0;
                        if (want_spec && cdi_spec[0] != '/') {
                                fprintf(stderr,
                                        "gpu-cli mps start: --cdi-spec '%s' must be an absolute path (or none)\n",
                                        cdi_spec);
                                return GH_EXIT_USAGE;
                        }
                } else {
                        fprintf(stderr, "gpu-cli mps start: unknown argument '%s'; see 'gpu-cli mps --help'\n",
                                argv[i]);
                        return GH_EXIT_USAGE;
                }
        }
        o.name = argv[1];
        if (gh_mps_name_check(o.name, &err) < 0 || (memory && gh_mps_parse_size(memory, &o.memory_mib, &err) < 0)) {
                fprintf(stderr, "gpu-cli mps: %s\n", err->msg);
                return GH_EXIT_USAGE;
        }
        if (device == NULL) {
                fprintf(stderr, "gpu-cli mps start: --device=ID is required (a GPU index, UUID or bus id)\n");
                return GH_EXIT_USAGE;
        }
        if (want_spec && gh_cdi_check_mps_name(o.name, &err) < 0) {
                fprintf(stderr, "gpu-cli mps start: %s, or give --cdi-spec=none\n", err->msg);
                return GH_EXIT_USAGE;
        }
        rootfd = gh_rootfs_open(g->root, &err);
        if (rootfd < 0 || gh_gpus_fast(rootfd, &gpus, &err) < 0 || find_control(g, rootfd, &control, &err) < 0)
                goto fail;
        if (gh_select_parse(device, &req, &err) < 0 || gh_select_resolve(&req, &gpus, &sel, &err) < 0)
                goto fail;
        if (req.all || req.none || req.is_void || sel.ngpus != 1 || sel.nmigs != 0) {
                fprintf(stderr, "gpu-cli mps start: --device=%s must name exactly one whole GPU\n", device);
                return GH_EXIT_USAGE;
        }
        o.control = control;
        o.gpu = sel.gpus[0];
        if (gh_mps_start(&o, &grp, &err) < 0)
                goto fail;
        printf("MPS group %s started on GPU %u (%s): daemon pid %d%s%s\n", grp.name, grp.gpu_index, grp.gpu_uuid,
               (int) grp.pid, o.threads ? ", threads limited" : "", o.memory_mib ? ", memory limited" : "");
        /* the group is up and usable through the annotation: a spec that cannot be written is a warning */
        if (want_spec && write_group_spec(g, dir, grp.name, cdi_spec, &spec_written, &err) < 0)
                fprintf(stderr, "gpu-cli mps start: warning: group %s runs, but has no CDI spec: %s\n", grp.name,
                        err->msg);
        else if (want_spec)
                printf("CDI device nvidia.com/gpu=" GH_CDI_MPS_PREFIX "%s: %s\n", grp.name, spec_written);
        return GH_EXIT_OK;
fail:
        fprintf(stderr, "gpu-cli mps start: %s\n", err->msg);
        return gh_error_exit_status(err);
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

static int list(int argc, char **argv, const struct cli_globals *g, const char *dir)
{
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_free_ struct gh_mps_group *groups = NULL;
        _cleanup_free_ char *control = NULL;
        _cleanup_close_ int rootfd = -1;
        bool json = false;
        size_t n = 0;
        json_t *arr;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--json") == 0)
                        json = true;
                else {
                        fprintf(stderr, "gpu-cli mps list: unknown argument '%s'\n", argv[i]);
                        return GH_EXIT_USAGE;
                }
        }
        if (gh_mps_list(dir, &groups, &n, &err) < 0) {
                fprintf(stderr, "gpu-cli mps list: %s\n", err->msg);
                return GH_EXIT_FAILURE;
        }
        /* clients need the control program; a missing driver only loses that column */
        rootfd = gh_rootfs_open(g->root, &err);
        if (rootfd < 0 || find_control(g, rootfd, &control, &err) < 0)
                gh_error_free(&err);
        /* the compute mode needs NVML; without it the mode is unknown (said on stderr) */
        _cleanup_gpu_list_ struct gh_gpu_list gpus = { 0 };
        struct gh_gpus_opts gopts = GH_GPUS_OPTS_DEFAULT;
        bool have_gpus = false;
        gopts.with_usage = true;
        if (n > 0 && rootfd >= 0 &&
            (g->user == NULL || gh_service_parse_user(g->user, &gopts.uid, &gopts.gid, &err) == 0)) {
                have_gpus = gh_gpus_load(rootfd, &gopts, &gpus, &err) == 0;
                if (!have_gpus)
                        fprintf(stderr, "gpu-cli mps list: compute modes unknown: %s\n", err->msg);
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
                        fprintf(stderr, "gpu-cli mps list: %s\n", err->msg);
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
        if (json) {
                char *s = json_dumps(arr, JSON_INDENT(2));
                if (s)
                        puts(s);
                free(s);
        } else {
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
        const char *dir = NULL;
        char *args[64];
        int n = 0;

        /* --dir may stand anywhere after "mps" */
        for (int i = 0; i < argc && n < 63; i++) {
                if (strncmp(argv[i], "--dir=", 6) == 0) {
                        dir = argv[i] + 6;
                        if (dir[0] != '/') {
                                fprintf(stderr, "gpu-cli mps: --dir '%s' must be an absolute path\n", dir);
                                return GH_EXIT_USAGE;
                        }
                } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
                        usage(stdout);
                        return GH_EXIT_OK;
                } else {
                        args[n++] = argv[i];
                }
        }
        args[n] = NULL;
        if (n < 2) {
                usage(stderr);
                return GH_EXIT_USAGE;
        }
        if (strcmp(args[1], "list") == 0)
                return list(n - 1, args + 1, g, dir);
        if (strcmp(args[1], "start") == 0 || strcmp(args[1], "stop") == 0) {
                if (n < 3) {
                        fprintf(stderr, "gpu-cli mps %s: name the group: gpu-cli mps %s NAME\n", args[1], args[1]);
                        return GH_EXIT_USAGE;
                }
                if (strcmp(args[1], "start") == 0)
                        return start(n - 1, args + 1, g, dir);
                if (n > 3) {
                        fprintf(stderr, "gpu-cli mps stop: unexpected argument '%s'\n", args[3]);
                        return GH_EXIT_USAGE;
                }
                _cleanup_error_ gh_error_t err = NULL;
                _cleanup_free_ char *control = NULL;
                _cleanup_close_ int rootfd = gh_rootfs_open(g->root, &err);
                if (rootfd < 0 || find_control(g, rootfd, &control, &err) < 0) {
                        /* without the client the daemon is still stopped, by signal */
                        gh_error_free(&err);
                }
                if (gh_mps_stop(dir, args[2], control, 0, &err) < 0) {
                        fprintf(stderr, "gpu-cli mps stop: %s\n", err->msg);
                        return err->code == ENOENT ? GH_EXIT_USAGE : GH_EXIT_FAILURE;
                }
                printf("MPS group %s stopped\n", args[2]);
                return GH_EXIT_OK;
        }
        fprintf(stderr, "gpu-cli mps: unknown command '%s'; use start, stop or list\n", args[1]);
        return GH_EXIT_USAGE;
}
