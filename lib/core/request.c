#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capability.h"
#include "cleanup.h"
#include "mps.h"
#include "request.h"
#include "require.h"
#include "service.h"

/* The whole gpu-cli command line the hook may build: well below the kernel's ARG_MAX (2 MiB with
 * the default 8 MiB stack), so a request the hook accepted always starts. */
#define ARGV_MAX_BYTES (1u << 20)

/* Bad input in a request is the caller's to fix: a usage error. */
#define invalid(err, ...) gh_err_usage(err, __VA_ARGS__)

void gh_request_init(struct gh_request *req)
{
        memset(req, 0, sizeof(*req));
        req->devices.unset = true;
        req->uid = (uid_t) -1;
        req->gid = (gid_t) -1;
}

void gh_request_free(struct gh_request *req)
{
        gh_select_request_free(&req->devices);
        for (size_t i = 0; i < req->nrequirements; i++)
                free(req->requirements[i]);
        free(req->requirements);
        free(req->imex);
        free(req->ldconfig);
        free(req->mps_pipe_dir);
        free(req->mps_group);
        free(req->mps_dir);
        gh_request_init(req);
}

int gh_request_set_devices(struct gh_request *req, const char *list, gh_error_t *err)
{
        struct gh_select_request parsed = { 0 };

        if (strlen(list) > GH_REQUEST_MAX_TEXT)
                return invalid(err, "--device: the list is longer than %d bytes", GH_REQUEST_MAX_TEXT);
        if (gh_select_parse(list, &parsed, err) < 0)
                return gh_err_kind(err, GH_ERR_USAGE), gh_err_wrap(err, "--device");
        gh_select_request_free(&req->devices);
        req->devices = parsed;
        return 0;
}

int gh_request_add_requirement(struct gh_request *req, const char *expr, gh_error_t *err)
{
        struct gh_require *parsed = NULL;
        char **grown;

        if (req->nrequirements >= GH_REQUEST_MAX_REQUIREMENTS)
                return invalid(err, "more than %d requirements; merge them into fewer expressions",
                               GH_REQUEST_MAX_REQUIREMENTS);
        if (strlen(expr) > GH_REQUEST_MAX_TEXT)
                return invalid(err, "requirement longer than %d bytes", GH_REQUEST_MAX_TEXT);
        if (gh_require_parse(expr, &parsed, err) < 0)
                return gh_err_kind(err, GH_ERR_USAGE);
        gh_require_free(parsed);
        grown = realloc(req->requirements, (req->nrequirements + 2) * sizeof(char *));
        if (grown == NULL)
                return gh_err(err, ENOMEM, "reading the requirements");
        req->requirements = grown;
        req->requirements[req->nrequirements] = strdup(expr);
        if (req->requirements[req->nrequirements] == NULL)
                return gh_err(err, ENOMEM, "reading the requirements");
        req->requirements[++req->nrequirements] = NULL;
        return 0;
}

int gh_request_add_imex_channel(struct gh_request *req, unsigned long ch, gh_error_t *err)
{
        unsigned *grown;

        if (ch >= GH_IMEX_CHANNEL_LIMIT)
                return invalid(err, "IMEX channel %lu is out of range (0 to %u)", ch, GH_IMEX_CHANNEL_LIMIT - 1);
        for (size_t i = 0; i < req->nimex; i++)
                if (req->imex[i] == ch)
                        return 0;
        if (req->nimex >= GH_REQUEST_MAX_IMEX_CHANNELS)
                return invalid(err, "more than %d IMEX channels", GH_REQUEST_MAX_IMEX_CHANNELS);
        grown = realloc(req->imex, (req->nimex + 1) * sizeof(*req->imex));
        if (grown == NULL)
                return gh_err(err, ENOMEM, "reading the IMEX channels");
        req->imex = grown;
        req->imex[req->nimex++] = (unsigned) ch;
        return 0;
}

int gh_request_add_imex(struct gh_request *req, const char *channels, gh_error_t *err)
{
        _cleanup_free_ char *copy = strdup(channels);
        char *save = NULL;

        if (copy == NULL)
                return gh_err(err, ENOMEM, "reading the IMEX channels");
        for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                char *end;
                unsigned long v;

                errno = 0;
                v = strtoul(t, &end, 10);
                if (!isdigit((unsigned char) t[0]) || *end != '\0' || errno != 0 || v >= GH_IMEX_CHANNEL_LIMIT)
                        return invalid(err, "invalid IMEX channel '%.64s': channel numbers are 0 to %u", t,
                                       GH_IMEX_CHANNEL_LIMIT - 1);
                if (gh_request_add_imex_channel(req, v, err) < 0)
                        return -1;
        }
        return 0;
}

