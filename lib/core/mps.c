/* MPS groups (mps.h, docs/mps.md): the group directory and its state files, which a container
 * joining a group, a CDI spec for it and `mps list` read.  Starting and stopping the daemon is in
 * ops/mps-daemon.c. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "file.h"
#include "log.h"
#include "mps.h"
#include "proc.h"

#define STATE_FILE "group"

const char *gh_mps_dir(const char *dir) { return dir ? dir : GH_MPS_DEFAULT_DIR; }

int gh_mps_name_check(const char *name, gh_error_t *err)
{
        size_t n = name ? strlen(name) : 0;

        if (n == 0 || n > GH_MPS_NAME_MAX)
                return gh_err_usage(err, "invalid MPS group name '%.80s': use 1-%d letters, digits, '_', '.' or '-'",
                                    name ? name : "", GH_MPS_NAME_MAX);
        if (name[0] == '.' || name[0] == '-')
                return gh_err_usage(err, "invalid MPS group name '%s': it must not start with '.' or '-'", name);
        for (size_t i = 0; i < n; i++)
                if (!isalnum((unsigned char) name[i]) && name[i] != '_' && name[i] != '.' && name[i] != '-')
                        return gh_err_usage(
                                err, "invalid MPS group name '%.80s': use only letters, digits, '_', '.' or '-'", name);
        return 0;
}

int gh_mps_parse_size(const char *s, unsigned long long *mib, gh_error_t *err)
{
        char *end;
        unsigned long long v, mult = 1;

        errno = 0;
        if (s == NULL || !isdigit((unsigned char) s[0]))
                goto bad;
        v = strtoull(s, &end, 10);
        if (errno != 0)
                goto bad;
        if (strcasecmp(end, "G") == 0 || strcasecmp(end, "GiB") == 0 || strcasecmp(end, "GB") == 0)
                mult = 1024;
        else if (strcasecmp(end, "T") == 0 || strcasecmp(end, "TiB") == 0 || strcasecmp(end, "TB") == 0)
                mult = 1024 * 1024;
        else if (*end != '\0' && strcasecmp(end, "M") != 0 && strcasecmp(end, "MiB") != 0 && strcasecmp(end, "MB") != 0)
                goto bad;
        if (v == 0 || v > (1ULL << 40) / mult)
                goto bad;
        *mib = v * mult;
        return 0;
bad:
        return gh_err_usage(err, "invalid memory size '%.40s': write it as 4G, 512M or a number of MiB", s ? s : "");
}

bool gh_mps_group_alive(const struct gh_mps_group *g)
{
        return g->pid > 0 && g->starttime != 0 && gh_proc_starttime(g->pid) == g->starttime;
}

/* ---- the group directory ---- */

void gh_mps_group_path(char *buf, size_t size, const char *dir, const char *name, const char *sub)
{
        snprintf(buf, size, "%s/%s%s%s", gh_mps_dir(dir), name, sub ? "/" : "", sub ? sub : "");
}

int gh_mps_kv_write(const char *path, const char *text, gh_error_t *err)
{
        /* No fsync: the files describe daemons, which do not outlive a reboot either. */
        return gh_write_file_at(AT_FDCWD, path, text, strlen(text), 0644, GH_WRITE_ATOMIC, NULL, err);
}

int gh_mps_kv_read(const char *path, void (*line)(const char *key, const char *value, void *data), void *data,
                   gh_error_t *err)
{
        char buf[GH_MPS_KV_MAX + 1];
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        ssize_t n;

        if (fd < 0)
                return gh_err(err, errno, "opening %s", path);
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022) ||
            st.st_size > GH_MPS_KV_MAX)
                return gh_err(err, EBADMSG, "%s is not a root-owned regular file of sane size", path);
        n = read(fd, buf, GH_MPS_KV_MAX);
        if (n < 0)
                return gh_err(err, errno, "reading %s", path);
        buf[n] = '\0';
        for (char *l = buf, *next; l && *l; l = next) {
                next = strchr(l, '\n');
                if (next)
                        *next++ = '\0';
                char *eq = strchr(l, '=');
                if (eq == NULL)
                        continue;
                *eq = '\0';
                line(l, eq + 1, data);
        }
        return 0;
}

int gh_mps_save(const char *dir, const struct gh_mps_group *g, gh_error_t *err)
{
        char path[PATH_MAX], buf[GH_MPS_KV_MAX];

        snprintf(buf, sizeof(buf),
                 "name=%s\ngpu_uuid=%s\ngpu_index=%u\nthreads=%d\nmemory_mib=%llu\npid=%d\nstarttime=%llu\n", g->name,
                 g->gpu_uuid, g->gpu_index, g->threads, g->memory_mib, (int) g->pid, g->starttime);
        gh_mps_group_path(path, sizeof(path), dir, g->name, STATE_FILE);
        if (gh_mps_kv_write(path, buf, err) < 0)
                return gh_err_wrap(err, "the MPS group state");
        return 0;
}

