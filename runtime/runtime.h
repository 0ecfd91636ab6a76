/* gpu-runtime: an OCI runtime wrapper (docs/engines.md).
 *
 * Engines call it exactly as they call runc.  For `create` and `run` it reads the bundle's
 * config.json, decides with the hook's own code (env.c) whether the container asks for a GPU, and
 * if so adds the gpu-hook createRuntime hook and declares the selected device nodes; then, for
 * every command, it execs the real runtime with the original arguments. */
#ifndef GH_RUNTIME_H
#define GH_RUNTIME_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "env.h"
#include "error.h"
#include "hookconfig.h"

/* What gpu-runtime needs from the command line; everything else is passed on untouched. */
struct gh_rt_args {
        int command;        /* index in argv of the command ("create"), 0 when there is none */
        const char *bundle; /* --bundle/-b of create/run; NULL: the current directory */
        const char *log;    /* global --log */
        bool log_json;      /* global --log-format json */
};

/* Scans runc-style arguments: global options, the command, and for create/run its options. */
void gh_rt_args_scan(int argc, char **argv, struct gh_rt_args *a);
bool gh_rt_is_create(const struct gh_rt_args *a, char **argv);

/* A device node the container gets: path (the same inside the container) and its number. */
struct gh_rt_device {
        char *path;
        dev_t rdev;
};

struct gh_rt_devices {
        struct gh_rt_device *v;
        size_t n;
};

/* The device nodes of the plan (lib/core/plan.h) for the decision's request, under cfg->cli.root. */
int gh_rt_devices_for(const struct gh_config *cfg, const struct gh_env_decision *d, struct gh_rt_devices *out,
                      gh_error_t *err);
void gh_rt_devices_free(struct gh_rt_devices *devs);

/* Edits the spec in place: the hook (unless a GPU hook is already there) and the device nodes. */
int gh_rt_spec_add_gpu(json_t *spec, const struct gh_config *cfg, const char *config_path,
                       const struct gh_rt_devices *devs, gh_error_t *err);

/* create/run: reads <bundle>/config.json, and when the container asks for a GPU rewrites it
 * atomically with the additions (same mode and owner, every other field kept). */
int gh_rt_prepare_bundle(const char *bundle, const struct gh_config *cfg, const char *config_path, gh_error_t *err);

/* Finds the real runtime (cfg->runtime.runtimes: the first that exists and is not gpu-runtime
 * itself) and execs it with argv[1..].  Returns only on failure. */
int gh_rt_exec(const struct gh_config *cfg, int argc, char **argv, gh_error_t *err);

/* Reports a failure the way runc does: one line on stderr and, with --log, a log entry (JSON with
 * --log-format json) that engines read back to show the user. */
void gh_rt_report(const struct gh_rt_args *a, const char *msg);

#endif
