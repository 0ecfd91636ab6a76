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
#include <time.h>
#include <unistd.h>

#include "capability.h"
#include "cdi-specs.h"
#include "cdi.h"
#include "cleanup.h"
#include "discover.h"
#include "doctor.h"
#include "gpus.h"
#include "cli.h"
#include "json.h"
#include "log.h"
#include "mps.h"
#include "oci.h"
#include "plan.h"
#include "readfile.h"
#include "rootfs.h"

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
                "      --hook-path=PATH       the program the spec's createContainer hook runs as gpu-cli cdi-hook\n"
                "                             (default: gpu-cdi-hook beside this gpu-cli or installed, else this one)\n"
                "      --check=FILE           do not write: exit 0 when FILE equals what would be written now,\n"
                "                             1 with the first difference when it is stale (e.g. a new driver)\n"
                "      --mps-group=NAME       a spec for the running MPS group NAME only: one device, mps-NAME,\n"
                "                             a complete GPU container in the group (its GPU, its pipe directory\n"
                "                             and /dev/shm); default output /var/run/cdi/VENDOR-CLASS-mps-NAME.json\n"
                "      --mps-dir=DIR          where MPS groups live (default " GH_MPS_DEFAULT_DIR ")\n"
                "      --mounts=spec|hook     where the driver's read-only files are mounted from: the spec's\n"
                "                             \"mounts\" (default; the runtime mounts them) or the\n"
                "                             createContainer hook's --mount arguments (faster starts;\n"
                "                             docs/cdi.md); cdi refresh keeps the replaced spec's choice\n"
                "      --check-requirements[=yes|no]  the hook refuses a container whose image's\n"
                "                             NVIDIA_REQUIRE_* the driver does not meet, as gpu-hook does\n"
                "                             (default no; cdi refresh keeps the replaced spec's choice)\n"
                "\n"
                "The spec is JSON, which every CDI reader accepts as YAML.  cdiVersion is the lowest that\n"
                "has what it uses (0.5.0 with index names), so podman 4.3 and later load it.\n"
                "\n"
                "Exit status: 0 success, 1 failure (or a stale spec with --check), 2 usage error,\n"
                "3 no driver found under --root.\n");
}

static void list_usage(FILE *out)
{
        fprintf(out,
                "Usage: gpu-cli [--root=DIR] cdi list [--json|--quiet] [--cdi-dir=DIR]... [FILE...]\n"
                "\n"
                "Every device the CDI specs offer, whoever wrote them, as a runtime resolves them: the .json\n"
                "and .yaml files in /etc/cdi and /var/run/cdi (or each --cdi-dir, in order; a later directory\n"
                "wins), or the FILEs.  A table DEVICE (VENDOR/CLASS=NAME), WRITER (gpu-hook, gpu-hook-mps,\n"
                "nvidia-ctk, device-plugin, dra-driver, unknown), STATE and SPEC.  STATE: ok; stale (the spec\n"
                "names another driver version than the loaded one, a device number or a host path this host\n"
                "does not have); no-hook (a hook program the spec runs is missing or cannot run: its\n"
                "containers fail to start); overridden (a later directory's spec defines it again); conflict (two specs of\n"
                "one directory define it: runtimes refuse it).  Why a spec is stale and the command that\n"
                "writes it again, and specs that cannot be read, are said on stderr, one line each.\n"
                "\n"
                "  --json     {\"devices\": [{name, spec, writer, state}], \"specs\": [{path, priority, kind,\n"
                "             writer, devices, error, stale, fix, hook_error}]}\n"
                "  --quiet    only the names of the devices a runtime can use, one a line\n"
                "\n"
                "Exit status: 0 success, 1 a FILE is not a readable CDI spec, 2 usage error.\n");
}

