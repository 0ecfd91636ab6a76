/* ldconfig's view of a library file (any file named like a library in an image): flags, SONAME,
 * ISA level from pread()s at untrusted offsets.  Besides "no crash": a file taken has a non-empty
 * SONAME and flags ldconfig could write; a file refused has none; the same bytes give the same
 * answer twice. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cleanup.h"
#include "ldcache.h"
#include "ldscan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_close_ int fd = memfd_create("libfuzz.so.1", MFD_CLOEXEC);
        _cleanup_free_ char *soname = NULL, *soname2 = NULL;
        unsigned isa = 0, isa2 = 0;
        int flag = -1, flag2 = -1, r, r2;

        if (fd < 0 || size > (1u << 20))
                return 0;
        if (size > 0 && write(fd, data, size) != (ssize_t) size)
                return 0;
        r = gh_ldscan_identify(fd, "libfuzz.so.1", &flag, &soname, &isa, &err);
        if (r < 0)
                return 0; /* out of memory */
        if (r == 0) {
                if (soname == NULL || soname[0] == '\0' || isa > 31)
                        abort();
                if (flag != GH_LDCACHE_FLAG_LIBC4 && flag != GH_LDCACHE_FLAG_ELF && flag != GH_LDCACHE_FLAG_ELF_LIBC6 &&
                    flag != GH_LDCACHE_FLAGS_X86_64 &&
                    flag != (GH_LDCACHE_FLAG_X8664_LIBX32 | GH_LDCACHE_FLAG_ELF_LIBC6))
                        abort();
        } else if (soname != NULL) {
                abort();
        }
        r2 = gh_ldscan_identify(fd, "libfuzz.so.1", &flag2, &soname2, &isa2, &err);
        if (r2 != r || (r == 0 && (flag2 != flag || isa2 != isa || strcmp(soname, soname2) != 0)))
                abort();
        return 0;
}
