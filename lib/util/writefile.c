/* The one atomic file writer (writefile.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "writefile.h"

int gh_write_file_atomic(int dirfd, const char *name, const void *buf, size_t len, mode_t mode, gh_error_t *err)
{
        char tmp[300];
        const char *p = buf;
        _cleanup_close_ int fd = -1;
        int e = 0;

        if (name[0] == '\0' || strchr(name, '/') != NULL || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
                return gh_err(err, EINVAL, "writing '%s': not a file name", name);
        if (snprintf(tmp, sizeof(tmp), ".%s.tmp.%d", name, (int) getpid()) >= (int) sizeof(tmp))
                return gh_err(err, ENAMETOOLONG, "writing %s", name);
        fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 07777);
        if (fd < 0 && errno == EEXIST) {
                /* a temporary left by a writer that died with this pid before is ours to replace */
                unlinkat(dirfd, tmp, 0);
                fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 07777);
        }
        if (fd < 0)
                return gh_err(err, errno, "writing %s", name);
        if (fchmod(fd, mode & 07777) < 0)
                e = errno;
        while (e == 0 && len > 0) {
                ssize_t n = write(fd, p, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        e = n < 0 ? errno : EIO;
                        break;
                }
                p += n;
                len -= (size_t) n;
        }
        if (e == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
                e = errno;
        if (e != 0) {
                unlinkat(dirfd, tmp, 0);
                return gh_err(err, e, "writing %s", name);
        }
        return 0;
}
