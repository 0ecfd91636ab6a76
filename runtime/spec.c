/* The two additions gpu-runtime makes to a GPU container's config.json:
 *
 *   hooks.createRuntime += {"path": <hook-path>, "args": ["gpu-hook", "--config=FILE", "createRuntime"],
 *                           "env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"]}
 *   linux.devices += {"path", "type": "c", "major", "minor", "fileMode": 438, "uid": 0, "gid": 0}
 *   linux.resources.devices += {"allow": true, "type": "c", "major", "minor", "access": "rwm"}
 *
 * Declaring the nodes lets the runtime create them and allow them in the device cgroup itself (and
 * systemd, when it manages the cgroup, keeps them allowed across daemon-reload).  Everything else
 * in the document is left as it is. */
#include <errno.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "cleanup.h"
#include "runtime.h"
#include "strutil.h"

/* The hook's fixed environment: it ignores its own, and anything it runs gets only this. */
#define HOOK_ENV "PATH=/usr/sbin:/usr/bin:/sbin:/bin"

/* obj[key] as a container of the given type, created when absent; NULL when it has another type. */
static json_t *member(json_t *obj, const char *key, bool array)
{
        json_t *v = json_object_get(obj, key);

        if (v == NULL || json_is_null(v)) {
                v = array ? json_array() : json_object();
                if (v == NULL || json_object_set_new(obj, key, v) < 0)
                        return NULL;
        }
        return (array ? json_is_array(v) : json_is_object(v)) ? v : NULL;
}

/* A GPU hook already in the spec (gpu-hook by path, or NVIDIA's, e.g. from `docker run --gpus`):
 * a second one would inject the driver twice. */
static bool has_gpu_hook(json_t *hooks, const char *hook_path)
{
        static const char *const stages[] = { "prestart", "createRuntime" };

        for (size_t s = 0; s < GH_ARRAY_SIZE(stages); s++) {
                json_t *list = json_object_get(hooks, stages[s]), *h;
                size_t i;

                if (!json_is_array(list))
                        continue;
                json_array_foreach (list, i, h) {
                        const char *p = json_string_value(json_object_get(h, "path"));
                        if (p == NULL)
                                continue;
                        if (strcmp(p, hook_path) == 0 || strcmp(gh_base_name(p), "gpu-hook") == 0 ||
                            strcmp(gh_base_name(p), "nvidia-container-runtime-hook") == 0)
                                return true;
                }
        }
        return false;
}

static int add_hook(json_t *spec, const struct gh_config *cfg, const char *config_path, gh_error_t *err)
{
        json_t *hooks = member(spec, "hooks", false), *list;
        _cleanup_free_ char *config_arg = NULL;

        if (hooks == NULL)
                return gh_err(err, 0, "config.json: \"hooks\" must be an object");
        if (has_gpu_hook(hooks, cfg->runtime.hook_path))
                return 0;
        list = member(hooks, "createRuntime", true);
        if (list == NULL)
                return gh_err(err, 0, "config.json: \"hooks.createRuntime\" must be an array");
        if (asprintf(&config_arg, "--config=%s", config_path) < 0)
                return gh_err(err, ENOMEM, "adding the hook");
        json_t *hook = json_pack("{s:s, s:[s,s,s], s:[s]}", "path", cfg->runtime.hook_path, "args", "gpu-hook",
                                 config_arg, "createRuntime", "env", HOOK_ENV);
        if (hook == NULL || json_array_append_new(list, hook) < 0)
                return gh_err(err, ENOMEM, "adding the hook");
        return 0;
}

/* True when list already has an entry for this path (devices) or this exact allow rule. */
static bool has_device(json_t *list, const char *path)
{
        json_t *v;
        size_t i;

        json_array_foreach (list, i, v) {
                const char *p = json_string_value(json_object_get(v, "path"));
                if (p != NULL && strcmp(p, path) == 0)
                        return true;
        }
        return false;
}

static bool has_rule(json_t *list, dev_t rdev)
{
        json_t *v;
        size_t i;

        json_array_foreach (list, i, v) {
                const char *type = json_string_value(json_object_get(v, "type"));
                const char *access = json_string_value(json_object_get(v, "access"));
                if (json_is_true(json_object_get(v, "allow")) && type && strcmp(type, "c") == 0 &&
                    json_integer_value(json_object_get(v, "major")) == major(rdev) &&
                    json_integer_value(json_object_get(v, "minor")) == minor(rdev) && access &&
                    strcmp(access, "rwm") == 0)
                        return true;
        }
        return false;
}

static int add_devices(json_t *spec, const struct gh_rt_devices *devs, gh_error_t *err)
{
        json_t *linux_, *nodes, *resources, *rules;

        if (devs->n == 0)
                return 0;
        if ((linux_ = member(spec, "linux", false)) == NULL)
                return gh_err(err, 0, "config.json: \"linux\" must be an object");
        if ((nodes = member(linux_, "devices", true)) == NULL)
                return gh_err(err, 0, "config.json: \"linux.devices\" must be an array");
        if ((resources = member(linux_, "resources", false)) == NULL)
                return gh_err(err, 0, "config.json: \"linux.resources\" must be an object");
        if ((rules = member(resources, "devices", true)) == NULL)
                return gh_err(err, 0, "config.json: \"linux.resources.devices\" must be an array");
        for (size_t i = 0; i < devs->n; i++) {
                const struct gh_rt_device *d = &devs->v[i];
                json_int_t maj = major(d->rdev), min = minor(d->rdev);

                if (!has_device(nodes, d->path) &&
                    json_array_append_new(nodes, json_pack("{s:s, s:s, s:I, s:I, s:i, s:i, s:i}", "path", d->path,
                                                           "type", "c", "major", maj, "minor", min, "fileMode", 0666,
                                                           "uid", 0, "gid", 0)) < 0)
                        return gh_err(err, ENOMEM, "declaring %s", d->path);
                /* Appended after the runtime's rules: a later rule wins, so the node is allowed even
                 * under a leading deny-all. */
                if (!has_rule(rules, d->rdev) &&
                    json_array_append_new(rules, json_pack("{s:b, s:s, s:I, s:I, s:s}", "allow", 1, "type", "c",
                                                           "major", maj, "minor", min, "access", "rwm")) < 0)
                        return gh_err(err, ENOMEM, "allowing %s", d->path);
        }
        return 0;
}

int gh_rt_spec_add_gpu(json_t *spec, const struct gh_config *cfg, const char *config_path,
                       const struct gh_rt_devices *devs, gh_error_t *err)
{
        if (add_hook(spec, cfg, config_path, err) < 0 || add_devices(spec, devs, err) < 0)
                return -1;
        return 0;
}
