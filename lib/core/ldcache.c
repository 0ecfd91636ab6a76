#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "file.h"
#include "ldcache.h"
#include "log.h"

/* On-disk layout (glibc elf/dl-cache.h), all little-endian on x86:
 *   old:  "ld.so-1.7.0" magic[11], pad[1], nlibs u32, then nlibs x {flags i32, key u32, value u32};
 *         strings are relative to the end of that array.
 *   new:  "glibc-ld.so.cache" "1.1" magic[20], nlibs u32, len_strings u32, flags u8, pad[3],
 *         extension_offset u32, unused u32[3]  (48 bytes), then nlibs x {flags i32, key u32,
 *         value u32, osversion u32, hwcap u64} (24 bytes); strings are relative to this header.
 *   With both, the new header follows the old entries, aligned to 8.
 *   The extension directory (at extension_offset, relative to the file) is {magic u32, count u32}
 *   then count x {tag u32, flags u32, offset u32, size u32}. */
#define OLD_MAGIC "ld.so-1.7.0"
#define NEW_MAGIC "glibc-ld.so.cache1.1"
#define OLD_HEADER 16u
#define OLD_ENTRY 12u
#define NEW_HEADER 48u
#define NEW_ENTRY 24u
#define ENDIAN_MASK 3u
#define ENDIAN_LITTLE 2u
#define EXT_MAGIC ((uint32_t) -358342284)
#define EXT_TAG_GENERATOR 0u
#define EXT_TAG_HWCAPS 1u
#define HWCAP_EXTENSION (1ull << 62)
#define HWCAP_ISA_LEVEL_MASK (0x3ffull << 32)

static uint32_t rd32(const uint8_t *p)
{
        uint32_t v;
        memcpy(&v, p, sizeof(v));
        return v;
}

static uint64_t rd64(const uint8_t *p)
{
        uint64_t v;
        memcpy(&v, p, sizeof(v));
        return v;
}

static bool is_hwcaps_extension(uint64_t hwcap)
{
        return ((hwcap >> 32) & ~(HWCAP_ISA_LEVEL_MASK >> 32)) == (HWCAP_EXTENSION >> 32);
}

/* A NUL-terminated string at base+off, entirely inside the file, or NULL. */
static const char *string_at(const struct gh_ldcache *c, size_t base, uint32_t off)
{
        const char *s;
        if (base > c->size || off >= c->size - base)
                return NULL;
        s = (const char *) c->map + base + off;
        if (memchr(s, '\0', c->size - base - off) == NULL)
                return NULL;
        return s;
}

/* The glibc-hwcaps section: an array of string-table indices.  Returns the count (0 if absent). */
static int load_hwcaps_section(const struct gh_ldcache *c, size_t base, const uint8_t **array, uint32_t *count,
                               gh_error_t *err)
{
        const uint8_t *p = c->map;
        uint32_t ext_off = rd32(p + base + 32), n;

        *array = NULL;
        *count = 0;
        if (ext_off == 0)
                return 0;
        if (ext_off % 4 != 0 || ext_off > c->size || c->size - ext_off < 8 || rd32(p + ext_off) != EXT_MAGIC)
                return gh_err(err, 0, "malformed extension directory");
        n = rd32(p + ext_off + 4);
        if (n > (c->size - ext_off - 8) / 16)
                return gh_err(err, 0, "extension directory runs past the end");
        for (uint32_t i = 0; i < n; i++) {
                const uint8_t *s = p + ext_off + 8 + (size_t) i * 16;
                uint32_t off = rd32(s + 8), size = rd32(s + 12);
                if (off > c->size || size > c->size - off)
                        return gh_err(err, 0, "extension section %u runs past the end", i);
                if (rd32(s) == EXT_TAG_HWCAPS && size > 0 && off % 4 == 0 && size % 4 == 0) {
                        *array = p + off;
                        *count = size / 4;
                }
        }
        return 0;
}

