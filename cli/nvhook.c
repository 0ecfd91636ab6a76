/* NVIDIA's hook command line: `nvidia-cdi-hook [GLOBAL FLAGS] SUBCOMMAND [FLAGS]`, and the older
 * `nvidia-ctk [GLOBAL FLAGS] hook SUBCOMMAND [FLAGS]`, as the CDI specs written by nvidia-ctk, the
 * Kubernetes device plugin and NVIDIA's DRA driver call them.  Flag parsing only: every subcommand
 * fills one gh_cdi_hook_opts and runs gh_cdi_hook_run() (lib/ops/cdi-hook.c), the code behind our
 * own `gpu-cli cdi-hook`.  docs/nvidia-cdi-hook.md says what each subcommand does and where we
 * differ from NVIDIA's.
 *
 * Flags are read the way Go's flag package (under NVIDIA's urfave/cli) reads them: `-name` or
 * `--name`, the value after `=` or in the next argument, booleans as `--name` or `--name=false`.
 * An unknown subcommand or flag is a warning, never a failure: a spec written by a newer toolkit
 * must still start its containers. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cdi-hook.h"
#include "cleanup.h"
#include "cli.h"
#include "gpuhook.h"
#include "log.h"
#include "service.h"
#include "statecache.h"

enum flag_kind { F_BOOL, F_VALUE, F_LIST };

struct flag {
        const char *name;
        enum flag_kind kind;
        const char *arg; /* the value's name in --help */
        const char *help;
};

struct subcommand {
        const char *name;
        const char *help;
        const struct flag *flags;
};

#define CONTAINER_SPEC                                                                                                 \
        {                                                                                                              \
                "container-spec", F_VALUE, "FILE", "read the OCI state from this file ('-': stdin, the default)"       \
        }

static const struct flag ldcache_flags[] = {
        { "folder", F_LIST, "DIR", "a container directory whose libraries go into the ld cache (repeatable)" },
        { "ldconfig-path", F_VALUE, "PATH",
          "accepted and ignored: gpu-hook writes the ld cache itself, no ldconfig runs" },
        CONTAINER_SPEC,
        { NULL, 0, NULL, NULL },
};
static const struct flag soname_flags[] = {
        { "folder", F_LIST, "DIR", "a container directory whose libraries get their SONAME links (repeatable)" },
        { "ldconfig-path", F_VALUE, "PATH", "accepted and ignored: the links are made natively, no ldconfig runs" },
        CONTAINER_SPEC,
        { NULL, 0, NULL, NULL },
};
static const struct flag symlinks_flags[] = {
        { "link", F_LIST, "TARGET::LINK",
          "create LINK -> TARGET in the container, replacing a file there (repeatable)" },
        { "host-root", F_VALUE, "DIR", "accepted for old specs; links are never resolved on the host" },
        { "csv-filename", F_LIST, "FILE", "accepted for old (Tegra) specs; CSV mount files are not read" },
        CONTAINER_SPEC,
        { NULL, 0, NULL, NULL },
};
static const struct flag chmod_flags[] = {
        { "path", F_LIST, "PATH", "a directory or device node under /dev in the container (repeatable)" },
        { "mode", F_VALUE, "OCTAL", "the mode, in octal (required)" },
        CONTAINER_SPEC,
        { NULL, 0, NULL, NULL },
};
static const struct flag compat_flags[] = {
        { "host-driver-version", F_VALUE, "VERSION", "the host driver's version (without it: nothing to do)" },
        { "host-cuda-version", F_VALUE, "VERSION",
          "the host's CUDA version, used when the driver version is not given" },
        { "cuda-compat-container-root", F_VALUE, "DIR",
          "the compat directory in the container (default /usr/local/cuda/compat)" },
        CONTAINER_SPEC,
        { NULL, 0, NULL, NULL },
};
static const struct flag require_flags[] = {
        { "driver-root", F_VALUE, "DIR", "the driver root whose versions are checked (default: the global one, /)" },
        CONTAINER_SPEC,
        { NULL, 0, NULL, NULL },
};
static const struct flag state_only_flags[] = {
        CONTAINER_SPEC,
        { NULL, 0, NULL, NULL },
};
static const struct flag no_flags[] = { { NULL, 0, NULL, NULL } };

