/* The CDI spec of an MPS group (mps-cdi.h, docs/mps.md): written and recorded for start, removed
 * for stop. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cdi-specs.h"
#include "cleanup.h"
#include "oci.h"
#include "log.h"
#include "mps-cdi.h"
#include "mps.h"

#define RECORD_FILE "cdi-spec"

static int record(const char *dir, const char *name, const struct gh_mps_cdi *c, gh_error_t *err)
{
        char path[PATH_MAX], buf[GH_MPS_KV_MAX];
        int len;

        if (gh_mps_name_check(name, err) < 0)
                return -1;
        if (strchr(c->path, '\n') != NULL || strchr(c->kind, '\n') != NULL)
                return gh_err_usage(err, "the CDI spec path '%s' holds a newline", c->path);
        len = snprintf(buf, sizeof(buf), "path=%s\nkind=%s\ndev=%llu\nino=%llu\n", c->path, c->kind,
                       (unsigned long long) c->dev, (unsigned long long) c->ino);
        if (len < 0 || len >= (int) sizeof(buf))
                return gh_err(err, ENAMETOOLONG, "the CDI spec path '%s' is too long", c->path);
        gh_mps_group_path(path, sizeof(path), dir, name, RECORD_FILE);
        if (gh_mps_kv_write(path, buf, err) < 0)
                return gh_err_wrap(err, "recording the CDI spec of MPS group '%s'", name);
        return 0;
}

int gh_mps_cdi_write(const struct gh_cdi_opts *o, const char *want, char **written, gh_error_t *err)
{
        _cleanup_json_ json_t *spec = NULL, *old = NULL;
        _cleanup_free_ char *path = NULL, *device = NULL;
        struct gh_mps_cdi rec = { 0 };
        struct stat st;

        *written = NULL;
        path = want != NULL ? strdup(want) : gh_cdi_default_path(o->vendor, o->class_, o->mps_group);
        if (path == NULL || asprintf(&device, GH_CDI_MPS_PREFIX "%s", o->mps_group) < 0)
                return gh_err(err, ENOMEM, "writing the CDI spec");
        if (lstat(path, &st) == 0) {
                json_t *devs, *name;
                if (gh_cdi_spec_read(path, &old, err) < 0 ||
                    json_array_size(devs = json_object_get(old, "devices")) != 1 ||
                    !json_is_string(name = json_object_get(json_array_get(devs, 0), "name")) ||
                    strcmp(json_string_value(name), device) != 0) {
                        gh_error_free(err);
                        return gh_err(err, EEXIST,
                                      "not replacing %s: it is not a CDI spec of MPS group '%s'; remove it or "
                                      "give --cdi-spec=FILE",
                                      path, o->mps_group);
                }
        }
        if (gh_cdi_generate(o, &spec, err) < 0 || gh_cdi_write(spec, path, &st, err) < 0)
                return -1;
        snprintf(rec.path, sizeof(rec.path), "%s", path);
        snprintf(rec.kind, sizeof(rec.kind), "%s", json_string_value(json_object_get(spec, "kind")));
        rec.dev = st.st_dev;
        rec.ino = st.st_ino;
        if (record(o->mps_dir, o->mps_group, &rec, err) < 0) {
                /* stop could not find it: it goes now */
                unlink(path);
                return -1;
        }
        *written = steal_pointer(&path);
        return 0;
}

static void record_line(const char *key, const char *v, void *data)
{
        struct gh_mps_cdi *c = data;

        if (strcmp(key, "path") == 0)
                snprintf(c->path, sizeof(c->path), "%s", v);
        else if (strcmp(key, "kind") == 0)
                snprintf(c->kind, sizeof(c->kind), "%s", v);
        else if (strcmp(key, "dev") == 0)
                c->dev = (dev_t) strtoull(v, NULL, 10);
        else if (strcmp(key, "ino") == 0)
                c->ino = (ino_t) strtoull(v, NULL, 10);
}

int gh_mps_cdi_load(const char *dir, const char *name, struct gh_mps_cdi *c, gh_error_t *err)
{
        _cleanup_error_ gh_error_t e = NULL;
        char path[PATH_MAX];

        memset(c, 0, sizeof(*c));
        if (gh_mps_name_check(name, err) < 0)
                return -1;
        gh_mps_group_path(path, sizeof(path), dir, name, RECORD_FILE);
        /* the path in it is a file stop removes: only a record of ours counts */
        if (gh_mps_kv_read(path, record_line, c, &e) < 0) {
                if (e->code == ENOENT)
                        return 0;
                return gh_err(err, 0, "%s; ignoring it", e->msg);
        }
        if (c->path[0] != '/' || c->ino == 0)
                return gh_err(err, 0, "%s is malformed; ignoring it", path);
        return 1;
}

int gh_mps_cdi_remove(const char *dir, const char *name, gh_error_t *err)
{
        struct gh_mps_cdi c;
        struct stat st;
        int r = gh_mps_cdi_load(dir, name, &c, err);

        if (r <= 0)
                return r;
        if (lstat(c.path, &st) < 0)
                return errno == ENOENT ? 0 : gh_err(err, errno, "checking the CDI spec %s", c.path);
        /* the file written then, not one put there since */
        if (!S_ISREG(st.st_mode) || st.st_dev != c.dev || st.st_ino != c.ino)
                return gh_err(err, 0, "left %s alone: it is no longer the CDI spec gpu-cli wrote for MPS group '%s'",
                              c.path, name);
        if (unlink(c.path) < 0 && errno != ENOENT)
                return gh_err(err, errno, "removing the CDI spec %s of MPS group '%s'", c.path, name);
        gh_debug("MPS group %s: removed its CDI spec %s", name, c.path);
        return 0;
}
