/* The container's ld.so.cache after an injection: start from what the image has (its cache, or
 * what its ld.so.conf calls for), then let the injected libraries win.  docs/ldcache.md. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "ldcache.h"
#include "ldscan.h"
#include "log.h"
#include "plan.h"
#include "rootfs.h"
#include "steps.h"

#define CACHE "/etc/ld.so.cache"

/* Copies the container's cache into memory first: a running container could truncate the file
 * under a mapping and crash us.  *cache stays NULL when the image has no usable one. */
static int read_container_cache(int rootfd, int procfd, struct gh_ldcache **cache, gh_error_t *err)
{
        _cleanup_error_ gh_error_t e = NULL;
        /* Only a regular file is ever opened: an image's device node or FIFO there is not touched. */
        _cleanup_close_ int fd = gh_open_regular(rootfd, CACHE, procfd, &e);
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        size_t cap, total = 0;
        ssize_t n;

        *cache = NULL;
        if (fd < 0) {
                if (e->code != ENOENT)
                        gh_warn("the container's %s; building one from its /etc/ld.so.conf", e->msg);
                return 0;
        }
        if (fstat(fd, &st) < 0)
                return gh_err(err, errno, "reading the container's " CACHE);
        if ((uint64_t) st.st_size > GH_LDCACHE_MAX_SIZE) {
                gh_warn("the container's " CACHE " is larger than %u bytes; building one from its /etc/ld.so.conf",
                        GH_LDCACHE_MAX_SIZE);
                return 0;
        }
        /* The size it has now plus one byte: a file that grew meanwhile is still read to its end. */
        cap = (size_t) st.st_size + 1;
        buf = malloc(cap);
        if (buf == NULL)
                return gh_err(err, ENOMEM, "reading the container's " CACHE);
        while ((n = read(fd, buf + total, cap - total)) > 0) {
                total += (size_t) n;
                if (total == cap) {
                        char *more;
                        if (cap > GH_LDCACHE_MAX_SIZE) {
                                gh_warn("the container's " CACHE
                                        " is larger than %u bytes; building one from its /etc/ld.so.conf",
                                        GH_LDCACHE_MAX_SIZE);
                                return 0;
                        }
                        more = realloc(buf, cap * 2);
                        if (more == NULL)
                                return gh_err(err, ENOMEM, "reading the container's " CACHE);
                        buf = more;
                        cap *= 2;
                }
        }
        if (n < 0)
                return gh_err(err, errno, "reading the container's " CACHE);
        if (total == 0)
                return 0;
        if (gh_ldcache_from_buffer(steal_pointer(&buf), total, "the container's " CACHE, cache, &e) < 0) {
                /* A broken cache in the image is replaced rather than trusted. */
                gh_warn("%s; building one from its /etc/ld.so.conf", e->msg);
                *cache = NULL;
        }
        return 0;
}

int gh_ldcache_driver_part(const struct gh_plan *plan, struct gh_ldcache_set *part, gh_error_t *err)
{
        /* The plan's libraries by SONAME and its development links ("libcuda.so") under their own
         * names (lib/core/plan.c). */
        for (size_t i = 0; i < plan->nlibs; i++) {
                struct gh_ldcache_entry e = {
                        .key = plan->libs[i].soname,
                        .value = plan->libs[i].path,
                        .flags = plan->libs[i].compat32 ? GH_LDCACHE_FLAGS_I386 : GH_LDCACHE_FLAGS_X86_64,
                };
                if (gh_ldcache_set_add(part, &e, err) < 0)
                        return -1;
        }
        return gh_ldcache_sort(part, err);
}

int gh_ldcache_update(const struct gh_plan *plan, int rootfd, int procfd, gh_error_t *err)
{
        struct gh_ldcache *old = NULL;
        struct gh_ldcache_set scanned = { 0 }, part = { 0 };
        _cleanup_close_ int etc = -1;
        int r = -1;

        /* The driver's part is in order once; the image's part is fitted around it without being
         * copied (a cache ldconfig wrote is already in order). */
        if (gh_ldcache_driver_part(plan, &part, err) < 0 || read_container_cache(rootfd, procfd, &old, err) < 0)
                goto out;
        if (old == NULL && gh_ldscan(rootfd, procfd, &scanned, err) < 0)
                goto out;
        GH_STEP("ldcache.read");
        etc = gh_mkdir_p(rootfd, "/etc", 0755, err);
        if (etc < 0)
                goto out;
        r = old ? gh_ldcache_write_merged(etc, "ld.so.cache", old->entries, old->n, &part, err)
                : gh_ldcache_write_merged(etc, "ld.so.cache", scanned.entries, scanned.n, &part, err);
out:
        if (r < 0)
                gh_err_wrap(err, "writing the container's " CACHE);
        gh_ldcache_set_free(&scanned);
        gh_ldcache_set_free(&part);
        if (old)
                gh_ldcache_close(old);
        return r;
}
