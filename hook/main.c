/* gpu-hook: the OCI createRuntime/prestart hook.
 *
 * Reads the OCI state on stdin, the bundle's config.json and gpu-hook's configuration, decides from
 * the container's environment whether (and how) it gets a GPU, and configures it (configure.c; or runs
 * `gpu-cli configure` for it, spawn.c).
 * Nothing here depends on the hook's own environment: a runtime may pass it the container's, and
 * the container's is chosen by whoever built the image. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "config.h" /* the build's: GPUHOOK_DEFAULT_CONFIG */
#include "env.h"
#include "gpuhook.h"
#include "hook.h"
#include "hookconfig.h"
#include "hooklog.h"
#include "log.h"
#include "oci.h"
#include "podrecord.h"
#include "proc.h"
#include "steps.h"

/* The engine tests (tests/integration/meson.build) build a second gpu-hook whose compiled-in default
 * points into the build directory: Docker runs the hook with no way to pass --config. */
#ifdef GH_TEST_DEFAULT_CONFIG
#undef GPUHOOK_DEFAULT_CONFIG
#define GPUHOOK_DEFAULT_CONFIG GH_TEST_DEFAULT_CONFIG
#endif

struct options {
        const char *config;
        const char *debug;
        const char *stage;
        bool dry_run;
};

static void usage(FILE *out)
{
        fprintf(out,
                "Usage: gpu-hook [--config=FILE] [--debug=FILE] [--dry-run] STAGE\n"
                "\n"
                "OCI hook that gives a container an NVIDIA GPU when its environment asks for one\n"
                "(NVIDIA_VISIBLE_DEVICES and friends).  Reads the OCI state on stdin.\n"
                "\n"
                "Stages: createRuntime (preferred), prestart; poststop removes the container's record\n"
                "(the pod gpu-cli ps names); poststart does nothing.\n"
                "\n"
                "Options:\n"
                "  --config=FILE  configuration (default %s)\n"
                "  --debug=FILE   append debug output (JSON lines) to FILE; also passed to gpu-cli\n"
                "  --dry-run      print the decision as one JSON object and change nothing\n"
                "  --help, --version\n"
                "\n"
                "Exit status: 0 success (or not a GPU container), 1 failure, 2 usage error;\n"
                "gpu-cli configure's status when it fails (4: requirement not met).\n",
                GPUHOOK_DEFAULT_CONFIG);
}

static bool is_stage(const char *s)
{
        return strcmp(s, "createRuntime") == 0 || strcmp(s, "prestart") == 0 || strcmp(s, "poststart") == 0 ||
               strcmp(s, "poststop") == 0;
}

/* Hand-rolled instead of getopt_long: getopt consults POSIXLY_CORRECT, and the hook must not let
 * its environment change anything. */
static int parse_args(int argc, char **argv, struct options *o)
{
        for (int i = 1; i < argc; i++) {
                const char *a = argv[i];
                const char **value = NULL;
                size_t nl = 0;

                if (strncmp(a, "--config", nl = 8) == 0)
                        value = &o->config;
                else if (strncmp(a, "--debug", nl = 7) == 0)
                        value = &o->debug;
                if (value != NULL && (a[nl] == '=' || a[nl] == '\0')) {
                        if (a[nl] == '=')
                                *value = a + nl + 1;
                        else if (i + 1 < argc)
                                *value = argv[++i];
                        else
                                return fprintf(stderr, "gpu-hook: %s needs a value\n", a), -1;
                        if (**value == '\0')
                                return fprintf(stderr, "gpu-hook: %.*s needs a non-empty value\n", (int) nl, a), -1;
                        continue;
                }
                if (strcmp(a, "--dry-run") == 0) {
                        o->dry_run = true;
                } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
                        usage(stdout);
                        exit(GH_EXIT_OK);
                } else if (strcmp(a, "--version") == 0) {
                        printf("gpu-hook %s\n", gpuhook_version());
                        exit(GH_EXIT_OK);
                } else if (a[0] != '-' && is_stage(a) && o->stage == NULL) {
                        o->stage = a;
                } else {
                        fprintf(stderr, "gpu-hook: unexpected argument '%.64s'; see 'gpu-hook --help'\n", a);
                        return -1;
                }
        }
        if (o->stage == NULL && !o->dry_run) {
                fprintf(stderr,
                        "gpu-hook: no stage given; use createRuntime or prestart (hooks.d: put it in \"args\")\n");
                return -1;
        }
        return 0;
}

/* Records a GPU container that has started (podrecord.h): one small file.  Failing to is no reason
 * to stop the container: it loses only its pod's name in ps and metrics. */
static void record_container(const struct gh_config *cfg, const struct gh_oci_state *state,
                             const struct gh_oci_spec *spec)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_record r = { .pid = state->pid, .pod = spec->pod };

        if (cfg->containers.dir == NULL)
                return;
        snprintf(r.id, sizeof(r.id), "%s", state->id ? state->id : "");
        r.starttime = gh_proc_starttime(state->pid);
        if (r.starttime == 0)
                return; /* its init is gone already: there is no container to name */
        if (gh_record_save(cfg->containers.dir, &r, &err) < 0)
                gh_warn("%s", err->msg);
}

