/* gpu-cli cdi-hook: the createContainer hook a CDI spec names; flag parsing only, the work is
 * gh_cdi_hook_run() in lib/ops/cdi-hook.c. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cdi-hook.h"
#include "config.h" /* GPUHOOK_DEFAULT_CONFIG */
#include "cleanup.h"
#include "cli.h"
#include "log.h"
#include "service.h"
#include "statecache.h"

static void cdi_hook_usage(FILE *out)
{
        fprintf(out, "Usage: gpu-cli [--root=DIR] cdi-hook [OPTIONS]\n"
                     "\n"
                     "Runs as a createContainer hook from a CDI spec (see 'gpu-cli cdi generate'): reads the OCI\n"
                     "state on stdin and the bundle's config.json, then, inside the container root only:\n"
                     "\n"
                     "      --mount=HOST::PATH         bind the host file HOST read-only (nosuid, nodev) on PATH\n"
                     "                                 (repeatable; cdi generate --mounts=hook writes these)\n"
                     "      --mount-dir=HOST::PATH     the same for a directory\n"
                     "      --mount-noexec=HOST::PATH, --mount-dir-noexec=HOST::PATH   the same, noexec too\n"
                     "      --link=TARGET::PATH        create the symlink PATH -> TARGET (repeatable)\n"
                     "      --library=SONAME::PATH     add a 64-bit library to /etc/ld.so.cache (repeatable)\n"
                     "      --library32=SONAME::PATH   add an i386 library to /etc/ld.so.cache (repeatable)\n"
                     "      --mask-proc                mask /proc/driver/nvidia: params with ModifyDeviceFiles: 0,\n"
                     "                                 version, registry, and gpus/ of the GPUs whose /dev/nvidiaN\n"
                     "                                 the container was given (config.json linux.devices)\n"
                     "      --cuda-compat=VERSION      prefer the image's CUDA compat libraries when the rule says so\n"
                     "                                 for a host driver VERSION (docs/cuda-compat.md)\n"
                     "      --check-requirements       first refuse the container when its image's NVIDIA_REQUIRE_*\n"
                     "                                 (or legacy CUDA_VERSION) are not met, as gpu-hook does\n"
                     "                                 (facts from the driver-state cache, else the driver)\n"
                     "      --config=FILE              gpu-hook's configuration, for its cuda-compat,\n"
                     "                                 disable-require and cli.user keys\n"
                     "                                 (default " GPUHOOK_DEFAULT_CONFIG ")\n"
                     "      --log=FILE                 append one JSON line per run to FILE: the container, the\n"
                     "                                 result and each phase's time (gpu-hook's log format)\n"
                     "      --state-from-stdin         always wait for the state on stdin (default: under runc, the\n"
                     "                                 bundle and container are found where runc keeps them and\n"
                     "                                 proved against config.json, which saves runc's late write;\n"
                     "                                 docs/cdi.md)\n"
                     "\n"
                     "The image's /etc/ld.so.cache entries are kept; the image's ldconfig is never run.  Its own\n"
                     "environment is ignored.  It refuses to run outside the container's mount namespace.\n"
                     "\n"
                     "Exit status: 0 success, 1 failure, 2 usage error, 4 requirement not met.\n");
}

enum {
        OPT_LINK = 1000,
        OPT_MOUNT,
        OPT_MOUNT_DIR,
        OPT_MOUNT_NOEXEC,
        OPT_MOUNT_DIR_NOEXEC,
        OPT_LIBRARY,
        OPT_LIBRARY32,
        OPT_MASK_PROC,
        OPT_CUDA_COMPAT,
        OPT_CONFIG,
        OPT_LOG,
        OPT_CHECK_REQUIREMENTS,
        OPT_STATE_FROM_STDIN,
};

static int add_pair(const char *opt, char *arg, bool b_abs, struct gh_cdi_pair **v, size_t *n)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_cdi_pair p;
        void *nv;

        if (gh_cdi_pair_parse(opt, arg, b_abs, &p, &err) < 0) {
                fprintf(stderr, "gpu-cli: cdi-hook: %s\n", err->msg);
                return -1;
        }
        nv = realloc(*v, (*n + 1) * sizeof(**v));
        if (nv == NULL) {
                fprintf(stderr, "gpu-cli: cdi-hook: out of memory\n");
                return -1;
        }
        *v = nv;
        (*v)[(*n)++] = p;
        return 0;
}

