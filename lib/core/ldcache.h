/* glibc's ld.so.cache: a bounds-checked reader and a writer of the "glibc-ld.so.cache1.1" format.
 *
 * The reader understands the new format alone and the old "ld.so-1.7.0" header with the new one
 * hidden behind it (ldconfig -c compat); a file with only the old format is read too.  The writer
 * produces the new format, entries sorted the way ld.so's binary search expects, with a generator
 * and (when used) a glibc-hwcaps extension section, so `ldconfig -p -C FILE` and the loader read
 * it like one written by ldconfig.
 *
 * A cache is read from an fd the caller opened with the in-root resolver; the file is mapped
 * MAP_PRIVATE.  The caller must not hand in a file that someone else can truncate while it is
 * mapped (a cache inside an image that no container process can reach yet is fine). */
#ifndef GH_LDCACHE_H
#define GH_LDCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* Entry flags (glibc's FLAG_*): the type in the low byte, the architecture in the next. */
#define GH_LDCACHE_FLAG_LIBC4 0x0000 /* a.out */
#define GH_LDCACHE_FLAG_ELF 0x0001   /* ELF, libc unknown: ldconfig's mark for a library without libc */
#define GH_LDCACHE_FLAG_ELF_LIBC5 0x0002
#define GH_LDCACHE_FLAG_ELF_LIBC6 0x0003
#define GH_LDCACHE_FLAG_X8664_LIB64 0x0300
#define GH_LDCACHE_FLAG_X8664_LIBX32 0x0800
#define GH_LDCACHE_FLAGS_X86_64 (GH_LDCACHE_FLAG_ELF_LIBC6 | GH_LDCACHE_FLAG_X8664_LIB64)
#define GH_LDCACHE_FLAGS_I386 GH_LDCACHE_FLAG_ELF_LIBC6 /* i386 ld.so also takes GH_LDCACHE_FLAG_ELF */

/* Refuse larger files: real caches are well under a megabyte. */
#define GH_LDCACHE_MAX_SIZE (64u << 20)

struct gh_ldcache_entry {
        const char *key;    /* library name as ld.so looks it up, normally the SONAME */
        const char *value;  /* path of the library */
        int32_t flags;      /* GH_LDCACHE_FLAGS_X86_64, GH_LDCACHE_FLAGS_I386, ... */
        uint64_t hwcap;     /* legacy hwcap bits; for glibc-hwcaps entries the ISA level bits only */
        const char *hwcaps; /* glibc-hwcaps subdirectory ("x86-64-v3") or NULL */
};

/* A mapped cache.  Entries (in file order) point into the mapping. */
struct gh_ldcache {
        void *map;
        size_t size;
        char *name; /* for messages */
        struct gh_ldcache_entry *entries;
        size_t n;
};

/* Maps and validates the cache open on fd (the fd is not kept).  name is used in messages.  Every
 * offset and string is checked; a truncated or corrupt file is an error naming it. */
int gh_ldcache_open(int fd, const char *name, struct gh_ldcache **out, gh_error_t *err);
void gh_ldcache_close(struct gh_ldcache *cache);

/* glibc's _dl_cache_libcmp order: digit runs compare as numbers. */
int gh_ldcache_libcmp(const char *a, const char *b);

/* An owned, growable entry list: what gets written back. */
struct gh_ldcache_set {
        struct gh_ldcache_entry *entries; /* strings owned by the set */
        size_t n, cap;
};

/* Appends a copy of e (an identical entry already present is not added twice). */
int gh_ldcache_set_add(struct gh_ldcache_set *set, const struct gh_ldcache_entry *e, gh_error_t *err);

/* Adds n new entries; each replaces every existing entry with the same key and flags, so the
 * injected library wins over an image's own one of that name. */
int gh_ldcache_set_merge(struct gh_ldcache_set *set, const struct gh_ldcache_entry *news, size_t n, gh_error_t *err);

void gh_ldcache_set_free(struct gh_ldcache_set *set);

/* Writes entries (any order) as a new-format cache named `name` in the directory dirfd, through
 * the one writer (gh_write_file_at, GH_WRITE_ATOMIC): mode 0644, a temporary file renamed over
 * name (a symlink at name is replaced, never followed); no fsync, it is rebuilt at every start. */
int gh_ldcache_write(int dirfd, const char *name, const struct gh_ldcache_entry *entries, size_t n, gh_error_t *err);

struct gh_plan;

/* The container's /etc/ld.so.cache after an injection (lib/core/ldcache-merge.c; rules in
 * docs/ldcache.md): the image's own cache when it is usable, else the entries its ld.so.conf calls
 * for (lib/core/ldscan.c); then the plan's libraries and their development links ("libcuda.so"), each
 * replacing the image's entries of the same name and type.  Runs inside the container's mount
 * namespace with GH_PHASE_LDCACHE; procfd: a procfs of our pid namespace (or AT_FDCWD). */
int gh_ldcache_update(const struct gh_plan *plan, int rootfd, int procfd, gh_error_t *err);

#endif
