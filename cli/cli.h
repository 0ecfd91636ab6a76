/* gpu-cli front end: global options and the subcommand entry points (one file each). */
#ifndef GH_CLI_H
#define GH_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"

/* Global options, parsed by main.c before the subcommand. */
struct cli_globals {
        const char *root;    /* --root: driver root, default "/" */
        const char *ldcache; /* --ldcache: default "/etc/ld.so.cache" under root */
        const char *user;    /* --user=UID[:GID]: identity of the driver service, default overflow uid */
        uid_t uid;           /* --user, parsed once by main.c; (uid_t) -1 when not given */
        gid_t gid;
        const char *debug;      /* --debug=FILE */
        bool load_kmods;        /* --load-kmods */
        bool no_pivot;          /* --no-pivot (accepted for compatibility) */
        bool json_log;          /* --log-format=json */
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

/* A request seeded from the global options (--user); gh_request_init()ed by the caller. */
struct gh_request;
int cli_request_init(struct gh_request *req, const struct cli_globals *g, gh_error_t *err);

/* The plan as JSON (plan-json.c, schema in docs/plan.md).  sections: bits 1 << GH_ROLE_*; with
 * CLI_PLAN_ALL the document also has "layout", "proc", "cgroup" and "ldcache". */
struct gh_plan;
typedef struct json_t json_t;
#define CLI_PLAN_ALL 0x7fu
json_t *cli_plan_json(const struct gh_plan *plan, const char *root, unsigned sections);
/* Prints the document (indented) on stdout and frees it; -1 when it could not be written. */
int cli_print_json(json_t *doc);

/* CDI specs (cdi.c).  cli_cdi_read: a JSON file with "kind" and "devices"; cli_cdi_write: the spec
 * written atomically, mode 0644, its directory made if missing (*st, may be NULL: the file written).
 * An MPS group's spec goes by default to CLI_CDI_MPS_SPEC_FMT (vendor, class, group): groups do not
 * outlive a reboot, neither does /var/run. */
struct stat;
#define CLI_CDI_MPS_SPEC_FMT "/var/run/cdi/%s-%s-mps-%s.json"
int cli_cdi_read(const char *path, json_t **out, gh_error_t *err);
int cli_cdi_write(json_t *spec, const char *path, struct stat *st, gh_error_t *err);
/* The running program's path (/proc/self/exe); -1 with errno. */
int cli_self_path(char *buf, size_t size);

#endif
