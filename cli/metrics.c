/* gpu-cli metrics: GPU and per-container usage in the Prometheus text exposition format, printed
 * once or served on /metrics.
 *
 * The server is libmicrohttpd, loaded with dlopen only when --listen is given: gpu-cli also runs on
 * every GPU container start (from the hook), and linking the HTTP library would map it and its TLS
 * stack (a dozen libraries) into every one of those starts. */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"
#include "snapshot.h"

#define MHD_SONAME "libmicrohttpd.so.12"
#define DEFAULT_LISTEN "127.0.0.1:9400"

static void usage(FILE *out)
{
        fprintf(out,
                "Usage: gpu-cli [GLOBAL OPTIONS] metrics [--listen[=ADDRESS:PORT]] [--state-dir=DIR]... [--timeout=SECONDS]\n"
                "\n"
                "Prints GPU usage in the Prometheus text format: per GPU utilisation, memory used and total,\n"
                "temperature and power (where the driver reports them); per GPU and container the memory\n"
                "its processes use, their SM utilisation and their number, labelled with the container id and\n"
                "runtime (runtime \"host\" and an empty id for processes outside containers).\n"
                "\n"
                "  --listen[=ADDRESS:PORT]  serve the same text on http://ADDRESS:PORT/metrics, read afresh for\n"
                "                           every request (default " DEFAULT_LISTEN "; loopback unless you say\n"
                "                           otherwise; IPv6 as [::1]:9400).  Needs " MHD_SONAME ".\n" CLI_USAGE_HELP
                "\n"
                "Exit status: 0 success, 1 failure (NVML failed), 2 usage error, 3 no driver.\n");
}

/* A label value: backslash, double quote and newline escaped. */
static void label(FILE *f, const char *name, const char *value, bool last)
{
        fprintf(f, "%s=\"", name);
        for (const char *p = value; *p; p++) {
                if (*p == '\\' || *p == '"')
                        fprintf(f, "\\%c", *p);
                else if (*p == '\n')
                        fputs("\\n", f);
                else
                        fputc(*p, f);
        }
        fprintf(f, "\"%s", last ? "" : ",");
}

static void gpu_labels(FILE *f, const struct gh_gpu *g)
{
        fprintf(f, "{gpu=\"%u\",", g->index);
        label(f, "uuid", g->uuid, false);
        label(f, "model", g->model, true);
        fputc('}', f);
}

