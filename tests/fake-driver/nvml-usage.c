/* The fake libnvidia-ml's usage figures and process lists.
 *
 * The real driver knows which processes have a GPU open; the fake has no kernel side, so it looks:
 * a process "uses" GPU N when it holds any file descriptor (O_PATH counts: without a driver the node
 * cannot really be opened) on a character device with the rdev of the root's dev/nvidia<N> that is
 * still linked somewhere (a removed node is a removed fake root's: a killed test's leftover).  It
 * scans procfs mounted at fake-proc/ under its root, because the driver-service child is chrooted
 * into the root and cannot see the host's /proc otherwise; the directory is empty (no processes)
 * until a test mounts procfs there.  Like any process it sees the descriptors of processes it may
 * ptrace only: the service runs as the overflow uid with no capability, so tests run their GPU
 * "users" as that uid.  PIDs are those of the procfs instance (the host's, from a host mount).
 *
 * Figures per GPU come from fake-nvml: memory_total_mib, process_memory_mib (each process's used
 * memory), process_sm_util (each process's SM utilisation; GPU utilisation is their sum, at most 100),
 * memory_util (the GPU's memory controller utilisation, also each process's), temperature, power_mw,
 * compute_mode (0 Default .. 3 Exclusive_Process), sm_clock_mhz, mem_clock_mhz.
 *
 * Per process, etc/fake-nvml-processes under the root may override the memory and SM utilisation:
 * lines "PID MEMORY_MIB [SM_UTIL]", read afresh by every call, so that a test can make a process's
 * memory grow between two samples.  The GPU's used memory and utilisation follow (sums). */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nvml-fake.h"

#define MAX_PIDS 4096

void fake_usage_defaults(struct fake_nvml_device *gpu)
{
        gpu->memory_total_mib = 81559;
        gpu->process_memory_mib = 1024;
        gpu->process_sm_util = 40;
        gpu->temperature = 33;
        gpu->power_mw = 70000;
        gpu->sm_clock_mhz = 1980;
        gpu->mem_clock_mhz = 2619;
}

void fake_usage_key(struct fake_nvml_device *gpu, const char *key, const char *value)
{
        unsigned long long v = strtoull(value, NULL, 10);

        if (strcmp(key, "memory_total_mib") == 0)
                gpu->memory_total_mib = v;
        else if (strcmp(key, "process_memory_mib") == 0)
                gpu->process_memory_mib = v;
        else if (strcmp(key, "process_sm_util") == 0)
                gpu->process_sm_util = (unsigned int) (v > 100 ? 100 : v);
        else if (strcmp(key, "temperature") == 0)
                gpu->temperature = (unsigned int) v;
        else if (strcmp(key, "power_mw") == 0)
                gpu->power_mw = (unsigned int) v;
        else if (strcmp(key, "compute_mode") == 0)
                gpu->compute_mode = (unsigned int) v;
        else if (strcmp(key, "memory_util") == 0)
                gpu->memory_util = (unsigned int) (v > 100 ? 100 : v);
        else if (strcmp(key, "sm_clock_mhz") == 0)
                gpu->sm_clock_mhz = (unsigned int) v;
        else if (strcmp(key, "mem_clock_mhz") == 0)
                gpu->mem_clock_mhz = (unsigned int) v;
}

/* One process's figures: the profile's, or etc/fake-nvml-processes's line for pid. */
struct proc_figures {
        unsigned long long memory_mib;
        unsigned int sm_util;
};

static struct proc_figures figures(nvmlDevice_t device, unsigned int pid)
{
        struct proc_figures f = { device->process_memory_mib, device->process_sm_util };
        char path[4096], line[128];
        FILE *in;

        root_path(path, sizeof(path), "etc/fake-nvml-processes");
        in = fopen(path, "re");
        if (!in)
                return f;
        while (fgets(line, sizeof(line), in)) {
                unsigned int p, sm;
                unsigned long long mib;
                int n = sscanf(line, "%u %llu %u", &p, &mib, &sm);
                if (n < 2 || p != pid)
                        continue;
                f.memory_mib = mib;
                if (n == 3)
                        f.sm_util = sm > 100 ? 100 : sm;
        }
        fclose(in);
        return f;
}

