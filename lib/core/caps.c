/* Per-phase capabilities (docs/threat-model.md#rule-7).  Capability sets are per thread: call these before the
 * program starts threads, or from the thread that does the work. */
#include <errno.h>
#include <grp.h>
#include <linux/securebits.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/capability.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "caps.h"
#include "cleanup.h"
#include "log.h"

#ifndef CAP_BPF
#define CAP_BPF 39
#endif
#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

#define GH_CAP_END (-1)

/* Why each capability is there:
 * DISCOVER  DAC_READ_SEARCH: driver files and /proc/driver/nvidia under a --root that is not ours;
 *           SYS_CHROOT, SETUID, SETGID, SETPCAP: the driver service child chroots into the driver
 *           root, drops its bounding set and becomes an unprivileged user; KILL: signal that child
 *           once it runs under another uid.
 * ENTER     SYS_ADMIN + SYS_CHROOT: setns(CLONE_NEWNS) needs both; SYS_PTRACE and DAC_READ_SEARCH:
 *           /proc/PID/ns/mnt of a process that holds capabilities we do not.
 * MOUNT     SYS_ADMIN: mounts; MKNOD: device nodes; CHOWN, FOWNER, DAC_OVERRIDE: create files and
 *           directories in a rootfs whatever its owners and modes.
 * CGROUP    SYS_ADMIN: read the runtime's BPF program (BPF_PROG_GET_FD_BY_ID); BPF: load a program
 *           on kernels that split it out; NET_ADMIN: attach and query cgroup programs;
 *           DAC_OVERRIDE: write devices.allow.
 * LDCACHE   write /etc/ld.so.cache (temporary file + rename) in a rootfs of any owner.
 * LDCONFIG  SYS_ADMIN: unshare, mounts and pivot_root for the ldconfig sandbox; SETPCAP, SETUID,
 *           SETGID: the sandboxed child drops everything and takes the rootfs owner's ids; KILL:
 *           stop it on timeout. */
static const struct {
        const char *name;
        cap_value_t caps[8];
} phases[GH_PHASE_COUNT] = {
        [GH_PHASE_DISCOVER] = { "discover",
                                { CAP_DAC_READ_SEARCH, CAP_SYS_CHROOT, CAP_SETUID, CAP_SETGID, CAP_SETPCAP, CAP_KILL,
                                  GH_CAP_END } },
        [GH_PHASE_ENTER] = { "enter",
                             { CAP_SYS_ADMIN, CAP_SYS_CHROOT, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH, GH_CAP_END } },
        [GH_PHASE_MOUNT] = { "mount",
                             { CAP_SYS_ADMIN, CAP_MKNOD, CAP_CHOWN, CAP_FOWNER, CAP_DAC_OVERRIDE, GH_CAP_END } },
        [GH_PHASE_CGROUP] = { "cgroup", { CAP_SYS_ADMIN, CAP_BPF, CAP_NET_ADMIN, CAP_DAC_OVERRIDE, GH_CAP_END } },
        [GH_PHASE_LDCACHE] = { "ldcache", { CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_CHOWN, GH_CAP_END } },
        [GH_PHASE_LDCONFIG] = { "ldconfig",
                                { CAP_SYS_ADMIN, CAP_SETPCAP, CAP_SETUID, CAP_SETGID, CAP_KILL, GH_CAP_END } },
        [GH_PHASE_DONE] = { "done", { GH_CAP_END } },
};

#define BIT(c) (UINT64_C(1) << (c))

/* Highest capability number the kernel knows (CAP_LAST_CAP of the running kernel, not ours). */
static cap_value_t last_cap(void)
{
        cap_value_t n = cap_max_bits();
        return n > 0 && n <= 64 ? n - 1 : CAP_LAST_CAP;
}

