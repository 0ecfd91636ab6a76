/* The public API through the shared library, as an outside program sees it: only gpuhook.h, only
 * exported symbols.  A driver root with two GPUs is written by the test itself. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpuhook.h"
#include "tap.h"

static char root[64];

static void cap_eff(char *buf, size_t size)
{
        char line[256];
        FILE *f = fopen("/proc/self/status", "r");
        buf[0] = '\0';
        while (f && fgets(line, sizeof(line), f))
                if (strncmp(line, "CapEff:", 7) == 0)
                        snprintf(buf, size, "%s", line + 7);
        if (f)
                fclose(f);
}

static void write_file(const char *rel, const char *text)
{
        char path[512], cmd[600];
        snprintf(path, sizeof(path), "%s/%s", root, rel);
        snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
        if (system(cmd) != 0)
                exit(1);
        FILE *f = fopen(path, "w");
        if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0) {
                printf("Bail out! writing %s\n", path);
                exit(1);
        }
}

int main(void)
{
        struct gpuhook_error *err = NULL;
        struct gpuhook_gpu_info info;
        struct gpuhook_ctx *ctx;

        snprintf(root, sizeof(root), "/tmp/gh-api-XXXXXX");
        if (mkdtemp(root) == NULL)
                return 1;
        write_file("proc/driver/nvidia/version",
                   "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  (x@y)\n");
        /* Listed out of bus order on purpose: index follows the bus id, not the directory order. */
        write_file(
                "proc/driver/nvidia/gpus/0000:17:00.0/information",
                "Model: \t\t NVIDIA B\nGPU UUID: \t GPU-bbbbbbbb-0000-0000-0000-000000000000\nBus Location: \t 0000:17:00.0\nDevice Minor: \t 0\n");
        write_file(
                "proc/driver/nvidia/gpus/0000:07:00.0/information",
                "Model: \t\t NVIDIA A\nGPU UUID: \t GPU-aaaaaaaa-0000-0000-0000-000000000000\nBus Location: \t 0000:07:00.0\nDevice Minor: \t 1\n");

        ok(strlen(gpuhook_version()) > 0, "gpuhook_version() = %s", gpuhook_version());

        ctx = gpuhook_ctx_new("/nonexistent/driver/root", &err);
        ok(ctx == NULL && err != NULL && err->msg != NULL && strstr(err->msg, "/nonexistent/driver/root") != NULL,
           "a missing driver root is an error naming it (%s)", err ? err->msg : "no error");
        ok(err != NULL && err->kind == GPUHOOK_ERR_NO_DRIVER && gpuhook_error_exit_status(err) == 3,
           "... of kind no driver (exit status 3)");
        gpuhook_error_free(err);
        err = NULL;
        ctx = gpuhook_ctx_new("relative/root", &err);
        ok(ctx == NULL && err != NULL && err->kind == GPUHOOK_ERR_USAGE && gpuhook_error_exit_status(err) == 2,
           "a relative driver root is a usage error (exit status 2: %s)", err ? err->msg : "no error");
        gpuhook_error_free(err);
        err = NULL;

        ctx = gpuhook_ctx_new(root, &err);
        ok(ctx != NULL, "context on a driver root");
        if (ctx == NULL)
                return tap_done();
        is_int(gpuhook_load_gpus(ctx, false, &err), 2, "the fast path finds 2 GPUs");
        is_str(gpuhook_driver_version(ctx), "580.95.05", "driver version");
        is_str(gpuhook_cuda_version(ctx), "", "no CUDA version without NVML");
        ok(gpuhook_gpu(ctx, 0, &info) == 0 && strcmp(info.uuid, "GPU-aaaaaaaa-0000-0000-0000-000000000000") == 0 &&
                   strcmp(info.bus_id, "0000:07:00.0") == 0 && info.minor == 1 && strcmp(info.model, "NVIDIA A") == 0,
           "GPU 0 is the lower bus id, with its minor, UUID and model");
        ok(gpuhook_gpu(ctx, 1, &info) == 0 && info.index == 1 && info.minor == 0, "GPU 1");
        ok(gpuhook_gpu(ctx, 2, &info) < 0, "no GPU 2");

        char caps_before[64], caps_after[64];
        cap_eff(caps_before, sizeof(caps_before));
        int r = gpuhook_configure(ctx, 1, "relative/rootfs", "0", "compute", NULL, 0, &err);
        ok(r < 0 && err != NULL && strstr(err->msg, "relative/rootfs") != NULL,
           "configure refuses a relative rootfs, naming it (%s)", err ? err->msg : "no error");
        ok(err != NULL && err->kind == GPUHOOK_ERR_USAGE && gpuhook_error_exit_status(err) == 2,
           "... as a usage error (exit status 2)");
        gpuhook_error_free(err);
        err = NULL;
        r = gpuhook_configure(ctx, 1, "/tmp", "0", "compute,bogus", NULL, 0, &err);
        ok(r < 0 && err != NULL && strstr(err->msg, "bogus") != NULL,
           "configure refuses an unknown capability, naming it (%s)", err ? err->msg : "no error");
        ok(err != NULL && err->kind == GPUHOOK_ERR_USAGE, "... as a usage error");
        gpuhook_error_free(err);
        err = NULL;
        r = gpuhook_configure(ctx, 1, "/tmp", "0:bogus", "compute", NULL, 0, &err);
        ok(r < 0 && err != NULL && err->kind == GPUHOOK_ERR_USAGE,
           "configure refuses a malformed device list: usage (%s)", err ? err->msg : "no error");
        gpuhook_error_free(err);
        err = NULL;
        {
                const char *const bad_req[] = { "cuda>>12", NULL };
                r = gpuhook_configure(ctx, 1, "/tmp", "0", "compute", bad_req, 0, &err);
        }
        ok(r < 0 && err != NULL && err->kind == GPUHOOK_ERR_USAGE,
           "configure refuses a malformed requirement: usage (%s)", err ? err->msg : "no error");
        gpuhook_error_free(err);
        err = NULL;
        /* This root has no ld.so.cache: configure must stop with a clear error, not inject half. */
        r = gpuhook_configure(ctx, 1, "/tmp", "0", "compute", NULL, GPUHOOK_NO_CGROUPS, &err);
        ok(r < 0 && err != NULL && strstr(err->msg, "ld.so.cache") != NULL,
           "configure on a driver root without ld.so.cache fails and says so (%s)", err ? err->msg : "no error");
        ok(err != NULL && err->kind != GPUHOOK_ERR_USAGE && gpuhook_error_exit_status(err) != 2,
           "... not as a usage error (the caller's input was fine)");
        gpuhook_error_free(err);
        cap_eff(caps_after, sizeof(caps_after));
        ok(strcmp(caps_before, caps_after) == 0, "the caller keeps its capabilities (configure ran in a child)");
        gpuhook_ctx_free(ctx);

        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
        if (system(cmd) != 0)
                return 1;
        return tap_done();
}
