/* lib/core/plan.c: what a container gets for a request, decided on the host.  The building blocks,
 * the layouts, /proc/driver/nvidia's params and the "no driver" kind run anywhere; whole plans are
 * built from a fake driver root (tests/fake-driver/make-root.sh), whose device nodes exist only
 * when it is made as root. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capability.h"
#include "cleanup.h"
#include "discover.h"
#include "mps.h"
#include "plan.h"
#include "plancache.h"
#include "proc.h"
#include "request.h"
#include "rootfs.h"
#include "tests/tap.h"
#include "tests/testutil.h"

#define L64 "/usr/lib/x86_64-linux-gnu"
#define L32 "/usr/lib/i386-linux-gnu"
#define VER "580.95.05"
#define GPU1_UUID "GPU-af0f763e-f7c4-6ced-14b4-3f65d4c848a7"
#define GPU1_BUS "0000:00:07.0"

static char T[64], R[PATH_MAX];

static const struct gh_item *item(const struct gh_plan *p, const char *dst)
{
        for (size_t i = 0; i < p->n; i++)
                if (strcmp(p->items[i].dst, dst) == 0)
                        return &p->items[i];
        return NULL;
}

static const struct gh_plan_lib *ld_entry(const struct gh_plan *p, const char *soname)
{
        for (size_t i = 0; i < p->nlibs; i++)
                if (strcmp(p->libs[i].soname, soname) == 0)
                        return &p->libs[i];
        return NULL;
}

/* Items whose container path contains needle. */
static size_t count_dst(const struct gh_plan *p, const char *needle)
{
        size_t n = 0;
        for (size_t i = 0; i < p->n; i++)
                n += strstr(p->items[i].dst, needle) != NULL;
        return n;
}

static bool has_rule(const struct gh_plan *p, unsigned maj, unsigned min)
{
        for (size_t i = 0; i < p->nrules; i++)
                if (p->rules[i].type == 'c' && p->rules[i].major == maj && p->rules[i].minor == min)
                        return true;
        return false;
}

static bool is_link(const struct gh_item *it, const char *target)
{
        return it && it->kind == GH_ITEM_SYMLINK && strcmp(it->target, target) == 0;
}

/* The plan for gpu-cli request options (a NULL-terminated list) on root, in layout. */
static int plan_for(const char *root, const char *layout, struct gh_plan *plan, gh_error_t *err, ...)
{
        _cleanup_request_ struct gh_request req = GH_REQUEST_INIT;
        const struct gh_request_cli cli = { .shortopts = "d:R:" };
        struct gh_layout lay;
        char *argv[32];
        int argc = 0;
        va_list ap;

        argv[argc++] = (char *) "list";
        va_start(ap, err);
        for (char *a; (a = va_arg(ap, char *)) != NULL && argc < 31;)
                argv[argc++] = a;
        va_end(ap);
        argv[argc] = NULL;
        if (gh_request_parse_args(&req, argc, argv, &cli, err) < 0 || gh_layout_named(layout, &lay, err) < 0)
                return -1;
        return gh_plan_for_root(root, NULL, NULL, &req, &lay, plan, err);
}

static void test_building_blocks(void)
{
        struct gh_plan p = { 0 };
        _cleanup_error_ gh_error_t err = NULL;
        const struct gh_item *it;

        ok(gh_plan_add(&p, GH_ITEM_FILE, "/a/first", "/usr/bin/x", GH_MNT_FILE, &err) == 0 &&
                   gh_plan_add(&p, GH_ITEM_FILE, "/b/second", "/usr/bin/x", GH_MNT_FILE, &err) == 0,
           "two items for one container path are accepted");
        is_int(p.n, 1, "but the path is planned once");
        is_str(p.items[0].src, "/a/first", "the first one wins");
        ok(gh_plan_add_symlink(&p, "/usr/bin/x", "elsewhere", true, &err) == 0 && p.n == 1,
           "a link at a planned path is not added either");
        ok(gh_plan_add_device(&p, "/dev/nvidia3", "/dev/nvidia3", makedev(195, 3), &err) == 0, "a device item");
        it = item(&p, "/dev/nvidia3");
        ok(it && it->kind == GH_ITEM_DEVICE && it->role == GH_ROLE_DEVICE && it->rdev == makedev(195, 3),
           "carries its role and device number");
        ok(it && it->flags == GH_MNT_DEV && (it->flags & GH_MNT_RDONLY) && (it->flags & GH_MNT_NOEXEC) &&
                   !(it->flags & GH_MNT_NODEV),
           "and is mounted ro,nosuid,noexec (not nodev: it is a device)");
        ok(gh_plan_add_symlink(&p, "/usr/lib/libx.so.1", "libx.so.1.2", true, &err) == 0, "a symlink item");
        it = item(&p, "/usr/lib/libx.so.1");
        ok(is_link(it, "libx.so.1.2") && it->optional && it->role == GH_ROLE_LINK, "with its target, optional");
        ok(gh_plan_add_library(&p, "libx.so.1", "/usr/lib/libx.so.1", false, &err) == 0 && p.nlibs == 1 &&
                   strcmp(p.libs[0].path, "/usr/lib/libx.so.1") == 0,
           "an ld cache entry");
        gh_plan_free(&p);
        ok(p.n == 0 && p.items == NULL && p.libs == NULL, "freeing empties the plan");
}

