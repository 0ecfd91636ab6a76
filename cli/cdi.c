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
#include "log.h"
#include "mps.h"
#include "oci.h"
#include "plan.h"
#include "readfile.h"

#define CDI_SPEC_MAX (64u << 20) /* a 64-GPU spec with MIG is well under a megabyte */
static const char *const spec_dirs[] = { "/etc/cdi", "/var/run/cdi" };

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

int cli_cdi_read(const char *path, json_t **out, gh_error_t *err)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        size_t len;

        *out = NULL;
        if (fd < 0)
                return gh_err(err, errno, "opening %s", path);
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return gh_err(err, errno ? errno : EINVAL, "%s is not a regular file", path);
        if (gh_read_bounded(fd, CDI_SPEC_MAX, &buf, &len, path, err) < 0)
                return -1;
        *out = gh_json_parse(buf, len, path, err);
        if (*out == NULL)
                return -1;
        if (!json_is_object(*out) || !json_is_string(json_object_get(*out, "kind")) ||
            !json_is_array(json_object_get(*out, "devices"))) {
                json_decref(*out);
                *out = NULL;
                return gh_err(err, EINVAL, "%s is not a CDI spec (no \"kind\" and \"devices\")", path);
        }
        return 0;
}

/* mkdir -p for the spec directory (root-owned, 0755). */
static int make_dirs(const char *dir, gh_error_t *err)
{
        char buf[PATH_MAX];

        if (snprintf(buf, sizeof(buf), "%s", dir) >= (int) sizeof(buf))
                return gh_err(err, ENAMETOOLONG, "%s", dir);
        for (char *p = buf + 1;; p++) {
                if (*p != '/' && *p != '\0')
                        continue;
                char c = *p;
                *p = '\0';
                if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                        return gh_err(err, errno, "creating %s", buf);
                *p = c;
                if (c == '\0')
                        return 0;
        }
}

/* Writes data to path through a temp file in the same directory and rename(): a runtime reading
 * the directory sees the old spec or the new one, never half of one.  *st: the file written. */
static int write_atomic(const char *path, const char *data, size_t len, struct stat *st, gh_error_t *err)
{
        _cleanup_free_ char *copy = strdup(path), *tmp = NULL;
        _cleanup_close_ int dfd = -1, fd = -1;
        char *slash, *base;
        const char *dir;

        if (copy == NULL)
                return gh_err(err, ENOMEM, "writing %s", path);
        slash = strrchr(copy, '/');
        if (slash == NULL) {
                dir = ".";
                base = copy;
        } else {
                *slash = '\0';
                dir = slash == copy ? "/" : copy;
                base = slash + 1;
        }
        if (*base == '\0')
                return gh_err(err, EINVAL, "--output '%s' names a directory; give a file name", path);
        if (make_dirs(dir, err) < 0)
                return -1;
        dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return gh_err(err, errno, "opening %s", dir);
        /* A dot name without .json/.yaml: no CDI reader picks the temp file up. */
        if (asprintf(&tmp, ".%s.%d.tmp", base, (int) getpid()) < 0)
                return gh_err(err, ENOMEM, "writing %s", path);
        fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return gh_err(err, errno, "creating a temp file in %s", dir);
        if (fchmod(fd, 0644) < 0 || write(fd, data, len) != (ssize_t) len || fsync(fd) < 0 ||
            (st != NULL && fstat(fd, st) < 0) || renameat(dfd, tmp, dfd, base) < 0) {
                int e = errno;
                unlinkat(dfd, tmp, 0);
                return gh_err(err, e ? e : EIO, "writing %s", path);
        }
        return 0;
}

static char *spec_text(json_t *spec)
{
        char *text = json_dumps(spec, JSON_INDENT(2)), *grown;

        if (text == NULL || (grown = realloc(text, strlen(text) + 2)) == NULL) {
                free(text);
                return NULL;
        }
        return strcat(grown, "\n");
}

