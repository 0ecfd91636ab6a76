/* lib/core/gpus.c (the proc-file fast path) and, as root with the fake driver built, the NVML service:
 * every failure mode ends with no child left and no descriptor leaked. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "gpus.h"
#include "rootfs.h"
#include "tap.h"

static char top[PATH_MAX];

static void write_file(const char *rel, const char *content, size_t len)
{
        char path[PATH_MAX * 2], cmd[PATH_MAX * 3];
        int fd;

        snprintf(path, sizeof(path), "%s/%s", top, rel);
        snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
        if (system(cmd) != 0)
                abort();
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || write(fd, content, len) != (ssize_t) len)
                abort();
        close(fd);
}

static void write_str(const char *rel, const char *content) { write_file(rel, content, strlen(content)); }

static const char info_real[] = "Model: \t\t NVIDIA H200\n"
                                "IRQ:   \t\t 45\n"
                                "GPU UUID: \t GPU-12345678-1234-1234-1234-123456789abc\n"
                                "Video BIOS: \t 96.00.af.00.01\n"
                                "Bus Type: \t PCIe\n"
                                "DMA Size: \t 52 bits\n"
                                "DMA Mask: \t 0xfffffffffffff\n"
                                "Bus Location: \t 0000:00:06.0\n"
                                "Device Minor: \t 0\n"
                                "GPU Excluded:\t No\n";

static int parse(const char *text, struct gh_gpu *gpu, char **msg)
{
        _cleanup_error_ gh_error_t err = NULL;
        int r;

        memset(gpu, 0, sizeof(*gpu));
        r = gh_gpus_parse_information(text, strlen(text), "information", gpu, &err);
        if (msg)
                *msg = r < 0 ? strdup(err->msg) : NULL;
        return r;
}

static void test_information(void)
{
        struct gh_gpu gpu;
        char *msg = NULL;

        ok(parse(info_real, &gpu, NULL) == 0, "the real driver's format parses");
        is_str(gpu.model, "NVIDIA H200", "model trimmed of tabs and spaces");
        is_str(gpu.uuid, "GPU-12345678-1234-1234-1234-123456789abc", "uuid");
        is_str(gpu.busid, "0000:00:06.0", "bus location");
        is_int(gpu.minor, 0, "device minor");

        ok(parse("Device Minor:7\r\nGPU UUID:GPU-x\r\nModel:   A  B  \r\nBus Location:00000000:3B:00.0", &gpu, NULL) ==
                   0,
           "no blanks, CRLF endings and no final newline parse");
        is_int(gpu.minor, 7, "minor without blanks");
        is_str(gpu.model, "A  B", "inner blanks of the model kept");
        is_str(gpu.busid, "0000:3b:00.0", "NVML-style 8-digit domain normalised");

        ok(parse("GPU UUID: GPU-x\nModel: m\n", &gpu, &msg) < 0 && strstr(msg, "no Device Minor"),
           "missing minor is an error");
        free(msg);
        ok(parse("Device Minor: 1\nModel: m\n", &gpu, &msg) < 0 && strstr(msg, "no GPU UUID"),
           "missing uuid is an error");
        free(msg);
        ok(parse("Device Minor: 255\nGPU UUID: GPU-x\n", &gpu, &msg) < 0 && strstr(msg, "bad Device Minor"),
           "minor 255 (nvidiactl's) rejected");
        free(msg);
        ok(parse("Device Minor: -1\nGPU UUID: GPU-x\n", &gpu, &msg) < 0, "negative minor rejected");
        free(msg);
        ok(parse("Device Minor: 99999999999999999999\nGPU UUID: GPU-x\n", &gpu, &msg) < 0,
           "overflowing minor rejected");
        free(msg);
        ok(parse("Device Minor: 1\nGPU UUID: GPU-x\nBus Location: zz\n", &gpu, &msg) < 0 &&
                   strstr(msg, "bad Bus Location"),
           "bad bus location rejected");
        free(msg);
        ok(parse("Device Minor: 1\nGPU UUID: GPU-x\n", &gpu, NULL) == 0 && gpu.model[0] == '\0' && gpu.busid[0] == '\0',
           "model and bus location are optional in the file");
        {
                size_t n = 100000;
                char *big = malloc(n + 200);
                memset(big, 'M', n);
                memcpy(big, "Model: ", 7);
                strcpy(big + n, "\nDevice Minor: 3\nGPU UUID: GPU-y\n");
                ok(parse(big, &gpu, NULL) == 0 && strlen(gpu.model) == GH_MODEL_MAX - 1 && gpu.minor == 3,
                   "a 100 kB model line is truncated, not overflowed");
                free(big);
        }
}

static void test_busid(void)
{
        char out[GH_BUSID_MAX];

        ok(gh_busid_normalize("06:00.1", out, sizeof(out)) == 0 && strcmp(out, "0000:06:00.1") == 0, "short bus id");
        ok(gh_busid_normalize("ABCD:FF:1f.7", out, sizeof(out)) == 0 && strcmp(out, "abcd:ff:1f.7") == 0, "upper case");
        ok(gh_busid_normalize("000010000:00:00.0", out, sizeof(out)) < 0, "9-digit domain rejected");
        ok(gh_busid_normalize("0000:00:06.0 ", out, sizeof(out)) < 0, "trailing garbage rejected");
        ok(gh_busid_normalize("", out, sizeof(out)) < 0, "empty rejected");
}

static void test_fast_path(void)
{
        _cleanup_gpu_list_ struct gh_gpu_list list = { 0 };
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_close_ int rootfd = -1;
        char info[512];

        rootfd = gh_rootfs_open(top, &err);
        ok(rootfd >= 0, "open the temporary driver root");
        ok(gh_gpus_fast(rootfd, &list, &err) < 0 && err->code == ENOENT && strstr(err->msg, "no NVIDIA driver"),
           "no proc/driver/nvidia/version: 'no NVIDIA driver' (ENOENT)");
        gh_error_free(&err);

        write_str(
                "proc/driver/nvidia/version",
                "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (dvs-builder@U16)  "
                "Thu Oct  2 2025\nGCC version:  gcc version 12.2.0\n");
        ok(gh_gpus_fast(rootfd, &list, &err) == 0 && list.n == 0, "driver without a gpus directory: zero GPUs");
        is_str(list.driver_version, "580.159.04", "driver version found among the words of the NVRM line");
        gh_gpu_list_free(&list);

        /* Three GPUs whose directory order, minors and bus ids disagree: indices follow bus ids. */
        const char *bus[] = { "0000:b1:00.0", "0000:0a:00.0", "0001:00:01.0" };
        const unsigned minors[] = { 0, 5, 1 };
        for (int i = 0; i < 3; i++) {
                char rel[128];
                snprintf(info, sizeof(info),
                         "Model:\tGPU %d\nGPU UUID:\tGPU-%d\nBus Location:\t%s\nDevice Minor:\t%u\n", i, i, bus[i],
                         minors[i]);
                snprintf(rel, sizeof(rel), "proc/driver/nvidia/gpus/%s/information", bus[i]);
                write_str(rel, info);
        }
        ok(gh_gpus_fast(rootfd, &list, &err) == 0 && list.n == 3, "three GPUs found");
        if (list.n == 3) {
                is_str(list.gpus[0].busid, "0000:0a:00.0", "index 0 is the lowest bus id");
                is_int(list.gpus[0].minor, 5, "index 0 keeps its own minor");
                is_str(list.gpus[2].busid, "0001:00:01.0", "a higher PCI domain sorts last");
                is_int(list.gpus[2].index, 2, "indices are positions");
                ok(!list.from_nvml && list.cuda_version[0] == '\0' && list.gpus[0].brand[0] == '\0',
                   "the fast path claims nothing it cannot know");
        }
        gh_gpu_list_free(&list);

        write_str("proc/driver/nvidia/gpus/0000:0c:00.0/information", "Model: broken\n");
        ok(gh_gpus_fast(rootfd, &list, &err) < 0 && strstr(err->msg, "0000:0c:00.0/information") &&
                   strstr(err->msg, "no Device Minor"),
           "a broken information file is an error naming the file");
        gh_error_free(&err);

        {
                char *huge = malloc(200000);
                memset(huge, 'x', 200000);
                write_file("proc/driver/nvidia/gpus/0000:0c:00.0/information", huge, 200000);
                free(huge);
        }
        ok(gh_gpus_fast(rootfd, &list, &err) < 0 && strstr(err->msg, "larger than"),
           "a 200 kB information file is refused");
        gh_error_free(&err);

        /* The information file as a symlink out of the driver root stays inside the root. */
        {
                char link[PATH_MAX * 2];
                snprintf(link, sizeof(link), "%s/proc/driver/nvidia/gpus/0000:0c:00.0/information", top);
                unlink(link);
                ok(symlink("/proc/driver/nvidia/gpus/0000:0a:00.0/information", link) == 0, "make an absolute symlink");
                ok(gh_gpus_fast(rootfd, &list, &err) == 0 && list.n == 4 && strcmp(list.gpus[1].uuid, "GPU-1") == 0,
                   "an absolute symlink resolves inside the driver root");
                gh_gpu_list_free(&list);
                gh_error_free(&err);
        }

        write_str("proc/driver/nvidia/version", "NVRM version: garbage\n");
        ok(gh_gpus_fast(rootfd, &list, &err) < 0 && strstr(err->msg, "version line has no version number"),
           "a version file without a version");
        gh_error_free(&err);
}

