/* lib/core/driver.c and lib/core/devices.c on driver roots built here: version parsing, which libraries,
 * programs, firmware and sockets are taken (and which decoys are not), device nodes (root only). */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capability.h"
#include "cleanup.h"
#include "devices.h"
#include "driver.h"
#include "ldcache.h"
#include "rootfs.h"
#include "tests/tap.h"
#include "tests/testutil.h"

#define VER "580.95.05"
#define L64 "/usr/lib/x86_64-linux-gnu"
#define L32 "/usr/lib/i386-linux-gnu"
#define NV "/usr/local/nvidia"

static char T[256], R[300];

static void test_version_parsing(void)
{
        static const char open_module[] =
                "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  "
                "(dvs-builder@U22-I3-AM02-24-3)  Wed Jul 30 08:10:56 UTC 2025\nGCC version:  gcc version 12.2.0\n";
        static const char proprietary[] =
                "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Release Build  (dvs-builder@x)  Tue Sep 23 2025\n";
        char v[64];
        _cleanup_error_ gh_error_t err = NULL;

        ok(gh_driver_parse_version(open_module, sizeof(open_module) - 1, v, sizeof(v), &err) == 0 &&
                   strcmp(v, "580.159.04") == 0,
           "version: open kernel module form");
        ok(gh_driver_parse_version(proprietary, sizeof(proprietary) - 1, v, sizeof(v), &err) == 0 &&
                   strcmp(v, "580.95.05") == 0,
           "version: proprietary form");
        ok(gh_driver_parse_version("NVRM version: 470.1", 19, v, sizeof(v), &err) == 0 && strcmp(v, "470.1") == 0,
           "version: short form, no newline");
        ok(gh_driver_parse_version("GCC version: 12.2\n", 18, v, sizeof(v), &err) < 0,
           "version: no NVRM line is an error");
        gh_error_free(&err);
        ok(gh_driver_parse_version("NVRM version: NVIDIA x86_64 Module\n", 35, v, sizeof(v), &err) < 0,
           "version: an NVRM line without a number is an error");

        ok(gh_driver_name_has_version("libcuda.so." VER, VER), "name: libcuda.so.<version>");
        ok(!gh_driver_name_has_version("libcuda.so.1", VER), "name: libcuda.so.1 is not versioned");
        ok(!gh_driver_name_has_version("libcuda.so.470.95.05", VER), "name: another version");
        ok(!gh_driver_name_has_version("libcuda.so.1580.95.05", VER), "name: version must follow .so.");
        ok(!gh_driver_name_has_version("libcuda.so." VER ".1", VER), "name: nothing after the version");

        is_int(gh_driver_library_cap("libcuda.so.1"), GH_CAP_COMPUTE, "stem: libcuda.so.1 is compute");
        is_int(gh_driver_library_cap("libcuda.so"), GH_CAP_COMPUTE, "stem: libcuda.so is compute");
        is_int(gh_driver_library_cap("libcudart.so.12"), 0, "stem: libcudart does not match libcuda");
        is_int(gh_driver_library_cap("libcudadebugger.so.1"), GH_CAP_COMPUTE, "stem: libcudadebugger");
        is_int(gh_driver_library_cap("libnvidia-ml.so.1"), GH_CAP_UTILITY, "stem: libnvidia-ml is utility");
        is_int(gh_driver_library_cap("libnvidia-mlx.so.1"), 0, "stem: libnvidia-mlx does not match");
        is_int(gh_driver_library_cap("libGLESv2_nvidia.so.2"), GH_CAP_GRAPHICS, "stem: libGLESv2_nvidia");
        is_int(gh_driver_library_cap("libGLX.so.0"), 0, "stem: GLVND's libGLX is not the driver's");
        is_int(gh_driver_library_cap("libnvidia-ngx.so.1"), GH_CAP_NGX, "stem: ngx");
        is_int(gh_driver_library_cap("libnvcuvid.so.1"), GH_CAP_VIDEO, "stem: video");
}

/* One library: gcc builds name.so.<ver> (or `file`) in dir with SONAME soname. */
static int mklib(const char *dir, const char *file, const char *soname, const char *extra)
{
        return sh(
                "set -e; mkdir -p '%s%s'; gcc %s -shared -fPIC -Wl,-soname,%s -Wl,--no-as-needed -o '%s%s/%s' '%s/f.c' %s",
                R, dir, strstr(extra, "-m32") ? "-m32" : "", soname, R, dir, file, T,
                strstr(extra, "-m32") ? "" : extra);
}