int cli_cdi_write(json_t *spec, const char *path, struct stat *st, gh_error_t *err)
{
        _cleanup_free_ char *text = spec_text(spec);

        if (text == NULL)
                return gh_err(err, ENOMEM, "writing %s", path);
        return write_atomic(path, text, strlen(text), st, err);
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
                                return CLI_EXIT_USAGE;
                        }
                        break;
                case OPT_CAPS:
                        if (gh_capability_parse(optarg, GH_CAP_ALL, &o.caps, &err) < 0) {
                                fprintf(stderr, "gpu-cli: cdi generate: --capabilities: %s\n", err->msg);
                                return CLI_EXIT_USAGE;
                        }
                        break;
                case OPT_LAYOUT: layout = optarg; break;
                case OPT_HOOK_PATH:
                        if (optarg[0] != '/') {
                                fprintf(stderr, "gpu-cli: cdi generate: --hook-path '%s' must be an absolute path\n",
                                        optarg);
                                return CLI_EXIT_USAGE;
                        }
                        o.hook_path = optarg;
                        break;
                case OPT_CHECK: check = optarg; break;
                case OPT_MPS_GROUP: o.mps_group = optarg; break;
                case OPT_MPS_DIR:
                        if (optarg[0] != '/') {
                                fprintf(stderr, "gpu-cli: cdi generate: --mps-dir '%s' must be an absolute path\n",
                                        optarg);
                                return CLI_EXIT_USAGE;
                        }
                        o.mps_dir = optarg;
                        break;
                case 'h': generate_usage(stdout); return CLI_EXIT_OK;
                default: generate_usage(stderr); return CLI_EXIT_USAGE;
                }
        }
        if (optind != argc) {
                fprintf(stderr, "gpu-cli: cdi generate takes no argument ('%s'); see 'gpu-cli cdi generate --help'\n",
                        argv[optind]);
                return CLI_EXIT_USAGE;
        }
        if (o.mps_dir != NULL && o.mps_group == NULL) {
                fprintf(stderr, "gpu-cli: cdi generate: --mps-dir is for a group's spec: give --mps-group=NAME too\n");
                return CLI_EXIT_USAGE;
        }
        if (gh_layout_named(layout, &o.layout, &err) < 0 || gh_cdi_check_kind(o.vendor, o.class_, &err) < 0 ||
            (o.mps_group && gh_cdi_check_mps_name(o.mps_group, &err) < 0)) {
                fprintf(stderr, "gpu-cli: cdi generate: %s\n", err->msg);
                return CLI_EXIT_USAGE;
        }
        if (o.hook_path == NULL) {
                if (cli_self_path(self, sizeof(self)) < 0) {
                        fprintf(stderr,
                                "gpu-cli: cdi generate: cannot find our own path (%m); pass --hook-path=/usr/bin/gpu-cli\n");
                        return CLI_EXIT_FAILURE;
                }
                o.hook_path = self;
        }
        if (output == NULL && o.mps_group != NULL) {
                if (asprintf(&output, CLI_CDI_MPS_SPEC_FMT, o.vendor, o.class_, o.mps_group) < 0)
                        return CLI_EXIT_FAILURE;
        } else if (output == NULL && asprintf(&output, "/etc/cdi/%s-%s.json", o.vendor, o.class_) < 0)
                return CLI_EXIT_FAILURE;

        if (gh_cdi_generate(&o, &spec, &err) < 0) {
                fprintf(stderr, "gpu-cli: cdi generate: %s\n", err && err->msg ? err->msg : "failed");
                return gh_error_exit_status(err);
        }
        if (check != NULL) {
                if (cli_cdi_read(check, &old, &err) < 0) {
                        fprintf(stderr, "gpu-cli: cdi generate --check: %s\n", err->msg);
                        return CLI_EXIT_FAILURE;
                }
                if (!gh_cdi_same(spec, old, &why)) {
                        fprintf(stderr,
                                "gpu-cli: cdi generate --check: %s is stale: %s; write it again with 'gpu-cli cdi generate --output=%s'\n",
                                check, why ? why : "it differs", check);
                        return CLI_EXIT_FAILURE;
                }
                printf("%s is current\n", check);
                return CLI_EXIT_OK;
        }
        text = spec_text(spec);
        if (text == NULL) {
                fprintf(stderr, "gpu-cli: cdi generate: out of memory\n");
                return CLI_EXIT_FAILURE;
        }
        if (strcmp(output, "-") == 0) {
                if (fputs(text, stdout) == EOF || fflush(stdout) == EOF) {
                        fprintf(stderr, "gpu-cli: cdi generate: writing to stdout: %m\n");
                        return CLI_EXIT_FAILURE;
                }
                return CLI_EXIT_OK;
        }
        if (write_atomic(output, text, strlen(text), NULL, &err) < 0) {
                fprintf(stderr, "gpu-cli: cdi generate: %s\n", err->msg);
                return CLI_EXIT_FAILURE;
        }
        gh_debug("CDI spec %s: %zu devices, cdiVersion %s", output, json_array_size(json_object_get(spec, "devices")),
                 json_string_value(json_object_get(spec, "cdiVersion")));
        return CLI_EXIT_OK;
}