static const struct subcommand subcommands[] = {
        { "update-ldcache", "add the libraries of --folder directories to the container's ld cache", ldcache_flags },
        { "create-symlinks", "create symlinks in the container", symlinks_flags },
        { "create-soname-symlinks", "create the SONAME links of the libraries in --folder directories (ldconfig -n)",
          soname_flags },
        { "enable-cuda-compat", "prefer the image's CUDA compat libraries when the host driver is older",
          compat_flags },
        { "disable-device-node-modification", "mask /proc/driver/nvidia (params: ModifyDeviceFiles: 0)",
          state_only_flags },
        { "update-application-profile", "limit EGL and Vulkan to the container's GPUs (driver application profile)",
          state_only_flags },
        { "check-requirements", "refuse the container when the image's NVIDIA_REQUIRE_* are not met by the driver",
          require_flags },
        { "chmod", "deprecated: set the mode of /dev entries in the container", chmod_flags },
        { "noop", "do nothing", no_flags },
};

/* The values given, per flag of the subcommand (lists collect every value). */
struct values {
        const struct subcommand *sub;
        const char **v[8];
        size_t n[8];
        bool set[8];
};

static const char *prog = "nvidia-cdi-hook";

static void usage(FILE *out)
{
        fprintf(out,
                "Usage: nvidia-cdi-hook [--debug] [--quiet] SUBCOMMAND [FLAGS]\n"
                "       nvidia-ctk [--debug] hook SUBCOMMAND [FLAGS]      (the older specs' form)\n"
                "       gpu-cli [--root=DIR] nvidia-cdi-hook SUBCOMMAND [FLAGS]\n"
                "\n"
                "gpu-hook's implementation of NVIDIA's CDI hook command line: a CDI spec written by nvidia-ctk,\n"
                "the Kubernetes device plugin or NVIDIA's DRA driver runs it as a createContainer hook.  It reads\n"
                "the OCI state on stdin and works only inside the container's root (docs/nvidia-cdi-hook.md).\n"
                "\n"
                "Subcommands:\n");
        for (size_t i = 0; i < GH_ARRAY_SIZE(subcommands); i++) {
                fprintf(out, "  %-34s %s\n", subcommands[i].name, subcommands[i].help);
                for (const struct flag *f = subcommands[i].flags; f->name; f++) {
                        char left[64];
                        if (strcmp(f->name, "container-spec") == 0)
                                continue; /* every subcommand's: said once below */
                        snprintf(left, sizeof(left), "--%s=%s", f->name, f->arg);
                        fprintf(out, "    %-32s %s\n", left, f->help);
                }
        }
        fprintf(out,
                "\n"
                "Every subcommand (but noop) also takes:\n"
                "      --container-spec=FILE        the OCI state from FILE ('-': stdin, the default)\n"
                "\n"
                "Global flags (before the subcommand; with nvidia-ctk, before or after 'hook'):\n"
                "  -d, --debug                      debug messages on stderr\n"
                "      --quiet                      errors only\n"
                "      --driver-root=DIR            gpu-hook's: where /proc/driver/nvidia is read (default /)\n"
                "      --config=FILE                gpu-hook's: its configuration (cuda-compat, disable-require,\n"
                "                                   cli.user)\n"
                "      --state-file=FILE            gpu-hook's: the driver-state cache check-requirements reads\n"
                "                                   (default /run/gpu-hook/driver-state.json for the driver root /)\n"
                "  -v, --version                    print the version\n"
                "  -h, --help                       this help; SUBCOMMAND --help: its flags\n"
                "\n"
                "An unknown subcommand or flag is a warning and exits 0, so specs of newer toolkits still start.\n"
                "Exit status: 0 done, 1 failure.\n");
}

static void sub_usage(const struct subcommand *s)
{
        printf("Usage: %s %s [FLAGS]\n\n%s.\n\nFlags:\n", prog, s->name, s->help);
        for (const struct flag *f = s->flags; f->name; f++)
                printf("  --%s%s%s\n        %s\n", f->name, f->kind == F_BOOL ? "" : "=",
                       f->kind == F_BOOL ? "" : f->arg, f->help);
}

/* "-name", "--name", "--name=value": the name (in buf) and the value after '=' (or NULL). */
static bool split_flag(const char *arg, char *buf, size_t size, const char **value)
{
        const char *n = arg + 1, *eq;

        if (arg[0] != '-' || arg[1] == '\0')
                return false;
        if (*n == '-')
                n++;
        eq = strchr(n, '=');
        snprintf(buf, size, "%.*s", (int) (eq ? (size_t) (eq - n) : strlen(n)), n);
        *value = eq ? eq + 1 : NULL;
        return true;
}

