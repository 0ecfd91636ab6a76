// mps_alloc MIB [HOLD_SECONDS]: allocate MIB MiB of device memory with cudaMalloc, touch it, hold it,
// and say whether it worked.  Used by tests/gpu/run-mps.sh to check an MPS group's memory limit.
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <cuda_runtime.h>

int main(int argc, char **argv)
{
        if (argc < 2) {
                fprintf(stderr, "usage: mps_alloc MIB [HOLD_SECONDS]\n");
                return 2;
        }
        size_t mib = strtoull(argv[1], nullptr, 10);
        int hold = argc > 2 ? atoi(argv[2]) : 0;
        void *p = nullptr;
        cudaError_t e = cudaMalloc(&p, mib << 20);
        if (e == cudaSuccess)
                e = cudaMemset(p, 1, mib << 20);
        if (e == cudaSuccess)
                e = cudaDeviceSynchronize();
        if (e != cudaSuccess) {
                printf("mps_alloc %zu MiB: FAIL %s (%s)\n", mib, cudaGetErrorName(e), cudaGetErrorString(e));
                return 1;
        }
        printf("mps_alloc %zu MiB: ok\n", mib);
        fflush(stdout);
        if (hold > 0)
                sleep(hold);
        cudaFree(p);
        return 0;
}
