/* gpu-cli info: the driver and its GPUs, as text (like nvidia-container-cli info), CSV or JSON. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "discover.h"
#include "cli.h"
#include "gpus.h"
#include "json.h"
#include "rootfs.h"
#include "service.h"
#include "statecache.h"

enum format { FORMAT_TEXT, FORMAT_CSV, FORMAT_JSON };

static void usage(FILE *out)
{
        fprintf(out,
                "Usage: gpu-cli [GLOBAL OPTIONS] info [--csv|--json] [--nvml|--fast|--cuda-only] [--no-cache] [--timeout=SECONDS]\n"
                "\n"
                "Shows the NVIDIA driver under --root and its GPUs.\n"
                "\n"
                "  --nvml            NVML's answers (default): from the driver-state cache while the driver is\n"
                "                    unchanged, else from NVML through an unprivileged chrooted service process\n"
                "  --no-cache        ask NVML even when the driver-state cache holds (same as the global option)\n"
                "  --cuda-only       --fast plus the CUDA version from libcuda (cuDriverGetVersion without cuInit,\n"
                "                    in the same sandboxed child; no NVML): what a cold start with only cuda\n"
                "                    requirements would need\n"
                "  --fast            read only /proc/driver/nvidia: no CUDA version, brand, architecture or MIG\n"
                "  --csv             CSV: a driver table, a blank line, a GPU table, and (when there are MIG\n"
                "                    devices) a blank line and a MIG table; each table starts with a header row\n"
                "  --json            one JSON object, schema below\n"
                "  --timeout=SECONDS how long to wait for each NVML answer (default 5)\n"
                "\n"
                "JSON schema (fields that only NVML knows are null with --fast):\n"
                "  { \"nvrm_version\": string, \"cuda_version\": string|null, \"source\": \"nvml\"|\"cache\"|\"proc\"|\"proc+libcuda\",\n"
                "    \"gpus\": [ { \"index\": int, \"minor\": int, \"model\": string, \"brand\": string|null,\n"
                "                \"uuid\": string, \"bus_location\": \"0000:00:06.0\", \"architecture\": string|null,\n"
                "                \"mig_enabled\": bool|null,\n"
                "                \"mig_devices\": [ { \"index\": int, \"gpu_instance\": int, \"compute_instance\": int,\n"
                "                                   \"uuid\": string, \"gi_cap_minor\": int|null,\n"
                "                                   \"ci_cap_minor\": int|null } ] } ] }\n"
                "  GPUs are in bus-id order; index is the number NVIDIA_VISIBLE_DEVICES and --device use, and a\n"
                "  MIG device is selected as \"<gpu index>:<mig index>\" or by its uuid.\n"
                "\n"
                "Exit status: 0 success, 1 failure (NVML failed, hung or crashed), 2 usage error, 3 no driver.\n");
}

static void print_text(const struct gh_gpu_list *l)
{
        printf("NVRM version:   %s\n", l->driver_version);
        if (l->cuda_version[0] != '\0')
                printf("CUDA version:   %s\n", l->cuda_version);
        printf("Source:         %s\n", gh_gpus_origin_name(l->origin));
        for (size_t i = 0; i < l->n; i++) {
                const struct gh_gpu *g = &l->gpus[i];
                printf("\nDevice Index:   %u\n", g->index);
                printf("Device Minor:   %u\n", g->minor);
                printf("Model:          %s\n", g->model);
                if (l->from_nvml)
                        printf("Brand:          %s\n", g->brand);
                printf("GPU UUID:       %s\n", g->uuid);
                printf("Bus Location:   %s\n", g->busid);
                if (l->from_nvml)
                        printf("Architecture:   %s\n", g->arch);
                if (g->mig_enabled)
                        printf("MIG Mode:       Enabled\n");
                for (size_t m = 0; m < g->nmigs; m++) {
                        const struct gh_mig *mig = &g->migs[m];
                        printf("MIG Device:     %u:%u\n", g->index, mig->index);
                        printf("  MIG UUID:     %s\n", mig->uuid);
                        printf("  GI ID:        %u\n", mig->gi);
                        printf("  CI ID:        %u\n", mig->ci);
                }
        }
}

/* RFC 4180 quoting, only where needed (model names may one day hold a comma). */
static void csv_field(const char *s, bool last)
{
        if (strpbrk(s, ",\"\r\n") == NULL) {
                fputs(s, stdout);
        } else {
                putchar('"');
                for (; *s; s++) {
                        if (*s == '"')
                                putchar('"');
                        putchar(*s);
                }
                putchar('"');
        }
        putchar(last ? '\n' : ',');
}