/* Go's strconv.ParseBool. */
static int parse_bool(const char *s, bool *out)
{
        static const char *const t[] = { "1", "t", "T", "true", "TRUE", "True" };
        static const char *const f[] = { "0", "f", "F", "false", "FALSE", "False" };
        for (size_t i = 0; i < GH_ARRAY_SIZE(t); i++) {
                if (strcmp(s, t[i]) == 0)
                        return *out = true, 0;
                if (strcmp(s, f[i]) == 0)
                        return *out = false, 0;
        }
        return -1;
}

/* An unknown flag: warned about and skipped, with the next argument when it looks like its value. */
static int skip_unknown(const char *where, const char *arg, const char *value, int i, int argc, char **argv)
{
        bool takes_next = value == NULL && i + 1 < argc && argv[i + 1][0] != '-';
        gh_warn("%s: unknown flag %s%s%s ignored (written by a newer toolkit?)", where, arg, takes_next ? " " : "",
                takes_next ? argv[i + 1] : "");
        return takes_next ? i + 1 : i;
}

static int add_value(struct values *v, size_t k, const char *value)
{
        const char **nv = reallocarray(v->v[k], v->n[k] + 1, sizeof(*nv));
        if (nv == NULL)
                return -1;
        v->v[k] = nv;
        nv[v->n[k]++] = value;
        v->set[k] = true;
        return 0;
}

static void values_free(struct values *v)
{
        for (size_t k = 0; k < GH_ARRAY_SIZE(v->v); k++)
                free(v->v[k]);
}

static const char *value_of(const struct values *v, const char *name)
{
        for (size_t k = 0; v->sub->flags[k].name; k++)
                if (strcmp(v->sub->flags[k].name, name) == 0)
                        return v->n[k] ? v->v[k][v->n[k] - 1] : NULL;
        return NULL;
}

static const char **list_of(const struct values *v, const char *name, size_t *n)
{
        for (size_t k = 0; v->sub->flags[k].name; k++)
                if (strcmp(v->sub->flags[k].name, name) == 0) {
                        *n = v->n[k];
                        return v->v[k];
                }
        *n = 0;
        return NULL;
}

/* The subcommand's flags.  Returns 0, 1 after --help, -1 on an error (message printed). */
static int parse_sub_flags(struct values *v, int argc, char **argv)
{
        for (int i = 1; i < argc; i++) {
                const char *arg = argv[i], *value;
                char name[128];
                size_t k;

                if (strcmp(arg, "--") == 0)
                        break;
                if (!split_flag(arg, name, sizeof(name), &value)) {
                        gh_warn("%s: argument '%s' ignored", v->sub->name, arg);
                        continue;
                }
                if (strcmp(name, "help") == 0 || strcmp(name, "h") == 0) {
                        sub_usage(v->sub);
                        return 1;
                }
                for (k = 0; v->sub->flags[k].name && strcmp(v->sub->flags[k].name, name) != 0; k++)
                        ;
                if (v->sub->flags[k].name == NULL) {
                        i = skip_unknown(v->sub->name, arg, value, i, argc, argv);
                        continue;
                }
                if (v->sub->flags[k].kind == F_BOOL) {
                        bool b;
                        if (value && parse_bool(value, &b) < 0) {
                                fprintf(stderr, "%s: %s: invalid boolean value \"%s\" for -%s\n", prog, v->sub->name,
                                        value, name);
                                return -1;
                        }
                        if (add_value(v, k, value ? value : "true") < 0)
                                return -1;
                        continue;
                }
                if (value == NULL) {
                        if (i + 1 >= argc) {
                                fprintf(stderr, "%s: %s: flag needs an argument: -%s\n", prog, v->sub->name, name);
                                return -1;
                        }
                        value = argv[++i];
                }
                if (v->sub->flags[k].kind == F_VALUE && v->n[k] > 0)
                        v->n[k] = 0; /* a repeated single-value flag: the last one counts, as in Go */
                if (add_value(v, k, value) < 0) {
                        fprintf(stderr, "%s: out of memory\n", prog);
                        return -1;
                }
        }
        return 0;
}

static int fail(const char *sub, const char *msg)
{
        fprintf(stderr, "%s: %s: %s\n", prog, sub, msg);
        return GH_EXIT_FAILURE;
}

/* The options of one subcommand; returns -1 after printing an error, 1 when there is nothing to
 * do (the subcommand is a no-op with these flags), 0 to run. */
