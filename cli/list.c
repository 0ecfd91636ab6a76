/* gpu-cli list: the host files a container would get, one path per line (like nvidia-container-cli
 * list), or one JSON object. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "capability.h"
#include "cleanup.h"
#include "cli.h"
#include "devices.h"
#include "driver.h"
#include "gpus.h"
#include "log.h"
#include "rootfs.h"
#include "select.h"
#include "service.h"

#define MAX_IMEX 64
#define IMEX_CHANNEL_LIMIT (1u << 20)

enum { SHOW_DEVICES = 1, SHOW_LIBRARIES = 2, SHOW_BINARIES = 4, SHOW_FIRMWARES = 8, SHOW_IPCS = 16 };

static void usage(FILE *out)
{
        fprintf(out,
                "Usage: gpu-cli [GLOBAL OPTIONS] list [OPTIONS]\n"
                "\n"
                "Lists the host files a GPU container would get from the driver under --root, one per line:\n"
                "device nodes, then libraries, programs, firmware and IPC paths.  With --root other than /,\n"
                "paths are printed as seen from the host (root + path).\n"
                "\n"
                "  -d, --device=ID        also list the device nodes of these GPUs (all, indices, UUIDs, bus ids,\n"
                "                         MIG devices \"0:1\" or MIG UUIDs; as NVIDIA_VISIBLE_DEVICES)\n"
                "  -l, --libraries        list only libraries (combine the selectors to list several kinds)\n"
                "  -b, --binaries         list only programs\n"
                "  -f, --firmwares        list only firmware files\n"
                "  -i, --ipcs             list only IPC sockets and directories\n"
                "      --compat32         include the 32-bit (i386) libraries\n"
                "      --mig-config=ID    include the MIG configuration capability node\n"
                "      --mig-monitor=ID   include the MIG monitoring capability node\n"
                "      --imex-channel=N   include IMEX channel N (repeatable, or a comma list)\n"
                "      --no-persistenced  leave out the nvidia-persistenced socket\n"
                "      --no-fabricmanager leave out the nvidia-fabricmanager socket\n"
                "      --no-gsp-firmware  leave out the GSP firmware\n"
                "      --mps-pipe-dir=DIR the MPS pipe directory (default /tmp/nvidia-mps)\n"
                "      --json             one JSON object:\n"
                "  { \"root\": string, \"driver_version\": string,\n"
                "    \"devices\": [ { \"path\", \"host_path\", \"major\": int, \"minor\": int } ],\n"
                "    \"libraries\": [ { \"path\", \"host_path\", \"soname\", \"capability\", \"compat32\": bool } ],\n"
                "    \"binaries\" | \"firmwares\": [ { \"path\", \"host_path\", \"capability\" } ],\n"
                "    \"ipcs\": [ { \"path\", \"host_path\", \"type\": \"socket\"|\"directory\", \"capability\" } ] }\n"
                "  \"path\" is inside the driver root; only the kinds asked for are present.\n"
                "\n"
                "Exit status: 0 success, 1 failure, 2 usage error, 3 no driver found under --root.\n");
}

struct list_opts {
        unsigned show;
        bool compat32, json;
        const char *device, *mig_config, *mig_monitor;
        unsigned imex[MAX_IMEX];
        size_t nimex;
        struct gh_driver_opts driver;
};

static int parse_imex(const char *arg, struct list_opts *o)
{
        _cleanup_free_ char *copy = strdup(arg);
        char *save = NULL;

        if (copy == NULL)
                return -1;
        for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                char *end;
                unsigned long v;
                errno = 0;
                v = strtoul(t, &end, 10);
                if (*t < '0' || *t > '9' || *end != '\0' || errno != 0 || v >= IMEX_CHANNEL_LIMIT || o->nimex == MAX_IMEX) {
                        fprintf(stderr, "gpu-cli: list: --imex-channel '%s' must be channel numbers below %u\n", arg,
                                IMEX_CHANNEL_LIMIT);
                        return -1;
                }
                o->imex[o->nimex++] = (unsigned) v;
        }
        return 0;
}

static int parse_args(int argc, char **argv, struct list_opts *o)
{
        enum { OPT_COMPAT32 = 256, OPT_MIG_CONFIG, OPT_MIG_MONITOR, OPT_IMEX, OPT_NO_PERSISTENCED, OPT_NO_FABRICMANAGER,
               OPT_NO_GSP, OPT_JSON, OPT_MPS };
        static const struct option opts[] = {
                { "device", required_argument, NULL, 'd' },
                { "libraries", no_argument, NULL, 'l' },
                { "binaries", no_argument, NULL, 'b' },
                { "firmwares", no_argument, NULL, 'f' },
                { "ipcs", no_argument, NULL, 'i' },
                { "compat32", no_argument, NULL, OPT_COMPAT32 },
                { "mig-config", required_argument, NULL, OPT_MIG_CONFIG },
                { "mig-monitor", required_argument, NULL, OPT_MIG_MONITOR },
                { "imex-channel", required_argument, NULL, OPT_IMEX },
                { "no-persistenced", no_argument, NULL, OPT_NO_PERSISTENCED },
                { "no-fabricmanager", no_argument, NULL, OPT_NO_FABRICMANAGER },
                { "no-gsp-firmware", no_argument, NULL, OPT_NO_GSP },
                { "mps-pipe-dir", required_argument, NULL, OPT_MPS },
                { "json", no_argument, NULL, OPT_JSON },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        int c;

        while ((c = getopt_long(argc, argv, "d:lbfih", opts, NULL)) != -1) {
                switch (c) {
                case 'd': o->device = optarg; break;
                case 'l': o->show |= SHOW_LIBRARIES; break;
                case 'b': o->show |= SHOW_BINARIES; break;
                case 'f': o->show |= SHOW_FIRMWARES; break;
                case 'i': o->show |= SHOW_IPCS; break;
                case OPT_COMPAT32: o->compat32 = true; break;
                case OPT_MIG_CONFIG: o->mig_config = optarg; break;
                case OPT_MIG_MONITOR: o->mig_monitor = optarg; break;
                case OPT_IMEX:
                        if (parse_imex(optarg, o) < 0)
                                return CLI_EXIT_USAGE;
                        break;
                case OPT_NO_PERSISTENCED: o->driver.no_persistenced = true; break;
                case OPT_NO_FABRICMANAGER: o->driver.no_fabricmanager = true; break;
                case OPT_NO_GSP: o->driver.no_gsp_firmware = true; break;
                case OPT_MPS:
                        if (optarg[0] != '/') {
                                fprintf(stderr, "gpu-cli: list: --mps-pipe-dir '%s' must be an absolute path\n", optarg);
                                return CLI_EXIT_USAGE;
                        }
                        o->driver.mps_pipe_dir = optarg;
                        break;
                case OPT_JSON: o->json = true; break;
                case 'h': usage(stdout); return CLI_EXIT_OK;
                default: usage(stderr); return CLI_EXIT_USAGE;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "gpu-cli: list: unexpected argument '%s'; see 'gpu-cli list --help'\n", argv[optind]);
                return CLI_EXIT_USAGE;
        }
        if (o->show == 0)
                o->show = SHOW_DEVICES | SHOW_LIBRARIES | SHOW_BINARIES | SHOW_FIRMWARES | SHOW_IPCS;
        o->driver.caps = GH_CAP_ALL & ~GH_CAP_COMPAT32;
        if (o->compat32)
                o->driver.caps |= GH_CAP_COMPAT32;
        return -1;
}

/* MIG devices are known only to NVML; plain GPUs are enough for everything else. */
static bool wants_mig(const struct gh_select_request *req)
{
        if (req->all)
                return true;
        for (size_t i = 0; i < req->n; i++)
                if (req->items[i].kind == GH_SELECT_MIG_UUID || req->items[i].kind == GH_SELECT_MIG_INDEX)
                        return true;
        return false;
}