static void test_layouts(void)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_layout l;
        char dir[PATH_MAX];

        ok(gh_layout_named("debian", &l, &err) == 0 && strcmp(l.libdir, L64) == 0 && strcmp(l.libdir32, L32) == 0,
           "layout debian: " L64 " and " L32);
        ok(gh_layout_named("lib64", &l, &err) == 0 && strcmp(l.libdir, "/usr/lib64") == 0 &&
                   strcmp(l.libdir32, "/usr/lib32") == 0,
           "layout lib64: /usr/lib64 and /usr/lib32");
        ok(gh_layout_named("suse", &l, &err) < 0 && gh_error_kind(err) == GH_ERR_USAGE && strstr(err->msg, "suse") &&
                   strstr(err->msg, "debian or lib64"),
           "an unknown layout is a usage error naming it and the choices");

        struct {
                const char *files, *lib, *lib32, *what;
        } images[] = {
                { "etc/debian_version", L64, L32, "an image with /etc/debian_version is Debian-style" },
                { "usr/lib32/.keep", "/usr/lib64", "/usr/lib32", "one with /usr/lib32 keeps i386 libraries there" },
                { "etc/os-release", "/usr/lib64", "/usr/lib", "else i386 libraries go to /usr/lib" },
        };
        for (size_t i = 0; i < GH_ARRAY_SIZE(images); i++) {
                snprintf(dir, sizeof(dir), "%s/image%zu", T, i);
                put_file("x\n", "%s/%s", dir, images[i].files);
                _cleanup_close_ int fd = gh_rootfs_open(dir, &err);
                gh_layout_detect(fd, &l);
                ok(strcmp(l.libdir, images[i].lib) == 0 && strcmp(l.libdir32, images[i].lib32) == 0, "%s",
                   images[i].what);
        }
}

static void test_proc(void)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_plan p = { 0 };
        char dir[PATH_MAX], big[70000];

        snprintf(dir, sizeof(dir), "%s/proc-root", T);
        put_file("RmLogonRC: 1\nModifyDeviceFiles: 1\nDeviceFileUID: 0\n", "%s/proc/driver/nvidia/params", dir);
        put_file("NVRM version: NVIDIA UNIX x86_64 Kernel Module  " VER "\n", "%s/proc/driver/nvidia/version", dir);
        _cleanup_close_ int fd = gh_rootfs_open(dir, &err);
        ok(gh_plan_read_proc(&p, fd, &err) == 0 && p.mask_proc, "params and version are read for the mask");
        ok(p.params && strstr(p.params, "ModifyDeviceFiles: 0\n") && !strstr(p.params, "ModifyDeviceFiles: 1"),
           "the container's params say ModifyDeviceFiles: 0 (its driver creates no nodes for other GPUs)");
        ok(p.params && strstr(p.params, "RmLogonRC: 1\n") && strstr(p.params, "DeviceFileUID: 0\n") &&
                   p.params_len == strlen(p.params),
           "the other params are kept as they are");
        ok(p.version && strstr(p.version, VER), "the version file is kept");
        ok(p.registry == NULL && p.registry_len == 0, "a missing registry file is left out, not an error");
        gh_plan_free(&p);

        memset(big, 'x', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        put_file(big, "%s/proc/driver/nvidia/registry", dir);
        int r = gh_plan_read_proc(&p, fd, &err);
        ok(r < 0 && strstr(err->msg, "/proc/driver/nvidia/registry"), "a 70 kB registry file is refused, naming it: %s",
           r < 0 ? err->msg : "");
        gh_plan_free(&p);
}

