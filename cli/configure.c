/* gpu-cli configure: flag parsing only; the work is gh_configure() in lib/configure.c. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capability.h"
#include "cleanup.h"
#include "cli.h"
#include "configure.h"
#include "gpus.h"
#include "log.h"

static void configure_usage(FILE *out)
{
        fprintf(out,
                "Usage: gpu-cli [GLOBAL OPTIONS] configure --pid=PID [OPTIONS] ROOTFS\n"
                "\n"
                "Injects the NVIDIA driver into the container whose init process is PID and whose root\n"
                "filesystem is ROOTFS (a host path, absolute, not /).  Works from a createRuntime or prestart\n"
                "hook and by hand on a running container.\n"
                "\n"
                "  -p, --pid=PID              host pid of the container's process (required)\n"
                "  -d, --device=LIST          GPUs: all, none, indices, GPU-/MIG- UUIDs, bus ids, GPU:MIG\n"
                "  -R, --require=EXPR         requirement that must hold (repeatable), e.g. cuda>=12.0\n"
                "  -c, --compute --utility --video --graphics --display --ngx --compat32\n"
                "                             driver capabilities (none given: device nodes only, as nvidia-container-cli)\n"
                "  -l, --ldconfig=@PATH       update the ld cache with the HOST's ldconfig at PATH, sandboxed\n"
                "                             (default: gpu-cli writes /etc/ld.so.cache itself)\n"
                "      --no-cgroups           do not touch the device cgroup\n"
                "      --no-devbind           create device nodes with mknod instead of bind mounts\n"
                "      --mig-config=all       give the MIG configuration capability (privileged containers)\n"
                "      --mig-monitor=all      give the MIG monitoring capability (privileged containers)\n"
                "      --imex-channel=N       give IMEX channel N (repeatable)\n"
                "      --no-persistenced --no-fabricmanager --no-gsp-firmware\n"
                "\n"
                "Exit status: 0 success, 1 failure, 2 usage error, 3 no driver found, 4 requirement not met.\n");
}

enum {
        OPT_COMPUTE = 1000, OPT_UTILITY, OPT_VIDEO, OPT_GRAPHICS, OPT_DISPLAY, OPT_NGX, OPT_COMPAT32,
        OPT_NO_CGROUPS, OPT_NO_DEVBIND, OPT_MIG_CONFIG, OPT_MIG_MONITOR, OPT_IMEX, OPT_NO_PERSISTENCED,
        OPT_NO_FABRICMANAGER, OPT_NO_GSP,
};

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

int cmd_configure(int argc, char **argv, const struct cli_globals *g)
{
        static const struct option opts[] = {
                { "pid", required_argument, NULL, 'p' },
                { "device", required_argument, NULL, 'd' },
                { "require", required_argument, NULL, 'R' },
                { "ldconfig", required_argument, NULL, 'l' },
                { "compute", no_argument, NULL, OPT_COMPUTE },
                { "utility", no_argument, NULL, OPT_UTILITY },
                { "video", no_argument, NULL, OPT_VIDEO },
                { "graphics", no_argument, NULL, OPT_GRAPHICS },
                { "display", no_argument, NULL, OPT_DISPLAY },
                { "ngx", no_argument, NULL, OPT_NGX },
                { "compat32", no_argument, NULL, OPT_COMPAT32 },
                { "no-cgroups", no_argument, NULL, OPT_NO_CGROUPS },
                { "no-devbind", no_argument, NULL, OPT_NO_DEVBIND },
                { "mig-config", required_argument, NULL, OPT_MIG_CONFIG },
                { "mig-monitor", required_argument, NULL, OPT_MIG_MONITOR },
                { "imex-channel", required_argument, NULL, OPT_IMEX },
                { "no-persistenced", no_argument, NULL, OPT_NO_PERSISTENCED },
                { "no-fabricmanager", no_argument, NULL, OPT_NO_FABRICMANAGER },
                { "no-gsp-firmware", no_argument, NULL, OPT_NO_GSP },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        struct gh_configure_opts o = { .root = g->root, .ldcache = g->ldcache, .user = g->user,
                                       .state_file = g->state_file };
        struct gh_configure_timings t;
        _cleanup_error_ gh_error_t err = NULL;
        int c;

        while ((c = getopt_long(argc, argv, "p:d:R:l:ch", opts, NULL)) != -1) {
                switch (c) {
                case 'p':
                        if (parse_pid(optarg, &o.pid) < 0) {
                                fprintf(stderr, "gpu-cli: invalid --pid '%s': pass the host pid of the container's process\n", optarg);
                                return CLI_EXIT_USAGE;
                        }
                        break;
                case 'd': o.device = optarg; break;
                case 'R':
                        if (o.nrequires >= GH_MAX_REQUIRES) {
                                fprintf(stderr, "gpu-cli: too many --require options (at most %d)\n", GH_MAX_REQUIRES);
                                return CLI_EXIT_USAGE;
                        }
                        o.requires[o.nrequires++] = optarg;
                        break;
                case 'l':
                        /* nvidia-container-cli accepted an image path; running the image's ldconfig
                         * as root is what SECURITY rule 3 forbids, so only host paths are taken. */
                        if (optarg[0] != '@') {
                                fprintf(stderr, "gpu-cli: --ldconfig=%s: only a host ldconfig written as @/path is accepted (the image's ldconfig is never run)\n", optarg);
                                return CLI_EXIT_USAGE;
                        }
                        o.ldconfig = optarg;
                        break;
                case 'c':
                case OPT_COMPUTE: o.caps |= GH_CAP_COMPUTE; break;
                case OPT_UTILITY: o.caps |= GH_CAP_UTILITY; break;
                case OPT_VIDEO: o.caps |= GH_CAP_VIDEO; break;
                case OPT_GRAPHICS: o.caps |= GH_CAP_GRAPHICS; break;
                case OPT_DISPLAY: o.caps |= GH_CAP_DISPLAY; break;
                case OPT_NGX: o.caps |= GH_CAP_NGX; break;
                case OPT_COMPAT32: o.caps |= GH_CAP_COMPAT32; break;
                case OPT_NO_CGROUPS: o.no_cgroups = true; break;
                case OPT_NO_DEVBIND: o.no_devbind = true; break;
                case OPT_MIG_CONFIG:
                case OPT_MIG_MONITOR:
                        if (strcmp(optarg, "all") != 0) {
                                fprintf(stderr, "gpu-cli: --%s=%s: only 'all' is supported\n",
                                        c == OPT_MIG_CONFIG ? "mig-config" : "mig-monitor", optarg);
                                return CLI_EXIT_USAGE;
                        }
                        if (c == OPT_MIG_CONFIG)
                                o.mig_config = optarg;
                        else
                                o.mig_monitor = optarg;
                        break;
                case OPT_IMEX: {
                        char *end;
                        unsigned long v;
                        errno = 0;
                        v = strtoul(optarg, &end, 10);
                        if (errno || *end || end == optarg || v >= (1ul << 20) || o.nimex >= GH_MAX_IMEX) {
                                fprintf(stderr, "gpu-cli: invalid --imex-channel '%s': a channel number below 1048576\n", optarg);
                                return CLI_EXIT_USAGE;
                        }
                        o.imex[o.nimex++] = (unsigned) v;
                        break;
                }
                case OPT_NO_PERSISTENCED: o.no_persistenced = true; break;
                case OPT_NO_FABRICMANAGER: o.no_fabricmanager = true; break;
                case OPT_NO_GSP: o.no_gsp_firmware = true; break;
                case 'h': configure_usage(stdout); return CLI_EXIT_OK;
                default: configure_usage(stderr); return CLI_EXIT_USAGE;
                }
        }
        if (optind != argc - 1) {
                fprintf(stderr, "gpu-cli: configure needs exactly one ROOTFS argument; see 'gpu-cli configure --help'\n");
                return CLI_EXIT_USAGE;
        }
        o.rootfs = argv[optind];
        if (o.pid == 0) {
                fprintf(stderr, "gpu-cli: configure needs --pid=PID (the host pid of the container's process)\n");
                return CLI_EXIT_USAGE;
        }
        if (o.rootfs[0] != '/' || strcmp(o.rootfs, "/") == 0) {
                fprintf(stderr, "gpu-cli: ROOTFS '%s' must be an absolute path other than /\n", o.rootfs);
                return CLI_EXIT_USAGE;
        }
        int r = gh_configure(&o, &t, &err);
        if (r < 0) {
                fprintf(stderr, "gpu-cli: configure: %s\n", err && err->msg ? err->msg : "failed");
                return r == GH_CONFIGURE_UNMET ? CLI_EXIT_REQUIREMENT
                       : r == GH_CONFIGURE_NO_DRIVER ? CLI_EXIT_NO_DRIVER
                                                     : CLI_EXIT_FAILURE;
        }
        gh_debug("configure done in %ld us (discover %ld, plan %ld, mount %ld, ldcache %ld, cgroup %ld, %s)", t.total_us,
                 t.discover_us, t.plan_us, t.mount_us, t.ldcache_us, t.cgroup_us, gh_gpus_origin_name(t.gpus_origin));
        return CLI_EXIT_OK;
}
