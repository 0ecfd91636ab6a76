/* The server half of the driver service protocol (rpc.h): runs only in the sandboxed child
 * (service.c), loads libnvidia-ml (or libcuda) and answers calls.  The client half is rpc-client.c. */
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

/* ---- NVML, as far as the service needs it (documented names, values and layouts) ---- */

typedef int nvml_return;
typedef struct nvml_device *nvml_device;

enum { NVML_OK = 0, NVML_NOT_SUPPORTED = 3, NVML_NOT_FOUND = 6 };
#define NVML_STR_MAX 96

struct nvml_pci_info {
        char bus_id_legacy[16];
        unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
        char bus_id[32];
};

static struct {
        nvml_return (*init)(void);
        const char *(*error_string)(nvml_return);
        nvml_return (*driver_version)(char *, unsigned int);
        nvml_return (*cuda_version)(int *);
        nvml_return (*count)(unsigned int *);
        nvml_return (*handle_by_index)(unsigned int, nvml_device *);
        nvml_return (*uuid)(nvml_device, char *, unsigned int);
        nvml_return (*name)(nvml_device, char *, unsigned int);
        nvml_return (*brand)(nvml_device, int *);
        nvml_return (*minor)(nvml_device, unsigned int *);
        nvml_return (*pci_info)(nvml_device, struct nvml_pci_info *);
        nvml_return (*compute_capability)(nvml_device, int *, int *);
        nvml_return (*mig_mode)(nvml_device, unsigned int *, unsigned int *);
        nvml_return (*max_mig_count)(nvml_device, unsigned int *);
        nvml_return (*mig_handle)(nvml_device, unsigned int, nvml_device *);
        nvml_return (*gi_id)(nvml_device, unsigned int *);
        nvml_return (*ci_id)(nvml_device, unsigned int *);
} nvml;

static char setup_error[256];

static const struct {
        const char *name;
        size_t offset;
        bool optional; /* MIG entry points are missing from drivers older than R450 */
} nvml_symbols[] = {
#define SYM(field, sym, opt)                                                                                           \
        {                                                                                                              \
                sym, offsetof(__typeof__(nvml), field), opt                                                            \
        }
        SYM(init, "nvmlInit_v2", false),
        SYM(error_string, "nvmlErrorString", false),
        SYM(driver_version, "nvmlSystemGetDriverVersion", false),
        SYM(cuda_version, "nvmlSystemGetCudaDriverVersion_v2", false),
        SYM(count, "nvmlDeviceGetCount_v2", false),
        SYM(handle_by_index, "nvmlDeviceGetHandleByIndex_v2", false),
        SYM(uuid, "nvmlDeviceGetUUID", false),
        SYM(name, "nvmlDeviceGetName", false),
        SYM(brand, "nvmlDeviceGetBrand", false),
        SYM(minor, "nvmlDeviceGetMinorNumber", false),
        SYM(pci_info, "nvmlDeviceGetPciInfo_v3", false),
        SYM(compute_capability, "nvmlDeviceGetCudaComputeCapability", false),
        SYM(mig_mode, "nvmlDeviceGetMigMode", true),
        SYM(max_mig_count, "nvmlDeviceGetMaxMigDeviceCount", true),
        SYM(mig_handle, "nvmlDeviceGetMigDeviceHandleByIndex", true),
        SYM(gi_id, "nvmlDeviceGetGpuInstanceId", true),
        SYM(ci_id, "nvmlDeviceGetComputeInstanceId", true),
#undef SYM
};

const char *gh_nvml_brand_name(int brand)
{
        /* NVML's nvmlBrandType_t values; one word each so that brand=NAME requirements can name them. */
        static const char *const names[] = {
                [0] = "Unknown",    [1] = "Quadro",     [2] = "Tesla",      [3] = "NVS",
                [4] = "GRID",       [5] = "GeForce",    [6] = "TITAN",      [7] = "NvidiaVApps",
                [8] = "NvidiaVPC",  [9] = "NvidiaVCS",  [10] = "NvidiaVWS", [11] = "NvidiaCloudGaming",
                [12] = "QuadroRTX", [13] = "NvidiaRTX", [14] = "Nvidia",    [15] = "GeForceRTX",
                [16] = "TitanRTX",
        };
        if (brand < 0 || (size_t) brand >= GH_ARRAY_SIZE(names) || names[brand] == NULL)
                return "Unknown";
        return names[brand];
}

