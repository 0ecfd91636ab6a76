/* The driver service protocol (lib/core/nvml.x, compiled by rpcgen): both ends.
 *
 * The server half runs only in the sandboxed child (service.c): it loads libnvidia-ml and answers
 * calls.  The client half runs in the privileged process and turns the answers into a
 * gh_gpu_list; it never touches NVML itself. */
#ifndef GH_RPC_H
#define GH_RPC_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "gpumodel.h"

/* Server side.  Loads libnvidia-ml.so.1 by SONAME and initialises it; on failure writes a one-line
 * reason to errbuf and returns -1. */
int gh_rpc_nvml_load(char *errbuf, size_t size);

/* Server side, the other kind of service: loads libcuda (path, or libcuda.so.1 by SONAME when NULL)
 * and finds cuDriverGetVersion
 * (cuInit is never called: no device is opened, no driver state is set up).  Then only GH_RPC_CUDA
 * answers. */
int gh_rpc_cuda_load(const char *path, char *errbuf, size_t size);

/* Makes every call answer with this error instead of asking NVML (the child could not set itself
 * up; the parent still gets a proper message through the protocol). */
void gh_rpc_set_setup_error(const char *msg);

/* Serves calls on the connected socket fd until the peer closes it. */
void gh_rpc_serve(int fd);

/* Client side.  Asks the service on fd for the driver and every GPU.  timeout_ms bounds each call.
 * Errors carry code ETIMEDOUT (no answer in time), EPIPE (the service went away) or 0 (the
 * service answered with an error). */
int gh_rpc_fetch(int fd, int timeout_ms, bool with_usage, struct gh_gpu_list *list, gh_error_t *err);

/* Client side: the CUDA driver version ("13.0") from a service that loaded libcuda. */
int gh_rpc_fetch_cuda(int fd, int timeout_ms, char *cuda, size_t size, gh_error_t *err);

/* The NVML brand name ("Tesla", "GeForce", ...) of a brand enum value; "Unknown" when unknown. */
const char *gh_nvml_brand_name(int brand);

#endif
