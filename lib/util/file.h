/* Writing files: the one writer every file of the project goes through (ld.so.cache in a
 * container, the driver-state cache, MPS state files, CDI specs, engine configurations, a bundle's
 * config.json), so that temporary names, fsync and modes are decided in one place.  libc only. */
#ifndef GH_FILE_H
#define GH_FILE_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "error.h"

enum {
        /* Write a temporary file next to the target and rename it over the target: a reader sees
         * the old file or the whole new one, never half of one.  The temporary name is
         * ".NAME.PID.RANDOM" (O_EXCL | O_NOFOLLOW): unique per writer, hidden, and with no suffix a
         * reader of *.json, *.toml or *.conf would pick up.  Without ATOMIC the file is created
         * where none was (O_EXCL | O_NOFOLLOW: an existing file or link is an error, EEXIST). */
        GH_WRITE_ATOMIC = 1 << 0,
        /* fsync the file before it takes the name, and the directory after: the write survives a
         * crash.  For files that outlive a reboot and are not rebuilt on their own. */
        GH_WRITE_SYNC = 1 << 1,
        /* Make the missing directories of the path first (mode 0755).  Only for trusted host paths
         * (a default under /etc or /run, an administrator's option): no in-root resolution. */
        GH_WRITE_MKDIR_0755 = 1 << 2,
        /* An existing file's mode and owner carry over to the new one (mode applies to a new file
         * only): an administrator's 0600 daemon.json stays 0600. */
        GH_WRITE_KEEP_OWNER = 1 << 3,
};

/* Writes len bytes of data to path, relative to dirfd (AT_FDCWD or a directory fd; path may be
 * absolute).  Every component but the last is trusted: when the directory comes from the in-root
 * resolver, pass its fd and a bare name.  mode is set with fchmod, so the umask cannot narrow it.
 * *st (may be NULL): the file written, e.g. to recognise it later by device and inode.  On
 * failure nothing is left behind (no temporary file) and the old file is untouched. */
int gh_write_file_at(int dirfd, const char *path, const void *data, size_t len, mode_t mode, unsigned flags,
                     struct stat *st, gh_error_t *err);

/* Whether name is one of gh_write_file_at's temporary names (".NAME.PID.RANDOM") and whose: 0 and
 * *pid set to the writer's pid, or -1 when it is not such a name.  A directory's owner removes the
 * temporaries whose writer is gone (killed between create and rename). */
int gh_write_temp_writer(const char *name, pid_t *pid);

/* mkdir -p of a trusted path relative to dirfd: every missing directory made with mode (whatever
 * the umask); existing ones are fine (also when they are not directories: the caller's open says so). */
int gh_mkdir_p_trusted(int dirfd, const char *path, mode_t mode, gh_error_t *err);

/* write(2) until all of it is written (retries EINTR and short writes); -1 with errno. */
int gh_write_all(int fd, const void *data, size_t len);

/* The executable NAME in the running program's own directory (/proc/self/exe's): 0 with its path in
 * buf, -1 when there is none (or it is not executable, or buf is too small). */
int gh_beside_self(const char *name, char *buf, size_t size);

#endif
