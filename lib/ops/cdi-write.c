/* The CDI spec we write (cdi.h): CDI's name rules, the lowest cdiVersion a spec needs, comparing a
 * spec with the one that would be written now, the default spec directories and paths, and
 * writing the file.  Reading every spec on the host, whoever wrote it, is cdi-specs.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cdi.h"
#include "cleanup.h"
#include "file.h"
#include "json.h"
#include "log.h"
#include "mps.h"
#include "oci.h"
#include "readfile.h"
#include "strutil.h"

const char *const gh_cdi_spec_dirs[] = { GH_CDI_DIR_STATIC, GH_CDI_DIR_DYNAMIC, NULL };

/* ---- names ---- */

static bool is_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

static bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/* CDI's rules: a letter first, an alphanumeric last, in between alphanumerics and `extra`. */
static bool valid_name(const char *s, const char *extra)
{
        size_t n = strlen(s);

        if (n == 0 || n > 255 || !is_letter(s[0]) || !is_alnum(s[n - 1]))
                return false;
        for (size_t i = 1; i + 1 < n; i++)
                if (!is_alnum(s[i]) && strchr(extra, s[i]) == NULL)
                        return false;
        return true;
}

int gh_cdi_check_mps_name(const char *group, gh_error_t *err)
{
        char name[GH_MPS_NAME_MAX + sizeof(GH_CDI_MPS_PREFIX)];

        if (gh_mps_name_check(group, err) < 0)
                return gh_err_kind(err, GH_ERR_USAGE);
        snprintf(name, sizeof(name), GH_CDI_MPS_PREFIX "%s", group);
        if (!valid_name(name, "_-.:"))
                return gh_err_usage(err,
                                    "MPS group '%s' cannot be a CDI device: CDI device names end in a letter or digit; "
                                    "start the group under another name",
                                    group);
        return 0;
}

int gh_cdi_check_kind(const char *vendor, const char *class_, gh_error_t *err)
{
        if (!valid_name(vendor, "_-."))
                return gh_err_usage(
                        err,
                        "invalid vendor '%s': a letter first, then letters, digits, '_', '-' or '.', ending in a letter or digit (e.g. nvidia.com)",
                        vendor);
        if (!valid_name(class_, "_-"))
                return gh_err_usage(
                        err,
                        "invalid class '%s': a letter first, then letters, digits, '_' or '-', ending in a letter or digit (e.g. gpu)",
                        class_);
        return 0;
}

/* ---- versions and comparison ---- */

/* Whether an entry of edits[list] has a non-empty string `key`: a field a version added
 * (deviceNodes[].hostPath came with 0.5.0, mounts[].type with 0.4.0). */
static bool edits_use(json_t *edits, const char *list, const char *key)
{
        json_t *entries = json_object_get(edits, list), *e;
        size_t i;

        json_array_foreach (entries, i, e) {
                json_t *v = json_object_get(e, key);
                if (json_is_string(v) && json_string_length(v) > 0)
                        return true;
        }
        return false;
}

static bool edits_need_050(json_t *edits) { return edits_use(edits, "deviceNodes", "hostPath"); }

static bool edits_need_040(json_t *edits) { return edits_use(edits, "mounts", "type"); }

const char *gh_cdi_min_version(json_t *spec)
{
        json_t *devices = json_object_get(spec, "devices"), *d;
        bool v050 = edits_need_050(json_object_get(spec, "containerEdits"));
        bool v040 = edits_need_040(json_object_get(spec, "containerEdits"));
        size_t i;

        json_array_foreach (devices, i, d) {
                const char *name = json_string_value(json_object_get(d, "name"));
                /* 0.5.0 allowed a device name to start with a digit */
                v050 |= name != NULL && name[0] >= '0' && name[0] <= '9';
                v050 |= edits_need_050(json_object_get(d, "containerEdits"));
                v040 |= edits_need_040(json_object_get(d, "containerEdits"));
        }
        return v050 ? "0.5.0" : v040 ? "0.4.0" : "0.3.0";
}

static bool differ(char **why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool differ(char **why, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(why, fmt, ap) < 0)
                *why = NULL;
        va_end(ap);
        return false;
}

/* json_equal() says NULL differs from NULL: an absent member equals an absent member here. */
static bool same(json_t *a, json_t *b) { return (a == NULL && b == NULL) || json_equal(a, b); }

static json_t *find_by(json_t *arr, const char *key, const char *value)
{
        json_t *v;
        size_t i;

        json_array_foreach (arr, i, v) {
                const char *s = json_string_value(json_object_get(v, key));
                if (s != NULL && strcmp(s, value) == 0)
                        return v;
        }
        return NULL;
}

/* Arrays of objects identified by `key`: the first one missing, extra or different. */
static bool same_keyed(json_t *want, json_t *have, const char *key, const char *what, const char *where, char **why)
{
        json_t *v;
        size_t i;

        json_array_foreach (want, i, v) {
                const char *id = json_string_value(json_object_get(v, key));
                json_t *h = find_by(have, key, id ? id : "");
                if (h == NULL)
                        return differ(why, "%s%s '%s' is missing (the driver has it now)", where, what, id ? id : "?");
                if (!same(v, h))
                        return differ(why, "%s%s '%s' differs", where, what, id ? id : "?");
        }
        json_array_foreach (have, i, v) {
                const char *id = json_string_value(json_object_get(v, key));
                if (find_by(want, key, id ? id : "") == NULL)
                        return differ(why, "%s%s '%s' is not in the driver any more", where, what, id ? id : "?");
        }
        return true;
}

