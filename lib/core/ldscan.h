/* The ld.so.cache entries an image's own configuration calls for: what Debian 12's
 * `ldconfig -X -r ROOT` (glibc 2.36) would index, computed natively through the in-root resolver.
 * Used when the image has no usable /etc/ld.so.cache; docs/ldcache.md has the rules.
 *
 * Directories: /etc/ld.so.conf and its includes (lib/core/ldconf.c), then the loader's trusted
 * directories; each one once (by inode); the glibc-hwcaps subdirectories of configured ones and
 * the legacy hwcap subdirectories (x86_64, tls, haswell, ...) found while scanning.  In each
 * directory the files named like libraries are identified from their ELF headers (SONAME, class,
 * machine, libc dependency, x86 ISA level), one file kept per SONAME.  Only regular files are
 * opened (a symlink is followed inside the root, never out of it), and the work is bounded. */
#ifndef GH_LDSCAN_H
#define GH_LDSCAN_H

#include "error.h"
#include "ldcache.h"

#define GH_LDSCAN_MAX_DIRS 4096      /* directories scanned, subdirectories counted */
#define GH_LDSCAN_MAX_DIRENTS 200000 /* directory entries looked at, all directories together */
#define GH_LDSCAN_MAX_LIBS 100000    /* cache entries produced */

/* Appends the entries, in the order ldconfig adds them (the writer sorts them the same way), to
 * *out.  procfd as for gh_open_regular().  Errors are for memory only: unreadable or odd files
 * and directories are skipped, as ldconfig skips them; hitting a limit stops with a warning. */
int gh_ldscan(int rootfd, int procfd, struct gh_ldcache_set *out, gh_error_t *err);

/* The same scan over the directories given (container paths, in that order) instead of the
 * image's configuration: what `update-ldcache --folder` indexes.  An entry names the SONAME link
 * when the directory has it, else the file itself (nothing is created in the directory). */
int gh_ldscan_dirs(int rootfd, int procfd, const char *const *dirs, size_t ndirs, struct gh_ldcache_set *out,
                   gh_error_t *err);

/* Identifies one library file (an fd opened for reading, name is the directory entry's name):
 * returns 0 with the cache flags, the SONAME (malloc'ed; the name itself when it has none) and the
 * x86 ISA level it needs, or 1 when ldconfig would not index it (not a shared object, another
 * machine, truncated...).  Negative only when memory runs out. */
int gh_ldscan_identify(int fd, const char *name, int *flag, char **soname, unsigned *isa_level, gh_error_t *err);

#endif
