/* gpu-cli list: the plan for a request (plan.h) without a container: the host files a container
 * would get, one path per line (like nvidia-container-cli list), or the plan as JSON. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capability.h"
#include "cleanup.h"
#include "cli.h"
#include "discover.h"
#include "driver.h"
#include "json.h"
#include "log.h"
#include "plan.h"
#include "request.h"
#include "rootfs.h"

enum {
        SHOW_DEVICES = 1u << GH_ROLE_DEVICE,
        SHOW_LIBRARIES = 1u << GH_ROLE_LIBRARY | 1u << GH_ROLE_LINK,
        SHOW_BINARIES = 1u << GH_ROLE_BINARY,
        SHOW_FIRMWARES = 1u << GH_ROLE_FIRMWARE,
        SHOW_IPCS = 1u << GH_ROLE_IPC,
        SHOW_CONFIGS = 1u << GH_ROLE_CONFIG,
};

static void usage(FILE *out)
{
        fprintf(out,
                "Usage: gpu-cli [GLOBAL OPTIONS] list [OPTIONS]\n"
                "\n"
                "Lists what a container asking for the same request would get from the driver under --root:\n"
                "device nodes, then libraries, programs, firmware, IPC paths and graphics loader files (Vulkan\n"
                "ICD and layer, EGL vendor and platforms, application profiles), one host path per line\n"
                "(root + path), or the whole plan as JSON.  It is `gpu-cli configure` without a container.\n"
                "\n"
                "  -d, --device=ID        also list the device nodes of these GPUs (all, indices, UUIDs, bus ids,\n"
                "                         MIG devices \"0:1\" or MIG UUIDs; as NVIDIA_VISIBLE_DEVICES)\n"
                "  -l, --libraries        list only libraries (combine the selectors to list several kinds)\n"
                "  -b, --binaries         list only programs\n"
                "  -f, --firmwares        list only firmware files\n"
                "  -i, --ipcs             list only IPC sockets and directories\n"
                "      --configs          list only graphics loader files (docs/graphics.md)\n"
                "      --compute --utility --video --graphics --display --ngx\n"
                "                         only these driver capabilities (default: all of them)\n"
                "      --compat32         include the 32-bit (i386) libraries\n"
                "  -R, --require=EXPR     a requirement that must hold (repeatable), as configure\n"
                "      --mig-config=all   include the MIG configuration capability node\n"
                "      --mig-monitor=all  include the MIG monitoring capability node\n"
                "      --imex-channel=N   include IMEX channel N (repeatable, or a comma list)\n"
                "      --no-persistenced  leave out the nvidia-persistenced socket\n"
                "      --no-fabricmanager leave out the nvidia-fabricmanager socket\n"
                "      --no-gsp-firmware  leave out the GSP firmware\n"
                "      --mps-pipe-dir=DIR the MPS pipe directory (default /tmp/nvidia-mps)\n"
                "      --mps-group=NAME   as a member of this running MPS group (docs/mps.md)\n"
                "      --mps-dir=DIR      where MPS groups live (default /run/gpu-hook/mps)\n"
                "      --rootfs=DIR       place libraries as in this container root (default: --layout), and\n"
                "                         decide on its CUDA compat libraries (--no-cuda-compat: never)\n"
                "      --layout=NAME      debian (/usr/lib/x86_64-linux-gnu, the default) or lib64\n"
                "      --json             the plan as one JSON object (docs/plan.md); with selectors, only\n"
                "                         their sections: devices, libraries and links, binaries, firmwares, ipcs,\n"
                "                         configs\n"
                "\n"
                "Other request options of configure (--user, --no-cgroups, ...) are accepted and change nothing here.\n"
                "\n"
                "Exit status: 0 success, 1 failure, 2 usage error, 3 no driver found under --root,\n"
                "4 requirement not met.\n");
}

struct list_opts {
        unsigned show;
        bool json, help;
        const char *rootfs, *layout;
};

enum { OPT_JSON = 0x100, OPT_ROOTFS, OPT_LAYOUT, OPT_CONFIGS };

static int list_option(int c, const char *arg, struct gh_request *req, void *data, gh_error_t *err)
{
        struct list_opts *o = data;

        switch (c) {
        case 'l': o->show |= SHOW_LIBRARIES; return 0;
        case 'b': o->show |= SHOW_BINARIES; return 0;
        case 'f': o->show |= SHOW_FIRMWARES; return 0;
        case 'i': o->show |= SHOW_IPCS; return 0;
        case OPT_CONFIGS: o->show |= SHOW_CONFIGS; return 0;
        case OPT_JSON: o->json = true; return 0;
        case OPT_ROOTFS: o->rootfs = arg; return 0;
        case OPT_LAYOUT: o->layout = arg; return 0;
        case 'h': o->help = true; return 1;
        default: return gh_err(err, 0, "unknown option; see 'gpu-cli list --help'");
        }
}

/* Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, const struct cli_globals *g, struct list_opts *o, struct gh_request *req)
{
        static const struct option opts[] = {
                { "libraries", no_argument, NULL, 'l' },
                { "binaries", no_argument, NULL, 'b' },
                { "firmwares", no_argument, NULL, 'f' },
                { "ipcs", no_argument, NULL, 'i' },
                { "configs", no_argument, NULL, OPT_CONFIGS },
                { "json", no_argument, NULL, OPT_JSON },
                { "rootfs", required_argument, NULL, OPT_ROOTFS },
                { "layout", required_argument, NULL, OPT_LAYOUT },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        const struct gh_request_cli cli = {
                .options = opts, .shortopts = "d:R:lbfih", .option = list_option, .data = o
        };
        _cleanup_error_ gh_error_t err = NULL;
        int first;

        if (cli_request_init(req, g, &err) < 0 || (first = gh_request_parse_args(req, argc, argv, &cli, &err)) < 0) {
                fprintf(stderr, "gpu-cli: list: %s\n", err->msg);
                return gh_error_exit_status(err);
        }
        if (o->help) {
                usage(stdout);
                return GH_EXIT_OK;
        }
        if (first < argc) {
                fprintf(stderr, "gpu-cli: list: unexpected argument '%s'; see 'gpu-cli list --help'\n", argv[first]);
                return GH_EXIT_USAGE;
        }
        if (o->show == 0)
                o->show = CLI_PLAN_ALL;
        /* list shows every capability unless some are named; --compat32 alone adds i386. */
        if ((req->caps & ~GH_CAP_COMPAT32) == 0)
                req->caps |= GH_CAP_ALL & ~GH_CAP_COMPAT32;
        return -1;
}

