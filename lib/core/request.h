/* What a container asks for: one typed request shared by the hook, `gpu-cli list`, `gpu-cli
 * configure` and the library API.
 *
 * The hook turns a container's environment decision into a request (gh_env_request(),
 * front/env.c), hook/spawn.c writes it as gpu-cli arguments with gh_request_to_argv(), and gpu-cli
 * reads it back with gh_request_parse_args().
 * Both ends check the same limits (GH_REQUEST_MAX_*), so a request the hook accepts in a dry run is
 * one gpu-cli accepts too.  Every field is validated when it is set: a request that exists is
 * well-formed (the devices are parsed but not resolved, requirements are parsed but not checked;
 * gh_plan_build() does both against the driver). */
#ifndef GH_REQUEST_H
#define GH_REQUEST_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"
#include "select.h"

/* Limits, one set for every front end. */
#define GH_REQUEST_MAX_REQUIREMENTS 64    /* requirement expressions */
#define GH_REQUEST_MAX_IMEX_CHANNELS 2048 /* distinct IMEX channels */
#define GH_IMEX_CHANNEL_LIMIT (1u << 20)  /* channel numbers are below this */
#define GH_REQUEST_MAX_TEXT 65536         /* one device list or requirement, in bytes */

struct gh_request {
        struct gh_select_request devices; /* parsed items; devices.unset when none was given */
        unsigned caps;                    /* GH_CAP_* as asked (implications: gh_request_caps) */
        char **requirements;              /* NULL-terminated, each parsed once for syntax */
        size_t nrequirements;
        bool mig_config, mig_monitor; /* the MIG config / monitor capability nodes */
        unsigned *imex;               /* IMEX channels, distinct, in request order */
        size_t nimex;
        uid_t uid;          /* driver service child; (uid_t) -1 = the overflow uid */
        gid_t gid;          /* (gid_t) -1 = the overflow gid */
        char *ldconfig;     /* "@/sbin/ldconfig": the host's, sandboxed; NULL = native */
        char *mps_pipe_dir; /* NULL = the driver's default */
        char *mps_group;    /* an MPS group to join (docs/mps.md); NULL = none */
        char *mps_dir;      /* where MPS groups live; NULL = GH_MPS_DEFAULT_DIR */
        bool no_cgroups, no_devbind, no_persistenced, no_fabricmanager, no_gsp_firmware;
        bool no_cuda_compat; /* never prefer the image's CUDA compat libraries (docs/cuda-compat.md) */
        /* Not part of what the container asks (no request option; gpu-cli's global --state-file):
         * the driver-state cache NVML's answers may come from (front/statecache.h) and its code (the
         * gh_gpu_cache interface, gpumodel.h); NULL = none.  Not owned. */
        const char *state_file;
        const struct gh_gpu_cache *cache;
};

/* An empty request: no device, no capability, the overflow ids. */
#define GH_REQUEST_INIT                                                                                                \
        {                                                                                                              \
                .devices = { .unset = true }, .uid = (uid_t) -1, .gid = (gid_t) -1                                     \
        }
void gh_request_init(struct gh_request *req);
void gh_request_free(struct gh_request *req);
#define _cleanup_request_ __attribute__((cleanup(gh_request_free)))

/* Setters; each validates its input and returns -1 with a one-line error (kind usage) naming it. */
int gh_request_set_devices(struct gh_request *req, const char *list, gh_error_t *err);
int gh_request_add_requirement(struct gh_request *req, const char *expr, gh_error_t *err);
/* One channel number, or a comma list of them; duplicates are dropped. */
int gh_request_add_imex(struct gh_request *req, const char *channels, gh_error_t *err);
int gh_request_add_imex_channel(struct gh_request *req, unsigned long channel, gh_error_t *err);
/* "UID" or "UID:GID", numbers only. */
int gh_request_set_user(struct gh_request *req, const char *spec, gh_error_t *err);
/* "@/absolute/path" only: the image's ldconfig is never run. */
int gh_request_set_ldconfig(struct gh_request *req, const char *spec, gh_error_t *err);

