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

/* ---- config.json -------------------------------------------------------------------------------
 * Read with the library's own reader (lib/core/jsonread.h), keeping only the members below: a
 * config.json an engine wrote is mostly what the hook never looks at (linux.resources, seccomp,
 * every mount option, hooks), and a full jansson tree of Docker's 15 KiB spec costs more than the
 * rest of a GPU start's user-space work.  What is dropped is still checked to be JSON. */
static const char *const spec_keep[] = {
        "ociVersion", "root", "process.env", "process.capabilities", "mounts", "linux.devices", "annotations", NULL,
};
/* cdi-hook's: root.path and linux.devices of a config.json its spec made large; with process.env
 * for check-requirements. */
static const char *const spec_keep_brief[] = { "ociVersion", "root", "linux.devices", NULL };
static const char *const spec_keep_brief_env[] = { "ociVersion", "root", "process.env", "linux.devices", NULL };

enum spec_part { SPEC_FULL, SPEC_BRIEF, SPEC_BRIEF_ENV };

#define WHAT "the bundle's config.json"

static bool is_null(const struct gh_json *d, int v) { return v < 0 || d->v[v].type == GH_JSON_NULL; }

/* Copies an optional string member; a member of another type is an error naming it.  (The reader
 * refuses a NUL in any string.) */
static int doc_string(const struct gh_json *d, int obj, const char *key, char **out, gh_error_t *err)
{
        int v = gh_json_get(d, obj, key);

        *out = NULL;
        if (is_null(d, v))
                return 0;
        if (d->v[v].type != GH_JSON_STRING)
                return gh_err(err, 0, "%s: \"%s\" must be a string", WHAT, key);
        if ((*out = strdup(d->v[v].str)) == NULL)
                return gh_err(err, ENOMEM, "%s", WHAT);
        return 0;
}

static size_t count_children(const struct gh_json *d, int node)
{
        size_t n = 0;
        for (int c = d->v[node].child; c >= 0; c = d->v[c].next)
                n++;
        return n;
}

static int parse_env(const struct gh_json *d, int process, struct gh_oci_spec *spec, gh_error_t *err)
{
        int env = gh_json_get(d, process, "env");
        size_t i = 0;

        if (is_null(d, env))
                env = -1;
        else if (d->v[env].type != GH_JSON_ARRAY)
                return gh_err(err, 0, "%s: \"process.env\" must be an array of \"KEY=VALUE\" strings", WHAT);
        spec->env = calloc((env >= 0 ? count_children(d, env) : 0) + 1, sizeof(char *));
        if (spec->env == NULL)
                return gh_err(err, ENOMEM, "%s", WHAT);
        for (int c = env >= 0 ? d->v[env].child : -1; c >= 0; c = d->v[c].next, i++) {
                const char *s = d->v[c].str;
                if (d->v[c].type != GH_JSON_STRING)
                        return gh_err(err, 0, "%s: \"process.env\" entry %zu is not a string", WHAT, i);
                if (strchr(s, '=') == NULL)
                        return gh_err(err, 0, "%s: \"process.env\" entry '%.64s%s' has no '='; write it as KEY=VALUE",
                                      WHAT, s, strlen(s) > 64 ? "..." : "");
                spec->env[spec->n_env] = strdup(s);
                if (spec->env[spec->n_env] == NULL)
                        return gh_err(err, ENOMEM, "%s", WHAT);
                spec->n_env++;
        }
        return 0;
}

/* ociVersion 1.0.0-rc1..rc4 had a flat list of capabilities; later ones an object of sets. */
static int parse_privileged(const struct gh_json *d, int process, struct gh_oci_spec *spec, gh_error_t *err)
{
        int caps = gh_json_get(d, process, "capabilities"), set;
        size_t i = 0;

        if (is_null(d, caps))
                return 0;
        if (d->v[caps].type == GH_JSON_ARRAY)
                set = caps;
        else if (d->v[caps].type == GH_JSON_OBJECT)
                set = gh_json_get(d, caps, "bounding");
        else
                return gh_err(err, 0, "%s: \"process.capabilities\" must be an object", WHAT);
        if (is_null(d, set))
                return 0;
        if (d->v[set].type != GH_JSON_ARRAY)
                return gh_err(err, 0, "%s: \"process.capabilities.bounding\" must be an array", WHAT);
        for (int c = d->v[set].child; c >= 0; c = d->v[c].next, i++) {
                if (d->v[c].type != GH_JSON_STRING)
                        return gh_err(err, 0, "%s: \"process.capabilities.bounding\" entry %zu is not a string", WHAT,
                                      i);
                if (strcmp(d->v[c].str, CAP_SYS_ADMIN_NAME) == 0)
                        spec->privileged = true;
        }
        return 0;
}

