/* The CDI spec of an MPS group (mps.h, docs/mps.md): `gpu-cli mps start` writes it and records
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
#include "mps.h"

#define RECORD_FILE "cdi-spec"
#define RECORD_MAX (PATH_MAX + 512)

static void record_path(char *buf, size_t size, const char *dir, const char *name, const char *file)
{
        snprintf(buf, size, "%s/%s/%s", dir ? dir : GH_MPS_DEFAULT_DIR, name, file);
}

int gh_mps_cdi_record(const char *dir, const char *name, const struct gh_mps_cdi *c, gh_error_t *err)
{
        char path[PATH_MAX], tmp[PATH_MAX], buf[RECORD_MAX];
        _cleanup_close_ int fd = -1;
        int len;

        if (gh_mps_name_check(name, err) < 0)
                return -1;
        if (strchr(c->path, '\n') != NULL || strchr(c->kind, '\n') != NULL)
                return gh_err(err, EINVAL, "the CDI spec path '%s' holds a newline", c->path);
        len = snprintf(buf, sizeof(buf), "path=%s\nkind=%s\ndev=%llu\nino=%llu\n", c->path, c->kind,
                       (unsigned long long) c->dev, (unsigned long long) c->ino);
        if (len < 0 || len >= (int) sizeof(buf))
                return gh_err(err, ENAMETOOLONG, "the CDI spec path '%s' is too long", c->path);
        record_path(path, sizeof(path), dir, name, RECORD_FILE);
        record_path(tmp, sizeof(tmp), dir, name, RECORD_FILE ".tmp");
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, buf, (size_t) len) != len || rename(tmp, path) < 0) {
                int e = errno;
                unlink(tmp);
                return gh_err(err, e, "recording the CDI spec of MPS group '%s' in %s", name, path);
        }
        return 0;
}

int gh_mps_cdi_load(const char *dir, const char *name, struct gh_mps_cdi *c, gh_error_t *err)
{
        char path[PATH_MAX], buf[RECORD_MAX + 1];
        _cleanup_close_ int fd = -1;
        struct stat st;
        ssize_t n;

        memset(c, 0, sizeof(*c));
        if (gh_mps_name_check(name, err) < 0)
                return -1;
        record_path(path, sizeof(path), dir, name, RECORD_FILE);
        fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : gh_err(err, errno, "opening %s", path);
        /* the path in it is a file stop removes: only a record of ours counts */
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022) ||
            st.st_size > RECORD_MAX)
                return gh_err(err, 0, "%s is not a root-owned regular file of sane size; ignoring it", path);
        n = read(fd, buf, RECORD_MAX);
        if (n < 0)
                return gh_err(err, errno, "reading %s", path);
        buf[n] = '\0';
        for (char *line = buf, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                char *eq = strchr(line, '=');
                if (eq == NULL)
                        continue;
                *eq = '\0';
                const char *v = eq + 1;
                if (strcmp(line, "path") == 0)
                        snprintf(c->path, sizeof(c->path), "%s", v);
                else if (strcmp(line, "kind") == 0)
                        snprintf(c->kind, sizeof(c->kind), "%s", v);
                else if (strcmp(line, "dev") == 0)
                        c->dev = (dev_t) strtoull(v, NULL, 10);
                else if (strcmp(line, "ino") == 0)
                        c->ino = (ino_t) strtoull(v, NULL, 10);
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
