#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "capability.h"
#include "cleanup.h"
#include "env.h"
#include "mps.h"
#include "log.h"
#include "require.h"
#include "strutil.h"

#define VOLUME_MOUNT_ROOT "/var/run/nvidia-container-devices"

struct env {
        char *const *vars;
        size_t n;
};

/* Looks NAME up (last duplicate wins) and refuses values too long to be real. */
static int env_get(const struct env *e, const char *name, const char **value, gh_error_t *err)
{
        *value = gh_oci_getenv(e->vars, e->n, name);
        if (*value != NULL && strlen(*value) > GH_ENV_VALUE_MAX)
                return gh_err(err, 0, "%s is %zu bytes long (at most %d); shorten it", name, strlen(*value),
                              GH_ENV_VALUE_MAX);
        return 0;
}

/* Trimmed copy of s. */
static char *strip(const char *s)
{
        const char *e = s + strlen(s);
        while (gh_is_blank(*s))
                s++;
        while (e > s && gh_is_blank(e[-1]))
                e--;
        return strndup(s, (size_t) (e - s));
}

/* True when the comma list holds an item "void" (any case): NVIDIA's hook stops there, before
 * looking at the other items, so "void,whatever" is no error. */
static bool list_has_void(const char *list)
{
        for (const char *p = list; p != NULL; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
                const char *s = p, *e = strchrnul(p, ',');
                while (s < e && gh_is_blank(*s))
                        s++;
                while (e > s && gh_is_blank(e[-1]))
                        e--;
                if (e - s == 4 && strncasecmp(s, "void", 4) == 0)
                        return true;
        }
        return false;
}

static int append(char **list, const char *item)
{
        char *n = NULL;
        if (asprintf(&n, "%s%s%s", *list ? *list : "", *list ? "," : "", item) < 0)
                return -1;
        free(*list);
        *list = n;
        return 0;
}

/* Destinations VOLUME_MOUNT_ROOT/<device> with /dev/null as source name the devices, one per mount:
 * only the host's administrator (or a privileged client of the runtime) chooses mounts. */
static int devices_from_mounts(const struct gh_oci_spec *spec, char **list, gh_error_t *err)
{
        static const char root[] = VOLUME_MOUNT_ROOT "/";

        *list = NULL;
        for (size_t i = 0; i < spec->n_mounts; i++) {
                const struct gh_oci_mount *m = &spec->mounts[i];
                _cleanup_free_ char *dev = NULL;
                const char *rest;
                size_t len;

                if (m->source == NULL || strcmp(m->source, "/dev/null") != 0 ||
                    strncmp(m->destination, root, sizeof(root) - 1) != 0)
                        continue;
                rest = m->destination + sizeof(root) - 1;
                len = strcspn(rest, "/");
                /* One path component (a trailing slash allowed), as NVIDIA's hook after cleaning. */
                if (len == 0 || rest[len + strspn(rest + len, "/")] != '\0')
                        continue;
                dev = strndup(rest, len);
                if (dev == NULL || append(list, dev) < 0)
                        return gh_err(err, ENOMEM, "reading the volume-mount device list");
                if (strlen(*list) > GH_ENV_VALUE_MAX)
                        return gh_err(err, 0, "the volume-mount device list is longer than %d bytes", GH_ENV_VALUE_MAX);
        }
        return 0;
}

/* Fills d->devices and d->source; leaves gpu_container false for a non-GPU container. */
static int decide_devices(const struct env *e, const struct gh_oci_spec *spec, const struct gh_config *cfg,
                          struct gh_env_decision *d, gh_error_t *err)
{
        _cleanup_free_ char *mounts = NULL, *swarm = NULL;
        const char *list = NULL, *what = "NVIDIA_VISIBLE_DEVICES";