struct entry {
        const char *key, *value;
        int32_t flags;
};

static int write_root_cache(const struct entry *e, size_t n)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_ldcache_entry v[64];
        char etc[400];
        int fd, r;

        for (size_t i = 0; i < n; i++)
                v[i] = (struct gh_ldcache_entry) { .key = e[i].key, .value = e[i].value, .flags = e[i].flags };
        snprintf(etc, sizeof(etc), "%s/etc", R);
        mkdir(etc, 0755);
        fd = open(etc, O_PATH | O_DIRECTORY);
        r = gh_ldcache_write(fd, "ld.so.cache", v, n, &err);
        close(fd);
        return r;
}

static bool has(const struct gh_driver_files *f, const char *path)
{
        for (size_t i = 0; i < f->n; i++)
                if (strcmp(f->v[i].path, path) == 0)
                        return true;
        return false;
}

static const struct gh_driver_file *get(const struct gh_driver_files *f, const char *path)
{
        for (size_t i = 0; i < f->n; i++)
                if (strcmp(f->v[i].path, path) == 0)
                        return &f->v[i];
        return NULL;
}

static int build_root(void)
{
        static const struct entry cache[] = {
                { "libcuda.so.1", L64 "/libcuda.so.1", GH_LDCACHE_FLAGS_X86_64 },
                { "libcuda.so", L64 "/libcuda.so", GH_LDCACHE_FLAGS_X86_64 },
                { "libcuda.so.1", L32 "/libcuda.so.1", GH_LDCACHE_FLAGS_I386 },
                { "libcudart.so.12", L64 "/libcudart.so.12", GH_LDCACHE_FLAGS_X86_64 },
                { "libnvidia-ml.so.1", "/lib/libnvidia-ml.so.1", GH_LDCACHE_FLAGS_X86_64 },
                { "libnvidia-ml.so.1", NV "/lib64/libnvidia-ml.so.1", GH_LDCACHE_FLAGS_X86_64 },
                { "libnvidia-cfg.so.1", L64 "/libnvidia-cfg.so.1", GH_LDCACHE_FLAGS_X86_64 },
                { "libnvidia-opencl.so.1", L64 "/libnvidia-opencl.so.1", GH_LDCACHE_FLAGS_X86_64 },
                { "libnvidia-ptxjitcompiler.so.1", L64 "/libnvidia-ptxjitcompiler.so.1", GH_LDCACHE_FLAGS_X86_64 },
                { "libnvidia-glcore.so." VER, L64 "/libnvidia-glcore.so." VER, GH_LDCACHE_FLAGS_X86_64 },
                { "libGL.so.1", L64 "/libGL.so.1", GH_LDCACHE_FLAGS_X86_64 },
                { "libEGL.so.1", L64 "/libEGL.so.1", GH_LDCACHE_FLAGS_X86_64 },
                { "libnvidia-encode.so.1", "/nonexistent/libnvidia-encode.so.1", GH_LDCACHE_FLAGS_X86_64 },
                { "libnvidia-fbc.so.1", L64 "/libnvidia-fbc.so.1", GH_LDCACHE_FLAGS_X86_64 },
        };

        snprintf(R, sizeof(R), "%s/root", T);
        if (sh("set -e; cd '%s'; echo 'int f(void){return 0;}' > f.c; echo 'int main(void){return 0;}' > m.c;"
               "mkdir -p root/proc/driver/nvidia root%s root%s root%s/lib64 root%s/bin root/usr/bin root/lib;"
               "printf 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  %s  Release Build  (x)  Tue Sep 23 2025\\n"
               "GCC version:  gcc version 12.2.0\\n' > root/proc/driver/nvidia/version",
               T, L64, L32, NV, NV, VER) != 0)
                return -1;
        /* libcuda: two cache keys (SONAME link and dev link) to one real file; an i386 build. */
        if (mklib(L64, "libcuda.so." VER, "libcuda.so.1", "") ||
            mklib(L32, "libcuda.so." VER, "libcuda.so.1", "-m32") ||
            sh("cd '%s%s' && ln -s libcuda.so." VER " libcuda.so.1 && ln -s libcuda.so.1 libcuda.so && "
               "cd '%s%s' && ln -s libcuda.so." VER " libcuda.so.1",
               R, L64, R, L32))
                return -1;
        /* libcudart: versioned like the driver, but not a driver stem. */
        if (mklib(L64, "libcudart.so." VER, "libcudart.so.12", "") ||
            sh("cd '%s%s' && ln -s libcudart.so." VER " libcudart.so.12", R, L64))
                return -1;
        /* libnvidia-ml in the GPU machine's layout: /lib/x.so.1 -> absolute link into NV/lib64. */
        if (mklib(NV "/lib64", "libnvidia-ml.so." VER, "libnvidia-ml.so.1", "") ||
            sh("ln -s libnvidia-ml.so." VER " '%s%s/lib64/libnvidia-ml.so.1' && ln -s %s/lib64/libnvidia-ml.so." VER
               " '%s/lib/libnvidia-ml.so.1'",
               R, NV, NV, R))
                return -1;
        /* Wrong version, i386 object under a 64-bit entry, a link that points outside the root. */
        if (mklib(L64, "libnvidia-cfg.so.470.1.2", "libnvidia-cfg.so.1", "") ||
            sh("ln -s libnvidia-cfg.so.470.1.2 '%s%s/libnvidia-cfg.so.1'", R, L64) ||
            mklib(L64, "libnvidia-opencl.so." VER, "libnvidia-opencl.so.1", "-m32") ||
            sh("ln -s libnvidia-opencl.so." VER " '%s%s/libnvidia-opencl.so.1'", R, L64) ||
            sh("mkdir -p '%s/outside' && gcc -shared -fPIC -Wl,-soname,libnvidia-ptxjitcompiler.so.1 "
               "-o '%s/outside/libnvidia-ptxjitcompiler.so." VER "' '%s/f.c' && "
               "ln -s '%s/outside/libnvidia-ptxjitcompiler.so." VER "' '%s%s/libnvidia-ptxjitcompiler.so.1'",
               T, T, T, T, R, L64))
                return -1;
        /* Non-GLVND libGL on NVIDIA's core (taken) and a Mesa-like libEGL (not). */
        if (mklib(L64, "libnvidia-glcore.so." VER, "libnvidia-glcore.so." VER, "") ||
            sh("cd '%s%s' && gcc -shared -fPIC -Wl,-soname,libGL.so.1 -Wl,--no-as-needed -o libGL.so." VER
               " '%s/f.c' -L. -l:libnvidia-glcore.so." VER " && ln -s libGL.so." VER " libGL.so.1",
               R, L64, T) ||
            mklib(L64, "libEGL.so." VER, "libEGL.so.1", "") || sh("ln -s libEGL.so." VER " '%s%s/libEGL.so.1'", R, L64))
                return -1;
        /* A directory where a library should be. */
        if (sh("mkdir -p '%s%s/libnvidia-fbc.so." VER "' && ln -s libnvidia-fbc.so." VER " '%s%s/libnvidia-fbc.so.1'",
               R, L64, R, L64))
                return -1;
        /* Programs: a wrapper script in /usr/bin and the ELF beside the driver (GPU machine), an
         * ELF debugdump in PATH, an i386 persistenced, a non-executable mps-control. */
        if (sh("set -e; cd '%s'; printf '#!/bin/sh\\nexec %s/bin/nvidia-smi \"$@\"\\n' > root/usr/bin/nvidia-smi;"
               "chmod 755 root/usr/bin/nvidia-smi; gcc -o root%s/bin/nvidia-smi m.c; gcc -o root/usr/bin/nvidia-debugdump m.c;"
               "gcc -m32 -o root/usr/bin/nvidia-persistenced m.c; gcc -o root/usr/bin/nvidia-cuda-mps-control m.c;"
               "chmod 644 root/usr/bin/nvidia-cuda-mps-control",
               T, NV, NV) != 0)
                return -1;
        /* Firmware beside the driver only; sockets and the MPS directory. */
        if (sh("set -e; cd '%s/root'; mkdir -p .%s/firmware/nvidia/%s run/nvidia-persistenced run/nvidia-fabricmanager tmp/nvidia-mps;"
               "touch .%s/firmware/nvidia/%s/gsp_ga10x.bin .%s/firmware/nvidia/%s/gsp_tu10x.bin .%s/firmware/nvidia/%s/other.bin;"
               "touch run/nvidia-fabricmanager/socket",
               T, NV, VER, NV, VER, NV, VER, NV, VER) != 0)
                return -1;
        {
                struct sockaddr_un a = { .sun_family = AF_UNIX };
                int s = socket(AF_UNIX, SOCK_STREAM, 0);
                snprintf(a.sun_path, sizeof(a.sun_path), "%s/run/nvidia-persistenced/socket", R);
                if (s < 0 || bind(s, (struct sockaddr *) &a, sizeof(a)) < 0)
                        return -1;
                close(s);
        }
        return write_root_cache(cache, GH_ARRAY_SIZE(cache));
}

