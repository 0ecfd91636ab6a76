/* OCI runtime input: the state a runtime writes on a hook's stdin and the bundle's config.json.
 *
 * Both come from a runtime we trust, but config.json carries what an image author chose (its
 * environment, its mounts), so every parser here is bounded (size, nesting depth), rejects invalid
 * UTF-8 and duplicate keys, checks the type of every field it reads and names the field on error. */
#ifndef GH_OCI_H
#define GH_OCI_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"
#include "json.h"
#include "usage.h"

#define GH_OCI_STATE_MAX (1u << 20)   /* 1 MiB: a state is a few hundred bytes plus annotations */
#define GH_OCI_CONFIG_MAX (16u << 20) /* 16 MiB: config.json with a large environment */

struct gh_oci_state {
        char *oci_version;
        char *id; /* container id: the trace id of logs */
        char *status;
        pid_t pid;    /* 0 when the state has none */
        char *bundle; /* "bundle", or old Docker's "bundlePath" */
        char *root;   /* crun's "root", or NULL */
};

struct gh_oci_mount {
        char *destination;
        char *source; /* NULL when the mount has none (tmpfs, proc) */
};

/* A linux.devices entry: a node the runtime creates in the container. */
struct gh_oci_device {
        char *path;
        char type; /* 'c', 'b', 'u' or 'p' */
        long long major, minor;
};

struct gh_oci_spec {
        char *oci_version;
        char *rootfs; /* root.path, joined to the bundle when relative */
        char **env;   /* process.env as given ("K=V"), NULL-terminated */
        size_t n_env;
        bool privileged; /* CAP_SYS_ADMIN in the bounding set */
        struct gh_oci_mount *mounts;
        size_t n_mounts;
        struct gh_oci_device *devices; /* linux.devices */
        size_t n_devices;
        char *mps_group;   /* annotations[GH_OCI_ANNOTATION_MPS_GROUP], NULL when absent */
        struct gh_pod pod; /* the pod CRI annotations name (podrecord.h); all "" when none */
};

/* Where podman and CRI-O look for OCI hook files (hooks.d), the one list: packages install to
 * the first, administrators (and gpu-cli setup) to the second. */
#define GH_OCI_HOOKS_DIR_VENDOR "/usr/share/containers/oci/hooks.d"
#define GH_OCI_HOOKS_DIR_ADMIN "/etc/containers/oci/hooks.d"
extern const char *const gh_oci_hooks_dirs[]; /* both, NULL-terminated */

/* The annotation by which an orchestrator (never an image) puts a container in an MPS group. */
#define GH_OCI_ANNOTATION_MPS_GROUP "org.gpu-hook.mps-group"

int gh_oci_state_parse(const char *buf, size_t len, struct gh_oci_state *state, gh_error_t *err);
/* Reads the state from fd (stdin for a hook), bounded by GH_OCI_STATE_MAX. */
int gh_oci_state_read(int fd, struct gh_oci_state *state, gh_error_t *err);
void gh_oci_state_free(struct gh_oci_state *state);

/* Parses config.json; `bundle` (absolute) is joined to a relative root.path. */
int gh_oci_spec_parse(const char *buf, size_t len, const char *bundle, struct gh_oci_spec *spec, gh_error_t *err);
/* Loads <bundle>/config.json, bounded by GH_OCI_CONFIG_MAX. */
int gh_oci_spec_load(const char *bundle, struct gh_oci_spec *spec, gh_error_t *err);

/* The same, filling only oci_version, rootfs and devices, with the same checks on them; the rest of
 * the document is only checked to be JSON (lib/core/jsonread.h, gh_jsonread_parse_only).  For
 * cdi-hook, which needs nothing else of a config.json its spec made large.  The _env form (and
 * load_brief with env) also fills env, from process.env when there is a process object: what
 * check-requirements reads. */
int gh_oci_spec_parse_brief(const char *buf, size_t len, const char *bundle, struct gh_oci_spec *spec, gh_error_t *err);
int gh_oci_spec_parse_brief_env(const char *buf, size_t len, const char *bundle, struct gh_oci_spec *spec,
                                gh_error_t *err);
int gh_oci_spec_load_brief(const char *bundle, bool env, struct gh_oci_spec *spec, gh_error_t *err);
void gh_oci_spec_free(struct gh_oci_spec *spec);

/* The value of NAME in a "K=V" list, the last duplicate winning; NULL when unset. */
const char *gh_oci_getenv(char *const *env, size_t n, const char *name);

#endif
