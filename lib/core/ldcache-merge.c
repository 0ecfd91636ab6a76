/* The container's ld.so.cache after an injection: start from what the image has (its cache, or
 * what its ld.so.conf calls for), then let the injected libraries win.  docs/ldcache.md. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "ldcache.h"
#include "ldscan.h"
#include "log.h"
#include "plan.h"
#include "rootfs.h"

#define CACHE "/etc/ld.so.cache"

/* Copies the container's cache into memory first: a running container could truncate the file
 * under a mapping and crash us.  *cache stays NULL when the image has no usable one. */
static int read_container_cache(int rootfd, int procfd, struct gh_ldcache **cache, gh_error_t *err)
{
        _cleanup_error_ gh_error_t e = NULL;
        /* Only a regular file is ever opened: an image's device node or FIFO there is not touched. */
        _cleanup_close_ int fd = gh_open_regular(rootfd, CACHE, procfd, &e);
        _cleanup_close_ int mfd = -1;
        char buf[65536];
        struct stat st;
        ssize_t n;
        size_t total = 0;

        *cache = NULL;
        if (fd < 0) {
                if (e->code != ENOENT)
                        gh_warn("the container's %s; building one from its /etc/ld.so.conf", e->msg);
                return 0;
        }
        if (fstat(fd, &st) == 0 && (uint64_t) st.st_size > GH_LDCACHE_MAX_SIZE) {
                gh_warn("the container's " CACHE " is larger than %u bytes; building one from its /etc/ld.so.conf",
                        GH_LDCACHE_MAX_SIZE);
                return 0;
        }
        mfd = memfd_create("ld.so.cache", MFD_CLOEXEC);
        if (mfd < 0)
                return gh_err(err, errno, "reading the container's " CACHE);
        while ((n = read(fd, buf, sizeof(buf))) > 0) {
                total += (size_t) n;
                if (total > GH_LDCACHE_MAX_SIZE) {
                        gh_warn("the container's " CACHE
                                " is larger than %u bytes; building one from its /etc/ld.so.conf",
                                GH_LDCACHE_MAX_SIZE);
                        return 0;
                }
                if (write(mfd, buf, (size_t) n) != n)
                        return gh_err(err, errno, "reading the container's " CACHE);
        }
        if (n < 0)
                return gh_err(err, errno, "reading the container's " CACHE);
        if (total == 0)
                return 0;
        if (gh_ldcache_open(mfd, "the container's " CACHE, cache, &e) < 0) {
                /* A broken cache in the image is replaced rather than trusted. */
                gh_warn("%s; building one from its /etc/ld.so.conf", e->msg);
                *cache = NULL;
        }
        return 0;
}

/* The plan's ld cache entries: its libraries by SONAME and its development links ("libcuda.so")
 * under their own names (lib/core/plan.c). */
static int injected_entries(const struct gh_plan *plan, struct gh_ldcache_set *news, gh_error_t *err)
{
        for (size_t i = 0; i < plan->nlibs; i++) {
                struct gh_ldcache_entry e = {
                        .key = plan->libs[i].soname,
                        .value = plan->libs[i].path,
                        .flags = plan->libs[i].compat32 ? GH_LDCACHE_FLAGS_I386 : GH_LDCACHE_FLAGS_X86_64,
                };
                if (gh_ldcache_set_add(news, &e, err) < 0)
                        return -1;
        }
        return 0;
}

int gh_ldcache_update(const struct gh_plan *plan, int rootfd, int procfd, gh_error_t *err)
{
        struct gh_ldcache *old = NULL;
        struct gh_ldcache_set set = { 0 }, news = { 0 };
        _cleanup_close_ int etc = -1;
        int r = -1;

        if (read_container_cache(rootfd, procfd, &old, err) < 0)
                return -1;
        if (old != NULL) {
                for (size_t i = 0; i < old->n; i++)
                        if (gh_ldcache_set_add(&set, &old->entries[i], err) < 0)
                                goto out;
        } else if (gh_ldscan(rootfd, procfd, &set, err) < 0) {
                goto out;
        }
        if (injected_entries(plan, &news, err) < 0 || gh_ldcache_set_merge(&set, news.entries, news.n, err) < 0)
                goto out;
        etc = gh_mkdir_p(rootfd, "/etc", 0755, err);
        if (etc < 0)
                goto out;
        r = gh_ldcache_write(etc, "ld.so.cache", set.entries, set.n, err);
out:
        if (r < 0)
                gh_err_wrap(err, "writing the container's " CACHE);
        gh_ldcache_set_free(&set);
        gh_ldcache_set_free(&news);
        if (old)
                gh_ldcache_close(old);
        return r;
}
