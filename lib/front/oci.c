#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "json.h"
#include "jsonread.h"
#include "oci.h"
#include "podrecord.h"
#include "proc.h"
#include "readfile.h"

#define CAP_SYS_ADMIN_NAME "CAP_SYS_ADMIN"

const char *const gh_oci_hooks_dirs[] = { GH_OCI_HOOKS_DIR_VENDOR, GH_OCI_HOOKS_DIR_ADMIN, NULL };

/* Copies an optional string member; a member of another type is an error naming it. */
static int get_string(json_t *obj, const char *key, const char *what, char **out, gh_error_t *err)
{
        json_t *v = json_object_get(obj, key);
        *out = NULL;
        if (v == NULL || json_is_null(v))
                return 0;
        if (!json_is_string(v))
                return gh_err(err, 0, "%s: \"%s\" must be a string", what, key);
        if (strlen(json_string_value(v)) != json_string_length(v))
                return gh_err(err, 0, "%s: \"%s\" contains a NUL character", what, key);
        *out = strdup(json_string_value(v));
        if (*out == NULL)
                return gh_err(err, ENOMEM, "%s", what);
        return 0;
}

static int state_parse(const char *buf, size_t len, struct gh_oci_state *state, gh_error_t *err)
{
        static const char what[] = "the OCI state on stdin";
        _cleanup_json_ json_t *j = NULL;
        json_t *pid;

        j = gh_json_parse(buf, len, what, err);
        if (j == NULL)
                return -1;
        if (get_string(j, "ociVersion", what, &state->oci_version, err) < 0 ||
            get_string(j, "id", what, &state->id, err) < 0 || get_string(j, "status", what, &state->status, err) < 0 ||
            get_string(j, "bundle", what, &state->bundle, err) < 0 ||
            get_string(j, "root", what, &state->root, err) < 0)
                return -1;
        if (state->bundle == NULL && get_string(j, "bundlePath", what, &state->bundle, err) < 0)
                return -1;
        pid = json_object_get(j, "pid");
        if (pid != NULL && !json_is_null(pid)) {
                if (!json_is_integer(pid) || json_integer_value(pid) < 0 || json_integer_value(pid) > GH_PID_MAX)
                        return gh_err(err, 0, "%s: \"pid\" must be a process id", what);
                state->pid = (pid_t) json_integer_value(pid);
        }
        if (state->bundle == NULL || state->bundle[0] == '\0')
                return gh_err(err, 0, "%s has no \"bundle\"; the runtime must pass the bundle directory", what);
        if (state->bundle[0] != '/')
                return gh_err(err, 0, "%s: bundle '%s' is not an absolute path", what, state->bundle);
        return 0;
}

int gh_oci_state_parse(const char *buf, size_t len, struct gh_oci_state *state, gh_error_t *err)
{
        memset(state, 0, sizeof(*state));
        if (state_parse(buf, len, state, err) < 0) {
                gh_oci_state_free(state);
                return -1;
        }
        return 0;
}

int gh_oci_state_read(int fd, struct gh_oci_state *state, gh_error_t *err)
{
        _cleanup_free_ char *buf = NULL;
        size_t len;

        if (gh_read_bounded(fd, GH_OCI_STATE_MAX, &buf, &len, "the OCI state on stdin", err) < 0)
                return -1;
        return gh_oci_state_parse(buf, len, state, err);
}

void gh_oci_state_free(struct gh_oci_state *state)
{
        free(state->oci_version);
        free(state->id);
        free(state->status);
        free(state->bundle);
        free(state->root);
        memset(state, 0, sizeof(*state));
}

/* "a/./b//" -> "a/b": the runtime's own paths, cleaned for messages and for gpu-cli's argv. */
static char *join_path(const char *base, const char *rel)
{
        _cleanup_free_ char *s = NULL;
        char *out, *w;
        const char *p;

        if (asprintf(&s, "%s/%s", base, rel) < 0)
                return NULL;
        out = malloc(strlen(s) + 1);
        if (out == NULL)
                return NULL;
        w = out;
        for (p = s; *p;) {
                if (*p == '/') {
                        p++;
                        continue;
                }
                const char *e = strchrnul(p, '/');
                if (!(e - p == 1 && p[0] == '.')) {
                        *w++ = '/';
                        memcpy(w, p, (size_t) (e - p));
                        w += e - p;
                }
                p = e;
        }
        if (w == out)
                *w++ = '/';
        *w = '\0';
        return out;
}

