/* gpu-cli ps and top: which processes use which GPU, and in which container. */
#include <errno.h>
#include <jansson.h>
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
#include "container.h"
#include "mps-daemon.h"
#include "oci.h"
#include "rootfs.h"
#include "snapshot.h"

static void ps_usage(FILE *out)
{
        fprintf(out,
                "Usage: gpu-cli [GLOBAL OPTIONS] ps [--json] [--no-trunc] [--state-dir=DIR]... [--timeout=SECONDS]\n"
                "                                   [--mps-dir=DIR]\n"
                "\n"
                "Lists the processes using each GPU (NVML's compute and graphics processes) and the\n"
                "container each belongs to: runtime and id from the process's cgroup, and its PID inside\n"
                "the container (NSpid).  Processes outside containers show as host processes.\n"
                "\n"
                "  --json            one JSON object, schema below\n"
                "  --no-trunc        show container ids in full (default: the first 12 characters)\n"
                "  --mps-dir=DIR     where MPS groups live (default " GH_MPS_DEFAULT_DIR ")\n" CLI_USAGE_HELP "\n"
                "Columns: GPU index, host PID, container runtime and id ('-': a host process), PID in the\n"
                "container, type (C compute, G graphics), GPU memory, SM and memory utilisation (%%, '-'\n"
                "when the driver gives no sample), command name.  Then, when MPS groups exist, each group's\n"
                "clients (as its control daemon lists them) with the same container columns.\n"
                "\n"
                "JSON schema (null: the driver does not report it):\n"
                "  { \"driver_version\": string, \"gpus\": [ { \"index\": int, \"uuid\": string, \"model\": string,\n"
                "      \"utilization_gpu\": int|null, \"utilization_memory\": int|null, \"memory_used_bytes\": int|null,\n"
                "      \"memory_total_bytes\": int|null, \"temperature_c\": int|null, \"power_mw\": int|null,\n"
                "      \"processes\": [ { \"pid\": int, \"container\": null | { \"runtime\": string, \"id\": string },\n"
                "                       \"container_pid\": int|null, \"type\": \"C\"|\"G\"|\"C+G\",\n"
                "                       \"used_memory_bytes\": int|null, \"sm_util\": int|null, \"mem_util\": int|null,\n"
                "                       \"command\": string } ] } ],\n"
                "    \"mps_groups\": [ { \"name\": string, \"gpu_index\": int, \"gpu_uuid\": string, \"alive\": bool,\n"
                "      \"clients\": [ { \"pid\": int, \"container\": null | { \"runtime\", \"id\" },\n"
                "                     \"container_pid\": int|null, \"command\": string } ] } ] }\n"
                "\n"
                "Exit status: 0 success, 1 failure (NVML failed), 2 usage error, 3 no driver.\n");
}

/* ---- MPS groups: their clients, attributed to containers like GPU processes ---- */

struct mps_client {
        pid_t pid;
        struct gh_proc_owner owner;
};

struct mps_row {
        struct gh_mps_group group;
        struct mps_client *clients;
        size_t n;
};

static void mps_rows_free(struct mps_row *rows, size_t n)
{
        for (size_t i = 0; rows && i < n; i++)
                free(rows[i].clients);
        free(rows);
}

/* Every group under dir with its clients.  Groups that cannot be read are left out; a missing driver
 * control program leaves every client list empty (said on stderr). */
static int mps_load(const struct cli_globals *g, const char *dir, const char *const *state_dirs, struct mps_row **out,
                    size_t *nout)
{
        _cleanup_free_ struct gh_mps_group *groups = NULL;
        _cleanup_free_ char *control = NULL;
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_close_ int rootfd = -1;
        struct mps_row *rows;
        size_t n = 0;

        *out = NULL;
        *nout = 0;
        if (gh_mps_list(dir, &groups, &n, &err) < 0) {
                fprintf(stderr, "gpu-cli: ps: MPS groups: %s\n", err->msg);
                return 0;
        }
        if (n == 0)
                return 0;
        rows = calloc(n, sizeof(*rows));
        if (rows == NULL)
                return -1;
        rootfd = gh_rootfs_open(g->root, &err);
        if (rootfd < 0 || gh_mps_find_control(rootfd, g->root, g->ldcache, &control, &err) < 0) {
                fprintf(stderr, "gpu-cli: ps: MPS clients not listed: %s\n", err->msg);
                gh_error_free(&err);
        }
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ pid_t *pids = NULL;
                _cleanup_error_ gh_error_t e = NULL;
                size_t np = 0;
                rows[i].group = groups[i];
                if (!groups[i].alive || control == NULL ||
                    gh_mps_clients(dir, groups[i].name, control, &pids, &np, &e) < 0 || np == 0)
                        continue;
                rows[i].clients = calloc(np, sizeof(struct mps_client));
                if (rows[i].clients == NULL) {
                        mps_rows_free(rows, n);
                        return -1;
                }
                for (size_t k = 0; k < np; k++) {
                        _cleanup_error_ gh_error_t e2 = NULL;
                        struct mps_client *c = &rows[i].clients[rows[i].n];
                        c->pid = pids[k];
                        if (gh_proc_owner(pids[k], state_dirs, &c->owner, &e2) < 0)
                                continue; /* gone meanwhile */
                        rows[i].n++;
                }
        }
        *out = rows;
        *nout = n;
        return 0;
}

