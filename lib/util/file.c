/* The one file writer (file.h).  In the spirit of systemd's write_string_file_at(): the caller says
 * what it needs (atomic, durable, directories made, owner kept) and the rules for temporary names,
 * fsync and modes live here. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "file.h"
#include "proc.h"

int gh_write_all(int fd, const void *data, size_t len)
{
        const char *p = data;

        while (len > 0) {
                ssize_t n = write(fd, p, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -1;
                if (n == 0) {
                        errno = EIO;
                        return -1;
                }
                p += n;
                len -= (size_t) n;
        }
        return 0;
}

int gh_mkdir_p_trusted(int dirfd, const char *path, mode_t mode, gh_error_t *err)
{
        char buf[PATH_MAX];
        size_t len = strlen(path);

        if (len >= sizeof(buf))
                return gh_err(err, ENAMETOOLONG, "creating %s", path);
        memcpy(buf, path, len + 1);
        for (char *p = buf + 1;; p++) {
                if (*p != '/' && *p != '\0')
                        continue;
                char c = *p;
                *p = '\0';
                if (mkdirat(dirfd, buf, mode) == 0) {
                        /* the umask must not narrow it: a 0700 /etc/cdi hides specs from readers */
                        if (fchmodat(dirfd, buf, mode, 0) < 0)
                                return gh_err(err, errno, "creating %s", buf);
                } else if (errno != EEXIST) {
                        return gh_err(err, errno, "creating %s", buf);
                }
                *p = c;
                while (*p == '/')
                        p++;
                if (*p == '\0')
                        return 0;
        }
}

/* The directory that holds path's last component, opened for the rename and the directory fsync,
 * and that component. */
static int open_parent(int dirfd, const char *path, unsigned flags, char **dir, const char **base, gh_error_t *err)
{
        const char *slash = strrchr(path, '/');
        int fd;

        *dir = NULL;
        *base = slash ? slash + 1 : path;
        if (**base == '\0' || strcmp(*base, ".") == 0 || strcmp(*base, "..") == 0)
                return gh_err_usage(err, "'%s' names a directory; give a file name", path);
        *dir = slash == NULL ? strdup(".") : slash == path ? strdup("/") : strndup(path, (size_t) (slash - path));
        if (*dir == NULL)
                return gh_err(err, ENOMEM, "writing %s", path);
        if ((flags & GH_WRITE_MKDIR_0755) && gh_mkdir_p_trusted(dirfd, *dir, 0755, err) < 0)
                return gh_err_wrap(err, "writing %s", path);
        fd = openat(dirfd, *dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return gh_err(err, errno, "writing %s: opening its directory", path);
        return fd;
}

static unsigned random32(void)
{
        unsigned r;

        if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
                r = (unsigned) time(NULL) ^ (unsigned) clock() ^ (unsigned) getpid() << 16;
        return r;
}

/* Creates the file the data goes into: the target (not ATOMIC) or a fresh temporary name. */
static int create(int dfd, const char *path, const char *base, unsigned flags, mode_t mode, char *tmp, size_t tsize,
                  gh_error_t *err)
{
        int fd = -1;

        if (!(flags & GH_WRITE_ATOMIC)) {
                fd = openat(dfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
                return fd >= 0 ? fd : gh_err(err, errno, "creating %s", path);
        }
        for (int attempt = 0; fd < 0 && attempt < 8; attempt++) {
                if (snprintf(tmp, tsize, ".%s.%d.%08x", base, (int) getpid(), random32()) >= (int) tsize)
                        return gh_err(err, ENAMETOOLONG, "writing %s: no room for a temporary name", path);
                fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
                if (fd < 0 && errno != EEXIST)
                        break;
        }
        return fd >= 0 ? fd : gh_err(err, errno, "writing %s: creating a temporary file next to it", path);
}

int gh_write_file_at(int dirfd, const char *path, const void *data, size_t len, mode_t mode, unsigned flags,
                     struct stat *st, gh_error_t *err)
{
        _cleanup_free_ char *dir = NULL;
        _cleanup_close_ int dfd = -1, fd = -1;
        const char *base;
        char tmp[NAME_MAX + 1] = "";
        struct stat old;
        bool keep = false;
        int e;

        dfd = open_parent(dirfd, path, flags, &dir, &base, err);
        if (dfd < 0)
                return -1;
        if ((flags & GH_WRITE_KEEP_OWNER) && fstatat(dfd, base, &old, 0) == 0 && S_ISREG(old.st_mode)) {
                keep = true;
                mode = old.st_mode & 07777;
        }
        fd = create(dfd, path, base, flags, mode, tmp, sizeof(tmp), err);
        if (fd < 0)
                return -1;
        /* fchmod: the umask must not narrow the mode (a 0600 ld.so.cache breaks every user). */
        if ((keep && fchown(fd, old.st_uid, old.st_gid) < 0) || fchmod(fd, mode) < 0 ||
            gh_write_all(fd, data, len) < 0 || ((flags & GH_WRITE_SYNC) && fsync(fd) < 0) ||
            (st != NULL && fstat(fd, st) < 0) || close(TAKE_FD(fd)) < 0 ||
            ((flags & GH_WRITE_ATOMIC) && renameat(dfd, tmp, dfd, base) < 0))
                goto fail;
        if ((flags & GH_WRITE_SYNC) && fsync(dfd) < 0)
                return gh_err(err, errno, "writing %s: syncing its directory", path);
        return 0;
fail:
        e = errno ? errno : EIO;
        unlinkat(dfd, (flags & GH_WRITE_ATOMIC) ? tmp : base, 0);
        return gh_err(err, e, "writing %s", path);
}

int gh_write_temp_writer(const char *name, pid_t *pid)
{
        const char *last = strrchr(name, '.'), *p;
        char digits[16];
        size_t n;

        if (name[0] != '.' || last == NULL || last == name || strlen(last + 1) != 8 ||
            strspn(last + 1, "0123456789abcdef") != 8)
                return -1;
        for (p = last; p > name + 1 && p[-1] != '.'; p--)
                ;
        if (p <= name + 2) /* no ".NAME." before the pid */
                return -1;
        n = (size_t) (last - p);
        if (n == 0 || n >= sizeof(digits))
                return -1;
        memcpy(digits, p, n);
        digits[n] = '\0';
        return gh_parse_pid(digits, pid);
}

int gh_beside_self(const char *name, char *buf, size_t size)
{
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        char *slash;

        if (n <= 0)
                return -1;
        self[n] = '\0';
        slash = strrchr(self, '/');
        if (slash == NULL || snprintf(buf, size, "%.*s/%s", (int) (slash - self), self, name) >= (int) size)
                return -1;
        return access(buf, X_OK) == 0 ? 0 : -1;
}
