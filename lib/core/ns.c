#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "log.h"
#include "ns.h"
#include "rootfs.h"
#include "syscalls.h"

int gh_ns_open(pid_t pid, const char *rootfs, struct gh_ns *ns, gh_error_t *err)
{
        char p[64];
        struct stat rst, cst;

        memset(ns, 0, sizeof(*ns));
        ns->self_mnt = ns->self_root = ns->self_cwd = ns->target_mnt = ns->proc_fd = ns->host_rootfs = ns->init_root =
                -1;
        ns->pid = pid;
        if (pid <= 0)
                return gh_err_usage(err, "invalid --pid %d: pass the host pid of the container's init process",
                                    (int) pid);

        ns->self_mnt = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        if (ns->self_mnt < 0)
                return gh_err(err, errno, "opening our own mount namespace (/proc/self/ns/mnt)");
        ns->self_root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (ns->self_root < 0)
                return gh_err(err, errno, "opening our own root directory");
        ns->self_cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC); /* -1: the root is where we come back */
        ns->proc_fd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (ns->proc_fd < 0)
                return gh_err(err, errno, "opening /proc");

        /* A pidfd pins the process: the pid cannot be recycled under us between checks. */
        ns->target_mnt = gh_pidfd_open(pid, 0);
        if (ns->target_mnt < 0) {
                if (errno == ESRCH)
                        return gh_err(err, ESRCH, "container process %d", (int) pid);
                snprintf(p, sizeof(p), "/proc/%d/ns/mnt", (int) pid);
                ns->target_mnt = open(p, O_RDONLY | O_CLOEXEC);
                if (ns->target_mnt < 0)
                        return gh_err(err, errno, "opening the mount namespace of container process %d", (int) pid);
        }

        ns->host_rootfs = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (ns->host_rootfs < 0)
                return gh_err(err, errno, "opening container rootfs %s", rootfs);
        if (fstat(ns->host_rootfs, &rst) < 0)
                return gh_err(err, errno, "inspecting container rootfs %s", rootfs);

        /* The magic link is the process's root in its own mount namespace, whatever ours is. */
        snprintf(p, sizeof(p), "%d/root", (int) pid);
        ns->init_root = openat(ns->proc_fd, p, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (ns->init_root < 0)
                return gh_err(err, errno == ENOENT ? ESRCH : errno,
                              "opening the root of container process %d (/proc/%d/root)", (int) pid, (int) pid);
        /* Already pivoted when the process's root is the rootfs itself. */
        if (fstat(ns->init_root, &cst) == 0 && cst.st_dev == rst.st_dev && cst.st_ino == rst.st_ino)
                ns->pivoted = true;
        gh_debug("container %d: %s", (int) pid, ns->pivoted ? "already pivoted into its root" : "not pivoted yet");
        return 0;
}

int gh_ns_enter(struct gh_ns *ns, const char *rootfs, int *rootfd, gh_error_t *err)
{
        struct stat hst, cst;
        int fd;

        /* A pidfd needs Linux 5.8 for setns; a /proc/PID/ns/mnt fd works everywhere. */
        if (setns(ns->target_mnt, CLONE_NEWNS) < 0) {
                int saved = errno;
                char p[64];
                if (saved == EINVAL) {
                        snprintf(p, sizeof(p), "/proc/%d/ns/mnt", (int) ns->pid);
                        int nfd = open(p, O_RDONLY | O_CLOEXEC);
                        if (nfd >= 0) {
                                close(ns->target_mnt);
                                ns->target_mnt = nfd;
                                if (setns(nfd, CLONE_NEWNS) == 0)
                                        goto entered;
                                saved = errno;
                        }
                }
                return gh_err(err, saved, "entering the mount namespace of container process %d", (int) ns->pid);
        }
entered:
        ns->entered = true;

        /* setns() put us at the namespace's root, which need not be the engine's: under a chroot
         * the rootfs path means nothing there.  The init's root is the engine's root before the
         * pivot (the rootfs is at its path in it) and the rootfs itself after.  Resolving in it,
         * symlinks in the path stay inside it; the fd is of this namespace's mounts, so what we
         * mount on it is what the container sees. */
        if (ns->pivoted) {
                fd = openat(ns->init_root, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (fd < 0)
                        return gh_err(err, errno, "opening the root of container process %d", (int) ns->pid);
        } else {
                fd = gh_resolve(ns->init_root, rootfs, O_PATH | O_DIRECTORY, err);
                if (fd < 0)
                        return gh_err_wrap(err, "container rootfs %s, in the root of container process %d", rootfs,
                                           (int) ns->pid);
        }
        if (fstat(fd, &cst) < 0 || fstat(ns->host_rootfs, &hst) < 0 || cst.st_dev != hst.st_dev ||
            cst.st_ino != hst.st_ino) {
                close(fd);
                return gh_err(
                        err, 0,
                        "container rootfs %s is not the same directory inside the container's mount namespace; is --pid the container's process?",
                        rootfs);
        }
        *rootfd = fd;
        return 0;
}

int gh_ns_leave(struct gh_ns *ns, gh_error_t *err)
{
        if (!ns->entered)
                return 0;
        if (setns(ns->self_mnt, CLONE_NEWNS) < 0)
                return gh_err(err, errno, "returning to our own mount namespace");
        ns->entered = false;
        /* The process goes on after configure (gpu-hook writes its log and record): under an
         * engine's chroot its paths must mean what they meant before. */
        if (fchdir(ns->self_root) < 0 || chroot(".") < 0 || (ns->self_cwd >= 0 ? fchdir(ns->self_cwd) : chdir("/")) < 0)
                return gh_err(err, errno, "returning to our own root directory");
        return 0;
}

void gh_ns_close(struct gh_ns *ns)
{
        if (ns->entered) {
                gh_error_t e = NULL;
                gh_ns_leave(ns, &e);
                gh_error_free(&e);
        }
        int *fds[] = { &ns->self_mnt, &ns->self_root,   &ns->self_cwd, &ns->target_mnt,
                       &ns->proc_fd,  &ns->host_rootfs, &ns->init_root };
        for (size_t i = 0; i < GH_ARRAY_SIZE(fds); i++) {
                if (*fds[i] >= 0)
                        close(*fds[i]);
                *fds[i] = -1;
        }
}