static void print_csv(const struct gh_gpu_list *l)
{
        size_t nmigs = 0;

        printf("NVRM version,CUDA version\n");
        csv_field(l->driver_version, false);
        csv_field(l->cuda_version, true);
        printf("\nDevice Index,Device Minor,Model,Brand,GPU UUID,Bus Location,Architecture\n");
        for (size_t i = 0; i < l->n; i++) {
                const struct gh_gpu *g = &l->gpus[i];
                printf("%u,%u,", g->index, g->minor);
                csv_field(g->model, false);
                csv_field(g->brand, false);
                csv_field(g->uuid, false);
                csv_field(g->busid, false);
                csv_field(g->arch, true);
                nmigs += g->nmigs;
        }
        if (nmigs == 0)
                return;
        printf("\nDevice Index,MIG Index,GPU Instance ID,Compute Instance ID,MIG UUID\n");
        for (size_t i = 0; i < l->n; i++) {
                for (size_t m = 0; m < l->gpus[i].nmigs; m++) {
                        const struct gh_mig *mig = &l->gpus[i].migs[m];
                        printf("%u,%u,%u,%u,", l->gpus[i].index, mig->index, mig->gi, mig->ci);
                        csv_field(mig->uuid, true);
                }
        }
}

static json_t *nvml_string(const struct gh_gpu_list *l, const char *s)
{
        return l->from_nvml ? json_string(s) : json_null();
}

static int print_json(const struct gh_gpu_list *l)
{
        json_t *root = json_object(), *gpus = json_array();

        json_object_set_new(root, "nvrm_version", json_string(l->driver_version));
        json_object_set_new(root, "cuda_version", l->cuda_version[0] ? json_string(l->cuda_version) : json_null());
        json_object_set_new(root, "source", json_string(gh_gpus_origin_name(l->origin)));
        for (size_t i = 0; i < l->n; i++) {
                const struct gh_gpu *g = &l->gpus[i];
                json_t *o = json_object(), *migs = json_array();
                json_object_set_new(o, "index", json_integer(g->index));
                json_object_set_new(o, "minor", json_integer(g->minor));
                json_object_set_new(o, "model", json_string(g->model));
                json_object_set_new(o, "brand", nvml_string(l, g->brand));
                json_object_set_new(o, "uuid", json_string(g->uuid));
                json_object_set_new(o, "bus_location", json_string(g->busid));
                json_object_set_new(o, "architecture", nvml_string(l, g->arch));
                json_object_set_new(o, "mig_enabled", l->from_nvml ? json_boolean(g->mig_enabled) : json_null());
                for (size_t m = 0; m < g->nmigs; m++) {
                        const struct gh_mig *mig = &g->migs[m];
                        json_t *mo = json_object();
                        json_object_set_new(mo, "index", json_integer(mig->index));
                        json_object_set_new(mo, "gpu_instance", json_integer(mig->gi));
                        json_object_set_new(mo, "compute_instance", json_integer(mig->ci));
                        json_object_set_new(mo, "uuid", json_string(mig->uuid));
                        json_object_set_new(mo, "gi_cap_minor",
                                            mig->has_caps ? json_integer(mig->gi_cap_minor) : json_null());
                        json_object_set_new(mo, "ci_cap_minor",
                                            mig->has_caps ? json_integer(mig->ci_cap_minor) : json_null());
                        json_array_append_new(migs, mo);
                }
                json_object_set_new(o, "mig_devices", migs);
                json_array_append_new(gpus, o);
        }
        json_object_set_new(root, "gpus", gpus);
        return gh_json_print(root);
}