static int parse_mounts(const struct gh_json *d, struct gh_oci_spec *spec, gh_error_t *err)
{
        int mounts = gh_json_get(d, 0, "mounts");
        size_t i = 0;

        if (is_null(d, mounts))
                return 0;
        if (d->v[mounts].type != GH_JSON_ARRAY)
                return gh_err(err, 0, "%s: \"mounts\" must be an array", WHAT);
        spec->mounts = calloc(count_children(d, mounts) + 1, sizeof(*spec->mounts));
        if (spec->mounts == NULL)
                return gh_err(err, ENOMEM, "%s", WHAT);
        for (int c = d->v[mounts].child; c >= 0; c = d->v[c].next, i++) {
                struct gh_oci_mount *out = &spec->mounts[spec->n_mounts];
                if (d->v[c].type != GH_JSON_OBJECT)
                        return gh_err(err, 0, "%s: \"mounts\" entry %zu is not an object", WHAT, i);
                spec->n_mounts++;
                if (doc_string(d, c, "destination", &out->destination, err) < 0 ||
                    doc_string(d, c, "source", &out->source, err) < 0)
                        return gh_err_wrap(err, "mount %zu", i);
                if (out->destination == NULL)
                        return gh_err(err, 0, "%s: \"mounts\" entry %zu has no \"destination\"", WHAT, i);
        }
        return 0;
}

static int parse_devices(const struct gh_json *d, struct gh_oci_spec *spec, gh_error_t *err)
{
        int linux_ = gh_json_get(d, 0, "linux"), devices;
        size_t i = 0;

        if (is_null(d, linux_))
                return 0;
        if (d->v[linux_].type != GH_JSON_OBJECT)
                return gh_err(err, 0, "%s: \"linux\" must be an object", WHAT);
        devices = gh_json_get(d, linux_, "devices");
        if (is_null(d, devices))
                return 0;
        if (d->v[devices].type != GH_JSON_ARRAY)
                return gh_err(err, 0, "%s: \"linux.devices\" must be an array", WHAT);
        spec->devices = calloc(count_children(d, devices) + 1, sizeof(*spec->devices));
        if (spec->devices == NULL)
                return gh_err(err, ENOMEM, "%s", WHAT);
        for (int c = d->v[devices].child; c >= 0; c = d->v[c].next, i++) {
                struct gh_oci_device *out = &spec->devices[spec->n_devices];
                _cleanup_free_ char *type = NULL;
                int major, minor;

                if (d->v[c].type != GH_JSON_OBJECT)
                        return gh_err(err, 0, "%s: \"linux.devices\" entry %zu is not an object", WHAT, i);
                spec->n_devices++;
                if (doc_string(d, c, "path", &out->path, err) < 0 || doc_string(d, c, "type", &type, err) < 0)
                        return gh_err_wrap(err, "linux.devices entry %zu", i);
                if (out->path == NULL || type == NULL || strlen(type) != 1 || strchr("cbup", type[0]) == NULL)
                        return gh_err(err, 0,
                                      "%s: \"linux.devices\" entry %zu needs a \"path\" and a \"type\" of c, b, u or p",
                                      WHAT, i);
                out->type = type[0];
                major = gh_json_get(d, c, "major");
                minor = gh_json_get(d, c, "minor");
                if ((major >= 0 && gh_json_integer(d, major, &out->major) < 0) ||
                    (minor >= 0 && gh_json_integer(d, minor, &out->minor) < 0))
                        return gh_err(err, 0,
                                      "%s: \"linux.devices\" entry %zu: \"major\" and \"minor\" must be integers", WHAT,
                                      i);
        }
        return 0;
}

static int parse_annotations(const struct gh_json *d, struct gh_oci_spec *spec, gh_error_t *err)
{
        int annotations = gh_json_get(d, 0, "annotations");

        if (is_null(d, annotations))
                return 0;
        if (d->v[annotations].type != GH_JSON_OBJECT)
                return gh_err(err, 0, "%s: \"annotations\" must be an object", WHAT);
        if (doc_string(d, annotations, GH_OCI_ANNOTATION_MPS_GROUP, &spec->mps_group, err) < 0)
                return -1;
        gh_pod_from_annotations(d, annotations, &spec->pod);
        return 0;
}

