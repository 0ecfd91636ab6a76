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
#include "rootfs.h"
#include "syscalls.h"

unsigned gh_syscalls_disabled;

int gh_rootfs_open(const char *path, gh_error_t *err)
{
        int fd;

        if (path == NULL || path[0] != '/')
                return gh_err_usage(err, "rootfs '%s' must be an absolute path", path ? path : "");
        fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return gh_err(err, errno, "opening rootfs %s", path);
        return fd;
}

char *gh_fd_path(int fd)
{
        char proc[64], buf[PATH_MAX];
        ssize_t n;

        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
        n = readlink(proc, buf, sizeof(buf) - 1);
        if (n < 0)
                return strdup("?");
        buf[n] = '\0';
        return strdup(buf);
}

/* Directory fds from the root down to the current directory.  Entry 0 is the caller's root fd,
 * which we never close.  ".." pops an entry, so it can never climb above the root, and it does not
 * depend on the directory's current parent on disk (a rename race cannot move us out). */
struct walk {
        int fds[PATH_MAX / 2];
        int depth;
};

static void walk_reset(struct walk *w)
{
        while (w->depth > 0)
                close(w->fds[w->depth--]);
}

static int walk_cur(const struct walk *w) { return w->fds[w->depth]; }

/* Splits the next component off *rest.  Returns false when none is left. */
static bool next_component(char **rest, char **comp)
{
        char *p = *rest;

        while (*p == '/')
                p++;
        if (*p == '\0')
                return false;
        *comp = p;
        while (*p && *p != '/')
                p++;
        if (*p == '/')
                *p++ = '\0';
        *rest = p;
        return true;
}

static bool only_slashes(const char *p)
{
        while (*p == '/')
                p++;
        return *p == '\0';
}

/* Replaces the unresolved remainder with TARGET + "/" + rest, in buf. */
static int splice_symlink(char *buf, size_t size, const char *target, const char *rest)
{
        char tmp[PATH_MAX * 2];
        int n = snprintf(tmp, sizeof(tmp), "%s/%s", target, rest);
        if (n < 0 || (size_t) n >= sizeof(tmp) || (size_t) n >= size)
                return -ENAMETOOLONG;
        memcpy(buf, tmp, (size_t) n + 1);
        return 0;
}

/* The /proc/self/fd check (docs/threat-model.md#rule-1): belt and braces for the fallback walk.  The kernel's own
 * idea of where the fd lives must be the root or below it. */