static json_t *mps_json(const struct mps_row *rows, size_t n)
{
        json_t *arr = json_array();

        for (size_t i = 0; arr && i < n; i++) {
                const struct gh_mps_group *grp = &rows[i].group;
                json_t *o = json_object(), *clients = json_array();
                json_object_set_new(o, "name", json_string(grp->name));
                json_object_set_new(o, "gpu_index", json_integer(grp->gpu_index));
                json_object_set_new(o, "gpu_uuid", json_string(grp->gpu_uuid));
                json_object_set_new(o, "alive", json_boolean(grp->alive));
                for (size_t k = 0; k < rows[i].n; k++) {
                        const struct gh_proc_owner *w = &rows[i].clients[k].owner;
                        json_t *co = json_object(), *c = json_null();
                        if (w->in_container) {
                                c = json_object();
                                json_object_set_new(c, "runtime", json_string(w->runtime));
                                json_object_set_new(c, "id", json_string(w->id));
                        }
                        json_object_set_new(co, "pid", json_integer(rows[i].clients[k].pid));
                        json_object_set_new(co, "container", c);
                        json_object_set_new(co, "container_pid",
                                            w->in_container ? json_integer(w->ns_pid) : json_null());
                        json_object_set_new(co, "command", json_string(w->comm));
                        json_array_append_new(clients, co);
                }
                json_object_set_new(o, "clients", clients);
                json_array_append_new(arr, o);
        }
        return arr;
}

static void mps_table(const struct mps_row *rows, size_t n, bool no_trunc, FILE *out)
{
        if (n == 0)
                return;
        fprintf(out, "\n%-20s %-3s %8s  %-8s %-*s %8s  %s\n", "MPS GROUP", "GPU", "PID", "RUNTIME", no_trunc ? 64 : 12,
                "CONTAINER", "CPID", "COMMAND");
        for (size_t i = 0; i < n; i++) {
                const struct gh_mps_group *grp = &rows[i].group;
                if (rows[i].n == 0)
                        fprintf(out, "%-20s %-3u %8s  %s\n", grp->name, grp->gpu_index, "-",
                                grp->alive ? "(no clients)" : "(daemon not running)");
                for (size_t k = 0; k < rows[i].n; k++) {
                        const struct gh_proc_owner *w = &rows[i].clients[k].owner;
                        char cpid[16];
                        snprintf(cpid, sizeof(cpid), "%d", (int) w->ns_pid);
                        fprintf(out, "%-20s %-3u %8d  %-8s %-*.*s %8s  %s\n", grp->name, grp->gpu_index,
                                (int) rows[i].clients[k].pid, w->in_container ? w->runtime : "host", no_trunc ? 64 : 12,
                                no_trunc ? 64 : 12, w->in_container ? w->id : "-", w->in_container ? cpid : "-",
                                w->comm);
                }
        }
}

static const char *proc_type(const struct gh_gpu_proc *p)
{
        return p->compute && p->graphics ? "C+G" : p->graphics ? "G" : "C";
}

static json_t *int_or_null(long long v, bool known) { return known ? json_integer(v) : json_null(); }