static int list_file(const char *path, bool json, json_t *out, gh_error_t *err)
{
        _cleanup_json_ json_t *spec = NULL;
        json_t *d;
        size_t i;

        if (cli_cdi_read(path, &spec, err) < 0)
                return -1;
        json_array_foreach (json_object_get(spec, "devices"), i, d) {
                const char *name = json_string_value(json_object_get(d, "name"));
                _cleanup_free_ char *q = NULL;
                if (name == NULL)
                        continue;
                if (asprintf(&q, "%s=%s", json_string_value(json_object_get(spec, "kind")), name) < 0)
                        return gh_err(err, ENOMEM, "listing %s", path);
                if (!json)
                        printf("%s\n", q);
                else if (json_array_append_new(out, json_pack("{s:s, s:s}", "name", q, "spec", path)) < 0)
                        return gh_err(err, ENOMEM, "listing %s", path);
        }
        return 0;
}

static int ends_with(const char *s, const char *suffix)
{
        size_t a = strlen(s), b = strlen(suffix);
        return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int cdi_list(int argc, char **argv)
{
        static const struct option opts[] = {
                { "json", no_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        _cleanup_error_ gh_error_t err = NULL;
        json_t *devices = json_array();
        bool json = false;
        int c, r = CLI_EXIT_OK;

        while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
                switch (c) {
                case 'j': json = true; break;
                case 'h':
                        list_usage(stdout);
                        json_decref(devices);
                        return CLI_EXIT_OK;
                default:
                        list_usage(stderr);
                        json_decref(devices);
                        return CLI_EXIT_USAGE;
                }
        }
        if (devices == NULL)
                return CLI_EXIT_FAILURE;
        if (optind < argc) {
                for (int i = optind; i < argc && r == CLI_EXIT_OK; i++)
                        if (list_file(argv[i], json, devices, &err) < 0)
                                r = CLI_EXIT_FAILURE;
        } else {
                for (size_t k = 0; k < sizeof(spec_dirs) / sizeof(spec_dirs[0]) && r == CLI_EXIT_OK; k++) {
                        struct dirent **ents = NULL;
                        int n = scandir(spec_dirs[k], &ents, NULL, alphasort);
                        for (int i = 0; i < n; i++) {
                                char path[PATH_MAX];
                                const char *name = ents[i]->d_name;
                                snprintf(path, sizeof(path), "%s/%s", spec_dirs[k], name);
                                if (r == CLI_EXIT_OK && name[0] != '.' && ends_with(name, ".json") &&
                                    list_file(path, json, devices, &err) < 0)
                                        r = CLI_EXIT_FAILURE;
                                else if (name[0] != '.' && ends_with(name, ".yaml"))
                                        fprintf(stderr,
                                                "gpu-cli: cdi list: %s skipped (YAML; gpu-cli reads JSON specs)\n",
                                                path);
                                free(ents[i]);
                        }
                        free(ents);
                }
        }
        if (r != CLI_EXIT_OK) {
                fprintf(stderr, "gpu-cli: cdi list: %s\n", err ? err->msg : "failed");
                json_decref(devices);
                return r;
        }
        if (json)
                return cli_print_json(json_pack("{s:o}", "devices", devices)) < 0 ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
        json_decref(devices);
        return CLI_EXIT_OK;
}

int cmd_cdi(int argc, char **argv, const struct cli_globals *g)
{
        if (argc < 2) {
                cdi_usage(stderr);
                return CLI_EXIT_USAGE;
        }
        if (strcmp(argv[1], "generate") == 0)
                return cdi_generate(argc - 1, argv + 1, g);
        if (strcmp(argv[1], "list") == 0)
                return cdi_list(argc - 1, argv + 1);
        if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
                cdi_usage(stdout);
                return CLI_EXIT_OK;
        }
        fprintf(stderr, "gpu-cli: cdi: unknown command '%s'; use generate or list\n", argv[1]);
        return CLI_EXIT_USAGE;
}