static void header(FILE *f, const char *name, const char *help)
{
        fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

/* One container's processes on one GPU, summed. */
struct container_sum {
        const struct gh_gpu *gpu;
        const char *runtime, *id;
        uint64_t memory;
        bool memory_known;
        int util; /* -1: no process had a sample */
        unsigned procs;
};

static size_t sum_containers(const struct gh_gpu_list *list, struct container_sum *out, size_t max)
{
        size_t n = 0;

        for (size_t g = 0; g < list->n; g++) {
                const struct gh_gpu_usage *u = list->gpus[g].usage;
                for (size_t i = 0; i < u->nprocs; i++) {
                        const struct gh_gpu_proc *p = &u->procs[i];
                        const char *rt = p->owner.in_container ? p->owner.runtime : "host";
                        const char *id = p->owner.in_container ? p->owner.id : "";
                        struct container_sum *s = NULL;
                        for (size_t k = 0; k < n && s == NULL; k++)
                                if (out[k].gpu == &list->gpus[g] && strcmp(out[k].runtime, rt) == 0 &&
                                    strcmp(out[k].id, id) == 0)
                                        s = &out[k];
                        if (s == NULL) {
                                if (n == max)
                                        continue;
                                s = &out[n++];
                                *s = (struct container_sum) {
                                        .gpu = &list->gpus[g], .runtime = rt, .id = id, .util = -1
                                };
                        }
                        s->procs++;
                        if (p->used_memory != GH_UNKNOWN_U64) {
                                s->memory += p->used_memory;
                                s->memory_known = true;
                        }
                        if (p->sm_util >= 0)
                                s->util = s->util < 0                  ? p->sm_util
                                          : s->util + p->sm_util > 100 ? 100
                                                                       : s->util + p->sm_util;
                }
        }
        return n;
}

/* The whole exposition into f.  Series the driver does not report are left out. */
static void write_metrics(const struct gh_gpu_list *list, FILE *f)
{
        static const struct {
                const char *name, *help;
        } gpu_metrics[] = {
                { "gpuhook_gpu_utilization_percent",
                  "Percent of time a kernel ran on the GPU over the last sample period." },
                { "gpuhook_gpu_memory_used_bytes", "GPU memory in use." },
                { "gpuhook_gpu_memory_total_bytes", "GPU memory installed." },
                { "gpuhook_gpu_temperature_celsius", "GPU core temperature." },
                { "gpuhook_gpu_power_watts", "GPU power draw." },
        };
        size_t max = 0;

        for (size_t m = 0; m < GH_ARRAY_SIZE(gpu_metrics); m++) {
                header(f, gpu_metrics[m].name, gpu_metrics[m].help);
                for (size_t g = 0; g < list->n; g++) {
                        const struct gh_gpu_usage *u = list->gpus[g].usage;
                        char value[32] = "";
                        switch (m) {
                        case 0:
                                if (u->gpu_util >= 0)
                                        snprintf(value, sizeof(value), "%d", u->gpu_util);
                                break;
                        case 1:
                                if (u->mem_used != GH_UNKNOWN_U64)
                                        snprintf(value, sizeof(value), "%" PRIu64, u->mem_used);
                                break;
                        case 2:
                                if (u->mem_total != GH_UNKNOWN_U64)
                                        snprintf(value, sizeof(value), "%" PRIu64, u->mem_total);
                                break;
                        case 3:
                                if (u->temperature_c >= 0)
                                        snprintf(value, sizeof(value), "%d", u->temperature_c);
                                break;
                        case 4:
                                if (u->power_mw >= 0)
                                        snprintf(value, sizeof(value), "%d.%03d", u->power_mw / 1000,
                                                 u->power_mw % 1000);
                                break;
                        default: break;
                        }
                        if (value[0] == '\0')
                                continue;
                        fputs(gpu_metrics[m].name, f);
                        gpu_labels(f, &list->gpus[g]);
                        fprintf(f, " %s\n", value);
                }
        }
        for (size_t g = 0; g < list->n; g++)
                max += list->gpus[g].usage->nprocs;
        _cleanup_free_ struct container_sum *sums = calloc(max + 1, sizeof(*sums));
        size_t n = sums ? sum_containers(list, sums, max) : 0;
        static const struct {
                const char *name, *help;
        } per_container[] = {
                { "gpuhook_container_gpu_memory_used_bytes",
                  "GPU memory used by the processes of a container (runtime \"host\": outside containers)." },
                { "gpuhook_container_gpu_utilization_percent",
                  "Summed SM utilisation of a container's processes on the GPU, at most 100." },
                { "gpuhook_container_gpu_processes", "Processes of a container using the GPU." },
        };
        for (size_t m = 0; m < GH_ARRAY_SIZE(per_container); m++) {
                header(f, per_container[m].name, per_container[m].help);
                for (size_t k = 0; k < n; k++) {
                        const struct container_sum *s = &sums[k];
                        if ((m == 0 && !s->memory_known) || (m == 1 && s->util < 0))
                                continue;
                        fprintf(f, "%s{gpu=\"%u\",", per_container[m].name, s->gpu->index);
                        label(f, "uuid", s->gpu->uuid, false);
                        label(f, "runtime", s->runtime, false);
                        label(f, "container_id", s->id, true);
                        if (m == 0)
                                fprintf(f, "} %" PRIu64 "\n", s->memory);
                        else
                                fprintf(f, "} %d\n", m == 1 ? s->util : (int) s->procs);
                }
        }
}

/* ---- the server ---- */

struct server {
        const struct cli_globals *g;
        const struct cli_usage_opts *uo;
        struct {
                __typeof__(MHD_start_daemon) *start_daemon;
                __typeof__(MHD_stop_daemon) *stop_daemon;
                __typeof__(MHD_create_response_from_buffer) *create_response;
                __typeof__(MHD_add_response_header) *add_header;
                __typeof__(MHD_queue_response) *queue_response;
                __typeof__(MHD_destroy_response) *destroy_response;
        } mhd;
};

static enum MHD_Result reply(struct server *s, struct MHD_Connection *conn, unsigned status, const char *type,
                             char *body, size_t len)
{
        struct MHD_Response *r = s->mhd.create_response(len, body, MHD_RESPMEM_MUST_COPY);
        enum MHD_Result ret;

        if (r == NULL)
                return MHD_NO;
        s->mhd.add_header(r, "Content-Type", type);
        ret = s->mhd.queue_response(conn, status, r);
        s->mhd.destroy_response(r);
        return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                              const char *version, const char *upload, size_t *upload_size, void **state)
{
        struct server *s = cls;
        char *body = NULL;
        size_t len = 0;

        if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
                char msg[] = "only GET\n";
                return reply(s, conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", msg, strlen(msg));
        }
        if (strcmp(url, "/metrics") != 0) {
                char msg[] = "gpu-cli metrics: see /metrics\n";
                return reply(s, conn, MHD_HTTP_NOT_FOUND, "text/plain", msg, strlen(msg));
        }
        _cleanup_gpu_list_ struct gh_gpu_list list = { 0 };
        if (cli_usage_load(s->g, s->uo, "metrics", &list) != GH_EXIT_OK) {
                char msg[] = "reading the GPUs failed; gpu-cli's standard error says why\n";
                return reply(s, conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain", msg, strlen(msg));
        }
        FILE *f = open_memstream(&body, &len);
        if (f == NULL)
                return MHD_NO;
        write_metrics(&list, f);
        fclose(f);
        enum MHD_Result r = reply(s, conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", body, len);
        free(body);
        return r;
}

/* "127.0.0.1:9400", "[::1]:9400" */
static int parse_listen(const char *spec, struct sockaddr_storage *ss)
{
        char host[64];
        const char *colon;
        char *end;
        long port;

        if (spec[0] == '[') {
                const char *close = strchr(spec, ']');
                if (close == NULL || close[1] != ':' || (size_t) (close - spec - 1) >= sizeof(host))
                        return -1;
                snprintf(host, sizeof(host), "%.*s", (int) (close - spec - 1), spec + 1);
                colon = close + 1;
        } else {
                colon = strrchr(spec, ':');
                if (colon == NULL || (size_t) (colon - spec) >= sizeof(host))
                        return -1;
                snprintf(host, sizeof(host), "%.*s", (int) (colon - spec), spec);
        }
        port = strtol(colon + 1, &end, 10);
        if (colon[1] == '\0' || *end != '\0' || port < 1 || port > 65535)
                return -1;
        memset(ss, 0, sizeof(*ss));
        struct sockaddr_in *in4 = (struct sockaddr_in *) ss;
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) ss;
        if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
                in4->sin_family = AF_INET;
                in4->sin_port = htons((uint16_t) port);
                return 0;
        }
        if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
                in6->sin6_family = AF_INET6;
                in6->sin6_port = htons((uint16_t) port);
                return 0;
        }
        return -1;
}

