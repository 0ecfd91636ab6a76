/* Per-phase capabilities: what /proc/self/status shows after init, enter and drop_all, and what a
 * process can actually do in a phase.  The expected sets are written out here, not read from the
 * library's table, so a change to the table has to change this test too. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <stdbool.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "caps.h"
#include "cleanup.h"
#include "tap.h"

#define BIT(c) (UINT64_C(1) << (c))

/* Reads a hex ("CapEff") or decimal ("NoNewPrivs") field of /proc/self/status; -1 when missing. */
static int64_t status_field(const char *key)
{
        char line[256];
        size_t n = strlen(key);
        int64_t v = -1;
        FILE *f = fopen("/proc/self/status", "re");
        if (f == NULL)
                return -1;
        while (fgets(line, sizeof(line), f)) {
                if (strncmp(line, key, n) == 0 && line[n] == ':') {
                        v = (int64_t) strtoull(line + n + 1, NULL, strncmp(key, "Cap", 3) == 0 ? 16 : 10);
                        break;
                }
        }
        fclose(f);
        return v;
}

static bool kernel_has(int cap)
{
        FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "re");
        int last = 40;
        if (f) {
                if (fscanf(f, "%d", &last) != 1)
                        last = 40;
                fclose(f);
        }
        return cap <= last;
}

