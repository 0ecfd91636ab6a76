/* lib/core/mount.c: sources opened under a driver root, attached into a container root with the
 * flags each kind of item gets (docs/architecture.md#what-a-container-gets), a shared target refused
 * before anything is created, the masking tmpfs.  Runs in a mount namespace of its own: as root, or
 * in a user namespace when unprivileged ones are allowed.  Twice: with the new mount API and with
 * --no-new-mount-api (the mount(2) fallback). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "cleanup.h"
#include "mount.h"
#include "rootfs.h"
#include "syscalls.h"
#include "tests/tap.h"
#include "tests/testutil.h"

static char T[64], D[PATH_MAX], C[PATH_MAX];
static bool legacy;

/* base/rel in one of four rotating buffers (a test line may name a few paths). */
static const char *at(const char *base, const char *rel)
{
        static char bufs[4][PATH_MAX * 2];
        static int next;
        char *b = bufs[next++ % 4];

        snprintf(b, sizeof(bufs[0]), "%s%s", base, rel);
        return b;
}

/* "rdonly,nosuid,nodev,noexec" as statvfs says for the mount at C/rel: what a user sees in mount(8). */
static const char *flags_of(const char *rel)
{
        static char buf[64];
        struct statvfs sv;
        unsigned long f;

        if (statvfs(at(C, rel), &sv) < 0)
                return "(no such path)";
        f = sv.f_flag;
        snprintf(buf, sizeof(buf), "%s,%s,%s,%s", f & ST_RDONLY ? "ro" : "rw", f & ST_NOSUID ? "nosuid" : "suid",
                 f & ST_NODEV ? "nodev" : "dev", f & ST_NOEXEC ? "noexec" : "exec");
        return buf;
}

/* "shared" or "private" for the mount at path (its mountinfo optional fields), "" when none is. */
static const char *propagation(const char *path)
{
        static char buf[32];
        char *out = sh_output(
                "awk -v p='%s' '$5 == p { sub(/ - .*/, \"\"); print (/ shared:/ ? \"shared\" : \"private\") }' "
                "/proc/self/mountinfo | tail -n 1",
                path);

        snprintf(buf, sizeof(buf), "%s", out ? strtok(out, "\n") ? out : "" : "");
        free(out);
        return buf;
}

static char *slurp(const char *path)
{
        static char buf[256];
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

        if (fd >= 0)
                close(fd);
        buf[n < 0 ? 0 : n] = '\0';
        return buf;
}

/* Opens D/rel as a source and attaches it at C/cpath; returns the call's result and fills *msg. */
static int inject(const char *rel, const char *cpath, enum gh_target_kind kind, unsigned flags, char **msg)
{
        _cleanup_close_ int droot = -1, croot = -1;
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_source src;
        int r;

        droot = gh_rootfs_open(D, &err);
        croot = gh_rootfs_open(C, &err);
        if (droot < 0 || croot < 0)
                abort();
        r = gh_source_open(droot, D, rel, flags, &src, &err);
        if (r == 0)
                r = gh_attach(&src, croot, cpath, kind, flags, &err);
        gh_source_close(&src);
        if (msg)
                *msg = r < 0 ? strdup(err->msg) : NULL;
        else if (r < 0)
                tap_diag("%s", err->msg);
        return r;
}

static void test_sources(void)
{
        _cleanup_close_ int droot = gh_rootfs_open(D, NULL);
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_source src;
        struct stat st;
        int r;

        ok(gh_source_open(droot, D, "/usr/bin/tool", GH_MNT_FILE, &src, &err) == 0, "a driver file opens as a source");
        is_str(src.path, at(D, "/usr/bin/tool"), "the source is named by its host path (for messages)");
        ok(src.detached == !legacy, "%s",
           legacy ? "without the new mount API it is an O_PATH fd to bind later"
                  : "with the new mount API it is a detached clone");
        gh_source_close(&src);
        ok(src.fd == -1 && src.path == NULL, "closing a source leaves it empty");

        /* An absolute link in the driver root resolves inside it, not on the host. */
        ok(gh_source_open(droot, D, "/usr/bin/alias", GH_MNT_FILE, &src, &err) == 0,
           "a source through an absolute link opens");
        ok(stat(at(D, "/usr/bin/tool"), &st) == 0 && src.st.st_ino == st.st_ino && src.st.st_dev == st.st_dev,
           "an absolute link in the driver root (/usr/bin/alias -> /usr/bin/tool) is the root's tool, not the host's");
        gh_source_close(&src);

        r = gh_source_open(droot, D, "/usr/lib/missing.so", GH_MNT_FILE, &src, &err);
        ok(r < 0 && strstr(err->msg, "missing.so") && strstr(err->msg, D),
           "a missing driver file is an error naming its host path: %s", r < 0 ? err->msg : "");
        gh_source_close(&src);
}

