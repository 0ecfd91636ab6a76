/* gpu-cli top: gpu-cli ps, refreshed, with each container's GPU memory over the last refreshes (a
 * container whose memory only grows is said to), and the memory no running container owns. */
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "snapshot.h"

#define WINDOW_MAX 60

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
        (void) sig;
        stop = 1;
}

static void top_usage(FILE *out)
{
        fprintf(out,
                "Usage: gpu-cli [GLOBAL OPTIONS] top [--interval=SECONDS] [--sort=memory|util] [--iterations=N]\n"
                "                                    [--window=N] [--no-trunc] [--state-dir=DIR]... [--timeout=SECONDS]\n"
                "                                    [--config=FILE] [--mps-dir=DIR]\n"
                "\n"
                "gpu-cli ps, refreshed: each GPU's utilisation, memory, temperature and power; each container's\n"
                "memory per GPU with its pod and its trend over the last N refreshes (\"grows +512MiB in 10s\"\n"
                "when it only grew over the whole window, \"steady\", \"varies\"); the memory no running\n"
                "container owns; then the processes.  Keys (in a terminal): q quits, m sorts by memory, u by SM\n"
                "utilisation, any other key refreshes now.  Ctrl-C ends it too.\n"
                "\n"
                "  --interval=SECONDS  time between refreshes (default 2)\n"
                "  --sort=memory|util  order processes by GPU memory (default) or SM utilisation\n"
                "  --iterations=N      stop after N screens\n"
                "  --window=N          refreshes a trend looks at, 2..%d (default 5)\n"
                "  --no-trunc          show container ids and pods in full\n" CLI_USAGE_HELP "\n"
                "Exit status: 0 success, 1 failure (NVML failed), 2 usage error, 3 no driver.\n",
                WINDOW_MAX);
}

/* ---- each container's memory on each GPU over the last refreshes ---- */

struct trend {
        unsigned gpu;
        char runtime[GH_RUNTIME_MAX], id[GH_CONTAINER_ID_MAX];
        uint64_t mem[WINDOW_MAX];
        time_t at[WINDOW_MAX];
        size_t n;
        bool seen;
};

static struct trend *trends;
static size_t ntrends, trends_cap;

static struct trend *trend_of(const struct gh_container_sum *s)
{
        for (size_t i = 0; i < ntrends; i++)
                if (trends[i].gpu == s->gpu->index && strcmp(trends[i].id, s->owner->id) == 0 &&
                    strcmp(trends[i].runtime, s->owner->runtime) == 0)
                        return &trends[i];
        return NULL;
}

/* Adds this refresh's sample of every container; forgets the containers that are gone. */
static void trends_update(const struct gh_container_sum *sums, size_t n, size_t window)
{
        struct timespec now;

        clock_gettime(CLOCK_MONOTONIC, &now);
        for (size_t i = 0; i < ntrends; i++)
                trends[i].seen = false;
        for (size_t k = 0; k < n; k++) {
                const struct gh_container_sum *s = &sums[k];
                struct trend *t = trend_of(s);
                if (!s->memory_known)
                        continue;
                if (t == NULL) {
                        if (ntrends == trends_cap) {
                                size_t cap = trends_cap ? trends_cap * 2 : 16;
                                struct trend *grown = realloc(trends, cap * sizeof(*grown));
                                if (grown == NULL)
                                        continue;
                                trends = grown;
                                trends_cap = cap;
                        }
                        t = &trends[ntrends++];
                        *t = (struct trend) { .gpu = s->gpu->index };
                        snprintf(t->runtime, sizeof(t->runtime), "%s", s->owner->runtime);
                        snprintf(t->id, sizeof(t->id), "%s", s->owner->id);
                }
                if (t->n == window) {
                        memmove(t->mem, t->mem + 1, (window - 1) * sizeof(t->mem[0]));
                        memmove(t->at, t->at + 1, (window - 1) * sizeof(t->at[0]));
                        t->n--;
                }
                t->mem[t->n] = s->memory;
                t->at[t->n++] = now.tv_sec;
                t->seen = true;
        }
        size_t kept = 0;
        for (size_t i = 0; i < ntrends; i++)
                if (trends[i].seen)
                        trends[kept++] = trends[i];
        ntrends = kept;
}