        if (cfg->accept_volume_mounts) {
                if (devices_from_mounts(spec, &mounts, err) < 0)
                        return -1;
                if (mounts != NULL) {
                        list = mounts;
                        what = "the volume-mount device list";
                        d->source = GH_DEVICES_VOLUME_MOUNTS;
                }
        }
        if (list == NULL) {
                bool swarm_set = false;
                for (size_t i = 0; i < cfg->n_swarm_resource; i++) {
                        const char *v;
                        if (env_get(e, cfg->swarm_resource[i], &v, err) < 0)
                                return -1;
                        if (v == NULL)
                                continue;
                        swarm_set = true;
                        if (v[0] != '\0' && append(&swarm, v) < 0)
                                return gh_err(err, ENOMEM, "reading %s", cfg->swarm_resource[i]);
                }
                if (swarm_set) {
                        list = swarm ? swarm : "";
                        what = cfg->swarm_resource[0];
                        d->source = GH_DEVICES_SWARM;
                } else {
                        if (env_get(e, "NVIDIA_VISIBLE_DEVICES", &list, err) < 0)
                                return -1;
                        d->source = list ? GH_DEVICES_ENV : d->legacy_image ? GH_DEVICES_LEGACY : GH_DEVICES_NONE;
                }
                if (d->source == GH_DEVICES_NONE)
                        return 0;
                /* The privilege gate covers every device request that comes from the environment. */
                if (!d->privileged && !cfg->accept_envvar_unprivileged) {
                        d->ignored_unprivileged = true;
                        d->source = GH_DEVICES_NONE;
                        gh_debug("ignoring the device request of an unprivileged container "
                                 "(accept-visible-devices-envvar-when-unprivileged is false)");
                        return 0;
                }
        }
        if (d->source == GH_DEVICES_LEGACY)
                list = "all";
        if (list_has_void(list)) {
                d->source = GH_DEVICES_NONE;
                return 0;
        }
        if (gh_select_parse(list, &d->devices, err) < 0)
                return gh_err_wrap(err, "%s", what);
        if (d->devices.is_void) {
                gh_select_request_free(&d->devices);
                d->source = GH_DEVICES_NONE;
                return 0;
        }
        d->gpu_container = true;
        return 0;
}

static int decide_capabilities(const struct env *e, const struct gh_config *cfg, struct gh_env_decision *d,
                               gh_error_t *err)
{
        const char *v;
        unsigned mask;

        if (env_get(e, "NVIDIA_DRIVER_CAPABILITIES", &v, err) < 0)
                return -1;
        if (v == NULL && d->legacy_image) {
                mask = cfg->supported_caps;
        } else if (v == NULL || v[strspn(v, " \t,")] == '\0') {
                mask = (GH_CAP_UTILITY | GH_CAP_COMPUTE) & cfg->supported_caps;
        } else {
                _cleanup_free_ char *copy = strdup(v);
                bool all = false;
                if (copy == NULL)
                        return gh_err(err, ENOMEM, "reading NVIDIA_DRIVER_CAPABILITIES");
                /* "all" anywhere means the supported set, whatever else the list names. */
                for (char *save = NULL, *it = strtok_r(copy, ",", &save); it; it = strtok_r(NULL, ",", &save)) {
                        _cleanup_free_ char *t = strip(it);
                        if (t != NULL && strcmp(t, "all") == 0)
                                all = true;
                }
                if (all)
                        mask = cfg->supported_caps;
                else if (gh_capability_parse(v, cfg->supported_caps, &mask, err) < 0)
                        return gh_err_wrap(err, "NVIDIA_DRIVER_CAPABILITIES");
        }
        d->capabilities = gh_capability_expand(mask);
        return 0;
}

int gh_env_cuda_major_minor(const char *version, char *out, size_t size)
{
        unsigned long parts[3] = { 0, 0, 0 };
        const char *p = version;
        int n = 0;

        if (p == NULL)
                return -1;
        if (*p == 'v')
                p++;
        for (;;) {
                const char *start = p;
                char *end;
                if (!isdigit((unsigned char) *p) || n == 3)
                        return -1;
                if (*p == '0' && isdigit((unsigned char) p[1]))
                        return -1; /* semver: no leading zeros */
                errno = 0;
                parts[n++] = strtoul(start, &end, 10);
                if (errno != 0 || parts[n - 1] > 0xffffffffUL)
                        return -1;
                p = end;
                if (*p != '.')
                        break;
                p++;
        }
        /* A pre-release or build suffix is allowed after a full MAJOR.MINOR.PATCH only. */
        if (*p != '\0') {
                if (n != 3 || (*p != '-' && *p != '+') || p[1] == '\0')
                        return -1;
                for (const char *s = p + 1; *s; s++)
                        if (!isalnum((unsigned char) *s) && *s != '.' && *s != '-' && *s != '+')
                                return -1;
        }
        if (snprintf(out, size, "%lu.%lu", parts[0], parts[1]) >= (int) size)
                return -1;
        return 0;
}