int gh_request_set_user(struct gh_request *req, const char *spec, gh_error_t *err)
{
        return gh_service_parse_user(spec, &req->uid, &req->gid, err) < 0 ? gh_err_kind(err, GH_ERR_USAGE) : 0;
}

int gh_request_set_ldconfig(struct gh_request *req, const char *spec, gh_error_t *err)
{
        char *copy;

        /* nvidia-container-cli accepted a path in the image; running the image's ldconfig as root
         * would run the image's code, so only a host path, written @/path, is taken. */
        if (spec[0] != '@' || spec[1] != '/')
                return invalid(
                        err,
                        "--ldconfig=%s: only a host ldconfig written as @/path is accepted (the image's ldconfig is never run)",
                        spec);
        copy = strdup(spec);
        if (copy == NULL)
                return gh_err(err, ENOMEM, "reading --ldconfig");
        free(req->ldconfig);
        req->ldconfig = copy;
        return 0;
}

unsigned gh_request_caps(const struct gh_request *req) { return gh_capability_expand(req->caps); }

bool gh_request_wants_gpus(const struct gh_request *req)
{
        return !req->devices.unset && !req->devices.is_void && (req->devices.all || req->devices.n > 0);
}

static const struct {
        int opt;
        unsigned cap;
} cap_opts[] = {
        { GH_REQUEST_OPT_COMPUTE, GH_CAP_COMPUTE },   { GH_REQUEST_OPT_UTILITY, GH_CAP_UTILITY },
        { GH_REQUEST_OPT_VIDEO, GH_CAP_VIDEO },       { GH_REQUEST_OPT_GRAPHICS, GH_CAP_GRAPHICS },
        { GH_REQUEST_OPT_DISPLAY, GH_CAP_DISPLAY },   { GH_REQUEST_OPT_NGX, GH_CAP_NGX },
        { GH_REQUEST_OPT_COMPAT32, GH_CAP_COMPAT32 },
};

static const struct option request_options[] = {
        { "device", required_argument, NULL, 'd' },
        { "require", required_argument, NULL, 'R' },
        { "compute", no_argument, NULL, GH_REQUEST_OPT_COMPUTE },
        { "utility", no_argument, NULL, GH_REQUEST_OPT_UTILITY },
        { "video", no_argument, NULL, GH_REQUEST_OPT_VIDEO },
        { "graphics", no_argument, NULL, GH_REQUEST_OPT_GRAPHICS },
        { "display", no_argument, NULL, GH_REQUEST_OPT_DISPLAY },
        { "ngx", no_argument, NULL, GH_REQUEST_OPT_NGX },
        { "compat32", no_argument, NULL, GH_REQUEST_OPT_COMPAT32 },
        { "mig-config", required_argument, NULL, GH_REQUEST_OPT_MIG_CONFIG },
        { "mig-monitor", required_argument, NULL, GH_REQUEST_OPT_MIG_MONITOR },
        { "imex-channel", required_argument, NULL, GH_REQUEST_OPT_IMEX },
        { "user", required_argument, NULL, GH_REQUEST_OPT_USER },
        { "ldconfig", required_argument, NULL, GH_REQUEST_OPT_LDCONFIG },
        { "no-cgroups", no_argument, NULL, GH_REQUEST_OPT_NO_CGROUPS },
        { "no-devbind", no_argument, NULL, GH_REQUEST_OPT_NO_DEVBIND },
        { "no-persistenced", no_argument, NULL, GH_REQUEST_OPT_NO_PERSISTENCED },
        { "no-fabricmanager", no_argument, NULL, GH_REQUEST_OPT_NO_FABRICMANAGER },
        { "no-gsp-firmware", no_argument, NULL, GH_REQUEST_OPT_NO_GSP },
        { "no-cuda-compat", no_argument, NULL, GH_REQUEST_OPT_NO_CUDA_COMPAT },
        { "mps-pipe-dir", required_argument, NULL, GH_REQUEST_OPT_MPS_PIPE_DIR },
        { "mps-group", required_argument, NULL, GH_REQUEST_OPT_MPS_GROUP },
        { "mps-dir", required_argument, NULL, GH_REQUEST_OPT_MPS_DIR },
};