/* The layout, and with --rootfs the open root (*rootfd, else -1) for the image's part of the plan. */
static int layout_for(const struct list_opts *o, struct gh_layout *layout, int *rootfd, gh_error_t *err)
{
        *rootfd = -1;
        if (o->rootfs == NULL)
                return gh_layout_named(o->layout ? o->layout : "debian", layout, err);
        *rootfd = gh_rootfs_open(o->rootfs, err);
        if (*rootfd < 0)
                return gh_err_wrap(err, "--rootfs");
        gh_layout_detect(*rootfd, layout);
        return 0;
}

static void print_paths(const struct gh_plan *plan, const char *prefix, enum gh_item_role role)
{
        for (size_t i = 0; i < plan->n; i++)
                if (plan->items[i].role == role)
                        printf("%s%s\n", plan->items[i].host_src ? "" : prefix, plan->items[i].src);
}

int cmd_list(int argc, char **argv, const struct cli_globals *g)
{
        static const enum gh_item_role order[] = { GH_ROLE_DEVICE,   GH_ROLE_LIBRARY, GH_ROLE_BINARY,
                                                   GH_ROLE_FIRMWARE, GH_ROLE_IPC,     GH_ROLE_CONFIG };
        struct list_opts o = { 0 };
        _cleanup_request_ struct gh_request req = GH_REQUEST_INIT;
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_free_ char *prefix = NULL;
        struct gh_plan plan = { 0 };
        struct gh_layout layout;
        _cleanup_close_ int rootfd = -1;
        int r;

        r = parse_args(argc, argv, g, &o, &req);
        if (r >= 0)
                return r;
        if (layout_for(&o, &layout, &rootfd, &err) < 0) {
                fprintf(stderr, "gpu-cli: list: %s\n", err->msg);
                return gh_err_kind(&err, GH_ERR_USAGE), gh_error_exit_status(err);
        }
        if (gh_plan_for_root(g->root, g->ldcache, NULL, &req, &layout, &plan, &err) < 0 ||
            (rootfd >= 0 && gh_plan_for_image(&plan, rootfd, AT_FDCWD, &req, &err) < 0)) {
                gh_plan_free(&plan);
                fprintf(stderr, "gpu-cli: list: %s\n", err->msg);
                return gh_error_exit_status(err);
        }
        if (o.json) {
                r = gh_json_print(cli_plan_json(&plan, g->root, o.show)) < 0 ? GH_EXIT_FAILURE : GH_EXIT_OK;
                gh_plan_free(&plan);
                if (r != GH_EXIT_OK)
                        fprintf(stderr, "gpu-cli: list: writing the output: %m\n");
                return r;
        }
        /* Host paths: the root's own path in front, without a doubled slash. */
        prefix = strdup(g->root);
        if (prefix == NULL) {
                gh_plan_free(&plan);
                return GH_EXIT_FAILURE;
        }
        for (size_t n = strlen(prefix); n > 0 && prefix[n - 1] == '/'; n--)
                prefix[n - 1] = '\0';
        for (size_t i = 0; i < GH_ARRAY_SIZE(order); i++)
                if (o.show & (1u << order[i]))
                        print_paths(&plan, prefix, order[i]);
        gh_plan_free(&plan);
        if (fflush(stdout) != 0) {
                fprintf(stderr, "gpu-cli: list: writing the output: %m\n");
                return GH_EXIT_FAILURE;
        }
        return GH_EXIT_OK;
}