static int parse_new(struct gh_ldcache *c, size_t base, gh_error_t *err)
{
        const uint8_t *p = c->map;
        const uint8_t *hwcaps_array;
        uint32_t nlibs, hwcaps_count;

        if (c->size - base < NEW_HEADER)
                return gh_err(err, 0, "truncated header");
        if ((p[base + 28] & ENDIAN_MASK) != 0 && (p[base + 28] & ENDIAN_MASK) != ENDIAN_LITTLE)
                return gh_err(err, 0, "wrong byte order");
        nlibs = rd32(p + base + 20);
        if (nlibs > (c->size - base - NEW_HEADER) / NEW_ENTRY)
                return gh_err(err, 0, "%u entries do not fit in %zu bytes (truncated?)", nlibs, c->size);
        if (load_hwcaps_section(c, base, &hwcaps_array, &hwcaps_count, err) < 0)
                return -1;
        c->entries = calloc(nlibs ? nlibs : 1, sizeof(*c->entries));
        if (c->entries == NULL)
                return gh_err(err, ENOMEM, "reading entries");
        for (uint32_t i = 0; i < nlibs; i++) {
                const uint8_t *e = p + base + NEW_HEADER + (size_t) i * NEW_ENTRY;
                struct gh_ldcache_entry *out = &c->entries[c->n];
                uint64_t hwcap = rd64(e + 16);

                out->flags = (int32_t) rd32(e);
                out->key = string_at(c, base, rd32(e + 4));
                out->value = string_at(c, base, rd32(e + 8));
                if (out->key == NULL || out->value == NULL)
                        return gh_err(err, 0, "entry %u points outside the file", i);
                out->hwcap = hwcap;
                if (is_hwcaps_extension(hwcap)) {
                        uint32_t idx = (uint32_t) hwcap;
                        if (idx >= hwcaps_count ||
                            (out->hwcaps = string_at(c, base, rd32(hwcaps_array + (size_t) idx * 4))) == NULL)
                                return gh_err(err, 0, "entry %u names a missing glibc-hwcaps subdirectory", i);
                        out->hwcap = hwcap & HWCAP_ISA_LEVEL_MASK;
                }
                c->n++;
        }
        return 0;
}

static int parse_old(struct gh_ldcache *c, uint32_t nlibs, gh_error_t *err)
{
        const uint8_t *p = c->map;
        size_t strings = OLD_HEADER + (size_t) nlibs * OLD_ENTRY;

        c->entries = calloc(nlibs ? nlibs : 1, sizeof(*c->entries));
        if (c->entries == NULL)
                return gh_err(err, ENOMEM, "reading entries");
        for (uint32_t i = 0; i < nlibs; i++) {
                const uint8_t *e = p + OLD_HEADER + (size_t) i * OLD_ENTRY;
                struct gh_ldcache_entry *out = &c->entries[c->n++];
                out->flags = (int32_t) rd32(e);
                out->key = string_at(c, strings, rd32(e + 4));
                out->value = string_at(c, strings, rd32(e + 8));
                if (out->key == NULL || out->value == NULL)
                        return gh_err(err, 0, "entry %u points outside the file", i);
        }
        return 0;
}

static int parse(struct gh_ldcache *c, gh_error_t *err)
{
        const uint8_t *p = c->map;

        if (c->size >= sizeof(NEW_MAGIC) - 1 && memcmp(p, NEW_MAGIC, sizeof(NEW_MAGIC) - 1) == 0)
                return parse_new(c, 0, err);
        if (c->size >= OLD_HEADER && memcmp(p, OLD_MAGIC, sizeof(OLD_MAGIC) - 1) == 0) {
                uint32_t nlibs = rd32(p + 12);
                size_t new_off;
                if (nlibs > (c->size - OLD_HEADER) / OLD_ENTRY)
                        return gh_err(err, 0, "%u entries do not fit in %zu bytes (truncated?)", nlibs, c->size);
                new_off = (OLD_HEADER + (size_t) nlibs * OLD_ENTRY + 7) & ~(size_t) 7;
                if (new_off <= c->size && c->size - new_off >= sizeof(NEW_MAGIC) - 1 &&
                    memcmp(p + new_off, NEW_MAGIC, sizeof(NEW_MAGIC) - 1) == 0)
                        return parse_new(c, new_off, err);
                return parse_old(c, nlibs, err);
        }
        return gh_err(err, 0, "not an ld.so.cache (unknown magic)");
}

void gh_ldcache_close(struct gh_ldcache *cache)
{
        if (cache == NULL)
                return;
        if (cache->map != NULL && cache->map != MAP_FAILED)
                munmap(cache->map, cache->size);
        free(cache->entries);
        free(cache->name);
        free(cache);
}

