/* gpu-cli: inspect the NVIDIA driver and inject it into containers.
 * This file parses the global options and dispatches; each subcommand lives in its own file. */
#include <getopt.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gpuhook.h"
#include "log.h"
#include "service.h"
#include "statecache.h"

#ifndef GH_CLI_HOOKS_ONLY
static void usage(FILE *out)
{
        fprintf(out,
                "Usage: gpu-cli [GLOBAL OPTIONS] COMMAND [OPTIONS]\n"
                "\n"
                "Commands:\n"
                "  info        show the driver and the GPUs (--csv, --json)\n"
                "  list        list the host files a container would get\n"
                "  configure   inject the driver into a container: configure --pid=PID [OPTIONS] ROOTFS\n"
                "  ps          the processes using each GPU and their containers\n"
                "  top         ps, refreshed in place (q quits, m/u sort)\n"
                "  metrics     GPU and per-container usage in Prometheus text format (--listen to serve it)\n"
                "  doctor      check the host, or one container (--pid, --container), for GPU problems\n"
                "  cache       the driver-state cache: cache refresh|show|clear\n"
                "  mps         MPS groups with per-group limits: mps start|stop|list\n"
                "  setup       configure an engine: setup docker|containerd|crio|podman [--dry-run] [--undo]\n"
                "  cdi         CDI specs: cdi generate, cdi list\n"
                "  cdi-hook    the createContainer hook a CDI spec runs\n"
                "  nvidia-cdi-hook  NVIDIA's CDI hook command line (also as argv[0] nvidia-cdi-hook, nvidia-ctk hook)\n"
                "\n"
                "Global options:\n"
                "  -r, --root=DIR         driver root (default /): ld.so.cache, PATH, /dev, /proc/driver/nvidia\n"
                "  -C, --ldcache=FILE     ld.so.cache of the driver root (default /etc/ld.so.cache)\n"
                "  -u, --user=UID[:GID]   identity of the driver service child (default: the overflow uid)\n"
                "  -d, --debug=FILE       append debug output to FILE\n"
                "      --log-format=json  write the debug output as JSON lines\n"
                "      --state-file=FILE  driver-state cache (default " GH_STATECACHE_DEFAULT " when --root is /;\n"
                "                         none for another root unless given): NVML's answers kept until the\n"
                "                         driver, its libraries, the GPUs or the MIG layout change\n"
                "      --no-cache         neither read nor write the driver-state cache\n"
                "  -k, --load-kmods       accepted for compatibility; gpu-cli never loads kernel modules\n"
                "  -n, --no-pivot         accepted for compatibility\n"
                "  -h, --help             show this help\n"
                "  -V, --version          show the version\n"
                "\n"
                "Exit status: 0 success, 1 failure, 2 usage error, 3 no driver found, 4 requirement not met.\n");
}
#endif

#ifdef GH_CLI_HOOKS_ONLY
/* gpu-cdi-hook (also nvidia-cdi-hook): the static program CDI specs run, gpu-cli's hook commands
 * alone (cli/meson.build). */
static void usage_hooks(FILE *out)
{
        fprintf(out,
                "Usage: gpu-cdi-hook [--root=DIR] [--state-file=FILE | --no-cache] [--debug=FILE] cdi-hook [OPTIONS]\n"
                "\n"
                "The createContainer hook of the CDI specs 'gpu-cli cdi generate' writes: gpu-cli's cdi-hook\n"
                "and nvidia-cdi-hook commands in a static program (see 'gpu-cli cdi-hook --help').  Under any\n"
                "other name (nvidia-cdi-hook, nvidia-ctk) it is NVIDIA's hook command line; the rest is gpu-cli's.\n");
}
#define usage usage_hooks
#endif

static const struct {
        const char *name;
        int (*fn)(int, char **, const struct cli_globals *);
} commands[] = {
#ifndef GH_CLI_HOOKS_ONLY
        { "info", cmd_info },
        { "list", cmd_list },
        { "configure", cmd_configure },
        { "mps", cmd_mps },
        { "ps", cmd_ps },
        { "top", cmd_top },
        { "metrics", cmd_metrics },
        { "doctor", cmd_doctor },
        { "setup", cmd_setup },
        { "cache", cmd_cache },
        { "cdi", cmd_cdi },
        { "driver-service", cmd_driver_service },
#endif
        { "cdi-hook", cmd_cdi_hook },
        { "nvidia-cdi-hook", cmd_nvhook },
};

static int (*command_fn(const char *name))(int, char **, const struct cli_globals *)
{
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                if (strcmp(name, commands[i].name) == 0)
                        return commands[i].fn;
        return NULL;
}

