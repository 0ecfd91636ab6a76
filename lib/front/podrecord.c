/* Container records (podrecord.h): the pod a CRI runtime named in a container's annotations, kept
 * from the container's start until its init is gone. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "container.h"
#include "file.h"
#include "log.h"
#include "podrecord.h"
#include "proc.h"
#include "utf8.h"

void gh_pod_clean(char *dst, size_t size, const char *src, size_t len) { gh_utf8_clean(dst, size, src, len); }

/* The first of the keys that is a non-empty string. */
static bool take(const struct gh_json *d, int annotations, const char *k1, const char *k2, char *dst, size_t size)
{
        const char *keys[] = { k1, k2 };

        for (size_t i = 0; i < GH_ARRAY_SIZE(keys); i++) {
                int v = gh_json_get(d, annotations, keys[i]);
                if (v >= 0 && d->v[v].type == GH_JSON_STRING && d->v[v].str[0] != '\0') {
                        gh_pod_clean(dst, size, d->v[v].str, strlen(d->v[v].str));
                        return true;
                }
        }
        return false;
}

bool gh_pod_from_annotations(const struct gh_json *d, int annotations, struct gh_pod *pod)
{
        bool any = false;

        memset(pod, 0, sizeof(*pod));
        if (d == NULL || annotations < 0 || (size_t) annotations >= d->n || d->v[annotations].type != GH_JSON_OBJECT)
                return false;
        any |= take(d, annotations, GH_ANNOTATION_CRI_POD_NAME, GH_ANNOTATION_CRIO_POD_NAME, pod->name,
                    sizeof(pod->name));
        any |= take(d, annotations, GH_ANNOTATION_CRI_POD_NAMESPACE, GH_ANNOTATION_CRIO_POD_NAMESPACE, pod->namespace_,
                    sizeof(pod->namespace_));
        any |= take(d, annotations, GH_ANNOTATION_CRI_CONTAINER_NAME, GH_ANNOTATION_CRIO_CONTAINER_NAME, pod->container,
                    sizeof(pod->container));
        take(d, annotations, GH_ANNOTATION_CRI_POD_UID, GH_ANNOTATION_CRIO_POD_UID, pod->uid, sizeof(pod->uid));
        return any;
}

/* Ours: owned by our uid, a directory.  The writer (tighten) makes it 0700; a reader refuses one
 * that others may write (they could have put files in it), and changes nothing. */
static int check_dir(int fd, const char *dir, bool tighten, gh_error_t *err)
{
        struct stat st;

        if (fstat(fd, &st) < 0)
                return gh_err(err, errno, "container records: %s", dir);
        if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid())
                return gh_err(err, EPERM, "container records: %s is not a directory of uid %d; remove it", dir,
                              (int) geteuid());
        if (tighten && (st.st_mode & 077) != 0) {
                char self[64];
                snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
                if (chmod(self, 0700) < 0)
                        return gh_err(err, errno, "container records: tightening %s to 0700", dir);
        } else if (!tighten && (st.st_mode & 022) != 0) {
                return gh_err(err, EPERM, "container records: %s may be written by others (mode %04o); chmod 0700 it",
                              dir, (unsigned) (st.st_mode & 07777));
        }
        return 0;
}

int gh_record_dir_open(const char *dir, bool create, gh_error_t *err)
{
        _cleanup_close_ int fd = -1;

        if (dir[0] != '/')
                return gh_err(err, EINVAL, "container records: '%s' is not an absolute path", dir);
        fd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT && create) {
                char parent[4096];
                const char *slash = strrchr(dir, '/');
                snprintf(parent, sizeof(parent), "%.*s", slash == dir ? 1 : (int) (slash - dir), dir);
                /* the configuration's path (trusted, like every default under /run); the last
                 * directory is root's alone */
                if (gh_mkdir_p_trusted(AT_FDCWD, parent, 0755, err) < 0)
                        return -1;
                if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                        return gh_err(err, errno, "container records: creating %s", dir);
                fd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        if (fd < 0)
                return gh_err(err, errno, "container records: opening %s", dir);
        if (check_dir(fd, dir, create, err) < 0)
                return -1;
        return TAKE_FD(fd);
}

static int format(const struct gh_record *r, char *buf, size_t size)
{
        return snprintf(buf, size,
                        "gpu-hook-record=1\nid=%s\npid=%d\nstarttime=%llu\npod=%s\nnamespace=%s\ncontainer=%s\n"
                        "pod_uid=%s\n",
                        r->id, (int) r->pid, r->starttime, r->pod.name, r->pod.namespace_, r->pod.container,
                        r->pod.uid);
}

/* An estimate of the directory's entries without reading it: tmpfs (where /run is) counts 20
 * bytes of st_size per entry; on other file systems it over-counts, which only collects sooner. */
static size_t entries_estimate(int dirfd)
{
        struct stat st;
        return fstat(dirfd, &st) == 0 && st.st_size > 0 ? (size_t) st.st_size / 20 : 0;
}