static void test_flags(void)
{
        char *msg = NULL;
        int fd, r;

        ok(inject("/usr/bin/tool", "/usr/bin/tool", GH_TARGET_FILE, GH_MNT_FILE, NULL) == 0,
           "a program attaches at a path whose directories do not exist yet");
        is_str(slurp(at(C, "/usr/bin/tool")), "tool v1\n", "the container sees the driver's file");
        is_str(flags_of("/usr/bin/tool"), "ro,nosuid,nodev,exec", "a file (library, program) is ro,nosuid,nodev");
        is_str(propagation(at(C, "/usr/bin/tool")), "private",
               "the mount propagates nowhere, though the driver root it comes from is shared");
        fd = open(at(C, "/usr/bin/tool"), O_WRONLY | O_APPEND | O_CLOEXEC);
        ok(fd < 0 && errno == EROFS, "root in the container cannot append to the driver's file (EROFS)");
        if (fd >= 0)
                close(fd);
        ok(inject("/dev/node", "/dev/node", GH_TARGET_FILE, GH_MNT_DEV, NULL) == 0, "a device item attaches");
        is_str(flags_of("/dev/node"), "ro,nosuid,dev,noexec", "a device node mount is ro,nosuid,noexec and not nodev");
        ok(inject("/run/ipc", "/run/ipc", GH_TARGET_DIR, GH_MNT_IPC, NULL) == 0, "an IPC directory attaches");
        is_str(flags_of("/run/ipc"), "rw,nosuid,nodev,noexec", "an IPC mount is writable, nosuid,nodev,noexec");
        is_str(slurp(at(C, "/run/ipc/inside")), "pipe\n", "the directory's content is there");
        ok(inject("/usr/share/icd.json", "/usr/share/icd.json", GH_TARGET_FILE, GH_MNT_FILE | GH_MNT_NOEXEC, NULL) == 0,
           "a loader file attaches");
        is_str(flags_of("/usr/share/icd.json"), "ro,nosuid,nodev,noexec", "a loader file is also noexec");
        r = inject("/usr/bin/tool", "/usr/bin", GH_TARGET_FILE, GH_MNT_FILE, &msg);
        ok(r < 0 && msg && strstr(msg, "/usr/bin"), "a file onto an image's directory is refused, naming it: %s",
           msg ? msg : "");
        free(msg);
}

/* A source opened with the flags it will be attached with (gh_source_open): on a kernel with
 * open_tree_attr the clone carries them from the start; with other flags at the attach, those win
 * (the clone's extra flags are cleared); where the call is missing, the two-step path gives the
 * same mounts. */
static void preset_case(const char *rel, const char *cpath, unsigned open_flags, unsigned flags, const char *want,
                        const char *desc)
{
        _cleanup_close_ int droot = gh_rootfs_open(D, NULL), croot = gh_rootfs_open(C, NULL);
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_source src;
        int r;

        r = gh_source_open(droot, D, rel, open_flags, &src, &err);
        if (r == 0)
                r = gh_attach(&src, croot, cpath, GH_TARGET_FILE, flags, &err);
        gh_source_close(&src);
        if (r < 0)
                tap_diag("%s", err->msg);
        ok(r == 0, "%s: attached", desc);
        is_str(flags_of(cpath), want, "%s: %s", desc, want);
        is_str(propagation(at(C, cpath)), "private", "%s: private", desc);
}

static void test_preset_flags(void)
{
        _cleanup_close_ int droot = gh_rootfs_open(D, NULL);
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_source src;

        ok(gh_source_open(droot, D, "/usr/bin/tool", GH_MNT_FILE, &src, &err) == 0, "a source opens with its flags");
        tap_diag("open_tree_attr: %s",
                 src.has_flags ? "used (Linux 6.15+)" : "not here: open_tree, then mount_setattr");
        ok(!legacy || !src.has_flags, "without the new mount API no clone carries flags");
        gh_source_close(&src);
        preset_case("/usr/bin/tool", "/preset/tool", GH_MNT_FILE, GH_MNT_FILE, "ro,nosuid,nodev,exec",
                    "opened and attached as a file");
        preset_case("/usr/bin/tool", "/preset/rw", GH_MNT_FILE, GH_MNT_IPC, "rw,nosuid,nodev,noexec",
                    "opened as a file, attached writable and noexec");
        preset_case("/dev/node", "/preset/node", GH_MNT_DEV, GH_MNT_DEV, "ro,nosuid,dev,noexec",
                    "opened and attached as a device node");
        gh_syscall_disable(GH_SYS_OPEN_TREE_ATTR);
        ok(gh_source_open(droot, D, "/usr/bin/tool", GH_MNT_FILE, &src, &err) == 0 && !src.has_flags,
           "with open_tree_attr turned off the clone carries no flags");
        gh_source_close(&src);
        preset_case("/usr/bin/tool", "/preset/two-step", GH_MNT_FILE, GH_MNT_FILE, "ro,nosuid,nodev,exec",
                    "open_tree_attr off: the same mount");
}

