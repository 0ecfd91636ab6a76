/* Fake libcuda: "works" exactly when the device nodes a CUDA program needs are there, which is
 * what a container gets from a correct injection: /dev/nvidiactl, /dev/nvidia-uvm and at least
 * one /dev/nvidiaN, all character devices.  Nodes are looked up under $FAKE_NVML_ROOT (default
 * "/") so host-side tests can point it at a fake driver root.  libc only. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef int CUresult;
typedef int CUdevice;

enum {
        CUDA_SUCCESS = 0,
        CUDA_ERROR_INVALID_VALUE = 1,
        CUDA_ERROR_NOT_INITIALIZED = 3,
        CUDA_ERROR_NO_DEVICE = 100,
        CUDA_ERROR_INVALID_DEVICE = 101,
};

#define FAKE_CUDA_VERSION 13000

CUresult cuInit(unsigned int flags);
CUresult cuDriverGetVersion(int *driverVersion);
CUresult cuDeviceGetCount(int *count);
CUresult cuDeviceGet(CUdevice *device, int ordinal);
CUresult cuDeviceGetName(char *name, int len, CUdevice dev);
CUresult cuGetErrorName(CUresult error, const char **pStr);
CUresult cuGetErrorString(CUresult error, const char **pStr);

static int initialized;
static int n_gpus;

static const char *fake_root(void)
{
        const char *r = getenv("FAKE_NVML_ROOT");
        return r && *r ? r : "/";
}

static int is_char_node(const char *rel)
{
        char path[4096];
        struct stat st;

        snprintf(path, sizeof(path), "%s/dev/%s", fake_root(), rel);
        return stat(path, &st) == 0 && S_ISCHR(st.st_mode);
}

static int count_gpu_nodes(void)
{
        char path[4096];
        struct dirent *de;
        int n = 0;
        DIR *d;

        snprintf(path, sizeof(path), "%s/dev", fake_root());
        d = opendir(path);
        if (!d)
                return 0;
        while ((de = readdir(d))) {
                const char *digits = de->d_name + 6;

                if (strncmp(de->d_name, "nvidia", 6) == 0 && *digits &&
                    strspn(digits, "0123456789") == strlen(digits) && is_char_node(de->d_name))
                        n++;
        }
        closedir(d);
        return n;
}

CUresult cuInit(unsigned int flags)
{
        if (flags != 0)
                return CUDA_ERROR_INVALID_VALUE;
        if (!is_char_node("nvidiactl") || !is_char_node("nvidia-uvm"))
                return CUDA_ERROR_NO_DEVICE;
        n_gpus = count_gpu_nodes();
        if (n_gpus == 0)
                return CUDA_ERROR_NO_DEVICE;
        initialized = 1;
        return CUDA_SUCCESS;
}

/* Like the real one, it needs no cuInit.  The version is the one the fake NVML reports (the first
 * cuda_driver_version: line among proc/driver/nvidia/gpus/<bus id>/fake-nvml), so that both agree. */
CUresult cuDriverGetVersion(int *driverVersion)
{
        char path[4096], line[256];
        struct dirent *de;
        DIR *d;

        if (!driverVersion)
                return CUDA_ERROR_INVALID_VALUE;
#ifdef FAKE_COMPAT_CUDA_VERSION
        /* a CUDA compat libcuda (compat-note.c): the newer CUDA it brings, whatever the driver says */
        *driverVersion = FAKE_COMPAT_CUDA_VERSION;
        return CUDA_SUCCESS;
#endif
        *driverVersion = FAKE_CUDA_VERSION;
        snprintf(path, sizeof(path), "%s/proc/driver/nvidia/gpus", fake_root());
        d = opendir(path);
        while (d && (de = readdir(d))) {
                FILE *f;
                int found = 0;
                if (de->d_name[0] == '.')
                        continue;
                snprintf(path, sizeof(path), "%s/proc/driver/nvidia/gpus/%s/fake-nvml", fake_root(), de->d_name);
                f = fopen(path, "re");
                while (f && fgets(line, sizeof(line), f))
                        if (sscanf(line, "cuda_driver_version: %d", driverVersion) == 1)
                                found = 1;
                if (f)
                        fclose(f);
                if (found)
                        break;
        }
        if (d)
                closedir(d);
        return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
        if (!count)
                return CUDA_ERROR_INVALID_VALUE;
        if (!initialized)
                return CUDA_ERROR_NOT_INITIALIZED;
        *count = n_gpus;
        return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
        if (!device)
                return CUDA_ERROR_INVALID_VALUE;
        if (!initialized)
                return CUDA_ERROR_NOT_INITIALIZED;
        if (ordinal < 0 || ordinal >= n_gpus)
                return CUDA_ERROR_INVALID_DEVICE;
        *device = ordinal;
        return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
        if (!name || len <= 0)
                return CUDA_ERROR_INVALID_VALUE;
        if (!initialized)
                return CUDA_ERROR_NOT_INITIALIZED;
        if (dev < 0 || dev >= n_gpus)
                return CUDA_ERROR_INVALID_DEVICE;
        snprintf(name, (size_t) len, "Fake CUDA device %d", dev);
        return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char **pStr)
{
        if (!pStr)
                return CUDA_ERROR_INVALID_VALUE;
        switch (error) {
        case CUDA_SUCCESS: *pStr = "CUDA_SUCCESS"; break;
        case CUDA_ERROR_INVALID_VALUE: *pStr = "CUDA_ERROR_INVALID_VALUE"; break;
        case CUDA_ERROR_NOT_INITIALIZED: *pStr = "CUDA_ERROR_NOT_INITIALIZED"; break;
        case CUDA_ERROR_NO_DEVICE: *pStr = "CUDA_ERROR_NO_DEVICE"; break;
        case CUDA_ERROR_INVALID_DEVICE: *pStr = "CUDA_ERROR_INVALID_DEVICE"; break;
        default: *pStr = NULL; return CUDA_ERROR_INVALID_VALUE;
        }
        return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult error, const char **pStr)
{
        if (!pStr)
                return CUDA_ERROR_INVALID_VALUE;
        switch (error) {
        case CUDA_SUCCESS: *pStr = "no error"; break;
        case CUDA_ERROR_INVALID_VALUE: *pStr = "invalid argument"; break;
        case CUDA_ERROR_NOT_INITIALIZED: *pStr = "initialization error"; break;
        case CUDA_ERROR_NO_DEVICE: *pStr = "no CUDA-capable device is detected"; break;
        case CUDA_ERROR_INVALID_DEVICE: *pStr = "invalid device ordinal"; break;
        default: *pStr = NULL; return CUDA_ERROR_INVALID_VALUE;
        }
        return CUDA_SUCCESS;
}