static void cdi_usage(FILE *out)
{
        fprintf(out,
                "Usage: gpu-cli [GLOBAL OPTIONS] cdi generate|refresh|list [OPTIONS]\n"
                "\n"
                "  generate   write a CDI spec for this driver (see 'gpu-cli cdi generate --help')\n"
                "  refresh    write it again once the driver is loaded, when it is stale ('cdi refresh --help')\n"
                "  list       the devices of every CDI spec, who wrote it, whether it is stale ('cdi list --help')\n");
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

static void refresh_usage(FILE *out)
{
        fprintf(out, "Usage: gpu-cli [--root=DIR] cdi refresh [--wait=SECONDS] [--output=FILE] [OPTIONS]\n"
                     "\n"
                     "Writes the CDI spec again when it is missing or stale, once the NVIDIA driver is really\n"
                     "loaded: /proc/driver/nvidia/version, the GPUs, /dev/nvidiactl and each GPU's /dev/nvidiaN with\n"
                     "their numbers, and libnvidia-ml.so.1 of the module's version in the ld cache.  Until then it\n"
                     "waits, at most --wait seconds (default 60), and then gives up with one line, writing nothing.\n"
                     "The systemd unit gpu-hook-cdi-refresh.service runs it at boot and, through a udev rule,\n"
                     "whenever the nvidia module is loaded or a GPU is bound to it.\n"
                     "\n"
                     "      --wait=SECONDS         how long to wait for the driver (default 60, at most 3600)\n"
                     "  -o, --output=FILE          default /etc/cdi/VENDOR-CLASS.json\n"
                     "      --vendor=NAME, --class=NAME, --device-name-strategy=NAMES, --capabilities=LIST,\n"
                     "      --layout=LAYOUT, --hook-path=PATH, --mounts=spec|hook, --check-requirements[=yes|no]\n"
                     "                             as for 'gpu-cli cdi generate'; the last two default to\n"
                     "                             the choice of the spec it replaces\n"
                     "\n"
                     "Exit status: 0 written or already current, 1 the driver did not become ready or writing\n"
                     "failed, 2 usage error.\n");
}

static const char *driver_version_of(const struct cli_globals *g)
{
        static char version[GH_VERSION_MAX];
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_close_ int rootfd = gh_driver_root_open(g->root, &err);

        if (rootfd < 0 || gh_gpus_driver_version(rootfd, version, sizeof(version), &err) < 0)
                snprintf(version, sizeof(version), "unknown");
        return version;
}

/* Polls until the driver is ready for a spec (gh_doctor_driver_ready), at most wait_s seconds;
 * then one line says what was still missing. */
static int wait_ready(const struct cli_globals *g, long wait_s, const char *output)
{
        struct timespec start, now;
        char why[512];

        clock_gettime(CLOCK_MONOTONIC, &start);
        for (;;) {
                if (gh_doctor_driver_ready(g->root, g->ldcache, why, sizeof(why)))
                        return 0;
                clock_gettime(CLOCK_MONOTONIC, &now);
                long ms = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
                if (ms >= wait_s * 1000) {
                        fprintf(stderr,
                                "gpu-cli: cdi refresh: the NVIDIA driver is not ready after %ld s (%s); %s left as it "
                                "was\n",
                                wait_s, why, output);
                        return -1;
                }
                nanosleep(&(struct timespec) { .tv_nsec = 250 * 1000 * 1000 }, NULL);
        }
}

static int cdi_generate(int argc, char **argv, const struct cli_globals *g, bool refresh)
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
                OPT_MPS_DIR,
                OPT_WAIT,
                OPT_MOUNTS,
                OPT_CHECK_REQUIREMENTS
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
                { "wait", required_argument, NULL, OPT_WAIT },
                { "mounts", required_argument, NULL, OPT_MOUNTS },
                { "check-requirements", optional_argument, NULL, OPT_CHECK_REQUIREMENTS },
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
        long wait_s = 60;
        bool mounts_given = false, require_given = false;
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
                case OPT_MOUNTS:
                        if (strcmp(optarg, "spec") != 0 && strcmp(optarg, "hook") != 0) {
                                fprintf(stderr, "gpu-cli: cdi: --mounts='%s': use spec or hook\n", optarg);
                                return GH_EXIT_USAGE;
                        }
                        o.hook_mounts = strcmp(optarg, "hook") == 0;
                        mounts_given = true;
                        break;
                case OPT_CHECK_REQUIREMENTS:
                        if (optarg != NULL && strcmp(optarg, "yes") != 0 && strcmp(optarg, "no") != 0) {
                                fprintf(stderr, "gpu-cli: cdi: --check-requirements='%s': use yes or no\n", optarg);
                                return GH_EXIT_USAGE;
                        }
                        o.check_requirements = optarg == NULL || strcmp(optarg, "yes") == 0;
                        require_given = true;
                        break;
                case OPT_WAIT: {
                        char *end;
                        wait_s = strtol(optarg, &end, 10);
                        if (!refresh || *end != '\0' || wait_s < 0 || wait_s > 3600) {
                                fprintf(stderr, "gpu-cli: cdi: --wait='%s': %s\n", optarg,
                                        refresh ? "give seconds, 0 to 3600" : "only cdi refresh waits");
                                return GH_EXIT_USAGE;
                        }
                        break;
                }
                case 'h': (refresh ? refresh_usage : generate_usage)(stdout); return GH_EXIT_OK;
                default: (refresh ? refresh_usage : generate_usage)(stderr); return GH_EXIT_USAGE;
                }
        }
        if (optind != argc) {
                fprintf(stderr, "gpu-cli: cdi generate: unexpected argument '%s'; see 'gpu-cli cdi generate --help'\n",
                        argv[optind]);
                return GH_EXIT_USAGE;
        }
        if (refresh && (check != NULL || o.mps_group != NULL)) {
                fprintf(stderr, "gpu-cli: cdi refresh: --check and --mps-group are for cdi generate\n");
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
                if (cli_cdi_hook_path(self, sizeof(self)) < 0) {
                        fprintf(stderr,
                                "gpu-cli: cdi generate: cannot find our own path (%m); pass --hook-path=/usr/bin/gpu-cli\n");
                        return GH_EXIT_FAILURE;
                }
                o.hook_path = self;
        }
        if (output == NULL && (output = gh_cdi_default_path(o.vendor, o.class_, o.mps_group)) == NULL)
                return GH_EXIT_FAILURE;

        if (refresh && strcmp(output, "-") != 0 && wait_ready(g, wait_s, output) < 0)
                return GH_EXIT_FAILURE;
        /* refresh writes the spec it replaces again: where its mounts were, unless told otherwise. */
        if (refresh && !(mounts_given && require_given) && strcmp(output, "-") != 0 && access(output, F_OK) == 0) {
                _cleanup_error_ gh_error_t rerr = NULL;
                _cleanup_json_ json_t *prev = NULL;
                if (gh_cdi_spec_read(output, &prev, &rerr) == 0) {
                        if (!mounts_given)
                                o.hook_mounts = gh_cdi_spec_hook_mounts(prev);
                        if (!require_given)
                                o.check_requirements = gh_cdi_spec_checks_requirements(prev);
                }
        }
        if (gh_cdi_generate(&o, &spec, &err) < 0) {
                fprintf(stderr, "gpu-cli: cdi generate: %s\n", err && err->msg ? err->msg : "failed");
                return gh_error_exit_status(err);
        }
        if (check != NULL) {
                if (gh_cdi_spec_read(check, &old, &err) < 0) {
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
        if (refresh && strcmp(output, "-") != 0 && access(output, F_OK) == 0) {
                _cleanup_error_ gh_error_t rerr = NULL;
                if (gh_cdi_spec_read(output, &old, &rerr) == 0 && gh_cdi_same(spec, old, &why)) {
                        printf("%s is current (driver %s)\n", output, driver_version_of(g));
                        return GH_EXIT_OK;
                }
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
        if (refresh)
                printf("wrote %s (%zu devices, driver %s)%s%s\n", output,
                       json_array_size(json_object_get(spec, "devices")), driver_version_of(g),
                       why ? ": it was stale: " : "", why ? why : "");
        return GH_EXIT_OK;
}

static const char *device_state(const struct gh_cdi_set *set, const struct gh_cdi_device *d)
{
        return d->state == GH_CDI_DEVICE_CONFLICT     ? "conflict"
               : d->state == GH_CDI_DEVICE_OVERRIDDEN ? "overridden"
               : set->specs[d->spec].hook             ? "no-hook"
               : set->specs[d->spec].stale            ? "stale"
                                                      : "ok";
}

static void print_conflict(const struct gh_cdi_set *set, size_t a, size_t b, const char *first, size_t count, void *ctx)
{
        _cleanup_free_ char *pa = gh_cdi_printable(set->specs[a].path, PATH_MAX);
        _cleanup_free_ char *pb = gh_cdi_printable(set->specs[b].path, PATH_MAX);

        (void) ctx;
        fprintf(stderr,
                "gpu-cli: cdi list: %s and %s, of the same priority, both define %s%s%.0zu%s: runtimes refuse %s; "
                "remove one of the two\n",
                pa ? pa : "?", pb ? pb : "?", first, count > 1 ? " and " : "", count > 1 ? count - 1 : 0,
                count > 1 ? " more" : "", count > 1 ? "them" : "it");
}

/* One line per spec that a user has to do something about, on stderr. */
static void list_problems(const struct gh_cdi_set *set)
{
        for (size_t i = 0; i < set->nspecs; i++) {
                const struct gh_cdi_spec *sp = &set->specs[i];
                _cleanup_free_ char *p = gh_cdi_printable(sp->path, PATH_MAX);
                if (sp->error)
                        fprintf(stderr, "gpu-cli: cdi list: skipped: %s\n", sp->error);
                else if (sp->stale)
                        fprintf(stderr, "gpu-cli: cdi list: %s (%s) is stale: %s; %s\n", p ? p : "?",
                                gh_cdi_writer_name(sp->writer), sp->stale, sp->fix ? sp->fix : "write it again");
                if (sp->hook)
                        fprintf(stderr,
                                "gpu-cli: cdi list: %s (%s): its hook cannot run: %s; install that program or write "
                                "the spec again\n",
                                p ? p : "?", gh_cdi_writer_name(sp->writer), sp->hook);
        }
        gh_cdi_set_conflicts(set, print_conflict, NULL);
}

static json_t *list_json(const struct gh_cdi_set *set)
{
        json_t *devices = json_array(), *specs = json_array();

        for (size_t i = 0; devices && i < set->ndevices; i++) {
                const struct gh_cdi_device *d = &set->devices[i];
                const struct gh_cdi_spec *sp = &set->specs[d->spec];
                json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "name", d->name, "spec", sp->path, "writer",
                                      gh_cdi_writer_name(sp->writer), "state", device_state(set, d));
                if (o && d->state != GH_CDI_DEVICE_OK)
                        json_object_set_new(o, d->state == GH_CDI_DEVICE_CONFLICT ? "conflicts_with" : "overridden_by",
                                            json_string(set->specs[d->other].path));
                if (o == NULL || json_array_append_new(devices, o) < 0) {
                        json_decref(devices);
                        devices = NULL;
                }
        }
        for (size_t i = 0; specs && i < set->nspecs; i++) {
                const struct gh_cdi_spec *sp = &set->specs[i];
                const char *kind = sp->doc ? json_string_value(json_object_get(sp->doc, "kind")) : NULL;
                json_t *o = json_pack("{s:s, s:i, s:s?, s:s, s:I, s:s?, s:s?, s:s?, s:s?}", "path", sp->path,
                                      "priority", sp->priority, "kind", kind, "writer", gh_cdi_writer_name(sp->writer),
                                      "devices", (json_int_t) sp->ndevices, "error", sp->error, "stale", sp->stale,
                                      "fix", sp->fix, "hook_error", sp->hook);
                if (o == NULL || json_array_append_new(specs, o) < 0) {
                        json_decref(specs);
                        specs = NULL;
                }
        }
        return json_pack("{s:o?, s:o?}", "devices", devices, "specs", specs);
}

static void list_table(const struct gh_cdi_set *set)
{
        int w = (int) strlen("DEVICE"), ww = (int) strlen("device-plugin");

        for (size_t i = 0; i < set->ndevices; i++)
                if ((int) strlen(set->devices[i].name) > w)
                        w = (int) strlen(set->devices[i].name);
        printf("%-*s  %-*s  %-10s  %s\n", w, "DEVICE", ww, "WRITER", "STATE", "SPEC");
        for (size_t i = 0; i < set->ndevices; i++) {
                const struct gh_cdi_device *d = &set->devices[i];
                _cleanup_free_ char *p = gh_cdi_printable(set->specs[d->spec].path, PATH_MAX);
                printf("%-*s  %-*s  %-10s  %s\n", w, d->name, ww, gh_cdi_writer_name(set->specs[d->spec].writer),
                       device_state(set, d), p ? p : "?");
        }
}

static int cdi_list(int argc, char **argv, const struct cli_globals *g)
{
        static const struct option opts[] = {
                { "json", no_argument, NULL, 'j' },
                { "quiet", no_argument, NULL, 'q' },
                { "cdi-dir", required_argument, NULL, 'd' },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_free_ const char **dirs = calloc((size_t) argc + 1, sizeof(*dirs));
        struct gh_cdi_set set;
        char version[GH_VERSION_MAX];
        bool json = false, quiet = false, have_version = false;
        size_t ndirs = 0;
        int c, r = GH_EXIT_OK;

        if (dirs == NULL)
                return GH_EXIT_FAILURE;
        while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
                switch (c) {
                case 'j': json = true; break;
                case 'q': quiet = true; break;
                case 'd': dirs[ndirs++] = optarg; break;
                case 'h': list_usage(stdout); return GH_EXIT_OK;
                default: list_usage(stderr); return GH_EXIT_USAGE;
                }
        }
        {
                _cleanup_error_ gh_error_t verr = NULL;
                _cleanup_close_ int rootfd = gh_driver_root_open(g->root, &verr);
                have_version = rootfd >= 0 && gh_gpus_driver_version(rootfd, version, sizeof(version), &verr) == 0;
        }
        if (gh_cdi_set_load(ndirs ? dirs : gh_cdi_spec_dirs, optind < argc ? (const char *const *) argv + optind : NULL,
                            have_version ? version : NULL, &set, &err) < 0) {
                fprintf(stderr, "gpu-cli: cdi list: %s\n", err->msg);
                return GH_EXIT_FAILURE;
        }
        /* files named one by one must each be a spec */
        for (size_t i = 0; optind < argc && i < set.nspecs; i++)
                if (set.specs[i].error)
                        r = GH_EXIT_FAILURE;
        if (json) {
                if (gh_json_print(list_json(&set)) < 0)
                        r = GH_EXIT_FAILURE;
        } else if (quiet) {
                for (size_t i = 0; i < set.ndevices; i++)
                        if (set.devices[i].state == GH_CDI_DEVICE_OK && set.specs[set.devices[i].spec].hook == NULL)
                                printf("%s\n", set.devices[i].name);
        } else {
                list_table(&set);
        }
        list_problems(&set);
        gh_cdi_set_free(&set);
        return r;
}

int cmd_cdi(int argc, char **argv, const struct cli_globals *g)
{
        if (argc < 2) {
                cdi_usage(stderr);
                return GH_EXIT_USAGE;
        }
        if (strcmp(argv[1], "generate") == 0)
                return cdi_generate(argc - 1, argv + 1, g, false);
        if (strcmp(argv[1], "refresh") == 0)
                return cdi_generate(argc - 1, argv + 1, g, true);
        if (strcmp(argv[1], "list") == 0)
                return cdi_list(argc - 1, argv + 1, g);
        if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
                cdi_usage(stdout);
                return GH_EXIT_OK;
        }
        fprintf(stderr, "gpu-cli: cdi: unknown command '%s'; use generate, refresh or list\n", argv[1]);
        return GH_EXIT_USAGE;
}
