#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capability.h"
#include "cleanup.h"
#include "config.h" /* the build's: GPUHOOK_CLI_PATH, GPUHOOK_HOOK_PATH */
#include "file.h"
#include "hookconfig.h"
#include "mps.h"
#include "podrecord.h"
#include "oci.h"
#include "readfile.h"
#include "service.h"
#include "statecache.h"

enum key_type {
        KEY_BOOL,
        KEY_STRING,
        KEY_PATH,
        KEY_OPT_STRING,
        KEY_OPT_PATH,
        KEY_LDCONFIG,
        KEY_NAMES,    /* environment variable names */
        KEY_PROGRAMS, /* program names (looked up on PATH) or absolute paths, at least one */
        KEY_CAPS,
        KEY_METRIC_NAMES, /* "both", "dcgm" or "gpuhook" */
};

struct key {
        const char *name;
        enum key_type type;
        size_t offset;
        size_t count_offset; /* KEY_NAMES: where the number of names goes */
};

#define K(name, type, field)                                                                                           \
        {                                                                                                              \
                name, type, offsetof(struct gh_config, field), 0                                                       \
        }
#define KN(name, type, field, count)                                                                                   \
        {                                                                                                              \
                name, type, offsetof(struct gh_config, field), offsetof(struct gh_config, count)                       \
        }

static const struct key top_keys[] = {
        K("accept-visible-devices-envvar-when-unprivileged", KEY_BOOL, accept_envvar_unprivileged),
        K("accept-visible-devices-as-volume-mounts", KEY_BOOL, accept_volume_mounts),
        K("disable-require", KEY_BOOL, disable_require),
        KN("swarm-resource", KEY_NAMES, swarm_resource, n_swarm_resource),
        K("supported-driver-capabilities", KEY_CAPS, supported_caps),
        K("accept-mps-group-envvar", KEY_BOOL, accept_mps_envvar),
        K("cuda-compat", KEY_BOOL, cuda_compat),
};

static const struct key mps_keys[] = {
        K("dir", KEY_PATH, mps.dir),
};

static const struct key cli_keys[] = {
        K("root", KEY_PATH, cli.root),
        K("path", KEY_PATH, cli.path),
        K("ldcache", KEY_OPT_PATH, cli.ldcache),
        K("ldconfig", KEY_LDCONFIG, cli.ldconfig),
        K("no-cgroups", KEY_BOOL, cli.no_cgroups),
        K("user", KEY_OPT_STRING, cli.user),
        K("load-kmods", KEY_BOOL, cli.load_kmods),
        K("debug", KEY_OPT_PATH, cli.debug),
        K("state-file", KEY_OPT_PATH, cli.state_file),
        K("no-cache", KEY_BOOL, cli.no_cache),
        K("exec", KEY_BOOL, cli.exec),
};

static const struct key containers_keys[] = {
        K("dir", KEY_OPT_PATH, containers.dir),
};

static const struct key metrics_keys[] = {
        K("names", KEY_METRIC_NAMES, metrics.names),
        K("hpc-job-mapping-dir", KEY_OPT_PATH, metrics.hpc_job_dir),
};

static const struct key log_keys[] = {
        K("file", KEY_OPT_PATH, log.file),
};

static const struct key runtime_keys[] = {
        KN("runtimes", KEY_PROGRAMS, runtime.runtimes, runtime.n_runtimes),
        K("hook-path", KEY_PATH, runtime.hook_path),
};

int gh_config_init(struct gh_config *cfg, gh_error_t *err)
{
        memset(cfg, 0, sizeof(*cfg));
        cfg->accept_envvar_unprivileged = true;
        cfg->supported_caps = GH_CAP_ALL;
        cfg->cuda_compat = true;
        cfg->swarm_resource = calloc(1, sizeof(char *));
        cfg->cli.root = strdup("/");
        cfg->cli.path = strdup(GPUHOOK_CLI_PATH);
        cfg->log.file = strdup(GH_DEFAULT_LOG_FILE);
        cfg->mps.dir = strdup(GH_MPS_DEFAULT_DIR);
        cfg->containers.dir = strdup(GH_RECORD_DEFAULT_DIR);
        cfg->metrics.names = GH_METRICS_BOTH;
        cfg->runtime.runtimes = calloc(2, sizeof(char *));
        if (cfg->runtime.runtimes != NULL && (cfg->runtime.runtimes[0] = strdup("runc")) != NULL)
                cfg->runtime.n_runtimes = 1;
        cfg->runtime.hook_path = strdup(GPUHOOK_HOOK_PATH);
        if (!cfg->swarm_resource || !cfg->cli.root || !cfg->cli.path || !cfg->log.file || !cfg->mps.dir ||
            !cfg->containers.dir || cfg->runtime.n_runtimes != 1 || !cfg->runtime.hook_path) {
                gh_config_free(cfg);
                return gh_err(err, ENOMEM, "initialising the configuration");
        }
        return 0;
}

