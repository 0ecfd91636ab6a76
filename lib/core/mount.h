/* Mount primitives for injection into a container's mount namespace.
 *
 * Sources are opened on the host side, before entering the container's namespace: with the new
 * mount API a source is a detached clone (open_tree(OPEN_TREE_CLONE)) that can be attached in any
 * namespace.  Without it (ENOSYS), the source is remembered as an O_PATH fd plus its identity and
 * re-opened by path inside the container's namespace (only possible while the container is not yet
 * pivoted, which is the case for createRuntime and prestart hooks), then bind-mounted through
 * /proc/self/fd.  Targets are always fds from the in-root resolver. */
#ifndef GH_MOUNT_H
#define GH_MOUNT_H

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "error.h"

enum {
        GH_MNT_RDONLY = 1 << 0,
        GH_MNT_NOSUID = 1 << 1,
        GH_MNT_NODEV = 1 << 2,
        GH_MNT_NOEXEC = 1 << 3,
};

/* Flag sets of docs/architecture.md#what-a-container-gets (mount flags). */
#define GH_MNT_FILE (GH_MNT_RDONLY | GH_MNT_NOSUID | GH_MNT_NODEV)
#define GH_MNT_DEV (GH_MNT_RDONLY | GH_MNT_NOSUID | GH_MNT_NOEXEC)
#define GH_MNT_IPC (GH_MNT_NOSUID | GH_MNT_NODEV | GH_MNT_NOEXEC)

struct gh_source {
        int fd;         /* detached mount (new API) or O_PATH fd (legacy) */
        bool detached;  /* fd is an open_tree clone */
        bool has_flags; /* the clone already carries flags (and private propagation) */
        unsigned flags; /* GH_MNT_* set on the clone, when has_flags */
        char *path;     /* host path, for messages and the legacy re-open */
        struct stat st; /* identity of the source, checked again before a legacy bind */
};

/* Opens PATH under the driver root (rootfd, whose host path is root_path) as a mount source that
 * will be attached with FLAGS (GH_MNT_*).  Must be called in the host's mount namespace.  Where the
 * kernel has open_tree_attr (Linux 6.15) the clone gets its flags and private propagation in the
 * same call, and gh_attach then only moves it (one mount operation per file inside the container
 * instead of two); elsewhere the flags are set at the attach. */
int gh_source_open(int rootfd, const char *root_path, const char *path, unsigned flags, struct gh_source *src,
                   gh_error_t *err);
void gh_source_close(struct gh_source *src);

/* Host procfs directory fd used for fdinfo/mountinfo lookups and legacy /proc/self/fd paths; set it
 * before entering another mount namespace (a pivoted container's /proc is not ours). */
void gh_mount_set_procfd(int procfd);

/* The engine's root (the container init's root before its pivot: gh_ns), where the legacy re-open
 * looks a source up by its host path; AT_FDCWD (the default) is our own root. */
void gh_mount_set_engine_root(int rootfd);

enum gh_target_kind { GH_TARGET_FILE, GH_TARGET_DIR };

/* Creates the target CPATH inside the container root (rootfd, in the container's namespace) with
 * the in-root resolver and attaches src onto it with the GH_MNT_* flags, private propagation.
 * Refuses when the target lies on a shared mount (it would propagate back to the host). */
int gh_attach(struct gh_source *src, int rootfd, const char *cpath, enum gh_target_kind kind, unsigned flags,
              gh_error_t *err);

/* gh_attach for a file in a directory the caller resolved in the container and proved not shared
 * (gh_check_creation_point before creating it, gh_check_not_shared after): NAME is a single
 * component of DIRFD, CPATH the whole path.  A new file is created and mounted onto at once; when
 * something is there already it does what gh_attach does. */
int gh_attach_in(struct gh_source *src, int rootfd, int dirfd, const char *name, const char *cpath, unsigned flags,
                 gh_error_t *err);

/* A new directory NAME made in DIRFD, a directory of a file system the hook itself just mounted
 * (nothing else can have made it shared or put anything there), and SRC mounted onto it: what the
 * /proc/driver/nvidia mask does for each GPU's directory (one mkdirat, one open and the mount,
 * instead of resolving the path from the root and checking its propagation). */
int gh_attach_dir_new(struct gh_source *src, int rootfd, int dirfd, const char *name, const char *cpath, unsigned flags,
                      gh_error_t *err);

/* Refuses when the deepest existing ancestor of CPATH (where directories and the mount point would
 * be made) lies on a shared mount: an empty file created in a shared volume is a write to the host. */
int gh_check_creation_point(int rootfd, const char *cpath, gh_error_t *err);

/* Fails with a clear error when the mount holding fd propagates to peers (shared). */
int gh_check_not_shared(int fd, const char *name, gh_error_t *err);

/* Mounts a fresh private tmpfs on the directory CPATH (created if needed) and returns an
 * O_RDONLY|O_DIRECTORY fd of its root for populating; seal it afterwards with gh_remount(). */
int gh_tmpfs_attach(int rootfd, const char *cpath, const char *options, gh_error_t *err);

/* Applies GH_MNT_* flags to the mount whose root is CPATH. */
int gh_remount(int rootfd, const char *cpath, unsigned flags, gh_error_t *err);

#endif
