/* gpu-cli configure: the request from the command line (request.h), then gh_configure() in
 * lib/core/configure.c, or with --dry-run the plan it would apply, as JSON. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "capability.h"
#include "cleanup.h"
#include "cli.h"
#include "configure.h"
#include "discover.h"
#include "json.h"
#include "log.h"
#include "plan.h"
#include "proc.h"
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
                "      --no-cuda-compat       never prefer the image's CUDA compat libraries (docs/cuda-compat.md)\n"
                "      --mps-pipe-dir=DIR     the MPS pipe directory (default /tmp/nvidia-mps)\n"
                "      --mps-group=NAME       join a running MPS group: its pipe directory and /dev/shm (docs/mps.md)\n"
                "      --mps-dir=DIR          where MPS groups live (default /run/gpu-hook/mps)\n"
                "      --timings-fd=FD        write one line of phase timings to FD when done (gpu-hook logs it)\n"
                "\n"
                "Exit status: 0 success, 1 failure, 2 usage error, 3 no driver found, 4 requirement not met.\n",
                GH_REQUEST_MAX_IMEX_CHANNELS);
}

struct configure_args {
        pid_t pid;
        int timings_fd;
        bool dry_run, help;
};

enum { OPT_DRY_RUN = 0x100, OPT_TIMINGS_FD };

static int configure_option(int c, const char *arg, struct gh_request *req, void *data, gh_error_t *err)
{
        struct configure_args *a = data;

        switch (c) {
        case 'p':
                if (gh_parse_pid(arg, &a->pid) < 0)
                        return gh_err(err, 0, "invalid --pid '%s': pass the host pid of the container's process", arg);
                return 0;
        case 'l': return gh_request_option(req, GH_REQUEST_OPT_LDCONFIG, arg, err);
        case 'c': return gh_request_option(req, GH_REQUEST_OPT_COMPUTE, NULL, err);
        case OPT_DRY_RUN: a->dry_run = true; return 0;
        case OPT_TIMINGS_FD: {
                char *end;
                long v = strtol(arg, &end, 10);
                /* Close-on-exec: nothing configure runs (a sandboxed ldconfig) inherits it. */
                if (*arg == '\0' || *end || v < 3 || v > 1000000 || fcntl((int) v, F_SETFD, FD_CLOEXEC) < 0)
                        return gh_err(err, 0, "invalid --timings-fd '%s': pass an open fd number >= 3", arg);
                a->timings_fd = (int) v;
                return 0;
        }
        case 'h': a->help = true; return 1;
        default: return gh_err(err, 0, "unknown option; see 'gpu-cli configure --help'");
        }
}

static long long mono_us(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* --timings-fd: one line of KEY=MICROSECONDS for gpu-hook's log.  started/begin/end are
 * CLOCK_MONOTONIC instants (main() entered, gh_configure() called, it returned): the caller, on the
 * same clock, sees from them what exec and loading took before main() and exiting took after. */
static void write_timings(int fd, const struct cli_globals *g, long long begin_us, const struct gh_configure_timings *t)
{
        char line[512];
        int n = snprintf(
                line, sizeof(line),
                "started=%lld begin=%lld end=%lld driver=%ld gpus=%ld plan=%ld open=%ld enter=%ld apply=%ld ldcache=%ld cgroup=%ld total=%ld items=%zu\n",
                g->started_us, begin_us, mono_us(), t->discover_us - t->gpus_us, t->gpus_us, t->plan_us - t->open_us,
                t->open_us, t->enter_us, t->mount_us - t->enter_us, t->ldcache_us, t->cgroup_us, t->total_us, t->items);
        if (n > 0 && write(fd, line, (size_t) n) < 0)
                gh_debug("--timings-fd %d: %m", fd);
        close(fd);
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
                return GH_EXIT_USAGE;
        }
        gh_layout_detect(fd, &layout);
        if (gh_plan_for_root(g->root, g->ldcache, NULL, req, &layout, &plan, &err) < 0 ||
            gh_plan_for_image(&plan, fd, AT_FDCWD, req, &err) < 0) {
                gh_plan_free(&plan);
                fprintf(stderr, "gpu-cli: configure: %s\n", err->msg);
                return gh_error_exit_status(err);
        }
        r = gh_json_print(cli_plan_json(&plan, g->root, CLI_PLAN_ALL));
        gh_plan_free(&plan);
        if (r < 0) {
                fprintf(stderr, "gpu-cli: configure: writing the plan: %m\n");
                return GH_EXIT_FAILURE;
        }
        return GH_EXIT_OK;
}

int cmd_configure(int argc, char **argv, const struct cli_globals *g)
{
        static const struct option opts[] = {
                { "pid", required_argument, NULL, 'p' },
                { "dry-run", no_argument, NULL, OPT_DRY_RUN },
                { "timings-fd", required_argument, NULL, OPT_TIMINGS_FD },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        struct configure_args a = { .timings_fd = -1 };
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
                return GH_EXIT_OK;
        }
        if (first != argc - 1) {
                fprintf(stderr,
                        "gpu-cli: configure: give exactly one ROOTFS argument; see 'gpu-cli configure --help'\n");
                return GH_EXIT_USAGE;
        }
        o.rootfs = argv[first];
        if (o.rootfs[0] != '/' || strcmp(o.rootfs, "/") == 0) {
                fprintf(stderr, "gpu-cli: configure: ROOTFS '%s' must be an absolute path other than /\n", o.rootfs);
                return GH_EXIT_USAGE;
        }
        if (a.dry_run)
                return dry_run(g, &req, o.rootfs);
        if (a.pid == 0) {
                fprintf(stderr,
                        "gpu-cli: configure: --pid=PID is required (the host pid of the container's process)\n");
                return GH_EXIT_USAGE;
        }
        o.pid = a.pid;
        long long begin_us = mono_us();
        int r = gh_configure(&o, &t, &err);
        if (a.timings_fd >= 0)
                write_timings(a.timings_fd, g, begin_us, &t);
        if (r < 0) {
                fprintf(stderr, "gpu-cli: configure: %s\n", err && err->msg ? err->msg : "failed");
                return gh_error_exit_status(err);
        }
        gh_debug("configure done in %ld us (discover %ld, plan %ld, mount %ld, ldcache %ld, cgroup %ld, %zu items, %s)",
                 t.total_us, t.discover_us, t.plan_us, t.mount_us, t.ldcache_us, t.cgroup_us, t.items,
                 gh_gpus_origin_name(t.gpus_origin));
        return GH_EXIT_OK;
}