static int parse_env(json_t *process, const char *what, struct gh_oci_spec *spec, gh_error_t *err)
{
        json_t *env = json_object_get(process, "env"), *v;
        size_t i;

        if (env == NULL || json_is_null(env))
                env = NULL;
        else if (!json_is_array(env))
                return gh_err(err, 0, "%s: \"process.env\" must be an array of \"KEY=VALUE\" strings", what);
        spec->env = calloc((env ? json_array_size(env) : 0) + 1, sizeof(char *));
        if (spec->env == NULL)
                return gh_err(err, ENOMEM, "%s", what);
        json_array_foreach (env, i, v) {
                const char *s;
                if (!json_is_string(v))
                        return gh_err(err, 0, "%s: \"process.env\" entry %zu is not a string", what, i);
                s = json_string_value(v);
                if (strlen(s) != json_string_length(v))
                        return gh_err(err, 0, "%s: \"process.env\" entry %zu contains a NUL character", what, i);
                if (strchr(s, '=') == NULL)
                        return gh_err(err, 0, "%s: \"process.env\" entry '%.64s%s' has no '='; write it as KEY=VALUE",
                                      what, s, strlen(s) > 64 ? "..." : "");
                spec->env[spec->n_env] = strdup(s);
                if (spec->env[spec->n_env] == NULL)
                        return gh_err(err, ENOMEM, "%s", what);
                spec->n_env++;
        }
        return 0;
}

/* ociVersion 1.0.0-rc1..rc4 had a flat list of capabilities; later ones an object of sets. */
static int parse_privileged(json_t *process, const char *what, struct gh_oci_spec *spec, gh_error_t *err)
{
        json_t *caps = json_object_get(process, "capabilities"), *set, *v;
        size_t i;

        if (caps == NULL || json_is_null(caps))
                return 0;
        if (json_is_array(caps))
                set = caps;
        else if (json_is_object(caps))
                set = json_object_get(caps, "bounding");
        else
                return gh_err(err, 0, "%s: \"process.capabilities\" must be an object", what);
        if (set == NULL || json_is_null(set))
                return 0;
        if (!json_is_array(set))
                return gh_err(err, 0, "%s: \"process.capabilities.bounding\" must be an array", what);
        json_array_foreach (set, i, v) {
                if (!json_is_string(v))
                        return gh_err(err, 0, "%s: \"process.capabilities.bounding\" entry %zu is not a string", what,
                                      i);
                if (strcmp(json_string_value(v), CAP_SYS_ADMIN_NAME) == 0)
                        spec->privileged = true;
        }
        return 0;
}

static int parse_mounts(json_t *j, const char *what, struct gh_oci_spec *spec, gh_error_t *err)
{
        json_t *mounts = json_object_get(j, "mounts"), *m;
        size_t i;

        if (mounts == NULL || json_is_null(mounts))
                return 0;
        if (!json_is_array(mounts))
                return gh_err(err, 0, "%s: \"mounts\" must be an array", what);
        spec->mounts = calloc(json_array_size(mounts) + 1, sizeof(*spec->mounts));
        if (spec->mounts == NULL)
                return gh_err(err, ENOMEM, "%s", what);
        json_array_foreach (mounts, i, m) {
                struct gh_oci_mount *out = &spec->mounts[spec->n_mounts];
                if (!json_is_object(m))
                        return gh_err(err, 0, "%s: \"mounts\" entry %zu is not an object", what, i);
                spec->n_mounts++;
                if (get_string(m, "destination", what, &out->destination, err) < 0 ||
                    get_string(m, "source", what, &out->source, err) < 0)
                        return gh_err_wrap(err, "mount %zu", i);
                if (out->destination == NULL)
                        return gh_err(err, 0, "%s: \"mounts\" entry %zu has no \"destination\"", what, i);
        }
        return 0;
}