/* "grows +512MiB in 10s" when every sample of a full window was at least the one before and the
 * last is more than the first; "steady", "varies"; "-" until the window is full. */
static void trend_words(const struct trend *t, size_t window, char *buf, size_t size)
{
        bool up = true, same = true;

        if (t == NULL || t->n < window) {
                snprintf(buf, size, "-");
                return;
        }
        for (size_t i = 1; i < t->n; i++) {
                up &= t->mem[i] >= t->mem[i - 1];
                same &= t->mem[i] == t->mem[i - 1];
        }
        if (same)
                snprintf(buf, size, "steady");
        else if (up)
                snprintf(buf, size, "grows +%" PRIu64 "MiB in %llds", (t->mem[t->n - 1] - t->mem[0]) >> 20,
                         (long long) (t->at[t->n - 1] - t->at[0]));
        else
                snprintf(buf, size, "varies");
}

static void print_containers(const struct gh_gpu_list *list, const struct gh_container_sum *sums, size_t n,
                             size_t window, bool no_trunc, int width, FILE *out)
{
        int idw = no_trunc ? 64 : 12, podw = cli_pod_width(list, no_trunc);
        char line[1024];

        if (n == 0)
                return;
        snprintf(line, sizeof(line), "%-3s %-8s %-*s %-*s %9s %4s  %s", "GPU", "RUNTIME", idw, "CONTAINER", podw, "POD",
                 "MEMORY", "SM%", "TREND");
        fprintf(out, "%.*s\n", width, line);
        for (size_t k = 0; k < n; k++) {
                const struct gh_container_sum *s = &sums[k];
                char mem[32], sm[8], pod[2 * GH_POD_FIELD_MAX], trend[64];
                cli_format_mib(s->memory_known ? s->memory : GH_UNKNOWN_U64, mem, sizeof(mem));
                cli_percent(s->util, sm, sizeof(sm));
                cli_pod_name(s->owner, pod, sizeof(pod));
                trend_words(trend_of(s), window, trend, sizeof(trend));
                if (s->owner->kind == GH_OWNER_CONTAINER_GONE)
                        snprintf(trend, sizeof(trend), "its init is gone");
                snprintf(line, sizeof(line), "%-3u %-8s %-*.*s %-*.*s %9s %4s  %s", s->gpu->index, s->owner->runtime,
                         idw, idw, s->owner->id, podw, podw, pod, mem, sm, trend);
                fprintf(out, "%.*s\n", width, line);
        }
        fputc('\n', out);
}

