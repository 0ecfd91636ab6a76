// A long-running CUDA program for tests/gpu/run-doctor.sh: holds 256 MiB on GPU 0 and adds vectors
// in a loop for SECONDS (default 120), so that gpu-cli ps has something to attribute.  Prints
//   gpu_loop: running pid <pid as the process sees it>
// once the memory is allocated, and exits 0 when the time is up (1 on a CUDA error).
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <unistd.h>
#include <cuda_runtime.h>

__global__ void add(const float *a, const float *b, float *c, int n)
{
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n)
                c[i] = a[i] + b[i];
}

int main(int argc, char **argv)
{
        const int n = 1 << 24; /* 3 x 64 MiB, plus the context */
        int seconds = argc > 1 ? atoi(argv[1]) : 120;
        float *a, *b, *c;
        cudaError_t e;

        if ((e = cudaMalloc(&a, n * sizeof(float))) != cudaSuccess || (e = cudaMalloc(&b, n * sizeof(float))) != cudaSuccess ||
            (e = cudaMalloc(&c, n * sizeof(float))) != cudaSuccess) {
                printf("gpu_loop: FAIL cudaMalloc: %s\n", cudaGetErrorString(e));
                return 1;
        }
        printf("gpu_loop: running pid %d\n", (int) getpid());
        fflush(stdout);
        for (time_t end = time(NULL) + seconds; time(NULL) < end;) {
                add<<<(n + 255) / 256, 256>>>(a, b, c, n);
                if ((e = cudaDeviceSynchronize()) != cudaSuccess) {
                        printf("gpu_loop: FAIL kernel: %s\n", cudaGetErrorString(e));
                        return 1;
                }
        }
        return 0;
}
