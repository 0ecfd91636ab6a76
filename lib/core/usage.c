/* GPU usage through the driver service: the NVML queries (server half, sandboxed child only), the
 * checks on what comes back (client half), and attributing each process to its container. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rpc/rpc.h>

#include "cleanup.h"
#include "gpus.h"
#include "log.h"
#include "usage.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include "nvml.h"
#pragma GCC diagnostic pop

/* ---- server: NVML's documented entry points and layouts; each one may be missing ---- */

typedef int nvml_return;
typedef struct nvml_device *nvml_device;
enum { NVML_OK = 0, NVML_INSUFFICIENT_SIZE = 7 };
#define NVML_VALUE_NOT_AVAILABLE (~0ULL)

struct nvml_utilization {
        unsigned int gpu, memory;
};
struct nvml_memory {
        unsigned long long total, free, used;
};
struct nvml_process_info {
        unsigned int pid;
        unsigned long long used_memory;
        unsigned int gi, ci;
};
struct nvml_process_sample {
        unsigned int pid;
        unsigned long long timestamp;
        unsigned int sm, mem, enc, dec;
};

static struct {
        nvml_return (*handle_by_index)(unsigned int, nvml_device *);
        nvml_return (*utilization)(nvml_device, struct nvml_utilization *);
        nvml_return (*memory)(nvml_device, struct nvml_memory *);
        nvml_return (*temperature)(nvml_device, int, unsigned int *);
        nvml_return (*power)(nvml_device, unsigned int *);
        nvml_return (*compute_mode)(nvml_device, int *);
        nvml_return (*clock)(nvml_device, int, unsigned int *);
        nvml_return (*compute_procs)(nvml_device, unsigned int *, struct nvml_process_info *);
        nvml_return (*graphics_procs)(nvml_device, unsigned int *, struct nvml_process_info *);
        nvml_return (*process_util)(nvml_device, struct nvml_process_sample *, unsigned int *, unsigned long long);
} nv;

void gh_usage_bind(void *lib)
{
        static const struct {
                const char *name;
                size_t offset;
        } syms[] = {
#define SYM(field, name) { name, offsetof(__typeof__(nv), field) }
                SYM(handle_by_index, "nvmlDeviceGetHandleByIndex_v2"),
                SYM(utilization, "nvmlDeviceGetUtilizationRates"),
                SYM(memory, "nvmlDeviceGetMemoryInfo"),
                SYM(temperature, "nvmlDeviceGetTemperature"),
                SYM(power, "nvmlDeviceGetPowerUsage"),
                SYM(compute_mode, "nvmlDeviceGetComputeMode"),
                SYM(clock, "nvmlDeviceGetClockInfo"),
                SYM(compute_procs, "nvmlDeviceGetComputeRunningProcesses_v3"),
                SYM(graphics_procs, "nvmlDeviceGetGraphicsRunningProcesses_v3"),
                SYM(process_util, "nvmlDeviceGetProcessUtilization"),
#undef SYM
        };
        for (size_t i = 0; i < GH_ARRAY_SIZE(syms); i++) {
                void *sym = dlsym(lib, syms[i].name);
                memcpy((char *) &nv + syms[i].offset, &sym, sizeof(sym));
        }
}

/* One of NVML's "how many?" lists: grows the buffer while NVML says it is too small. */
static struct nvml_process_info *list_procs(nvml_return (*fn)(nvml_device, unsigned int *, struct nvml_process_info *),
                                            nvml_device dev, unsigned int *n)
{
        unsigned int cap = 64;

        *n = 0;
        if (fn == NULL)
                return NULL;
        for (int tries = 0; tries < 4; tries++) {
                struct nvml_process_info *buf = calloc(cap, sizeof(*buf));
                unsigned int count = cap;
                nvml_return r;

                if (buf == NULL)
                        return NULL;
                r = fn(dev, &count, buf);
                if (r == NVML_OK) {
                        *n = count < cap ? count : cap;
                        return buf;
                }
                free(buf);
                if (r != NVML_INSUFFICIENT_SIZE || count > GH_MAX_GPU_PROCS)
                        return NULL;
                cap = count + 16; /* processes may start between the two calls */
        }
        return NULL;
}

static gh_rpc_proc *proc_slot(gh_rpc_usage *u, unsigned int pid)
{
        for (u_int i = 0; i < u->procs.procs_len; i++)
                if (u->procs.procs_val[i].pid == pid)
                        return &u->procs.procs_val[i];
        if (u->procs.procs_len >= GH_MAX_GPU_PROCS)
                return NULL;
        gh_rpc_proc *p = &u->procs.procs_val[u->procs.procs_len++];
        *p = (gh_rpc_proc) { .pid = pid, .used_memory = NVML_VALUE_NOT_AVAILABLE, .sm_util = -1, .mem_util = -1 };
        return p;
}