static int load_gpus(int rootfd, const struct cli_globals *g, const struct gh_select_request *req,
                     struct gh_gpu_list *list, gh_error_t *err)
{
        struct gh_gpus_opts gopts = GH_GPUS_OPTS_DEFAULT;

        if (!wants_mig(req))
                return gh_gpus_fast(rootfd, list, err);
        if (g->user != NULL && gh_service_parse_user(g->user, &gopts.uid, &gopts.gid, err) < 0)
                return -1;
        gopts.state_file = g->state_file;
        if (gh_gpus_load(rootfd, &gopts, list, err) == 0)
                return 0;
        if (!req->all)
                return gh_err_wrap(err, "MIG devices need NVML");
        /* "all" still means every GPU without NVML; only MIG devices are unknown then. */
        fprintf(stderr, "gpu-cli: list: warning: %s; MIG devices are not listed\n", (*err)->msg);
        gh_error_free(err);
        return gh_gpus_fast(rootfd, list, err);
}

/* Device request from --device, --mig-*, --imex-channel; the arrays live in *minors and *migs. */
static int collect_devices(int rootfd, const struct cli_globals *g, const struct list_opts *o,
                           struct gh_device_list *devs, gh_error_t *err)
{
        _cleanup_select_request_ struct gh_select_request req = { 0 };
        _cleanup_gpu_list_ struct gh_gpu_list list = { 0 };
        _cleanup_selection_ struct gh_selection sel = { 0 };
        _cleanup_free_ unsigned *minors = NULL;
        _cleanup_free_ struct gh_devices_mig *migs = NULL;
        struct gh_devices_request dreq = {
                .caps = o->driver.caps, .mig_config = o->mig_config != NULL, .mig_monitor = o->mig_monitor != NULL,
                .imex_channels = o->imex, .nimex = o->nimex,
        };

