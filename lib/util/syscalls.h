/* Raw system calls that glibc 2.36 does not wrap (or wraps only recently), in one place.
 *
 * Each returns -1 with errno = ENOSYS when the kernel lacks it, when seccomp filters it (tests run
 * the whole suite under such a filter: tests/helpers/no-new-mount-api.c), or when the library's
 * internal switch gh_syscall_disable() turned it off, so every caller has a tested fallback. */
#ifndef GH_SYSCALLS_H
#define GH_SYSCALLS_H

#include <errno.h>
#include <fcntl.h>
#include <linux/types.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef __NR_open_tree
#define __NR_open_tree 428
#endif
#ifndef __NR_move_mount
#define __NR_move_mount 429
#endif
#ifndef __NR_fsopen
#define __NR_fsopen 430
#endif
#ifndef __NR_fsconfig
#define __NR_fsconfig 431
#endif
#ifndef __NR_fsmount
#define __NR_fsmount 432
#endif
#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434
#endif
#ifndef __NR_openat2
#define __NR_openat2 437
#endif
#ifndef __NR_mount_setattr
#define __NR_mount_setattr 442
#endif
#ifndef __NR_open_tree_attr
#define __NR_open_tree_attr 467 /* Linux 6.15; the same number on every architecture */
#endif
#ifndef __NR_statmount
#define __NR_statmount 457 /* Linux 6.8; the same number on every architecture */
#endif

/* statmount(2): a mount's attributes by its unique id (statx's STATX_MNT_ID_UNIQUE), without
 * reading the namespace's whole mount table.  Only the fixed part of struct statmount that is used
 * here; the kernel fills at most the buffer it is given. */
#ifndef STATX_MNT_ID_UNIQUE
#define STATX_MNT_ID_UNIQUE 0x4000U
#endif
#define GH_STATMOUNT_MNT_BASIC 0x2U
#define GH_MNT_ID_REQ_SIZE_VER0 24
struct gh_mnt_id_req {
        uint32_t size;
        uint32_t spare;
        uint64_t mnt_id;
        uint64_t param;
};
struct gh_statmount {
        uint32_t size;
        uint32_t mnt_opts;
        uint64_t mask;
        uint32_t sb_dev_major, sb_dev_minor;
        uint64_t sb_magic;
        uint32_t sb_flags, fs_type;
        uint64_t mnt_id, mnt_parent_id;
        uint32_t mnt_id_old, mnt_parent_id_old;
        uint64_t mnt_attr;
        uint64_t mnt_propagation; /* MS_SHARED, MS_SLAVE, MS_PRIVATE, MS_UNBINDABLE */
        uint64_t mnt_peer_group, mnt_master, propagate_from;
        uint64_t spare2[56]; /* room for what newer kernels add after these */
};

#ifndef RESOLVE_NO_XDEV
#define RESOLVE_NO_XDEV 0x01
#define RESOLVE_NO_MAGICLINKS 0x02
#define RESOLVE_NO_SYMLINKS 0x04
#define RESOLVE_BENEATH 0x08
#define RESOLVE_IN_ROOT 0x10
#endif

struct gh_open_how {
        uint64_t flags;
        uint64_t mode;
        uint64_t resolve;
};

#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_SYMLINKS 0x00000001
#define MOVE_MOUNT_F_AUTOMOUNTS 0x00000002
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#define MOVE_MOUNT_T_SYMLINKS 0x00000010
#define MOVE_MOUNT_T_AUTOMOUNTS 0x00000020
#define MOVE_MOUNT_T_EMPTY_PATH 0x00000040
#endif
#ifndef FSOPEN_CLOEXEC
#define FSOPEN_CLOEXEC 0x00000001
#endif
#ifndef FSMOUNT_CLOEXEC
#define FSMOUNT_CLOEXEC 0x00000001
#endif
#ifndef FSCONFIG_SET_STRING
#define FSCONFIG_SET_FLAG 0
#define FSCONFIG_SET_STRING 1
#define FSCONFIG_CMD_CREATE 6
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif

#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#define MOUNT_ATTR_NOSUID 0x00000002
#define MOUNT_ATTR_NODEV 0x00000004
#define MOUNT_ATTR_NOEXEC 0x00000008
#endif
struct gh_mount_attr {
        uint64_t attr_set;
        uint64_t attr_clr;
        uint64_t propagation;
        uint64_t userns_fd;
};