/* The capability mask with implications applied (video -> compute, display -> graphics). */
unsigned gh_request_caps(const struct gh_request *req);

/* True when the request names GPUs (all or items), i.e. the GPU list must be loaded. */
bool gh_request_wants_gpus(const struct gh_request *req);

/* gpu-cli's request options, the same for `list`, `configure` and `configure --dry-run`:
 *   -d/--device=LIST  -R/--require=EXPR  --compute --utility --video --graphics --display --ngx
 *   --compat32  --mig-config=all  --mig-monitor=all  --imex-channel=N[,N...]  --user=UID[:GID]
 *   --ldconfig=@PATH  --no-cgroups --no-devbind --no-persistenced --no-fabricmanager
 *   --no-gsp-firmware  --no-cuda-compat  --mps-pipe-dir=DIR  --mps-group=NAME  --mps-dir=DIR
 * A command adds its own options (extra) with getopt values outside GH_REQUEST_OPT_*; they reach
 * `option`, which returns 0 to go on, 1 to stop parsing (e.g. --help), -1 with *err filled. */
struct gh_request_cli {
        const struct option *options; /* the command's own long options, NULL-terminated (or NULL) */
        const char *shortopts;        /* every short option the command takes ("d:R:" are the request's) */
        int (*option)(int c, const char *arg, struct gh_request *req, void *data, gh_error_t *err);
        void *data;
};

/* getopt values of the request's options (below 0x100 are short options). */
enum {
        GH_REQUEST_OPT_FIRST = 0x1000,
        GH_REQUEST_OPT_COMPUTE = GH_REQUEST_OPT_FIRST,
        GH_REQUEST_OPT_UTILITY,
        GH_REQUEST_OPT_VIDEO,
        GH_REQUEST_OPT_GRAPHICS,
        GH_REQUEST_OPT_DISPLAY,
        GH_REQUEST_OPT_NGX,
        GH_REQUEST_OPT_COMPAT32,
        GH_REQUEST_OPT_MIG_CONFIG,
        GH_REQUEST_OPT_MIG_MONITOR,
        GH_REQUEST_OPT_IMEX,
        GH_REQUEST_OPT_USER,
        GH_REQUEST_OPT_LDCONFIG,
        GH_REQUEST_OPT_NO_CGROUPS,
        GH_REQUEST_OPT_NO_DEVBIND,
        GH_REQUEST_OPT_NO_PERSISTENCED,
        GH_REQUEST_OPT_NO_FABRICMANAGER,
        GH_REQUEST_OPT_NO_GSP,
        GH_REQUEST_OPT_NO_CUDA_COMPAT,
        GH_REQUEST_OPT_MPS_PIPE_DIR,
        GH_REQUEST_OPT_MPS_GROUP,
        GH_REQUEST_OPT_MPS_DIR,
        GH_REQUEST_OPT_LAST,
};

/* Applies one request option (a GH_REQUEST_OPT_* value, 'd' or 'R') to req. */
int gh_request_option(struct gh_request *req, int opt, const char *arg, gh_error_t *err);

/* Parses argv (argv[0] is the command's name) into req with getopt_long.  Returns the index of the
 * first operand, 0 when cli->option asked to stop, or -1 with *err filled (kind usage). */
int gh_request_parse_args(struct gh_request *req, int argc, char **argv, const struct gh_request_cli *cli,
                          gh_error_t *err);

/* Appends req as gpu-cli request options to the NULL-terminated vector *argv (of *argc entries),
 * in the order gh_request_parse_args() reads them back to an equal request.  Fails (kind usage)
 * when the arguments would not fit in one command line. */
int gh_request_to_argv(const struct gh_request *req, char ***argv, size_t *argc, gh_error_t *err);

/* Appends one printf-formatted argument to *argv (NULL-terminated). */
int gh_argv_add(char ***argv, size_t *argc, gh_error_t *err, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

#endif
