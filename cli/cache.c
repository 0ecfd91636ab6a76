/* gpu-cli cache refresh|show|clear: the driver-state cache (lib/front/statecache.h, docs/statecache.md). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cgroup.h"
#include "cleanup.h"
#include "discover.h"
#include "cli.h"
#include "gpus.h"
#include "rootfs.h"
#include "service.h"
#include "statecache.h"

static void usage(FILE *out)
{
        fprintf(out,
                "Usage: gpu-cli [GLOBAL OPTIONS] cache refresh|show|clear|fingerprint|unpin [--timeout=SECONDS] [--repeat=N]\n"
                "\n"
                "The driver-state cache keeps NVML's answers (CUDA version, brand, architecture, MIG devices)\n"
                "so that container starts need no NVML while the driver is unchanged.  It lives in\n"
                "--state-file (default " GH_STATECACHE_DEFAULT " for --root=/).\n"
                "\n"
                "  refresh    ask NVML now and save the answer (run at boot and after driver or MIG changes)\n"
                "  show       say whether the cache holds for the driver as it is now, then print it\n"
                "  clear      remove it and the plans kept with it (the next query that needs NVML fills it again)\n"
                "  fingerprint  print what the cache is keyed on, as it is now; with --repeat=N, compute it N\n"
                "             times and print the median time (what every container start pays on a hit)\n"
                "  unpin      unpin the cgroup v2 device programs kept for reuse in " GH_CGROUP_BPF_PIN_DIR "\n"
                "             and forget the ids kept in " GH_CGROUP_BPF_ID_DIR " where no bpffs is\n"
                "             (containers keep theirs; the next start loads and keeps again)\n"
                "  --timeout=SECONDS  how long to wait for each NVML answer (refresh; default 5)\n"
                "\n"
                "Exit status: 0 success (show: the cache holds), 1 failure (show: missing, stale or ignored),\n"
                "2 usage error, 3 no driver.\n");
}

static int open_driver(const struct cli_globals *g, int *rootfd)
{
        _cleanup_error_ gh_error_t err = NULL;
        char version[GH_VERSION_MAX];

        *rootfd = gh_driver_root_open(g->root, &err);
        if (*rootfd < 0) {
                fprintf(stderr, "gpu-cli: cache: %s; check --root\n", err->msg);
                return gh_error_exit_status(err);
        }
        if (gh_gpus_driver_version(*rootfd, version, sizeof(version), &err) < 0) {
                fprintf(stderr, "gpu-cli: cache: %s\n", err->msg);
                return gh_error_exit_status(err);
        }
        return GH_EXIT_OK;
}

static int refresh(const struct cli_globals *g, int timeout_ms)
{
        struct gh_gpus_opts gopts = GH_GPUS_OPTS_DEFAULT;
        _cleanup_driver_fp_ struct gh_driver_fp fp = { 0 };
        _cleanup_gpu_list_ struct gh_gpu_list list = { 0 };
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_close_ int rootfd = -1;
        int r;

        if ((r = open_driver(g, &rootfd)) != GH_EXIT_OK)
                return r;
        gopts.uid = g->uid;
        gopts.gid = g->gid;
        gopts.timeout_ms = timeout_ms;
        /* The fingerprint first: a change while NVML answers leaves a cache that does not match. */
        if (gh_driver_fingerprint(rootfd, NULL, &fp, &err) < 0 || gh_gpus_load(rootfd, &gopts, &list, &err) < 0 ||
            gh_statecache_save(g->state_file, &fp, &list, &err) < 0) {
                fprintf(stderr, "gpu-cli: cache refresh: %s\n", err->msg);
                return GH_EXIT_FAILURE;
        }
        printf("driver-state cache %s: %zu GPU(s), driver %s, CUDA %s\n", g->state_file, list.n, list.driver_version,
               list.cuda_version);
        return GH_EXIT_OK;
}