/* Bits for gh_syscall_disable(): lets tests (and users on odd kernels) force the fallbacks. */
enum {
        GH_SYS_OPENAT2 = 1 << 0,
        GH_SYS_NEW_MOUNT_API = 1 << 1, /* open_tree, move_mount, mount_setattr, fsopen, fsmount */
        GH_SYS_PIDFD = 1 << 2,
        GH_SYS_OPEN_TREE_ATTR = 1 << 3, /* open_tree_attr alone: open_tree + mount_setattr instead */
        GH_SYS_STATMOUNT = 1 << 4,      /* statmount: the mount table is read instead */
};
extern unsigned gh_syscalls_disabled;
static inline void gh_syscall_disable(unsigned mask) { gh_syscalls_disabled |= mask; }

#define GH_SYSCALL_GATE(bit)                                                                                           \
        do {                                                                                                           \
                if (gh_syscalls_disabled & (bit)) {                                                                    \
                        errno = ENOSYS;                                                                                \
                        return -1;                                                                                     \
                }                                                                                                      \
        } while (0)

static inline int gh_openat2(int dirfd, const char *path, uint64_t flags, uint64_t mode, uint64_t resolve)
{
        struct gh_open_how how = { .flags = flags, .mode = mode, .resolve = resolve };
        GH_SYSCALL_GATE(GH_SYS_OPENAT2);
        return (int) syscall(__NR_openat2, dirfd, path, &how, sizeof(how));
}

static inline int gh_open_tree(int dirfd, const char *path, unsigned flags)
{
        GH_SYSCALL_GATE(GH_SYS_NEW_MOUNT_API);
        return (int) syscall(__NR_open_tree, dirfd, path, flags);
}

static inline int gh_move_mount(int from_dirfd, const char *from, int to_dirfd, const char *to, unsigned flags)
{
        GH_SYSCALL_GATE(GH_SYS_NEW_MOUNT_API);
        return (int) syscall(__NR_move_mount, from_dirfd, from, to_dirfd, to, flags);
}

static inline int gh_mount_setattr(int dirfd, const char *path, unsigned flags, struct gh_mount_attr *attr)
{
        GH_SYSCALL_GATE(GH_SYS_NEW_MOUNT_API);
        return (int) syscall(__NR_mount_setattr, dirfd, path, flags, attr, sizeof(*attr));
}

/* open_tree(OPEN_TREE_CLONE) and mount_setattr on the clone in one call (Linux 6.15). */
static inline int gh_open_tree_attr(int dirfd, const char *path, unsigned flags, struct gh_mount_attr *attr)
{
        GH_SYSCALL_GATE(GH_SYS_NEW_MOUNT_API | GH_SYS_OPEN_TREE_ATTR);
        return (int) syscall(__NR_open_tree_attr, dirfd, path, flags, attr, sizeof(*attr));
}

static inline int gh_fsopen(const char *fsname, unsigned flags)
{
        GH_SYSCALL_GATE(GH_SYS_NEW_MOUNT_API);
        return (int) syscall(__NR_fsopen, fsname, flags);
}

static inline int gh_fsconfig(int fd, unsigned cmd, const char *key, const void *value, int aux)
{
        GH_SYSCALL_GATE(GH_SYS_NEW_MOUNT_API);
        return (int) syscall(__NR_fsconfig, fd, cmd, key, value, aux);
}

static inline int gh_fsmount(int fd, unsigned flags, unsigned attr_flags)
{
        GH_SYSCALL_GATE(GH_SYS_NEW_MOUNT_API);
        return (int) syscall(__NR_fsmount, fd, flags, attr_flags);
}

static inline int gh_statmount(uint64_t mnt_id, uint64_t mask, struct gh_statmount *buf)
{
        struct gh_mnt_id_req req = { .size = GH_MNT_ID_REQ_SIZE_VER0, .mnt_id = mnt_id, .param = mask };
        GH_SYSCALL_GATE(GH_SYS_STATMOUNT);
        return (int) syscall(__NR_statmount, &req, buf, sizeof(*buf), 0);
}

static inline int gh_pidfd_open(pid_t pid, unsigned flags)
{
        GH_SYSCALL_GATE(GH_SYS_PIDFD);
        return (int) syscall(__NR_pidfd_open, pid, flags);
}

#endif