static void test_mig_caps(void)
{
        struct gh_mig migs[2] = { { .gi = 1, .ci = 0 }, { .gi = 2, .ci = 0 } };
        struct gh_gpu gpu = { .minor = 4, .migs = migs, .nmigs = 2 };
        struct gh_gpu_list list = { .gpus = &gpu, .n = 1 };
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_close_ int rootfd = gh_rootfs_open(top, &err);

        write_str("proc/driver/nvidia/capabilities/gpu4/mig/gi1/access", "DeviceFileMinor: 282\nDeviceFileMode: 292\n");
        write_str("proc/driver/nvidia/capabilities/gpu4/mig/gi1/ci0/access",
                  "DeviceFileMode: 292\nDeviceFileMinor:\t283\n");
        ok(gh_gpus_read_mig_caps(rootfd, &list, &err) == 0, "read MIG capability files");
        ok(migs[0].has_caps && migs[0].gi_cap_minor == 282 && migs[0].ci_cap_minor == 283,
           "gi/ci cap minors of gi1/ci0");
        ok(!migs[1].has_caps, "a MIG device without capability files has none");
        write_str("proc/driver/nvidia/capabilities/gpu4/mig/gi2/access", "DeviceFileMode: 292\n");
        ok(gh_gpus_read_mig_caps(rootfd, &list, &err) < 0 && strstr(err->msg, "no DeviceFileMinor"),
           "an access file without a minor is an error");
}

