/* gpu-cli doctor: "why is my container's GPU idle?"  Runs the host checks, or one container's,
 * and prints each with its evidence, cause and fix (lib/ops/doctor.c; docs/doctor.md). */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "cli.h"
#include "config.h"
#include "container.h"
#include "doctor.h"
#include "hookconfig.h"
#include "json.h"
#include "oci.h"
#include "proc.h"
#include "service.h"

#define MAX_DIRS 16

static void usage(FILE *out)
{
        fprintf(out,
                "Usage: gpu-cli [GLOBAL OPTIONS] doctor [--json] [--pid=PID | --container=ID] [OPTIONS]\n"
                "\n"
                "Checks, in order, what a GPU container needs and says for each: ok, warn or fail, what it saw,\n"
                "and otherwise the cause in one sentence and the fix.  Without --pid/--container the host is\n"
                "checked: driver, device nodes, library vs kernel module version, NVML, persistenced, hooks.d,\n"
                "Docker, CDI specs, cgroups and /dev/char links, and each MPS group's daemon.  With one, that\n"
                "container: did it ask for a GPU, its MPS group (daemon alive, limits, the group's pipe\n"
                "directory and shm mounted), its requirements, device nodes present and allowed by its device\n"
                "cgroup, libraries mounted, its ld cache resolving libcuda.so.1 / libnvidia-ml.so.1,\n"
                "/proc/driver/nvidia masked.\n"
                "\n"
                "  --pid=PID             a process of the container (its environment says what it asked for)\n"
                "  --container=ID        a container id or unique prefix, from the runc, crun, Docker or\n"
                "                        containerd state directories (its bundle's config.json is read)\n"
                "  --state-dir=DIR       another runtime state directory to search (runc --root)\n"
                "  --config=FILE         gpu-hook's configuration (default " GPUHOOK_DEFAULT_CONFIG ")\n"
                "  --hooks-dir=DIR       hooks.d directories to check (default the standard two; repeatable)\n"
                "  --mps-dir=DIR         where MPS groups live (default: the configuration's mps.dir)\n"
                "  --cdi-dir=DIR         CDI spec directories (default /etc/cdi, /var/run/cdi; repeatable)\n"
                "  --dev-char-path=DIR   where the /dev/char links are looked for (default /dev/char)\n"
                "  --docker-config=FILE  dockerd's configuration (default /etc/docker/daemon.json)\n"
                "  --cgroup-manager=systemd|cgroupfs  what manages the containers' cgroups (default: systemd\n"
                "                        when /run/systemd/system exists)\n"
                "  --json                one JSON object: {\"target\": \"host\"|{\"pid\": int, \"container\": string|null},\n"
                "                        \"checks\": [{\"name\", \"status\": \"ok\"|\"warn\"|\"fail\", \"evidence\",\n"
                "                        \"cause\": string|null, \"fix\": string|null}], \"failed\": bool}\n"
                "\n"
                "Exit status: 0 nothing failed (warnings allowed), 1 a check failed, 2 usage error.\n");
}

static int add_dir(const char **dirs, size_t *n, const char *arg, const char *opt)
{
        if (arg[0] != '/' || *n >= MAX_DIRS) {
                fprintf(stderr, "gpu-cli: doctor: %s '%s' must be an absolute path (at most %d)\n", opt, arg, MAX_DIRS);
                return -1;
        }
        dirs[(*n)++] = arg;
        dirs[*n] = NULL;
        return 0;
}

/* A check's fix as the user runs it: the library names the command (gh_fix_command), gpu-cli
 * writes it in its own syntax, then the check's own words.  NULL when there is no fix. */