static int print_json(const struct gh_gpu_list *list, const struct mps_row *mps, size_t nmps)
{
        _cleanup_json_ json_t *root = json_object();
        json_t *gpus = json_array();
        _cleanup_free_ char *text = NULL;

        if (root == NULL || gpus == NULL)
                return -1;
        json_object_set_new(root, "driver_version", json_string(list->driver_version));
        json_object_set_new(root, "gpus", gpus);
        for (size_t g = 0; g < list->n; g++) {
                const struct gh_gpu *gpu = &list->gpus[g];
                const struct gh_gpu_usage *u = gpu->usage;
                json_t *o = json_object(), *procs = json_array();
                json_object_set_new(o, "index", json_integer(gpu->index));
                json_object_set_new(o, "uuid", json_string(gpu->uuid));
                json_object_set_new(o, "model", json_string(gpu->model));
                json_object_set_new(o, "utilization_gpu", int_or_null(u->gpu_util, u->gpu_util >= 0));
                json_object_set_new(o, "utilization_memory", int_or_null(u->mem_util, u->mem_util >= 0));
                json_object_set_new(o, "memory_used_bytes",
                                    int_or_null((long long) u->mem_used, u->mem_used != GH_UNKNOWN_U64));
                json_object_set_new(o, "memory_total_bytes",
                                    int_or_null((long long) u->mem_total, u->mem_total != GH_UNKNOWN_U64));
                json_object_set_new(o, "temperature_c", int_or_null(u->temperature_c, u->temperature_c >= 0));
                json_object_set_new(o, "power_mw", int_or_null(u->power_mw, u->power_mw >= 0));
                for (size_t i = 0; i < u->nprocs; i++) {
                        const struct gh_gpu_proc *p = &u->procs[i];
                        json_t *po = json_object(), *c = json_null();
                        if (p->owner.in_container) {
                                c = json_object();
                                json_object_set_new(c, "runtime", json_string(p->owner.runtime));
                                json_object_set_new(c, "id", json_string(p->owner.id));
                        }
                        json_object_set_new(po, "pid", json_integer(p->pid));
                        json_object_set_new(po, "container", c);
                        json_object_set_new(po, "container_pid", int_or_null(p->owner.ns_pid, p->owner.in_container));
                        json_object_set_new(po, "type", json_string(proc_type(p)));
                        json_object_set_new(po, "used_memory_bytes",
                                            int_or_null((long long) p->used_memory, p->used_memory != GH_UNKNOWN_U64));
                        json_object_set_new(po, "sm_util", int_or_null(p->sm_util, p->sm_util >= 0));
                        json_object_set_new(po, "mem_util", int_or_null(p->mem_util, p->mem_util >= 0));
                        json_object_set_new(po, "command", json_string(p->owner.comm));
                        json_array_append_new(procs, po);
                }
                json_object_set_new(o, "processes", procs);
                json_array_append_new(gpus, o);
        }
        json_object_set_new(root, "mps_groups", mps_json(mps, nmps));
        text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        if (text == NULL)
                return -1;
        puts(text);
        return 0;
}

static void percent(int v, char *buf, size_t size)
{
        if (v < 0)
                snprintf(buf, size, "-");
        else
                snprintf(buf, size, "%d", v);
}

/* The process table; width > 0 cuts every line to that many columns (a terminal). */
static void print_table(const struct gh_gpu_list *list, enum cli_sort sort, bool no_trunc, int width, FILE *out)
{
        _cleanup_free_ struct cli_proc_row *rows = NULL;
        size_t n;
        char line[512];

        rows = cli_proc_rows(list, sort, &n);
        snprintf(line, sizeof(line), "%-3s %8s  %-8s %-*s %8s %-4s %9s %4s %4s  %s", "GPU", "PID", "RUNTIME",
                 no_trunc ? 64 : 12, "CONTAINER", "CPID", "TYPE", "MEMORY", "SM%", "MEM%", "COMMAND");
        fprintf(out, "%.*s\n", width > 0 ? width : (int) sizeof(line), line);
        for (size_t i = 0; i < n; i++) {
                const struct gh_gpu_proc *p = rows[i].proc;
                char mem[32], sm[8], mu[8], cpid[16];
                bool c = p->owner.in_container;

                cli_format_mib(p->used_memory, mem, sizeof(mem));
                percent(p->sm_util, sm, sizeof(sm));
                percent(p->mem_util, mu, sizeof(mu));
                snprintf(cpid, sizeof(cpid), "%d", (int) p->owner.ns_pid);
                snprintf(line, sizeof(line), "%-3u %8d  %-8s %-*.*s %8s %-4s %9s %4s %4s  %s", rows[i].gpu->index,
                         (int) p->pid, c ? p->owner.runtime : "host", no_trunc ? 64 : 12, no_trunc ? 64 : 12,
                         c ? p->owner.id : "-", c ? cpid : "-", proc_type(p), mem, sm, mu, p->owner.comm);
                fprintf(out, "%.*s\n", width > 0 ? width : (int) sizeof(line), line);
        }
        if (n == 0)
                fprintf(out, "No process uses a GPU.\n");
}