/* ---- the NVML service against the fake driver (root only) ---- */

static int count_fds(void)
{
        DIR *d = opendir("/proc/self/fd");
        int n = 0;
        while (readdir(d) != NULL)
                n++;
        closedir(d);
        return n;
}

static bool make_fake_root(const char *dir, const char *extra)
{
        const char *src = getenv("GH_SOURCE_DIR");
        char cmd[PATH_MAX * 3];
        if (src == NULL)
                return false;
        snprintf(cmd, sizeof(cmd), "rm -rf '%s' && '%s/tests/fake-driver/make-root.sh' '%s' %s >/dev/null", dir, src,
                 dir, extra);
        return system(cmd) == 0;
}

static void test_service(void)
{
        static const struct {
                const char *mode, *want;
        } modes[] = {
                { "ok", NULL },
                { "crash", "crashed the NVML service (Segmentation fault)" },
                { "hang", "did not answer the driver version within 500 ms" },
                { "error", "Driver Not Loaded" },
        };
        char dir[PATH_MAX + 16];

        if (geteuid() != 0 || getenv("GH_BUILD_DIR") == NULL) {
                tap_diag("NVML service tests need root and GH_BUILD_DIR (the fake driver): skipped");
                return;
        }
        snprintf(dir, sizeof(dir), "%s/fake", top);
        for (size_t i = 0; i < GH_ARRAY_SIZE(modes); i++) {
                char extra[64];
                snprintf(extra, sizeof(extra), "--nvml-mode %s", modes[i].mode);
                if (!ok(make_fake_root(dir, extra), "make a fake driver root, NVML mode %s", modes[i].mode))
                        continue;
                struct gh_gpus_opts opts = GH_GPUS_OPTS_DEFAULT;
                struct gh_gpu_list list = { 0 };
                gh_error_t err = NULL;
                struct timespec t0, t1;
                int fds, r;

                opts.timeout_ms = 500;
                _cleanup_close_ int rootfd = gh_rootfs_open(dir, &err);
                fds = count_fds();
                clock_gettime(CLOCK_MONOTONIC, &t0);
                r = gh_gpus_load(rootfd, &opts, &list, &err);
                clock_gettime(CLOCK_MONOTONIC, &t1);
                double secs = (double) (t1.tv_sec - t0.tv_sec) + (double) (t1.tv_nsec - t0.tv_nsec) / 1e9;
                if (modes[i].want == NULL) {
                        ok(r == 0 && list.from_nvml && list.n == 2 && strcmp(list.cuda_version, "13.0") == 0 &&
                                   strcmp(list.gpus[0].arch, "9.0") == 0 && list.gpus[0].brand[0] != '\0',
                           "mode ok: 2 GPUs with CUDA version, arch and brand from NVML");
                } else {
                        ok(r < 0 && err && strstr(err->msg, modes[i].want) && !strchr(err->msg, '\n'),
                           "mode %s: one-line error '%s'", modes[i].mode, modes[i].want);
                        if (err)
                                tap_diag("%s", err->msg);
                }
                ok(secs < 2.0, "mode %s: done in %.2f s (timeout 0.5 s)", modes[i].mode, secs);
                ok(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD, "mode %s: no child left (no zombie)",
                   modes[i].mode);
                gh_gpu_list_free(&list);
                gh_error_free(&err);
                is_int(count_fds(), fds, "mode %s: no descriptor leaked", modes[i].mode);
        }
}

int main(void)
{
        char cmd[PATH_MAX + 16];

        snprintf(top, sizeof(top), "/tmp/test-gpus.XXXXXX");
        if (mkdtemp(top) == NULL)
                return 1;
        test_information();
        test_busid();
        test_fast_path();
        test_mig_caps();
        test_service();
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
        if (system(cmd) != 0)
                return 1;
        return tap_done();
}