static int serve(const struct cli_globals *g, const struct cli_usage_opts *uo, const char *spec)
{
        struct server s = { .g = g, .uo = uo };
        struct sockaddr_storage ss;
        struct MHD_Daemon *d;
        sigset_t set;
        void *lib;
        int sig;

        if (parse_listen(spec, &ss) < 0) {
                fprintf(stderr,
                        "gpu-cli: metrics: --listen '%s' is not ADDRESS:PORT (e.g. 127.0.0.1:9400, [::1]:9400)\n",
                        spec);
                return GH_EXIT_USAGE;
        }
        lib = dlopen(MHD_SONAME, RTLD_NOW | RTLD_LOCAL);
        if (lib == NULL) {
                fprintf(stderr,
                        "gpu-cli: metrics: --listen needs %s: %s; install libmicrohttpd (Debian: libmicrohttpd12)\n",
                        MHD_SONAME, dlerror());
                return GH_EXIT_FAILURE;
        }
        *(void **) &s.mhd.start_daemon = dlsym(lib, "MHD_start_daemon");
        *(void **) &s.mhd.stop_daemon = dlsym(lib, "MHD_stop_daemon");
        *(void **) &s.mhd.create_response = dlsym(lib, "MHD_create_response_from_buffer");
        *(void **) &s.mhd.add_header = dlsym(lib, "MHD_add_response_header");
        *(void **) &s.mhd.queue_response = dlsym(lib, "MHD_queue_response");
        *(void **) &s.mhd.destroy_response = dlsym(lib, "MHD_destroy_response");
        if (!s.mhd.start_daemon || !s.mhd.stop_daemon || !s.mhd.create_response || !s.mhd.add_header ||
            !s.mhd.queue_response || !s.mhd.destroy_response) {
                fprintf(stderr,
                        "gpu-cli: metrics: %s lacks a function gpu-cli needs; install libmicrohttpd 0.9.71 or newer\n",
                        MHD_SONAME);
                return GH_EXIT_FAILURE;
        }
        /* Block the signals before the server's thread starts, so that it inherits the mask and only
         * sigwait below takes them. */
        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &set, NULL);
        d = s.mhd.start_daemon(
                MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG | (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0), 0,
                NULL, NULL, handle, &s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *) &ss, MHD_OPTION_CONNECTION_LIMIT,
                (unsigned int) 32, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int) 10, MHD_OPTION_END);
        if (d == NULL) {
                fprintf(stderr,
                        "gpu-cli: metrics: cannot listen on %s (in use, or not an address of this host); "
                        "choose another --listen\n",
                        spec);
                return GH_EXIT_FAILURE;
        }
        fprintf(stderr, "gpu-cli: metrics: serving http://%s/metrics\n", spec);
        while (sigwait(&set, &sig) != 0)
                ;
        s.mhd.stop_daemon(d);
        return GH_EXIT_OK;
}