static int parse_common(int argc, char **argv, const char *cmd, bool *json, bool *no_trunc, struct cli_usage_opts *uo,
                        int *interval, enum cli_sort *sort, long *iterations, const char **mps_dir)
{
        static const struct option opts[] = {
                { "json", no_argument, NULL, 'j' },
                { "no-trunc", no_argument, NULL, 'W' },
                { "interval", required_argument, NULL, 'i' },
                { "sort", required_argument, NULL, 's' },
                { "iterations", required_argument, NULL, 'n' },
                { "help", no_argument, NULL, 'h' },
                { "mps-dir", required_argument, NULL, 'M' },
                CLI_USAGE_OPTIONS,
                { NULL, 0, NULL, 0 },
        };
        bool top = strcmp(cmd, "top") == 0;
        int c, r;

        while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
                char *end;
                long v;
                switch (c) {
                case 'j':
                        if (top)
                                goto bad;
                        *json = true;
                        break;
                case 'W': *no_trunc = true; break;
                case 'M':
                        if (top)
                                goto bad;
                        if (optarg[0] != '/') {
                                fprintf(stderr, "gpu-cli: ps: --mps-dir '%s' must be an absolute path\n", optarg);
                                return CLI_EXIT_USAGE;
                        }
                        *mps_dir = optarg;
                        break;
                case 'S':
                case 'T':
                        if ((r = cli_usage_option(c, optarg, uo, cmd)) != 0)
                                return r;
                        break;
                case 'i':
                        if (!top)
                                goto bad;
                        v = strtol(optarg, &end, 10);
                        if (*optarg == '\0' || *end != '\0' || v < 1 || v > 3600) {
                                fprintf(stderr, "gpu-cli: top: --interval '%s' must be 1..3600 seconds\n", optarg);
                                return CLI_EXIT_USAGE;
                        }
                        *interval = (int) v;
                        break;
                case 'n':
                        if (!top)
                                goto bad;
                        v = strtol(optarg, &end, 10);
                        if (*optarg == '\0' || *end != '\0' || v < 1) {
                                fprintf(stderr, "gpu-cli: top: --iterations '%s' must be a positive number\n", optarg);
                                return CLI_EXIT_USAGE;
                        }
                        *iterations = v;
                        break;
                case 's':
                        if (!top)
                                goto bad;
                        if (strcmp(optarg, "memory") == 0)
                                *sort = CLI_SORT_MEMORY;
                        else if (strcmp(optarg, "util") == 0)
                                *sort = CLI_SORT_UTIL;
                        else {
                                fprintf(stderr, "gpu-cli: top: --sort '%s' must be 'memory' or 'util'\n", optarg);
                                return CLI_EXIT_USAGE;
                        }
                        break;
                case 'h': return -1;
                default:
                bad:
                        fprintf(stderr, "gpu-cli: %s: bad option; see 'gpu-cli %s --help'\n", cmd, cmd);
                        return CLI_EXIT_USAGE;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "gpu-cli: %s: unexpected argument '%s'; see 'gpu-cli %s --help'\n", cmd, argv[optind],
                        cmd);
                return CLI_EXIT_USAGE;
        }
        return 0;
}

int cmd_ps(int argc, char **argv, const struct cli_globals *g)
{
        _cleanup_gpu_list_ struct gh_gpu_list list = { 0 };
        struct cli_usage_opts uo = { 0 };
        bool json = false, no_trunc = false;
        enum cli_sort sort = CLI_SORT_GPU;
        long iterations = 0;
        int interval = 0, r;
        const char *mps_dir = GH_MPS_DEFAULT_DIR;
        struct mps_row *mps = NULL;
        size_t nmps = 0;

        r = parse_common(argc, argv, "ps", &json, &no_trunc, &uo, &interval, &sort, &iterations, &mps_dir);
        if (r < 0) {
                ps_usage(stdout);
                return CLI_EXIT_OK;
        }
        if (r > 0)
                return r;
        if ((r = cli_usage_load(g, &uo, "ps", &list)) != CLI_EXIT_OK)
                return r;
        if (mps_load(g, mps_dir, uo.state_dirs, &mps, &nmps) < 0) {
                fprintf(stderr, "gpu-cli: ps: out of memory listing MPS clients\n");
                return CLI_EXIT_FAILURE;
        }
        if (!json) {
                print_table(&list, CLI_SORT_GPU, no_trunc, 0, stdout);
                mps_table(mps, nmps, no_trunc, stdout);
        } else if (print_json(&list, mps, nmps) < 0) {
                mps_rows_free(mps, nmps);
                fprintf(stderr, "gpu-cli: ps: out of memory writing JSON\n");
                return CLI_EXIT_FAILURE;
        }
        mps_rows_free(mps, nmps);
        if (fflush(stdout) != 0) {
                fprintf(stderr, "gpu-cli: ps: writing the output: %m\n");
                return CLI_EXIT_FAILURE;
        }
        return CLI_EXIT_OK;
}