/* The source is pinned when it is opened: a driver file swapped before the attach is either the
 * file that was opened (new API) or refused (legacy re-open), never the new one. */
static void test_swapped_source(void)
{
        _cleanup_close_ int droot = gh_rootfs_open(D, NULL), croot = gh_rootfs_open(C, NULL);
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_source src;
        int r;

        ok(gh_source_open(droot, D, "/usr/lib/libswap.so", GH_MNT_FILE, &src, &err) == 0, "libswap.so opens");
        if (rename(at(D, "/usr/lib/libswap.so"), at(D, "/usr/lib/libswap.so.old")) < 0)
                abort();
        put_file("evil\n", "%s/usr/lib/libswap.so", D);
        r = gh_attach(&src, croot, "/usr/lib/libswap.so", GH_TARGET_FILE, GH_MNT_FILE, &err);
        if (legacy)
                ok(r < 0 && strstr(err->msg, "changed while it was being injected"),
                   "legacy: a source replaced after it was opened is refused: %s", r < 0 ? err->msg : "");
        else
                ok(r == 0 && strcmp(slurp(at(C, "/usr/lib/libswap.so")), "swap v1\n") == 0,
                   "new API: the container gets the file that was opened, not its replacement");
        gh_source_close(&src);
}

/* A target on a shared mount would propagate to the host: refused, and before anything is created
 * there (an empty file made in a shared volume is already a write to the host). */
static void shared_once(const char *how, const char *private_target)
{
        char *msg = NULL;
        struct stat st;
        int r = inject("/usr/bin/tool", "/vol/sub/tool", GH_TARGET_FILE, GH_MNT_FILE, &msg);

        ok(r < 0 && msg && strstr(msg, "shared mount") && strstr(msg, "/vol/sub/tool"),
           "%s: a target on a shared volume is refused, naming it: %s", how, msg ? msg : "");
        free(steal_pointer(&msg));
        ok(stat(at(C, "/vol/sub"), &st) < 0 && errno == ENOENT, "%s: nothing was created in the shared volume", how);
        ok(inject("/usr/bin/tool", "/vol", GH_TARGET_FILE, GH_MNT_FILE, &msg) < 0, "%s: nor onto the volume itself",
           how);
        free(steal_pointer(&msg));
        ok(inject("/usr/bin/tool", private_target, GH_TARGET_FILE, GH_MNT_FILE, &msg) == 0,
           "%s: a target on a private mount is not refused: %s", how, msg ? msg : "");
        free(msg);
}

/* Asked of statmount (Linux 6.8) where the kernel has it, then of the mount table, as on older
 * kernels: both must refuse the same targets. */
static void test_shared(void)
{
        struct gh_statmount sm;
        struct statx stx;
        bool have = statx(AT_FDCWD, "/", 0, STATX_MNT_ID_UNIQUE, &stx) == 0 && (stx.stx_mask & STATX_MNT_ID_UNIQUE) &&
                    gh_statmount(stx.stx_mnt_id, GH_STATMOUNT_MNT_BASIC, &sm) == 0;

        tap_diag("statmount: %s", have ? "this kernel has it" : "not here (the mount table is read)");
        shared_once(have ? "statmount" : "mount table", "/usr/bin/tool-a");
        gh_syscall_disable(GH_SYS_STATMOUNT);
        shared_once("mount table", "/usr/bin/tool-b");
}

