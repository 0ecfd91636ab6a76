/* lib/core/readfile.c: the one bounded reader.  A file over the limit is an error, never a
 * truncated read; exactly the limit is fine; a FIFO or device is never opened with regular_only;
 * a missing file keeps ENOENT as the code. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "readfile.h"
#include "rootfs.h"
#include "tests/tap.h"
#include "tests/testutil.h"

static char T[64];

static int read_at(const char *path, size_t max, bool regular_only, char **buf, size_t *len, char *msg, size_t size)
{
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_close_ int root = gh_rootfs_open(T, &err);
        int r;

        *buf = NULL;
        r = gh_read_at(root, path, max, regular_only, buf, len, &err);
        snprintf(msg, size, "%s", r < 0 ? err->msg : "");
        if (r < 0 && err->code == ENOENT)
                snprintf(msg + strlen(msg), size - strlen(msg), " [ENOENT]");
        return r;
}

int main(void)
{
        char *buf, msg[512], big[5000];
        size_t len = 7;

        snprintf(T, sizeof(T), "/tmp/test-readfile.XXXXXX");
        if (mkdtemp(T) == NULL)
                return 1;
        memset(big, 'x', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        put_file(big, "%s/big", T);
        put_file("", "%s/empty", T);
        put_file("hello\n", "%s/etc/small", T);
        if (symlink("/etc/small", strcat(strcpy((char[PATH_MAX]) { 0 }, T), "/abs-link")) < 0 ||
            mkfifo(strcat(strcpy((char[PATH_MAX]) { 0 }, T), "/fifo"), 0644) < 0)
                return 1;

        ok(read_at("/etc/small", 100, true, &buf, &len, msg, sizeof(msg)) == 0 && len == 6 &&
                   strcmp(buf, "hello\n") == 0,
           "a small file is read whole, NUL-terminated");
        free(buf);
        ok(read_at("/abs-link", 100, true, &buf, &len, msg, sizeof(msg)) == 0 && strcmp(buf, "hello\n") == 0,
           "an absolute link resolves inside the root");
        free(buf);
        ok(read_at("/empty", 100, true, &buf, &len, msg, sizeof(msg)) == 0 && len == 0 && buf && buf[0] == '\0',
           "an empty file is an empty string, not NULL");
        free(buf);
        ok(read_at("/big", 4999, true, &buf, &len, msg, sizeof(msg)) == 0 && len == 4999, "exactly the limit is read");
        free(buf);
        ok(read_at("/big", 4998, true, &buf, &len, msg, sizeof(msg)) < 0 && buf == NULL && strstr(msg, "/big") &&
                   strstr(msg, "larger than 4998 bytes"),
           "one byte over the limit is an error naming the file, not a truncated read: %s", msg);
        ok(read_at("/missing", 100, true, &buf, &len, msg, sizeof(msg)) < 0 && strstr(msg, "[ENOENT]"),
           "a missing file fails with ENOENT: %s", msg);
        ok(read_at("/fifo", 100, true, &buf, &len, msg, sizeof(msg)) < 0 && !strstr(msg, "[ENOENT]"),
           "regular_only: a FIFO is refused without blocking on it: %s", msg);
        ok(read_at("/etc", 100, true, &buf, &len, msg, sizeof(msg)) < 0, "regular_only: so is a directory: %s", msg);
        ok(read_at("/etc/small", 100, false, &buf, NULL, msg, sizeof(msg)) == 0 && strcmp(buf, "hello\n") == 0,
           "len may be NULL");
        free(buf);
        sh("rm -rf '%s'", T);
        return tap_done();
}