bool gh_env_parse_bool(const char *s)
{
        static const char *const yes[] = { "1", "t", "T", "TRUE", "true", "True" };
        for (size_t i = 0; s != NULL && i < GH_ARRAY_SIZE(yes); i++)
                if (strcmp(s, yes[i]) == 0)
                        return true;
        return false;
}

static int cmp_env_name(const void *a, const void *b)
{
        const char *x = *(char *const *) a, *y = *(char *const *) b;
        size_t lx = strcspn(x, "="), ly = strcspn(y, "=");
        int c = strncmp(x, y, lx < ly ? lx : ly);
        if (c != 0)
                return c;
        if (lx != ly)
                return lx < ly ? -1 : 1;
        /* Same name: keep the environment's order, so the last one of a group is the one that wins. */
        return x < y ? -1 : x > y;
}

static int add_requirement(struct gh_env_decision *d, const char *name, const char *value, gh_error_t *err)
{
        _cleanup_free_ char *expr = strip(value);
        struct gh_require *parsed = NULL;
        char **grown;

        if (expr == NULL)
                return gh_err(err, ENOMEM, "reading %s", name);
        if (expr[0] == '\0')
                return 0; /* an empty requirement requires nothing */
        if (d->n_requirements >= GH_ENV_MAX_REQUIREMENTS)
                return gh_err(err, 0, "more than %d NVIDIA_REQUIRE_* requirements; merge them",
                              GH_ENV_MAX_REQUIREMENTS);
        if (gh_require_parse(expr, &parsed, err) < 0)
                return gh_err_wrap(err, "%s", name);
        gh_require_free(parsed);
        grown = realloc(d->requirements, (d->n_requirements + 2) * sizeof(char *));
        if (grown == NULL)
                return gh_err(err, ENOMEM, "reading %s", name);
        d->requirements = grown;
        d->requirements[d->n_requirements++] = steal_pointer(&expr);
        d->requirements[d->n_requirements] = NULL;
        return 0;
}

static int decide_requirements(const struct env *e, const struct gh_config *cfg, struct gh_env_decision *d,
                               gh_error_t *err)
{
        static const char prefix[] = "NVIDIA_REQUIRE_";
        _cleanup_free_ char **reqs = NULL;
        const char *v;
        size_t n = 0;

        if (env_get(e, "NVIDIA_DISABLE_REQUIRE", &v, err) < 0)
                return -1;
        if (cfg->disable_require || gh_env_parse_bool(v))
                return 0;

        reqs = calloc(e->n + 1, sizeof(char *));
        if (reqs == NULL)
                return gh_err(err, ENOMEM, "reading the requirements");
        for (size_t i = 0; i < e->n; i++)
                if (strncmp(e->vars[i], prefix, sizeof(prefix) - 1) == 0 &&
                    strncmp(e->vars[i], "NVIDIA_REQUIRE_JETPACK", 22) != 0)
                        reqs[n++] = e->vars[i];
        /* Sorted by name so that the order (and the log) does not depend on the image's env order. */
        qsort(reqs, n, sizeof(char *), cmp_env_name);
        for (size_t i = 0; i < n; i++) {
                char name[128];
                size_t nl = strcspn(reqs[i], "=");
                if (i + 1 < n && cmp_env_name(&reqs[i], &reqs[i + 1]) < 0 && strcspn(reqs[i + 1], "=") == nl &&
                    strncmp(reqs[i], reqs[i + 1], nl) == 0)
                        continue; /* a later duplicate wins */
                snprintf(name, sizeof(name), "%.*s", (int) (nl < 100 ? nl : 100), reqs[i]);
                if (strlen(reqs[i] + nl + 1) > GH_ENV_VALUE_MAX)
                        return gh_err(err, 0, "%s is longer than %d bytes; shorten it", name, GH_ENV_VALUE_MAX);
                if (add_requirement(d, name, reqs[i] + nl + 1, err) < 0)
                        return -1;
        }
        if (d->legacy_image) {
                char mm[48], expr[64];
                if (env_get(e, "CUDA_VERSION", &v, err) < 0)
                        return -1;
                if (gh_env_cuda_major_minor(v, mm, sizeof(mm)) < 0)
                        return gh_err(
                                err, 0,
                                "CUDA_VERSION '%.64s' is not a version like 12.4 or 12.4.1; fix the image or set NVIDIA_DISABLE_REQUIRE=true",
                                v);
                snprintf(expr, sizeof(expr), "cuda>=%s", mm);
                return add_requirement(d, "CUDA_VERSION", expr, err);
        }
        return 0;
}