static int set_names(char ***field, size_t *count, json_t *v, const char *key, bool programs, gh_error_t *err)
{
        _cleanup_strv_ char **names = NULL;
        json_t *item;
        size_t i;

        if (!json_is_array(v) || (programs && json_array_size(v) == 0))
                return gh_err(err, 0, "\"%s\" must be an array of %s", key,
                              programs ? "at least one program name or absolute path" : "environment variable names");
        names = calloc(json_array_size(v) + 1, sizeof(char *));
        if (names == NULL)
                return gh_err(err, ENOMEM, "\"%s\"", key);
        json_array_foreach (v, i, item) {
                const char *s = json_string_value(item);
                if (s == NULL || s[0] == '\0' || strlen(s) != json_string_length(item) ||
                    (!programs && strchr(s, '=') != NULL))
                        return gh_err(err, 0, "\"%s\" entry %zu must be a non-empty %s", key, i,
                                      programs ? "string" : "variable name without '='");
                if (programs && s[0] != '/' && strchr(s, '/') != NULL)
                        return gh_err(err, 0, "\"%s\" entry '%.64s' must be a plain name or an absolute path", key, s);
                names[i] = strdup(s);
                if (names[i] == NULL)
                        return gh_err(err, ENOMEM, "\"%s\"", key);
        }
        gh_strvfreep(field);
        *field = steal_pointer(&names);
        *count = i;
        return 0;
}

static int set_key(struct gh_config *cfg, const struct key *k, const char *key, json_t *v, gh_error_t *err)
{
        void *field = (char *) cfg + k->offset;
        const char *s;

        switch (k->type) {
        case KEY_BOOL:
                if (!json_is_boolean(v))
                        return gh_err(err, 0, "\"%s\" must be true or false", key);
                *(bool *) field = json_is_true(v);
                return 0;
        case KEY_NAMES:
        case KEY_PROGRAMS:
                return set_names(field, (size_t *) ((char *) cfg + k->count_offset), v, key, k->type == KEY_PROGRAMS,
                                 err);
        case KEY_CAPS: {
                unsigned mask;
                if (!json_is_string(v))
                        return gh_err(err, 0, "\"%s\" must be a comma-separated string of capabilities", key);
                if (gh_capability_parse(json_string_value(v), GH_CAP_ALL, &mask, err) < 0)
                        return gh_err_wrap(err, "\"%s\"", key);
                *(unsigned *) field = mask;
                return 0;
        }
        case KEY_METRIC_NAMES: {
                int names = gh_metrics_names_parse(json_string_value(v));
                if (names < 0)
                        return gh_err(err, 0, "\"%s\" must be \"both\", \"dcgm\" or \"gpuhook\"", key);
                *(int *) field = names;
                return 0;
        }
        case KEY_STRING:
        case KEY_PATH:
        case KEY_OPT_STRING:
        case KEY_OPT_PATH:
        case KEY_LDCONFIG: break;
        default: return gh_err(err, 0, "\"%s\": internal error: unknown key type", key);
        }

        if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
                return gh_err(err, 0, "\"%s\" must be a string", key);
        s = json_string_value(v);
        bool optional = k->type == KEY_OPT_STRING || k->type == KEY_OPT_PATH || k->type == KEY_LDCONFIG;
        if (s[0] == '\0' && !optional)
                return gh_err(err, 0, "\"%s\" must not be empty", key);
        if (s[0] != '\0') {
                const char *p = k->type == KEY_LDCONFIG && s[0] == '@' ? s + 1 : s;
                if ((k->type == KEY_PATH || k->type == KEY_OPT_PATH || k->type == KEY_LDCONFIG) && p[0] != '/')
                        return gh_err(err, 0, "\"%s\" must be an absolute path%s, not '%s'", key,
                                      k->type == KEY_LDCONFIG ? " (prefix it with @ for a host binary)" : "", s);
        }
        char **str = field;
        free(*str);
        *str = s[0] != '\0' ? strdup(s) : NULL;
        if (s[0] != '\0' && *str == NULL)
                return gh_err(err, ENOMEM, "\"%s\"", key);
        return 0;
}

/* The objects of the top level and their keys. */
static const struct section {
        const char *name;
        const struct key *keys;
        size_t n;
} sections[] = {
        { "cli", cli_keys, GH_ARRAY_SIZE(cli_keys) },
        { "runtime", runtime_keys, GH_ARRAY_SIZE(runtime_keys) },
        { "mps", mps_keys, GH_ARRAY_SIZE(mps_keys) },
        { "log", log_keys, GH_ARRAY_SIZE(log_keys) },
        { "containers", containers_keys, GH_ARRAY_SIZE(containers_keys) },
        { "metrics", metrics_keys, GH_ARRAY_SIZE(metrics_keys) },
};

