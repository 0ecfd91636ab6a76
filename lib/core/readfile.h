/* Reading whole small files, bounded: the one reader for driver files, configuration and the OCI
 * state.  A file larger than `max` is an error, never a truncated read. */
#ifndef GH_READFILE_H
#define GH_READFILE_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* Reads at most `max` bytes from fd until EOF; more than that is an error naming `what`.  *buf is
 * NUL-terminated (the NUL is not counted in *len). */
int gh_read_bounded(int fd, size_t max, char **buf, size_t *len, const char *what, gh_error_t *err);

/* Opens PATH under the root (the in-root resolver, rootfs.h) and reads it like gh_read_bounded.
 * regular_only refuses anything but a regular file (a FIFO or device is never opened).  An open
 * failure keeps the resolver's errno as the code (ENOENT: the file is missing).  len may be NULL. */
int gh_read_at(int rootfd, const char *path, size_t max, bool regular_only, char **buf, size_t *len, gh_error_t *err);

#endif