        if (o->device != NULL) {
                if (gh_select_parse(o->device, &req, err) < 0)
                        return gh_err_wrap(err, "--device");
                if (!req.is_void && (req.all || req.n > 0)) {
                        if (load_gpus(rootfd, g, &req, &list, err) < 0 || gh_select_resolve(&req, &list, &sel, err) < 0)
                                return -1;
                        minors = calloc(sel.ngpus + 1, sizeof(*minors));
                        migs = calloc(sel.nmigs + 1, sizeof(*migs));
                        if (minors == NULL || migs == NULL)
                                return gh_err(err, ENOMEM, "listing devices");
                        for (size_t i = 0; i < sel.ngpus; i++)
                                minors[i] = sel.gpus[i]->minor;
                        for (size_t i = 0; i < sel.nmigs; i++) {
                                const struct gh_gpu *parent = gh_gpu_by_index(&list, sel.migs[i]->parent_index);
                                migs[i] = (struct gh_devices_mig) { .gpu_minor = parent ? parent->minor : 0,
                                                                    .gi = sel.migs[i]->gi, .ci = sel.migs[i]->ci };
                        }
                        dreq.minors = minors;
                        dreq.nminors = sel.ngpus;
                        dreq.migs = migs;
                        dreq.nmigs = sel.nmigs;
                }
        }
        return gh_devices_collect(rootfd, &dreq, devs, err);
}

struct out {
        const char *prefix; /* "" for / */
        json_t *json;
};

static const char *cap_name(unsigned cap)
{
        const char *n = gh_capability_name(cap);
        return n ? n : "";
}

static void emit(struct out *out, const char *section, const char *path, json_t *fields)
{
        json_t *array;

        if (out->json == NULL) {
                printf("%s%s\n", out->prefix, path);
                json_decref(fields);
                return;
        }
        array = json_object_get(out->json, section);
        if (array == NULL) {
                array = json_array();
                json_object_set_new(out->json, section, array);
        }
        {
                char *host = NULL;
                json_t *o = json_object();
                if (asprintf(&host, "%s%s", out->prefix, path) < 0)
                        host = NULL;
                json_object_set_new(o, "path", json_string(path));
                json_object_set_new(o, "host_path", host ? json_string(host) : json_null());
                free(host);
                if (fields)
                        json_object_update(o, fields);
                json_decref(fields);
                json_array_append_new(array, o);
        }
}

static void emit_files(struct out *out, const char *section, const struct gh_driver_files *f)
{
        for (size_t i = 0; i < f->n; i++) {
                const struct gh_driver_file *x = &f->v[i];
                json_t *fields = NULL;
                if (out->json) {
                        fields = json_object();
                        if (x->soname)
                                json_object_set_new(fields, "soname", json_string(x->soname));
                        if (strcmp(section, "ipcs") == 0)
                                json_object_set_new(fields, "type", json_string(x->type == S_IFDIR ? "directory" : "socket"));
                        if (x->cap)
                                json_object_set_new(fields, "capability", json_string(cap_name(x->cap)));
                        if (strcmp(section, "libraries") == 0)
                                json_object_set_new(fields, "compat32", json_boolean(x->compat32));
                }
                emit(out, section, x->path, fields);
        }
}

