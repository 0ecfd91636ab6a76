/* lib/core/rpc-server.c and rpc-client.c: both ends of the driver service protocol over a socketpair, without root.
 *
 * The client half faces a scripted server (a child of this test) that answers well, answers with
 * malformed, oversized, truncated or mismatched replies, dies or hangs: each ends in one clear
 * one-line error, within the timeout, with nothing leaked (ASan).  The server half answers in a
 * child too: its setup error travels to the client, and with the fake driver's libnvidia-ml and
 * libcuda (loaded by path, FAKE_DRIVER_DIR) it serves the fake GPUs. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rpc/rpc.h>

#include "cleanup.h"
#include "gpumodel.h"
#include "rpc.h"
#include "usage.h"
#include "tests/tap.h"
#include "tests/testutil.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include "nvml.h"
#pragma GCC diagnostic pop

#define VER "580.95.05"

/* ---- the scripted server ---- */

struct srv {
        int fd;
        XDR x;
};

static int srv_read(void *h, void *buf, int len)
{
        ssize_t n = read(((struct srv *) h)->fd, buf, (size_t) len);
        return n <= 0 ? -1 : (int) n;
}

static int srv_write(void *h, void *buf, int len)
{
        return write(((struct srv *) h)->fd, buf, (size_t) len) == len ? len : -1;
}

/* Reads the next call; false at EOF. */
static bool next_call(struct srv *s, struct rpc_msg *call, u_int *arg)
{
        static char cred[2 * MAX_AUTH_BYTES];

        memset(call, 0, sizeof(*call));
        call->rm_call.cb_cred.oa_base = cred;
        call->rm_call.cb_verf.oa_base = cred + MAX_AUTH_BYTES;
        s->x.x_op = XDR_DECODE;
        if (!xdrrec_skiprecord(&s->x) || !xdr_callmsg(&s->x, call))
                return false;
        *arg = 0;
        if (call->rm_call.cb_proc == GH_RPC_GPU || call->rm_call.cb_proc == GH_RPC_USAGE)
                xdr_u_int(&s->x, arg);
        return true;
}

static void send_reply(struct srv *s, u_int xid, enum accept_stat stat, xdrproc_t proc, void *res)
{
        struct rpc_msg reply;

        memset(&reply, 0, sizeof(reply));
        reply.rm_xid = xid;
        reply.rm_direction = REPLY;
        reply.rm_reply.rp_stat = MSG_ACCEPTED;
        reply.acpted_rply.ar_verf = _null_auth;
        reply.acpted_rply.ar_stat = stat;
        reply.acpted_rply.ar_results.where = res;
        reply.acpted_rply.ar_results.proc = proc ? proc : (xdrproc_t) (void (*)(void)) xdr_void;
        s->x.x_op = XDR_ENCODE;
        xdr_replymsg(&s->x, &reply);
        xdrrec_endofrecord(&s->x, TRUE);
}

static void send_driver(struct srv *s, u_int xid, const char *version, int cuda, u_int count)
{
        gh_rpc_driver_res r = { .status = 0 };
        r.gh_rpc_driver_res_u.driver =
                (gh_rpc_driver) { .driver_version = (char *) version, .cuda_version = cuda, .count = count };
        send_reply(s, xid, SUCCESS, (xdrproc_t) xdr_gh_rpc_driver_res, &r);
}

static void send_error(struct srv *s, u_int xid, xdrproc_t proc, const char *msg)
{
        /* Every result union has the same error arm: status, then the string. */
        gh_rpc_driver_res r = { .status = 1 };
        r.gh_rpc_driver_res_u.error = (char *) msg;
        send_reply(s, xid, SUCCESS, proc, &r);
}

