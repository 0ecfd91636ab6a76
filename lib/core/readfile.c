#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "readfile.h"
#include "rootfs.h"

int gh_read_bounded(int fd, size_t max, char **buf, size_t *len, const char *what, gh_error_t *err)
{
        _cleanup_free_ char *b = NULL;
        size_t cap = 0, n = 0;

        for (;;) {
                if (n == cap) {
                        size_t ncap = cap ? cap * 2 : 4096;
                        char *nb;
                        /* One byte past the limit tells "too large" from "exactly max". */
                        if (ncap > max + 1)
                                ncap = max + 1;
                        if (ncap <= cap)
                                return gh_err(err, 0, "%s is larger than %zu bytes; refusing to read it", what, max);
                        nb = realloc(b, ncap + 1);
                        if (nb == NULL)
                                return gh_err(err, ENOMEM, "reading %s", what);
                        b = nb;
                        cap = ncap;
                }
                ssize_t r = read(fd, b + n, cap - n);
                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        return gh_err(err, errno, "reading %s", what);
                }
                if (r == 0)
                        break;
                n += (size_t) r;
                if (n > max)
                        return gh_err(err, 0, "%s is larger than %zu bytes; refusing to read it", what, max);
        }
        if (b == NULL && (b = malloc(1)) == NULL)
                return gh_err(err, ENOMEM, "reading %s", what);
        b[n] = '\0';
        *buf = steal_pointer(&b);
        *len = n;
        return 0;
}

int gh_read_at(int rootfd, const char *path, size_t max, bool regular_only, char **buf, size_t *len, gh_error_t *err)
{
        _cleanup_close_ int fd =
                regular_only ? gh_open_regular(rootfd, path, AT_FDCWD, err) : gh_resolve(rootfd, path, O_RDONLY, err);
        size_t n;

        if (fd < 0)
                return -1;
        if (gh_read_bounded(fd, max, buf, &n, path, err) < 0)
                return -1;
        if (len)
                *len = n;
        return 0;
}