static void add_procs(gh_rpc_usage *u, const struct nvml_process_info *list, unsigned int n, bool graphics)
{
        for (unsigned int i = 0; i < n; i++) {
                gh_rpc_proc *p = proc_slot(u, list[i].pid);
                if (p == NULL)
                        return;
                if (graphics)
                        p->graphics = TRUE;
                else
                        p->compute = TRUE;
                if (list[i].used_memory != NVML_VALUE_NOT_AVAILABLE)
                        p->used_memory =
                                (p->used_memory == NVML_VALUE_NOT_AVAILABLE ? 0 : p->used_memory) + list[i].used_memory;
        }
}

/* Per-process samples: the newest one of each process that is in the list. */
static void add_samples(gh_rpc_usage *u, nvml_device dev)
{
        struct nvml_process_sample *s;
        unsigned int n = 0;
        nvml_return r;

        if (nv.process_util == NULL || u->procs.procs_len == 0)
                return;
        r = nv.process_util(dev, NULL, &n, 0);
        if ((r != NVML_OK && r != NVML_INSUFFICIENT_SIZE) || n == 0 || n > 4 * GH_MAX_GPU_PROCS)
                return;
        s = calloc(n, sizeof(*s));
        if (s == NULL || nv.process_util(dev, s, &n, 0) != NVML_OK) {
                free(s);
                return;
        }
        for (u_int i = 0; i < u->procs.procs_len; i++) {
                gh_rpc_proc *p = &u->procs.procs_val[i];
                unsigned long long newest = 0;
                for (unsigned int k = 0; k < n; k++) {
                        if (s[k].pid != p->pid || s[k].timestamp < newest)
                                continue;
                        newest = s[k].timestamp;
                        p->sm_util = s[k].sm <= 100 ? (int) s[k].sm : -1;
                        p->mem_util = s[k].mem <= 100 ? (int) s[k].mem : -1;
                }
        }
        free(s);
}

void gh_usage_serve(unsigned index, gh_rpc_usage_res *res)
{
        gh_rpc_usage *u = &res->gh_rpc_usage_res_u.usage;
        struct nvml_utilization util;
        struct nvml_memory mem;
        unsigned int v, nc = 0, ng = 0;
        nvml_device dev;

        memset(res, 0, sizeof(*res));
        *u = (gh_rpc_usage) { .gpu_util = -1,
                              .mem_util = -1,
                              .mem_used = NVML_VALUE_NOT_AVAILABLE,
                              .mem_total = NVML_VALUE_NOT_AVAILABLE,
                              .mem_free = NVML_VALUE_NOT_AVAILABLE,
                              .temperature = -1,
                              .power_mw = -1,
                              .compute_mode = -1,
                              .sm_clock_mhz = -1,
                              .mem_clock_mhz = -1 };
        if (nv.handle_by_index == NULL || nv.handle_by_index(index, &dev) != NVML_OK) {
                res->status = 1;
                res->gh_rpc_usage_res_u.error = strdup("nvmlDeviceGetHandleByIndex failed");
                return;
        }
        if (nv.utilization && nv.utilization(dev, &util) == NVML_OK && util.gpu <= 100 && util.memory <= 100) {
                u->gpu_util = (int) util.gpu;
                u->mem_util = (int) util.memory;
        }
        if (nv.memory && nv.memory(dev, &mem) == NVML_OK) {
                u->mem_used = mem.used;
                u->mem_total = mem.total;
                u->mem_free = mem.free;
        }
        if (nv.temperature && nv.temperature(dev, 0 /* NVML_TEMPERATURE_GPU */, &v) == NVML_OK && v < 1000)
                u->temperature = (int) v;
        if (nv.power && nv.power(dev, &v) == NVML_OK && v < 100000000)
                u->power_mw = (int) v;
        /* NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2; no clock runs at 100 GHz */
        if (nv.clock && nv.clock(dev, 1, &v) == NVML_OK && v < 100000)
                u->sm_clock_mhz = (int) v;
        if (nv.clock && nv.clock(dev, 2, &v) == NVML_OK && v < 100000)
                u->mem_clock_mhz = (int) v;
        int mode;
        if (nv.compute_mode && nv.compute_mode(dev, &mode) == NVML_OK && mode >= 0 &&
            mode <= GH_COMPUTE_MODE_EXCLUSIVE_PROCESS)
                u->compute_mode = mode;

        _cleanup_free_ struct nvml_process_info *compute = list_procs(nv.compute_procs, dev, &nc);
        _cleanup_free_ struct nvml_process_info *graphics = list_procs(nv.graphics_procs, dev, &ng);
        u->procs.procs_val = calloc((size_t) nc + ng + 1, sizeof(*u->procs.procs_val));
        if (u->procs.procs_val != NULL) {
                add_procs(u, compute, nc, false);
                add_procs(u, graphics, ng, true);
                add_samples(u, dev);
        }
}