/* NVIDIA_MIG_CONFIG_DEVICES / NVIDIA_MIG_MONITOR_DEVICES: "all" or nothing, privileged only. */
static int decide_mig(const struct env *e, const char *name, bool privileged, bool *out, gh_error_t *err)
{
        _cleanup_free_ char *t = NULL;
        const char *v;

        if (env_get(e, name, &v, err) < 0)
                return -1;
        if (v == NULL || (t = strip(v)) == NULL || t[0] == '\0')
                return v != NULL && t == NULL ? gh_err(err, ENOMEM, "reading %s", name) : 0;
        if (!privileged)
                return gh_err(err, 0,
                              "%s is only honoured in privileged containers; unset it or run the container privileged",
                              name);
        if (strcasecmp(t, "all") != 0)
                return gh_err(err, 0, "%s='%.64s' is not supported; the only value is 'all'", name, t);
        *out = true;
        return 0;
}

static int decide_imex(const struct env *e, struct gh_env_decision *d, gh_error_t *err)
{
        _cleanup_free_ char *copy = NULL;
        const char *v;

        if (env_get(e, "NVIDIA_IMEX_CHANNELS", &v, err) < 0)
                return -1;
        if (v == NULL)
                return 0;
        copy = strdup(v);
        if (copy == NULL)
                return gh_err(err, ENOMEM, "reading NVIDIA_IMEX_CHANNELS");
        for (char *save = NULL, *it = strtok_r(copy, ",", &save); it; it = strtok_r(NULL, ",", &save)) {
                _cleanup_free_ char *t = strip(it);
                unsigned long ch;
                char *end;
                bool dup = false;

                if (t == NULL)
                        return gh_err(err, ENOMEM, "reading NVIDIA_IMEX_CHANNELS");
                if (t[0] == '\0')
                        continue;
                errno = 0;
                ch = strtoul(t, &end, 10);
                if (!isdigit((unsigned char) t[0]) || *end != '\0' || errno != 0 || ch >= GH_IMEX_CHANNEL_LIMIT)
                        return gh_err(err, 0, "NVIDIA_IMEX_CHANNELS: '%.64s' is not a channel number (0 to %u)", t,
                                      GH_IMEX_CHANNEL_LIMIT - 1);
                for (size_t i = 0; i < d->n_imex_channels; i++)
                        dup |= d->imex_channels[i] == ch;
                if (dup)
                        continue;
                if (d->n_imex_channels >= GH_ENV_MAX_IMEX_CHANNELS)
                        return gh_err(err, 0, "NVIDIA_IMEX_CHANNELS names more than %d channels",
                                      GH_ENV_MAX_IMEX_CHANNELS);
                unsigned *grown = realloc(d->imex_channels, (d->n_imex_channels + 1) * sizeof(unsigned));
                if (grown == NULL)
                        return gh_err(err, ENOMEM, "reading NVIDIA_IMEX_CHANNELS");
                d->imex_channels = grown;
                d->imex_channels[d->n_imex_channels++] = (unsigned) ch;
        }
        return 0;
}

/* The MPS group (docs/mps.md): the annotation wins; the variable only when the config accepts it. */
static int decide_mps(struct env *e, const struct gh_oci_spec *spec, const struct gh_config *cfg,
                      struct gh_env_decision *d, gh_error_t *err)
{
        const char *name = spec->mps_group;

