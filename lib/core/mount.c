#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdbool.h>

#include "cleanup.h"
#include "log.h"
#include "mount.h"
#include "rootfs.h"
#include "steps.h"
#include "syscalls.h"

#ifndef MS_PRIVATE
#define MS_PRIVATE (1 << 18)
#endif

static int proc_fd = AT_FDCWD;
static int engine_root = AT_FDCWD;
/* statmount or the unique mount id is missing here (ENOSYS, a kernel before 6.8, a seccomp filter):
 * remembered for the process, the mount table is read instead. */
static bool no_statmount;

/* Shared mounts of the namespace we are in, read once per namespace entry: every injected file
 * checks its parent mount, and re-reading mountinfo for each would dominate configure's time. */
static struct {
        bool loaded;
        int *ids;
        size_t n;
} shared;

static void forget_shared(void)
{
        free(shared.ids);
        shared.ids = NULL;
        shared.n = 0;
        shared.loaded = false;
}

void gh_mount_set_procfd(int procfd)
{
        proc_fd = procfd;
        forget_shared();
}

void gh_mount_set_engine_root(int rootfd) { engine_root = rootfd; }

static const char *proc_path(const char *rel, char *buf, size_t size)
{
        /* openat(AT_FDCWD, ...) wants the absolute form; a procfs fd wants the relative one. */
        snprintf(buf, size, "%s%s", proc_fd == AT_FDCWD ? "/proc/" : "", rel);
        return buf;
}

static uint64_t to_mount_attr(unsigned flags)
{
        uint64_t a = 0;
        if (flags & GH_MNT_RDONLY)
                a |= MOUNT_ATTR_RDONLY;
        if (flags & GH_MNT_NOSUID)
                a |= MOUNT_ATTR_NOSUID;
        if (flags & GH_MNT_NODEV)
                a |= MOUNT_ATTR_NODEV;
        if (flags & GH_MNT_NOEXEC)
                a |= MOUNT_ATTR_NOEXEC;
        return a;
}

static unsigned long to_ms_flags(unsigned flags)
{
        unsigned long m = 0;
        if (flags & GH_MNT_RDONLY)
                m |= MS_RDONLY;
        if (flags & GH_MNT_NOSUID)
                m |= MS_NOSUID;
        if (flags & GH_MNT_NODEV)
                m |= MS_NODEV;
        if (flags & GH_MNT_NOEXEC)
                m |= MS_NOEXEC;
        return m;
}

/* open_tree_attr answered ENOSYS (older kernel) or EPERM (a seccomp filter): not asked again. */
static bool no_open_tree_attr;

int gh_source_open(int rootfd, const char *root_path, const char *path, unsigned flags, struct gh_source *src,
                   gh_error_t *err)
{
        _cleanup_close_ int fd = -1;
        char full[4096];

        memset(src, 0, sizeof(*src));
        src->fd = -1;
        snprintf(full, sizeof(full), "%s%s", strcmp(root_path, "/") == 0 ? "" : root_path, path);
        src->path = strdup(full);
        if (src->path == NULL)
                return gh_err(err, ENOMEM, "opening %s", full);

        /* The driver root is trusted (it is the host's driver), but it is still opened relative to its
         * fd so a --root pointing at an unpacked tree cannot redirect us with absolute symlinks. */
        fd = gh_resolve(rootfd, path, O_PATH, err);
        if (fd < 0)
                return gh_err_wrap(err, "driver file %s", full);
        if (fstat(fd, &src->st) < 0)
                return gh_err(err, errno, "inspecting driver file %s", full);

        if (!no_open_tree_attr) {
                struct gh_mount_attr attr = { .attr_set = to_mount_attr(flags), .propagation = MS_PRIVATE };
                src->fd = gh_open_tree_attr(fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH, &attr);
                if (src->fd >= 0) {
                        src->detached = src->has_flags = true;
                        src->flags = flags;
                        return 0;
                }
                if (errno != ENOSYS && errno != EPERM)
                        return gh_err(err, errno, "cloning a mount of %s", full);
                gh_debug("open_tree_attr unavailable (%s): open_tree, then mount_setattr", strerror(errno));
                no_open_tree_attr = true;
        }
        src->fd = gh_open_tree(fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
        if (src->fd >= 0) {
                src->detached = true;
                return 0;
        }
        if (errno != ENOSYS && errno != EPERM)
                return gh_err(err, errno, "cloning a mount of %s", full);
        gh_debug("open_tree unavailable (%s): legacy bind for %s", strerror(errno), full);
        src->fd = TAKE_FD(fd);
        return 0;
}

void gh_source_close(struct gh_source *src)
{
        if (src->fd >= 0)
                close(src->fd);
        src->fd = -1;
        free(src->path);
        src->path = NULL;
}

/* The mount id of the mount holding fd: statx (Linux 5.8), else /proc/self/fdinfo. */
static int fd_mount_id(int fd)
{
        char rel[64], p[80], buf[1024];
        _cleanup_close_ int f = -1;
        struct statx stx;
        ssize_t n;
        char *m;

        if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &stx) == 0 &&
            (stx.stx_mask & STATX_MNT_ID))
                return (int) stx.stx_mnt_id;
        snprintf(rel, sizeof(rel), "self/fdinfo/%d", fd);
        f = openat(proc_fd, proc_path(rel, p, sizeof(p)), O_RDONLY | O_CLOEXEC);
        if (f < 0)
                return -1;
        n = read(f, buf, sizeof(buf) - 1);
        if (n <= 0)
                return -1;
        buf[n] = '\0';
        m = strstr(buf, "mnt_id:");
        return m ? atoi(m + 7) : -1;
}

