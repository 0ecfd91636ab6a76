/* The one atomic file writer: every small state file (MPS group state, container records, dcgm-exporter's
 * job mapping files) is written through it, so that temp names, modes and the rename are decided once. */
#ifndef GH_WRITEFILE_H
#define GH_WRITEFILE_H

#include <stddef.h>
#include <sys/types.h>

#include "error.h"

/* Writes len bytes of buf as `name` in the directory dirfd, whole or not at all: a new temporary
 * file beside it (".NAME.tmp.PID", O_EXCL, never through a symlink) with exactly `mode` (no umask),
 * filled, then renamed over name.  A reader sees the old file or the new one, never a part.  No
 * fsync: these files live under /run, which no crash outlives.  `name` is one path component. */
int gh_write_file_atomic(int dirfd, const char *name, const void *buf, size_t len, mode_t mode, gh_error_t *err);

#endif