int cmd_metrics(int argc, char **argv, const struct cli_globals *g)
{
        static const struct option opts[] = {
                { "listen", optional_argument, NULL, 'l' },
                { "help", no_argument, NULL, 'h' },
                CLI_USAGE_OPTIONS,
                { NULL, 0, NULL, 0 },
        };
        _cleanup_gpu_list_ struct gh_gpu_list list = { 0 };
        struct cli_usage_opts uo = { 0 };
        const char *listen_on = NULL;
        int c, r;

        while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
                switch (c) {
                case 'l': listen_on = optarg ? optarg : DEFAULT_LISTEN; break;
                case 'S':
                case 'T':
                        if ((r = cli_usage_option(c, optarg, &uo, "metrics")) != 0)
                                return r;
                        break;
                case 'h': usage(stdout); return GH_EXIT_OK;
                default: usage(stderr); return GH_EXIT_USAGE;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "gpu-cli: metrics: unexpected argument '%s'; see 'gpu-cli metrics --help'\n",
                        argv[optind]);
                return GH_EXIT_USAGE;
        }
        if (listen_on != NULL)
                return serve(g, &uo, listen_on);
        if ((r = cli_usage_load(g, &uo, "metrics", &list)) != GH_EXIT_OK)
                return r;
        write_metrics(&list, stdout);
        if (fflush(stdout) != 0) {
                fprintf(stderr, "gpu-cli: metrics: writing the output: %m\n");
                return GH_EXIT_FAILURE;
        }
        return GH_EXIT_OK;
}