static char **strv_dup(char **v, int n)
{
        char **c = calloc((size_t) n + 1, sizeof(char *));

        for (int i = 0; c != NULL && i < n; i++)
                if ((c[i] = strdup(v[i])) == NULL) {
                        gh_strvfreep(&c);
                        c = NULL;
                }
        return c;
}

/* gpu-cli cdi-hook with the same global options and arguments, the state on stdin (see above). */
static int run_elsewhere(int argc, char **argv, const struct cli_globals *g, int state)
{
        _cleanup_free_ char **v = calloc((size_t) argc + 6, sizeof(char *));
        _cleanup_free_ char *root = NULL, *cache = NULL;
        char cli[PATH_MAX];
        int n = 0;

        if (v == NULL || asprintf(&root, "--root=%s", g->root) < 0 ||
            (g->state_file != NULL && asprintf(&cache, "--state-file=%s", g->state_file) < 0)) {
                fprintf(stderr, "gpu-cli: cdi-hook: out of memory\n");
                return GH_EXIT_FAILURE;
        }
        cli_gpu_cli_path(cli, sizeof(cli));
        v[n++] = (char *) "gpu-cli";
        v[n++] = root;
        v[n++] = cache != NULL ? cache : (char *) "--no-cache";
        v[n++] = (char *) "cdi-hook";
        for (int i = 1; i < argc; i++)
                v[n++] = argv[i];
        v[n] = NULL;
        gh_debug("cdi-hook: the driver-state cache cannot answer the requirements; running %s", cli);
        cli_exec_gpu_cli(cli, v, state);
        fprintf(stderr,
                "gpu-cli: cdi-hook: the requirements need the driver and %s cannot run (%m): install gpu-cli, "
                "run 'gpu-cli cache refresh', or set NVIDIA_DISABLE_REQUIRE=true in the image\n",
                cli);
        return GH_EXIT_FAILURE;
}

int cmd_nvhook(int argc, char **argv, const struct cli_globals *g)
{
        cli_hook_environment();
        return cli_nvhook(argc, argv, g->root);
}

