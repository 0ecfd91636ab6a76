/* lib/util/file.c: the one writer.  What every caller relies on: the mode despite the umask, the
 * whole file or the old one, no temporary file left, no write through a link, directories made
 * only when asked, an administrator's owner and mode kept. */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "file.h"
#include "tap.h"
#include "testutil.h"

static char T[] = "/tmp/gh-file-XXXXXX";

static char *slurp(const char *rel)
{
        static char buf[256];
        char path[512];
        FILE *f;
        size_t n;

        snprintf(path, sizeof(path), "%s/%s", T, rel);
        f = fopen(path, "r");
        if (f == NULL)
                return NULL;
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        return buf;
}

static mode_t mode_of(int dirfd, const char *rel)
{
        struct stat st;
        return fstatat(dirfd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 ? st.st_mode : 0;
}

/* Files whose name starts with a dot in dir: the writer's temporary names. */
static int hidden_files(const char *dir) { return sh("ls -A '%s/%s' | grep -q '^\\.'", T, dir) == 0; }

int main(void)
{
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_close_ int dirfd = -1;
        struct stat st;

        if (mkdtemp(T) == NULL)
                return 1;
        dirfd = open(T, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0 || mkdirat(dirfd, "a", 0755) < 0)
                return 1;

        umask(077);
        ok(gh_write_file_at(dirfd, "a/f", "one\n", 4, 0644, GH_WRITE_ATOMIC, &st, &err) == 0, "atomic write");
        is_str(slurp("a/f"), "one\n", "the file has the data");
        is_int(mode_of(dirfd, "a/f") & 07777, 0644, "mode 0644 despite umask 077");
        ino_t written = st.st_ino;
        ok(fstatat(dirfd, "a/f", &st, 0) == 0 && st.st_ino == written, "*st is the file written (its inode)");
        ok(!hidden_files("a"), "no temporary file left");
        ok(gh_write_file_at(dirfd, "a/f", "two\n", 4, 0644, GH_WRITE_ATOMIC | GH_WRITE_SYNC, NULL, &err) == 0 &&
                   strcmp(slurp("a/f"), "two\n") == 0,
           "an atomic, synced write replaces the file");

        /* A link at the name is replaced, never followed. */
        ok(symlinkat("../victim", dirfd, "a/link") == 0, "a symlink at the name");
        ok(gh_write_file_at(dirfd, "a/link", "new\n", 4, 0644, GH_WRITE_ATOMIC, NULL, &err) == 0, "write over it");
        ok(S_ISREG(mode_of(dirfd, "a/link")) && mode_of(dirfd, "victim") == 0,
           "the link became a file; its target was not created");

        /* Failing keeps the old file and leaves nothing: a non-empty directory cannot be renamed over. */
        ok(mkdirat(dirfd, "a/dir", 0755) == 0 && mkdirat(dirfd, "a/dir/x", 0755) == 0, "a directory at the name");
        int r = gh_write_file_at(dirfd, "a/dir", "x", 1, 0644, GH_WRITE_ATOMIC, NULL, &err);
        ok(r < 0 && err && strstr(err->msg, "a/dir"), "writing over a directory fails, naming it (%s)",
           err ? err->msg : "no error");
        gh_error_free(&err);
        ok(S_ISDIR(mode_of(dirfd, "a/dir")) && !hidden_files("a"), "... the directory stays, no temporary file left");
        r = gh_write_file_at(dirfd, "a/", "x", 1, 0644, GH_WRITE_ATOMIC, NULL, &err);
        ok(r < 0 && gh_error_kind(err) == GH_ERR_USAGE, "a path that names a directory is a usage error (%s)",
           err ? err->msg : "no error");
        gh_error_free(&err);

        /* Directories only when asked. */
        ok(gh_write_file_at(dirfd, "b/c/f", "x", 1, 0644, GH_WRITE_ATOMIC, NULL, &err) < 0 && err->code == ENOENT,
           "a missing directory is an error without MKDIR_0755");
        gh_error_free(&err);
        ok(gh_write_file_at(dirfd, "b/c/f", "x", 1, 0644, GH_WRITE_ATOMIC | GH_WRITE_MKDIR_0755, NULL, &err) == 0,
           "MKDIR_0755 makes b/c");
        is_int(mode_of(dirfd, "b/c") & 07777, 0755, "... mode 0755 despite umask 077");

        /* An administrator's mode and owner carry over. */
        bool root = geteuid() == 0;
        ok(gh_write_file_at(dirfd, "a/conf", "old", 3, 0600, GH_WRITE_ATOMIC, NULL, &err) == 0 &&
                   (!root || fchownat(dirfd, "a/conf", 65534, 65534, 0) == 0),
           "a 0600 file (owned by 65534 when we are root)");
        ok(gh_write_file_at(dirfd, "a/conf", "new", 3, 0644, GH_WRITE_ATOMIC | GH_WRITE_KEEP_OWNER, NULL, &err) == 0,
           "KEEP_OWNER write");
        ok(fstatat(dirfd, "a/conf", &st, 0) == 0 && (st.st_mode & 07777) == 0600 &&
                   (!root || (st.st_uid == 65534 && st.st_gid == 65534)),
           "the new file is 0600 and (as root) owned by 65534");
        ok(gh_write_file_at(dirfd, "a/conf", "again", 5, 0644, GH_WRITE_ATOMIC, NULL, &err) == 0 &&
                   (mode_of(dirfd, "a/conf") & 07777) == 0644,
           "without KEEP_OWNER the given mode wins");

        /* Not atomic: a new file only. */
        ok(gh_write_file_at(dirfd, "a/new", "n", 1, 0444, 0, NULL, &err) == 0 &&
                   (mode_of(dirfd, "a/new") & 07777) == 0444,
           "a new file, mode 0444");
        ok(gh_write_file_at(dirfd, "a/new", "n", 1, 0444, 0, NULL, &err) < 0 && err->code == EEXIST,
           "not atomic: an existing file is EEXIST, not replaced");
        gh_error_free(&err);

        ok(gh_mkdir_p_trusted(AT_FDCWD, T, 0755, &err) == 0, "mkdir -p of an existing directory");

        /* The temporary names' writer, for a directory's owner that removes a killed writer's. */
        pid_t pid = 0;
        ok(gh_write_temp_writer(".abc.1234.0badf00d", &pid) == 0 && pid == 1234, "'.abc.1234.0badf00d' is PID 1234's");
        ok(gh_write_temp_writer(".a.b.77.deadbeef", &pid) == 0 && pid == 77, "a name with dots: the last number");
        ok(gh_write_temp_writer("abc.1234.0badf00d", &pid) < 0, "not hidden: not a temporary");
        ok(gh_write_temp_writer("..1234.0badf00d", &pid) < 0, "no name before the pid");
        ok(gh_write_temp_writer(".abc.12x4.0badf00d", &pid) < 0 && gh_write_temp_writer(".abc.-1.0badf00d", &pid) < 0 &&
                   gh_write_temp_writer(".abc.0.0badf00d", &pid) < 0,
           "a pid that is not one");
        ok(gh_write_temp_writer(".abc.1234.0badf0", &pid) < 0 && gh_write_temp_writer(".abc.1234.0BADF00D", &pid) < 0,
           "a suffix that is not the writer's (8 lower-case hex digits)");
        sh("rm -rf '%s'", T);
        /* gh_beside_self: a program in this test's own directory (the build tree's tests/unit). */
        {
                char self[4096], buf[4096], *slash;
                ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
                ok(n > 0, "this test's own path");
                self[n > 0 ? n : 0] = '\0';
                slash = strrchr(self, '/');
                ok(slash && gh_beside_self(slash + 1, buf, sizeof(buf)) == 0 && strcmp(buf, self) == 0,
                   "beside self: this program is found by its name (%s)", buf);
                ok(gh_beside_self("no-such-program", buf, sizeof(buf)) < 0, "beside self: a name not there is -1");
                ok(gh_beside_self(slash ? slash + 1 : "x", buf, 8) < 0, "beside self: a buffer too small is -1");
        }
        return tap_done();
}