static bool fd_is_below(int rootfd, int fd)
{
        _cleanup_free_ char *root = gh_fd_path(rootfd);
        _cleanup_free_ char *p = gh_fd_path(fd);
        size_t n;

        if (root == NULL || p == NULL || strcmp(root, "?") == 0 || strcmp(p, "?") == 0)
                return true; /* no /proc here: the walk itself is the guarantee */
        if (strcmp(root, "/") == 0)
                return true;
        n = strlen(root);
        return strncmp(root, p, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

enum { WALK_CREATE_DIRS = 1 };

/* The fallback resolver.  Returns an fd or -errno. */
static int walk_resolve(int rootfd, const char *path, int oflags, unsigned wflags, mode_t mode)
{
        struct walk w = { .depth = 0 };
        char buf[PATH_MAX * 2];
        char *rest = buf, *comp;
        int nlinks = 0, ret;
        bool nofollow_last = (oflags & O_NOFOLLOW) != 0;

        if (strlen(path) >= PATH_MAX)
                return -ENAMETOOLONG;
        memcpy(buf, path, strlen(path) + 1);
        w.fds[0] = rootfd;

        while (next_component(&rest, &comp)) {
                bool last = only_slashes(rest);
                struct stat st;
                int fd;

                if (strcmp(comp, ".") == 0 || strcmp(comp, "..") == 0) {
                        if (comp[1] == '.' && w.depth > 0)
                                close(w.fds[w.depth--]);
                        if (last)
                                break;
                        continue;
                }

                fd = openat(walk_cur(&w), comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0 && errno == ENOENT && (wflags & WALK_CREATE_DIRS)) {
                        if (mkdirat(walk_cur(&w), comp, mode) < 0 && errno != EEXIST) {
                                ret = -errno;
                                goto out;
                        }
                        fd = openat(walk_cur(&w), comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                }
                if (fd < 0) {
                        ret = -errno;
                        goto out;
                }
                if (fstat(fd, &st) < 0) {
                        ret = -errno;
                        close(fd);
                        goto out;
                }

                if (S_ISLNK(st.st_mode) && !(last && nofollow_last)) {
                        char target[PATH_MAX];
                        ssize_t n = readlinkat(fd, "", target, sizeof(target) - 1);
                        close(fd);
                        if (n < 0) {
                                ret = -errno;
                                goto out;
                        }
                        target[n] = '\0';
                        if (++nlinks > GH_MAX_SYMLINKS) {
                                ret = -ELOOP;
                                goto out;
                        }
                        if (target[0] == '/')
                                walk_reset(&w);
                        ret = splice_symlink(buf, sizeof(buf), target, rest);
                        if (ret < 0)
                                goto out;
                        rest = buf;
                        continue;
                }

                if (last) {
                        /* Hand out the node we inspected, or one reopened with the wanted flags
                         * and proven to be the same inode (a swap in between is refused). */
                        if ((oflags & O_DIRECTORY) && !S_ISDIR(st.st_mode)) {
                                close(fd);
                                ret = -ENOTDIR;
                                goto out;
                        }
                        if (!(oflags & O_PATH)) {
                                struct stat st2;
                                int fd2 = openat(walk_cur(&w), comp, (oflags & ~O_CREAT) | O_NOFOLLOW | O_CLOEXEC);
                                int saved = errno;
                                close(fd);
                                if (fd2 < 0) {
                                        ret = -saved;
                                        goto out;
                                }
                                if (fstat(fd2, &st2) < 0 || st2.st_dev != st.st_dev || st2.st_ino != st.st_ino) {
                                        close(fd2);
                                        ret = -EAGAIN;
                                        goto out;
                                }
                                fd = fd2;
                        }
                        ret = fd;
                        goto out;
                }

                if (!S_ISDIR(st.st_mode)) {
                        close(fd);
                        ret = -ENOTDIR;
                        goto out;
                }
                if (w.depth + 1 >= (int) GH_ARRAY_SIZE(w.fds)) {
                        close(fd);
                        ret = -ENAMETOOLONG;
                        goto out;
                }
                w.fds[++w.depth] = fd;
        }

        /* The path ended on a directory we already hold ("", "/", "a/..", "a/"). */
        if (w.depth == 0)
                ret = openat(rootfd, ".", (oflags & O_PATH ? O_PATH : oflags) | O_DIRECTORY | O_CLOEXEC);
        else
                ret = openat(walk_cur(&w), ".", (oflags & O_PATH ? O_PATH : oflags) | O_DIRECTORY | O_CLOEXEC);
        if (ret < 0)
                ret = -errno;
out:
        walk_reset(&w);
        return ret;
}

static int resolve_fd(int rootfd, const char *path, int oflags, unsigned wflags, mode_t mode)
{
        int fd;

        if (!(wflags & WALK_CREATE_DIRS)) {
                for (int tries = 0; tries < 8; tries++) {
                        fd = gh_openat2(rootfd, path, (uint64_t) (oflags | O_CLOEXEC), 0,
                                        RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
                        if (fd >= 0 || errno != EAGAIN)
                                break;
                }
                if (fd >= 0)
                        return fd;
                if (errno != ENOSYS && errno != EPERM)
                        return -errno;
        }
        fd = walk_resolve(rootfd, path, oflags, wflags, mode);
        if (fd >= 0 && !fd_is_below(rootfd, fd)) {
                close(fd);
                return -EXDEV;
        }
        return fd;
}

int gh_resolve(int rootfd, const char *path, int oflags, gh_error_t *err)
{
        int fd;

        if (oflags & O_CREAT)
                return gh_err(err, EINVAL, "resolving %s: O_CREAT is not allowed here", path);
        fd = resolve_fd(rootfd, path, oflags, 0, 0);
        if (fd < 0 && err == NULL) {
                errno = -fd;
                return -1;
        }
        if (fd < 0) {
                /* The same resolver serves container roots and driver roots: name the root. */
                _cleanup_free_ char *root = gh_fd_path(rootfd);
                return gh_err(err, -fd, "opening %s under %s", path, root ? root : "the root");
        }
        return fd;
}

int gh_open_regular(int rootfd, const char *path, int procfd, gh_error_t *err)
{
        _cleanup_close_ int opath = gh_resolve(rootfd, path, O_PATH, err);
        struct stat st, st2;
        char p[64];
        int fd;

        if (opath < 0)
                return -1;
        if (fstat(opath, &st) < 0)
                return gh_err(err, errno, "inspecting %s", path);
        if (!S_ISREG(st.st_mode))
                return gh_err(err, EINVAL, "%s is not a regular file", path);
        snprintf(p, sizeof(p), "%sself/fd/%d", procfd == AT_FDCWD ? "/proc/" : "", opath);
        fd = openat(procfd, p, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
                return gh_err(err, errno, "opening %s", path);
        if (fstat(fd, &st2) < 0 || st2.st_dev != st.st_dev || st2.st_ino != st.st_ino) {
                close(fd);
                return gh_err(err, EAGAIN, "%s changed while it was opened", path);
        }
        return fd;
}

int gh_mkdir_p(int rootfd, const char *path, mode_t mode, gh_error_t *err)
{
        int fd = resolve_fd(rootfd, path, O_PATH | O_DIRECTORY, 0, 0);
        if (fd >= 0)
                return fd;
        fd = walk_resolve(rootfd, path, O_PATH | O_DIRECTORY, WALK_CREATE_DIRS, mode);
        if (fd >= 0 && !fd_is_below(rootfd, fd)) {
                close(fd);
                fd = -EXDEV;
        }
        if (fd < 0)
                return gh_err(err, -fd, "creating directory %s inside the container root", path);
        return fd;
}

int gh_resolve_parent(int rootfd, const char *path, bool create, char **name, gh_error_t *err)
{
        _cleanup_free_ char *copy = NULL;
        char *slash, *base;
        int fd;

        if (path == NULL || strlen(path) >= PATH_MAX)
                return gh_err(err, ENAMETOOLONG, "container path is too long");
        copy = strdup(path);
        if (copy == NULL)
                return gh_err(err, ENOMEM, "resolving %s", path);
        /* Drop trailing slashes: "a/b/" names b. */
        for (size_t n = strlen(copy); n > 1 && copy[n - 1] == '/'; n--)
                copy[n - 1] = '\0';
        slash = strrchr(copy, '/');
        base = slash ? slash + 1 : copy;
        if (*base == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
                return gh_err(err, EINVAL, "container path '%s' does not name a file", path);
        if (slash != NULL)
                *slash = '\0';
        const char *dir = (slash == NULL || copy[0] == '\0') ? "/" : copy;

        fd = create ? gh_mkdir_p(rootfd, dir, 0755, err) : gh_resolve(rootfd, dir, O_PATH | O_DIRECTORY, err);
        if (fd < 0)
                return fd;
        *name = strdup(base);
        if (*name == NULL) {
                close(fd);
                return gh_err(err, ENOMEM, "resolving %s", path);
        }
        return fd;
}

int gh_create_file(int rootfd, const char *path, mode_t mode, gh_error_t *err)
{
        _cleanup_free_ char *name = NULL;
        _cleanup_close_ int dirfd = -1;

        dirfd = gh_resolve_parent(rootfd, path, true, &name, err);
        if (dirfd < 0)
                return -1;
        return gh_create_file_at(dirfd, name, path, mode, err);
}

int gh_create_file_at(int dirfd, const char *name, const char *path, mode_t mode, gh_error_t *err)
{
        struct stat st;
        int fd;

        for (int tries = 0; tries < 4; tries++) {
                if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
                        if (S_ISDIR(st.st_mode))
                                return gh_err(err, EISDIR, "creating file %s inside the container root", path);
                        if (S_ISLNK(st.st_mode)) {
                                /* Never write through an image's symlink: replace it. */
                                if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
                                        return gh_err(err, errno, "replacing symlink %s inside the container root",
                                                      path);
                                continue;
                        }
                        fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                        if (fd < 0)
                                return gh_err(err, errno, "opening %s inside the container root", path);
                        return fd;
                }
                if (errno != ENOENT)
                        return gh_err(err, errno, "inspecting %s inside the container root", path);
                fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
                if (fd < 0 && errno == EEXIST)
                        continue; /* raced with someone: look again */
                if (fd < 0)
                        return gh_err(err, errno, "creating file %s inside the container root", path);
                close(fd);
        }
        return gh_err(err, EAGAIN, "creating file %s inside the container root: it keeps changing", path);
}

int gh_create_symlink(int rootfd, const char *path, const char *target, gh_error_t *err)
{
        return gh_create_symlink_over(rootfd, path, target, false, err);
}

int gh_create_symlink_over(int rootfd, const char *path, const char *target, bool replace_file, gh_error_t *err)
{
        _cleanup_free_ char *name = NULL;
        _cleanup_close_ int dirfd = -1;

        dirfd = gh_resolve_parent(rootfd, path, true, &name, err);
        if (dirfd < 0)
                return -1;
        return gh_create_symlink_at(dirfd, name, path, target, replace_file, err);
}

int gh_create_symlink_at(int dirfd, const char *name, const char *path, const char *target, bool replace_file,
                         gh_error_t *err)
{
        for (int tries = 0; tries < 4; tries++) {
                struct stat st;
                char cur[PATH_MAX];
                ssize_t n;

                if (symlinkat(target, dirfd, name) == 0)
                        return 0;
                if (errno != EEXIST)
                        return gh_err(err, errno, "creating symlink %s -> %s inside the container root", path, target);
                if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                if (!S_ISLNK(st.st_mode) && !(replace_file && !S_ISDIR(st.st_mode))) {
                        gh_err(err, EEXIST, "creating symlink %s -> %s: a %s is already there", path, target,
                               S_ISDIR(st.st_mode) ? "directory" : "file");
                        return gh_err_code(err, EEXIST);
                }
                n = readlinkat(dirfd, name, cur, sizeof(cur) - 1);
                if (n >= 0) {
                        cur[n] = '\0';
                        if (strcmp(cur, target) == 0)
                                return 0;
                }
                if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
                        return gh_err(err, errno, "replacing symlink %s inside the container root", path);
        }
        return gh_err(err, EAGAIN, "creating symlink %s inside the container root: it keeps changing", path);
}