int gh_record_save(const char *dir, const struct gh_record *r, gh_error_t *err)
{
        _cleanup_close_ int dirfd = -1;
        char buf[GH_RECORD_FILE_MAX];
        int len;

        if (!gh_container_id_valid(r->id))
                return gh_err(err, EINVAL, "container records: '%.64s' is not a container id", r->id);
        len = format(r, buf, sizeof(buf));
        if (len < 0 || (size_t) len >= sizeof(buf))
                return gh_err(err, E2BIG, "container records: the record of %s is too long", r->id);
        dirfd = gh_record_dir_open(dir, true, err);
        if (dirfd < 0)
                return -1;
        if (entries_estimate(dirfd) > GH_RECORD_COLLECT_AT) {
                long left = gh_record_collect(dirfd, NULL, NULL, err);
                if (left < 0)
                        return -1;
                if (left >= GH_RECORD_MAX)
                        return gh_err(err, ENOSPC,
                                      "container records: %s holds %ld records of running containers; "
                                      "not recording %s",
                                      dir, left, r->id);
        }
        /* no fsync: /run does not outlive a reboot, and neither do the containers */
        if (gh_write_file_at(dirfd, r->id, buf, (size_t) len, 0600, GH_WRITE_ATOMIC, NULL, err) < 0)
                return gh_err_wrap(err, "container records: %s", dir);
        return 0;
}

static unsigned long long number(const char *v, unsigned long long max, bool *ok)
{
        char *end;
        unsigned long long n;

        errno = 0;
        n = strtoull(v, &end, 10);
        if (*v < '0' || *v > '9' || *end != '\0' || errno != 0 || n > max)
                *ok = false;
        return n;
}

int gh_record_load(int dirfd, const char *id, struct gh_record *r, gh_error_t *err)
{
        char buf[GH_RECORD_FILE_MAX + 1];
        _cleanup_close_ int fd = -1;
        struct stat st;
        bool ok = true, version = false;
        ssize_t n;

        memset(r, 0, sizeof(*r));
        if (!gh_container_id_valid(id))
                return 0;
        fd = openat(dirfd, id, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : gh_err(err, errno, "container record %s", id);
        if (fstat(fd, &st) < 0)
                return gh_err(err, errno, "container record %s", id);
        if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022) != 0 ||
            st.st_size > GH_RECORD_FILE_MAX)
                return gh_err(err, EBADMSG, "container record %s: not a record of gpu-hook's; remove it", id);
        n = read(fd, buf, GH_RECORD_FILE_MAX);
        if (n < 0)
                return gh_err(err, errno, "container record %s", id);
        buf[n] = '\0';
        for (char *line = buf, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                char *eq = strchr(line, '=');
                if (eq == NULL)
                        continue;
                *eq = '\0';
                const char *k = line, *v = eq + 1;
                if (strcmp(k, "gpu-hook-record") == 0)
                        version = strcmp(v, "1") == 0;
                else if (strcmp(k, "id") == 0)
                        gh_pod_clean(r->id, sizeof(r->id), v, strlen(v));
                else if (strcmp(k, "pid") == 0)
                        ok = ok && gh_parse_pid(v, &r->pid) == 0;
                else if (strcmp(k, "starttime") == 0)
                        r->starttime = number(v, ~0ULL, &ok);
                else if (strcmp(k, "pod") == 0)
                        gh_pod_clean(r->pod.name, sizeof(r->pod.name), v, strlen(v));
                else if (strcmp(k, "namespace") == 0)
                        gh_pod_clean(r->pod.namespace_, sizeof(r->pod.namespace_), v, strlen(v));
                else if (strcmp(k, "container") == 0)
                        gh_pod_clean(r->pod.container, sizeof(r->pod.container), v, strlen(v));
                else if (strcmp(k, "pod_uid") == 0)
                        gh_pod_clean(r->pod.uid, sizeof(r->pod.uid), v, strlen(v));
        }
        if (!version || !ok || r->pid <= 0 || strcmp(r->id, id) != 0)
                return gh_err(err, EBADMSG, "container record %s: malformed; remove it", id);
        return 1;
}

int gh_record_remove(int dirfd, const char *id, gh_error_t *err)
{
        if (!gh_container_id_valid(id))
                return gh_err(err, EINVAL, "container records: '%.64s' is not a container id", id);
        if (unlinkat(dirfd, id, 0) < 0 && errno != ENOENT)
                return gh_err(err, errno, "removing the container record %s", id);
        return 0;
}

bool gh_record_running(const struct gh_record *r)
{
        return r->pid > 0 && r->starttime != 0 && gh_proc_starttime(r->pid) == r->starttime;
}

long gh_record_collect(int dir, bool (*keep)(const char *id, void *data), void *data, gh_error_t *err)
{
        _cleanup_close_ int fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        long left = 0;

        if (fd < 0 || (d = fdopendir(fd)) == NULL)
                return gh_err(err, errno, "container records: reading the directory");
        fd = -1; /* the DIR owns it */
        while ((de = readdir(d)) != NULL) {
                _cleanup_error_ gh_error_t e = NULL;
                struct gh_record r;
                if (de->d_name[0] == '.') {
                        /* a writer's temporary (util/file.h) whose writer is gone */
                        pid_t pid;
                        if (gh_write_temp_writer(de->d_name, &pid) == 0 && kill(pid, 0) < 0 && errno == ESRCH)
                                unlinkat(dirfd(d), de->d_name, 0);
                        continue;
                }
                int got = gh_record_load(dirfd(d), de->d_name, &r, &e);
                if (got < 0 && e && e->code != EBADMSG)
                        continue; /* gone meanwhile, or unreadable: not ours to judge */
                if (got == 1 && (gh_record_running(&r) || (keep && keep(r.id, data)))) {
                        left++;
                        continue;
                }
                /* the container's init is gone (or the file is not a record): nothing needs it */
                if (got == 1 || e != NULL) {
                        gh_debug("container records: removing %s", de->d_name);
                        unlinkat(dirfd(d), de->d_name, 0);
                }
        }
        return left;
}