        if (name == NULL && cfg->accept_mps_envvar) {
                if (env_get(e, GH_ENV_MPS_GROUP, &name, err) < 0)
                        return -1;
                d->mps_from_env = name != NULL;
        }
        if (name == NULL)
                return 0;
        if (gh_mps_name_check(name, err) < 0)
                return gh_err_wrap(err, "%s",
                                   d->mps_from_env ? GH_ENV_MPS_GROUP : "annotation " GH_OCI_ANNOTATION_MPS_GROUP);
        d->mps_group = strdup(name);
        return d->mps_group ? 0 : gh_err(err, ENOMEM, "reading the MPS group");
}

/* A legacy CUDA image: CUDA_VERSION set and not empty, NVIDIA_REQUIRE_CUDA empty or unset. */
static int decide_legacy(const struct env *e, struct gh_env_decision *d, gh_error_t *err)
{
        const char *cuda, *require_cuda;

        if (env_get(e, "CUDA_VERSION", &cuda, err) < 0 || env_get(e, "NVIDIA_REQUIRE_CUDA", &require_cuda, err) < 0)
                return -1;
        d->legacy_image = cuda != NULL && cuda[0] != '\0' && (require_cuda == NULL || require_cuda[0] == '\0');
        return 0;
}

static int decide(const struct gh_oci_spec *spec, const struct gh_config *cfg, struct gh_env_decision *d,
                  gh_error_t *err)
{
        struct env e = { spec->env, spec->n_env };

        d->privileged = spec->privileged;
        if (decide_legacy(&e, d, err) < 0)
                return -1;

        if (decide_devices(&e, spec, cfg, d, err) < 0)
                return -1;
        if (!d->gpu_container)
                return 0;
        if (decide_capabilities(&e, cfg, d, err) < 0 || decide_requirements(&e, cfg, d, err) < 0 ||
            decide_mig(&e, "NVIDIA_MIG_CONFIG_DEVICES", d->privileged, &d->mig_config, err) < 0 ||
            decide_mig(&e, "NVIDIA_MIG_MONITOR_DEVICES", d->privileged, &d->mig_monitor, err) < 0)
                return -1;
        if (decide_imex(&e, d, err) < 0)
                return -1;
        return decide_mps(&e, spec, cfg, d, err);
}

int gh_env_decide(const struct gh_oci_spec *spec, const struct gh_config *cfg, struct gh_env_decision *d,
                  gh_error_t *err)
{
        memset(d, 0, sizeof(*d));
        if (decide(spec, cfg, d, err) < 0) {
                gh_env_decision_free(d);
                return -1;
        }
        return 0;
}

int gh_env_requirements(const struct gh_oci_spec *spec, const struct gh_config *cfg, struct gh_env_decision *d,
                        gh_error_t *err)
{
        struct env e = { spec->env, spec->n_env };

        memset(d, 0, sizeof(*d));
        if (decide_legacy(&e, d, err) < 0 || decide_requirements(&e, cfg, d, err) < 0) {
                gh_env_decision_free(d);
                return -1;
        }
        return 0;
}

void gh_env_decision_free(struct gh_env_decision *d)
{
        gh_select_request_free(&d->devices);
        for (size_t i = 0; i < d->n_requirements; i++)
                free(d->requirements[i]);
        free(d->requirements);
        free(d->imex_channels);
        free(d->mps_group);
        memset(d, 0, sizeof(*d));
}

