/* gpu-cli front end: global options and the subcommand entry points (one file each). */
#ifndef GH_CLI_H
#define GH_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"

/* Global options, parsed by main.c before the subcommand. */
struct cli_globals {
        const char *root;       /* --root: driver root, default "/" */
        const char *ldcache;    /* --ldcache: default "/etc/ld.so.cache" under root */
        uid_t uid;              /* --user=UID[:GID], parsed once by main.c: the driver service's */
        gid_t gid;              /* identity; (uid_t) -1 when not given (the overflow uid) */
        const char *state_file; /* --state-file (driver-state cache); NULL with --no-cache or another --root */
        long long started_us;   /* CLOCK_MONOTONIC when main() began: what exec and loading took is seen from outside */
};

/* Each subcommand gets argv with argv[0] = its name, and returns the process exit status.
 * One file each (cli/NAME.c), listed in cli/meson.build and in main.c's table. */
int cmd_info(int argc, char **argv, const struct cli_globals *g);
int cmd_list(int argc, char **argv, const struct cli_globals *g);
int cmd_configure(int argc, char **argv, const struct cli_globals *g);
int cmd_doctor(int argc, char **argv, const struct cli_globals *g);
int cmd_ps(int argc, char **argv, const struct cli_globals *g);
int cmd_top(int argc, char **argv, const struct cli_globals *g);
int cmd_metrics(int argc, char **argv, const struct cli_globals *g);
int cmd_mps(int argc, char **argv, const struct cli_globals *g);
int cmd_setup(int argc, char **argv, const struct cli_globals *g);
int cmd_cache(int argc, char **argv, const struct cli_globals *g);
int cmd_cdi(int argc, char **argv, const struct cli_globals *g);
int cmd_cdi_hook(int argc, char **argv, const struct cli_globals *g);
int cmd_nvhook(int argc, char **argv, const struct cli_globals *g);
/* Not in --help: the driver service child's part for a static gpu-hook (driver-service.c). */
int cmd_driver_service(int argc, char **argv, const struct cli_globals *g);

/* NVIDIA's hook command line (nvhook.c): argv as nvidia-cdi-hook or nvidia-ctk got it (argv[0]'s
 * name picks the form); root: the driver root where /proc/driver/nvidia is read. */
int cli_nvhook(int argc, char **argv, const char *root);
struct stat;
/* A fixed environment, working directory and umask, for the hook front ends. */
void cli_hook_environment(void);
/* The identity of the directory this process was started in, as cli_hook_environment found it
 * before changing to /; NULL before that, or when it could not be read. */
const struct stat *cli_hook_start_dir(void);

/* A request seeded from the global options (--user); gh_request_init()ed by the caller. */
struct gh_request;
int cli_request_init(struct gh_request *req, const struct cli_globals *g, gh_error_t *err);

/* The plan as JSON (plan-json.c, schema in docs/plan.md).  sections: bits 1 << GH_ROLE_*; with
 * CLI_PLAN_ALL the document also has "layout", "proc", "cgroup" and "ldcache". */
struct gh_plan;
typedef struct json_t json_t;
#define CLI_PLAN_ALL 0x7fu
json_t *cli_plan_json(const struct gh_plan *plan, const char *root, unsigned sections);

/* The running program's path (/proc/self/exe); -1 with errno (elsewhere.c). */
int cli_self_path(char *buf, size_t size);

/* Handing a check on to gpu-cli from a program that loads no driver library (elsewhere.c):
 * cli_state_keep copies what is left to read on *fd (the OCI state on stdin) into a memfd and makes
 * *fd that memfd (-1 with errno); cli_gpu_cli_path: gpu-cli beside this program, else where it is
 * installed; cli_exec_gpu_cli makes state (when >= 0) stdin from its start and execs cli (returns
 * -1 with errno only when that fails). */
int cli_state_keep(int *fd);
void cli_gpu_cli_path(char *buf, size_t size);
int cli_exec_gpu_cli(const char *cli, char *const *argv, int state);
/* The hook a CDI spec written here runs: gpu-cdi-hook beside this program, else where it is
 * installed, else this program (gpu-cli cdi-hook) itself; buf holds the answer. */
int cli_cdi_hook_path(char *buf, size_t size);

#endif