static char *fix_text(const struct gh_check *c)
{
        const struct gh_mps_group *g = c->mps;
        char dir[PATH_MAX + 16] = "", limits[64] = "", *cmd = NULL, *out = NULL;
        int r = 0;

        if (c->command == GH_FIX_TEXT || g == NULL)
                return c->fix ? strdup(c->fix) : NULL;
        if (c->mps_dir != NULL)
                snprintf(dir, sizeof(dir), " --mps-dir=%s", c->mps_dir);
        if (c->command == GH_FIX_MPS_START) {
                r = asprintf(&cmd, "gpu-cli mps%s start %s --device=ID (or pass doctor --mps-dir)", dir, g->name);
        } else {
                if (g->threads)
                        snprintf(limits, sizeof(limits), " --threads=%d", g->threads);
                if (g->memory_mib)
                        snprintf(limits + strlen(limits), sizeof(limits) - strlen(limits), " --memory=%lluM",
                                 g->memory_mib);
                r = asprintf(&cmd, "gpu-cli mps%s stop %s && gpu-cli mps%s start %s --device=%s%s", dir, g->name, dir,
                             g->name, g->gpu_uuid, limits);
        }
        if (r < 0)
                return NULL;
        if (c->fix == NULL)
                return cmd;
        r = asprintf(&out, "%s, %s", cmd, c->fix);
        free(cmd);
        return r < 0 ? NULL : out;
}

static void print_text(const struct gh_doctor *d)
{
        for (size_t i = 0; i < d->n; i++) {
                const struct gh_check *c = &d->checks[i];
                _cleanup_free_ char *fix = fix_text(c);
                printf("%-5s %-16s %s\n", gh_check_status_name(c->status), c->name, c->evidence ? c->evidence : "");
                if (c->cause)
                        printf("      cause: %s\n", c->cause);
                if (fix)
                        printf("      fix:   %s\n", fix);
        }
}

static int print_json(const struct gh_doctor *d, pid_t pid, const char *id)
{
        _cleanup_json_ json_t *root = json_object();
        json_t *checks = json_array(), *target;

        if (root == NULL || checks == NULL)
                return -1;
        if (pid > 0) {
                target = json_object();
                json_object_set_new(target, "pid", json_integer(pid));
                json_object_set_new(target, "container", gh_json_string_or_null(id));
        } else {
                target = json_string("host");
        }
        json_object_set_new(root, "target", target);
        for (size_t i = 0; i < d->n; i++) {
                json_t *o = json_object();
                json_object_set_new(o, "name", json_string(d->checks[i].name));
                json_object_set_new(o, "status", json_string(gh_check_status_name(d->checks[i].status)));
                json_object_set_new(o, "evidence", gh_json_string_or_null(d->checks[i].evidence));
                json_object_set_new(o, "cause", gh_json_string_or_null(d->checks[i].cause));
                _cleanup_free_ char *fix = fix_text(&d->checks[i]);
                json_object_set_new(o, "fix", gh_json_string_or_null(fix));
                json_array_append_new(checks, o);
        }
        json_object_set_new(root, "checks", checks);
        json_object_set_new(root, "failed", json_boolean(gh_doctor_worst(d) == GH_CHECK_FAIL));
        return gh_json_print(steal_pointer(&root));
}