/* ---- top ---- */

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
                "                                    [--no-trunc] [--state-dir=DIR]... [--timeout=SECONDS]\n"
                "\n"
                "gpu-cli ps, refreshed: each GPU's utilisation, memory, temperature and power, then its processes\n"
                "and their containers.  Keys (in a terminal): q quits, m sorts by memory, u by SM utilisation,\n"
                "space refreshes now.  Ctrl-C ends it too.\n"
                "\n"
                "  --interval=SECONDS  time between refreshes (default 2)\n"
                "  --sort=memory|util  order processes by GPU memory (default) or SM utilisation\n"
                "  --iterations=N      stop after N screens\n"
                "  --no-trunc          show container ids in full\n" CLI_USAGE_HELP "\n"
                "Exit status: 0 success, 1 failure (NVML failed), 2 usage error, 3 no driver.\n");
}

static void print_screen(const struct gh_gpu_list *list, enum cli_sort sort, bool no_trunc, int width, int rows,
                         bool tty, FILE *out)
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
                char used[32], total[32], util[8], temp[16], power[16];
                cli_format_mib(u->mem_used, used, sizeof(used));
                cli_format_mib(u->mem_total, total, sizeof(total));
                percent(u->gpu_util, util, sizeof(util));
                if (u->temperature_c >= 0)
                        snprintf(temp, sizeof(temp), "%dC", u->temperature_c);
                else
                        snprintf(temp, sizeof(temp), "-");
                if (u->power_mw >= 0)
                        snprintf(power, sizeof(power), "%dW", u->power_mw / 1000);
                else
                        snprintf(power, sizeof(power), "-");
                snprintf(line, sizeof(line), "GPU %u  %-26.26s util %4s%%  mem %9s / %-9s  %4s  %5s  procs %zu",
                         list->gpus[g].index, list->gpus[g].model, util, used, total, temp, power, u->nprocs);
                fprintf(out, "%.*s\n", width, line);
        }
        fputc('\n', out);
        /* Everything must fit: a line past the last row would scroll the header away. */
        char *buf = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&buf, &len);
        if (mem == NULL)
                return;
        print_table(list, sort, no_trunc, width, mem);
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

int cmd_top(int argc, char **argv, const struct cli_globals *g)
{
        struct cli_usage_opts uo = { 0 };
        bool json = false, no_trunc = false, tty = isatty(STDOUT_FILENO);
        enum cli_sort sort = CLI_SORT_MEMORY;
        long iterations = 0;
        int interval = 2, r;

        r = parse_common(argc, argv, "top", &json, &no_trunc, &uo, &interval, &sort, &iterations, NULL);
        if (r < 0) {
                top_usage(stdout);
                return CLI_EXIT_OK;
        }
        if (r > 0)
                return r;
        struct sigaction sa = { .sa_handler = on_signal };
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        if (tty)
                keys_start();
        r = CLI_EXIT_OK;
        for (long i = 0; !stop && (iterations == 0 || i < iterations); i++) {
                _cleanup_gpu_list_ struct gh_gpu_list list = { 0 };
                struct winsize ws = { 0 };
                int width = 160, rows = 50, key;

                key = i > 0 ? wait_key(interval) : 0;
                if (key == 'q' || key == 'Q')
                        key = -1;
                else if (key == 'm' || key == 'M')
                        sort = CLI_SORT_MEMORY;
                else if (key == 'u' || key == 'U')
                        sort = CLI_SORT_UTIL;
                /* any other key: a refresh now */
                if (key < 0 || stop)
                        break;
                if ((r = cli_usage_load(g, &uo, "top", &list)) != CLI_EXIT_OK)
                        break;
                if (tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
                        width = ws.ws_col;
                        rows = ws.ws_row;
                }
                print_screen(&list, sort, no_trunc, width, rows, tty, stdout);
        }
        keys_end();
        return r;
}
