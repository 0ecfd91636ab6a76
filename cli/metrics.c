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
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "exposition.h"
#include "hookconfig.h"
#include "hpcjobs.h"
#include "snapshot.h"

#define MHD_SONAME "libmicrohttpd.so.12"
#define DEFAULT_LISTEN "127.0.0.1:9400"

static void usage(FILE *out)
{
        fprintf(out,
                "Usage: gpu-cli [GLOBAL OPTIONS] metrics [--listen[=ADDRESS:PORT]] [--names=both|dcgm|gpuhook]\n"
                "                                        [--hostname=NAME] [--hpc-job-dir=DIR] [--interval=SECONDS]\n"
                "                                        [--state-dir=DIR]... [--timeout=SECONDS] [--config=FILE]\n"
                "                                        [--mps-dir=DIR]\n"
                "\n"
                "Prints GPU usage in the Prometheus text format: per GPU utilisation, memory, temperature,\n"
                "power and clocks (where the driver reports them); per GPU and container the memory its\n"
                "processes use, their SM utilisation and their number, labelled with the container and, when\n"
                "a CRI runtime named it, its pod; per GPU the memory no running container owns.\n"
                "\n"
                "  --listen[=ADDRESS:PORT]  serve the same text on http://ADDRESS:PORT/metrics, read afresh for\n"
                "                           every request (default " DEFAULT_LISTEN "; loopback unless you say\n"
                "                           otherwise; IPv6 as [::1]:9400).  Needs " MHD_SONAME ".\n"
                "  --names=both|dcgm|gpuhook  which series: gpuhook_* (gpu-hook's own), dcgm-exporter's\n"
                "                           DCGM_FI_DEV_* names and labels with gpuhook_container_* and\n"
                "                           gpuhook_fb_unowned beside them, or both (default: the\n"
                "                           configuration's metrics.names, \"both\")\n"
                "  --hostname=NAME          the Hostname label of the DCGM series (default: this host's name)\n"
                "  --hpc-job-dir=DIR        also write dcgm-exporter's HPC job mapping files into DIR (its\n"
                "                           DCGM_HPC_JOB_MAPPING_DIR): one per GPU index, one line per\n"
                "                           container using it (NAMESPACE/POD, or the container id); default:\n"
                "                           the configuration's metrics.hpc-job-mapping-dir\n"
                "  --interval=SECONDS       with --hpc-job-dir: rewrite the files every SECONDS (with --listen\n"
                "                           also at every scrape; without --listen nothing is printed and\n"
                "                           gpu-cli runs until SIGTERM); default 15 with --listen, else once\n" CLI_USAGE_HELP
                "\n"
                "Exit status: 0 success, 1 failure (NVML failed), 2 usage error, 3 no driver.\n");
}

struct metrics_opts {
        struct cli_exposition expo;
        const char *hpc_dir; /* NULL: no job files */
        int interval;        /* seconds; 0: once */
};

/* One snapshot: the exposition into f (NULL: none), the job files when asked.  Serialised: the
 * server's thread and the main thread's timer both come here. */
static int gather(const struct cli_globals *g, struct cli_usage_opts *uo, const struct metrics_opts *mo, FILE *f)
{
        static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
        _cleanup_gpu_list_ struct gh_gpu_list list = { 0 };
        _cleanup_error_ gh_error_t err = NULL;
        int r;

        pthread_mutex_lock(&lock);
        r = cli_usage_load(g, uo, "metrics", &list);
        if (r == GH_EXIT_OK && mo->hpc_dir != NULL && gh_hpc_jobs_write(mo->hpc_dir, &list, &err) < 0)
                fprintf(stderr, "gpu-cli: metrics: %s\n", err->msg); /* the metrics are still right */
        if (r == GH_EXIT_OK && f != NULL)
                cli_write_metrics(&list, &mo->expo, f);
        pthread_mutex_unlock(&lock);
        return r;
}

/* ---- the server ---- */