static bool same_edits(json_t *want, json_t *have, const char *where, char **why)
{
        json_t *wh = json_object_get(want, "hooks"), *hh = json_object_get(have, "hooks");

        if (!same_keyed(json_object_get(want, "deviceNodes"), json_object_get(have, "deviceNodes"), "path",
                        "device node", where, why) ||
            !same_keyed(json_object_get(want, "mounts"), json_object_get(have, "mounts"), "containerPath", "mount",
                        where, why))
                return false;
        if (!same(json_object_get(want, "env"), json_object_get(have, "env")))
                return differ(why, "%sthe environment differs", where);
        if (json_array_size(wh) != json_array_size(hh))
                return differ(why, "%sthe number of hooks differs", where);
        for (size_t i = 0; i < json_array_size(wh); i++) {
                json_t *wa = json_object_get(json_array_get(wh, i), "args"),
                       *ha = json_object_get(json_array_get(hh, i), "args");
                for (size_t k = 0; k < json_array_size(wa); k++)
                        if (!same(json_array_get(wa, k), json_array_get(ha, k)))
                                return differ(why, "%shook argument '%s' differs", where,
                                              json_string_value(json_array_get(wa, k)) ?: "?");
                if (!same(json_array_get(wh, i), json_array_get(hh, i)))
                        return differ(why, "%sthe hook differs", where);
        }
        return true;
}

bool gh_cdi_same(json_t *want, json_t *have, char **why)
{
        json_t *wd = json_object_get(want, "devices"), *hd = json_object_get(have, "devices"), *v;
        size_t i;

        *why = NULL;
        if (!same(json_object_get(want, "kind"), json_object_get(have, "kind")))
                return differ(why, "its kind is not %s", json_string_value(json_object_get(want, "kind")));
        /* Devices that came or went first: they say the most about what changed. */
        json_array_foreach (wd, i, v) {
                const char *name = json_string_value(json_object_get(v, "name"));
                if (find_by(hd, "name", name) == NULL)
                        return differ(why, "device '%s' is missing (the driver has it now)", name);
        }
        json_array_foreach (hd, i, v) {
                const char *name = json_string_value(json_object_get(v, "name"));
                if (find_by(wd, "name", name ? name : "") == NULL)
                        return differ(why, "device '%s' is not in the driver any more", name ? name : "?");
        }
        if (!same_edits(json_object_get(want, "containerEdits"), json_object_get(have, "containerEdits"), "", why))
                return false;
        json_array_foreach (wd, i, v) {
                const char *name = json_string_value(json_object_get(v, "name"));
                _cleanup_free_ char *where = NULL;
                if (asprintf(&where, "device '%s': ", name) < 0)
                        return false;
                if (!same_edits(json_object_get(v, "containerEdits"),
                                json_object_get(find_by(hd, "name", name), "containerEdits"), where, why))
                        return false;
        }
        if (!same(want, have))
                return differ(why, "cdiVersion or the order of its entries differs");
        return true;
}

/* ---- files ---- */

char *gh_cdi_default_path(const char *vendor, const char *class_, const char *mps_group)
{
        char *path = NULL;

        /* An MPS group does not outlive a reboot; neither does /var/run. */
        if (mps_group != NULL) {
                if (asprintf(&path, GH_CDI_DIR_DYNAMIC "/%s-%s-mps-%s.json", vendor, class_, mps_group) < 0)
                        return NULL;
        } else if (asprintf(&path, GH_CDI_DIR_STATIC "/%s-%s.json", vendor, class_) < 0) {
                return NULL;
        }
        return path;
}

char *gh_cdi_text(json_t *spec) { return gh_json_text(spec, 2); }

int gh_cdi_write(json_t *spec, const char *path, struct stat *st, gh_error_t *err)
{
        _cleanup_free_ char *text = gh_cdi_text(spec);

        if (text == NULL)
                return gh_err(err, ENOMEM, "writing %s", path);
        /* A runtime reading the directory sees the old spec or the new one, never half of one (the
         * temporary name starts with a dot and has no .json: no CDI reader picks it up); synced,
         * since a spec in /etc/cdi outlives a reboot; the directory made if missing. */
        return gh_write_file_at(AT_FDCWD, path, text, strlen(text), 0644,
                                GH_WRITE_ATOMIC | GH_WRITE_SYNC | GH_WRITE_MKDIR_0755, st, err);
}

/* Whether a hook argument of the common edits starts with prefix (and has a value, when valued). */
static bool hook_arg(json_t *spec, const char *prefix, bool valued)
{
        json_t *hooks = json_object_get(json_object_get(spec, "containerEdits"), "hooks"), *h, *a;
        size_t i, j, n = strlen(prefix);

        json_array_foreach (hooks, i, h)
                json_array_foreach (json_object_get(h, "args"), j, a) {
                        const char *s = json_string_value(a);
                        if (s != NULL && strncmp(s, prefix, n) == 0 && (valued ? strchr(s, '=') != NULL : s[n] == '\0'))
                                return true;
                }
        return false;
}

bool gh_cdi_spec_hook_mounts(json_t *spec) { return hook_arg(spec, "--mount", true); }

bool gh_cdi_spec_checks_requirements(json_t *spec) { return hook_arg(spec, "--check-requirements", false); }