static int build_opts(const struct values *v, struct gh_cdi_hook_opts *o, struct gh_cdi_pair **links,
                      const char ***folders)
{
        const char *name = v->sub->name, *s;
        size_t n;
        const char **l;

        o->state_file = value_of(v, "container-spec");
        if (strcmp(name, "noop") == 0)
                return 1;
        if (strcmp(name, "update-ldcache") == 0 || strcmp(name, "create-soname-symlinks") == 0) {
                bool soname = name[0] == 'c';
                size_t kept = 0;
                l = list_of(v, "folder", &n);
                *folders = calloc(n + 1, sizeof(**folders));
                if (*folders == NULL)
                        return fail(name, "out of memory"), -1;
                for (size_t i = 0; i < n; i++) {
                        if (l[i][0] != '/') {
                                gh_warn("%s: --folder %s is not an absolute path: ignored", name, l[i]);
                                continue;
                        }
                        (*folders)[kept++] = l[i];
                }
                if ((s = value_of(v, "ldconfig-path")) != NULL)
                        gh_debug("%s: --ldconfig-path %s ignored: no ldconfig runs", name, s);
                if (soname) {
                        o->soname_folders = *folders;
                        o->nsoname_folders = kept;
                        return kept > 0 ? 0 : 1;
                }
                o->folders = *folders;
                o->nfolders = kept;
                o->ldcache = true;
                return 0;
        }
        if (strcmp(name, "create-symlinks") == 0) {
                l = list_of(v, "link", &n);
                *links = calloc(n + 1, sizeof(**links));
                if (*links == NULL)
                        return fail(name, "out of memory"), -1;
                for (size_t i = 0; i < n; i++) {
                        _cleanup_error_ gh_error_t e = NULL;
                        char *copy = (char *) l[i]; /* argv is writable */
                        const char *sep = strstr(copy, "::");
                        if (sep == NULL || strstr(sep + 2, "::") != NULL ||
                            gh_cdi_pair_parse("link", copy, true, &(*links)[o->nlinks], &e) < 0) {
                                char msg[PATH_MAX + 80];
                                snprintf(msg, sizeof(msg), "invalid --link '%s': write it as TARGET::/ABSOLUTE/LINK",
                                         l[i]);
                                return fail(name, msg), -1;
                        }
                        o->nlinks++;
                }
                o->links = *links;
                o->replace_files = true;
                if (list_of(v, "csv-filename", &n) && n > 0)
                        gh_warn("create-symlinks: --csv-filename (Tegra CSV mount files) is not supported: ignored");
                return o->nlinks > 0 ? 0 : 1;
        }
        if (strcmp(name, "enable-cuda-compat") == 0) {
                o->compat_driver = value_of(v, "host-driver-version");
                o->compat_cuda = value_of(v, "host-cuda-version");
                o->compat_dir = value_of(v, "cuda-compat-container-root");
                if (o->compat_driver && *o->compat_driver == '\0')
                        o->compat_driver = NULL;
                if (o->compat_cuda && *o->compat_cuda == '\0')
                        o->compat_cuda = NULL;
                if (o->compat_dir && o->compat_dir[0] != '/')
                        return fail(name, "--cuda-compat-container-root must be an absolute path"), -1;
                return o->compat_driver || o->compat_cuda ? 0 : 1;
        }
        if (strcmp(name, "disable-device-node-modification") == 0) {
                o->mask_proc = true;
                return 0;
        }
        if (strcmp(name, "update-application-profile") == 0) {
                o->app_profile = true;
                return 0;
        }
        if (strcmp(name, "check-requirements") == 0) {
                if ((s = value_of(v, "driver-root")) != NULL && *s != '\0') {
                        if (s[0] != '/')
                                return fail(name, "--driver-root needs an absolute path"), -1;
                        o->root = s;
                }
                o->check_requirements = true;
                /* NVML's facts from the driver-state cache `gpu-cli cache` keeps: the host driver's, or
                 * the one --state-file names */
                if (o->cache_file == NULL && strcmp(o->root, "/") == 0)
                        o->cache_file = GH_STATECACHE_DEFAULT;
                if (o->cache_file != NULL)
                        o->cache = &gh_statecache;
                return 0;
        }
        /* chmod */
        s = value_of(v, "mode");
        char *end;
        unsigned long mode = s ? strtoul(s, &end, 8) : 0;
        if (s == NULL || *s == '\0' || *end != '\0' || mode > 07777)
                return fail(name, "a mode in octal (--mode 755) is required"), -1;
        o->chmod_paths = list_of(v, "path", &o->nchmod);
        for (size_t i = 0; i < o->nchmod; i++)
                if (o->chmod_paths[i][0] == '\0')
                        return fail(name, "--path must not be empty"), -1;
        o->chmod_mode = (mode_t) mode;
        return o->nchmod > 0 ? 0 : 1;
}