int gh_request_option(struct gh_request *req, int opt, const char *arg, gh_error_t *err)
{
        for (size_t i = 0; i < GH_ARRAY_SIZE(cap_opts); i++) {
                if (cap_opts[i].opt == opt) {
                        req->caps |= cap_opts[i].cap;
                        return 0;
                }
        }
        switch (opt) {
        case 'd': return gh_request_set_devices(req, arg, err);
        case 'R': return gh_request_add_requirement(req, arg, err);
        case GH_REQUEST_OPT_MIG_CONFIG:
        case GH_REQUEST_OPT_MIG_MONITOR:
                if (strcmp(arg, "all") != 0)
                        return invalid(err, "--%s=%s: only 'all' is supported",
                                       opt == GH_REQUEST_OPT_MIG_CONFIG ? "mig-config" : "mig-monitor", arg);
                if (opt == GH_REQUEST_OPT_MIG_CONFIG)
                        req->mig_config = true;
                else
                        req->mig_monitor = true;
                return 0;
        case GH_REQUEST_OPT_IMEX:
                return gh_request_add_imex(req, arg, err) < 0 ? gh_err_wrap(err, "--imex-channel") : 0;
        case GH_REQUEST_OPT_USER: return gh_request_set_user(req, arg, err);
        case GH_REQUEST_OPT_LDCONFIG: return gh_request_set_ldconfig(req, arg, err);
        case GH_REQUEST_OPT_NO_CGROUPS: req->no_cgroups = true; return 0;
        case GH_REQUEST_OPT_NO_DEVBIND: req->no_devbind = true; return 0;
        case GH_REQUEST_OPT_NO_PERSISTENCED: req->no_persistenced = true; return 0;
        case GH_REQUEST_OPT_NO_FABRICMANAGER: req->no_fabricmanager = true; return 0;
        case GH_REQUEST_OPT_NO_GSP: req->no_gsp_firmware = true; return 0;
        case GH_REQUEST_OPT_NO_CUDA_COMPAT: req->no_cuda_compat = true; return 0;
        case GH_REQUEST_OPT_MPS_PIPE_DIR:
                if (arg[0] != '/')
                        return invalid(err, "--mps-pipe-dir=%s: must be an absolute path", arg);
                free(req->mps_pipe_dir);
                req->mps_pipe_dir = strdup(arg);
                return req->mps_pipe_dir ? 0 : gh_err(err, ENOMEM, "reading --mps-pipe-dir");
        case GH_REQUEST_OPT_MPS_GROUP:
                if (gh_mps_name_check(arg, err) < 0)
                        return -1;
                free(req->mps_group);
                req->mps_group = strdup(arg);
                return req->mps_group ? 0 : gh_err(err, ENOMEM, "reading --mps-group");
        case GH_REQUEST_OPT_MPS_DIR:
                if (arg[0] != '/')
                        return invalid(err, "--mps-dir=%s: must be an absolute path", arg);
                free(req->mps_dir);
                req->mps_dir = strdup(arg);
                return req->mps_dir ? 0 : gh_err(err, ENOMEM, "reading --mps-dir");
        default: return invalid(err, "unknown request option %d", opt);
        }
}

static bool is_request_opt(int c)
{
        return c == 'd' || c == 'R' || (c >= GH_REQUEST_OPT_FIRST && c < GH_REQUEST_OPT_LAST);
}

/* Returns the index of the first operand, 0 when the command's option asked to stop, or -1. */
static int parse_args(struct gh_request *req, int argc, char **argv, const struct gh_request_cli *cli,
                      const struct option *table, gh_error_t *err)
{
        int c, r;

        optind = 0;
        opterr = 0; /* our messages, one line each */
        while ((c = getopt_long(argc, argv, cli->shortopts, table, NULL)) != -1) {
                if (c == '?' || c == ':') {
                        if (optopt != 0 && optopt < 0x100 && isprint(optopt))
                                return invalid(err, "option -%c %s; see '%s --help'", optopt,
                                               c == ':' ? "needs a value" : "is not known", argv[0]);
                        return invalid(err, "option '%s' is not known or needs a value; see '%s --help'",
                                       argv[optind - 1], argv[0]);
                }
                if (is_request_opt(c)) {
                        if (gh_request_option(req, c, optarg, err) < 0)
                                return -1;
                        continue;
                }
                r = cli->option ? cli->option(c, optarg, req, cli->data, err) : invalid(err, "unknown option");
                if (r != 0)
                        return r < 0 ? -1 : 0;
        }
        return optind;
}

int gh_request_parse_args(struct gh_request *req, int argc, char **argv, const struct gh_request_cli *cli,
                          gh_error_t *err)
{
        size_t nextra = 0, n = GH_ARRAY_SIZE(request_options);
        _cleanup_free_ struct option *table = NULL;
        int r;

        while (cli->options && cli->options[nextra].name)
                nextra++;
        table = calloc(n + nextra + 1, sizeof(*table));
        if (table == NULL)
                return gh_err(err, ENOMEM, "parsing the command line");
        memcpy(table, request_options, sizeof(request_options));
        if (nextra)
                memcpy(table + n, cli->options, nextra * sizeof(*table));
        r = parse_args(req, argc, argv, cli, table, err);
        return r < 0 ? gh_err_kind(err, GH_ERR_USAGE) : r;
}

