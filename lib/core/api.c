/* The public API (gpuhook.h): a thin layer over the internal modules, so that programs other than
 * gpu-cli (a runtime plugin, a daemon) can enumerate and inject without exec'ing gpu-cli. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capability.h"
#include "cleanup.h"
#include "configure.h"
#include "discover.h"
#include "gpuhook.h"
#include "gpus.h"
#include "request.h"
#include "rootfs.h"

#define API __attribute__((visibility("default")))

struct gpuhook_ctx {
        char *root;
        int rootfd;
        uid_t uid;
        gid_t gid;
        struct gh_gpu_list gpus;
};

API struct gpuhook_ctx *gpuhook_ctx_new(const char *driver_root, struct gpuhook_error **err)
{
        struct gpuhook_ctx *ctx = calloc(1, sizeof(*ctx));

        if (ctx == NULL) {
                gh_err(err, ENOMEM, "creating a gpuhook context");
                return NULL;
        }
        ctx->uid = (uid_t) -1;
        ctx->gid = (gid_t) -1;
        ctx->root = strdup(driver_root ? driver_root : "/");
        ctx->rootfd =
                ctx->root ? gh_driver_root_open(ctx->root, err) : gh_err(err, ENOMEM, "creating a gpuhook context");
        if (ctx->rootfd < 0) {
                free(ctx->root);
                free(ctx);
                return NULL;
        }
        return ctx;
}

API void gpuhook_ctx_free(struct gpuhook_ctx *ctx)
{
        if (ctx == NULL)
                return;
        gh_gpu_list_free(&ctx->gpus);
        if (ctx->rootfd >= 0)
                close(ctx->rootfd);
        free(ctx->root);
        free(ctx);
}

API void gpuhook_ctx_set_service_user(struct gpuhook_ctx *ctx, uid_t uid, gid_t gid)
{
        ctx->uid = uid;
        ctx->gid = gid;
}

API int gpuhook_load_gpus(struct gpuhook_ctx *ctx, bool with_nvml, struct gpuhook_error **err)
{
        struct gh_gpus_opts opts = GH_GPUS_OPTS_DEFAULT;

        opts.source = with_nvml ? GH_GPUS_NVML : GH_GPUS_FAST;
        opts.uid = ctx->uid;
        opts.gid = ctx->gid;
        gh_gpu_list_free(&ctx->gpus);
        if (gh_gpus_load(ctx->rootfd, &opts, &ctx->gpus, err) < 0)
                return -1;
        return (int) ctx->gpus.n;
}

API int gpuhook_gpu(const struct gpuhook_ctx *ctx, unsigned index, struct gpuhook_gpu_info *info)
{
        const struct gh_gpu *g = gh_gpu_by_index(&ctx->gpus, index);

        if (g == NULL)
                return -1;
        *info = (struct gpuhook_gpu_info) {
                .index = g->index,
                .minor = g->minor,
                .uuid = g->uuid,
                .bus_id = g->busid,
                .model = g->model,
                .brand = g->brand,
                .architecture = g->arch,
                .mig_devices = (unsigned) g->nmigs,
        };
        return 0;
}

API const char *gpuhook_driver_version(const struct gpuhook_ctx *ctx) { return ctx->gpus.driver_version; }
API const char *gpuhook_cuda_version(const struct gpuhook_ctx *ctx) { return ctx->gpus.cuda_version; }

/* configure drops capabilities for good and enters another mount namespace: a library must not do
 * that to its caller.  It runs in a child; the result and the one-line message come back on a pipe. */
static int run_isolated(const struct gh_configure_opts *o, gh_error_t *err)
{
        _cleanup_close_ int rd = -1, wr = -1;
        int fds[2], status = 0;
        char msg[4096];
        ssize_t n = 0, got;
        pid_t pid;

        if (pipe2(fds, O_CLOEXEC) < 0)
                return gh_err(err, errno, "configure: pipe");
        rd = fds[0];
        wr = fds[1];
        fflush(NULL);
        pid = fork();
        if (pid < 0)
                return gh_err(err, errno, "configure: fork");
        if (pid == 0) {
                struct gh_configure_timings t;
                gh_error_t e = NULL;
                int r = gh_configure(o, &t, &e);
                if (r < 0 && e != NULL && e->msg != NULL) {
                        size_t len = strlen(e->msg);
                        if (write(wr, e->msg, len) != (ssize_t) len)
                                _exit(1);
                }
                _exit(r < 0 ? gh_error_exit_status(e) : 0);
        }
        close(wr);
        wr = -1;
        while (n < (ssize_t) sizeof(msg) - 1 && (got = read(rd, msg + n, sizeof(msg) - 1 - (size_t) n)) != 0) {
                if (got < 0 && errno == EINTR)
                        continue;
                if (got < 0)
                        break;
                n += got;
        }
        msg[n] = '\0';
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
                return 0;
        gh_err(err, 0, "%s", n > 0 ? msg : "configure failed");
        if (!WIFEXITED(status))
                return gh_err(err, 0, "configure died of signal %d", WTERMSIG(status));
        return gh_err_kind(err, gh_error_kind_of_status(WEXITSTATUS(status)));
}

API int gpuhook_configure(struct gpuhook_ctx *ctx, pid_t pid, const char *rootfs, const char *devices,
                          const char *capabilities, const char *const *requirements, unsigned flags,
                          struct gpuhook_error **err)
{
        _cleanup_request_ struct gh_request req = GH_REQUEST_INIT;
        struct gh_configure_opts o = { .pid = pid, .rootfs = rootfs, .root = ctx->root, .req = &req };

        req.no_cgroups = (flags & GPUHOOK_NO_CGROUPS) != 0;
        req.no_devbind = (flags & GPUHOOK_NO_DEVBIND) != 0;
        req.uid = ctx->uid;
        req.gid = ctx->gid;
        if (rootfs == NULL || rootfs[0] != '/' || strcmp(rootfs, "/") == 0)
                return gh_err_usage(err, "rootfs '%s' must be an absolute path other than /", rootfs ? rootfs : "");
        if (devices != NULL && gh_request_set_devices(&req, devices, err) < 0)
                return -1;
        if (capabilities != NULL && gh_capability_parse(capabilities, GH_CAP_ALL, &req.caps, err) < 0)
                return gh_err_kind(err, GH_ERR_USAGE);
        for (size_t i = 0; requirements != NULL && requirements[i] != NULL; i++)
                if (gh_request_add_requirement(&req, requirements[i], err) < 0)
                        return -1;
        return run_isolated(&o, err);
}