int gh_rpc_nvml_load(char *errbuf, size_t size)
{
        void *lib;
        nvml_return r;

        /* By SONAME: inside the chroot the driver root's own ld.so.cache finds it. */
        lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        if (lib == NULL) {
                snprintf(errbuf, size, "cannot load libnvidia-ml.so.1 from the driver root: %s", dlerror());
                return -1;
        }
        for (size_t i = 0; i < GH_ARRAY_SIZE(nvml_symbols); i++) {
                void *sym = dlsym(lib, nvml_symbols[i].name);
                if (sym == NULL && !nvml_symbols[i].optional) {
                        snprintf(errbuf, size, "libnvidia-ml.so.1 has no %s; the driver is too old",
                                 nvml_symbols[i].name);
                        return -1;
                }
                memcpy((char *) &nvml + nvml_symbols[i].offset, &sym, sizeof(sym));
        }
        r = nvml.init();
        if (r != NVML_OK) {
                snprintf(errbuf, size, "NVML initialisation failed: %s", nvml.error_string(r));
                return -1;
        }
        gh_usage_bind(lib);
        return 0;
}

static int (*cu_driver_get_version)(int *);

int gh_rpc_cuda_load(const char *path, char *errbuf, size_t size)
{
        void *lib = dlopen(path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

        if (lib == NULL) {
                snprintf(errbuf, size, "cannot load %s from the driver root: %s", path ? path : "libcuda.so.1",
                         dlerror());
                return -1;
        }
        *(void **) &cu_driver_get_version = dlsym(lib, "cuDriverGetVersion");
        if (cu_driver_get_version == NULL) {
                snprintf(errbuf, size, "libcuda.so.1 has no cuDriverGetVersion");
                return -1;
        }
        return 0;
}

bool_t gh_rpc_cuda_1_svc(void *arg, gh_rpc_cuda_res *res, struct svc_req *req)
{
        int v = 0, r;

        memset(res, 0, sizeof(*res));
        res->status = 1;
        if (setup_error[0] != '\0') {
                res->gh_rpc_cuda_res_u.error = strdup(setup_error);
                return TRUE;
        }
        if (cu_driver_get_version == NULL) {
                res->gh_rpc_cuda_res_u.error = strdup("this service did not load libcuda");
                return TRUE;
        }
        if ((r = cu_driver_get_version(&v)) != 0) {
                if (asprintf(&res->gh_rpc_cuda_res_u.error, "cuDriverGetVersion failed: CUDA error %d", r) < 0)
                        res->gh_rpc_cuda_res_u.error = NULL;
                return TRUE;
        }
        res->status = 0;
        res->gh_rpc_cuda_res_u.cuda_version = v;
        return TRUE;
}

void gh_rpc_set_setup_error(const char *msg) { snprintf(setup_error, sizeof(setup_error), "%s", msg); }

static char *nvml_error(const char *what, nvml_return r)
{
        char *s = NULL;
        const char *why = nvml.error_string ? nvml.error_string(r) : NULL;
        if (asprintf(&s, "%s: %s", what, why ? why : "unknown NVML error") < 0)
                return NULL;
        return s;
}

bool_t gh_rpc_driver_1_svc(void *arg, gh_rpc_driver_res *res, struct svc_req *req)
{
        gh_rpc_driver *d = &res->gh_rpc_driver_res_u.driver;
        char version[81] = "";
        nvml_return r;

        memset(res, 0, sizeof(*res));
        res->status = 1;
        if (setup_error[0] != '\0') {
                res->gh_rpc_driver_res_u.error = strdup(setup_error);
                return TRUE;
        }
        if ((r = nvml.driver_version(version, sizeof(version) - 1)) != NVML_OK) {
                res->gh_rpc_driver_res_u.error = nvml_error("nvmlSystemGetDriverVersion", r);
                return TRUE;
        }
        if ((r = nvml.cuda_version(&d->cuda_version)) != NVML_OK) {
                res->gh_rpc_driver_res_u.error = nvml_error("nvmlSystemGetCudaDriverVersion", r);
                return TRUE;
        }
        if ((r = nvml.count(&d->count)) != NVML_OK) {
                res->gh_rpc_driver_res_u.error = nvml_error("nvmlDeviceGetCount", r);
                return TRUE;
        }
        d->driver_version = strdup(version);
        res->status = 0;
        return TRUE;
}

static char *bounded_dup(const char *s, size_t max) { return strndup(s, max); }

/* Fills the MIG part of one GPU; a GPU or driver without MIG support simply has none. */
static const char *fill_migs(nvml_device dev, gh_rpc_gpu *g, nvml_return *rr)
{
        unsigned int current = 0, pending = 0, max = 0;

        if (nvml.mig_mode == NULL || nvml.mig_mode(dev, &current, &pending) != NVML_OK || current != 1)
                return NULL;
        g->mig_enabled = TRUE;
        if (nvml.max_mig_count == NULL || nvml.mig_handle == NULL || nvml.gi_id == NULL || nvml.ci_id == NULL)
                return NULL;
        if ((*rr = nvml.max_mig_count(dev, &max)) != NVML_OK)
                return "nvmlDeviceGetMaxMigDeviceCount";
        if (max > 64)
                max = 64;
        g->migs.migs_val = calloc(max + 1, sizeof(*g->migs.migs_val));
        if (g->migs.migs_val == NULL)
                return "out of memory";
        for (unsigned int i = 0; i < max; i++) {
                gh_rpc_mig *m = &g->migs.migs_val[g->migs.migs_len];
                char uuid[NVML_STR_MAX + 1] = "";
                nvml_device mdev;

                *rr = nvml.mig_handle(dev, i, &mdev);
                if (*rr == NVML_NOT_FOUND || *rr == NVML_NOT_SUPPORTED)
                        continue;
                if (*rr != NVML_OK)
                        return "nvmlDeviceGetMigDeviceHandleByIndex";
                if ((*rr = nvml.gi_id(mdev, &m->gi)) != NVML_OK)
                        return "nvmlDeviceGetGpuInstanceId";
                if ((*rr = nvml.ci_id(mdev, &m->ci)) != NVML_OK)
                        return "nvmlDeviceGetComputeInstanceId";
                if ((*rr = nvml.uuid(mdev, uuid, NVML_STR_MAX)) != NVML_OK)
                        return "nvmlDeviceGetUUID (MIG)";
                m->index = i;
                m->uuid = bounded_dup(uuid, NVML_STR_MAX - 1);
                g->migs.migs_len++;
        }
        return NULL;
}

bool_t gh_rpc_gpu_1_svc(u_int *index, gh_rpc_gpu_res *res, struct svc_req *req)
{
        gh_rpc_gpu *g = &res->gh_rpc_gpu_res_u.gpu;
        char uuid[NVML_STR_MAX + 1] = "", name[NVML_STR_MAX + 1] = "";
        struct nvml_pci_info pci;
        const char *failed = NULL;
        nvml_device dev;
        nvml_return r = NVML_OK;

        memset(res, 0, sizeof(*res));
        memset(&pci, 0, sizeof(pci));
        if (setup_error[0] != '\0') {
                res->status = 1;
                res->gh_rpc_gpu_res_u.error = strdup(setup_error);
                return TRUE;
        }
        if ((r = nvml.handle_by_index(*index, &dev)) != NVML_OK)
                failed = "nvmlDeviceGetHandleByIndex";
        else if ((r = nvml.minor(dev, &g->minor)) != NVML_OK)
                failed = "nvmlDeviceGetMinorNumber";
        else if ((r = nvml.uuid(dev, uuid, NVML_STR_MAX)) != NVML_OK)
                failed = "nvmlDeviceGetUUID";
        else if ((r = nvml.name(dev, name, NVML_STR_MAX)) != NVML_OK)
                failed = "nvmlDeviceGetName";
        else if ((r = nvml.brand(dev, &g->brand)) != NVML_OK)
                failed = "nvmlDeviceGetBrand";
        else if ((r = nvml.pci_info(dev, &pci)) != NVML_OK)
                failed = "nvmlDeviceGetPciInfo";
        else if ((r = nvml.compute_capability(dev, &g->cc_major, &g->cc_minor)) != NVML_OK)
                failed = "nvmlDeviceGetCudaComputeCapability";
        else
                failed = fill_migs(dev, g, &r);
        pci.bus_id[sizeof(pci.bus_id) - 1] = '\0';
        g->uuid = bounded_dup(uuid, NVML_STR_MAX - 1);
        g->model = bounded_dup(name, NVML_STR_MAX - 1);
        g->busid = bounded_dup(pci.bus_id, 31);
        if (failed != NULL || g->uuid == NULL || g->model == NULL || g->busid == NULL) {
                char what[64];
                snprintf(what, sizeof(what), "GPU %u: %s", *index, failed ? failed : "out of memory");
                xdr_free((xdrproc_t) xdr_gh_rpc_gpu, (char *) g);
                memset(res, 0, sizeof(*res));
                res->status = 1;
                res->gh_rpc_gpu_res_u.error = nvml_error(what, r);
                return TRUE;
        }
        res->status = 0;
        return TRUE;
}

bool_t gh_rpc_usage_1_svc(u_int *index, gh_rpc_usage_res *res, struct svc_req *req)
{
        if (setup_error[0] != '\0') {
                memset(res, 0, sizeof(*res));
                res->status = 1;
                res->gh_rpc_usage_res_u.error = strdup(setup_error);
                return TRUE;
        }
        gh_usage_serve(*index, res);
        return TRUE;
}

/* The server loop is written here rather than with libtirpc's svc_* layer: that layer drags in
 * RPCSEC_GSS (svc_auth_gss), and so the whole Kerberos stack, into every gpu-cli start, for a
 * protocol with two calls over a private socketpair.  Records and messages are still ONC RPC,
 * encoded by libtirpc's xdrrec and xdr_callmsg/xdr_replymsg, so the client is plain clnt_vc. */
static int rec_read(void *handle, void *buf, int len)
{
        int fd = *(int *) handle;
        ssize_t n;

        do
                n = read(fd, buf, (size_t) len);
        while (n < 0 && errno == EINTR);
        return n <= 0 ? -1 : (int) n;
}

static int rec_write(void *handle, void *buf, int len)
{
        return gh_write_all(*(int *) handle, buf, (size_t) len) < 0 ? -1 : len;
}

void gh_rpc_serve(int fd)
{
        XDR x;
        int sock = fd;

        xdrrec_create(&x, 0, 0, (char *) &sock, rec_read, rec_write);
        for (;;) {
                char cred[2 * MAX_AUTH_BYTES];
                struct rpc_msg call, reply;
                gh_rpc_driver_res dres;
                gh_rpc_gpu_res gres;
                gh_rpc_cuda_res cres;
                gh_rpc_usage_res ures;
                xdrproc_t result_proc = (xdrproc_t) (void (*)(void)) xdr_void;
                void *result = NULL;
                u_int index;

                memset(&call, 0, sizeof(call));
                call.rm_call.cb_cred.oa_base = cred;
                call.rm_call.cb_verf.oa_base = cred + MAX_AUTH_BYTES;
                x.x_op = XDR_DECODE;
                if (!xdrrec_skiprecord(&x) || !xdr_callmsg(&x, &call) || call.rm_direction != CALL)
                        break; /* EOF (the parent is done) or garbage: either way, stop */

                memset(&reply, 0, sizeof(reply));
                reply.rm_xid = call.rm_xid;
                reply.rm_direction = REPLY;
                reply.rm_reply.rp_stat = MSG_ACCEPTED;
                reply.acpted_rply.ar_verf = _null_auth;
                reply.acpted_rply.ar_stat = SUCCESS;
                if (call.rm_call.cb_prog != GH_NVML_PROG) {
                        reply.acpted_rply.ar_stat = PROG_UNAVAIL;
                } else if (call.rm_call.cb_vers != GH_NVML_VERS) {
                        reply.acpted_rply.ar_stat = PROG_MISMATCH;
                        reply.acpted_rply.ar_vers.low = GH_NVML_VERS;
                        reply.acpted_rply.ar_vers.high = GH_NVML_VERS;
                } else {
                        switch (call.rm_call.cb_proc) {
                        case NULLPROC: break;
                        case GH_RPC_DRIVER:
                                memset(&dres, 0, sizeof(dres));
                                gh_rpc_driver_1_svc(NULL, &dres, NULL);
                                result_proc = (xdrproc_t) xdr_gh_rpc_driver_res;
                                result = &dres;
                                break;
                        case GH_RPC_GPU:
                                if (!xdr_u_int(&x, &index)) {
                                        reply.acpted_rply.ar_stat = GARBAGE_ARGS;
                                        break;
                                }
                                memset(&gres, 0, sizeof(gres));
                                gh_rpc_gpu_1_svc(&index, &gres, NULL);
                                result_proc = (xdrproc_t) xdr_gh_rpc_gpu_res;
                                result = &gres;
                                break;
                        case GH_RPC_CUDA:
                                gh_rpc_cuda_1_svc(NULL, &cres, NULL);
                                result_proc = (xdrproc_t) xdr_gh_rpc_cuda_res;
                                result = &cres;
                                break;
                        case GH_RPC_USAGE:
                                if (!xdr_u_int(&x, &index)) {
                                        reply.acpted_rply.ar_stat = GARBAGE_ARGS;
                                        break;
                                }
                                gh_rpc_usage_1_svc(&index, &ures, NULL);
                                result_proc = (xdrproc_t) xdr_gh_rpc_usage_res;
                                result = &ures;
                                break;
                        default: reply.acpted_rply.ar_stat = PROC_UNAVAIL;
                        }
                }
                reply.acpted_rply.ar_results.where = (caddr_t) result;
                reply.acpted_rply.ar_results.proc = result_proc;
                x.x_op = XDR_ENCODE;
                bool ok = xdr_replymsg(&x, &reply) && xdrrec_endofrecord(&x, TRUE);
                if (result != NULL)
                        xdr_free(result_proc, (char *) result);
                if (!ok)
                        break;
        }
        xdr_destroy(&x);
}