int gh_ldcache_open(int fd, const char *name, struct gh_ldcache **out, gh_error_t *err)
{
        struct gh_ldcache *c;
        struct stat st;

        if (fstat(fd, &st) < 0)
                return gh_err(err, errno, "reading ld.so cache %s", name);
        if (!S_ISREG(st.st_mode))
                return gh_err(err, 0, "ld.so cache %s is not a regular file; regenerate it with ldconfig", name);
        if (st.st_size == 0 || (uint64_t) st.st_size > GH_LDCACHE_MAX_SIZE)
                return gh_err(err, 0,
                              "ld.so cache %s has an implausible size (%lld bytes); regenerate it with ldconfig", name,
                              (long long) st.st_size);
        c = calloc(1, sizeof(*c));
        if (c == NULL || (c->name = strdup(name)) == NULL) {
                gh_ldcache_close(c);
                return gh_err(err, ENOMEM, "reading ld.so cache %s", name);
        }
        c->size = (size_t) st.st_size;
        c->map = mmap(NULL, c->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (c->map == MAP_FAILED) {
                int e = errno;
                c->map = NULL;
                gh_ldcache_close(c);
                return gh_err(err, e, "mapping ld.so cache %s", name);
        }
        if (parse(c, err) < 0) {
                gh_ldcache_close(c);
                return gh_err_wrap(err, "ld.so cache %s is corrupt (regenerate it with ldconfig)", name);
        }
        gh_debug("ld.so cache %s: %zu entries", name, c->n);
        *out = c;
        return 0;
}

int gh_ldcache_libcmp(const char *a, const char *b)
{
        while (*a != '\0') {
                bool da = *a >= '0' && *a <= '9', db = *b >= '0' && *b <= '9';
                if (da && db) {
                        /* Numbers that overflow compare as equal prefixes in glibc too: mirror the
                         * int arithmetic, with wrap-around made well defined. */
                        unsigned va = 0, vb = 0;
                        while (*a >= '0' && *a <= '9')
                                va = va * 10 + (unsigned) (*a++ - '0');
                        while (*b >= '0' && *b <= '9')
                                vb = vb * 10 + (unsigned) (*b++ - '0');
                        if (va != vb)
                                return (int) (va - vb);
                } else if (da) {
                        return 1;
                } else if (db) {
                        return -1;
                } else if (*a != *b) {
                        return *a - *b;
                } else {
                        a++;
                        b++;
                }
        }
        return *a - *b;
}

static bool str_eq(const char *a, const char *b) { return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0); }

static void entry_free(struct gh_ldcache_entry *e)
{
        free((char *) e->key);
        free((char *) e->value);
        free((char *) e->hwcaps);
}

void gh_ldcache_set_free(struct gh_ldcache_set *set)
{
        for (size_t i = 0; i < set->n; i++)
                entry_free(&set->entries[i]);
        free(set->entries);
        *set = (struct gh_ldcache_set) { 0 };
}

int gh_ldcache_set_add(struct gh_ldcache_set *set, const struct gh_ldcache_entry *e, gh_error_t *err)
{
        struct gh_ldcache_entry copy = { .flags = e->flags, .hwcap = e->hwcap };

        if (e->key == NULL || e->value == NULL || e->key[0] == '\0' || e->value[0] == '\0')
                return gh_err(err, EINVAL, "adding an ld.so cache entry without a name or path");
        for (size_t i = 0; i < set->n; i++) {
                const struct gh_ldcache_entry *o = &set->entries[i];
                if (o->flags == e->flags && o->hwcap == e->hwcap && str_eq(o->key, e->key) &&
                    str_eq(o->value, e->value) && str_eq(o->hwcaps, e->hwcaps))
                        return 0;
        }
        if (set->n == set->cap) {
                size_t cap = set->cap ? set->cap * 2 : 64;
                struct gh_ldcache_entry *v = reallocarray(set->entries, cap, sizeof(*v));
                if (v == NULL)
                        return gh_err(err, ENOMEM, "adding an ld.so cache entry");
                set->entries = v;
                set->cap = cap;
        }
        copy.key = strdup(e->key);
        copy.value = strdup(e->value);
        copy.hwcaps = e->hwcaps ? strdup(e->hwcaps) : NULL;
        if (copy.key == NULL || copy.value == NULL || (e->hwcaps && copy.hwcaps == NULL)) {
                entry_free(&copy);
                return gh_err(err, ENOMEM, "adding an ld.so cache entry");
        }
        set->entries[set->n++] = copy;
        return 0;
}