static long now_ns(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static int cmp_long(const void *a, const void *b)
{
        long x = *(const long *) a, y = *(const long *) b;
        return (x > y) - (x < y);
}

static int fingerprint(const struct cli_globals *g, int repeat)
{
        _cleanup_driver_fp_ struct gh_driver_fp fp = { 0 };
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_close_ int rootfd = -1;
        _cleanup_free_ long *ns = NULL;
        int r;

        if ((r = open_driver(g, &rootfd)) != GH_EXIT_OK)
                return r;
        if (gh_driver_fingerprint(rootfd, NULL, &fp, &err) < 0) {
                fprintf(stderr, "gpu-cli: cache fingerprint: %s\n", err->msg);
                return GH_EXIT_FAILURE;
        }
        if (repeat <= 0) {
                fputs(fp.text, stdout);
                return GH_EXIT_OK;
        }
        /* As on a hit: the library paths are known (from the cache file), the ld.so.cache is not parsed. */
        ns = calloc((size_t) repeat, sizeof(*ns));
        if (ns == NULL)
                return GH_EXIT_FAILURE;
        for (int i = 0; i < repeat; i++) {
                struct gh_driver_fp again = { 0 };
                long t0 = now_ns();
                r = gh_driver_fingerprint(rootfd, fp.libs, &again, &err);
                ns[i] = now_ns() - t0;
                gh_driver_fp_free(&again);
                if (r < 0) {
                        fprintf(stderr, "gpu-cli: cache fingerprint: %s\n", err->msg);
                        return GH_EXIT_FAILURE;
                }
        }
        qsort(ns, (size_t) repeat, sizeof(*ns), cmp_long);
        printf("fingerprint: median %.1f us, min %.1f us, max %.1f us (%d runs, %zu bytes)\n", ns[repeat / 2] / 1000.0,
               ns[0] / 1000.0, ns[repeat - 1] / 1000.0, repeat, strlen(fp.text));
        return GH_EXIT_OK;
}

static int show(const struct cli_globals *g)
{
        _cleanup_gpu_list_ struct gh_gpu_list list = { 0 };
        _cleanup_close_ int rootfd = -1;
        _cleanup_fclose_ FILE *f = NULL;
        char why[256], buf[4096];
        size_t n;
        int r;

        if ((r = open_driver(g, &rootfd)) != GH_EXIT_OK)
                return r;
        r = gh_statecache_lookup(rootfd, g->state_file, &list, why, sizeof(why));
        printf("driver-state cache %s: %s\n", g->state_file, r > 0 ? "fresh (holds for the driver as it is now)" : why);
        if (r <= 0 && strncmp(why, "stale", 5) != 0)
                return GH_EXIT_FAILURE;
        /* Stale or fresh, the file itself passed every check: show it. */
        f = fopen(g->state_file, "re");
        while (f != NULL && (n = fread(buf, 1, sizeof(buf), f)) > 0)
                fwrite(buf, 1, n, stdout);
        return r > 0 ? GH_EXIT_OK : GH_EXIT_FAILURE;
}

int cmd_cache(int argc, char **argv, const struct cli_globals *g)
{
        static const struct option opts[] = {
                { "timeout", required_argument, NULL, 't' },
                { "repeat", required_argument, NULL, 'r' },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        _cleanup_error_ gh_error_t err = NULL;
        int c, timeout_ms = 0, repeat = 0;
        const char *action;

        while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
                switch (c) {
                case 't': {
                        char *end;
                        long s = strtol(optarg, &end, 10);
                        if (*optarg == '\0' || *end != '\0' || s < 1 || s > 3600) {
                                fprintf(stderr, "gpu-cli: cache: --timeout '%s' must be 1..3600 seconds\n", optarg);
                                return GH_EXIT_USAGE;
                        }
                        timeout_ms = (int) s * 1000;
                        break;
                }
                case 'r': {
                        char *end;
                        long n = strtol(optarg, &end, 10);
                        if (*optarg == '\0' || *end != '\0' || n < 1 || n > 1000000) {
                                fprintf(stderr, "gpu-cli: cache: --repeat '%s' must be 1..1000000\n", optarg);
                                return GH_EXIT_USAGE;
                        }
                        repeat = (int) n;
                        break;
                }
                case 'h': usage(stdout); return GH_EXIT_OK;
                default: usage(stderr); return GH_EXIT_USAGE;
                }
        }
        if (optind + 1 != argc) {
                fprintf(stderr,
                        "gpu-cli: cache: say refresh, show, clear, fingerprint or unpin; see 'gpu-cli cache --help'\n");
                return GH_EXIT_USAGE;
        }
        action = argv[optind];
        if (strcmp(action, "fingerprint") == 0)
                return fingerprint(g, repeat);
        if (strcmp(action, "unpin") == 0) {
                int n = gh_cgroup_bpf_forget(&err);
                if (n < 0) {
                        fprintf(stderr, "gpu-cli: cache unpin: %s\n", err->msg);
                        return GH_EXIT_FAILURE;
                }
                printf("unpinned %d device program(s)\n", n);
                return GH_EXIT_OK;
        }
        if (strcmp(action, "refresh") != 0 && strcmp(action, "show") != 0 && strcmp(action, "clear") != 0) {
                fprintf(stderr, "gpu-cli: cache: unknown action '%s'; use refresh, show, clear, fingerprint or unpin\n",
                        action);
                return GH_EXIT_USAGE;
        }
        if (g->state_file == NULL) {
                fprintf(stderr,
                        "gpu-cli: cache: no driver-state cache for --root=%s (or --no-cache given); "
                        "name one with --state-file=FILE\n",
                        g->root);
                return GH_EXIT_USAGE;
        }
        if (strcmp(action, "refresh") == 0)
                return refresh(g, timeout_ms);
        if (strcmp(action, "show") == 0)
                return show(g);
        if (gh_statecache_clear(g->state_file, &err) < 0) {
                fprintf(stderr, "gpu-cli: cache clear: %s\n", err->msg);
                return GH_EXIT_FAILURE;
        }
        return GH_EXIT_OK;
}
