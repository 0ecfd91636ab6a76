/* Least privilege: gpu-cli and gpu-hook start as root with every capability, but each phase of
 * their work needs only a few.  A table (caps.c) names the capabilities of every phase.
 *
 *   gh_caps_init()      once at program start: permitted and bounding sets shrink to the union of
 *                       all phases, effective/inheritable/ambient become empty, keep-caps is off.
 *   gh_caps_enter(P)    effective = the capabilities of phase P (and nothing else).
 *   gh_caps_drop_all()  in a child before it runs anything we do not trust: no capability in any
 *                       set (bounding included) and no_new_privs.
 *
 * Without privileges (unit tests, `gpu-cli info` as a user) every call succeeds with what the
 * process has: a capability that is not there simply stays off, and the operation that needs it
 * fails later with a clear EPERM. */
#ifndef GH_CAPS_H
#define GH_CAPS_H

#include <stdint.h>
#include <sys/types.h>

#include "error.h"

enum gh_phase {
        /* Read the driver root, start the driver service child (chroot, setuid, kill it). */
        GH_PHASE_DISCOVER,
        /* Open /proc/PID/ns/mnt of the container and setns() into it. */
        GH_PHASE_ENTER,
        /* Create files, directories and device nodes in the rootfs and mount onto them. */
        GH_PHASE_MOUNT,
        /* Write device cgroup rules (v1 devices.allow, v2 BPF programs). */
        GH_PHASE_CGROUP,
        /* Write /etc/ld.so.cache in the rootfs natively. */
        GH_PHASE_LDCACHE,
        /* Start the sandbox that runs the host's ldconfig (unshare, pivot_root, setuid). */
        GH_PHASE_LDCONFIG,
        /* Work is done: nothing effective. */
        GH_PHASE_DONE,
        GH_PHASE_COUNT,
};

/* Capabilities of one phase as a bit mask (bit N = capability N), limited to the capabilities
 * the running kernel knows. */
uint64_t gh_caps_phase_mask(enum gh_phase phase);

/* Union of the masks of every phase in `phases` (bit (1 << GH_PHASE_X)). */
uint64_t gh_caps_union_mask(unsigned phases);

#define GH_PHASES_ALL ((1u << GH_PHASE_COUNT) - 1)

/* gh_caps_init_phases(GH_PHASES_ALL, err).  Call before any thread exists. */
int gh_caps_init(gh_error_t *err);

/* Keeps in the permitted and bounding sets only what the given phases need. */
int gh_caps_init_phases(unsigned phases, gh_error_t *err);

/* Effective set = the phase's capabilities that are permitted.  Never raises anything outside the
 * phase, and it is not an error when a listed capability is not permitted (see above). */
int gh_caps_enter(enum gh_phase phase, gh_error_t *err);

/* Clears every capability set (bounding and ambient included when CAP_SETPCAP allows it), locks
 * the securebits so that root regains nothing on exec, and sets no_new_privs. */
int gh_caps_drop_all(gh_error_t *err);

/* The same, and changes identity on the way: supplementary groups are cleared and the real,
 * effective and saved ids become uid/gid ((uid_t) -1 / (gid_t) -1 keep the current ones). */
int gh_caps_drop_all_as(uid_t uid, gid_t gid, gh_error_t *err);

#endif