int gh_ldcache_set_merge(struct gh_ldcache_set *set, const struct gh_ldcache_entry *news, size_t n, gh_error_t *err)
{
        size_t keep = 0;

        for (size_t i = 0; i < set->n; i++) {
                bool replaced = false;
                for (size_t j = 0; j < n && !replaced; j++)
                        replaced = set->entries[i].flags == news[j].flags && str_eq(set->entries[i].key, news[j].key);
                if (replaced) {
                        gh_debug("ld.so cache: %s (flags %#x) -> %s replaced", set->entries[i].key,
                                 (unsigned) set->entries[i].flags, set->entries[i].value);
                        entry_free(&set->entries[i]);
                } else {
                        set->entries[keep++] = set->entries[i];
                }
        }
        set->n = keep;
        for (size_t j = 0; j < n; j++)
                if (gh_ldcache_set_add(set, &news[j], err) < 0)
                        return -1;
        return 0;
}

static int popcount64(uint64_t v) { return __builtin_popcountll(v); }

/* ldconfig's order (elf/cache.c compare()): names descending by libcmp, then flags descending,
 * glibc-hwcaps entries before plain ones (ld.so stops at the first plain one), hwcaps names
 * ascending, then the most specific legacy hwcap first.  Remaining ties keep the input order (ldconfig
 * keeps the order it found them in, and ld.so takes the first), so a cache rewrites unchanged. */
static int entry_order(const void *pa, const void *pb)
{
        const struct gh_ldcache_entry *a = *(const struct gh_ldcache_entry *const *) pa;
        const struct gh_ldcache_entry *b = *(const struct gh_ldcache_entry *const *) pb;
        int r = gh_ldcache_libcmp(b->key, a->key);

        if (r != 0)
                return r;
        if (a->flags != b->flags)
                return a->flags > b->flags ? -1 : 1;
        if ((a->hwcaps != NULL) != (b->hwcaps != NULL))
                return a->hwcaps != NULL ? -1 : 1;
        if (a->hwcaps != NULL && (r = strcmp(a->hwcaps, b->hwcaps)) != 0)
                return r;
        if (a->hwcaps == NULL) {
                if (popcount64(a->hwcap) != popcount64(b->hwcap))
                        return popcount64(a->hwcap) > popcount64(b->hwcap) ? -1 : 1;
                if (a->hwcap != b->hwcap)
                        return a->hwcap > b->hwcap ? -1 : 1;
        }
        return a < b ? -1 : a > b;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *) a, *(const char *const *) b); }

struct buf {
        uint8_t *p;
        size_t len, cap;
};

static int buf_put(struct buf *b, const void *data, size_t len)
{
        if (len > GH_LDCACHE_MAX_SIZE - b->len)
                return -1;
        if (b->len + len > b->cap) {
                size_t cap = b->cap ? b->cap : 4096;
                uint8_t *p;
                while (cap < b->len + len)
                        cap *= 2;
                p = realloc(b->p, cap);
                if (p == NULL)
                        return -1;
                b->p = p;
                b->cap = cap;
        }
        if (data != NULL)
                memcpy(b->p + b->len, data, len);
        else
                memset(b->p + b->len, 0, len);
        b->len += len;
        return 0;
}

static int buf_put32(struct buf *b, uint32_t v) { return buf_put(b, &v, sizeof(v)); }

static void buf_set32(struct buf *b, size_t off, uint32_t v) { memcpy(b->p + off, &v, sizeof(v)); }

/* Appends s to the string table and returns its offset from the header (the file start). */
static int put_string(struct buf *b, const char *s, uint32_t *off)
{
        *off = (uint32_t) b->len;
        return buf_put(b, s, strlen(s) + 1);
}

/* Builds the whole file in memory: header, sorted entries, strings, extension directory
 * (generator, then glibc-hwcaps when an entry uses it), hwcaps index array, generator text. */
