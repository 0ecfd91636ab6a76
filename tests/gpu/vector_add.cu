// The CUDA acceptance program for tests/gpu/run.sh: adds two vectors on GPU 0 and checks the result.
// Built with `nvcc -O2 -cudart static`, so inside a container it needs only the injected driver
// (libcuda.so.1 and its helpers).  Output, one line each:
//   vector_add: device <name>
//   vector_add: PASS n=<n>            (exit 0)
//   vector_add: FAIL <what>: <error>  (exit 1: a clean failure, e.g. no driver in the container)
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void add(const float *a, const float *b, float *c, int n)
{
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n)
                c[i] = a[i] + b[i];
}

static int fail(const char *what, cudaError_t e)
{
        printf("vector_add: FAIL %s: %s (%s)\n", what, cudaGetErrorString(e), cudaGetErrorName(e));
        return 1;
}

int main(void)
{
        const int n = 1 << 20;
        size_t bytes = n * sizeof(float);
        float *a = (float *) malloc(bytes), *b = (float *) malloc(bytes), *c = (float *) malloc(bytes);
        float *da, *db, *dc;
        cudaDeviceProp prop;
        cudaError_t e;
        int count = 0;

        if ((e = cudaGetDeviceCount(&count)) != cudaSuccess)
                return fail("cudaGetDeviceCount", e);
        if (count == 0) {
                printf("vector_add: FAIL no CUDA device visible\n");
                return 1;
        }
        if ((e = cudaGetDeviceProperties(&prop, 0)) != cudaSuccess)
                return fail("cudaGetDeviceProperties", e);
        printf("vector_add: device %s (%d visible)\n", prop.name, count);
        for (int i = 0; i < n; i++) {
                a[i] = (float) i;
                b[i] = 2.0f * (float) i;
        }
        if ((e = cudaMalloc(&da, bytes)) != cudaSuccess || (e = cudaMalloc(&db, bytes)) != cudaSuccess ||
            (e = cudaMalloc(&dc, bytes)) != cudaSuccess)
                return fail("cudaMalloc", e);
        if ((e = cudaMemcpy(da, a, bytes, cudaMemcpyHostToDevice)) != cudaSuccess ||
            (e = cudaMemcpy(db, b, bytes, cudaMemcpyHostToDevice)) != cudaSuccess)
                return fail("cudaMemcpy to device", e);
        add<<<(n + 255) / 256, 256>>>(da, db, dc, n);
        if ((e = cudaGetLastError()) != cudaSuccess || (e = cudaDeviceSynchronize()) != cudaSuccess)
                return fail("kernel", e);
        if ((e = cudaMemcpy(c, dc, bytes, cudaMemcpyDeviceToHost)) != cudaSuccess)
                return fail("cudaMemcpy to host", e);
        for (int i = 0; i < n; i++) {
                if (c[i] != 3.0f * (float) i) {
                        printf("vector_add: FAIL wrong result at %d: %f\n", i, c[i]);
                        return 1;
                }
        }
        printf("vector_add: PASS n=%d\n", n);
        return 0;
}