/* check-requirements in a static nvidia-cdi-hook.  Its dlopen would need the glibc it was linked
 * with, so it loads no driver library: the facts come from the driver-state cache, and when that
 * cannot answer, gpu-cli (a dynamic program, run with the environment this process was left with)
 * runs the same check.  The state is kept in a memfd, read here and again there (elsewhere.c). */
static int require_prepare(struct gh_cdi_hook_opts *o, int *state)
{
        if (gh_service_can_load())
                return 0; /* gpu-cli, or a dynamic nvidia-cdi-hook: it loads what it needs itself */
        o->no_driver_libs = true;
        if (o->state_file != NULL && strcmp(o->state_file, "-") != 0)
                return 0;
        if ((*state = cli_state_keep(&o->state_fd)) < 0)
                return fprintf(stderr, "%s: check-requirements: keeping the container state: %m\n", prog), -1;
        o->state_file = NULL;
        return 0;
}

static int require_elsewhere(const struct gh_cdi_hook_opts *o, int state, bool debug, bool quiet)
{
        char cli[PATH_MAX], root[PATH_MAX + 8], config[PATH_MAX + 10], cache[PATH_MAX + 14], spec[PATH_MAX + 18];
        const char *argv[12];
        int a = 0;

        cli_gpu_cli_path(cli, sizeof(cli));
        snprintf(root, sizeof(root), "--root=%s", o->root);
        argv[a++] = "gpu-cli";
        argv[a++] = root;
        argv[a++] = "nvidia-cdi-hook";
        if (debug || quiet)
                argv[a++] = debug ? "--debug" : "--quiet";
        if (o->config != NULL) {
                snprintf(config, sizeof(config), "--config=%s", o->config);
                argv[a++] = config;
        }
        if (o->cache_file != NULL) {
                snprintf(cache, sizeof(cache), "--state-file=%s", o->cache_file);
                argv[a++] = cache;
        }
        argv[a++] = "check-requirements";
        if (o->state_file != NULL) {
                snprintf(spec, sizeof(spec), "--container-spec=%s", o->state_file);
                argv[a++] = spec;
        }
        argv[a] = NULL;
        gh_debug("check-requirements: the cache cannot answer; asking the driver through %s", cli);
        cli_exec_gpu_cli(cli, (char *const *) argv, state);
        fprintf(stderr,
                "%s: check-requirements: the driver must be asked and %s cannot run (%m): install gpu-cli, run "
                "'gpu-cli cache refresh', or set NVIDIA_DISABLE_REQUIRE=true in the image\n",
                prog, cli);
        return GH_EXIT_FAILURE;
}

