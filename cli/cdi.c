/* gpu-cli cdi generate|list: CDI specs (lib/ops/cdi.c builds them from the plan). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
#include "file.h"
#include "json.h"
#include "log.h"
#include "mps.h"
#include "oci.h"
#include "plan.h"
#include "readfile.h"
#include "strutil.h"

static void generate_usage(FILE *out)
{
        fprintf(out,
                "Usage: gpu-cli [--root=DIR] [--ldcache=FILE] [--user=UID[:GID]] cdi generate [OPTIONS]\n"
                "\n"
                "Writes a CDI spec for the driver under --root: one device per GPU (by index and/or UUID), per\n"
                "MIG device (GPU:MIG and/or MIG UUID) and \"all\"; use it as podman run --device nvidia.com/gpu=0.\n"
                "Every device's files are those `gpu-cli configure` would inject for the same request.\n"
                "\n"
                "  -o, --output=FILE          where to write it (\"-\": stdout); default /etc/cdi/VENDOR-CLASS.json,\n"
                "                             written atomically, mode 0644\n"
                "      --vendor=NAME          default nvidia.com\n"
                "      --class=NAME           default gpu\n"
                "      --device-name-strategy=index|uuid|index,uuid   default index,uuid\n"
                "      --capabilities=LIST    driver capabilities whose files every device gets (as\n"
                "                             NVIDIA_DRIVER_CAPABILITIES; default all)\n"
                "      --layout=debian|lib64  the container's library directory (default debian:\n"
                "                             /usr/lib/x86_64-linux-gnu; found through the ld cache in any image)\n"
                "      --hook-path=PATH       the gpu-cli the spec's createContainer hook runs (default: this one)\n"
                "      --check=FILE           do not write: exit 0 when FILE equals what would be written now,\n"
                "                             1 with the first difference when it is stale (e.g. a new driver)\n"
                "      --mps-group=NAME       a spec for the running MPS group NAME only: one device, mps-NAME,\n"
                "                             a complete GPU container in the group (its GPU, its pipe directory\n"
                "                             and /dev/shm); default output /var/run/cdi/VENDOR-CLASS-mps-NAME.json\n"
                "      --mps-dir=DIR          where MPS groups live (default " GH_MPS_DEFAULT_DIR ")\n"
                "\n"
                "The spec is JSON, which every CDI reader accepts as YAML.  cdiVersion is the lowest that\n"
                "has what it uses (0.5.0 with index names), so podman 4.3 and later load it.\n"
                "\n"
                "Exit status: 0 success, 1 failure (or a stale spec with --check), 2 usage error,\n"
                "3 no driver found under --root.\n");
}

static void list_usage(FILE *out)
{
        fprintf(out, "Usage: gpu-cli cdi list [--json] [FILE...]\n"
                     "\n"
                     "Prints the fully qualified device names (VENDOR/CLASS=NAME) the CDI specs offer: FILEs, or the\n"
                     "JSON specs in /etc/cdi and /var/run/cdi.  --json: {\"devices\": [{\"name\", \"spec\"}]}.\n"
                     "\n"
                     "Exit status: 0 success, 1 failure, 2 usage error.\n");
}

static void cdi_usage(FILE *out)
{
        fprintf(out, "Usage: gpu-cli [GLOBAL OPTIONS] cdi generate|list [OPTIONS]\n"
                     "\n"
                     "  generate   write a CDI spec for this driver (see 'gpu-cli cdi generate --help')\n"
                     "  list       the device names CDI specs offer (see 'gpu-cli cdi list --help')\n");
}

int cli_self_path(char *buf, size_t size)
{
        ssize_t n = readlink("/proc/self/exe", buf, size - 1);

        if (n <= 0)
                return -1;
        buf[n] = '\0';
        return 0;
}

static int parse_names(const char *s, unsigned *names)
{
        if (strcmp(s, "index") == 0)
                *names = GH_CDI_NAME_INDEX;
        else if (strcmp(s, "uuid") == 0)
                *names = GH_CDI_NAME_UUID;
        else if (strcmp(s, "index,uuid") == 0 || strcmp(s, "uuid,index") == 0)
                *names = GH_CDI_NAME_INDEX | GH_CDI_NAME_UUID;
        else
                return -1;
        return 0;
}

static int cdi_generate(int argc, char **argv, const struct cli_globals *g)
{
        enum {
                OPT_VENDOR = 0x100,
                OPT_CLASS,
                OPT_NAMES,
                OPT_CAPS,
                OPT_LAYOUT,
                OPT_HOOK_PATH,
                OPT_CHECK,
                OPT_MPS_GROUP,
                OPT_MPS_DIR
        };
        static const struct option opts[] = {
                { "output", required_argument, NULL, 'o' },
                { "vendor", required_argument, NULL, OPT_VENDOR },
                { "class", required_argument, NULL, OPT_CLASS },
                { "device-name-strategy", required_argument, NULL, OPT_NAMES },
                { "capabilities", required_argument, NULL, OPT_CAPS },
                { "layout", required_argument, NULL, OPT_LAYOUT },
                { "hook-path", required_argument, NULL, OPT_HOOK_PATH },
                { "check", required_argument, NULL, OPT_CHECK },
                { "mps-group", required_argument, NULL, OPT_MPS_GROUP },
                { "mps-dir", required_argument, NULL, OPT_MPS_DIR },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        struct gh_cdi_opts o = {
                .root = g->root,
                .ldcache = g->ldcache,
                .vendor = "nvidia.com",
                .class_ = "gpu",
                .names = GH_CDI_NAME_INDEX | GH_CDI_NAME_UUID,
                .caps = GH_CAP_ALL,
                .uid = g->uid,
                .gid = g->gid,
        };
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_json_ json_t *spec = NULL, *old = NULL;
        _cleanup_free_ char *text = NULL, *why = NULL, *output = NULL;
        const char *layout = "debian", *check = NULL;
        char self[PATH_MAX];
        int c;

        while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
                switch (c) {
                case 'o':
                        free(output);
                        output = strdup(optarg);
                        break;
                case OPT_VENDOR: o.vendor = optarg; break;
                case OPT_CLASS: o.class_ = optarg; break;
                case OPT_NAMES:
                        if (parse_names(optarg, &o.names) < 0) {
                                fprintf(stderr,
                                        "gpu-cli: cdi generate: --device-name-strategy '%s': use index, uuid or index,uuid\n",
                                        optarg);
                                return GH_EXIT_USAGE;
                        }
                        break;
                case OPT_CAPS:
                        if (gh_capability_parse(optarg, GH_CAP_ALL, &o.caps, &err) < 0) {
                                fprintf(stderr, "gpu-cli: cdi generate: --capabilities: %s\n", err->msg);
                                return GH_EXIT_USAGE;
                        }
                        break;
                case OPT_LAYOUT: layout = optarg; break;
                case OPT_HOOK_PATH:
                        if (optarg[0] != '/') {
                                fprintf(stderr, "gpu-cli: cdi generate: --hook-path '%s' must be an absolute path\n",
                                        optarg);
                                return GH_EXIT_USAGE;
                        }
                        o.hook_path = optarg;
                        break;
                case OPT_CHECK: check = optarg; break;
                case OPT_MPS_GROUP: o.mps_group = optarg; break;
                case OPT_MPS_DIR:
                        if (optarg[0] != '/') {
                                fprintf(stderr, "gpu-cli: cdi generate: --mps-dir '%s' must be an absolute path\n",
                                        optarg);
                                return GH_EXIT_USAGE;
                        }
                        o.mps_dir = optarg;
                        break;
                case 'h': generate_usage(stdout); return GH_EXIT_OK;
                default: generate_usage(stderr); return GH_EXIT_USAGE;
                }
        }
        if (optind != argc) {
                fprintf(stderr, "gpu-cli: cdi generate: unexpected argument '%s'; see 'gpu-cli cdi generate --help'\n",
                        argv[optind]);
                return GH_EXIT_USAGE;
        }
        if (o.mps_dir != NULL && o.mps_group == NULL) {
                fprintf(stderr, "gpu-cli: cdi generate: --mps-dir is for a group's spec: give --mps-group=NAME too\n");
                return GH_EXIT_USAGE;
        }
        if (gh_layout_named(layout, &o.layout, &err) < 0 || gh_cdi_check_kind(o.vendor, o.class_, &err) < 0 ||
            (o.mps_group && gh_cdi_check_mps_name(o.mps_group, &err) < 0)) {
                fprintf(stderr, "gpu-cli: cdi generate: %s\n", err->msg);
                return GH_EXIT_USAGE;
        }
        if (o.hook_path == NULL) {
                if (cli_self_path(self, sizeof(self)) < 0) {
                        fprintf(stderr,
                                "gpu-cli: cdi generate: cannot find our own path (%m); pass --hook-path=/usr/bin/gpu-cli\n");
                        return GH_EXIT_FAILURE;
                }
                o.hook_path = self;
        }
        if (output == NULL && (output = gh_cdi_default_path(o.vendor, o.class_, o.mps_group)) == NULL)
                return GH_EXIT_FAILURE;

        if (gh_cdi_generate(&o, &spec, &err) < 0) {
                fprintf(stderr, "gpu-cli: cdi generate: %s\n", err && err->msg ? err->msg : "failed");
                return gh_error_exit_status(err);
        }
        if (check != NULL) {
                if (gh_cdi_read(check, &old, &err) < 0) {
                        fprintf(stderr, "gpu-cli: cdi generate --check: %s\n", err->msg);
                        return GH_EXIT_FAILURE;
                }
                if (!gh_cdi_same(spec, old, &why)) {
                        fprintf(stderr,
                                "gpu-cli: cdi generate --check: %s is stale: %s; write it again with 'gpu-cli cdi generate --output=%s'\n",
                                check, why ? why : "it differs", check);
                        return GH_EXIT_FAILURE;
                }
                printf("%s is current\n", check);
                return GH_EXIT_OK;
        }
        text = gh_cdi_text(spec);
        if (text == NULL) {
                fprintf(stderr, "gpu-cli: cdi generate: out of memory\n");
                return GH_EXIT_FAILURE;
        }
        if (strcmp(output, "-") == 0) {
                if (fputs(text, stdout) == EOF || fflush(stdout) == EOF) {
                        fprintf(stderr, "gpu-cli: cdi generate: writing to stdout: %m\n");
                        return GH_EXIT_FAILURE;
                }
                return GH_EXIT_OK;
        }
        if (gh_cdi_write(spec, output, NULL, &err) < 0) {
                fprintf(stderr, "gpu-cli: cdi generate: %s\n", err->msg);
                return GH_EXIT_FAILURE;
        }
        gh_debug("CDI spec %s: %zu devices, cdiVersion %s", output, json_array_size(json_object_get(spec, "devices")),
                 json_string_value(json_object_get(spec, "cdiVersion")));
        return GH_EXIT_OK;
}

static int cdi_list(int argc, char **argv)
{
        static const struct option opts[] = {
                { "json", no_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        _cleanup_error_ gh_error_t err = NULL;
        json_t *devices = NULL, *d;
        bool json = false;
        size_t i;
        int c;

        while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
                switch (c) {
                case 'j': json = true; break;
                case 'h': list_usage(stdout); return GH_EXIT_OK;
                default: list_usage(stderr); return GH_EXIT_USAGE;
                }
        }
        if (gh_cdi_list(optind < argc ? (const char *const *) argv + optind : NULL, &devices, &err) < 0) {
                fprintf(stderr, "gpu-cli: cdi list: %s\n", err->msg);
                return gh_error_exit_status(err);
        }
        if (json)
                return gh_json_print(json_pack("{s:o}", "devices", devices)) < 0 ? GH_EXIT_FAILURE : GH_EXIT_OK;
        json_array_foreach (devices, i, d)
                printf("%s\n", json_string_value(json_object_get(d, "name")));
        json_decref(devices);
        return GH_EXIT_OK;
}

int cmd_cdi(int argc, char **argv, const struct cli_globals *g)
{
        if (argc < 2) {
                cdi_usage(stderr);
                return GH_EXIT_USAGE;
        }
        if (strcmp(argv[1], "generate") == 0)
                return cdi_generate(argc - 1, argv + 1, g);
        if (strcmp(argv[1], "list") == 0)
                return cdi_list(argc - 1, argv + 1);
        if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
                cdi_usage(stdout);
                return GH_EXIT_OK;
        }
        fprintf(stderr, "gpu-cli: cdi: unknown command '%s'; use generate or list\n", argv[1]);
        return GH_EXIT_USAGE;
}