static struct gh_driver *discover(const struct gh_driver_opts *opts, gh_error_t *err)
{
        _cleanup_close_ int rootfd = gh_rootfs_open(R, err);
        struct gh_driver *d = NULL;

        if (rootfd < 0 || gh_driver_discover(rootfd, opts, &d, err) < 0)
                return NULL;
        return d;
}

static void test_discovery(void)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_driver_opts opts = { .caps = GH_CAP_ALL & ~GH_CAP_COMPAT32 };
        struct gh_driver *d;
        const struct gh_driver_file *f;

        d = discover(&opts, &err);
        if (!ok(d != NULL, "discover the driver")) {
                tap_diag("%s", err ? err->msg : "?");
                return;
        }
        is_str(d->version, VER, "driver version from proc/driver/nvidia/version");
        f = get(&d->libs, L64 "/libcuda.so." VER);
        ok(f != NULL, "libcuda taken, by its real path");
        ok(f && f->soname && strcmp(f->soname, "libcuda.so.1") == 0 && f->cap == GH_CAP_COMPUTE && !f->compat32,
           "libcuda: SONAME, compute, 64-bit");
        ok(f && f->type == S_IFREG && f->st_ino != 0, "libcuda: a regular file with its inode");
        ok(has(&d->libs, NV "/lib64/libnvidia-ml.so." VER),
           "libnvidia-ml found through an absolute link, resolved in the root");
        ok(has(&d->libs, L64 "/libGL.so." VER), "NVIDIA-like libGL (needs libnvidia-glcore) taken");
        ok(has(&d->libs, L64 "/libnvidia-glcore.so." VER), "libnvidia-glcore taken");
        ok(!has(&d->libs, L64 "/libEGL.so." VER), "Mesa-like libEGL not taken");
        ok(!has(&d->libs, L64 "/libcudart.so." VER), "libcudart not taken (stem must match in full)");
        ok(!has(&d->libs, L64 "/libnvidia-cfg.so.470.1.2"), "library of another version not taken");
        ok(!has(&d->libs, L64 "/libnvidia-opencl.so." VER), "i386 object under a 64-bit entry not taken");
        ok(!has(&d->libs, L32 "/libcuda.so." VER), "i386 libcuda not taken without compat32");
        {
                bool outside = false;
                for (size_t i = 0; i < d->libs.n; i++)
                        outside |= strstr(d->libs.v[i].path, "ptxjitcompiler") != NULL;
                ok(!outside, "a link to a file outside the root is not followed out");
        }
        ok(!has(&d->libs, L64 "/libnvidia-fbc.so." VER), "a directory is not a library");
        is_int(d->libs.n, 4, "exactly 4 libraries, each once (two cache keys for libcuda)");

        is_int(d->bins.n, 2, "2 programs");
        ok(has(&d->bins, NV "/bin/nvidia-smi"), "nvidia-smi: the ELF beside libnvidia-ml, not the /usr/bin wrapper");
        ok(has(&d->bins, "/usr/bin/nvidia-debugdump"), "nvidia-debugdump from PATH");
        ok(!has(&d->bins, "/usr/bin/nvidia-persistenced"), "i386 nvidia-persistenced not taken");
        ok(!has(&d->bins, "/usr/bin/nvidia-cuda-mps-control"), "a non-executable file not taken");

        is_int(d->firmware.n, 2, "2 GSP firmware files (other.bin skipped)");
        ok(has(&d->firmware, NV "/firmware/nvidia/" VER "/gsp_ga10x.bin"), "firmware beside the driver install");

        ok(has(&d->ipcs, "/run/nvidia-persistenced/socket"), "persistenced socket");
        ok(!has(&d->ipcs, "/run/nvidia-fabricmanager/socket"), "a regular file is not the fabricmanager socket");
        f = get(&d->ipcs, "/tmp/nvidia-mps");
        ok(f && f->type == S_IFDIR && f->cap == GH_CAP_COMPUTE, "MPS pipe directory (compute)");
        gh_driver_free(d);

        /* compat32 adds the i386 library; compute-only drops utility's files. */
        opts.caps = GH_CAP_COMPUTE | GH_CAP_COMPAT32;
        opts.no_gsp_firmware = true;
        opts.no_persistenced = true;
        d = discover(&opts, &err);
        if (ok(d != NULL, "discover compute + compat32")) {
                f = get(&d->libs, L32 "/libcuda.so." VER);
                ok(f && f->compat32 && f->cap == GH_CAP_COMPUTE, "i386 libcuda taken with compat32");
                ok(!has(&d->libs, NV "/lib64/libnvidia-ml.so." VER), "no utility library for compute alone");
                ok(!has(&d->bins, NV "/bin/nvidia-smi"), "no utility program for compute alone");
                is_int(d->libs.n, 2, "compute + compat32: two libcuda");
                is_int(d->firmware.n, 0, "no_gsp_firmware: no firmware");
                ok(!has(&d->ipcs, "/run/nvidia-persistenced/socket"), "no persistenced socket without utility");
                gh_driver_free(d);
        }

        /* /lib/firmware/nvidia/<version> wins when it exists. */
        sh("mkdir -p '%s/lib/firmware/nvidia/%s' && touch '%s/lib/firmware/nvidia/%s/gsp_std.bin'", R, VER, R, VER);
        opts = (struct gh_driver_opts) { .caps = GH_CAP_UTILITY, .no_persistenced = true, .mps_pipe_dir = "/nope" };
        d = discover(&opts, &err);
        if (ok(d != NULL, "discover with /lib/firmware")) {
                is_int(d->firmware.n, 1, "the standard firmware directory wins");
                ok(has(&d->firmware, "/lib/firmware/nvidia/" VER "/gsp_std.bin"),
                   "/lib/firmware/nvidia/<version>/gsp*.bin");
                is_int(d->ipcs.n, 0, "no_persistenced, no socket for fabricmanager, no MPS directory for utility");
                gh_driver_free(d);
        }

        /* A custom --ldcache path and PATH. */
        sh("cp '%s/etc/ld.so.cache' '%s/etc/other.cache' && rm '%s/etc/ld.so.cache'", R, R, R);
        opts = (struct gh_driver_opts) { .caps = GH_CAP_UTILITY };
        d = discover(&opts, &err);
        ok(d == NULL && err && strstr(err->msg, "--ldcache"), "a missing ld.so.cache is an error that says --ldcache");
        gh_error_free(&err);
        gh_driver_free(d);
        opts = (struct gh_driver_opts) { .caps = GH_CAP_UTILITY, .ldcache = "/etc/other.cache", .path = "/usr/bin" };
        d = discover(&opts, &err);
        if (ok(d != NULL, "discover with ldcache and path options")) {
                ok(has(&d->libs, NV "/lib64/libnvidia-ml.so." VER), "libraries from the other cache");
                ok(has(&d->bins, NV "/bin/nvidia-smi"), "the driver's bin directory is searched after PATH");
                gh_driver_free(d);
        }
        sh("mv '%s/etc/other.cache' '%s/etc/ld.so.cache'", R, R);

        /* No driver. */
        sh("mv '%s/proc/driver/nvidia/version' '%s/version.saved'", R, T);
        d = discover(NULL, &err);
        ok(d == NULL && err && err->kind == GH_ERR_NO_DRIVER, "no proc/driver/nvidia/version: 'no driver' error");
        if (err)
                tap_diag("%s", err->msg);
        gh_driver_free(d);
        sh("mv '%s/version.saved' '%s/proc/driver/nvidia/version'", T, R);
}

