#include "config.h"
#include "gpuhook.h"

__attribute__((visibility("default"))) const char *gpuhook_version(void) { return GPUHOOK_VERSION; }