/* ---- client ---- */

const char *gh_owner_kind_name(enum gh_owner_kind kind)
{
        switch (kind) {
        case GH_OWNER_HOST: return "host";
        case GH_OWNER_CONTAINER: return "container";
        case GH_OWNER_CONTAINER_GONE: return "container-gone";
        case GH_OWNER_MPS_SERVER: return "mps-server";
        case GH_OWNER_MPS_STOPPED: return "mps-stopped";
        default: return "unknown";
        }
}

bool gh_owner_unowned(enum gh_owner_kind kind)
{
        return kind == GH_OWNER_HOST || kind == GH_OWNER_CONTAINER_GONE || kind == GH_OWNER_MPS_STOPPED;
}

const char *gh_compute_mode_name(int mode)
{
        static const char *const names[] = { "Default", "Exclusive_Thread", "Prohibited", "Exclusive_Process" };
        return mode >= 0 && mode <= GH_COMPUTE_MODE_EXCLUSIVE_PROCESS ? names[mode] : "-";
}

void gh_gpu_usage_free(struct gh_gpu_usage *u)
{
        if (u == NULL)
                return;
        free(u->procs);
        free(u);
}

static bool percent_ok(int v) { return v >= -1 && v <= 100; }

int gh_usage_convert(const gh_rpc_usage *r, unsigned index, struct gh_gpu_usage **out, gh_error_t *err)
{
        struct gh_gpu_usage *u;

        *out = NULL;
        if (!percent_ok(r->gpu_util) || !percent_ok(r->mem_util) || r->temperature < -1 || r->power_mw < -1 ||
            r->compute_mode < -1 || r->compute_mode > GH_COMPUTE_MODE_EXCLUSIVE_PROCESS || r->sm_clock_mhz < -1 ||
            r->mem_clock_mhz < -1 ||
            (r->mem_total != GH_UNKNOWN_U64 && r->mem_free != GH_UNKNOWN_U64 && r->mem_free > r->mem_total) ||
            r->procs.procs_len > GH_MAX_GPU_PROCS ||
            (r->mem_total != GH_UNKNOWN_U64 && r->mem_used != GH_UNKNOWN_U64 && r->mem_used > r->mem_total))
                return gh_err(err, 0, "NVML returned malformed usage figures for GPU %u", index);
        u = calloc(1, sizeof(*u));
        if (u == NULL ||
            (r->procs.procs_len > 0 && (u->procs = calloc(r->procs.procs_len, sizeof(*u->procs))) == NULL)) {
                free(u);
                return gh_err(err, ENOMEM, "reading the usage of GPU %u", index);
        }
        *u = (struct gh_gpu_usage) { .gpu_util = r->gpu_util,
                                     .mem_util = r->mem_util,
                                     .mem_used = r->mem_used,
                                     .mem_total = r->mem_total,
                                     .mem_free = r->mem_free,
                                     .temperature_c = r->temperature,
                                     .power_mw = r->power_mw,
                                     .compute_mode = r->compute_mode,
                                     .sm_clock_mhz = r->sm_clock_mhz,
                                     .mem_clock_mhz = r->mem_clock_mhz,
                                     .procs = u->procs };
        for (u_int i = 0; i < r->procs.procs_len; i++) {
                const gh_rpc_proc *p = &r->procs.procs_val[i];
                if (p->pid == 0 || p->pid > (1u << 22) || !percent_ok(p->sm_util) || !percent_ok(p->mem_util)) {
                        gh_gpu_usage_free(u);
                        return gh_err(err, 0, "NVML returned a malformed process entry for GPU %u", index);
                }
                u->procs[u->nprocs++] = (struct gh_gpu_proc) {
                        .pid = (pid_t) p->pid,
                        .compute = p->compute,
                        .graphics = p->graphics,
                        .used_memory = p->used_memory,
                        .sm_util = p->sm_util,
                        .mem_util = p->mem_util,
                        .owner = { .ns_pid = (pid_t) p->pid },
                };
        }
        *out = u;
        return 0;
}