static void load_shared(void)
{
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *line = NULL;
        char p[64];
        size_t len = 0;
        int mfd;

        shared.loaded = true;
        mfd = openat(proc_fd, proc_path("self/mountinfo", p, sizeof(p)), O_RDONLY | O_CLOEXEC);
        if (mfd < 0 || (f = fdopen(mfd, "r")) == NULL) {
                if (mfd >= 0)
                        close(mfd);
                return;
        }
        while (getline(&line, &len, f) > 0) {
                char *sep = strstr(line, " - ");
                if (sep)
                        *sep = '\0'; /* optional fields sit between the 6th field and " - " */
                if (strstr(line, " shared:") == NULL)
                        continue;
                int *v = realloc(shared.ids, (shared.n + 1) * sizeof(*v));
                if (v == NULL)
                        return;
                shared.ids = v;
                shared.ids[shared.n++] = atoi(line);
        }
}

/* Whether the mount holding fd is shared, asked of statmount (Linux 6.8) by the mount's unique id:
 * one system call instead of reading and parsing the namespace's mount table, whose size is the
 * host's.  1 shared, 0 not, -1 when it cannot be asked that way (the caller reads the table). */
static int statmount_shared(int fd)
{
        struct gh_statmount sm;
        struct statx stx;

        if (no_statmount)
                return -1;
        if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID_UNIQUE, &stx) < 0)
                return -1;
        if (!(stx.stx_mask & STATX_MNT_ID_UNIQUE)) {
                no_statmount = true;
                return -1;
        }
        memset(&sm, 0, sizeof(sm));
        if (gh_statmount(stx.stx_mnt_id, GH_STATMOUNT_MNT_BASIC, &sm) < 0) {
                if (errno == ENOSYS || errno == EPERM)
                        no_statmount = true;
                return -1; /* any other answer: the mount table decides this one */
        }
        if (!(sm.mask & GH_STATMOUNT_MNT_BASIC))
                return -1;
        return (sm.mnt_propagation & MS_SHARED) != 0;
}

int gh_check_not_shared(int fd, const char *name, gh_error_t *err)
{
        int shared_now = statmount_shared(fd);

        if (shared_now < 0) {
                int id = fd_mount_id(fd);
                if (id < 0)
                        return 0; /* no way to tell; the runtime's own propagation setting stands */
                if (!shared.loaded)
                        load_shared();
                shared_now = 0;
                for (size_t i = 0; i < shared.n; i++)
                        if (shared.ids[i] == id)
                                shared_now = 1;
        }
        if (shared_now)
                return gh_err(
                        err, 0,
                        "refusing to mount onto %s: it lies on a shared mount, so the mount would propagate back to the host; "
                        "make that volume private or rslave",
                        name);
        return 0;
}