static int parse_devices(json_t *j, const char *what, struct gh_oci_spec *spec, gh_error_t *err)
{
        json_t *linux_ = json_object_get(j, "linux"), *devices, *d;
        size_t i;

        if (linux_ == NULL || json_is_null(linux_))
                return 0;
        if (!json_is_object(linux_))
                return gh_err(err, 0, "%s: \"linux\" must be an object", what);
        devices = json_object_get(linux_, "devices");
        if (devices == NULL || json_is_null(devices))
                return 0;
        if (!json_is_array(devices))
                return gh_err(err, 0, "%s: \"linux.devices\" must be an array", what);
        spec->devices = calloc(json_array_size(devices) + 1, sizeof(*spec->devices));
        if (spec->devices == NULL)
                return gh_err(err, ENOMEM, "%s", what);
        json_array_foreach (devices, i, d) {
                struct gh_oci_device *out = &spec->devices[spec->n_devices];
                _cleanup_free_ char *type = NULL;
                json_t *major, *minor;

                if (!json_is_object(d))
                        return gh_err(err, 0, "%s: \"linux.devices\" entry %zu is not an object", what, i);
                spec->n_devices++;
                if (get_string(d, "path", what, &out->path, err) < 0 || get_string(d, "type", what, &type, err) < 0)
                        return gh_err_wrap(err, "linux.devices entry %zu", i);
                if (out->path == NULL || type == NULL || strlen(type) != 1 || strchr("cbup", type[0]) == NULL)
                        return gh_err(err, 0,
                                      "%s: \"linux.devices\" entry %zu needs a \"path\" and a \"type\" of c, b, u or p",
                                      what, i);
                out->type = type[0];
                major = json_object_get(d, "major");
                minor = json_object_get(d, "minor");
                if ((major != NULL && !json_is_integer(major)) || (minor != NULL && !json_is_integer(minor)))
                        return gh_err(err, 0,
                                      "%s: \"linux.devices\" entry %zu: \"major\" and \"minor\" must be integers", what,
                                      i);
                out->major = major ? json_integer_value(major) : 0;
                out->minor = minor ? json_integer_value(minor) : 0;
        }
        return 0;
}

static int spec_from_json(json_t *j, const char *bundle, struct gh_oci_spec *spec, gh_error_t *err)
{
        static const char what[] = "the bundle's config.json";
        _cleanup_free_ char *root_path = NULL;
        json_t *process, *root;

        if (get_string(j, "ociVersion", what, &spec->oci_version, err) < 0)
                return -1;
        process = json_object_get(j, "process");
        root = json_object_get(j, "root");
        if (spec->oci_version == NULL || !json_is_object(process) || !json_is_object(root))
                return gh_err(err, 0, "%s lacks %s; is this an OCI bundle?", what,
                              spec->oci_version == NULL  ? "\"ociVersion\""
                              : !json_is_object(process) ? "the \"process\" object"
                                                         : "the \"root\" object");
        if (get_string(root, "path", what, &root_path, err) < 0)
                return -1;
        if (root_path == NULL || root_path[0] == '\0')
                return gh_err(err, 0, "%s has no \"root.path\"", what);
        spec->rootfs = join_path(root_path[0] == '/' ? "" : bundle, root_path);
        if (spec->rootfs == NULL)
                return gh_err(err, ENOMEM, "%s", what);
        if (parse_env(process, what, spec, err) < 0 || parse_privileged(process, what, spec, err) < 0)
                return -1;
        json_t *annotations = json_object_get(j, "annotations");
        if (annotations != NULL && !json_is_null(annotations)) {
                if (!json_is_object(annotations))
                        return gh_err(err, 0, "%s: \"annotations\" must be an object", what);
                if (get_string(annotations, GH_OCI_ANNOTATION_MPS_GROUP, what, &spec->mps_group, err) < 0)
                        return -1;
                gh_pod_from_annotations(annotations, &spec->pod);
        }
        if (parse_mounts(j, what, spec, err) < 0)
                return -1;
        return parse_devices(j, what, spec, err);
}

int gh_oci_spec_from_json(json_t *j, const char *bundle, struct gh_oci_spec *spec, gh_error_t *err)
{
        memset(spec, 0, sizeof(*spec));
        if (spec_from_json(j, bundle, spec, err) < 0) {
                gh_oci_spec_free(spec);
                return -1;
        }
        return 0;
}