static gh_rpc_gpu gpu_reply(u_int i)
{
        static char uuid[2][64], busid[2][32];
        snprintf(uuid[i % 2], sizeof(uuid[0]), "GPU-0000000%u-aaaa-bbbb-cccc-dddddddddddd", i);
        snprintf(busid[i % 2], sizeof(busid[0]), "00000000:%02X:00.0", 0x3b + i);
        return (gh_rpc_gpu) { .minor = i,
                              .uuid = uuid[i % 2],
                              .busid = busid[i % 2],
                              .model = (char *) "NVIDIA H200",
                              .brand = 2,
                              .cc_major = 9,
                              .cc_minor = 0 };
}

static void send_gpu(struct srv *s, u_int xid, gh_rpc_gpu g)
{
        gh_rpc_gpu_res r = { .status = 0 };
        r.gh_rpc_gpu_res_u.gpu = g;
        send_reply(s, xid, SUCCESS, (xdrproc_t) xdr_gh_rpc_gpu_res, &r);
}

/* A driver description whose version string is longer than the protocol's bound of 80. */
static bool_t xdr_oversized_driver(XDR *x, void *unused)
{
        static char big[400];
        char *p = big;
        int status = 0, cuda = 13000;
        u_int count = 1;

        memset(big, '5', sizeof(big) - 1);
        return xdr_int(x, &status) && xdr_string(x, &p, sizeof(big)) && xdr_int(x, &cuda) && xdr_u_int(x, &count);
}

enum script {
        GOOD,
        GOOD_USAGE,
        DRIVER_ERROR,
        DRIVER_ERROR_CONTROL,
        BAD_VERSION,
        TOO_MANY_GPUS,
        NEGATIVE_CUDA,
        OVERSIZED,
        WRONG_XID,
        PROC_UNAVAILABLE,
        TRUNCATED,
        HUGE_RECORD,
        DIES_AT_ONCE,
        HANGS,
        HANGS_ON_GPU_1,
        DIES_ON_GPU_1,
        GPU_CONTROL_UUID,
        GPU_MINOR_255,
        GPU_BAD_BUS,
        GPU_BAD_CC,
        GPU_BAD_MIG,
        GPU_ERROR,
        USAGE_MALFORMED,
        CUDA_GOOD,
        CUDA_ZERO,
        CUDA_ERROR,
};

