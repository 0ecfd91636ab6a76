/* The in-root resolver: every path inside a container root filesystem is opened relative to an fd
 * of that root, never as a string.  Symlinks are resolved as if the root were "/", ".." stops at
 * the root, magic links (/proc/PID/root, /proc/self/fd/N) are never followed.
 *
 * openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS) does the work when the kernel has it; otherwise a
 * component walk with O_NOFOLLOW does the same, readlink()ing every symlink and re-walking its
 * target from the root (absolute) or the current directory (relative), at most 40 times. */
#ifndef GH_ROOTFS_H
#define GH_ROOTFS_H

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"

#define GH_MAX_SYMLINKS 40

/* Opens a trusted host directory (the rootfs path a runtime gave us) as O_PATH|O_DIRECTORY. */
int gh_rootfs_open(const char *path, gh_error_t *err);

/* Opens PATH inside the root.  oflags: O_PATH, O_RDONLY, O_WRONLY, O_RDWR, O_DIRECTORY and
 * O_NOFOLLOW (the last component is not followed; with O_PATH the link itself is returned).
 * O_CREAT is refused: use the create helpers.  O_CLOEXEC is always added.  err NULL: a probe
 * whose failure needs no message (-1 with errno; the root's path is not looked up for one). */
int gh_resolve(int rootfd, const char *path, int oflags, gh_error_t *err);

/* mkdir -p inside the root, one component at a time; returns an O_PATH|O_DIRECTORY fd. */
int gh_mkdir_p(int rootfd, const char *path, mode_t mode, gh_error_t *err);

/* Opens the parent directory of PATH (created when create is true) and returns its O_PATH fd; the
 * last component is returned in *name (caller frees).  Refuses "", "/", and a last "." or "..". */
int gh_resolve_parent(int rootfd, const char *path, bool create, char **name, gh_error_t *err);

/* Makes sure PATH is a regular file (an empty one is created; a symlink there is replaced, never
 * followed) and returns an O_PATH fd of it: a bind-mount target for a file. */
int gh_create_file(int rootfd, const char *path, mode_t mode, gh_error_t *err);

/* Creates the symlink PATH -> TARGET.  TARGET is stored as given and never resolved.  An existing
 * symlink is replaced; an existing file or directory is an error with code EEXIST. */
int gh_create_symlink(int rootfd, const char *path, const char *target, gh_error_t *err);
/* The same; with replace_file, anything but a directory at PATH is replaced too (`ln -sf`: a bind
 * mount there is not, unlink fails with EBUSY). */
int gh_create_symlink_over(int rootfd, const char *path, const char *target, bool replace_file, gh_error_t *err);

/* The same two in a directory the caller resolved already: NAME is a single component of the
 * directory fd DIRFD, PATH the whole container path (messages only). */
int gh_create_file_at(int dirfd, const char *name, const char *path, mode_t mode, gh_error_t *err);
int gh_create_symlink_at(int dirfd, const char *name, const char *path, const char *target, bool replace_file,
                         gh_error_t *err);

/* Opens PATH inside the root for reading only if it is a regular file, without ever opening
 * anything else: the path is resolved O_PATH, checked with fstat, and that very inode reopened
 * through procfs (procfd: an fd of a procfs of our pid namespace, or AT_FDCWD for "/proc").  A
 * device node or FIFO planted by an image is never opened.  Errors: ENOENT when absent, EINVAL
 * when it is not a regular file. */
int gh_open_regular(int rootfd, const char *path, int procfd, gh_error_t *err);

/* Returns the absolute path (as the kernel sees it from here) of an fd, for messages only. */
char *gh_fd_path(int fd);

#endif