/* poststop: the container is gone, so is its record.  Whatever fails here changes nothing for the
 * container, so nothing fails: the exit status is always 0, and readers collect what is left. */
static int poststop(const struct options *o)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_oci_state state = { 0 };
        struct gh_config cfg = { 0 };
        _cleanup_close_ int dirfd = -1;

        if (gh_config_load(&cfg, o->config ? o->config : GPUHOOK_DEFAULT_CONFIG, &err) == 0 &&
            cfg.containers.dir != NULL && gh_oci_state_read(STDIN_FILENO, &state, &err) == 0 && state.id != NULL &&
            (dirfd = gh_record_dir_open(cfg.containers.dir, false, &err)) >= 0)
                gh_record_remove(dirfd, state.id, &err);
        if (err != NULL)
                gh_debug("poststop: %s", err->msg);
        gh_oci_state_free(&state);
        gh_config_free(&cfg);
        return GH_EXIT_OK;
}

/* configure's phases, as parts of the log's "configure" (the same names however it ran): driver,
 * gpus, plan, open, enter, apply, ldcache, cgroup, and other (what they leave out: capability
 * switches, leaving the namespace, freeing). */
static void log_phase_parts(struct gh_hooklog *log, const long v[8], long whole)
{
        static const char *const names[] = { "configure.driver",  "configure.gpus",  "configure.plan",
                                             "configure.open",    "configure.enter", "configure.apply",
                                             "configure.ldcache", "configure.cgroup" };
        long parts = 0;

        for (size_t i = 0; i < 8; i++) {
                gh_hooklog_add(log, names[i], v[i]);
                parts += v[i];
        }
        gh_hooklog_add(log, "configure.other", whole - parts);
}

/* The parts of a configure that ran here, from gh_configure()'s timings (the same arithmetic as
 * gpu-cli's --timings-fd line). */
static void log_inprocess_parts(struct gh_hooklog *log, const struct gh_configure_timings *t)
{
        const long v[8] = { t->discover_us - t->gpus_us,
                            t->gpus_us,
                            t->plan_us - t->open_us,
                            t->open_us,
                            t->enter_us,
                            t->mount_us - t->enter_us,
                            t->ldcache_us,
                            t->cgroup_us };
        log_phase_parts(log, v, t->total_us);
}

/* An exec'd gpu-cli configure's own phases (its --timings-fd line), and around them: exec (spawn to
 * gpu-cli's main: fork, exec, dynamic loading), setup (option parsing, the request), exit (gpu-cli's
 * exit and its reaping).  A line that is missing or malformed adds nothing. */
static void log_exec_parts(struct gh_hooklog *log, const struct gh_hook_timings *ht)
{
        static const char *const keys[] = { "started", "begin", "end",   "driver",  "gpus",  "plan",
                                            "open",    "enter", "apply", "ldcache", "cgroup" };
        long long v[sizeof(keys) / sizeof(keys[0])];
        const char *p = ht->line;
        unsigned seen = 0;
        long parts[8];

        while (*p != '\0' && *p != '\n') {
                size_t kl = strcspn(p, "=");
                char *end;
                long long x;
                if (p[kl] != '=')
                        return;
                x = strtoll(p + kl + 1, &end, 10);
                if (end == p + kl + 1)
                        return;
                for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
                        if (strlen(keys[i]) == kl && strncmp(p, keys[i], kl) == 0) {
                                v[i] = x;
                                seen |= 1u << i;
                        }
                p = end + strspn(end, " ");
        }
        if (seen != (1u << (sizeof(keys) / sizeof(keys[0]))) - 1)
                return;
        gh_hooklog_add(log, "configure.exec", (long) (v[0] - ht->spawned_us));
        gh_hooklog_add(log, "configure.setup", (long) (v[1] - v[0]));
        for (size_t i = 0; i < 8; i++)
                parts[i] = (long) v[i + 3];
        log_phase_parts(log, parts, (long) (v[2] - v[1]));
        gh_hooklog_add(log, "configure.exit", (long) (ht->reaped_us - v[2]));
}

/* `gpu-cli configure` run as a child ("cli.exec"): its status (> 0 when it failed, its last
 * stderr line then in the log), or -1 when it could not be run. */
static int configure_exec(const struct options *o, const struct gh_config *cfg, struct gh_request *req,
                          const struct gh_oci_state *state, const struct gh_oci_spec *spec, struct gh_hooklog *log,
                          gh_error_t *err)
{
        _cleanup_strv_ char **argv = NULL;
        _cleanup_free_ char *last = NULL;
        struct gh_hook_timings ht;
        int r;

        argv = gh_hook_configure_argv(cfg, req, state->pid, spec->rootfs, o->debug, cfg->log.file != NULL, err);
        if (argv == NULL)
                return -1;
        gh_debug("running %s configure for %s", argv[0], spec->rootfs);
        r = gh_hook_run(argv, cfg->log.file != NULL ? &ht : NULL, &last, err);
        gh_hooklog_phase(log, "configure");
        if (cfg->log.file != NULL)
                log_exec_parts(log, &ht);
        if (r > 0) {
                /* gpu-cli already told the user on stderr; the log keeps its last line. */
                log->exit_code = r;
                gh_hooklog_set_error(log, last ? last : "gpu-cli configure failed");
        }
        return r;
}