int gh_oci_spec_parse(const char *buf, size_t len, const char *bundle, struct gh_oci_spec *spec, gh_error_t *err)
{
        _cleanup_json_ json_t *j = gh_json_parse(buf, len, "the bundle's config.json", err);

        memset(spec, 0, sizeof(*spec));
        if (j == NULL)
                return -1;
        if (spec_from_json(j, bundle, spec, err) < 0) {
                gh_oci_spec_free(spec);
                return -1;
        }
        return 0;
}

static int read_config(const char *bundle, char **buf, size_t *len, gh_error_t *err);

int gh_oci_spec_load(const char *bundle, struct gh_oci_spec *spec, gh_error_t *err)
{
        _cleanup_free_ char *buf = NULL;
        size_t len;

        if (read_config(bundle, &buf, &len, err) < 0)
                return -1;
        return gh_oci_spec_parse(buf, len, bundle, spec, err);
}

/* ---- The brief reading: root.path and linux.devices only (cdi-hook) ----------------------------
 * A createContainer hook of a CDI spec needs two fields of a config.json that the spec's own edits
 * made large (every mount, every variable): the same checks on those fields, the rest only checked to
 * be JSON (lib/core/jsonread.c's parse_only, neither decoded nor stored). */
static int brief_string(const struct gh_json *d, int obj, const char *key, const char *what, char **out,
                        gh_error_t *err)
{
        int v = gh_json_get(d, obj, key);

        *out = NULL;
        if (v < 0 || d->v[v].type == GH_JSON_NULL)
                return 0;
        if (d->v[v].type != GH_JSON_STRING)
                return gh_err(err, 0, "%s: \"%s\" must be a string", what, key);
        if ((*out = strdup(d->v[v].str)) == NULL)
                return gh_err(err, ENOMEM, "%s", what);
        return 0;
}

static int brief_devices(const struct gh_json *d, const char *what, struct gh_oci_spec *spec, gh_error_t *err)
{
        int linux_ = gh_json_get(d, 0, "linux"), devices, n = 0;
        size_t i = 0;

        if (linux_ < 0 || d->v[linux_].type == GH_JSON_NULL)
                return 0;
        if (d->v[linux_].type != GH_JSON_OBJECT)
                return gh_err(err, 0, "%s: \"linux\" must be an object", what);
        devices = gh_json_get(d, linux_, "devices");
        if (devices < 0 || d->v[devices].type == GH_JSON_NULL)
                return 0;
        if (d->v[devices].type != GH_JSON_ARRAY)
                return gh_err(err, 0, "%s: \"linux.devices\" must be an array", what);
        for (int c = d->v[devices].child; c >= 0; c = d->v[c].next)
                n++;
        spec->devices = calloc((size_t) n + 1, sizeof(*spec->devices));
        if (spec->devices == NULL)
                return gh_err(err, ENOMEM, "%s", what);
        for (int c = d->v[devices].child; c >= 0; c = d->v[c].next, i++) {
                struct gh_oci_device *out = &spec->devices[spec->n_devices];
                _cleanup_free_ char *type = NULL;
                int major, minor;

                if (d->v[c].type != GH_JSON_OBJECT)
                        return gh_err(err, 0, "%s: \"linux.devices\" entry %zu is not an object", what, i);
                spec->n_devices++;
                if (brief_string(d, c, "path", what, &out->path, err) < 0 ||
                    brief_string(d, c, "type", what, &type, err) < 0)
                        return gh_err_wrap(err, "linux.devices entry %zu", i);
                if (out->path == NULL || type == NULL || strlen(type) != 1 || strchr("cbup", type[0]) == NULL)
                        return gh_err(err, 0,
                                      "%s: \"linux.devices\" entry %zu needs a \"path\" and a \"type\" of c, b, u or p",
                                      what, i);
                out->type = type[0];
                major = gh_json_get(d, c, "major");
                minor = gh_json_get(d, c, "minor");
                if ((major >= 0 && gh_json_integer(d, major, &out->major) < 0) ||
                    (minor >= 0 && gh_json_integer(d, minor, &out->minor) < 0))
                        return gh_err(err, 0,
                                      "%s: \"linux.devices\" entry %zu: \"major\" and \"minor\" must be integers", what,
                                      i);
        }
        return 0;
}