int cmd_doctor(int argc, char **argv, const struct cli_globals *g)
{
        static const struct option opts[] = {
                { "json", no_argument, NULL, 'j' },
                { "pid", required_argument, NULL, 'p' },
                { "container", required_argument, NULL, 'c' },
                { "state-dir", required_argument, NULL, 'S' },
                { "config", required_argument, NULL, 'f' },
                { "hooks-dir", required_argument, NULL, 'H' },
                { "cdi-dir", required_argument, NULL, 'D' },
                { "cgroup-manager", required_argument, NULL, 'm' },
                { "mps-dir", required_argument, NULL, 'M' },
                { "docker-config", required_argument, NULL, 'K' },
                { "dev-char-path", required_argument, NULL, 'C' },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        const char *hooks[MAX_DIRS + 1] = { NULL }, *cdi[MAX_DIRS + 1] = { NULL }, *state[MAX_DIRS + 1] = { NULL };
        size_t nhooks = 0, ncdi = 0, nstate = 0;
        struct gh_doctor_opts o = { .root = g->root, .ldcache = g->ldcache, .uid = g->uid, .gid = g->gid };
        struct gh_container_ref ref = { 0 };
        _cleanup_error_ gh_error_t err = NULL;
        const char *config = GPUHOOK_DEFAULT_CONFIG, *id = NULL;
        struct gh_config cfg;
        struct gh_doctor d;
        bool json = false;
        pid_t pid = 0;
        int c;

        while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
                switch (c) {
                case 'j': json = true; break;
                case 'p':
                        if (gh_parse_pid(optarg, &pid) < 0) {
                                fprintf(stderr, "gpu-cli: doctor: --pid '%s' is not a process id\n", optarg);
                                return GH_EXIT_USAGE;
                        }
                        break;
                case 'c': id = optarg; break;
                case 'S':
                        if (add_dir(state, &nstate, optarg, "--state-dir") < 0)
                                return GH_EXIT_USAGE;
                        break;
                case 'H':
                        if (add_dir(hooks, &nhooks, optarg, "--hooks-dir") < 0)
                                return GH_EXIT_USAGE;
                        break;
                case 'D':
                        if (add_dir(cdi, &ncdi, optarg, "--cdi-dir") < 0)
                                return GH_EXIT_USAGE;
                        break;
                case 'f': config = optarg; break;
                case 'K': o.docker_config = optarg; break;
                case 'C':
                        if (optarg[0] != '/') {
                                fprintf(stderr, "gpu-cli: doctor: --dev-char-path '%s' must be an absolute path\n",
                                        optarg);
                                return GH_EXIT_USAGE;
                        }
                        o.dev_char = optarg;
                        break;
                case 'M':
                        if (optarg[0] != '/') {
                                fprintf(stderr, "gpu-cli: doctor: --mps-dir '%s' must be an absolute path\n", optarg);
                                return GH_EXIT_USAGE;
                        }
                        o.mps_dir = optarg;
                        break;
                case 'm':
                        if (strcmp(optarg, "systemd") == 0)
                                o.manager = GH_MANAGER_SYSTEMD;
                        else if (strcmp(optarg, "cgroupfs") == 0)
                                o.manager = GH_MANAGER_CGROUPFS;
                        else {
                                fprintf(stderr, "gpu-cli: doctor: --cgroup-manager '%s' must be systemd or cgroupfs\n",
                                        optarg);
                                return GH_EXIT_USAGE;
                        }
                        break;
                case 'h': usage(stdout); return GH_EXIT_OK;
                default: usage(stderr); return GH_EXIT_USAGE;
                }
        }
        if (optind < argc || (pid > 0 && id != NULL)) {
                fprintf(stderr, "gpu-cli: doctor: %s; see 'gpu-cli doctor --help'\n",
                        optind < argc ? "unexpected argument" : "give --pid or --container, not both");
                return GH_EXIT_USAGE;
        }
        if (gh_config_init(&cfg, &err) < 0 || gh_config_load(&cfg, config, &err) < 0) {
                fprintf(stderr, "gpu-cli: doctor: %s; fix it or pass --config\n", err->msg);
                gh_config_free(&cfg);
                return GH_EXIT_USAGE;
        }
        o.config = &cfg;
        o.state_roots = state;
        o.hooks_dirs = nhooks ? hooks : NULL;
        o.cdi_dirs = ncdi ? cdi : NULL;
        if (id != NULL) {
                if (gh_container_find(id, state, &ref, &err) < 0) {
                        fprintf(stderr, "gpu-cli: doctor: %s\n", err->msg);
                        gh_config_free(&cfg);
                        return GH_EXIT_FAILURE;
                }
                pid = ref.pid;
                id = ref.id;
        }
        if (pid > 0)
                gh_doctor_container(&o, pid, ref.bundle[0] ? ref.bundle : NULL, &d);
        else
                gh_doctor_host(&o, &d);
        if (json ? print_json(&d, pid, id) < 0 : (print_text(&d), false))
                fprintf(stderr, "gpu-cli: doctor: out of memory writing JSON\n");
        enum gh_check_status worst = gh_doctor_worst(&d);
        gh_doctor_free(&d);
        gh_config_free(&cfg);
        if (fflush(stdout) != 0) {
                fprintf(stderr, "gpu-cli: doctor: writing the output: %m\n");
                return GH_EXIT_FAILURE;
        }
        return worst == GH_CHECK_FAIL ? GH_EXIT_FAILURE : GH_EXIT_OK;
}