static void script(int fd, enum script which)
{
        struct srv s = { .fd = fd };
        struct rpc_msg call;
        u_int arg;

        xdrrec_create(&s.x, 0, 0, (char *) &s, srv_read, srv_write);
        if (which == DIES_AT_ONCE)
                _exit(0);
        while (next_call(&s, &call, &arg)) {
                u_int xid = call.rm_xid, proc = call.rm_call.cb_proc;
                if (which == HANGS || (which == HANGS_ON_GPU_1 && proc == GH_RPC_GPU && arg == 1))
                        for (;;)
                                pause();
                if (which == DIES_ON_GPU_1 && proc == GH_RPC_GPU && arg == 1)
                        _exit(1);
                if (proc == GH_RPC_CUDA) {
                        gh_rpc_cuda_res r = { .status = 0 };
                        if (which == CUDA_ERROR)
                                send_error(&s, xid, (xdrproc_t) xdr_gh_rpc_cuda_res,
                                           "cuDriverGetVersion failed: CUDA error 100");
                        r.gh_rpc_cuda_res_u.cuda_version = which == CUDA_ZERO ? 0 : 12080;
                        if (which != CUDA_ERROR)
                                send_reply(&s, xid, SUCCESS, (xdrproc_t) xdr_gh_rpc_cuda_res, &r);
                        continue;
                }
                if (proc == GH_RPC_DRIVER) {
                        switch (which) {
                        case DRIVER_ERROR:
                                send_error(&s, xid, (xdrproc_t) xdr_gh_rpc_driver_res,
                                           "NVML initialisation failed: Driver Not Loaded");
                                break;
                        case DRIVER_ERROR_CONTROL:
                                send_error(&s, xid, (xdrproc_t) xdr_gh_rpc_driver_res, "\033[2Jgotcha\n");
                                break;
                        case BAD_VERSION: send_driver(&s, xid, "580.95.05; rm -rf /", 13000, 1); break;
                        case TOO_MANY_GPUS: send_driver(&s, xid, VER, 13000, 100000); break;
                        case NEGATIVE_CUDA: send_driver(&s, xid, VER, -1, 1); break;
                        case OVERSIZED: send_reply(&s, xid, SUCCESS, (xdrproc_t) xdr_oversized_driver, NULL); break;
                        case WRONG_XID: send_driver(&s, xid + 7, VER, 13000, 2); break;
                        case PROC_UNAVAILABLE: send_reply(&s, xid, PROC_UNAVAIL, NULL, NULL); break;
                        case TRUNCATED: {
                                /* A last fragment that announces 1000 bytes and brings 12. */
                                unsigned char buf[16] = { 0x80, 0, 0x03, 0xe8 };
                                memcpy(buf + 4, &xid, 4);
                                if (write(fd, buf, 16) < 0)
                                        _exit(2);
                                _exit(0);
                        }
                        case HUGE_RECORD:
                                if (write(fd, "\x7f\xff\xff\xffgarbage, not a reply", 25) < 0)
                                        _exit(2);
                                _exit(0);
                        default: send_driver(&s, xid, VER, 13000, 2);
                        }
                        continue;
                }
                if (proc == GH_RPC_GPU) {
                        gh_rpc_gpu g = gpu_reply(arg);
                        gh_rpc_mig mig = { .index = 0, .gi = 1, .ci = 0, .uuid = (char *) "MIG-\x01" };
                        switch (which) {
                        case GPU_CONTROL_UUID: g.uuid = (char *) "GPU-\n1"; break;
                        case GPU_MINOR_255: g.minor = 255; break;
                        case GPU_BAD_BUS: g.busid = (char *) "zz"; break;
                        case GPU_BAD_CC: g.cc_major = 1000; break;
                        case GPU_BAD_MIG:
                                g.mig_enabled = TRUE;
                                g.migs.migs_len = 1;
                                g.migs.migs_val = &mig;
                                break;
                        case GPU_ERROR:
                                send_error(&s, xid, (xdrproc_t) xdr_gh_rpc_gpu_res,
                                           "GPU 0: nvmlDeviceGetUUID: GPU is lost");
                                continue;
                        default: break;
                        }
                        send_gpu(&s, xid, g);
                        continue;
                }
                if (proc == GH_RPC_USAGE) {
                        gh_rpc_usage_res r = { .status = 0 };
                        gh_rpc_proc p = {
                                .pid = 4242, .used_memory = 1 << 20, .compute = TRUE, .sm_util = 7, .mem_util = 1
                        };
                        r.gh_rpc_usage_res_u.usage = (gh_rpc_usage) { .gpu_util = 40,
                                                                      .mem_util = 10,
                                                                      .mem_used = 1ULL << 30,
                                                                      .mem_total = 141ULL << 30,
                                                                      .temperature = 35,
                                                                      .power_mw = 90000,
                                                                      .compute_mode = 0,
                                                                      .procs = { 1, &p } };
                        if (which == USAGE_MALFORMED)
                                r.gh_rpc_usage_res_u.usage.gpu_util = 250;
                        send_reply(&s, xid, SUCCESS, (xdrproc_t) xdr_gh_rpc_usage_res, &r);
                }
        }
        xdr_destroy(&s.x);
}

/* ---- the client's side of a run ---- */

struct outcome {
        int r, code;
        char msg[512];
        double secs;
        bool child_reaped;
};