json_t *gh_env_decision_json(const struct gh_env_decision *d, const char *rootfs, pid_t pid)
{
        static const unsigned cap_order[] = { GH_CAP_COMPAT32, GH_CAP_COMPUTE, GH_CAP_DISPLAY, GH_CAP_GRAPHICS,
                                              GH_CAP_NGX,      GH_CAP_UTILITY, GH_CAP_VIDEO };
        json_t *j = json_object(), *devices = json_array(), *caps = json_array(), *reqs = json_array(),
               *imex = json_array();
        bool ok = j && devices && caps && reqs && imex;

        if (ok && d->gpu_container) {
                if (d->devices.all) {
                        ok &= json_array_append_new(devices, json_string("all")) == 0;
                } else {
                        for (size_t i = 0; ok && i < d->devices.n; i++)
                                ok &= json_array_append_new(devices, json_string(d->devices.items[i].text)) == 0;
                }
                for (size_t i = 0; ok && i < GH_ARRAY_SIZE(cap_order); i++)
                        if (d->capabilities & cap_order[i])
                                ok &= json_array_append_new(caps, json_string(gh_capability_name(cap_order[i]))) == 0;
                for (size_t i = 0; ok && i < d->n_requirements; i++)
                        ok &= json_array_append_new(reqs, json_string(d->requirements[i])) == 0;
                for (size_t i = 0; ok && i < d->n_imex_channels; i++)
                        ok &= json_array_append_new(imex, json_integer(d->imex_channels[i])) == 0;
        }
        if (ok) {
                ok &= json_object_set_new(j, "gpu_container", json_boolean(d->gpu_container)) == 0;
                ok &= json_object_set(j, "devices", devices) == 0;
                ok &= json_object_set(j, "capabilities", caps) == 0;
                ok &= json_object_set(j, "requirements", reqs) == 0;
                ok &= json_object_set_new(j, "mig_config", d->mig_config ? json_string("all") : json_null()) == 0;
                ok &= json_object_set_new(j, "mig_monitor", d->mig_monitor ? json_string("all") : json_null()) == 0;
                ok &= json_object_set(j, "imex_channels", imex) == 0;
                ok &= json_object_set_new(j, "mps_group", d->mps_group ? json_string(d->mps_group) : json_null()) == 0;
                ok &= json_object_set_new(j, "rootfs", rootfs ? json_string(rootfs) : json_null()) == 0;
                ok &= json_object_set_new(j, "pid", json_integer(pid)) == 0;
        }
        json_decref(devices);
        json_decref(caps);
        json_decref(reqs);
        json_decref(imex);
        if (!ok) {
                json_decref(j);
                return NULL;
        }
        return j;
}

int gh_env_request(const struct gh_config *cfg, const struct gh_env_decision *d, struct gh_request *req,
                   gh_error_t *err)
{
        gh_request_init(req);
        /* The decision's device items, copied as parsed (a lone "none" still gets the driver files). */
        req->devices.unset = false;
        req->devices.all = d->devices.all;
        req->devices.none = d->devices.none;
        if (d->devices.n > 0) {
                req->devices.items = calloc(d->devices.n, sizeof(*req->devices.items));
                if (req->devices.items == NULL)
                        return gh_err(err, ENOMEM, "building the request");
                for (size_t i = 0; i < d->devices.n; i++) {
                        req->devices.items[i] = d->devices.items[i];
                        req->devices.items[i].text = strdup(d->devices.items[i].text);
                        req->devices.n++;
                        if (req->devices.items[i].text == NULL)
                                return gh_err(err, ENOMEM, "building the request");
                }
        }
        req->caps = d->capabilities;
        for (size_t i = 0; i < d->n_requirements; i++)
                if (gh_request_add_requirement(req, d->requirements[i], err) < 0)
                        return -1;
        req->mig_config = d->mig_config;
        req->mig_monitor = d->mig_monitor;
        for (size_t i = 0; i < d->n_imex_channels; i++)
                if (gh_request_add_imex_channel(req, d->imex_channels[i], err) < 0)
                        return -1;
        if (cfg->cli.user && gh_request_set_user(req, cfg->cli.user, err) < 0)
                return gh_err_wrap(err, "\"cli.user\" in the gpu-hook configuration");
        if (cfg->cli.ldconfig && gh_request_set_ldconfig(req, cfg->cli.ldconfig, err) < 0)
                return gh_err_wrap(err, "\"cli.ldconfig\" in the gpu-hook configuration");
        req->no_cgroups = cfg->cli.no_cgroups;
        req->no_cuda_compat = !cfg->cuda_compat;
        if (d->mps_group) {
                req->mps_group = strdup(d->mps_group);
                if (strcmp(cfg->mps.dir, GH_MPS_DEFAULT_DIR) != 0)
                        req->mps_dir = strdup(cfg->mps.dir);
                if (req->mps_group == NULL || (strcmp(cfg->mps.dir, GH_MPS_DEFAULT_DIR) != 0 && req->mps_dir == NULL))
                        return gh_err(err, ENOMEM, "building the request");
        }
        return 0;
}