static int spec_from_doc(const struct gh_json *d, const char *bundle, enum spec_part part, struct gh_oci_spec *spec,
                         gh_error_t *err)
{
        _cleanup_free_ char *root_path = NULL;
        bool brief = part != SPEC_FULL;
        int process, root;

        if (d->v[0].type != GH_JSON_OBJECT)
                return gh_err(err, 0, "%s is not a JSON object", WHAT);
        if (doc_string(d, 0, "ociVersion", &spec->oci_version, err) < 0)
                return -1;
        process = gh_json_get(d, 0, "process");
        root = gh_json_get(d, 0, "root");
        if (spec->oci_version == NULL || (!brief && (process < 0 || d->v[process].type != GH_JSON_OBJECT)) ||
            root < 0 || d->v[root].type != GH_JSON_OBJECT)
                return gh_err(err, 0, "%s lacks %s; is this an OCI bundle?", WHAT,
                              spec->oci_version == NULL ? "\"ociVersion\""
                              : !brief && (process < 0 || d->v[process].type != GH_JSON_OBJECT)
                                      ? "the \"process\" object"
                                      : "the \"root\" object");
        if (doc_string(d, root, "path", &root_path, err) < 0)
                return -1;
        if (root_path == NULL || root_path[0] == '\0')
                return gh_err(err, 0, "%s has no \"root.path\"", WHAT);
        spec->rootfs = join_path(root_path[0] == '/' ? "" : bundle, root_path);
        if (spec->rootfs == NULL)
                return gh_err(err, ENOMEM, "%s", WHAT);
        if (!brief && (parse_env(d, process, spec, err) < 0 || parse_privileged(d, process, spec, err) < 0 ||
                       parse_annotations(d, spec, err) < 0 || parse_mounts(d, spec, err) < 0))
                return -1;
        /* check-requirements: a spec without a process object has no variables (nothing to check). */
        if (part == SPEC_BRIEF_ENV && process >= 0 && d->v[process].type == GH_JSON_OBJECT &&
            parse_env(d, process, spec, err) < 0)
                return -1;
        return parse_devices(d, spec, err);
}

static int spec_parse(const char *buf, size_t len, const char *bundle, enum spec_part part, struct gh_oci_spec *spec,
                      gh_error_t *err)
{
        struct gh_json d = { 0 };
        size_t blank = 0;
        int r;

        memset(spec, 0, sizeof(*spec));
        while (blank < len && strchr(" \t\r\n", buf[blank]) != NULL && buf[blank] != '\0')
                blank++;
        if (blank == len)
                return gh_err(err, 0, "%s is empty; expected a JSON object", WHAT);
        if (gh_json_precheck(buf, len, WHAT, err) < 0)
                return -1;
        if (gh_jsonread_parse_only(buf, len,
                                   part == SPEC_FULL    ? spec_keep
                                   : part == SPEC_BRIEF ? spec_keep_brief
                                                        : spec_keep_brief_env,
                                   &d, err) < 0)
                return gh_err_wrap(err, "%s", WHAT);
        r = spec_from_doc(&d, bundle, part, spec, err);
        gh_json_free(&d);
        if (r < 0)
                gh_oci_spec_free(spec);
        return r;
}

int gh_oci_spec_parse(const char *buf, size_t len, const char *bundle, struct gh_oci_spec *spec, gh_error_t *err)
{
        return spec_parse(buf, len, bundle, SPEC_FULL, spec, err);
}

int gh_oci_spec_parse_brief(const char *buf, size_t len, const char *bundle, struct gh_oci_spec *spec, gh_error_t *err)
{
        return spec_parse(buf, len, bundle, SPEC_BRIEF, spec, err);
}

int gh_oci_spec_parse_brief_env(const char *buf, size_t len, const char *bundle, struct gh_oci_spec *spec,
                                gh_error_t *err)
{
        return spec_parse(buf, len, bundle, SPEC_BRIEF_ENV, spec, err);
}

#undef WHAT

static int read_config(const char *bundle, char **buf, size_t *len, gh_error_t *err);

int gh_oci_spec_load(const char *bundle, struct gh_oci_spec *spec, gh_error_t *err)
{
        _cleanup_free_ char *buf = NULL;
        size_t len;

        memset(spec, 0, sizeof(*spec));
        if (read_config(bundle, &buf, &len, err) < 0)
                return -1;
        return gh_oci_spec_parse(buf, len, bundle, spec, err);
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

int gh_oci_spec_load_brief(const char *bundle, bool env, struct gh_oci_spec *spec, gh_error_t *err)
{
        _cleanup_free_ char *buf = NULL;
        size_t len;

        memset(spec, 0, sizeof(*spec));
        if (read_config(bundle, &buf, &len, err) < 0)
                return -1;
        return spec_parse(buf, len, bundle, env ? SPEC_BRIEF_ENV : SPEC_BRIEF, spec, err);
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
