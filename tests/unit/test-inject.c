/* lib/core/inject.c: a plan applied to a container root.  Sources are opened under the driver root,
 * then files, directories and links appear in the container with their flags, an optional link that
 * the image already has as a file is skipped, /proc/driver/nvidia is masked by a sealed tmpfs that
 * shows the selected GPUs only.  Hand-made plans over plain files run as root or in a user namespace;
 * device nodes (bound or made with --no-devbind) and a plan from the fake driver need root. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cleanup.h"
#include "discover.h"
#include "plan.h"
#include "request.h"
#include "rootfs.h"
#include "syscalls.h"
#include "tests/tap.h"
#include "tests/testutil.h"

#define L64 "/usr/lib/x86_64-linux-gnu"
#define VER "580.95.05"

static char T[64];

static const char *at(const char *base, const char *rel)
{
        static char bufs[4][PATH_MAX * 2];
        static int next;
        char *b = bufs[next++ % 4];

        snprintf(b, sizeof(bufs[0]), "%s%s", base, rel);
        return b;
}

static const char *slurp(const char *path)
{
        static char buf[512];
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

        if (fd >= 0)
                close(fd);
        buf[n < 0 ? 0 : n] = '\0';
        return buf;
}

static bool read_only(const char *path)
{
        struct statvfs sv;
        return statvfs(path, &sv) == 0 && (sv.f_flag & ST_RDONLY);
}

/* Whether path is where something is mounted, as this mount namespace's mountinfo says. */
static bool is_mount_point(const char *path)
{
        return sh("awk -v p='%s' '$5 == p { found = 1 } END { exit !found }' /proc/self/mountinfo", path) == 0;
}

/* The entries of a directory, sorted, space-separated. */
static const char *entries(const char *dir)
{
        static char buf[512];
        char *out = sh_output("ls -A '%s' 2>&1 | tr '\\n' ' '", dir);

        snprintf(buf, sizeof(buf), "%s", out ? out : "");
        free(out);
        return buf;
}

/* Opens the plan's sources under driver (host side) and applies it to ctr. */
static int open_and_apply(struct gh_plan *p, const char *driver, const char *ctr, gh_error_t *err)
{
        _cleanup_close_ int droot = gh_rootfs_open(driver, err);
        _cleanup_close_ int croot = -1;

        if (droot < 0)
                return -1;
        croot = gh_rootfs_open(ctr, err);
        if (croot < 0 || gh_plan_open_sources(p, droot, driver, err) < 0)
                return -1;
        return gh_plan_apply(p, croot, err);
}

static void make_trees(const char *D, const char *C)
{
        put_file("cuda " VER "\n", "%s" L64 "/libcuda.so." VER, D);
        put_file("smi\n", "%s/usr/bin/nvidia-smi", D);
        put_file("", "%s/run/nvidia-persistenced/socket", D);
        put_file("RmLogonRC: 1\nModifyDeviceFiles: 1\n", "%s/proc/driver/nvidia/params", D);
        put_file("NVRM version: NVIDIA UNIX x86_64 Kernel Module  " VER "\n", "%s/proc/driver/nvidia/version", D);
        put_file("Binary: \"\"\n", "%s/proc/driver/nvidia/registry", D);
        put_file("Device Minor: 0\n", "%s/proc/driver/nvidia/gpus/0000:00:06.0/information", D);
        put_file("Device Minor: 1\n", "%s/proc/driver/nvidia/gpus/0000:00:07.0/information", D);
        put_file("not a device\n", "%s/dev/nvidia0", D);
        put_file("", "%s/mps/g/pipe/control", T);
        put_file("12\n", "%s/etc/debian_version", C);
        put_file("the image's own\n", "%s" L64 "/libexisting.so.1", C);
}

