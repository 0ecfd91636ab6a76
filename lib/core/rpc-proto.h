/* rpcgen's header for the driver service protocol (nvml.x), included with the warnings its
 * output does not pass relaxed; its XDR routines are compiled once, in rpc-xdr.c. */
#ifndef GH_RPC_PROTO_H
#define GH_RPC_PROTO_H

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-variable"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wmissing-prototypes"
#pragma GCC diagnostic ignored "-Wcast-function-type"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <rpc/rpc.h>

#include "nvml.h"
#pragma GCC diagnostic pop

/* A reply can describe at most this many GPUs; more is a broken service, not a machine. */
#define GH_RPC_MAX_GPUS 1024

#endif