static void test_no_driver(void)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_plan p;
        char dir[PATH_MAX];
        int r;

        snprintf(dir, sizeof(dir), "%s/nothing-here", T);
        r = plan_for(dir, "debian", &p, &err, "--device=all", NULL);
        ok(r < 0 && gh_error_kind(err) == GH_ERR_NO_DRIVER && gh_error_exit_status(err) == 3,
           "a driver root that does not exist is 'no driver' (exit 3): %s", r < 0 ? err->msg : "");
        gh_error_free(&err);
        snprintf(dir, sizeof(dir), "%s/image0", T);
        r = plan_for(dir, "debian", &p, &err, "--device=all", NULL);
        ok(r < 0 && gh_error_kind(err) == GH_ERR_NO_DRIVER, "so is a root without the driver: %s",
           r < 0 ? err->msg : "");
}

/* ---- whole plans from the fake driver (its nodes exist only when made as root) ---- */

static void test_compute_one_gpu(void)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_plan p;
        const struct gh_item *it;
        bool flags_ok = true;
        size_t ndev = 0;

        if (!ok(plan_for(R, "debian", &p, &err, "--device=1", "--compute", NULL) == 0, "--device=1 --compute"))
                return tap_diag("%s", err->msg);
        is_str(p.driver_version, VER, "the plan knows the driver version");
        it = item(&p, "/dev/nvidia1");
        ok(it && it->kind == GH_ITEM_DEVICE && it->rdev == makedev(195, 1), "/dev/nvidia1 (195:1) is planned");
        ok(item(&p, "/dev/nvidia0") == NULL && !has_rule(&p, 195, 0), "/dev/nvidia0 is not, nor allowed in the cgroup");
        ok(item(&p, "/dev/nvidiactl") && item(&p, "/dev/nvidia-uvm") && item(&p, "/dev/nvidia-uvm-tools"),
           "nvidiactl and, for compute, nvidia-uvm and nvidia-uvm-tools");
        ok(item(&p, "/dev/nvidia-modeset") == NULL, "no nvidia-modeset without display");
        for (size_t i = 0; i < p.n; i++)
                if (p.items[i].kind == GH_ITEM_DEVICE) {
                        ndev++;
                        flags_ok &= p.items[i].flags == GH_MNT_DEV &&
                                    has_rule(&p, major(p.items[i].rdev), minor(p.items[i].rdev));
                }
        ok(ndev == 4 && p.nrules == ndev && flags_ok,
           "the device cgroup allows exactly the 4 planned nodes, each mounted ro,nosuid,noexec");

        it = item(&p, L64 "/libcuda.so." VER);
        ok(it && it->kind == GH_ITEM_FILE && it->role == GH_ROLE_LIBRARY && it->cap == GH_CAP_COMPUTE &&
                   strcmp(it->src, L64 "/libcuda.so." VER) == 0,
           "libcuda.so." VER " from the driver root at " L64);
        ok(it && it->flags == GH_MNT_FILE && (it->flags & GH_MNT_RDONLY) && (it->flags & GH_MNT_NOSUID) &&
                   (it->flags & GH_MNT_NODEV) && !(it->flags & GH_MNT_NOEXEC),
           "a library is mounted read-only, nosuid, nodev");
        ok(is_link(item(&p, L64 "/libcuda.so.1"), "libcuda.so." VER), "the SONAME link libcuda.so.1");
        ok(is_link(item(&p, L64 "/libcuda.so"), "libcuda.so.1"), "the development link libcuda.so -> libcuda.so.1");
        ok(ld_entry(&p, "libcuda.so.1") && strcmp(ld_entry(&p, "libcuda.so.1")->path, L64 "/libcuda.so.1") == 0 &&
                   !ld_entry(&p, "libcuda.so.1")->compat32,
           "the ld cache gets libcuda.so.1 -> " L64 "/libcuda.so.1");
        ok(ld_entry(&p, "libcuda.so") != NULL, "and libcuda.so (dlopen(\"libcuda.so\") works)");
        ok(item(&p, L64 "/libnvidia-ptxjitcompiler.so." VER) && ld_entry(&p, "libnvidia-nvvm.so.4"),
           "the other compute libraries: ptxjitcompiler, nvvm");
        ok(count_dst(&p, "GLX") == 0 && count_dst(&p, "EGL") == 0 && count_dst(&p, "vulkan") == 0 &&
                   !ld_entry(&p, "libGLX_nvidia.so.0"),
           "no graphics library, link or loader file");
        ok(item(&p, L64 "/libnvidia-ml.so." VER) == NULL && item(&p, "/usr/bin/nvidia-smi") == NULL,
           "no utility (libnvidia-ml, nvidia-smi) without --utility");
        ok(count_dst(&p, L32) == 0, "no i386 library without --compat32");
        it = item(&p, "/usr/bin/nvidia-cuda-mps-control");
        ok(it && it->role == GH_ROLE_BINARY && it->flags == GH_MNT_FILE, "the MPS control program, read-only");
        it = item(&p, "/lib/firmware/nvidia/" VER "/gsp_ga10x.bin");
        ok(it && it->role == GH_ROLE_FIRMWARE && it->flags == GH_MNT_FILE, "GSP firmware at its own path, read-only");

        ok(p.mask_proc && p.nproc_gpus == 1 && strcmp(p.proc_gpus[0].busid, GPU1_BUS) == 0,
           "/proc/driver/nvidia/gpus shows GPU 1 (" GPU1_BUS ") only");
        ok(p.params && strstr(p.params, "ModifyDeviceFiles: 0") && !strstr(p.params, "ModifyDeviceFiles: 1"),
           "the masked params say ModifyDeviceFiles: 0");
        ok(!p.used_nvml, "no NVML was needed for a GPU named by index");
        gh_plan_free(&p);
}