/* Runs fn in a child; returns its exit status (fn prints nothing, it reports through the status). */
static int in_child(int (*fn)(void))
{
        int st;
        pid_t pid = fork();
        if (pid == 0)
                _exit(fn());
        if (pid < 0 || waitpid(pid, &st, 0) < 0)
                return -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Exit codes say which check failed. */
static int child_drop_all(void)
{
        _cleanup_error_ gh_error_t err = NULL;
        if (gh_caps_drop_all(&err) < 0)
                return 10;
        if (status_field("CapEff") != 0 || status_field("CapPrm") != 0 || status_field("CapInh") != 0)
                return 11;
        if (status_field("CapBnd") != 0)
                return 12;
        if (status_field("CapAmb") > 0)
                return 13;
        if (status_field("NoNewPrivs") != 1)
                return 14;
        /* A program run afterwards, as uid 0, must come up without capabilities too. */
        execl("/bin/grep", "grep", "-q", "^CapPrm:[[:space:]]*0000000000000000$", "/proc/self/status", (char *) NULL);
        return 15;
}

static int child_drop_all_as_nobody(void)
{
        _cleanup_error_ gh_error_t err = NULL;
        gid_t groups[4];
        uid_t r, e, s;
        if (gh_caps_drop_all_as(65534, 65534, &err) < 0)
                return 10;
        if (getresuid(&r, &e, &s) < 0 || r != 65534 || e != 65534 || s != 65534)
                return 11;
        if (getgid() != 65534 || getegid() != 65534 || getgroups(4, groups) != 0)
                return 12;
        if (status_field("CapPrm") != 0 || status_field("CapBnd") != 0 || status_field("NoNewPrivs") != 1)
                return 13;
        if (setuid(0) == 0)
                return 14;
        return 0;
}

/* Without privileges every call must succeed and simply leave the effective set empty. */
static int child_unprivileged(void)
{
        _cleanup_error_ gh_error_t err = NULL;
        if (geteuid() == 0 &&
            (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0))
                return 9;
        if (gh_caps_init(&err) < 0)
                return 10;
        if (gh_caps_enter(GH_PHASE_MOUNT, &err) < 0)
                return 11;
        if (status_field("CapEff") != 0)
                return 12;
        if (gh_caps_drop_all(&err) < 0)
                return 13;
        if (status_field("NoNewPrivs") != 1)
                return 14;
        return 0;
}

int main(void)
{
        _cleanup_error_ gh_error_t err = NULL;
        bool root = geteuid() == 0 && status_field("CapEff") == status_field("CapBnd");
        uint64_t mount_set =
                BIT(CAP_SYS_ADMIN) | BIT(CAP_MKNOD) | BIT(CAP_CHOWN) | BIT(CAP_FOWNER) | BIT(CAP_DAC_OVERRIDE);
        uint64_t enter_set = BIT(CAP_SYS_ADMIN) | BIT(CAP_SYS_CHROOT) | BIT(CAP_SYS_PTRACE) | BIT(CAP_DAC_READ_SEARCH);
        uint64_t cgroup_set =
                BIT(CAP_SYS_ADMIN) | BIT(CAP_NET_ADMIN) | BIT(CAP_DAC_OVERRIDE) | (kernel_has(39) ? BIT(39) : 0);
        uint64_t before_prm = (uint64_t) status_field("CapPrm");
        char path[] = "/tmp/gh-caps-XXXXXX";

        /* Made before init takes CAP_CHOWN away. */
        _cleanup_close_ int tfd = root ? mkstemp(path) : -1;
        bool made_file = tfd >= 0 && fchown(tfd, 65534, 65534) == 0 && fchmod(tfd, 0) == 0;

        is_int(in_child(child_unprivileged), 0, "init/enter/drop_all as an unprivileged user succeed with nothing");

        ok(gh_caps_init(&err) == 0, "gh_caps_init: %s", err ? err->msg : "ok");
        is_int(status_field("CapEff"), 0, "after init nothing is effective");
        is_int(status_field("CapInh"), 0, "after init nothing is inheritable");
        if (root) {
                uint64_t prm = (uint64_t) status_field("CapPrm");
                ok((prm & mount_set) == mount_set && (prm & enter_set) == enter_set,
                   "after init the permitted set still holds every phase's capabilities (%#" PRIx64 ")", prm);
                ok(!(prm & BIT(CAP_SYS_MODULE)) && !(prm & BIT(CAP_SYS_RAWIO)) && !(prm & BIT(CAP_SYS_BOOT)),
                   "after init CAP_SYS_MODULE, CAP_SYS_RAWIO and CAP_SYS_BOOT are gone");
                is_int(status_field("CapBnd"), prm, "after init the bounding set equals the permitted set");
        } else {
                uint64_t prm = (uint64_t) status_field("CapPrm");
                ok((prm & ~before_prm) == 0, "unprivileged: the permitted set did not grow");
        }

        ok(gh_caps_enter(GH_PHASE_MOUNT, &err) == 0, "enter(mount)");
        is_int(status_field("CapEff"), root ? mount_set : 0, "CapEff in phase mount is exactly the mount set");
        ok(gh_caps_enter(GH_PHASE_ENTER, &err) == 0, "enter(enter)");
        is_int(status_field("CapEff"), root ? enter_set : 0, "CapEff in phase enter is exactly the enter set");
        ok(gh_caps_enter(GH_PHASE_CGROUP, &err) == 0, "enter(cgroup)");
        is_int(status_field("CapEff"), root ? cgroup_set : 0, "CapEff in phase cgroup is exactly the cgroup set");
        ok(gh_caps_enter(GH_PHASE_DONE, &err) == 0, "enter(done)");
        is_int(status_field("CapEff"), 0, "CapEff in phase done is empty");
        ok(gh_caps_enter(GH_PHASE_COUNT, &err) < 0 && err != NULL, "an unknown phase is refused");
        gh_error_free(&err);

        if (root) {
                /* What a user notices: a file nobody may read is readable only in a phase that
                 * carries CAP_DAC_OVERRIDE. */
                int fd;
                ok(made_file, "made a mode-0 file owned by nobody");
                fd = open(path, O_RDONLY | O_CLOEXEC);
                ok(fd < 0 && errno == EACCES, "phase done: opening a mode-0 file fails with EACCES");
                if (fd >= 0)
                        close(fd);
                ok(gh_caps_enter(GH_PHASE_LDCACHE, &err) == 0, "enter(ldcache)");
                fd = open(path, O_RDONLY | O_CLOEXEC);
                ok(fd >= 0, "phase ldcache: opening a mode-0 file works");
                if (fd >= 0)
                        close(fd);
                gh_caps_enter(GH_PHASE_DONE, &err);
                unlink(path);

                is_int(in_child(child_drop_all), 0,
                       "drop_all in a child: CapEff/CapPrm/CapBnd/CapAmb 0, NoNewPrivs 1, exec gains nothing");
                is_int(in_child(child_drop_all_as_nobody), 0,
                       "drop_all_as(65534): ids and groups switched, no capability, cannot become root again");
        } else {
                tap_diag("not root: the checks that need real capabilities are skipped");
        }
        return tap_done();
}
