/* gpu-cli configure: the request from the command line (request.h), then gh_configure() in
 * lib/core/configure.c, or with --dry-run the plan it would apply, as JSON. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capability.h"
#include "cleanup.h"
#include "cli.h"
#include "configure.h"
#include "log.h"
#include "plan.h"
#include "request.h"
#include "rootfs.h"

static void configure_usage(FILE *out)
{
        fprintf(out,
                "Usage: gpu-cli [GLOBAL OPTIONS] configure --pid=PID [OPTIONS] ROOTFS\n"
                "       gpu-cli [GLOBAL OPTIONS] configure --dry-run [OPTIONS] ROOTFS\n"
                "\n"
                "Injects the NVIDIA driver into the container whose init process is PID and whose root\n"
                "filesystem is ROOTFS (a host path, absolute, not /).  Works from a createRuntime or prestart\n"
                "hook and by hand on a running container.  --dry-run prints the plan as JSON instead and\n"
                "changes nothing (docs/plan.md); `gpu-cli list --json` prints the same plan.\n"
                "\n"
                "  -p, --pid=PID              host pid of the container's process (required)\n"
                "      --dry-run              print what would be injected; no --pid needed\n"
                "  -d, --device=LIST          GPUs: all, none, indices, GPU-/MIG- UUIDs, bus ids, GPU:MIG\n"
                "  -R, --require=EXPR         requirement that must hold (repeatable), e.g. cuda>=12.0\n"
                "  -c, --compute --utility --video --graphics --display --ngx --compat32\n"
                "                             driver capabilities (none given: device nodes only, as nvidia-container-cli)\n"
                "  -l, --ldconfig=@PATH       update the ld cache with the HOST's ldconfig at PATH, sandboxed\n"
                "                             (default: gpu-cli writes /etc/ld.so.cache itself)\n"
                "      --user=UID[:GID]       identity of the driver service child (as the global option)\n"
                "      --no-cgroups           do not touch the device cgroup\n"
                "      --no-devbind           create device nodes with mknod instead of bind mounts\n"
                "      --mig-config=all       give the MIG configuration capability (privileged containers)\n"
                "      --mig-monitor=all      give the MIG monitoring capability (privileged containers)\n"
                "      --imex-channel=N       give IMEX channel N (repeatable, or a comma list; at most %d)\n"
                "      --no-persistenced --no-fabricmanager --no-gsp-firmware\n"
                "      --mps-pipe-dir=DIR     the MPS pipe directory (default /tmp/nvidia-mps)\n"
                "\n"
                "Exit status: 0 success, 1 failure, 2 usage error, 3 no driver found, 4 requirement not met.\n",
                GH_REQUEST_MAX_IMEX_CHANNELS);
}

struct configure_args {
        pid_t pid;
        bool dry_run, help;
};

enum { OPT_DRY_RUN = 0x100 };

static int parse_pid(const char *s, pid_t *pid)
{
        char *end;
        long v;
        errno = 0;
        v = strtol(s, &end, 10);
        if (errno || *end || end == s || v <= 0 || v > 4194304)
                return -1;
        *pid = (pid_t) v;
        return 0;
}

static int configure_option(int c, const char *arg, struct gh_request *req, void *data, gh_error_t *err)
{
        struct configure_args *a = data;

        switch (c) {
        case 'p':
                if (parse_pid(arg, &a->pid) < 0)
                        return gh_err(err, 0, "invalid --pid '%s': pass the host pid of the container's process", arg);
                return 0;
        case 'l': return gh_request_option(req, GH_REQUEST_OPT_LDCONFIG, arg, err);
        case 'c': return gh_request_option(req, GH_REQUEST_OPT_COMPUTE, NULL, err);
        case OPT_DRY_RUN: a->dry_run = true; return 0;
        case 'h': a->help = true; return 1;
        default: return gh_err(err, 0, "unknown option; see 'gpu-cli configure --help'");
        }
}

/* The plan for ROOTFS, as JSON on stdout. */
static int dry_run(const struct cli_globals *g, const struct gh_request *req, const char *rootfs)
{
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_close_ int fd = gh_rootfs_open(rootfs, &err);
        struct gh_plan plan = { 0 };
        struct gh_layout layout;
        int r;

        if (fd < 0) {
                fprintf(stderr, "gpu-cli: configure: ROOTFS: %s\n", err->msg);
                return CLI_EXIT_USAGE;
        }
        gh_layout_detect(fd, &layout);
        if (gh_plan_for_root(g->root, g->ldcache, NULL, req, &layout, &plan, &err) < 0) {
                fprintf(stderr, "gpu-cli: configure: %s\n", err->msg);
                return gh_error_exit_status(err);
        }
        r = cli_print_json(cli_plan_json(&plan, g->root, CLI_PLAN_ALL));
        gh_plan_free(&plan);
        if (r < 0) {
                fprintf(stderr, "gpu-cli: configure: writing the plan: %m\n");
                return CLI_EXIT_FAILURE;
        }
        return CLI_EXIT_OK;
}

int cmd_configure(int argc, char **argv, const struct cli_globals *g)
{
        static const struct option opts[] = {
                { "pid", required_argument, NULL, 'p' },
                { "dry-run", no_argument, NULL, OPT_DRY_RUN },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        struct configure_args a = { 0 };
        const struct gh_request_cli cli = {
                .options = opts, .shortopts = "p:d:R:l:ch", .option = configure_option, .data = &a
        };
        _cleanup_request_ struct gh_request req = GH_REQUEST_INIT;
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_configure_opts o = { .root = g->root, .ldcache = g->ldcache, .req = &req };
        struct gh_configure_timings t;
        int first;

        if (cli_request_init(&req, g, &err) < 0 || (first = gh_request_parse_args(&req, argc, argv, &cli, &err)) < 0) {
                fprintf(stderr, "gpu-cli: configure: %s\n", err->msg);
                return gh_error_exit_status(err);
        }
        if (a.help) {
                configure_usage(stdout);
                return CLI_EXIT_OK;
        }
        if (first != argc - 1) {
                fprintf(stderr,
                        "gpu-cli: configure needs exactly one ROOTFS argument; see 'gpu-cli configure --help'\n");
                return CLI_EXIT_USAGE;
        }
        o.rootfs = argv[first];
        if (o.rootfs[0] != '/' || strcmp(o.rootfs, "/") == 0) {
                fprintf(stderr, "gpu-cli: ROOTFS '%s' must be an absolute path other than /\n", o.rootfs);
                return CLI_EXIT_USAGE;
        }
        if (a.dry_run)
                return dry_run(g, &req, o.rootfs);
        if (a.pid == 0) {
                fprintf(stderr, "gpu-cli: configure needs --pid=PID (the host pid of the container's process)\n");
                return CLI_EXIT_USAGE;
        }
        o.pid = a.pid;
        if (gh_configure(&o, &t, &err) < 0) {
                fprintf(stderr, "gpu-cli: configure: %s\n", err && err->msg ? err->msg : "failed");
                return gh_error_exit_status(err);
        }
        gh_debug("configure done in %ld us (discover %ld, plan %ld, mount %ld, ldcache %ld, cgroup %ld, %zu items, %s)",
                 t.total_us, t.discover_us, t.plan_us, t.mount_us, t.ldcache_us, t.cgroup_us, t.items,
                 gh_gpus_origin_name(t.gpus_origin));
        return CLI_EXIT_OK;
}