/* A plan kept in the driver-state cache (plancache.h) reads back as the same plan, and a kept text
 * that names a path with "..", a bad device rule or a missing member is refused. */
static void test_kept_plan(void)
{
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_free_ char *text = NULL, *again = NULL;
        struct gh_plan p, q;

        if (!ok(plan_for(R, "debian", &p, &err, "--device=all", "--compute", "--utility", "--graphics", "--compat32",
                         NULL) == 0,
                "kept: a plan with every kind of item"))
                return tap_diag("%s", err->msg);
        text = gh_plan_to_text(&p);
        ok(text != NULL && gh_plan_from_text(text, strlen(text), &q, &err) == 0, "kept: its text reads back");
        if (err)
                tap_diag("%s", err->msg);
        again = q.items ? gh_plan_to_text(&q) : NULL;
        ok(again && strcmp(text, again) == 0, "kept: and writes the same text again");
        is_int(q.n, p.n, "kept: the same items");
        is_int(q.nlibs, p.nlibs, "kept: the same ld cache entries");
        is_int(q.nrules, p.nrules, "kept: the same device rules");
        ok(q.params && p.params && strcmp(q.params, p.params) == 0 && q.params_len == p.params_len,
           "kept: the masked params, byte for byte");
        ok(strcmp(q.layout.libdir, p.layout.libdir) == 0 && q.mask_proc == p.mask_proc, "kept: layout and mask");
        gh_plan_free(&q);

        static const struct {
                const char *from, *to, *why;
        } bad[] = {
                { "\"/usr/bin/nvidia-smi\"", "\"/usr/bin/../../etc/shadow\"", "a path with .." },
                { "\"rules\":[[99,", "\"rules\":[[120,", "a device rule of an unknown type" },
                { "\"libdir32\":", "\"libdir_32\":", "a member missing" },
                { "\"flags\":[1,", "\"flags\":[2,", "a flag out of range" },
                { "\"rules\":[[99,195,", "\"rules\":[[99,196,", "a device rule that is not a planned node's" },
                { ",0]],\"proc_gpus\"", ",1]],\"proc_gpus\"", "an item that names a host path" },
                { "\"/dev/nvidiactl\",\"/dev/nvidiactl\"", "\"/dev/nvidiactl\",\"/dev/nvidia0\"",
                  "a device node placed elsewhere" },
                /* found by fuzz-plan: a list of the wrong length was left without an error */
                { "\"libs\":[[\"", "\"libs\":[[\"x\",\"", "a library entry with an extra element" },
                { "\"rules\":[[99,195,", "\"rules\":[[99,99,195,", "a device rule with an extra element" },
                { "\"flags\":[1,", "\"flags\":[1,1,", "five flags" },
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                const char *from = bad[i].from ? bad[i].from : ""; /* (GCC's sanitizer build cannot see it is set) */
                char *at = strstr(text, from), *forged;
                if (!ok(at != NULL, "kept: the text has %s to forge", from))
                        continue;
                if (asprintf(&forged, "%.*s%s%s", (int) (at - text), text, bad[i].to, at + strlen(from)) < 0)
                        continue;
                gh_error_free(&err);
                ok(gh_plan_from_text(forged, strlen(forged), &q, &err) < 0 && err && q.items == NULL,
                   "kept: %s is refused", bad[i].why);
                if (err)
                        tap_diag("%s", err->msg);
                free(forged);
        }
        gh_plan_free(&p);
}

