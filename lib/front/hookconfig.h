/* gpu-hook's configuration file, /etc/gpu-hook/config.json by default (this module is "hookconfig" so
 * that it cannot shadow the build's generated config.h).
 *
 * Its path comes from the command line or the compiled default, never from the environment.  A
 * missing file means defaults; an unknown key, a value of the wrong type or an unknown capability
 * is an error naming the key, so a typo never silently turns a setting off. */
#ifndef GH_HOOKCONFIG_H
#define GH_HOOKCONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "request.h"

#define GH_CONFIG_MAX (1u << 20)

struct gh_config {
        bool accept_envvar_unprivileged; /* accept-visible-devices-envvar-when-unprivileged: true */
        bool accept_volume_mounts;       /* accept-visible-devices-as-volume-mounts: false */
        bool disable_require;            /* disable-require: false */
        char **swarm_resource;           /* swarm-resource: variable names, NULL-terminated */
        size_t n_swarm_resource;
        unsigned supported_caps; /* supported-driver-capabilities: GH_CAP_ALL */
        bool accept_mps_envvar;  /* accept-mps-group-envvar: false */
        bool cuda_compat;        /* cuda-compat: true (docs/cuda-compat.md) */
        struct {
                char *dir; /* "/run/gpu-hook/mps" (GH_MPS_DEFAULT_DIR) */
        } mps;
        struct {
                char *dir; /* "/run/gpu-hook/containers" (GH_RECORD_DEFAULT_DIR); NULL: no records */
        } containers;
        struct {
                int names;         /* "names": GH_METRICS_BOTH */
                char *hpc_job_dir; /* "hpc-job-mapping-dir": NULL, none written */
        } metrics;
        struct {
                char *root;     /* "/" */
                char *path;     /* GPUHOOK_CLI_PATH: the program "exec" runs */
                char *ldcache;  /* NULL: gpu-cli's default */
                char *ldconfig; /* NULL: gpu-cli writes the cache itself */
                bool no_cgroups;
                char *user; /* NULL: gpu-cli's default */
                bool load_kmods;
                char *debug;      /* NULL: no debug file */
                char *state_file; /* NULL: gpu-cli's default driver-state cache */
                bool no_cache;    /* gpu-cli --no-cache */
                bool exec;        /* "exec": false, configure in gpu-hook's process; true: run `path configure` */
        } cli;
        struct {
                char *file; /* "/var/log/gpu-hook.log"; NULL: no log line */
        } log;
        /* gpu-runtime only (docs/engines.md): the OCI runtime it execs and the hook it adds. */
        struct {
                char **runtimes; /* "runtimes": names (searched on PATH) or absolute paths; ["runc"] */
                size_t n_runtimes;
                char *hook_path; /* "hook-path": GPUHOOK_HOOK_PATH */
        } runtime;
};

/* Which series gpu-cli metrics writes (docs/metrics.md). */
enum { GH_METRICS_BOTH = 0, GH_METRICS_DCGM = 1, GH_METRICS_GPUHOOK = 2 };
/* "both", "dcgm", "gpuhook": the GH_METRICS_* value, -1 otherwise. */
int gh_metrics_names_parse(const char *s);

#define GH_DEFAULT_LOG_FILE "/var/log/gpu-hook.log"

/* Fills the defaults. */
int gh_config_init(struct gh_config *cfg, gh_error_t *err);

/* Parses a config document over the defaults already in cfg; `what` names it in messages. */
int gh_config_parse(struct gh_config *cfg, const char *buf, size_t len, const char *what, gh_error_t *err);

/* gh_config_init + the file at path (ENOENT: defaults). */
int gh_config_load(struct gh_config *cfg, const char *path, gh_error_t *err);

void gh_config_free(struct gh_config *cfg);

/* "cli.path", except when that is the built-in default and not there: then the gpu-cli beside this
 * program (a build tree, or a kit copied to a machine as one folder).  buf may hold the answer. */
const char *gh_config_cli_path(const struct gh_config *cfg, char *buf, size_t size);

/* What a front end does to a request it built from this configuration before the core plans it:
 * req gets the driver-state cache the configuration names (gpu-cli's rule: the default one for the
 * host's driver, "state-file" for another root, none with "no-cache"), and a static program (one
 * that cannot load NVML or libcuda itself, service.h) gets "cli.path"'s gpu-cli as the driver
 * service's helper. */
void gh_config_request_setup(const struct gh_config *cfg, struct gh_request *req);

#endif