int cmd_info(int argc, char **argv, const struct cli_globals *g)
{
        static const struct option opts[] = {
                { "csv", no_argument, NULL, 'c' },
                { "json", no_argument, NULL, 'j' },
                { "nvml", no_argument, NULL, 'N' },
                { "fast", no_argument, NULL, 'F' },
                { "timeout", required_argument, NULL, 't' },
                { "help", no_argument, NULL, 'h' },
                { "no-cache", no_argument, NULL, 'n' },
                { "cuda-only", no_argument, NULL, 'U' },
                { NULL, 0, NULL, 0 },
        };
        struct gh_gpus_opts gopts = GH_GPUS_OPTS_DEFAULT;
        _cleanup_gpu_list_ struct gh_gpu_list list = { 0 };
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_close_ int rootfd = -1;
        enum format format = FORMAT_TEXT;
        bool no_cache = false;
        char version[GH_VERSION_MAX];
        int c;

        while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
                switch (c) {
                case 'c': format = FORMAT_CSV; break;
                case 'j': format = FORMAT_JSON; break;
                case 'N': gopts.source = GH_GPUS_NVML; break;
                case 'F': gopts.source = GH_GPUS_FAST; break;
                case 'n': no_cache = true; break;
                case 'U': gopts.source = GH_GPUS_CUDA; break;
                case 't': {
                        char *end;
                        long s = strtol(optarg, &end, 10);
                        if (*optarg == '\0' || *end != '\0' || s < 1 || s > 3600) {
                                fprintf(stderr, "gpu-cli: info: --timeout '%s' must be 1..3600 seconds\n", optarg);
                                return GH_EXIT_USAGE;
                        }
                        gopts.timeout_ms = (int) s * 1000;
                        break;
                }
                case 'h': usage(stdout); return GH_EXIT_OK;
                default: usage(stderr); return GH_EXIT_USAGE;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "gpu-cli: info: unexpected argument '%s'; see 'gpu-cli info --help'\n", argv[optind]);
                return GH_EXIT_USAGE;
        }
        gopts.uid = g->uid;
        gopts.gid = g->gid;
        gopts.state_file = no_cache ? NULL : g->state_file;
        gopts.cache = &gh_statecache;
        rootfd = gh_driver_root_open(g->root, &err);
        if (rootfd < 0) {
                fprintf(stderr, "gpu-cli: info: %s; check --root\n", err->msg);
                return gh_error_exit_status(err);
        }
        /* No driver at all is its own exit status, and needs no service to find out. */
        if (gh_gpus_driver_version(rootfd, version, sizeof(version), &err) < 0) {
                fprintf(stderr, "gpu-cli: info: %s\n", err->msg);
                return gh_error_exit_status(err);
        }
        if (gh_gpus_load(rootfd, &gopts, &list, &err) < 0) {
                fprintf(stderr, "gpu-cli: info: %s%s\n", err->msg,
                        gopts.source == GH_GPUS_NVML
                                ? "; check the driver with nvidia-smi, or use 'gpu-cli info --fast'"
                                : "");
                return GH_EXIT_FAILURE;
        }
        switch (format) {
        case FORMAT_CSV: print_csv(&list); break;
        case FORMAT_JSON:
                if (print_json(&list) < 0) {
                        fprintf(stderr, "gpu-cli: info: out of memory writing JSON\n");
                        return GH_EXIT_FAILURE;
                }
                break;
        case FORMAT_TEXT:
        default: print_text(&list); break;
        }
        if (fflush(stdout) != 0) {
                fprintf(stderr, "gpu-cli: info: writing the output: %m\n");
                return GH_EXIT_FAILURE;
        }
        return GH_EXIT_OK;
}