static void print_screen(const struct gh_gpu_list *list, enum cli_sort sort, size_t window, bool no_trunc, int width,
                         int rows, bool tty, FILE *out)
{
        char stamp[32], line[512];
        time_t now = time(NULL);
        struct tm tm;

        strftime(stamp, sizeof(stamp), "%H:%M:%S", localtime_r(&now, &tm));
        if (tty)
                fputs("\033[H\033[2J", out); /* home, clear the screen */
        snprintf(line, sizeof(line), "gpu-cli top  %s  driver %s  sorted by %s%s", stamp, list->driver_version,
                 sort == CLI_SORT_UTIL ? "SM utilisation" : "memory", tty ? "  (q quit, m/u sort)" : "");
        fprintf(out, "%.*s\n\n", width, line);
        for (size_t g = 0; g < list->n; g++) {
                const struct gh_gpu_usage *u = list->gpus[g].usage;
                char used[32], total[32], util[8], temp[16], power[16], unowned[48] = "";
                struct gh_unowned un;
                cli_format_mib(u->mem_used, used, sizeof(used));
                cli_format_mib(u->mem_total, total, sizeof(total));
                cli_percent(u->gpu_util, util, sizeof(util));
                gh_usage_unowned(&list->gpus[g], &un);
                if (u->temperature_c >= 0)
                        snprintf(temp, sizeof(temp), "%dC", u->temperature_c);
                else
                        snprintf(temp, sizeof(temp), "-");
                if (u->power_mw >= 0)
                        snprintf(power, sizeof(power), "%dW", u->power_mw / 1000);
                else
                        snprintf(power, sizeof(power), "-");
                if (un.procs > 0)
                        snprintf(unowned, sizeof(unowned), "  unowned %" PRIu64 "MiB",
                                 (un.host + un.container_gone + un.mps_stopped) >> 20);
                snprintf(line, sizeof(line), "GPU %u  %-26.26s util %4s%%  mem %9s / %-9s  %4s  %5s  procs %zu%s",
                         list->gpus[g].index, list->gpus[g].model, util, used, total, temp, power, u->nprocs, unowned);
                fprintf(out, "%.*s\n", width, line);
        }
        fputc('\n', out);
        /* Everything must fit: a line past the last row would scroll the header away. */
        char *buf = NULL;
        size_t len = 0, nsums = 0;
        FILE *mem = open_memstream(&buf, &len);
        if (mem == NULL)
                return;
        _cleanup_free_ struct gh_container_sum *sums = gh_usage_container_sums(list, false, &nsums);
        trends_update(sums, nsums, window);
        print_containers(list, sums, nsums, window, no_trunc, width, mem);
        cli_print_procs(list, sort, no_trunc, width, mem);
        cli_print_unowned(list, no_trunc, width, mem);
        fclose(mem);
        int left = rows - (int) list->n - 4;
        for (char *p = buf; p && *p && (!tty || left-- > 0);) {
                char *nl = strchr(p, '\n');
                size_t l = nl ? (size_t) (nl - p) + 1 : strlen(p);
                fwrite(p, 1, l, out);
                p += l;
        }
        free(buf);
        fflush(out);
}

/* Keys: the terminal on stdin, when there is one, in non-canonical mode without echo, so a key
 * acts at once; restored on the way out (also after Ctrl-C or SIGTERM, which only set `stop`). */
static struct termios saved_tio;
static bool keys_on;

static void keys_start(void)
{
        struct termios t;

        if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved_tio) < 0)
                return;
        t = saved_tio;
        t.c_lflag &= ~(tcflag_t) (ICANON | ECHO);
        t.c_cc[VMIN] = 1;
        t.c_cc[VTIME] = 0;
        keys_on = tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0;
}

static void keys_end(void)
{
        if (keys_on)
                tcsetattr(STDIN_FILENO, TCSANOW, &saved_tio);
        keys_on = false;
}

/* Waits up to `seconds` for a key.  Returns the key, 0 when the time is up, -1 on quit. */
static int wait_key(int seconds)
{
        struct timespec end, now;
        unsigned char c;

        clock_gettime(CLOCK_MONOTONIC, &end);
        end.tv_sec += seconds;
        while (!stop) {
                clock_gettime(CLOCK_MONOTONIC, &now);
                long ms = (end.tv_sec - now.tv_sec) * 1000 + (end.tv_nsec - now.tv_nsec) / 1000000;
                if (ms <= 0)
                        return 0;
                if (!keys_on) {
                        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 };
                        nanosleep(&ts, NULL); /* EINTR: the loop looks at stop again */
                        continue;
                }
                struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
                int n = poll(&pfd, 1, (int) ms);
                if (n <= 0)
                        continue; /* timeout (the loop returns 0) or EINTR */
                if (read(STDIN_FILENO, &c, 1) != 1)
                        return -1; /* the terminal went away */
                return c;
        }
        return -1;
}