static void test_graphics_utility(void)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_plan p;
        const struct gh_item *it;

        if (ok(plan_for(R, "debian", &p, &err, "--device=0", "--graphics", "--display", NULL) == 0,
               "--device=0 --graphics --display")) {
                ok(item(&p, "/dev/nvidia0") && !item(&p, "/dev/nvidia1") && item(&p, "/dev/nvidia-modeset") &&
                           !item(&p, "/dev/nvidia-uvm"),
                   "nvidia0 and nvidia-modeset, not nvidia1, no nvidia-uvm without compute");
                ok(item(&p, L64 "/libGLX_nvidia.so." VER) && ld_entry(&p, "libGLX_nvidia.so.0") &&
                           ld_entry(&p, "libEGL_nvidia.so.0"),
                   "libGLX_nvidia and libEGL_nvidia with their ld cache entries");
                ok(is_link(item(&p, L64 "/libGLX_indirect.so.0"), "libGLX_nvidia.so." VER) &&
                           !ld_entry(&p, "libGLX_indirect.so.0"),
                   "GLVND's libGLX_indirect.so.0 link, without an ld cache entry of its own");
                it = item(&p, "/usr/share/vulkan/icd.d/nvidia_icd.json");
                ok(it && it->role == GH_ROLE_CONFIG && it->flags == (GH_MNT_FILE | GH_MNT_NOEXEC),
                   "the Vulkan ICD file, read-only and noexec");
                ok(!item(&p, L64 "/libcuda.so." VER) && !ld_entry(&p, "libcuda.so.1"), "no libcuda without compute");
                gh_plan_free(&p);
        } else {
                tap_diag("%s", err->msg);
        }
        gh_error_free(&err);

        if (ok(plan_for(R, "debian", &p, &err, "--device=all", "--utility", NULL) == 0, "--device=all --utility")) {
                ok(item(&p, "/dev/nvidia0") && item(&p, "/dev/nvidia1") && p.nproc_gpus == 2, "both GPUs");
                ok(!item(&p, "/dev/nvidia-uvm") && !item(&p, "/dev/nvidia-uvm-tools") &&
                           !item(&p, "/dev/nvidia-modeset"),
                   "no nvidia-uvm without compute, no nvidia-modeset without display");
                it = item(&p, "/usr/bin/nvidia-smi");
                ok(it && it->role == GH_ROLE_BINARY && it->flags == GH_MNT_FILE, "nvidia-smi at /usr/bin, read-only");
                ok(ld_entry(&p, "libnvidia-ml.so.1") != NULL, "libnvidia-ml.so.1 in the ld cache");
                it = item(&p, "/run/nvidia-persistenced/socket");
                ok(it && it->role == GH_ROLE_IPC && it->flags == GH_MNT_IPC && !(it->flags & GH_MNT_RDONLY) &&
                           (it->flags & GH_MNT_NODEV) && (it->flags & GH_MNT_NOEXEC),
                   "the persistenced socket: writable, nosuid, nodev, noexec");
                gh_plan_free(&p);
        } else {
                tap_diag("%s", err->msg);
        }
        gh_error_free(&err);

        ok(plan_for(R, "debian", &p, &err, "--device=all", "--utility", "--no-persistenced", NULL) == 0 &&
                   !item(&p, "/run/nvidia-persistenced/socket") && item(&p, "/run/nvidia-fabricmanager/socket"),
           "--no-persistenced leaves out that socket only");
        gh_plan_free(&p);
        gh_error_free(&err);

        ok(plan_for(R, "debian", &p, &err, "--device=none", "--compute", NULL) == 0 && !item(&p, "/dev/nvidia0") &&
                   !item(&p, "/dev/nvidia1") && item(&p, "/dev/nvidiactl") && item(&p, L64 "/libcuda.so." VER) &&
                   p.nproc_gpus == 0,
           "--device=none: the driver's files and nvidiactl, no GPU node");
        gh_plan_free(&p);
}

