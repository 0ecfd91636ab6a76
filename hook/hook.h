/* gpu-hook front end: main.c reads the input and decides, configure.c configures the container in
 * this process, spawn.c runs `gpu-cli configure` instead when the configuration asks ("cli.exec"). */
#ifndef GH_HOOK_H
#define GH_HOOK_H

#include <stdbool.h>
#include <sys/types.h>

#include "configure.h"
#include "env.h"
#include "error.h"
#include "hookconfig.h"
#include "request.h"

/* The only environment anything the hook runs gets (docs/threat-model.md#rule-4). */
#define GH_HOOK_CHILD_PATH "PATH=/usr/sbin:/usr/bin:/sbin:/bin"

/* The fd gpu-cli configure writes its phase timings to (--timings-fd), when the hook logs. */
#define GH_HOOK_TIMINGS_FD 3

/* Configures the container (pid, rootfs) for req in this process (configure.c): req gets the
 * driver-state cache the configuration names and the driver service's helper
 * (gh_config_request_setup), the environment becomes GH_HOOK_CHILD_PATH alone, and "cli.debug" is
 * opened unless debug_open (--debug was).  Returns gh_configure()'s result. */
int gh_hook_configure(const struct gh_config *cfg, struct gh_request *req, pid_t pid, const char *rootfs,
                      bool debug_open, struct gh_configure_timings *t, gh_error_t *err);

/* Builds the `gpu-cli ... configure --pid=PID <request> ROOTFS` argv (NULL-terminated; free with
 * gh_strvfreep).  debug overrides cfg->cli.debug when not NULL; timings adds
 * --timings-fd=GH_HOOK_TIMINGS_FD. */
char **gh_hook_configure_argv(const struct gh_config *cfg, const struct gh_request *req, pid_t pid, const char *rootfs,
                              const char *debug, bool timings, gh_error_t *err);

/* What gh_hook_run saw of the child's time: CLOCK_MONOTONIC microseconds just before spawning it and
 * once it was reaped, and the line it wrote to GH_HOOK_TIMINGS_FD (empty if none). */
struct gh_hook_timings {
        long long spawned_us, reaped_us;
        char line[512];
};

/* Runs argv[0] with GH_HOOK_CHILD_PATH as its whole environment, stdin from /dev/null, no fd but
 * 0-2 (and GH_HOOK_TIMINGS_FD, a pipe, when timings is not NULL), default signal handling; its
 * stderr is copied to ours as it comes.  Returns its exit status (128+N when killed by signal N)
 * and, when it failed, its last stderr line in *last_line. */
int gh_hook_run(char **argv, struct gh_hook_timings *timings, char **last_line, gh_error_t *err);

#endif