static void state_line(const char *key, const char *v, void *data)
{
        struct gh_mps_group *g = data;

        if (strcmp(key, "name") == 0)
                snprintf(g->name, sizeof(g->name), "%s", v);
        else if (strcmp(key, "gpu_uuid") == 0)
                snprintf(g->gpu_uuid, sizeof(g->gpu_uuid), "%s", v);
        else if (strcmp(key, "gpu_index") == 0)
                g->gpu_index = (unsigned) strtoul(v, NULL, 10);
        else if (strcmp(key, "threads") == 0)
                g->threads = (int) strtol(v, NULL, 10);
        else if (strcmp(key, "memory_mib") == 0)
                g->memory_mib = strtoull(v, NULL, 10);
        else if (strcmp(key, "pid") == 0 && gh_parse_pid(v, &g->pid) < 0)
                g->pid = 0; /* not a process id: the group reads as not running */
        else if (strcmp(key, "starttime") == 0)
                g->starttime = strtoull(v, NULL, 10);
}

int gh_mps_load(const char *dir, const char *name, struct gh_mps_group *g, gh_error_t *err)
{
        char path[PATH_MAX];

        if (gh_mps_name_check(name, err) < 0)
                return -1;
        memset(g, 0, sizeof(*g));
        gh_mps_group_path(path, sizeof(path), dir, name, STATE_FILE);
        _cleanup_error_ gh_error_t e = NULL;
        if (gh_mps_kv_read(path, state_line, g, &e) < 0) {
                if (e->code == ENOENT) {
                        gh_err(err, 0, "no MPS group '%s' (see 'gpu-cli mps list')", name);
                        return gh_err_code(err, ENOENT);
                }
                if (e->code == EBADMSG)
                        return gh_err(err, 0, "the MPS group state %s; stop the group with 'gpu-cli mps stop %s'",
                                      e->msg, name);
                return gh_err(err, 0, "the MPS group state: %s", e->msg);
        }
        if (strcmp(g->name, name) != 0 || g->gpu_uuid[0] == '\0')
                return gh_err(err, 0, "the MPS group state %s is malformed; stop the group with 'gpu-cli mps stop %s'",
                              path, name);
        g->alive = gh_mps_group_alive(g);
        return 0;
}

int gh_mps_load_running(const char *dir, const char *name, struct gh_mps_group *g, gh_error_t *err)
{
        if (gh_mps_load(dir, name, g, err) < 0)
                return -1;
        if (!g->alive)
                return gh_err(err, 0,
                              "MPS group '%s' is not running (its daemon %d is gone); restart it: gpu-cli mps stop %s, "
                              "then mps start",
                              g->name, (int) g->pid, g->name);
        return 0;
}

static int cmp_group(const void *a, const void *b)
{
        return strcmp(((const struct gh_mps_group *) a)->name, ((const struct gh_mps_group *) b)->name);
}

int gh_mps_list(const char *dir, struct gh_mps_group **groups, size_t *n, gh_error_t *err)
{
        _cleanup_closedir_ DIR *d = NULL;
        struct gh_mps_group *v = NULL;
        size_t k = 0, cap = 0;
        struct dirent *de;

        *groups = NULL;
        *n = 0;
        d = opendir(gh_mps_dir(dir));
        if (d == NULL)
                return errno == ENOENT ? 0 : gh_err(err, errno, "reading %s", gh_mps_dir(dir));
        while ((de = readdir(d)) != NULL) {
                _cleanup_error_ gh_error_t e = NULL;
                struct gh_mps_group g;
                if (de->d_name[0] == '.' || gh_mps_name_check(de->d_name, &e) < 0)
                        continue;
                if (gh_mps_load(dir, de->d_name, &g, &e) < 0) {
                        gh_warn("%s", e->msg);
                        continue;
                }
                if (k == cap) {
                        struct gh_mps_group *grown = realloc(v, (cap = cap ? cap * 2 : 8) * sizeof(*v));
                        if (grown == NULL) {
                                free(v);
                                return gh_err(err, ENOMEM, "listing MPS groups");
                        }
                        v = grown;
                }
                v[k++] = g;
        }
        if (k)
                qsort(v, k, sizeof(*v), cmp_group);
        *groups = v;
        *n = k;
        return 0;
}

/* ---- talking to the daemon ---- */

/* ---- start and stop ---- */
