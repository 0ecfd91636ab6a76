/* ld.so.cache reader (an image's /etc/ld.so.cache is attacker-written).  Besides "no crash": a
 * refusal names the file; an accepted cache has only in-bounds, NUL-terminated strings; and a
 * small accepted cache written back by gh_ldcache_write reads back with the same entries. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cleanup.h"
#include "ldcache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NAME "fuzz-input.cache"

static char scratch_path[] = "/tmp/fuzz-ldcache.XXXXXX";

/* The scratch directory goes when the run ends: a fuzz run leaves nothing in /tmp. */
static void scratch_remove(void) { rmdir(scratch_path); }

static int scratch_dir(void)
{
        static int fd = -1;

        if (fd < 0 && mkdtemp(scratch_path) != NULL) {
                atexit(scratch_remove);
                fd = open(scratch_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        }
        return fd;
}

static bool same_entry(const struct gh_ldcache_entry *a, const struct gh_ldcache_entry *b)
{
        return a->flags == b->flags && a->hwcap == b->hwcap && strcmp(a->key, b->key) == 0 &&
               strcmp(a->value, b->value) == 0 &&
               (a->hwcaps ? b->hwcaps && strcmp(a->hwcaps, b->hwcaps) == 0 : !b->hwcaps);
}

/* Every entry of a must be in b (the writer reorders, so search). */
static bool contains_all(const struct gh_ldcache *a, const struct gh_ldcache *b)
{
        for (size_t i = 0; i < a->n; i++) {
                bool found = false;
                for (size_t j = 0; j < b->n && !found; j++)
                        found = same_entry(&a->entries[i], &b->entries[j]);
                if (!found)
                        return false;
        }
        return true;
}

static void roundtrip(const struct gh_ldcache *c)
{
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_close_ int fd = -1;
        struct gh_ldcache *back = NULL;
        int dir = scratch_dir();

        size_t total = 0;

        if (dir < 0 || c->n > 64)
                return;
        /* Entries may share one long string; the rewrite stores each copy. */
        for (size_t i = 0; i < c->n; i++)
                total += strlen(c->entries[i].key) + strlen(c->entries[i].value);
        if (total > (8u << 20))
                return;
        if (gh_ldcache_write(dir, "rewritten", c->entries, c->n, &err) < 0)
                abort();
        fd = openat(dir, "rewritten", O_RDONLY | O_CLOEXEC);
        if (fd < 0 || gh_ldcache_open(fd, "rewritten", &back, &err) < 0)
                abort(); /* what we write, we must read */
        if (back->n != c->n || !contains_all(c, back) || !contains_all(back, c))
                abort();
        gh_ldcache_close(back);
        unlinkat(dir, "rewritten", 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_close_ int fd = memfd_create(NAME, MFD_CLOEXEC);
        struct gh_ldcache *c = NULL;

        if (fd < 0 || size > (1u << 20))
                return 0;
        if (size > 0 && write(fd, data, size) != (ssize_t) size)
                return 0;
        if (gh_ldcache_open(fd, NAME, &c, &err) < 0) {
                if (err == NULL || err->msg == NULL || strstr(err->msg, NAME) == NULL)
                        abort(); /* a refusal must name the file */
                return 0;
        }
        for (size_t i = 0; i < c->n; i++) {
                const struct gh_ldcache_entry *e = &c->entries[i];
                const char *lo = c->map, *hi = (const char *) c->map + c->size;
                if (e->key < lo || e->key >= hi || e->value < lo || e->value >= hi ||
                    memchr(e->key, '\0', (size_t) (hi - e->key)) == NULL ||
                    memchr(e->value, '\0', (size_t) (hi - e->value)) == NULL)
                        abort();
        }
        roundtrip(c);
        gh_ldcache_close(c);
        return 0;
}