static void test_devices(void)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_device_list list = { 0 };
        _cleanup_close_ int rootfd = -1;
        const unsigned minors[] = { 1 };
        const unsigned bad_minors[] = { 7 };
        const unsigned imex[] = { 0, 5 };
        const struct gh_devices_mig migs[] = { { .gpu_minor = 1, .gi = 2, .ci = 0 } };
        struct gh_devices_request req = { .caps = GH_CAP_COMPUTE | GH_CAP_UTILITY, .minors = minors, .nminors = 1 };

        if (geteuid() != 0) {
                printf("ok %d - device nodes # SKIP mknod needs root\n", ++tap_count);
                return;
        }
        if (sh("set -e; cd '%s'; mkdir -p dev/nvidia-caps dev/nvidia-caps-imex-channels "
               "proc/driver/nvidia/capabilities/gpu1/mig/gi2/ci0 proc/driver/nvidia/capabilities/mig;"
               "mknod dev/nvidiactl c 195 255; mknod dev/nvidia0 c 195 0; mknod dev/nvidia1 c 195 1;"
               "mknod dev/nvidia-uvm c 238 0; mknod dev/nvidia-modeset c 195 254; mknod dev/nvidia-caps/nvidia-cap21 c 241 21;"
               "mknod dev/nvidia-caps/nvidia-cap22 c 241 22; mknod dev/nvidia-caps/nvidia-cap1 c 241 1;"
               "mknod dev/nvidia-caps-imex-channels/channel0 c 240 0; touch dev/nvidia7;"
               "printf 'DeviceFileMinor: 21\\nDeviceFileMode: 256\\n' > proc/driver/nvidia/capabilities/gpu1/mig/gi2/access;"
               "printf 'DeviceFileMinor: 22\\n' > proc/driver/nvidia/capabilities/gpu1/mig/gi2/ci0/access;"
               "printf 'DeviceFileMinor: 1\\n' > proc/driver/nvidia/capabilities/mig/config;"
               "printf 'garbage\\n' > proc/driver/nvidia/capabilities/mig/monitor",
               R) != 0) {
                ok(0, "create device nodes");
                return;
        }
        rootfd = gh_rootfs_open(R, &err);
        ok(gh_devices_collect(rootfd, &req, &list, &err) == 0, "devices: compute + utility + GPU minor 1");
        is_int(list.n, 3, "devices: nvidiactl, nvidia-uvm (uvm-tools missing is skipped), nvidia1");
        ok(list.n == 3 && strcmp(list.v[0].path, "/dev/nvidiactl") == 0 && list.v[0].rdev == makedev(195, 255),
           "devices: /dev/nvidiactl 195:255");
        ok(list.n == 3 && strcmp(list.v[2].path, "/dev/nvidia1") == 0 && list.v[2].rdev == makedev(195, 1),
           "devices: /dev/nvidia1 with its st_rdev (nvidia0 not selected)");
        gh_device_list_free(&list);

        req = (struct gh_devices_request) {
                .caps = GH_CAP_DISPLAY, .migs = migs, .nmigs = 1, .mig_config = true, .imex_channels = imex, .nimex = 2
        };
        ok(gh_devices_collect(rootfd, &req, &list, &err) == 0, "devices: display, MIG, mig-config, IMEX");
        {
                char all[1024] = "";
                for (size_t i = 0; i < list.n; i++) {
                        strcat(all, list.v[i].path);
                        strcat(all, " ");
                }
                is_str(all,
                       "/dev/nvidiactl /dev/nvidia-modeset /dev/nvidia-caps/nvidia-cap21 /dev/nvidia-caps/nvidia-cap22 "
                       "/dev/nvidia-caps/nvidia-cap1 /dev/nvidia-caps-imex-channels/channel0 ",
                       "devices: modeset, GI and CI caps, config cap, the existing IMEX channel");
        }
        gh_device_list_free(&list);

        req = (struct gh_devices_request) { .mig_monitor = true };
        ok(gh_devices_collect(rootfd, &req, &list, &err) < 0 && strstr(err->msg, "DeviceFileMinor"),
           "devices: a malformed capability file is an error");
        gh_error_free(&err);
        req = (struct gh_devices_request) { .minors = bad_minors, .nminors = 1 };
        ok(gh_devices_collect(rootfd, &req, &list, &err) < 0 && strstr(err->msg, "/dev/nvidia7"),
           "devices: a selected GPU node that is not a device is an error");
        gh_error_free(&err);
        sh("rm '%s/dev/nvidia1' && mknod '%s/dev/nvidia1' c 195 9", R, R);
        req = (struct gh_devices_request) { .minors = minors, .nminors = 1 };
        ok(gh_devices_collect(rootfd, &req, &list, &err) < 0 && strstr(err->msg, "195:9"),
           "devices: a node with the wrong device number is an error");
        gh_error_free(&err);
        sh("rm '%s/dev/nvidiactl'", R);
        req = (struct gh_devices_request) { 0 };
        ok(gh_devices_collect(rootfd, &req, &list, &err) < 0 && strstr(err->msg, "/dev/nvidiactl"),
           "devices: missing /dev/nvidiactl is an error");
}

int main(void)
{
        snprintf(T, sizeof(T), "/tmp/test-driver.XXXXXX");
        if (mkdtemp(T) == NULL)
                return 1;
        test_version_parsing();
        if (sh("command -v gcc >/dev/null") != 0 || build_root() < 0) {
                printf("ok %d - driver discovery # SKIP cannot build the test root (gcc, gcc -m32)\n", ++tap_count);
        } else {
                test_discovery();
                test_devices();
        }
        sh("rm -rf '%s'", T);
        return tap_done();
}