int cli_nvhook(int argc, char **argv, const char *root)
{
        struct gh_cdi_hook_opts o = { .root = root, .state_fd = STDIN_FILENO, .start_dir = cli_hook_start_dir() };
        _cleanup_error_ gh_error_t err = NULL;
        struct values v = { 0 };
        struct gh_cdi_pair *links = NULL;
        const char **folders = NULL;
        _cleanup_close_ int state = -1;
        const char *base = strrchr(argv[0], '/');
        bool debug = false, quiet = false, ctk = false;
        int i = 1, r = GH_EXIT_OK;

        base = base ? base + 1 : argv[0];
        ctk = strcmp(base, "nvidia-ctk") == 0;
        prog = ctk ? "nvidia-ctk hook" : "nvidia-cdi-hook";
        gh_log_set_program(ctk ? "nvidia-ctk" : "nvidia-cdi-hook");
        /* Global flags; in the nvidia-ctk form also after "hook" (where its hook command's are). */
        for (int pass = 0, done = 0; !done; pass++) {
                for (; i < argc; i++) {
                        const char *value;
                        char name[128];
                        bool b = true;

                        if (!split_flag(argv[i], name, sizeof(name), &value))
                                break;
                        if (strcmp(name, "debug") == 0 || strcmp(name, "d") == 0 || strcmp(name, "quiet") == 0) {
                                if (value && parse_bool(value, &b) < 0) {
                                        fprintf(stderr, "%s: invalid boolean value \"%s\" for -%s\n", prog, value,
                                                name);
                                        return GH_EXIT_FAILURE;
                                }
                                *(strcmp(name, "quiet") == 0 ? &quiet : &debug) = b;
                        } else if (strcmp(name, "driver-root") == 0 || strcmp(name, "config") == 0 ||
                                   strcmp(name, "state-file") == 0) {
                                if (value == NULL && i + 1 < argc)
                                        value = argv[++i];
                                if (value == NULL || value[0] != '/') {
                                        fprintf(stderr, "%s: --%s needs an absolute path\n", prog, name);
                                        return GH_EXIT_FAILURE;
                                }
                                *(strcmp(name, "config") == 0 ? &o.config
                                  : name[0] == 's'            ? &o.cache_file
                                                              : &o.root) = value;
                        } else if (strcmp(name, "version") == 0 || strcmp(name, "v") == 0) {
                                printf("%s version %s (gpu-hook)\n", ctk ? "nvidia-ctk" : "nvidia-cdi-hook",
                                       gpuhook_version());
                                return GH_EXIT_OK;
                        } else if (strcmp(name, "help") == 0 || strcmp(name, "h") == 0) {
                                usage(stdout);
                                return GH_EXIT_OK;
                        } else {
                                i = skip_unknown(prog, argv[i], value, i, argc, argv);
                        }
                }
                if (!ctk || pass > 0) {
                        done = 1;
                        continue;
                }
                /* nvidia-ctk's hook command; its other commands are NVIDIA's toolkit, not ours */
                if (i >= argc || strcmp(argv[i], "hook") != 0) {
                        fprintf(stderr,
                                "nvidia-ctk: this is gpu-hook, which answers only 'nvidia-ctk hook SUBCOMMAND' (old CDI specs); for '%s' install NVIDIA's toolkit\n",
                                i < argc ? argv[i] : "");
                        return GH_EXIT_USAGE;
                }
                i++;
        }
        gh_log_set_level(quiet ? GH_LOG_ERROR : debug ? GH_LOG_DEBUG : GH_LOG_WARN);
        if (i >= argc) {
                gh_warn("no CDI hook specified; nothing done");
                return GH_EXIT_OK;
        }
        for (size_t k = 0; k < GH_ARRAY_SIZE(subcommands) && v.sub == NULL; k++)
                if (strcmp(argv[i], subcommands[k].name) == 0)
                        v.sub = &subcommands[k];
        if (v.sub == NULL) {
                gh_warn("unsupported CDI hook '%s' (written by a newer toolkit?): nothing done", argv[i]);
                return GH_EXIT_OK;
        }
        r = parse_sub_flags(&v, argc - i, argv + i);
        if (r != 0) {
                r = r > 0 ? GH_EXIT_OK : GH_EXIT_FAILURE;
                goto out;
        }
        r = build_opts(&v, &o, &links, &folders);
        if (r != 0) {
                if (r > 0)
                        gh_debug("%s: nothing to do", v.sub->name);
                r = r > 0 ? GH_EXIT_OK : GH_EXIT_FAILURE;
                goto out;
        }
        if (o.check_requirements && require_prepare(&o, &state) < 0) {
                r = GH_EXIT_FAILURE;
                goto out;
        }
        r = gh_cdi_hook_run(&o, &err);
        if (r > 0)
                r = require_elsewhere(&o, state, debug, quiet);
        else if (r < 0)
                r = fail(v.sub->name, err && err->msg ? err->msg : "failed");
        else
                r = GH_EXIT_OK;
out:
        free(links);
        free(folders);
        values_free(&v);
        return r;
}

static struct stat start_dir;
static bool start_dir_known;

const struct stat *cli_hook_start_dir(void) { return start_dir_known ? &start_dir : NULL; }

void cli_hook_environment(void)
{
        /* Before anything else: nothing this process does may depend on what its caller had.  A
         * runtime that gives a hook no environment of its own can hand it the container's (runc's
         * createContainer hooks run with the image's variables and the rootfs as working
         * directory: CVE-2025-23266).  Only the directory's identity is kept: under runc it is
         * the proof that a bundle found without the state is the container's (cdi-hook). */
        if (!start_dir_known)
                start_dir_known = stat(".", &start_dir) == 0;
        clearenv();
        setenv("PATH", "/usr/sbin:/usr/bin:/sbin:/bin", 1);
        if (chdir("/") < 0)
                gh_warn("cannot change to /: %m");
        umask(022);
}