/* "cap_sys_admin" into buf (libcap allocates its names; messages should not leak). */
static const char *cap_label(cap_value_t c, char *buf, size_t size)
{
        char *n = cap_to_name(c);
        snprintf(buf, size, "%s", n ? n : "?");
        cap_free(n);
        return buf;
}

uint64_t gh_caps_phase_mask(enum gh_phase phase)
{
        uint64_t m = 0;
        if ((unsigned) phase >= GH_PHASE_COUNT)
                return 0;
        for (const cap_value_t *c = phases[phase].caps; *c != GH_CAP_END; c++)
                if (*c <= last_cap())
                        m |= BIT(*c);
        return m;
}

uint64_t gh_caps_union_mask(unsigned which)
{
        uint64_t m = 0;
        for (unsigned p = 0; p < GH_PHASE_COUNT; p++)
                if (which & (1u << p))
                        m |= gh_caps_phase_mask(p);
        return m;
}

/* The capability sets, read and written with capget/capset directly: a phase change is one
 * capset, not the three capget and one capset of libcap's cap_get_proc/cap_set_proc (a start
 * changes phase a dozen times).  Only this file changes the permitted set, so it is read once and
 * then remembered; a uid change (gh_caps_drop_all_as) forgets it. */
static struct {
        bool known;
        uint64_t permitted;
} cur_caps;

static int permitted_mask(uint64_t *mask, gh_error_t *err)
{
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
        struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

        if (!cur_caps.known) {
                memset(d, 0, sizeof(d));
                if (syscall(SYS_capget, &h, d) < 0)
                        return gh_err(err, errno, "reading the process capabilities");
                cur_caps.permitted = (uint64_t) d[1].permitted << 32 | d[0].permitted;
                cur_caps.known = true;
        }
        *mask = cur_caps.permitted & (last_cap() >= 63 ? ~UINT64_C(0) : (BIT(last_cap() + 1) - 1));
        return 0;
}

/* Inheritable stays empty, as libcap's cap_init() made it. */
static int set_caps(uint64_t permitted, uint64_t effective, gh_error_t *err)
{
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
        struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

        effective &= permitted;
        memset(d, 0, sizeof(d));
        d[0].permitted = (uint32_t) permitted;
        d[1].permitted = (uint32_t) (permitted >> 32);
        d[0].effective = (uint32_t) effective;
        d[1].effective = (uint32_t) (effective >> 32);
        if (syscall(SYS_capset, &h, d) < 0) {
                cur_caps.known = false;
                return gh_err(err, errno, "setting the process capabilities");
        }
        cur_caps.permitted = permitted;
        cur_caps.known = true;
        return 0;
}

/* Drops every capability not in keep from the bounding set.  PR_CAPBSET_DROP of one that is gone
 * already succeeds, so there is no read before each drop. */
static int shrink_bounding(uint64_t keep, gh_error_t *err)
{
        for (cap_value_t c = 0; c <= last_cap(); c++) {
                if (keep & BIT(c))
                        continue;
                if (prctl(PR_CAPBSET_DROP, (unsigned long) c, 0, 0, 0) < 0) {
                        char name[32];
                        return gh_err(err, errno, "dropping %s from the bounding set",
                                      cap_label(c, name, sizeof(name)));
                }
        }
        return 0;
}

/* ORs bits into the securebits (needs CAP_SETPCAP).  Locked bits that already hold are fine. */
static int add_securebits(unsigned long bits, gh_error_t *err)
{
        int cur = prctl(PR_GET_SECUREBITS);
        if (cur < 0)
                return gh_err(err, errno, "reading the securebits");
        if (((unsigned long) cur | bits) == (unsigned long) cur)
                return 0;
        if (prctl(PR_SET_SECUREBITS, (unsigned long) cur | bits, 0, 0, 0) < 0)
                return gh_err(err, errno, "setting the securebits");
        return 0;
}

static void clear_ambient(void)
{
        /* EINVAL: a kernel before 4.3 has no ambient set, so there is nothing to clear. */
        (void) prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
}

