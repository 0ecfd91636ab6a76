/* The container's device cgroup: after device nodes are injected, the container must also be
 * allowed to open them.
 *
 * cgroup v1: one `c MAJOR:MINOR rw` line per rule to the container's devices.allow.
 * cgroup v2: device access is decided by BPF_PROG_TYPE_CGROUP_DEVICE programs, and an access is
 * allowed only if EVERY program that applies allows it, so attaching one more "allow" program
 * cannot widen what the runtime's program denies.  Instead the runtime's program is read back from
 * the kernel, our allow rules are prepended to its instructions, and the result atomically
 * replaces it.  The runtime's denials therefore survive unchanged.
 *
 * WHERE TO CALL: in the host's mount and cgroup namespaces (before any setns into the container):
 * /proc/self/mountinfo must show the host's cgroup mounts and /proc/PID/cgroup must be read from
 * the host's cgroup namespace.
 *
 * CAPABILITIES (effective, as uid 0):
 *   - CAP_SYS_ADMIN: always.  v1: the kernel checks it for every devices.allow write.  v2:
 *     BPF_PROG_GET_FD_BY_ID requires it (CAP_BPF is not enough), and it also satisfies the checks
 *     of BPF_PROG_QUERY/ATTACH (CAP_NET_ADMIN) and BPF_PROG_LOAD (CAP_BPF) on every kernel.
 *   - CAP_DAC_OVERRIDE: only when the container's cgroup directory is not owned by our fsuid
 *     (a delegated cgroup chowned to a container user).
 *
 * FAILURE: the cgroup is left as it was.  v2 loads every new program before attaching any, and
 * puts the old ones back if a later replace fails; v1 denies again what it had just allowed. */
#ifndef GH_CGROUP_H
#define GH_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "error.h"

struct gh_dev_rule {
        char type; /* 'c' or 'b' */
        unsigned major, minor;
};

/* Upper bound on rules per call: keeps every jump of the generated BPF prologue in range. */
#define GH_CGROUP_MAX_RULES 1024

enum gh_cgroup_version {
        GH_CGROUP_AUTO = 0, /* v1 when the process has a `devices` controller line, else v2 */
        GH_CGROUP_V1 = 1,
        GH_CGROUP_V2 = 2,
};

struct gh_cgroup {
        enum gh_cgroup_version version;
        int dirfd;  /* O_PATH|O_DIRECTORY fd of the cgroup directory */
        char *path; /* host path of that directory, for messages only */
};

/* Allows read/write access (not mknod) to exactly each rule for the device cgroup of PID.
 * Equivalent to gh_cgroup_find(pid, GH_CGROUP_AUTO, ...) + gh_cgroup_allow(). */
int gh_cgroup_allow_devices(pid_t pid, const struct gh_dev_rule *rules, size_t n, gh_error_t *err);

/* Finds and opens the device cgroup of PID.  `want` forces a hierarchy (a hybrid host has both).
 * Release with gh_cgroup_close(). */
int gh_cgroup_find(pid_t pid, enum gh_cgroup_version want, struct gh_cgroup *cg, gh_error_t *err);

/* gh_cgroup_find first tries the usual mount points (/sys/fs/cgroup/devices for v1;
 * /sys/fs/cgroup, then /sys/fs/cgroup/unified for v2) and takes a directory there only when its
 * cgroup.procs lists PID; otherwise, and always after set_known_mounts(false) (tests), the mount
 * comes from /proc/self/mountinfo. */
void gh_cgroup_set_known_mounts(bool on);
void gh_cgroup_close(struct gh_cgroup *cg);

int gh_cgroup_allow(const struct gh_cgroup *cg, const struct gh_dev_rule *rules, size_t n, gh_error_t *err);

/* Checks rules before anything is written: type 'c'/'b', major < 4096, minor < 2^20, n bounded. */
int gh_cgroup_check_rules(const struct gh_dev_rule *rules, size_t n, gh_error_t *err);

/* Parsers, exposed for tests.
 *
 * gh_cgroup_parse_membership reads /proc/PID/cgroup text: *v1 gets the path of the hierarchy
 * whose controller list holds "devices", *v2 the path of the "0::" line; either is left NULL
 * when absent (caller frees).
 *
 * gh_cgroup_find_mount reads mountinfo text and finds the mount showing the cgroup at CGPATH: a
 * "cgroup" mount whose super options hold "devices" (v1) or a "cgroup2" mount (v2), whose root is
 * CGPATH or its closest ancestor.  *mnt gets its mount point (escapes like \040 decoded; caller
 * frees), *rel the part of CGPATH below the mount's root ("" for the root; points into CGPATH). */
int gh_cgroup_parse_membership(FILE *f, char **v1, char **v2, gh_error_t *err);
int gh_cgroup_find_mount(FILE *mountinfo, enum gh_cgroup_version version, const char *cgpath, char **mnt,
                         const char **rel, gh_error_t *err);

/* cgroup v2 (lib/core/cgroup-bpf.c): splices the allow rules into every BPF_CGROUP_DEVICE program
 * attached to the cgroup directory CGFD.  No program attached means every device is allowed: does
 * nothing.  Refuses programs it cannot reload faithfully (maps, helper calls, subprograms). */
int gh_cgroup_bpf_allow(int cgfd, const char *name, const struct gh_dev_rule *rules, size_t n, gh_error_t *err);

/* Where cgroup v2 device programs are pinned for reuse (lib/core/cgroup-bpf.c), at most
 * GH_CGROUP_BPF_PINS of them; only used when its parent is a bpffs.  set_pin_dir: another directory
 * (tests), NULL: no reuse.  forget: unpins them all (the programs stay on the cgroups they are
 * attached to) and removes the directory; returns how many, or -1. */
#define GH_CGROUP_BPF_PIN_DIR "/sys/fs/bpf/gpu-hook"
#define GH_CGROUP_BPF_PINS 64
void gh_cgroup_bpf_set_pin_dir(const char *dir);
/* Where there is no bpffs to pin in: the ids of the programs loaded, one small file per rule set
 * (at most GH_CGROUP_BPF_PINS).  A later start takes the program by id while some cgroup still holds
 * it (another container with the same rules), after the same proof as a pin; the files keep nothing
 * alive.  forget removes them too.  set_id_dir: another directory (tests), NULL: none. */
#define GH_CGROUP_BPF_ID_DIR "/run/gpu-hook/devprog"
void gh_cgroup_bpf_set_id_dir(const char *dir);
int gh_cgroup_bpf_forget(gh_error_t *err);

/* Number of BPF_CGROUP_DEVICE programs attached to the cgroup itself (not inherited), and its
 * attach flags (BPF_F_ALLOW_MULTI...).  For tests and debug output. */
int gh_cgroup_bpf_count(int cgfd, unsigned *flags, gh_error_t *err);

#endif