static double now(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* Forks server(fd, arg) on one end of a socketpair and returns the other end. */
static int start(void (*server)(int, int), int arg, pid_t *pid)
{
        int sv[2];

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                abort();
        fflush(stdout);
        if ((*pid = fork()) == 0) {
                close(sv[0]);
                server(sv[1], arg);
                _exit(0);
        }
        close(sv[1]);
        return sv[0];
}

/* Closes our end, gives the server 2 s to end by itself, then kills it; true when it was reaped. */
static bool finish(int fd, pid_t pid)
{
        close(fd);
        for (int i = 0; i < 200; i++) {
                if (waitpid(pid, NULL, WNOHANG) == pid)
                        return true;
                nanosleep(&(struct timespec) { .tv_nsec = 10 * 1000 * 1000 }, NULL);
        }
        kill(pid, SIGKILL);
        return waitpid(pid, NULL, 0) == pid;
}

static void scripted(int fd, int which) { script(fd, (enum script) which); }

static void record(struct outcome *o, int r, gh_error_t err, double t0)
{
        o->secs = now() - t0;
        o->r = r;
        o->code = r < 0 && err ? err->code : 0;
        snprintf(o->msg, sizeof(o->msg), "%s", r < 0 && err ? err->msg : "");
}

static void fetch(void (*server)(int, int), int arg, int timeout_ms, bool usage, struct gh_gpu_list *list,
                  struct outcome *o)
{
        _cleanup_error_ gh_error_t err = NULL;
        pid_t pid;
        int fd = start(server, arg, &pid);
        double t0 = now();

        int r = gh_rpc_fetch(fd, timeout_ms, usage, list, &err);

        record(o, r, err, t0);
        o->child_reaped = finish(fd, pid);
}

static void fetch_cuda(void (*server)(int, int), int arg, char *cuda, size_t size, struct outcome *o)
{
        _cleanup_error_ gh_error_t err = NULL;
        pid_t pid;
        int fd = start(server, arg, &pid);
        double t0 = now();

        cuda[0] = '\0';
        int r = gh_rpc_fetch_cuda(fd, 2000, cuda, size, &err);

        record(o, r, err, t0);
        o->child_reaped = finish(fd, pid);
}

/* One failing script: an error containing want, one line, and an empty list. */
static void expect_error(enum script which, int timeout_ms, bool usage, const char *want, int code, const char *what)
{
        struct gh_gpu_list list;
        struct outcome o;

        fetch(scripted, which, timeout_ms, usage, &list, &o);
        ok(o.r < 0 && strstr(o.msg, want) && !strchr(o.msg, '\n') && list.n == 0 && list.gpus == NULL &&
                   (code < 0 || o.code == code),
           "%s: %s", what, o.msg[0] ? o.msg : "(no error)");
        if (o.r < 0 && !strstr(o.msg, want))
                tap_diag("wanted '%s'", want);
        gh_gpu_list_free(&list);
}

static void test_client(void)
{
        struct gh_gpu_list list;
        struct outcome o;
        char cuda[16];

        fetch(scripted, GOOD, 2000, false, &list, &o);
        ok(o.r == 0 && list.n == 2 && list.from_nvml, "a good service: 2 GPUs from NVML");
        is_str(list.driver_version, VER, "driver version");
        is_str(list.cuda_version, "13.0", "CUDA version 13000 reads 13.0");
        ok(list.n == 2 && strcmp(list.gpus[1].uuid, "GPU-00000001-aaaa-bbbb-cccc-dddddddddddd") == 0 &&
                   list.gpus[1].minor == 1,
           "GPU 1's UUID and minor");
        ok(list.n == 2 && strcmp(list.gpus[0].busid, "0000:3b:00.0") == 0, "NVML's bus id 00000000:3B:00.0 normalised");
        ok(list.n == 2 && strcmp(list.gpus[0].brand, "Tesla") == 0 && strcmp(list.gpus[0].arch, "9.0") == 0 &&
                   strcmp(list.gpus[0].model, "NVIDIA H200") == 0,
           "brand, compute capability and model");
        ok(list.n == 2 && list.gpus[0].usage == NULL, "no usage unless asked");
        gh_gpu_list_free(&list);

        fetch(scripted, GOOD_USAGE, 2000, true, &list, &o);
        ok(o.r == 0 && list.n == 2 && list.gpus[1].usage && list.gpus[1].usage->gpu_util == 40 &&
                   list.gpus[1].usage->nprocs == 1 && list.gpus[1].usage->procs[0].pid == 4242,
           "with usage: utilisation and the process using the GPU");
        gh_gpu_list_free(&list);

        expect_error(DRIVER_ERROR, 2000, false, "NVML initialisation failed: Driver Not Loaded", 0,
                     "the service's own error is passed on as it is");
        expect_error(DRIVER_ERROR_CONTROL, 2000, false, "NVML failed", 0,
                     "an error text with control characters is not printed");
        expect_error(BAD_VERSION, 2000, false, "malformed driver description", 0,
                     "a driver version that is no version");
        expect_error(TOO_MANY_GPUS, 2000, false, "malformed driver description", 0,
                     "100000 GPUs is a broken service, not a machine");
        expect_error(NEGATIVE_CUDA, 2000, false, "malformed driver description", 0, "a negative CUDA version");
        expect_error(OVERSIZED, 2000, false, "asking NVML for the driver version", EPIPE,
                     "a 399-byte version (bound 80) is not decoded");
        expect_error(WRONG_XID, 2000, false, "asking NVML for the driver version", EPIPE,
                     "a reply to another call is refused");
        expect_error(PROC_UNAVAILABLE, 2000, false, "Procedure unavailable", EPIPE,
                     "a service without the call says so");
        expect_error(TRUNCATED, 2000, false, "asking NVML for the driver version", EPIPE, "a truncated reply");
        expect_error(HUGE_RECORD, 2000, false, "asking NVML for the driver version", EPIPE,
                     "a reply announcing a 2 GB record, then EOF");
        expect_error(DIES_AT_ONCE, 2000, false, "asking NVML for the driver version", EPIPE,
                     "a service that dies before answering");
        expect_error(DIES_ON_GPU_1, 2000, false, "asking NVML for GPU 1", EPIPE,
                     "a service that dies in the middle: the GPUs read so far are dropped");
        expect_error(GPU_CONTROL_UUID, 2000, false, "malformed data for GPU 0", 0, "a UUID with a newline");
        expect_error(GPU_MINOR_255, 2000, false, "malformed data for GPU 0", 0, "minor 255 (nvidiactl's)");
        expect_error(GPU_BAD_BUS, 2000, false, "bad bus id for GPU 0", 0, "a bus id that is no bus id");
        expect_error(GPU_BAD_CC, 2000, false, "malformed data for GPU 0", 0, "compute capability 1000.0");
        expect_error(GPU_BAD_MIG, 2000, false, "malformed MIG device of GPU 0", 0,
                     "a MIG device with a control character");
        expect_error(GPU_ERROR, 2000, false, "GPU 0: nvmlDeviceGetUUID: GPU is lost", 0, "a GPU's NVML error");
        expect_error(USAGE_MALFORMED, 2000, true, "malformed usage figures for GPU 0", 0, "250 % utilisation");

        fetch(scripted, HANGS, 300, false, &list, &o);
        ok(o.r < 0 && o.code == ETIMEDOUT && strstr(o.msg, "did not answer the driver version within 300 ms"),
           "a service that hangs: %s", o.msg);
        ok(o.secs >= 0.25 && o.secs < 2.0, "the wait is the timeout (%.2f s for 300 ms)", o.secs);
        ok(o.child_reaped, "and the hung service is killed and reaped");
        gh_gpu_list_free(&list);
        fetch(scripted, HANGS_ON_GPU_1, 300, false, &list, &o);
        ok(o.r < 0 && o.code == ETIMEDOUT && strstr(o.msg, "GPU 1") && list.n == 0,
           "the timeout bounds every call, not the first only: %s", o.msg);
        gh_gpu_list_free(&list);

        fetch_cuda(scripted, CUDA_GOOD, cuda, sizeof(cuda), &o);
        ok(o.r == 0 && strcmp(cuda, "12.8") == 0, "the CUDA version from libcuda: 12080 reads 12.8");
        fetch_cuda(scripted, CUDA_ZERO, cuda, sizeof(cuda), &o);
        ok(o.r < 0 && strstr(o.msg, "malformed CUDA version"), "CUDA version 0 is refused: %s", o.msg);
        fetch_cuda(scripted, CUDA_ERROR, cuda, sizeof(cuda), &o);
        ok(o.r < 0 && strstr(o.msg, "CUDA error 100"), "libcuda's error is passed on: %s", o.msg);
        fetch_cuda(scripted, DIES_AT_ONCE, cuda, sizeof(cuda), &o);
        ok(o.r < 0 && o.code == EPIPE && strstr(o.msg, "the CUDA version"), "a libcuda service that dies: %s", o.msg);
}

/* ---- the server half, in a child ---- */

static char fake_root[PATH_MAX], fake_dir[PATH_MAX];

enum setup { SETUP_ERROR, SETUP_FAKE_NVML, SETUP_FAKE_CUDA, SETUP_NOTHING };

static void real_server(int fd, int how)
{
        char why[256] = "", lib[PATH_MAX + 64];

        switch ((enum setup) how) {
        case SETUP_ERROR:
                gh_rpc_set_setup_error("chroot into the driver root: Operation not permitted; run as root");
                break;
        case SETUP_FAKE_NVML:
                /* By path first: the service's dlopen by SONAME then finds this one loaded. */
                snprintf(lib, sizeof(lib), "%s/libnvidia-ml.so." VER, fake_dir);
                setenv("FAKE_NVML_ROOT", fake_root, 1);
                if (dlopen(lib, RTLD_NOW | RTLD_GLOBAL) == NULL)
                        snprintf(why, sizeof(why), "test: %s", dlerror());
                else
                        gh_rpc_nvml_load(why, sizeof(why));
                break;
        case SETUP_FAKE_CUDA:
                snprintf(lib, sizeof(lib), "%s/libcuda.so." VER, fake_dir);
                setenv("FAKE_NVML_ROOT", fake_root, 1);
                gh_rpc_cuda_load(lib, why, sizeof(why));
                break;
        case SETUP_NOTHING:
        default: break;
        }
        if (why[0] != '\0')
                gh_rpc_set_setup_error(why);
        gh_rpc_serve(fd);
}

static void test_server(void)
{
        struct gh_gpu_list list;
        struct outcome o;
        char cuda[16], why[256];

        fetch(real_server, SETUP_ERROR, 2000, false, &list, &o);
        ok(o.r < 0 && strcmp(o.msg, "chroot into the driver root: Operation not permitted; run as root") == 0,
           "a service that could not set itself up says why, through the protocol");
        ok(o.child_reaped, "and ends when we close our end");
        gh_gpu_list_free(&list);
        fetch_cuda(real_server, SETUP_NOTHING, cuda, sizeof(cuda), &o);
        ok(o.r < 0 && strstr(o.msg, "this service did not load libcuda"), "asking an NVML service for CUDA: %s", o.msg);

        ok(gh_rpc_cuda_load("/nonexistent/libcuda.so.1", why, sizeof(why)) < 0 &&
                   strstr(why, "cannot load /nonexistent/libcuda.so.1"),
           "a libcuda that is not there: %s", why);

        /* Garbage instead of a call: the server stops, it does not crash or spin. */
        {
                pid_t pid;
                int fd = start(real_server, SETUP_NOTHING, &pid), st = 0;
                ok(write(fd, "\x80\x00\x00\x04junk", 8) == 8, "garbage sent to a server");
                shutdown(fd, SHUT_WR);
                bool ended = false;
                for (int i = 0; i < 200 && !ended; i++) {
                        ended = waitpid(pid, &st, WNOHANG) == pid;
                        if (!ended)
                                nanosleep(&(struct timespec) { .tv_nsec = 10 * 1000 * 1000 }, NULL);
                }
                ok(ended && WIFEXITED(st) && WEXITSTATUS(st) == 0, "it ends cleanly");
                if (!ended)
                        finish(fd, pid);
                else
                        close(fd);
        }

        if (!getenv("FAKE_DRIVER_MAKE_ROOT") || !getenv("FAKE_DRIVER_DIR"))
                return tap_diag(
                        "FAKE_DRIVER_MAKE_ROOT/FAKE_DRIVER_DIR not set (run under meson test): fake NVML skipped");
        snprintf(fake_dir, sizeof(fake_dir), "%s", getenv("FAKE_DRIVER_DIR"));
        snprintf(fake_root, sizeof(fake_root), "/tmp/test-rpc.XXXXXX");
        if (mkdtemp(fake_root) == NULL)
                abort();
        strcat(fake_root, "/root");
        /* Without root make-root.sh makes no device nodes; the fake NVML only needs them to exist. */
        if (!ok(sh("'%s' '%s' >/dev/null 2>&1 && cd '%s/dev' && for n in nvidiactl nvidia0 nvidia1; do "
                   "[ -e $n ] || touch $n; done",
                   getenv("FAKE_DRIVER_MAKE_ROOT"), fake_root, fake_root) == 0,
                "a fake driver root"))
                return;
        fetch(real_server, SETUP_FAKE_NVML, 5000, true, &list, &o);
        ok(o.r == 0 && list.n == 2 && list.from_nvml, "the fake NVML served: 2 GPUs: %s", o.msg);
        ok(o.r == 0 && strcmp(list.driver_version, VER) == 0 && strcmp(list.cuda_version, "13.0") == 0,
           "driver " VER ", CUDA 13.0");
        ok(o.r == 0 && list.n == 2 && strcmp(list.gpus[1].uuid, "GPU-af0f763e-f7c4-6ced-14b4-3f65d4c848a7") == 0 &&
                   list.gpus[1].minor == 1 && strcmp(list.gpus[1].busid, "0000:00:07.0") == 0,
           "GPU 1 as the driver's proc files describe it");
        ok(o.r == 0 && list.n == 2 && list.gpus[0].usage && list.gpus[0].usage->mem_total > 0,
           "with its memory figures (usage)");
        gh_gpu_list_free(&list);
        fetch_cuda(real_server, SETUP_FAKE_CUDA, cuda, sizeof(cuda), &o);
        ok(o.r == 0 && strcmp(cuda, "13.0") == 0, "the fake libcuda served CUDA 13.0: %s", o.msg);

        sh("echo error > '%s/etc/fake-nvml-mode'", fake_root);
        fetch(real_server, SETUP_FAKE_NVML, 5000, false, &list, &o);
        ok(o.r < 0 && strstr(o.msg, "NVML initialisation failed: Driver Not Loaded"),
           "NVML failing to initialise reaches the client: %s", o.msg);
        gh_gpu_list_free(&list);
        sh("echo crash > '%s/etc/fake-nvml-mode'", fake_root);
        fetch(real_server, SETUP_FAKE_NVML, 5000, false, &list, &o);
        ok(o.r < 0 && o.code == EPIPE && o.secs < 2.0, "NVML crashing the service is an error at once: %s", o.msg);
        gh_gpu_list_free(&list);
        sh("rm -rf \"$(dirname '%s')\"", fake_root);
}

int main(void)
{
        is_str(gh_nvml_brand_name(2), "Tesla", "brand 2 is Tesla");
        is_str(gh_nvml_brand_name(14), "Nvidia", "brand 14 is Nvidia");
        is_str(gh_nvml_brand_name(99), "Unknown", "an unknown brand is Unknown");
        is_str(gh_nvml_brand_name(-1), "Unknown", "so is a negative one");
        /* A service that is gone must give us EPIPE, not kill us (service.c does the same). */
        signal(SIGPIPE, SIG_IGN);
        test_client();
        test_server();
        ok(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD, "no child is left");
        return tap_done();
}