static int legacy_bind(struct gh_source *src, int target_fd, const char *cpath, gh_error_t *err)
{
        _cleanup_close_ int again = -1;
        struct stat st;
        char from[64], to[64];

        /* A host mount cannot be bound into another namespace by fd; the container is not pivoted
         * yet, so the host tree is visible here: re-open it (at its path in the engine's root, which
         * need not be this namespace's root) and prove it is the same file we inspected. */
        if (engine_root == AT_FDCWD) {
                again = open(src->path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        } else {
                _cleanup_error_ gh_error_t e = NULL;
                again = gh_resolve(engine_root, src->path, O_PATH | O_NOFOLLOW, &e);
                if (again < 0)
                        errno = e != NULL && e->code > 0 ? e->code : ENOENT;
        }
        if (again < 0)
                return gh_err(
                        err, errno,
                        "re-opening %s inside the container's namespace (without open_tree, gpu-cli can only inject into a container that is not running yet)",
                        src->path);
        if (fstat(again, &st) < 0 || st.st_dev != src->st.st_dev || st.st_ino != src->st.st_ino)
                return gh_err(err, 0, "%s changed while it was being injected; try again", src->path);
        /* Legacy mounts only happen before the container is pivoted, where /proc is still ours. */
        snprintf(from, sizeof(from), "/proc/self/fd/%d", again);
        snprintf(to, sizeof(to), "/proc/self/fd/%d", target_fd);
        if (mount(from, to, "none", MS_BIND, NULL) < 0)
                return gh_err(err, errno, "bind-mounting %s onto %s", src->path, cpath);
        return 0;
}

static int legacy_flags(int rootfd, const char *cpath, unsigned flags, bool bind, gh_error_t *err)
{
        _cleanup_close_ int fd = gh_resolve(rootfd, cpath, O_PATH, err);
        char p[64];

        if (fd < 0)
                return -1;
        snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
        if (mount("none", p, "none", MS_PRIVATE, NULL) < 0)
                return gh_err(err, errno, "making the mount on %s private", cpath);
        if (mount("none", p, "none", MS_REMOUNT | (bind ? MS_BIND : 0) | to_ms_flags(flags), NULL) < 0)
                return gh_err(err, errno, "setting mount flags on %s", cpath);
        return 0;
}

/* Refuses before anything is created: the deepest existing ancestor of cpath is where new
 * directories and the mount point would be made, so it must not be on a shared mount either (an
 * empty file created in a shared volume is a write to the host). */
int gh_check_creation_point(int rootfd, const char *cpath, gh_error_t *err)
{
        char dir[4096];
        size_t n = strlen(cpath);

        if (n >= sizeof(dir))
                return gh_err(err, ENAMETOOLONG, "container path %.64s... is too long", cpath);
        memcpy(dir, cpath, n + 1);
        for (;;) {
                char *slash = strrchr(dir, '/');
                if (slash == NULL || slash == dir)
                        strcpy(dir, "/");
                else
                        *slash = '\0';
                _cleanup_close_ int fd = gh_resolve(rootfd, dir, O_PATH | O_DIRECTORY, NULL);
                if (fd >= 0)
                        return gh_check_not_shared(fd, cpath, err);
                if (strcmp(dir, "/") == 0)
                        return 0;
        }
}

static int attach_onto(struct gh_source *src, int target, int rootfd, const char *cpath, unsigned flags,
                       gh_error_t *err);

int gh_attach(struct gh_source *src, int rootfd, const char *cpath, enum gh_target_kind kind, unsigned flags,
              gh_error_t *err)
{
        _cleanup_close_ int target = -1;

        if (gh_check_creation_point(rootfd, cpath, err) < 0)
                return -1;
        if (kind == GH_TARGET_DIR)
                target = gh_mkdir_p(rootfd, cpath, 0755, err);
        else
                target = gh_create_file(rootfd, cpath, 0644, err);
        if (target < 0)
                return -1;
        if (gh_check_not_shared(target, cpath, err) < 0)
                return -1;
        return attach_onto(src, target, rootfd, cpath, flags, err);
}

int gh_attach_in(struct gh_source *src, int rootfd, int dirfd, const char *name, const char *cpath, unsigned flags,
                 gh_error_t *err)
{
        /* A new file lies on the directory's mount, which the caller checked: the mount point is
         * made and used in one call.  Anything already there (a symlink to replace, a file that is
         * itself a mount point) goes the careful way. */
        _cleanup_close_ int target = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);

        GH_STEP("apply.create");
        if (target < 0 && errno == EEXIST)
                return gh_attach(src, rootfd, cpath, GH_TARGET_FILE, flags, err);
        if (target < 0)
                return gh_err(err, errno, "creating file %s inside the container root", cpath);
        return attach_onto(src, target, rootfd, cpath, flags, err);
}

