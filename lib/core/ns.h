/* Entering a container's mount namespace and finding its root filesystem there. */
#ifndef GH_NS_H
#define GH_NS_H

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"

struct gh_ns {
        pid_t pid;
        int self_mnt;    /* our own mount namespace, to come back to */
        int self_root;   /* our root and working directory (O_PATH), restored on the way back: setns() */
        int self_cwd;    /* leaves us at the namespace's root, not at a chroot's (an engine under chroot) */
        int target_mnt;  /* the container's (a pidfd or /proc/PID/ns/mnt) */
        int proc_fd;     /* the host's /proc, usable after setns */
        int host_rootfs; /* ROOTFS opened on the host side (O_PATH) */
        int init_root;   /* the root of the container's init (/proc/PID/root, O_PATH): the engine's
                          * root before the pivot, the rootfs after it */
        bool pivoted;    /* the container already runs in its root (manual configure) */
        bool entered;
};

/* Opens everything needed while still in the host namespace.  rootfs is the container's root as a
 * host path (as in the OCI bundle). */
int gh_ns_open(pid_t pid, const char *rootfs, struct gh_ns *ns, gh_error_t *err);

/* setns() into the container's mount namespace, and opens the container root there
 * (O_PATH|O_DIRECTORY), proving it is the same directory as ROOTFS on the host.  ROOTFS is resolved
 * in the root of the container's init, not in the namespace's root that setns() leaves us at: the
 * two differ when the engine runs under chroot (or a runtime's --no-pivot), and ROOTFS is a path in
 * the engine's root. */
int gh_ns_enter(struct gh_ns *ns, const char *rootfs, int *rootfd, gh_error_t *err);

/* Back to our own namespace, root and working directory (safe to call when not entered).  Needs
 * CAP_SYS_CHROOT (the enter phase) to restore a root that is not the namespace's. */
int gh_ns_leave(struct gh_ns *ns, gh_error_t *err);

void gh_ns_close(struct gh_ns *ns);

#endif