int gh_argv_add(char ***argv, size_t *argc, gh_error_t *err, const char *fmt, ...)
{
        va_list ap;
        char *s = NULL, **grown;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (r < 0)
                return gh_err(err, ENOMEM, "building a command line");
        grown = realloc(*argv, (*argc + 2) * sizeof(char *));
        if (grown == NULL) {
                free(s);
                return gh_err(err, ENOMEM, "building a command line");
        }
        *argv = grown;
        (*argv)[(*argc)++] = s;
        (*argv)[*argc] = NULL;
        return 0;
}

static char *device_text(const struct gh_select_request *d)
{
        size_t size = 64;
        char *buf;

        for (size_t i = 0; i < d->n; i++)
                size += strlen(d->items[i].text) + GH_BUSID_MAX + 24;
        buf = malloc(size);
        if (buf != NULL)
                gh_select_format(d, buf, size);
        return buf;
}

int gh_request_to_argv(const struct gh_request *req, char ***argv, size_t *argc, gh_error_t *err)
{
        size_t total = 0;

        /* "none" alone, or void: no GPU, the same as no --device. */
        if (!req->devices.unset && (req->devices.all || req->devices.n > 0)) {
                _cleanup_free_ char *list = device_text(&req->devices);
                if (list == NULL || gh_argv_add(argv, argc, err, "--device=%s", list) < 0)
                        return list ? -1 : gh_err(err, ENOMEM, "building a command line");
        }
        for (size_t i = 0; i < req->nrequirements; i++)
                if (gh_argv_add(argv, argc, err, "--require=%s", req->requirements[i]) < 0)
                        return -1;
        for (size_t i = 0; i < GH_ARRAY_SIZE(cap_opts); i++)
                if ((req->caps & cap_opts[i].cap) &&
                    gh_argv_add(argv, argc, err, "--%s", gh_capability_name(cap_opts[i].cap)) < 0)
                        return -1;
        if ((req->mig_config && gh_argv_add(argv, argc, err, "--mig-config=all") < 0) ||
            (req->mig_monitor && gh_argv_add(argv, argc, err, "--mig-monitor=all") < 0))
                return -1;
        for (size_t i = 0; i < req->nimex; i++)
                if (gh_argv_add(argv, argc, err, "--imex-channel=%u", req->imex[i]) < 0)
                        return -1;
        if (req->uid != (uid_t) -1 && gh_argv_add(argv, argc, err, "--user=%u:%u", (unsigned) req->uid,
                                                  (unsigned) (req->gid == (gid_t) -1 ? req->uid : req->gid)) < 0)
                return -1;
        if ((req->ldconfig && gh_argv_add(argv, argc, err, "--ldconfig=%s", req->ldconfig) < 0) ||
            (req->mps_pipe_dir && gh_argv_add(argv, argc, err, "--mps-pipe-dir=%s", req->mps_pipe_dir) < 0) ||
            (req->mps_group && gh_argv_add(argv, argc, err, "--mps-group=%s", req->mps_group) < 0) ||
            (req->mps_dir && gh_argv_add(argv, argc, err, "--mps-dir=%s", req->mps_dir) < 0) ||
            (req->no_cgroups && gh_argv_add(argv, argc, err, "--no-cgroups") < 0) ||
            (req->no_devbind && gh_argv_add(argv, argc, err, "--no-devbind") < 0) ||
            (req->no_persistenced && gh_argv_add(argv, argc, err, "--no-persistenced") < 0) ||
            (req->no_fabricmanager && gh_argv_add(argv, argc, err, "--no-fabricmanager") < 0) ||
            (req->no_gsp_firmware && gh_argv_add(argv, argc, err, "--no-gsp-firmware") < 0) ||
            (req->no_cuda_compat && gh_argv_add(argv, argc, err, "--no-cuda-compat") < 0))
                return -1;
        for (size_t i = 0; i < *argc; i++)
                total += strlen((*argv)[i]) + 1 + sizeof(char *);
        if (total > ARGV_MAX_BYTES)
                return gh_err(err, E2BIG,
                              "the request is too large for one command line (%zu bytes, at most %u): ask for fewer devices or requirements",
                              total, ARGV_MAX_BYTES),
                       gh_err_kind(err, GH_ERR_USAGE);
        return 0;
}