int main(int argc, char **argv)
{
        static const struct option opts[] = {
                { "root", required_argument, NULL, 'r' },       { "ldcache", required_argument, NULL, 'C' },
                { "user", required_argument, NULL, 'u' },       { "debug", required_argument, NULL, 'd' },
                { "load-kmods", no_argument, NULL, 'k' },       { "no-pivot", no_argument, NULL, 'n' },
                { "log-format", required_argument, NULL, 'L' }, { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },          { "state-file", required_argument, NULL, 'S' },
                { "no-cache", no_argument, NULL, 'N' },         { NULL, 0, NULL, 0 },
        };
        struct cli_globals g = { .root = "/", .uid = (uid_t) -1, .gid = (gid_t) -1 };
        const char *user = NULL, *debug = NULL;
        bool no_cache = false, json_log = false;
        int (*fn)(int, char **, const struct cli_globals *);
        struct timespec now;
        int c;

        clock_gettime(CLOCK_MONOTONIC, &now);
        g.started_us = (long long) now.tv_sec * 1000000 + now.tv_nsec / 1000;
        /* Run under NVIDIA's names (a CDI spec's args[0], or a link named so), answer as NVIDIA's hook. */
        const char *base = strrchr(argv[0], '/');
        base = base ? base + 1 : argv[0];
#ifdef GH_CLI_HOOKS_ONLY
        /* The static program is NVIDIA's hook by default (its name on PATH and in NVIDIA-written specs);
         * gpu-cli's own hook when a spec of ours names it so (args[0]). */
        if (strcmp(base, "gpu-cli") != 0 && strcmp(base, "gpu-cdi-hook") != 0) {
#else
        if (strcmp(base, "nvidia-cdi-hook") == 0 || strcmp(base, "nvidia-ctk") == 0) {
#endif
                cli_hook_environment();
                return cli_nvhook(argc, argv, "/");
        }
        gh_log_set_program("gpu-cli");
        /* '+' stops at the first non-option: the subcommand and its own options follow. */
        while ((c = getopt_long(argc, argv, "+r:C:u:d:knhV", opts, NULL)) != -1) {
                switch (c) {
                case 'r': g.root = optarg; break;
                case 'C': g.ldcache = optarg; break;
                case 'u': user = optarg; break;
                case 'd': debug = optarg; break;
                case 'k': /* --load-kmods and --no-pivot: nvidia-container-cli's, accepted, nothing to do */
                case 'n': break;
                case 'S': g.state_file = optarg; break;
                case 'N': no_cache = true; break;
                case 'L':
                        if (strcmp(optarg, "json") != 0 && strcmp(optarg, "text") != 0) {
                                fprintf(stderr, "gpu-cli: --log-format must be 'text' or 'json', not '%s'\n", optarg);
                                return GH_EXIT_USAGE;
                        }
                        json_log = strcmp(optarg, "json") == 0;
                        break;
                case 'h': usage(stdout); return GH_EXIT_OK;
                case 'V': printf("gpu-cli %s\n", gpuhook_version()); return GH_EXIT_OK;
                default: usage(stderr); return GH_EXIT_USAGE;
                }
        }
        if (optind >= argc) {
                usage(stderr);
                return GH_EXIT_USAGE;
        }
        if (g.root[0] != '/') {
                fprintf(stderr, "gpu-cli: --root '%s' must be an absolute path\n", g.root);
                return GH_EXIT_USAGE;
        }
        if (g.state_file != NULL && (g.state_file[0] != '/' || g.state_file[strlen(g.state_file) - 1] == '/')) {
                fprintf(stderr, "gpu-cli: --state-file '%s' must be an absolute file path\n", g.state_file);
                return GH_EXIT_USAGE;
        }
        /* The default cache belongs to the host's driver; another driver root has one only when asked. */
        if (g.state_file == NULL && strcmp(g.root, "/") == 0)
                g.state_file = GH_STATECACHE_DEFAULT;
        if (no_cache)
                g.state_file = NULL;
        /* Parsed once here, so that every command refuses a bad --user the same way. */
        if (user != NULL) {
                gh_error_t err = NULL;
                if (gh_service_parse_user(user, &g.uid, &g.gid, &err) < 0) {
                        fprintf(stderr, "gpu-cli: %s\n", err->msg);
                        gh_error_free(&err);
                        return GH_EXIT_USAGE;
                }
        }
        if (debug != NULL && gh_log_open(debug, json_log) < 0) {
                fprintf(stderr, "gpu-cli: cannot open debug file %s: %m; pass a writable --debug path\n", debug);
                return GH_EXIT_USAGE;
        }
        fn = command_fn(argv[optind]);
#ifdef GH_CLI_HOOKS_ONLY
        if (fn == NULL) {
                fprintf(stderr, "gpu-cdi-hook: '%s' is not a hook command; run it with gpu-cli\n", argv[optind]);
                return GH_EXIT_USAGE;
        }
#endif
        if (fn == NULL) {
                fprintf(stderr, "gpu-cli: unknown command '%s'; see 'gpu-cli --help'\n", argv[optind]);
                return GH_EXIT_USAGE;
        }
        int sub = optind;
        optind = 0; /* reset getopt for the subcommand's own parsing */
        return fn(argc - sub, argv + sub, &g);
}
