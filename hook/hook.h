/* gpu-hook front end: main.c reads the input and decides, spawn.c runs gpu-cli configure. */
#ifndef GH_HOOK_H
#define GH_HOOK_H

#include <sys/types.h>

#include "env.h"
#include "error.h"
#include "hookconfig.h"
#include "request.h"

/* The only environment anything the hook runs gets (docs/threat-model.md#rule-4). */
#define GH_HOOK_CHILD_PATH "PATH=/usr/sbin:/usr/bin:/sbin:/bin"

/* Builds the `gpu-cli ... configure --pid=PID <request> ROOTFS` argv (NULL-terminated; free with
 * gh_strvfreep).  debug overrides cfg->cli.debug when not NULL. */
char **gh_hook_configure_argv(const struct gh_config *cfg, const struct gh_request *req, pid_t pid, const char *rootfs,
                              const char *debug, gh_error_t *err);

/* Runs argv[0] with GH_HOOK_CHILD_PATH as its whole environment, stdin from /dev/null, no fd but
 * 0-2, default signal handling; its stderr is copied to ours as it comes.  Returns its exit status
 * (128+N when killed by signal N) and, when it failed, its last stderr line in *last_line. */
int gh_hook_run(char **argv, char **last_line, gh_error_t *err);

#endif
