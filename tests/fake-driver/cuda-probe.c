/* The fake "vector add": loads libcuda.so.1 by SONAME through the normal loader search (no rpath,
 * no LD_LIBRARY_PATH), the way a CUDA program inside a container does, and asks it for devices.
 * Prints "CUDA OK: N device(s)" and exits 0, or one error line and exits 1.  With --which, a second
 * line "libcuda: PATH CUDA VERSION": the file the loader chose and the CUDA version it reports. */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

typedef int (*cu_init_fn)(unsigned int);
typedef int (*cu_count_fn)(int *);
typedef int (*cu_errstr_fn)(int, const char **);
typedef int (*cu_version_fn)(int *);

static const char *cuda_error(void *lib, int rc)
{
        cu_errstr_fn name = (cu_errstr_fn) dlsym(lib, "cuGetErrorName");
        const char *s = NULL;

        if (!name || name(rc, &s) != 0 || !s)
                return "unknown CUDA error";
        return s;
}

int main(int argc, char **argv)
{
        cu_init_fn init;
        cu_count_fn count;
        int rc, n = 0;
        void *lib;

        lib = dlopen("libcuda.so.1", RTLD_NOW);
        if (!lib) {
                fprintf(stderr, "cuda-probe: cannot load libcuda.so.1 (%s); is the NVIDIA driver injected?\n",
                        dlerror());
                return 1;
        }
        init = (cu_init_fn) dlsym(lib, "cuInit");
        count = (cu_count_fn) dlsym(lib, "cuDeviceGetCount");
        if (!init || !count) {
                fprintf(stderr, "cuda-probe: libcuda.so.1 lacks cuInit/cuDeviceGetCount; wrong library loaded\n");
                return 1;
        }
        rc = init(0);
        if (rc != 0) {
                fprintf(stderr, "cuda-probe: cuInit failed: %s (%d)\n", cuda_error(lib, rc), rc);
                return 1;
        }
        rc = count(&n);
        if (rc != 0) {
                fprintf(stderr, "cuda-probe: cuDeviceGetCount failed: %s (%d)\n", cuda_error(lib, rc), rc);
                return 1;
        }
        printf("CUDA OK: %d device(s)\n", n);
        if (argc > 1 && strcmp(argv[1], "--which") == 0) {
                /* which libcuda the loader chose, and the CUDA version it brings (docs/cuda-compat.md) */
                struct link_map *lm = NULL;
                cu_version_fn ver = (cu_version_fn) dlsym(lib, "cuDriverGetVersion");
                int v = 0;
                if (ver)
                        ver(&v);
                dlinfo(lib, RTLD_DI_LINKMAP, &lm);
                printf("libcuda: %s CUDA %d\n", lm ? lm->l_name : "?", v);
        }
        return 0;
}
