/* gpu-cli front end: global options and the subcommand entry points (one file each). */
#ifndef GH_CLI_H
#define GH_CLI_H

#include <stdbool.h>
#include <sys/types.h>

/* Global options, parsed by main.c before the subcommand. */
struct cli_globals {
        const char *root;    /* --root: driver root, default "/" */
        const char *ldcache; /* --ldcache: default "/etc/ld.so.cache" under root */
        const char *user;    /* --user=UID[:GID]: identity of the driver service, default overflow uid */
        const char *debug;   /* --debug=FILE */
        bool load_kmods;     /* --load-kmods */
        bool no_pivot;       /* --no-pivot (accepted for compatibility) */
        bool json_log;       /* --log-format=json */
};

/* Each subcommand gets argv with argv[0] = its name, and returns the process exit status.
 * They are weak so the front end links while a subcommand has not landed yet. */
int cmd_info(int argc, char **argv, const struct cli_globals *g) __attribute__((weak));
int cmd_list(int argc, char **argv, const struct cli_globals *g) __attribute__((weak));
int cmd_configure(int argc, char **argv, const struct cli_globals *g) __attribute__((weak));
int cmd_cdi(int argc, char **argv, const struct cli_globals *g) __attribute__((weak));
int cmd_cdi_hook(int argc, char **argv, const struct cli_globals *g) __attribute__((weak));
int cmd_doctor(int argc, char **argv, const struct cli_globals *g) __attribute__((weak));
int cmd_mps(int argc, char **argv, const struct cli_globals *g);

/* Exit codes, documented in --help. */
enum {
        CLI_EXIT_OK = 0,
        CLI_EXIT_FAILURE = 1,      /* the operation failed; the message says why */
        CLI_EXIT_USAGE = 2,        /* bad command line */
        CLI_EXIT_NO_DRIVER = 3,    /* no NVIDIA driver found under --root */
        CLI_EXIT_REQUIREMENT = 4,  /* a --require expression is not met */
};

#endif
