/* __attribute__((cleanup)) helpers, systemd/crun style.  fds start at -1; hand ownership out with
 * TAKE_FD() / steal_pointer(). */
#ifndef GH_CLEANUP_H
#define GH_CLEANUP_H

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "error.h"

static inline void gh_freep(void *p) { free(*(void **) p); }
static inline void gh_closep(int *fd)
{
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
}
static inline void gh_fclosep(FILE **f)
{
        if (*f)
                fclose(*f);
}
static inline void gh_closedirp(DIR **d)
{
        if (*d)
                closedir(*d);
}
static inline void gh_errorp(gh_error_t *e) { gh_error_free(e); }
static inline void gh_strvfreep(char ***v)
{
        if (*v) {
                for (char **p = *v; *p; p++)
                        free(*p);
                free(*v);
        }
}

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _cleanup_free_ _cleanup_(gh_freep)
#define _cleanup_close_ _cleanup_(gh_closep)
#define _cleanup_fclose_ _cleanup_(gh_fclosep)
#define _cleanup_closedir_ _cleanup_(gh_closedirp)
#define _cleanup_error_ _cleanup_(gh_errorp)
#define _cleanup_strv_ _cleanup_(gh_strvfreep)

#define TAKE_FD(fd)                                                                                                    \
        ({                                                                                                             \
                int _fd_ = (fd);                                                                                       \
                (fd) = -1;                                                                                             \
                _fd_;                                                                                                  \
        })
#define steal_pointer(pp)                                                                                              \
        ({                                                                                                             \
                __typeof__(*(pp)) _p_ = *(pp);                                                                         \
                *(pp) = NULL;                                                                                          \
                _p_;                                                                                                   \
        })

#define GH_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
