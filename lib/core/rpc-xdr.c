/* rpcgen's XDR routines for the driver service protocol (nvml.x), compiled here, once, with the
 * warnings its output does not pass relaxed (rpc-proto.h). */
#include "rpc-proto.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-variable"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wmissing-prototypes"
#pragma GCC diagnostic ignored "-Wcast-function-type"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include "nvml_xdr.inc"
#pragma GCC diagnostic pop