int gh_caps_init(gh_error_t *err) { return gh_caps_init_phases(GH_PHASES_ALL, err); }

int gh_caps_init_phases(unsigned which, gh_error_t *err)
{
        uint64_t keep = gh_caps_union_mask(which), have;

        if (permitted_mask(&have, err) < 0)
                return gh_err_wrap(err, "limiting capabilities");
        if (have & BIT(CAP_SETPCAP)) {
                if (set_caps(have, BIT(CAP_SETPCAP), err) < 0 || shrink_bounding(keep, err) < 0)
                        return gh_err_wrap(err, "limiting capabilities");
                /* Keep-caps stays off for good: a setuid() in this process or a child drops
                 * every capability, and nothing can raise an ambient capability that an exec'd
                 * program would inherit. */
                if (add_securebits(SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE |
                                           SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED,
                                   err) < 0)
                        return gh_err_wrap(err, "limiting capabilities");
        } else {
                gh_debug("no CAP_SETPCAP: the bounding set stays as it is");
        }
        if (prctl(PR_GET_KEEPCAPS) != 0 && prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
                return gh_err(err, errno, "limiting capabilities: turning keep-caps off");
        clear_ambient();
        if (set_caps(have & keep, 0, err) < 0)
                return gh_err_wrap(err, "limiting capabilities");
        return 0;
}

int gh_caps_enter(enum gh_phase phase, gh_error_t *err)
{
        uint64_t want = gh_caps_phase_mask(phase), have;

        if ((unsigned) phase >= GH_PHASE_COUNT)
                return gh_err(err, EINVAL, "entering capability phase %d", (int) phase);
        if (permitted_mask(&have, err) < 0 || set_caps(have, want, err) < 0)
                return gh_err_wrap(err, "raising capabilities for phase %s", phases[phase].name);
        if ((want & ~have) && gh_log_get_level() >= GH_LOG_DEBUG) {
                char name[32];
                for (cap_value_t c = 0; c <= last_cap(); c++)
                        if (want & ~have & BIT(c))
                                gh_debug("phase %s: %s is not permitted here", phases[phase].name,
                                         cap_label(c, name, sizeof(name)));
        }
        return 0;
}

int gh_caps_drop_all(gh_error_t *err) { return gh_caps_drop_all_as((uid_t) -1, (gid_t) -1, err); }

int gh_caps_drop_all_as(uid_t uid, gid_t gid, gh_error_t *err)
{
        uint64_t have;

        if (permitted_mask(&have, err) < 0 || set_caps(have, have, err) < 0)
                return gh_err_wrap(err, "dropping capabilities");
        if (have & BIT(CAP_SETPCAP)) {
                /* NOROOT: even uid 0 gains nothing from exec, on top of no_new_privs. */
                if (shrink_bounding(0, err) < 0 ||
                    add_securebits(SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
                                           SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED,
                                   err) < 0)
                        return gh_err_wrap(err, "dropping capabilities");
        }
        clear_ambient();
        if (gid != (gid_t) -1) {
                if ((have & BIT(CAP_SETGID)) || getgroups(0, NULL) > 0) {
                        if (setgroups(0, NULL) < 0)
                                return gh_err(err, errno, "dropping capabilities: clearing supplementary groups");
                }
                if (setresgid(gid, gid, gid) < 0)
                        return gh_err(err, errno, "dropping capabilities: switching to gid %u", (unsigned) gid);
        }
        if (uid != (uid_t) -1 && setresuid(uid, uid, uid) < 0)
                return gh_err(err, errno, "dropping capabilities: switching to uid %u", (unsigned) uid);
        cur_caps.known = false; /* leaving uid 0 clears the permitted set */
        if (set_caps(0, 0, err) < 0)
                return gh_err_wrap(err, "dropping capabilities");
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return gh_err(err, errno, "dropping capabilities: setting no_new_privs");
        return 0;
}