static int build(const struct gh_ldcache_entry *entries, size_t n, struct buf *b, gh_error_t *err)
{
        static const char generator[] = "gpu-hook ld.so.cache writer";
        _cleanup_free_ const struct gh_ldcache_entry **sorted = NULL;
        _cleanup_free_ const char **dirs = NULL;
        _cleanup_free_ uint32_t *dir_off = NULL;
        size_t ndirs = 0, strings_start, ext_off;
        uint8_t header[NEW_HEADER] = { 0 };

        if (n > (GH_LDCACHE_MAX_SIZE - NEW_HEADER) / NEW_ENTRY)
                return gh_err(err, E2BIG, "%zu entries", n);
        sorted = calloc(n ? n : 1, sizeof(*sorted));
        dirs = calloc(n ? n : 1, sizeof(*dirs));
        dir_off = calloc(n ? n : 1, sizeof(*dir_off));
        if (sorted == NULL || dirs == NULL || dir_off == NULL)
                return gh_err(err, ENOMEM, "sorting entries");
        for (size_t i = 0; i < n; i++) {
                if (entries[i].key == NULL || entries[i].value == NULL)
                        return gh_err(err, EINVAL, "entry %zu has no name or path", i);
                sorted[i] = &entries[i];
                if (entries[i].hwcaps != NULL && !bsearch(&entries[i].hwcaps, dirs, ndirs, sizeof(*dirs), cmp_str)) {
                        dirs[ndirs++] = entries[i].hwcaps;
                        qsort(dirs, ndirs, sizeof(*dirs), cmp_str);
                }
        }
        qsort(sorted, n, sizeof(*sorted), entry_order);

        memcpy(header, NEW_MAGIC, sizeof(NEW_MAGIC) - 1);
        memcpy(header + 20, &(uint32_t) { (uint32_t) n }, 4);
        header[28] = ENDIAN_LITTLE;
        if (buf_put(b, header, sizeof(header)) < 0 || buf_put(b, NULL, n * NEW_ENTRY) < 0)
                return gh_err(err, ENOMEM, "building the cache");
        strings_start = b->len;
        for (size_t i = 0; i < n; i++) {
                const struct gh_ldcache_entry *e = sorted[i];
                size_t at = NEW_HEADER + i * NEW_ENTRY;
                uint32_t key, value;
                uint64_t hwcap = e->hwcap;

                if (put_string(b, e->key, &key) < 0 || put_string(b, e->value, &value) < 0)
                        return gh_err(err, E2BIG, "building the cache");
                if (e->hwcaps != NULL) {
                        const char **d = bsearch(&e->hwcaps, dirs, ndirs, sizeof(*dirs), cmp_str);
                        hwcap = HWCAP_EXTENSION | (e->hwcap & HWCAP_ISA_LEVEL_MASK) | (uint32_t) (d - dirs);
                }
                buf_set32(b, at, (uint32_t) e->flags);
                buf_set32(b, at + 4, key);
                buf_set32(b, at + 8, value);
                memcpy(b->p + at + 16, &hwcap, sizeof(hwcap));
        }
        for (size_t i = 0; i < ndirs; i++)
                if (put_string(b, dirs[i], &dir_off[i]) < 0)
                        return gh_err(err, E2BIG, "building the cache");
        buf_set32(b, 24, (uint32_t) (b->len - strings_start));

        if (buf_put(b, NULL, (4 - b->len % 4) % 4) < 0)
                return gh_err(err, E2BIG, "building the cache");
        ext_off = b->len;
        {
                uint32_t nsec = ndirs ? 2 : 1;
                size_t hw_at = ext_off + 8 + nsec * 16, gen_at = hw_at + ndirs * 4;
                if (buf_put32(b, EXT_MAGIC) < 0 || buf_put32(b, nsec) < 0 || buf_put32(b, EXT_TAG_GENERATOR) < 0 ||
                    buf_put32(b, 0) < 0 || buf_put32(b, (uint32_t) gen_at) < 0 ||
                    buf_put32(b, sizeof(generator) - 1) < 0)
                        return gh_err(err, E2BIG, "building the cache");
                if (ndirs && (buf_put32(b, EXT_TAG_HWCAPS) < 0 || buf_put32(b, 0) < 0 ||
                              buf_put32(b, (uint32_t) hw_at) < 0 || buf_put32(b, (uint32_t) (ndirs * 4)) < 0))
                        return gh_err(err, E2BIG, "building the cache");
                for (size_t i = 0; i < ndirs; i++)
                        if (buf_put32(b, dir_off[i]) < 0)
                                return gh_err(err, E2BIG, "building the cache");
                if (buf_put(b, generator, sizeof(generator) - 1) < 0)
                        return gh_err(err, E2BIG, "building the cache");
        }
        buf_set32(b, 32, (uint32_t) ext_off);
        return 0;
}

int gh_ldcache_write(int dirfd, const char *name, const struct gh_ldcache_entry *entries, size_t n, gh_error_t *err)
{
        struct buf b = { 0 };
        int r;

        /* Atomic: the container's programs may be starting.  No fsync: the file is rebuilt at every
         * container start.  dirfd is the in-root resolver's: name is a bare file name. */
        if (build(entries, n, &b, err) < 0) {
                free(b.p);
                return gh_err_wrap(err, "writing ld.so cache %s", name);
        }
        r = gh_write_file_at(dirfd, name, b.p, b.len, 0644, GH_WRITE_ATOMIC, NULL, err);
        free(b.p);
        return r;
}