int gh_oci_spec_parse_brief(const char *buf, size_t len, const char *bundle, struct gh_oci_spec *spec, gh_error_t *err)
{
        static const char what[] = "the bundle's config.json";
        static const char *const keep[] = { "ociVersion", "root", "linux.devices", NULL };
        _cleanup_free_ char *root_path = NULL;
        struct gh_json d = { 0 };
        int root, r = -1;

        memset(spec, 0, sizeof(*spec));
        if (gh_json_precheck(buf, len, what, err) < 0)
                return -1;
        if (gh_jsonread_parse_only(buf, len, keep, &d, err) < 0)
                return gh_err_wrap(err, "%s", what);
        if (d.v[0].type != GH_JSON_OBJECT) {
                gh_err(err, 0, "%s is not a JSON object", what);
                goto out;
        }
        if (brief_string(&d, 0, "ociVersion", what, &spec->oci_version, err) < 0)
                goto out;
        root = gh_json_get(&d, 0, "root");
        if (spec->oci_version == NULL || root < 0 || d.v[root].type != GH_JSON_OBJECT) {
                gh_err(err, 0, "%s lacks %s; is this an OCI bundle?", what,
                       spec->oci_version == NULL ? "\"ociVersion\"" : "the \"root\" object");
                goto out;
        }
        if (brief_string(&d, root, "path", what, &root_path, err) < 0)
                goto out;
        if (root_path == NULL || root_path[0] == '\0') {
                gh_err(err, 0, "%s has no \"root.path\"", what);
                goto out;
        }
        spec->rootfs = join_path(root_path[0] == '/' ? "" : bundle, root_path);
        if (spec->rootfs == NULL) {
                gh_err(err, ENOMEM, "%s", what);
                goto out;
        }
        r = brief_devices(&d, what, spec, err);
out:
        gh_json_free(&d);
        if (r < 0)
                gh_oci_spec_free(spec);
        return r;
}

static int read_config(const char *bundle, char **buf, size_t *len, gh_error_t *err)
{
        _cleanup_close_ int dirfd = -1, fd = -1;
        struct stat st;

        dirfd = open(bundle, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0)
                return gh_err(err, errno, "opening the bundle directory %s", bundle);
        fd = openat(dirfd, "config.json", O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return gh_err(err, errno, "opening %s/config.json", bundle);
        if (fstat(fd, &st) < 0)
                return gh_err(err, errno, "reading %s/config.json", bundle);
        if (!S_ISREG(st.st_mode))
                return gh_err(err, 0, "%s/config.json is not a regular file", bundle);
        return gh_read_bounded(fd, GH_OCI_CONFIG_MAX, buf, len, "the bundle's config.json", err);
}

int gh_oci_spec_load_brief(const char *bundle, struct gh_oci_spec *spec, gh_error_t *err)
{
        _cleanup_free_ char *buf = NULL;
        size_t len;

        memset(spec, 0, sizeof(*spec));
        if (read_config(bundle, &buf, &len, err) < 0)
                return -1;
        return gh_oci_spec_parse_brief(buf, len, bundle, spec, err);
}

void gh_oci_spec_free(struct gh_oci_spec *spec)
{
        for (size_t i = 0; i < spec->n_env; i++)
                free(spec->env[i]);
        free(spec->env);
        for (size_t i = 0; i < spec->n_mounts; i++) {
                free(spec->mounts[i].destination);
                free(spec->mounts[i].source);
        }
        free(spec->mounts);
        for (size_t i = 0; i < spec->n_devices; i++)
                free(spec->devices[i].path);
        free(spec->devices);
        free(spec->mps_group);
        free(spec->oci_version);
        free(spec->rootfs);
        memset(spec, 0, sizeof(*spec));
}

const char *gh_oci_getenv(char *const *env, size_t n, const char *name)
{
        size_t nl = strlen(name);
        for (size_t i = n; i-- > 0;)
                if (strncmp(env[i], name, nl) == 0 && env[i][nl] == '=')
                        return env[i] + nl + 1;
        return NULL;
}