/* Everything up to the decision; fills what the log and the caller need. */
static int run(const struct options *o, struct gh_config *cfg, struct gh_hooklog *log, gh_error_t *err)
{
        struct gh_oci_state state = { 0 };
        struct gh_oci_spec spec = { 0 };
        struct gh_env_decision d = { 0 };
        _cleanup_request_ struct gh_request req = GH_REQUEST_INIT;
        int r = -1;

        if (gh_config_load(cfg, o->config ? o->config : GPUHOOK_DEFAULT_CONFIG, err) < 0) {
                gh_config_init(cfg, NULL); /* so the failure is still logged where configured by default */
                return -1;
        }
        gh_hooklog_phase(log, "config");
        if (gh_oci_state_read(STDIN_FILENO, &state, err) < 0)
                return -1;
        gh_log_set_trace_id(state.id);
        gh_hooklog_set_trace_id(log, state.id);
        log->container_pid = state.pid;
        gh_hooklog_phase(log, "state");
        if (gh_oci_spec_load(state.bundle, &spec, err) < 0)
                goto out;
        gh_hooklog_phase(log, "spec");
        if (gh_env_decide(&spec, cfg, &d, err) < 0)
                goto out;
        log->decision = gh_env_decision_json(&d, spec.rootfs, state.pid);
        gh_hooklog_phase(log, "decide");
        /* The request gpu-cli gets, built (and checked against its limits) in a dry run too. */
        if (d.gpu_container && gh_env_request(cfg, &d, &req, err) < 0)
                goto out;

        if (o->dry_run) {
                _cleanup_free_ char *s =
                        log->decision ? json_dumps(log->decision, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
                if (s == NULL) {
                        r = gh_err(err, ENOMEM, "printing the decision");
                        goto out;
                }
                printf("%s\n", s);
                r = 0;
                goto out;
        }
        if (!d.gpu_container) {
                log->result = "skipped";
                r = 0;
                goto out;
        }
        if (state.pid <= 0) {
                r = gh_err(err, 0,
                           "the OCI state has no container pid; gpu-hook must run as a createRuntime or prestart hook");
                goto out;
        }
        if (cfg->cli.exec) {
                r = configure_exec(o, cfg, &req, &state, &spec, log, err);
        } else {
                struct gh_configure_timings t;
                gh_debug("configuring %s (pid %d)", spec.rootfs, (int) state.pid);
                r = gh_hook_configure(cfg, &req, state.pid, spec.rootfs, o->debug != NULL, &t, err);
                gh_hooklog_phase(log, "configure");
                log_inprocess_parts(log, &t);
                if (r == 0)
                        gh_debug("configure done in %ld us (%zu items, %s)", t.total_us, t.items,
                                 gh_gpus_origin_name(t.gpus_origin));
        }
        if (r == 0) {
                log->result = "configured";
                record_container(cfg, &state, &spec);
                gh_hooklog_phase(log, "record");
        }
out:
        gh_env_decision_free(&d);
        gh_oci_spec_free(&spec);
        gh_oci_state_free(&state);
        return r;
}

int main(int argc, char **argv)
{
        struct options o = { 0 };
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_config cfg = { 0 };
        struct gh_hooklog log;
        int r, status;

        gh_log_set_program("gpu-hook");
        GH_STEP_PROGRAM("gpu-hook");
        GH_STEP("main");
        if (parse_args(argc, argv, &o) < 0)
                return GH_EXIT_USAGE;
        /* Nothing to do after the container started: be gone before reading anything. */
        if (o.stage != NULL && strcmp(o.stage, "poststart") == 0)
                return GH_EXIT_OK;
        if (o.stage != NULL && strcmp(o.stage, "poststop") == 0)
                return poststop(&o);
        if (o.debug != NULL && gh_log_open(o.debug, true) < 0) {
                fprintf(stderr, "gpu-hook: cannot open debug file %s: %m; pass a writable --debug path\n", o.debug);
                return GH_EXIT_USAGE;
        }

        gh_hooklog_start(&log, o.stage ? o.stage : "createRuntime");
        r = run(&o, &cfg, &log, &err);
        if (r < 0) {
                const char *msg = err && err->msg ? err->msg : "failed";
                /* One human line: the runtime shows it to whoever started the container. */
                fprintf(stderr, "gpu-hook: %s\n", msg);
                gh_hooklog_set_error(&log, msg);
                status = gh_error_exit_status(err);
                log.exit_code = status;
        } else {
                status = r;
        }
        GH_STEP("after");
        if (!o.dry_run)
                gh_hooklog_write(&log, cfg.log.file);
        GH_STEP("logwrite");
        gh_hooklog_free(&log);
        gh_config_free(&cfg);
        gh_log_close();
        return status;
}