static int attach_onto(struct gh_source *src, int target, int rootfd, const char *cpath, unsigned flags,
                       gh_error_t *err)
{
        if (src->detached) {
                /* A clone opened with other flags (gh_source_open) loses those it should not have. */
                struct gh_mount_attr attr = { .attr_set = to_mount_attr(flags),
                                              .attr_clr = src->has_flags ? to_mount_attr(src->flags & ~flags) : 0,
                                              .propagation = MS_PRIVATE };
                if ((!src->has_flags || src->flags != flags) &&
                    gh_mount_setattr(src->fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr) < 0)
                        return gh_err(err, errno, "setting mount flags for %s", cpath);
                GH_STEP("apply.setattr");
                if (gh_move_mount(src->fd, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
                        return gh_err(err, errno, "mounting %s onto %s", src->path, cpath);
                GH_STEP("apply.move");
                /* The clone is attached now; a second attach of the same fd would fail. */
                close(src->fd);
                src->fd = -1;
                return 0;
        }
        if (legacy_bind(src, target, cpath, err) < 0)
                return -1;
        return legacy_flags(rootfd, cpath, flags, true, err);
}

int gh_attach_dir_new(struct gh_source *src, int rootfd, int dirfd, const char *name, const char *cpath, unsigned flags,
                      gh_error_t *err)
{
        _cleanup_close_ int target = -1;

        if (mkdirat(dirfd, name, 0555) < 0)
                return gh_err(err, errno, "creating directory %s inside the container root", cpath);
        target = openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (target < 0)
                return gh_err(err, errno, "opening directory %s inside the container root", cpath);
        return attach_onto(src, target, rootfd, cpath, flags, err);
}

int gh_tmpfs_attach(int rootfd, const char *cpath, const char *options, gh_error_t *err)
{
        _cleanup_close_ int target = -1;
        _cleanup_close_ int fsfd = -1, mnt = -1;
        int fd;

        if (gh_check_creation_point(rootfd, cpath, err) < 0)
                return -1;
        target = gh_mkdir_p(rootfd, cpath, 0555, err);
        if (target < 0)
                return -1;
        if (gh_check_not_shared(target, cpath, err) < 0)
                return -1;
        fsfd = gh_fsopen("tmpfs", FSOPEN_CLOEXEC);
        if (fsfd >= 0) {
                if (gh_fsconfig(fsfd, FSCONFIG_SET_STRING, "mode", "0755", 0) < 0 ||
                    gh_fsconfig(fsfd, FSCONFIG_SET_STRING, "size", "1m", 0) < 0 ||
                    gh_fsconfig(fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
                        return gh_err(err, errno, "creating a tmpfs for %s", cpath);
                mnt = gh_fsmount(fsfd, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
                if (mnt < 0)
                        return gh_err(err, errno, "creating a tmpfs for %s", cpath);
                if (gh_move_mount(mnt, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
                        return gh_err(err, errno, "mounting a tmpfs onto %s", cpath);
        } else if (errno == ENOSYS || errno == EPERM) {
                char p[64];
                snprintf(p, sizeof(p), "/proc/self/fd/%d", target);
                if (mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                          options ? options : "mode=0755,size=1m") < 0)
                        return gh_err(err, errno, "mounting a tmpfs onto %s", cpath);
                if (legacy_flags(rootfd, cpath, GH_MNT_NOSUID | GH_MNT_NODEV | GH_MNT_NOEXEC, false, err) < 0)
                        return -1;
        } else {
                return gh_err(err, errno, "creating a tmpfs for %s", cpath);
        }
        fd = gh_resolve(rootfd, cpath, O_RDONLY | O_DIRECTORY, err);
        if (fd < 0)
                return gh_err_wrap(err, "opening the new tmpfs");
        return fd;
}

int gh_remount(int rootfd, const char *cpath, unsigned flags, gh_error_t *err)
{
        _cleanup_close_ int fd = gh_resolve(rootfd, cpath, O_PATH | O_DIRECTORY, err);
        struct gh_mount_attr attr = { .attr_set = to_mount_attr(flags) };

        if (fd < 0)
                return -1;
        if (gh_mount_setattr(fd, "", AT_EMPTY_PATH, &attr) == 0)
                return 0;
        if (errno != ENOSYS && errno != EPERM)
                return gh_err(err, errno, "setting mount flags on %s", cpath);
        return legacy_flags(rootfd, cpath, flags, false, err);
}