int gh_metrics_names_parse(const char *s)
{
        return s == NULL                   ? -1
               : strcmp(s, "both") == 0    ? GH_METRICS_BOTH
               : strcmp(s, "dcgm") == 0    ? GH_METRICS_DCGM
               : strcmp(s, "gpuhook") == 0 ? GH_METRICS_GPUHOOK
                                           : -1;
}

static int apply_object(struct gh_config *cfg, json_t *obj, const struct key *keys, size_t n, const char *prefix,
                        gh_error_t *err)
{
        const char *name;
        json_t *v;

        json_object_foreach (obj, name, v) {
                char full[256];
                const struct key *k = NULL;

                snprintf(full, sizeof(full), "%s%s", prefix, name);
                for (size_t i = 0; i < n; i++)
                        if (strcmp(keys[i].name, name) == 0)
                                k = &keys[i];
                if (k == NULL && prefix[0] == '\0') {
                        const struct section *sec = NULL;
                        for (size_t i = 0; i < GH_ARRAY_SIZE(sections); i++)
                                if (strcmp(sections[i].name, name) == 0)
                                        sec = &sections[i];
                        if (sec != NULL) {
                                char sub[64];
                                if (!json_is_object(v))
                                        return gh_err(err, 0, "\"%s\" must be an object", name);
                                snprintf(sub, sizeof(sub), "%s.", name);
                                if (apply_object(cfg, v, sec->keys, sec->n, sub, err) < 0)
                                        return -1;
                                continue;
                        }
                }
                if (k == NULL)
                        return gh_err(err, 0, "unknown key \"%.64s%.64s\"", prefix, name);
                if (set_key(cfg, k, full, v, err) < 0)
                        return -1;
        }
        return 0;
}

int gh_config_parse(struct gh_config *cfg, const char *buf, size_t len, const char *what, gh_error_t *err)
{
        _cleanup_json_ json_t *j = gh_json_parse(buf, len, what, err);

        if (j == NULL)
                return -1;
        if (apply_object(cfg, j, top_keys, GH_ARRAY_SIZE(top_keys), "", err) < 0)
                return gh_err_wrap(err, "%s", what);
        return 0;
}

int gh_config_load(struct gh_config *cfg, const char *path, gh_error_t *err)
{
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        _cleanup_free_ char *what = NULL;
        size_t len;

        if (gh_config_init(cfg, err) < 0)
                return -1;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                if (errno == ENOENT)
                        return 0;
                gh_err(err, errno, "opening the configuration %s", path);
                goto fail;
        }
        if (asprintf(&what, "configuration %s", path) < 0) {
                gh_err(err, ENOMEM, "reading %s", path);
                goto fail;
        }
        if (gh_read_bounded(fd, GH_CONFIG_MAX, &buf, &len, what, err) < 0 ||
            gh_config_parse(cfg, buf, len, what, err) < 0)
                goto fail;
        return 0;
fail:
        gh_config_free(cfg);
        return -1;
}

void gh_config_free(struct gh_config *cfg)
{
        gh_strvfreep(&cfg->swarm_resource);
        free(cfg->cli.root);
        free(cfg->cli.path);
        free(cfg->cli.ldcache);
        free(cfg->cli.ldconfig);
        free(cfg->cli.user);
        free(cfg->cli.debug);
        free(cfg->cli.state_file);
        free(cfg->log.file);
        gh_strvfreep(&cfg->runtime.runtimes);
        free(cfg->runtime.hook_path);
        free(cfg->mps.dir);
        free(cfg->containers.dir);
        free(cfg->metrics.hpc_job_dir);
        memset(cfg, 0, sizeof(*cfg));
}

const char *gh_config_cli_path(const struct gh_config *cfg, char *buf, size_t size)
{
        if (strcmp(cfg->cli.path, GPUHOOK_CLI_PATH) != 0 || access(cfg->cli.path, X_OK) == 0 ||
            gh_beside_self("gpu-cli", buf, size) < 0)
                return cfg->cli.path;
        return buf;
}

void gh_config_request_setup(const struct gh_config *cfg, struct gh_request *req)
{
        static char helper[PATH_MAX];

        /* gpu-cli's rule: the default cache belongs to the host's driver; another driver root has one
         * only when "state-file" names it; "no-cache" has none. */
        if (cfg->cli.no_cache)
                req->state_file = NULL;
        else if (cfg->cli.state_file != NULL)
                req->state_file = cfg->cli.state_file;
        else if (strcmp(cfg->cli.root, "/") == 0)
                req->state_file = GH_STATECACHE_DEFAULT;
        req->cache = req->state_file != NULL ? &gh_statecache : NULL;
        if (!gh_service_can_load()) {
                const char *cli = gh_config_cli_path(cfg, helper, sizeof(helper));
                if (cli != helper)
                        snprintf(helper, sizeof(helper), "%s", cli);
                gh_service_set_helper(helper);
        }
}