static void test_layouts_compat32(void)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_plan p;

        if (!ok(plan_for(R, "debian", &p, &err, "--device=0", "--compute", "--compat32", NULL) == 0,
                "--compute --compat32"))
                return tap_diag("%s", err->msg);
        const struct gh_item *it = item(&p, L32 "/libcuda.so." VER);
        ok(it && it->compat32 && it->flags == GH_MNT_FILE, "the i386 libcuda at " L32);
        ok(item(&p, L64 "/libcuda.so." VER) != NULL, "next to the 64-bit one");
        bool both = false;
        for (size_t i = 0; i < p.nlibs; i++)
                both |= strcmp(p.libs[i].soname, "libcuda.so.1") == 0 && p.libs[i].compat32 &&
                        strcmp(p.libs[i].path, L32 "/libcuda.so.1") == 0;
        ok(both, "an i386 ld cache entry libcuda.so.1 -> " L32 "/libcuda.so.1");
        gh_plan_free(&p);

        ok(plan_for(R, "lib64", &p, &err, "--device=0", "--compute", "--compat32", NULL) == 0 &&
                   item(&p, "/usr/lib64/libcuda.so." VER) && item(&p, "/usr/lib32/libcuda.so." VER) &&
                   count_dst(&p, L64) == 0,
           "layout lib64: /usr/lib64 and /usr/lib32, nothing under " L64);
        gh_plan_free(&p);
}

static void test_requirements(void)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_plan p;
        int r;

        r = plan_for(R, "debian", &p, &err, "--device=0", "--compute", "--require=cuda>=99.0", NULL);
        ok(r < 0 && gh_error_kind(err) == GH_ERR_REQUIREMENT && gh_error_exit_status(err) == 4,
           "an unmet requirement (cuda>=99.0 on CUDA 13.0) stops the plan (exit 4): %s", r < 0 ? err->msg : "");
        ok(p.n == 0 && p.items == NULL, "and leaves no plan");
        gh_error_free(&err);
        r = plan_for(R, "debian", &p, &err, "--device=0", "--compute", "--require=cuda>=12.0", NULL);
        ok(r == 0, "a met one (cuda>=12.0) does not");
        if (r < 0)
                tap_diag("%s", err->msg);
        gh_plan_free(&p);
        gh_error_free(&err);
        r = plan_for(R, "debian", &p, &err, "--device=7", "--compute", NULL);
        ok(r < 0 && strstr(err->msg, "7"), "a GPU the host does not have is an error naming it: %s",
           r < 0 ? err->msg : "");
}

/* A group's state as `gpu-cli mps start` leaves it, for a daemon that is pid (alive or not). */
static void save_group(const char *dir, const char *name, const char *uuid, pid_t pid)
{
        struct gh_mps_group g = { .pid = pid, .threads = 50 };
        _cleanup_error_ gh_error_t err = NULL;
        char path[PATH_MAX];

        snprintf(g.name, sizeof(g.name), "%s", name);
        snprintf(g.gpu_uuid, sizeof(g.gpu_uuid), "%s", uuid);
        g.starttime = gh_proc_starttime(pid);
        gh_mps_group_path(path, sizeof(path), dir, name, NULL);
        if (mkdir(path, 0755) < 0 || gh_mps_save(dir, &g, &err) < 0)
                abort();
}