int cmd_cdi_hook(int argc, char **argv, const struct cli_globals *g)
{
        static const struct option opts[] = {
                { "link", required_argument, NULL, OPT_LINK },
                { "mount", required_argument, NULL, OPT_MOUNT },
                { "mount-dir", required_argument, NULL, OPT_MOUNT_DIR },
                { "mount-noexec", required_argument, NULL, OPT_MOUNT_NOEXEC },
                { "mount-dir-noexec", required_argument, NULL, OPT_MOUNT_DIR_NOEXEC },
                { "library", required_argument, NULL, OPT_LIBRARY },
                { "library32", required_argument, NULL, OPT_LIBRARY32 },
                { "mask-proc", no_argument, NULL, OPT_MASK_PROC },
                { "cuda-compat", required_argument, NULL, OPT_CUDA_COMPAT },
                { "config", required_argument, NULL, OPT_CONFIG },
                { "log", required_argument, NULL, OPT_LOG },
                { "check-requirements", no_argument, NULL, OPT_CHECK_REQUIREMENTS },
                { "state-from-stdin", no_argument, NULL, OPT_STATE_FROM_STDIN },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        /* The driver-state cache (gpu-cli's: the host driver's, or --state-file): the requirements'
         * facts, and which GPU each device node is for the /proc/driver/nvidia mask. */
        struct gh_cdi_hook_opts o = { .root = g->root,
                                      .state_fd = STDIN_FILENO,
                                      .cache_file = g->state_file,
                                      .cache = g->state_file ? &gh_statecache : NULL };
        _cleanup_error_ gh_error_t err = NULL;
        const char *log_file = NULL;
        _cleanup_close_ int state = -1;
        _cleanup_strv_ char **orig = NULL;
        struct gh_hooklog log;
        int c, r = GH_EXIT_USAGE;

        cli_hook_environment();
        o.start_dir = cli_hook_start_dir();
        /* The arguments as given, for gpu-cli should it have to run this hook (parsing splits them). */
        if (!gh_service_can_load() && (orig = strv_dup(argv, argc)) == NULL) {
                fprintf(stderr, "gpu-cli: cdi-hook: out of memory\n");
                return GH_EXIT_FAILURE;
        }
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
                switch (c) {
                case OPT_LINK:
                        if (add_pair("link", optarg, true, &o.links, &o.nlinks) < 0)
                                goto out;
                        break;
                case OPT_MOUNT:
                case OPT_MOUNT_DIR:
                case OPT_MOUNT_NOEXEC:
                case OPT_MOUNT_DIR_NOEXEC: {
                        static const char *const names[] = { "mount", "mount-dir", "mount-noexec", "mount-dir-noexec" };
                        const char *name = names[c - OPT_MOUNT];
                        if (add_pair(name, optarg, true, &o.mounts, &o.nmounts) < 0)
                                goto out;
                        if (o.mounts[o.nmounts - 1].a[0] != '/') {
                                fprintf(stderr, "gpu-cli: cdi-hook: --%s=%s: the host path must be absolute\n", name,
                                        o.mounts[o.nmounts - 1].a);
                                goto out;
                        }
                        o.mounts[o.nmounts - 1].dir = c == OPT_MOUNT_DIR || c == OPT_MOUNT_DIR_NOEXEC;
                        o.mounts[o.nmounts - 1].noexec = c == OPT_MOUNT_NOEXEC || c == OPT_MOUNT_DIR_NOEXEC;
                        break;
                }
                case OPT_LIBRARY:
                        if (add_pair("library", optarg, true, &o.libs, &o.nlibs) < 0)
                                goto out;
                        break;
                case OPT_LIBRARY32:
                        if (add_pair("library32", optarg, true, &o.libs32, &o.nlibs32) < 0)
                                goto out;
                        break;
                case OPT_MASK_PROC: o.mask_proc = true; break;
                case OPT_STATE_FROM_STDIN: o.start_dir = NULL; break;
                case OPT_CHECK_REQUIREMENTS: o.check_requirements = true; break;
                case OPT_CUDA_COMPAT: o.compat_driver = optarg; break;
                case OPT_CONFIG: o.config = optarg; break;
                case OPT_LOG:
                        if (optarg[0] != '/') {
                                fprintf(stderr, "gpu-cli: cdi-hook: --log needs an absolute path, not '%s'\n", optarg);
                                goto out;
                        }
                        log_file = optarg;
                        break;
                case 'h':
                        cdi_hook_usage(stdout);
                        r = GH_EXIT_OK;
                        goto out;
                default: cdi_hook_usage(stderr); goto out;
                }
        }
        if (optind != argc) {
                fprintf(stderr, "gpu-cli: cdi-hook: unexpected argument '%s'; see 'gpu-cli cdi-hook --help'\n",
                        argv[optind]);
                goto out;
        }
        /* A static program (gpu-cdi-hook) loads no driver library: the requirements are checked from
         * the driver-state cache, and when it cannot answer, gpu-cli runs this hook instead, with
         * the state this process read kept for it (elsewhere.c). */
        if (o.check_requirements && !gh_service_can_load()) {
                o.no_driver_libs = true;
                if ((state = cli_state_keep(&o.state_fd)) < 0) {
                        fprintf(stderr, "gpu-cli: cdi-hook: keeping the container state: %m\n");
                        r = GH_EXIT_FAILURE;
                        goto out;
                }
        }
        if (log_file != NULL) {
                /* From main() on, so that "setup" is gpu-cli's own start (what exec took is not seen here). */
                gh_hooklog_start(&log, "createContainer");
                log.program = "gpu-cli cdi-hook";
                log.start.tv_sec = (time_t) (g->started_us / 1000000);
                log.start.tv_nsec = (long) (g->started_us % 1000000) * 1000;
                log.mark = log.start;
                o.log = &log;
        }
        r = gh_cdi_hook_run(&o, &err);
        if (r > 0) {
                r = run_elsewhere(argc, orig, g, state); /* back only when gpu-cli could not be run */
                if (o.log != NULL) {
                        gh_hooklog_set_error(&log, "gpu-cli could not be run for the requirements");
                        log.exit_code = r;
                }
        } else if (r < 0) {
                fprintf(stderr, "gpu-cli: cdi-hook: %s\n", err && err->msg ? err->msg : "failed");
                r = gh_error_kind(err) == GH_ERR_REQUIREMENT ? GH_EXIT_REQUIREMENT : GH_EXIT_FAILURE;
                if (o.log != NULL) {
                        gh_hooklog_set_error(&log, err && err->msg ? err->msg : "failed");
                        log.exit_code = r;
                }
        } else {
                r = GH_EXIT_OK;
                if (o.log != NULL)
                        log.result = "configured";
        }
        if (o.log != NULL) {
                gh_hooklog_write(&log, log_file);
                gh_hooklog_free(&log);
        }
out:
        free(o.links);
        free(o.mounts);
        free(o.libs);
        free(o.libs32);
        return r;
}
