/* The CDI spec of an MPS group (mps-daemon.h, docs/mps.md): `gpu-cli mps start` writes it and records
 * here what it wrote, `mps stop` removes that file, and only that file. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "log.h"
#include "mps-daemon.h"

#define RECORD_FILE "cdi-spec"

int gh_mps_cdi_record(const char *dir, const char *name, const struct gh_mps_cdi *c, gh_error_t *err)
{
        char path[PATH_MAX], buf[GH_MPS_KV_MAX];
        int len;

        if (gh_mps_name_check(name, err) < 0)
                return -1;
        if (strchr(c->path, '\n') != NULL || strchr(c->kind, '\n') != NULL)
                return gh_err(err, EINVAL, "the CDI spec path '%s' holds a newline", c->path);
        len = snprintf(buf, sizeof(buf), "path=%s\nkind=%s\ndev=%llu\nino=%llu\n", c->path, c->kind,
                       (unsigned long long) c->dev, (unsigned long long) c->ino);
        if (len < 0 || len >= (int) sizeof(buf))
                return gh_err(err, ENAMETOOLONG, "the CDI spec path '%s' is too long", c->path);
        gh_mps_group_path(path, sizeof(path), dir, name, RECORD_FILE);
        if (gh_mps_kv_write(path, buf, err) < 0)
                return gh_err_wrap(err, "recording the CDI spec of MPS group '%s'", name);
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
