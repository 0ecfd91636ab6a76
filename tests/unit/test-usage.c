/* lib/core/usage.c, the client half: what the NVML child says a GPU is doing is checked before
 * ps, top and metrics print it (the child runs vendor code); compute mode names as nvidia-smi's. */
#include <stdlib.h>
#include <string.h>

#include <rpc/rpc.h>

#include "cleanup.h"
#include "usage.h"
#include "tests/tap.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include "nvml.h"
#pragma GCC diagnostic pop

static gh_rpc_proc procs[2];

static gh_rpc_usage good(void)
{
        procs[0] = (gh_rpc_proc) { .pid = 4242, .used_memory = 1 << 30, .compute = TRUE, .sm_util = 30, .mem_util = 5 };
        procs[1] = (gh_rpc_proc) {
                .pid = 77, .used_memory = GH_UNKNOWN_U64, .graphics = TRUE, .sm_util = -1, .mem_util = -1
        };
        return (gh_rpc_usage) { .gpu_util = 40,
                                .mem_util = 10,
                                .mem_used = 2ULL << 30,
                                .mem_total = 141ULL << 30,
                                .temperature = 35,
                                .power_mw = 90000,
                                .compute_mode = 3,
                                .procs = { 2, procs } };
}

static bool refused(gh_rpc_usage r, const char *want)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_gpu_usage *u = (void *) 1;
        bool res = gh_usage_convert(&r, 3, &u, &err) < 0 && u == NULL && strstr(err->msg, want) &&
                   strstr(err->msg, "GPU 3");
        return res;
}

int main(void)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_gpu_usage *u = NULL;
        gh_rpc_usage r = good();

        ok(gh_usage_convert(&r, 0, &u, &err) == 0 && u, "a good answer converts");
        ok(u && u->gpu_util == 40 && u->mem_util == 10 && u->mem_used == 2ULL << 30 && u->mem_total == 141ULL << 30 &&
                   u->temperature_c == 35 && u->power_mw == 90000 && u->compute_mode == 3,
           "every figure is kept");
        ok(u && u->nprocs == 2 && u->procs[0].pid == 4242 && u->procs[0].compute && !u->procs[0].graphics &&
                   u->procs[0].used_memory == 1ULL << 30 && u->procs[0].owner.ns_pid == 4242,
           "the processes, each its own host PID until attributed");
        ok(u && u->procs[1].used_memory == GH_UNKNOWN_U64 && u->procs[1].sm_util == -1, "unknown figures stay unknown");
        gh_gpu_usage_free(u);
        gh_gpu_usage_free(NULL);

        r = good();
        r.gpu_util = r.mem_util = -1;
        r.mem_used = r.mem_total = GH_UNKNOWN_U64;
        r.temperature = r.power_mw = r.compute_mode = -1;
        r.procs.procs_len = 0;
        ok(gh_usage_convert(&r, 0, &u, &err) == 0 && u && u->nprocs == 0 && u->procs == NULL,
           "a GPU that reports nothing is all unknown, not an error");
        gh_gpu_usage_free(u);

        r = good(), r.gpu_util = 101;
        ok(refused(r, "malformed usage figures"), "101 %% utilisation is refused");
        r = good(), r.mem_util = -2;
        ok(refused(r, "malformed usage figures"), "-2 %% memory utilisation is refused");
        r = good(), r.mem_used = r.mem_total + 1;
        ok(refused(r, "malformed usage figures"), "more memory used than there is is refused");
        r = good(), r.compute_mode = 4;
        ok(refused(r, "malformed usage figures"), "compute mode 4 is refused");
        r = good(), r.temperature = -40;
        ok(refused(r, "malformed usage figures"), "a temperature below -1 (unknown) is refused");
        r = good(), r.procs.procs_len = GH_MAX_GPU_PROCS + 1;
        ok(refused(r, "malformed usage figures"), "more than %d processes are refused", GH_MAX_GPU_PROCS);
        r = good(), procs[1].pid = 0;
        ok(refused(r, "malformed process entry"), "a process with pid 0 is refused");
        r = good(), procs[1].pid = (1u << 22) + 1;
        ok(refused(r, "malformed process entry"), "a pid above the kernel's limit is refused");
        r = good(), procs[0].sm_util = 300;
        ok(refused(r, "malformed process entry"), "300 %% SM utilisation of a process is refused");

        is_str(gh_compute_mode_name(0), "Default", "compute mode 0 is Default");
        is_str(gh_compute_mode_name(3), "Exclusive_Process", "3 is Exclusive_Process");
        is_str(gh_compute_mode_name(-1), "-", "unknown prints as -");
        is_str(gh_compute_mode_name(9), "-", "so does an out-of-range one");
        return tap_done();
}