/* An image's symlink at the target is replaced, never followed to the host. */
static void test_target_link(void)
{
        struct stat st, dir;

        if ((mkdir(at(C, "/usr/lib"), 0755) < 0 && errno != EEXIST) ||
            symlink("../../../outside/secret", at(C, "/usr/lib/libhost.so")) < 0)
                abort();
        ok(inject("/usr/lib/libswap.so.old", "/usr/lib/libhost.so", GH_TARGET_FILE, GH_MNT_FILE, NULL) == 0,
           "a file attaches where the image has a symlink pointing out of the root");
        is_str(slurp(at(T, "/outside/secret")), "host\n", "the host file the link pointed at is untouched");
        ok(stat(at(T, "/outside/secret"), &st) == 0 && stat(at(T, "/outside"), &dir) == 0 && st.st_dev == dir.st_dev,
           "and nothing is mounted over it");
        is_str(slurp(at(C, "/usr/lib/libhost.so")), "swap v1\n", "the container gets the driver's file there");
}

static void test_tmpfs(void)
{
        _cleanup_close_ int croot = gh_rootfs_open(C, NULL);
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_close_ int fd = gh_tmpfs_attach(croot, "/proc/driver/nvidia", NULL, &err);
        int f;

        ok(fd >= 0, "a tmpfs attaches at /proc/driver/nvidia (created)");
        if (fd < 0)
                return tap_diag("%s", err->msg);
        f = openat(fd, "params", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
        ok(f >= 0 && write(f, "x\n", 2) == 2, "it can be filled through the returned fd");
        if (f >= 0)
                close(f);
        is_str(flags_of("/proc/driver/nvidia"), "rw,nosuid,nodev,noexec", "the fresh tmpfs is nosuid,nodev,noexec");
        ok(gh_remount(croot, "/proc/driver/nvidia", GH_MNT_RDONLY | GH_MNT_NOSUID | GH_MNT_NODEV | GH_MNT_NOEXEC,
                      &err) == 0,
           "sealing it works");
        is_str(flags_of("/proc/driver/nvidia"), "ro,nosuid,nodev,noexec", "sealed: read-only");
        f = openat(fd, "other", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
        ok(f < 0 && errno == EROFS, "nothing more can be written into it");
        if (f >= 0)
                close(f);
}

int main(int argc, char **argv)
{
        char why[256];

        legacy = argc > 1 && strcmp(argv[1], "--no-new-mount-api") == 0;
        if (legacy)
                gh_syscall_disable(GH_SYS_NEW_MOUNT_API);
        tap_diag("mount API: %s", legacy ? "mount(2) fallback (new API disabled)" : "new when the kernel has it");
        snprintf(T, sizeof(T), "/tmp/test-mount.XXXXXX");
        if (mkdtemp(T) == NULL)
                return 1;
        snprintf(D, sizeof(D), "%s/drv", T);
        snprintf(C, sizeof(C), "%s/ctr", T);
        put_file("tool v1\n", "%s/usr/bin/tool", D);
        put_file("swap v1\n", "%s/usr/lib/libswap.so", D);
        put_file("{}\n", "%s/usr/share/icd.json", D);
        put_file("node\n", "%s/dev/node", D);
        put_file("pipe\n", "%s/run/ipc/inside", D);
        put_file("host\n", "%s/outside/secret", T);
        if (symlink("/usr/bin/tool", at(D, "/usr/bin/alias")) < 0 || mkdir(C, 0755) < 0 ||
            mkdir(at(C, "/vol"), 0755) < 0)
                return 1;

        /* The tests run in a child whose mount namespace ends with it; the parent then removes the
         * files (no mount of ours is left on them). */
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0)
                return 1;
        if (pid > 0) {
                int st = 0;
                while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                        ;
                sh("chmod -R u+w '%s'; rm -rf '%s'", T, T); /* mkdir 0555 of the masking point */
                return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
        }
        if (enter_mount_ns(why, sizeof(why)) < 0)
                tap_skip_all(why);
        tap_diag("%s", in_user_ns() ? "in a user namespace of our own" : "as root in a mount namespace of our own");
        /* A shared volume in the container, made before any attach reads the mount table. */
        /* The driver root is a shared mount, as / is on a systemd host: a bind of it joins its peer
         * group unless the injection makes the new mount private. */
        if (mount(D, D, NULL, MS_BIND, NULL) < 0 || mount(NULL, D, NULL, MS_SHARED, NULL) < 0)
                return printf("Bail out! a shared driver root for the test: %s\n", strerror(errno)), 1;
        if (mount("tmpfs", at(C, "/vol"), "tmpfs", 0, "size=1m") < 0 ||
            mount(NULL, at(C, "/vol"), NULL, MS_SHARED, NULL) < 0)
                return printf("Bail out! a shared tmpfs for the test: %s\n", strerror(errno)), 1;
        test_sources();
        test_flags();
        test_preset_flags();
        test_swapped_source();
        test_shared();
        test_target_link();
        test_tmpfs();
        return tap_done();
}
