/* The client half of the driver service protocol (rpc.h): runs in the privileged process and
 * validates what comes back, since the child runs vendor code and is trusted no more than the
 * driver root it was chrooted into.  The server half is rpc-server.c. */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>

#include "cleanup.h"
#include "log.h"
#include "file.h"
#include "rpc-proto.h"
#include "rpc.h"
#include "usage.h"

#define DEFAULT_TIMEOUT_MS 5000

/* One call at a time over the socketpair, with a deadline per call: the child runs vendor code
 * that may hang, and we must not.  (clnt_vc would do this too, but it links RPCSEC_GSS in.) */
struct rpc_conn {
        int fd;
        XDR x;
        int timeout_ms;
        long deadline_ms;
        bool timed_out;
        u_int xid;
};

static long mono_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

static int conn_read(void *handle, void *buf, int len)
{
        struct rpc_conn *c = handle;
        for (;;) {
                struct pollfd p = { .fd = c->fd, .events = POLLIN };
                long left = c->deadline_ms - mono_ms();
                int r;

                if (left <= 0) {
                        c->timed_out = true;
                        return -1;
                }
                r = poll(&p, 1, (int) left);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return -1;
                if (r == 0)
                        continue; /* re-checks the deadline */
                ssize_t n = read(c->fd, buf, (size_t) len);
                if (n < 0 && errno == EINTR)
                        continue;
                return n <= 0 ? -1 : (int) n;
        }
}

static int conn_write(void *handle, void *buf, int len)
{
        return gh_write_all(((struct rpc_conn *) handle)->fd, buf, (size_t) len) < 0 ? -1 : len;
}

static enum clnt_stat nvml_call(struct rpc_conn *c, u_int proc, xdrproc_t xargs, void *args, xdrproc_t xres, void *res)
{
        struct rpc_msg call, reply;
        char verf[MAX_AUTH_BYTES];

        memset(&call, 0, sizeof(call));
        call.rm_xid = ++c->xid;
        call.rm_direction = CALL;
        call.rm_call.cb_rpcvers = RPC_MSG_VERSION;
        call.rm_call.cb_prog = GH_NVML_PROG;
        call.rm_call.cb_vers = GH_NVML_VERS;
        call.rm_call.cb_proc = proc;
        call.rm_call.cb_cred = _null_auth;
        call.rm_call.cb_verf = _null_auth;
        c->deadline_ms = mono_ms() + c->timeout_ms;
        c->x.x_op = XDR_ENCODE;
        if (!xdr_callmsg(&c->x, &call) || !xargs(&c->x, args) || !xdrrec_endofrecord(&c->x, TRUE))
                return RPC_CANTSEND;

        memset(&reply, 0, sizeof(reply));
        reply.acpted_rply.ar_verf.oa_base = verf;
        reply.acpted_rply.ar_results.where = res;
        reply.acpted_rply.ar_results.proc = xres;
        c->x.x_op = XDR_DECODE;
        if (!xdrrec_skiprecord(&c->x))
                return c->timed_out ? RPC_TIMEDOUT : RPC_CANTRECV;
        if (!xdr_replymsg(&c->x, &reply)) {
                xdr_free(xres, res);
                return c->timed_out ? RPC_TIMEDOUT : RPC_CANTDECODERES;
        }
        if (reply.rm_xid != call.rm_xid || reply.rm_reply.rp_stat != MSG_ACCEPTED ||
            reply.acpted_rply.ar_stat != SUCCESS) {
                xdr_free(xres, res);
                return reply.rm_reply.rp_stat != MSG_ACCEPTED      ? RPC_AUTHERROR
                       : reply.acpted_rply.ar_stat == PROC_UNAVAIL ? RPC_PROCUNAVAIL
                                                                   : RPC_CANTDECODERES;
        }
        return RPC_SUCCESS;
}

static int call_failed(enum clnt_stat st, const char *what, int timeout_ms, gh_error_t *err)
{
        if (st == RPC_TIMEDOUT) {
                gh_err(err, 0, "NVML did not answer %s within %d ms (libnvidia-ml hangs?)", what, timeout_ms);
                return gh_err_code(err, ETIMEDOUT);
        }
        gh_err(err, 0, "asking NVML for %s: %s", what, clnt_sperrno(st));
        return gh_err_code(err, EPIPE);
}

static bool clean_string(const char *s)
{
        if (s == NULL || s[0] == '\0')
                return false;
        for (; *s; s++)
                if ((unsigned char) *s < 0x20 || *s == 0x7f)
                        return false;
        return true;
}