static int holds(int procfd, const char *pid, dev_t rdev)
{
        char path[64];
        struct dirent *de;
        int fd, found = 0;
        DIR *d;

        snprintf(path, sizeof(path), "%s/fd", pid);
        fd = openat(procfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return 0; /* not ours to see, or gone */
        d = fdopendir(fd);
        if (!d) {
                close(fd);
                return 0;
        }
        while (!found && (de = readdir(d))) {
                struct stat st;
                if (de->d_name[0] == '.')
                        continue;
                /* follows the magic link to the open file itself; a node no longer linked anywhere is
                 * another fake root's that was removed (a killed test's leftover process), not ours */
                if (fstatat(dirfd(d), de->d_name, &st, 0) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == rdev &&
                    st.st_nlink > 0)
                        found = 1;
        }
        closedir(d);
        return found;
}

/* PIDs holding the device, ascending. */
static unsigned int scan(nvmlDevice_t device, unsigned int *pids, unsigned int max)
{
        char path[4096];
        struct dirent *de;
        unsigned int n = 0;
        int procfd;
        DIR *d;

        root_path(path, sizeof(path), "fake-proc");
        procfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (procfd < 0)
                return 0;
        d = fdopendir(dup(procfd));
        while (d && (de = readdir(d)) && n < max) {
                char *end;
                unsigned long pid = strtoul(de->d_name, &end, 10);
                if (*end != '\0' || pid == 0)
                        continue;
                if (holds(procfd, de->d_name, device->rdev))
                        pids[n++] = (unsigned int) pid;
        }
        if (d)
                closedir(d);
        close(procfd);
        return n;
}

static nvmlReturn_t physical(nvmlDevice_t device)
{
        CHECK_INIT();
        if (!device)
                return NVML_ERROR_INVALID_ARGUMENT;
        return device->parent ? NVML_ERROR_NOT_SUPPORTED : NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                     nvmlProcessInfo_t *infos)
{
        static unsigned int pids[MAX_PIDS];
        nvmlReturn_t r = physical(device);
        unsigned int n;

        if (r != NVML_SUCCESS)
                return r;
        if (!infoCount)
                return NVML_ERROR_INVALID_ARGUMENT;
        n = scan(device, pids, MAX_PIDS);
        if (n > *infoCount || (n > 0 && !infos)) {
                *infoCount = n;
                return NVML_ERROR_INSUFFICIENT_SIZE;
        }
        for (unsigned int i = 0; i < n; i++)
                infos[i] = (nvmlProcessInfo_t) { .pid = pids[i],
                                                 .usedGpuMemory = figures(device, pids[i]).memory_mib << 20,
                                                 .gpuInstanceId = ~0u,
                                                 .computeInstanceId = ~0u };
        *infoCount = n;
        return NVML_SUCCESS;
}

/* No display engine here: nothing draws. */
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                      nvmlProcessInfo_t *infos)
{
        nvmlReturn_t r = physical(device);

        if (r != NVML_SUCCESS)
                return r;
        if (!infoCount)
                return NVML_ERROR_INVALID_ARGUMENT;
        *infoCount = 0;
        return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device, nvmlProcessUtilizationSample_t *utilization,
                                             unsigned int *processSamplesCount, unsigned long long lastSeenTimeStamp)
{
        static unsigned int pids[MAX_PIDS];
        nvmlReturn_t r = physical(device);
        unsigned int n;

        if (r != NVML_SUCCESS)
                return r;
        if (!processSamplesCount)
                return NVML_ERROR_INVALID_ARGUMENT;
        n = scan(device, pids, MAX_PIDS);
        if (n == 0)
                return NVML_ERROR_NOT_FOUND;
        if (!utilization || n > *processSamplesCount) {
                *processSamplesCount = n;
                return NVML_ERROR_INSUFFICIENT_SIZE;
        }
        for (unsigned int i = 0; i < n; i++)
                utilization[i] = (nvmlProcessUtilizationSample_t) { .pid = pids[i],
                                                                    .timeStamp = lastSeenTimeStamp + 1,
                                                                    .smUtil = figures(device, pids[i]).sm_util,
                                                                    .memUtil = device->memory_util };
        *processSamplesCount = n;
        return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization)
{
        static unsigned int pids[MAX_PIDS];
        nvmlReturn_t r = physical(device);
        unsigned int n, sum = 0;

        if (r != NVML_SUCCESS)
                return r;
        if (!utilization)
                return NVML_ERROR_INVALID_ARGUMENT;
        n = scan(device, pids, MAX_PIDS);
        for (unsigned int i = 0; i < n && sum < 100; i++)
                sum += figures(device, pids[i]).sm_util;
        utilization->gpu = sum > 100 ? 100 : sum;
        utilization->memory = n > 0 ? device->memory_util : 0;
        return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
        static unsigned int pids[MAX_PIDS];
        nvmlReturn_t r = physical(device);
        unsigned long long used = 0;
        unsigned int n;

        if (r != NVML_SUCCESS)
                return r;
        if (!memory)
                return NVML_ERROR_INVALID_ARGUMENT;
        n = scan(device, pids, MAX_PIDS);
        for (unsigned int i = 0; i < n; i++)
                used += figures(device, pids[i]).memory_mib;
        memory->total = device->memory_total_mib << 20;
        memory->used = (used < device->memory_total_mib ? used : device->memory_total_mib) << 20;
        memory->free = memory->total - memory->used;
        return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, int sensorType, unsigned int *temp)
{
        nvmlReturn_t r = physical(device);

        if (r != NVML_SUCCESS)
                return r;
        if (!temp || sensorType != NVML_TEMPERATURE_GPU)
                return NVML_ERROR_INVALID_ARGUMENT;
        *temp = device->temperature;
        return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power)
{
        nvmlReturn_t r = physical(device);

        if (r != NVML_SUCCESS)
                return r;
        if (!power)
                return NVML_ERROR_INVALID_ARGUMENT;
        *power = device->power_mw;
        return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, int *mode)
{
        nvmlReturn_t r = physical(device);

        if (r != NVML_SUCCESS)
                return r;
        if (!mode)
                return NVML_ERROR_INVALID_ARGUMENT;
        *mode = (int) device->compute_mode;
        return NVML_SUCCESS;
}

/* NVML_CLOCK_SM (1) and NVML_CLOCK_MEM (2): the profile's; graphics (0) runs with SM, video (3) is
 * not modelled. */
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, int type, unsigned int *clock)
{
        nvmlReturn_t r = physical(device);

        if (r != NVML_SUCCESS)
                return r;
        if (!clock || type < 0 || type > 3)
                return NVML_ERROR_INVALID_ARGUMENT;
        if (type == NVML_CLOCK_VIDEO)
                return NVML_ERROR_NOT_SUPPORTED;
        *clock = type == NVML_CLOCK_MEM ? device->mem_clock_mhz : device->sm_clock_mhz;
        return NVML_SUCCESS;
}