static void test_mps_group(void)
{
        _cleanup_error_ gh_error_t err = NULL;
        char dir[PATH_MAX], opt[PATH_MAX + 16], pipe[PATH_MAX + 16], shm[PATH_MAX + 16];
        struct gh_plan p;
        pid_t dead;
        int r;

        snprintf(dir, sizeof(dir), "%s/mps", T);
        if (mkdir(dir, 0755) < 0)
                abort();
        snprintf(opt, sizeof(opt), "--mps-dir=%s", dir);
        save_group(dir, "train", GPU1_UUID, getpid());
        if ((dead = fork()) == 0)
                _exit(0);
        waitpid(dead, NULL, 0);
        save_group(dir, "gone", GPU1_UUID, dead);
        /* The host's MPS pipe directory, kept elsewhere than the default. */
        put_file("", "%s/var/mps/control", R);

        r = plan_for(R, "debian", &p, &err, "--device=1", "--compute", "--mps-pipe-dir=/var/mps", NULL);
        ok(r == 0 && item(&p, "/var/mps") && item(&p, "/var/mps")->flags == GH_MNT_IPC,
           "without a group, the host's MPS pipe directory (--mps-pipe-dir=/var/mps) is planned");
        gh_plan_free(&p);

        r = plan_for(R, "debian", &p, &err, "--device=1", "--compute", "--mps-pipe-dir=/var/mps", "--mps-group=train",
                     opt, NULL);
        if (ok(r == 0, "--device=1 joins group 'train', which runs on GPU 1")) {
                snprintf(pipe, sizeof(pipe), "%s/train/pipe", dir);
                snprintf(shm, sizeof(shm), "%s/train/shm", dir);
                const struct gh_item *it = item(&p, GH_MPS_CONTAINER_PIPE_DIR);
                ok(it && it->kind == GH_ITEM_DIR && it->host_src && strcmp(it->src, pipe) == 0 &&
                           it->flags == GH_MNT_IPC,
                   "the group's pipe directory (a host path) at " GH_MPS_CONTAINER_PIPE_DIR);
                it = item(&p, GH_MPS_CONTAINER_SHM_DIR);
                ok(it && it->host_src && strcmp(it->src, shm) == 0, "the group's shm at /dev/shm");
                ok(item(&p, "/var/mps") == NULL, "and not the host's own MPS pipe directory");
                ok(p.mps_group, "the plan says it joins a group");
                gh_plan_free(&p);
        } else {
                tap_diag("%s", err->msg);
        }
        gh_error_free(&err);

        r = plan_for(R, "debian", &p, &err, "--device=0", "--compute", "--mps-group=train", opt, NULL);
        ok(r < 0 && strstr(err->msg, GPU1_UUID) && strstr(err->msg, "does not get"),
           "a container without the group's GPU may not join it: %s", r < 0 ? err->msg : "");
        gh_error_free(&err);
        r = plan_for(R, "debian", &p, &err, "--device=1", "--compute", "--mps-group=gone", opt, NULL);
        ok(r < 0 && strstr(err->msg, "not running"), "nor join a group whose daemon is gone: %s",
           r < 0 ? err->msg : "");
        gh_error_free(&err);
        r = plan_for(R, "debian", &p, &err, "--device=1", "--compute", "--mps-group=nosuch", opt, NULL);
        ok(r < 0 && strstr(err->msg, "no MPS group 'nosuch'"), "nor a group that does not exist: %s",
           r < 0 ? err->msg : "");
}

static void test_missing_node(void)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_plan p;
        int r;

        sh("rm -f '%s/dev/nvidiactl'", R);
        r = plan_for(R, "debian", &p, &err, "--device=0", "--compute", NULL);
        ok(r < 0 && strstr(err->msg, "/dev/nvidiactl is missing") && strstr(err->msg, "nvidia-modprobe"),
           "without /dev/nvidiactl the plan fails, saying how to get the nodes: %s", r < 0 ? err->msg : "");
}

int main(void)
{
        const char *mkroot = getenv("FAKE_DRIVER_MAKE_ROOT");

        snprintf(T, sizeof(T), "/tmp/test-plan.XXXXXX");
        if (mkdtemp(T) == NULL)
                return 1;
        snprintf(R, sizeof(R), "%s/driver", T);
        test_building_blocks();
        test_layouts();
        test_proc();
        test_no_driver();
        if (mkroot == NULL) {
                tap_diag("FAKE_DRIVER_MAKE_ROOT is not set (run under meson test): whole plans skipped");
        } else if (sh("'%s' '%s' --sockets >'%s/make-root.log' 2>&1", mkroot, R, T) != 0) {
                ok(0, "make-root.sh made a fake driver root");
                sh("cat '%s/make-root.log'", T);
        } else if (geteuid() != 0) {
                /* Without root the fake root has no device nodes: a plan stops at the first. */
                test_missing_node();
                tap_diag("not root: the fake driver has no device nodes, so whole plans are skipped");
        } else {
                test_compute_one_gpu();
                test_kept_plan();
                test_graphics_utility();
                test_layouts_compat32();
                test_requirements();
                test_mps_group();
                test_missing_node();
        }
        sh("rm -rf '%s'", T);
        return tap_done();
}