/* Sections asked for but empty still appear in JSON, so scripts can index them. */
static void ensure_sections(struct out *out, unsigned show)
{
        static const struct { unsigned bit; const char *name; } sections[] = {
                { SHOW_DEVICES, "devices" }, { SHOW_LIBRARIES, "libraries" }, { SHOW_BINARIES, "binaries" },
                { SHOW_FIRMWARES, "firmwares" }, { SHOW_IPCS, "ipcs" },
        };
        for (size_t i = 0; i < GH_ARRAY_SIZE(sections); i++)
                if ((show & sections[i].bit) && json_object_get(out->json, sections[i].name) == NULL)
                        json_object_set_new(out->json, sections[i].name, json_array());
}

int cmd_list(int argc, char **argv, const struct cli_globals *g)
{
        struct list_opts o = { 0 };
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_close_ int rootfd = -1;
        _cleanup_free_ char *prefix = NULL;
        struct gh_device_list devs = { 0 };
        struct gh_driver *d = NULL;
        struct out out = { 0 };
        int r = parse_args(argc, argv, &o);

        if (r >= 0)
                return r;
        o.driver.ldcache = g->ldcache;
        rootfd = gh_rootfs_open(g->root, &err);
        if (rootfd < 0) {
                fprintf(stderr, "gpu-cli: list: %s; check --root\n", err->msg);
                return CLI_EXIT_NO_DRIVER;
        }
        if (gh_driver_discover(rootfd, &o.driver, &d, &err) < 0) {
                fprintf(stderr, "gpu-cli: list: %s\n", err->msg);
                return err->code == GH_DRIVER_ENODRIVER ? CLI_EXIT_NO_DRIVER : CLI_EXIT_FAILURE;
        }
        if ((o.show & SHOW_DEVICES) && collect_devices(rootfd, g, &o, &devs, &err) < 0) {
                fprintf(stderr, "gpu-cli: list: %s\n", err->msg);
                gh_driver_free(d);
                return CLI_EXIT_FAILURE;
        }
        /* Host paths: the root's own path in front, without a doubled slash. */
        prefix = strdup(g->root);
        if (prefix == NULL) {
                gh_driver_free(d);
                gh_device_list_free(&devs);
                return CLI_EXIT_FAILURE;
        }
        for (size_t n = strlen(prefix); n > 0 && prefix[n - 1] == '/'; n--)
                prefix[n - 1] = '\0';
        out.prefix = prefix;
        if (o.json) {
                out.json = json_object();
                json_object_set_new(out.json, "root", json_string(g->root));
                json_object_set_new(out.json, "driver_version", json_string(d->version));
        }
        for (size_t i = 0; i < devs.n; i++) {
                json_t *fields = NULL;
                if (out.json) {
                        fields = json_object();
                        json_object_set_new(fields, "major", json_integer(major(devs.v[i].rdev)));
                        json_object_set_new(fields, "minor", json_integer(minor(devs.v[i].rdev)));
                }
                emit(&out, "devices", devs.v[i].path, fields);
        }
        if (o.show & SHOW_LIBRARIES)
                emit_files(&out, "libraries", &d->libs);
        if (o.show & SHOW_BINARIES)
                emit_files(&out, "binaries", &d->bins);
        if (o.show & SHOW_FIRMWARES)
                emit_files(&out, "firmwares", &d->firmware);
        if (o.show & SHOW_IPCS)
                emit_files(&out, "ipcs", &d->ipcs);
        r = CLI_EXIT_OK;
        if (out.json) {
                char *text;
                ensure_sections(&out, o.show);
                text = json_dumps(out.json, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
                if (text == NULL)
                        r = CLI_EXIT_FAILURE;
                else
                        puts(text);
                free(text);
                json_decref(out.json);
        }
        gh_driver_free(d);
        gh_device_list_free(&devs);
        if (fflush(stdout) != 0) {
                fprintf(stderr, "gpu-cli: list: writing the output: %m\n");
                return CLI_EXIT_FAILURE;
        }
        return r;
}