/* A number in [min, max], or -1 after a message. */
static long bounded(const char *opt, const char *arg, long min, long max)
{
        char *end;
        long v = strtol(arg, &end, 10);

        if (*arg == '\0' || *end != '\0' || v < min || v > max) {
                fprintf(stderr, "gpu-cli: top: --%s '%s' must be %ld..%ld\n", opt, arg, min, max);
                return -1;
        }
        return v;
}

int cmd_top(int argc, char **argv, const struct cli_globals *g)
{
        static const struct option opts[] = {
                { "no-trunc", no_argument, NULL, 'W' },
                { "interval", required_argument, NULL, 'i' },
                { "sort", required_argument, NULL, 's' },
                { "iterations", required_argument, NULL, 'n' },
                { "window", required_argument, NULL, 'w' },
                { "help", no_argument, NULL, 'h' },
                CLI_USAGE_OPTIONS,
                { NULL, 0, NULL, 0 },
        };
        _cleanup_usage_opts_ struct cli_usage_opts uo = { 0 };
        bool no_trunc = false, tty = isatty(STDOUT_FILENO);
        enum cli_sort sort = CLI_SORT_MEMORY;
        long iterations = 0, interval = 2, window = 5;
        int c, r;

        while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
                switch (c) {
                case 'W': no_trunc = true; break;
                case 'i':
                        if ((interval = bounded("interval", optarg, 1, 3600)) < 0)
                                return GH_EXIT_USAGE;
                        break;
                case 'n':
                        if ((iterations = bounded("iterations", optarg, 1, 1000000000)) < 0)
                                return GH_EXIT_USAGE;
                        break;
                case 'w':
                        if ((window = bounded("window", optarg, 2, WINDOW_MAX)) < 0)
                                return GH_EXIT_USAGE;
                        break;
                case 's':
                        if (strcmp(optarg, "memory") == 0)
                                sort = CLI_SORT_MEMORY;
                        else if (strcmp(optarg, "util") == 0)
                                sort = CLI_SORT_UTIL;
                        else {
                                fprintf(stderr, "gpu-cli: top: --sort '%s' must be 'memory' or 'util'\n", optarg);
                                return GH_EXIT_USAGE;
                        }
                        break;
                case 'S':
                case 'T':
                case 'f':
                case 'M':
                        if ((r = cli_usage_option(c, optarg, &uo, "top")) != 0)
                                return r;
                        break;
                case 'h': top_usage(stdout); return GH_EXIT_OK;
                default: fprintf(stderr, "gpu-cli: top: bad option; see 'gpu-cli top --help'\n"); return GH_EXIT_USAGE;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "gpu-cli: top: unexpected argument '%s'; see 'gpu-cli top --help'\n", argv[optind]);
                return GH_EXIT_USAGE;
        }
        struct sigaction sa = { .sa_handler = on_signal };
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        if (tty)
                keys_start();
        r = GH_EXIT_OK;
        for (long i = 0; !stop && (iterations == 0 || i < iterations); i++) {
                _cleanup_gpu_list_ struct gh_gpu_list list = { 0 };
                struct winsize ws = { 0 };
                int width = 160, rows = 50, key;

                key = i > 0 ? wait_key((int) interval) : 0;
                if (key == 'q' || key == 'Q')
                        key = -1;
                else if (key == 'm' || key == 'M')
                        sort = CLI_SORT_MEMORY;
                else if (key == 'u' || key == 'U')
                        sort = CLI_SORT_UTIL;
                /* any other key: a refresh now */
                if (key < 0 || stop)
                        break;
                if ((r = cli_usage_load(g, &uo, "top", &list)) != GH_EXIT_OK)
                        break;
                if (tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
                        width = ws.ws_col;
                        rows = ws.ws_row;
                }
                print_screen(&list, sort, (size_t) window, no_trunc, width, rows, tty, stdout);
        }
        keys_end();
        free(trends);
        return r;
}