struct server {
        const struct cli_globals *g;
        struct cli_usage_opts *uo;
        const struct metrics_opts *mo;
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
        FILE *f = open_memstream(&body, &len);
        if (f == NULL)
                return MHD_NO;
        if (gather(s->g, s->uo, s->mo, f) != GH_EXIT_OK) {
                char msg[] = "reading the GPUs failed; gpu-cli's standard error says why\n";
                fclose(f);
                free(body);
                return reply(s, conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain", msg, strlen(msg));
        }
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

static int serve(const struct cli_globals *g, struct cli_usage_opts *uo, const struct metrics_opts *mo,
                 const char *spec)
{
        struct server s = { .g = g, .uo = uo, .mo = mo };
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
        for (;;) {
                struct timespec ts = { .tv_sec = mo->interval };
                if (mo->hpc_dir == NULL ? sigwait(&set, &sig) == 0 : sigtimedwait(&set, NULL, &ts) > 0)
                        break;
                if (mo->hpc_dir != NULL && errno == EAGAIN)
                        gather(g, uo, mo, NULL);
        }
        s.mhd.stop_daemon(d);
        return GH_EXIT_OK;
}

/* Without --listen, with --hpc-job-dir and --interval: the job files, every interval, until a signal. */
static int keep_writing(const struct cli_globals *g, struct cli_usage_opts *uo, const struct metrics_opts *mo)
{
        struct timespec ts = { .tv_sec = mo->interval };
        sigset_t set;
        int r;

        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &set, NULL);
        do {
                if ((r = gather(g, uo, mo, NULL)) != GH_EXIT_OK)
                        return r;
        } while (sigtimedwait(&set, NULL, &ts) < 0 && (errno == EAGAIN || errno == EINTR));
        return GH_EXIT_OK;
}

int cmd_metrics(int argc, char **argv, const struct cli_globals *g)
{
        static const struct option opts[] = {
                { "listen", optional_argument, NULL, 'l' },
                { "names", required_argument, NULL, 'N' },
                { "hostname", required_argument, NULL, 'H' },
                { "hpc-job-dir", required_argument, NULL, 'J' },
                { "interval", required_argument, NULL, 'i' },
                { "help", no_argument, NULL, 'h' },
                CLI_USAGE_OPTIONS,
                { NULL, 0, NULL, 0 },
        };
        _cleanup_usage_opts_ struct cli_usage_opts uo = { 0 };
        struct metrics_opts mo = { .expo.names = -1 };
        const char *listen_on = NULL, *hpc_dir = NULL;
        struct utsname un;
        long interval = -1;
        char *end;
        int c, r;

        while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
                switch (c) {
                case 'l': listen_on = optarg ? optarg : DEFAULT_LISTEN; break;
                case 'N':
                        if ((mo.expo.names = gh_metrics_names_parse(optarg)) < 0) {
                                fprintf(stderr, "gpu-cli: metrics: --names '%s' must be both, dcgm or gpuhook\n",
                                        optarg);
                                return GH_EXIT_USAGE;
                        }
                        break;
                case 'H': mo.expo.hostname = optarg; break;
                case 'J':
                        if (optarg[0] != '/') {
                                fprintf(stderr, "gpu-cli: metrics: --hpc-job-dir '%s' must be an absolute path\n",
                                        optarg);
                                return GH_EXIT_USAGE;
                        }
                        hpc_dir = optarg;
                        break;
                case 'i':
                        interval = strtol(optarg, &end, 10);
                        if (*optarg == '\0' || *end != '\0' || interval < 1 || interval > 86400) {
                                fprintf(stderr, "gpu-cli: metrics: --interval '%s' must be 1..86400 seconds\n", optarg);
                                return GH_EXIT_USAGE;
                        }
                        break;
                case 'S':
                case 'T':
                case 'f':
                case 'M':
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
        /* the configuration before any thread: the server only reads it */
        if ((r = cli_usage_config(&uo, "metrics")) != GH_EXIT_OK)
                return r;
        if (mo.expo.names < 0)
                mo.expo.names = uo.cfg.metrics.names;
        mo.hpc_dir = hpc_dir ? hpc_dir : uo.cfg.metrics.hpc_job_dir;
        if (interval > 0 && mo.hpc_dir == NULL) {
                fprintf(stderr, "gpu-cli: metrics: --interval is for --hpc-job-dir (or metrics.hpc-job-mapping-dir)\n");
                return GH_EXIT_USAGE;
        }
        mo.interval = interval > 0 ? (int) interval : listen_on ? 15 : 0;
        if (mo.expo.hostname == NULL)
                mo.expo.hostname = uname(&un) == 0 ? un.nodename : "";
        if (listen_on != NULL)
                return serve(g, &uo, &mo, listen_on);
        if (mo.interval > 0)
                return keep_writing(g, &uo, &mo);
        if ((r = gather(g, &uo, &mo, stdout)) != GH_EXIT_OK)
                return r;
        if (fflush(stdout) != 0) {
                fprintf(stderr, "gpu-cli: metrics: writing the output: %m\n");
                return GH_EXIT_FAILURE;
        }
        return GH_EXIT_OK;
}