static int convert_gpu(const gh_rpc_gpu *r, unsigned index, struct gh_gpu *gpu, gh_error_t *err)
{
        memset(gpu, 0, sizeof(*gpu));
        if (!clean_string(r->uuid) || !clean_string(r->model) || r->minor > 254 || r->cc_major < 0 || r->cc_minor < 0 ||
            r->cc_major > 999 || r->cc_minor > 999)
                return gh_err(err, 0, "NVML returned malformed data for GPU %u", index);
        if (gh_busid_normalize(r->busid, gpu->busid, sizeof(gpu->busid)) < 0)
                return gh_err(err, 0, "NVML returned a bad bus id for GPU %u", index);
        gpu->minor = r->minor;
        snprintf(gpu->uuid, sizeof(gpu->uuid), "%s", r->uuid);
        snprintf(gpu->model, sizeof(gpu->model), "%s", r->model);
        snprintf(gpu->brand, sizeof(gpu->brand), "%s", gh_nvml_brand_name(r->brand));
        snprintf(gpu->arch, sizeof(gpu->arch), "%d.%d", r->cc_major, r->cc_minor);
        gpu->mig_enabled = r->mig_enabled;
        if (r->migs.migs_len == 0)
                return 0;
        gpu->migs = calloc(r->migs.migs_len, sizeof(*gpu->migs));
        if (gpu->migs == NULL)
                return gh_err(err, ENOMEM, "reading GPU %u", index);
        for (u_int m = 0; m < r->migs.migs_len; m++) {
                const gh_rpc_mig *rm = &r->migs.migs_val[m];
                if (!clean_string(rm->uuid))
                        return gh_err(err, 0, "NVML returned a malformed MIG device of GPU %u", index);
                gpu->migs[m] = (struct gh_mig) { .index = rm->index, .gi = rm->gi, .ci = rm->ci };
                snprintf(gpu->migs[m].uuid, sizeof(gpu->migs[m].uuid), "%s", rm->uuid);
                gpu->nmigs++;
        }
        return 0;
}

static int fetch_usage(struct rpc_conn *clnt, unsigned i, struct gh_gpu *gpu, gh_error_t *err)
{
        gh_rpc_usage_res ures;
        enum clnt_stat st;
        char what[40];
        int r;

        memset(&ures, 0, sizeof(ures));
        snprintf(what, sizeof(what), "the usage of GPU %u", i);
        st = nvml_call(clnt, GH_RPC_USAGE, (xdrproc_t) xdr_u_int, &i, (xdrproc_t) xdr_gh_rpc_usage_res, &ures);
        if (st != RPC_SUCCESS)
                return call_failed(st, what, clnt->timeout_ms, err);
        if (ures.status != 0)
                r = gh_err(err, 0, "%s",
                           clean_string(ures.gh_rpc_usage_res_u.error) ? ures.gh_rpc_usage_res_u.error : "NVML failed");
        else
                r = gh_usage_convert(&ures.gh_rpc_usage_res_u.usage, i, &gpu->usage, err);
        xdr_free((xdrproc_t) xdr_gh_rpc_usage_res, (char *) &ures);
        return r;
}