/* A plan as plan.c would build it, over plain files: every kind of item but device nodes. */
static void test_hand_plan(void)
{
        char D[PATH_MAX], C[PATH_MAX], mps[PATH_MAX];
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_plan p = { 0 };
        char link[64] = "";
        struct stat st;
        int r = 0;

        snprintf(D, sizeof(D), "%s/drv", T);
        snprintf(C, sizeof(C), "%s/ctr", T);
        snprintf(mps, sizeof(mps), "%s/mps/g/pipe", T);
        make_trees(D, C);
        _cleanup_close_ int droot = gh_rootfs_open(D, &err);
        r |= gh_plan_add(&p, GH_ITEM_FILE, L64 "/libcuda.so." VER, L64 "/libcuda.so." VER, GH_MNT_FILE, &err);
        r |= gh_plan_add_symlink(&p, L64 "/libcuda.so.1", "libcuda.so." VER, true, &err);
        r |= gh_plan_add_symlink(&p, L64 "/libexisting.so.1", "libcuda.so." VER, true, &err);
        r |= gh_plan_add(&p, GH_ITEM_FILE, "/usr/bin/nvidia-smi", "/usr/bin/nvidia-smi", GH_MNT_FILE, &err);
        r |= gh_plan_add(&p, GH_ITEM_DIR, "/run/nvidia-persistenced", "/run/nvidia-persistenced", GH_MNT_IPC, &err);
        r |= gh_plan_add(&p, GH_ITEM_DIR, mps, "/tmp/nvidia-mps", GH_MNT_IPC, &err);
        if (r == 0)
                p.items[p.n - 1].host_src = true;
        r |= gh_plan_read_proc(&p, droot, &err);
        r |= gh_plan_add_proc_gpu(&p, "0000:00:07.0", &err);
        if (!ok(r == 0, "a plan of files, links, directories and the /proc mask"))
                return;

        r = open_and_apply(&p, D, C, &err);
        ok(r == 0, "it applies");
        if (r < 0)
                tap_diag("%s", err->msg);
        is_str(slurp(at(C, L64 "/libcuda.so." VER)), "cuda " VER "\n", "the library is in the container");
        ok(read_only(at(C, L64 "/libcuda.so." VER)), "read-only");
        ok(readlink(at(C, L64 "/libcuda.so.1"), link, sizeof(link) - 1) > 0 && strcmp(link, "libcuda.so." VER) == 0,
           "its SONAME link points at it");
        ok(lstat(at(C, L64 "/libexisting.so.1"), &st) == 0 && S_ISREG(st.st_mode) &&
                   strcmp(slurp(at(C, L64 "/libexisting.so.1")), "the image's own\n") == 0,
           "an optional link where the image has a file is skipped: the image's file stays");
        is_str(slurp(at(C, "/usr/bin/nvidia-smi")), "smi\n", "the program is in the container");
        ok(stat(at(C, "/run/nvidia-persistenced/socket"), &st) == 0 && !read_only(at(C, "/run/nvidia-persistenced")),
           "the IPC directory is there, writable");
        ok(stat(at(C, "/tmp/nvidia-mps/control"), &st) == 0, "a host directory (an MPS group's pipes) is there too");

        /* /proc/driver/nvidia */
        is_str(slurp(at(C, "/proc/driver/nvidia/params")), "RmLogonRC: 1\nModifyDeviceFiles: 0\n",
               "the container's params say ModifyDeviceFiles: 0");
        ok(strstr(slurp(at(C, "/proc/driver/nvidia/version")), VER) != NULL, "the version file is there");
        is_str(slurp(at(C, "/proc/driver/nvidia/registry")), "Binary: \"\"\n", "the registry file too");
        is_str(entries(at(C, "/proc/driver/nvidia/gpus")), "0000:00:07.0 ", "gpus/ shows the selected GPU only");
        is_str(slurp(at(C, "/proc/driver/nvidia/gpus/0000:00:07.0/information")), "Device Minor: 1\n",
               "with the driver's information file");
        ok(read_only(at(C, "/proc/driver/nvidia")) && read_only(at(C, "/proc/driver/nvidia/gpus/0000:00:07.0")),
           "the mask and the GPU directory in it are read-only");
        errno = 0;
        int fd = open(at(C, "/proc/driver/nvidia/params"), O_WRONLY | O_TRUNC | O_CLOEXEC);
        ok(fd < 0 && (errno == EROFS || errno == EACCES), "root in the container cannot rewrite params (%s)",
           strerror(errno));
        if (fd >= 0)
                close(fd);
        fd = open(at(C, "/proc/driver/nvidia/new"), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        ok(fd < 0 && errno == EROFS, "nor add a file to the mask");
        if (fd >= 0)
                close(fd);
        ok(stat(at(D, "/proc/driver/nvidia/params"), &st) == 0 &&
                   strstr(slurp(at(D, "/proc/driver/nvidia/params")), "ModifyDeviceFiles: 1"),
           "the driver root's params are untouched");
        gh_plan_free(&p);
}

static void test_refusals(void)
{
        char D[PATH_MAX], C[PATH_MAX];
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_plan p = { 0 };
        struct stat st;
        int r;

        snprintf(D, sizeof(D), "%s/drv", T);
        snprintf(C, sizeof(C), "%s/ctr2", T);
        put_file("", "%s/etc/debian_version", C);

        gh_plan_add_symlink(&p, "/etc", "elsewhere", false, &err);
        r = open_and_apply(&p, D, C, &err);
        ok(r < 0 && strstr(err->msg, "/etc"), "a required link onto the image's directory fails, naming it: %s",
           r < 0 ? err->msg : "");
        ok(lstat(at(C, "/etc"), &st) == 0 && S_ISDIR(st.st_mode), "and the directory stays");
        gh_plan_free(&p);
        gh_error_free(&err);

        gh_plan_add_device(&p, "/dev/nvidia0", "/dev/nvidia0", makedev(195, 0), &err);
        r = open_and_apply(&p, D, C, &err);
        ok(r < 0 && strstr(err->msg, "/dev/nvidia0") && strstr(err->msg, "195:0"),
           "a device item whose node is now a plain file is refused on the host: %s", r < 0 ? err->msg : "");
        ok(stat(at(C, "/dev/nvidia0"), &st) < 0, "before anything is made in the container");
        gh_plan_free(&p);
        gh_error_free(&err);

        gh_plan_add(&p, GH_ITEM_FILE, "/usr/lib/libgone.so.1", "/usr/lib/libgone.so.1", GH_MNT_FILE, &err);
        r = open_and_apply(&p, D, C, &err);
        ok(r < 0 && strstr(err->msg, "libgone.so.1") && strstr(err->msg, D),
           "a driver file that is gone is an error naming its host path: %s", r < 0 ? err->msg : "");
        ok(stat(at(C, "/usr/lib/libgone.so.1"), &st) < 0, "and nothing is made for it in the container");
        gh_plan_free(&p);
}

/* ---- as root: a plan from the fake driver, device nodes bound or made ---- */

static int fake_plan(const char *R, bool no_devbind, struct gh_plan *p, gh_error_t *err)
{
        _cleanup_request_ struct gh_request req = GH_REQUEST_INIT;
        struct gh_layout lay;

        if (gh_request_set_devices(&req, "1", err) < 0 ||
            gh_request_option(&req, GH_REQUEST_OPT_COMPUTE, NULL, err) < 0 ||
            gh_request_option(&req, GH_REQUEST_OPT_UTILITY, NULL, err) < 0 || gh_layout_named("debian", &lay, err) < 0)
                return -1;
        req.no_devbind = no_devbind;
        return gh_plan_for_root(R, NULL, NULL, &req, &lay, p, err);
}

static void test_fake_driver(void)
{
        const char *mkroot = getenv("FAKE_DRIVER_MAKE_ROOT");
        char R[PATH_MAX];

        if (mkroot == NULL)
                return tap_diag("FAKE_DRIVER_MAKE_ROOT not set (run under meson test): fake driver plans skipped");
        snprintf(R, sizeof(R), "%s/fake", T);
        if (!ok(sh("'%s' '%s' >/dev/null 2>&1", mkroot, R) == 0, "make-root.sh made a fake driver root"))
                return;
        for (int devbind = 1; devbind >= 0; devbind--) {
                const char *how = devbind ? "bound" : "made (--no-devbind)";
                _cleanup_error_ gh_error_t err = NULL;
                struct gh_plan p;
                struct stat st;
                char C[PATH_MAX];

                snprintf(C, sizeof(C), "%s/image-%d", T, devbind);
                put_file("12\n", "%s/etc/debian_version", C);
                if (fake_plan(R, !devbind, &p, &err) < 0 || open_and_apply(&p, R, C, &err) < 0) {
                        ok(0, "--device=1 --compute --utility applies (nodes %s): %s", how, err->msg);
                        gh_plan_free(&p);
                        continue;
                }
                ok(1, "--device=1 --compute --utility applies (nodes %s)", how);
                ok(stat(at(C, "/dev/nvidia1"), &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(195, 1),
                   "nodes %s: /dev/nvidia1 is the character device 195:1", how);
                ok(stat(at(C, "/dev/nvidia0"), &st) < 0 && errno == ENOENT, "nodes %s: there is no /dev/nvidia0", how);
                ok(stat(at(C, "/dev/nvidiactl"), &st) == 0 && st.st_rdev == makedev(195, 255) &&
                           stat(at(C, "/dev/nvidia-uvm"), &st) == 0 && S_ISCHR(st.st_mode),
                   "nodes %s: nvidiactl and nvidia-uvm", how);
                ok(is_mount_point(at(C, "/dev/nvidia1")) == devbind, "nodes %s: %s", how,
                   devbind ? "a mount of the host's node" : "a node of the image's own, not a mount");
                if (devbind) {
                        ok(read_only(at(C, "/dev/nvidia1")), "the bound node's mount is read-only");
                        is_str(entries(at(C, "/proc/driver/nvidia/gpus")), "0000:00:07.0 ",
                               "/proc/driver/nvidia/gpus shows GPU 1 only");
                        /* The library loads from the container's tree (it needs libc only). */
                        fflush(stdout);
                        pid_t pid = fork();
                        if (pid == 0)
                                _exit(dlopen(at(C, L64 "/libcuda.so.1"), RTLD_NOW) ? 0 : 1);
                        int wst = 0;
                        waitpid(pid, &wst, 0);
                        ok(WIFEXITED(wst) && WEXITSTATUS(wst) == 0, "the injected libcuda.so.1 loads (dlopen)");
                        is_str(slurp(at(C, "/usr/bin/nvidia-smi")), slurp(at(R, "/usr/bin/nvidia-smi")),
                               "nvidia-smi is the driver's");
                }
                gh_plan_free(&p);
        }
}

int main(int argc, char **argv)
{
        char why[256];

        if (argc > 1 && strcmp(argv[1], "--no-new-mount-api") == 0)
                gh_syscall_disable(GH_SYS_NEW_MOUNT_API);
        snprintf(T, sizeof(T), "/tmp/test-inject.XXXXXX");
        if (mkdtemp(T) == NULL)
                return 1;
        /* The tests run in a child whose mount namespace ends with it; the parent removes the files. */
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0)
                return 1;
        if (pid > 0) {
                int st = 0;
                while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                        ;
                sh("chmod -R u+w '%s'; rm -rf '%s'", T, T);
                return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
        }
        if (enter_mount_ns(why, sizeof(why)) < 0)
                tap_skip_all(why);
        test_hand_plan();
        test_refusals();
        if (in_user_ns())
                tap_diag("in a user namespace: device nodes and the fake driver's plan need root, skipped");
        else
                test_fake_driver();
        return tap_done();
}