static int fetch(struct rpc_conn *clnt, int timeout_ms, bool with_usage, struct gh_gpu_list *list, gh_error_t *err)
{
        gh_rpc_driver_res dres;
        enum clnt_stat st;
        int r = 0;

        memset(&dres, 0, sizeof(dres));
        st = nvml_call(clnt, GH_RPC_DRIVER, (xdrproc_t) (void (*)(void)) xdr_void, NULL,
                       (xdrproc_t) xdr_gh_rpc_driver_res, &dres);
        if (st != RPC_SUCCESS)
                return call_failed(st, "the driver version", timeout_ms, err);
        if (dres.status != 0) {
                r = gh_err(err, 0, "%s",
                           clean_string(dres.gh_rpc_driver_res_u.error) ? dres.gh_rpc_driver_res_u.error
                                                                        : "NVML failed");
        } else if (!gh_version_is_dotted(dres.gh_rpc_driver_res_u.driver.driver_version) ||
                   strlen(dres.gh_rpc_driver_res_u.driver.driver_version) >= sizeof(list->driver_version) ||
                   dres.gh_rpc_driver_res_u.driver.count > GH_RPC_MAX_GPUS ||
                   dres.gh_rpc_driver_res_u.driver.cuda_version < 0) {
                r = gh_err(err, 0, "NVML returned a malformed driver description");
        } else {
                const gh_rpc_driver *d = &dres.gh_rpc_driver_res_u.driver;
                snprintf(list->driver_version, sizeof(list->driver_version), "%s", d->driver_version);
                snprintf(list->cuda_version, sizeof(list->cuda_version), "%d.%d", d->cuda_version / 1000,
                         (d->cuda_version % 1000) / 10);
                list->gpus = calloc(d->count + 1, sizeof(*list->gpus));
                if (list->gpus == NULL)
                        r = gh_err(err, ENOMEM, "listing GPUs");
        }
        unsigned count = dres.gh_rpc_driver_res_u.driver.count;
        xdr_free((xdrproc_t) xdr_gh_rpc_driver_res, (char *) &dres);
        if (r < 0)
                return r;

        for (unsigned i = 0; i < count; i++) {
                gh_rpc_gpu_res gres;
                char what[32];

                memset(&gres, 0, sizeof(gres));
                snprintf(what, sizeof(what), "GPU %u", i);
                st = nvml_call(clnt, GH_RPC_GPU, (xdrproc_t) xdr_u_int, &i, (xdrproc_t) xdr_gh_rpc_gpu_res, &gres);
                if (st != RPC_SUCCESS)
                        return call_failed(st, what, timeout_ms, err);
                if (gres.status != 0)
                        r = gh_err(err, 0, "%s",
                                   clean_string(gres.gh_rpc_gpu_res_u.error) ? gres.gh_rpc_gpu_res_u.error
                                                                             : "NVML failed");
                else
                        r = convert_gpu(&gres.gh_rpc_gpu_res_u.gpu, i, &list->gpus[list->n], err);
                list->n++; /* counted even when partly filled, so gh_gpu_list_free frees its MIG array */
                xdr_free((xdrproc_t) xdr_gh_rpc_gpu_res, (char *) &gres);
                if (r == 0 && with_usage)
                        r = fetch_usage(clnt, i, &list->gpus[list->n - 1], err);
                if (r < 0)
                        return r;
        }
        list->from_nvml = true;
        return 0;
}

int gh_rpc_fetch(int fd, int timeout_ms, bool with_usage, struct gh_gpu_list *list, gh_error_t *err)
{
        struct rpc_conn c = { .fd = fd };
        int r;

        memset(list, 0, sizeof(*list));
        c.timeout_ms = timeout_ms <= 0 ? DEFAULT_TIMEOUT_MS : timeout_ms;
        xdrrec_create(&c.x, 0, 0, (char *) &c, conn_read, conn_write);
        r = fetch(&c, c.timeout_ms, with_usage, list, err);
        xdr_destroy(&c.x); /* leaves fd open: the caller owns it */
        if (r < 0)
                gh_gpu_list_free(list);
        return r;
}

int gh_rpc_fetch_cuda(int fd, int timeout_ms, char *cuda, size_t size, gh_error_t *err)
{
        struct rpc_conn c = { .fd = fd };
        gh_rpc_cuda_res res;
        enum clnt_stat st;
        int r = 0;

        c.timeout_ms = timeout_ms <= 0 ? DEFAULT_TIMEOUT_MS : timeout_ms;
        xdrrec_create(&c.x, 0, 0, (char *) &c, conn_read, conn_write);
        memset(&res, 0, sizeof(res));
        st = nvml_call(&c, GH_RPC_CUDA, (xdrproc_t) (void (*)(void)) xdr_void, NULL, (xdrproc_t) xdr_gh_rpc_cuda_res,
                       &res);
        if (st != RPC_SUCCESS) {
                r = call_failed(st, "the CUDA version", c.timeout_ms, err);
        } else if (res.status != 0) {
                r = gh_err(err, 0, "%s",
                           clean_string(res.gh_rpc_cuda_res_u.error) ? res.gh_rpc_cuda_res_u.error : "libcuda failed");
        } else if (res.gh_rpc_cuda_res_u.cuda_version <= 0 || res.gh_rpc_cuda_res_u.cuda_version > 999999) {
                r = gh_err(err, 0, "libcuda returned a malformed CUDA version");
        } else {
                int v = res.gh_rpc_cuda_res_u.cuda_version;
                snprintf(cuda, size, "%d.%d", v / 1000, (v % 1000) / 10);
        }
        if (st == RPC_SUCCESS)
                xdr_free((xdrproc_t) xdr_gh_rpc_cuda_res, (char *) &res);
        xdr_destroy(&c.x);
        return r;
}
