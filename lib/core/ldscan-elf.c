/* What ldconfig learns from a library file: cache flags, SONAME and x86 ISA level.  The file
 * comes from an image, so everything is read with pread() at checked offsets (no mapping a
 * running container could truncate under us) and every read is bounded. */
#include <elf.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "ldcache.h"
#include "ldscan.h"

#define MAX_DYNAMIC (1u << 20) /* bytes of the dynamic section looked at */
#define MAX_NOTES (64u << 10)  /* bytes of a PT_GNU_PROPERTY segment looked at */
#define MAX_NAME 4096          /* a SONAME or DT_NEEDED string, NUL included */
#define AOUT_HEADER 32         /* struct exec: files smaller than it or an ELF header are skipped */
#define ZMAGIC 0413
#define QMAGIC 0314
#ifndef GNU_PROPERTY_X86_ISA_1_NEEDED
#define GNU_PROPERTY_X86_ISA_1_NEEDED 0xc0008002
#endif

/* A program interpreter or a needed library that tells the library is for glibc. */
static const char *const glibc_interpreters[] = {
        "/lib/ld-linux-x86-64.so.2",
        "/lib/ld-linux.so.2",
        "/libx32/ld-linux-x32.so.2",
        "/lib64/ld-linux-x86-64.so.2",
};
static const char *const glibc_libs[] = { "libc.so.6", "libm.so.6" };

struct file {
        int fd;
        uint64_t size;
        bool is64;
};

static bool read_at(const struct file *f, void *buf, size_t len, uint64_t off)
{
        if (off > f->size || len > f->size - off)
                return false;
        while (len > 0) {
                ssize_t r = pread(f->fd, buf, len, (off_t) off);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0)
                        return false;
                buf = (char *) buf + r;
                len -= (size_t) r;
                off += (uint64_t) r;
        }
        return true;
}

/* A NUL-terminated string at off (at most MAX_NAME bytes), or NULL. */
static char *read_string(const struct file *f, uint64_t off)
{
        char buf[MAX_NAME];
        size_t len;

        if (off >= f->size)
                return NULL;
        len = f->size - off < sizeof(buf) ? (size_t) (f->size - off) : sizeof(buf);
        if (!read_at(f, buf, len, off) || memchr(buf, '\0', len) == NULL)
                return NULL;
        return strdup(buf);
}

static bool in_list(const char *s, const char *const *list, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (strcmp(s, list[i]) == 0)
                        return true;
        return false;
}

/* Field readers for either class, so one walker serves both. */
static uint64_t field(const uint8_t *p, size_t off32, size_t off64, size_t size32, size_t size64, bool is64)
{
        size_t off = is64 ? off64 : off32, size = is64 ? size64 : size32;
        uint64_t v = 0;
        memcpy(&v, p + off, size); /* little-endian host and file */
        return v;
}
#define PH(p, f, is64)                                                                                                 \
        field(p, offsetof(Elf32_Phdr, f), offsetof(Elf64_Phdr, f), sizeof(((Elf32_Phdr *) 0)->f),                      \
              sizeof(((Elf64_Phdr *) 0)->f), is64)
#define DYN_TAG(p, is64) field(p, 0, 0, 4, 8, is64)
#define DYN_VAL(p, is64) field(p, 4, 8, 4, 8, is64)

/* The ISA level: the highest bit of the x86 ISA_1_NEEDED property. */
static void read_isa_level(const struct file *f, uint64_t off, uint64_t size, unsigned *isa_level)
{
        _cleanup_free_ uint8_t *buf = NULL;
        size_t align = f->is64 ? 8 : 4, at = 0;

        if (size > MAX_NOTES || (buf = malloc(size + 1)) == NULL || !read_at(f, buf, size, off))
                return;
        /* at can pass size by the padding of the last note: compare before subtracting */
        while (at <= size && size - at >= 12) {
                uint32_t namesz, descsz, type;
                memcpy(&namesz, buf + at, 4);
                memcpy(&descsz, buf + at + 4, 4);
                memcpy(&type, buf + at + 8, 4);
                size_t desc = at + 12 + ((namesz + 3u) & ~3u);
                if (namesz > size || descsz > size || desc > size || descsz > size - desc)
                        return;
                if (namesz == 4 && type == NT_GNU_PROPERTY_TYPE_0 && memcmp(buf + at + 12, "GNU", 4) == 0) {
                        uint32_t last = 0;
                        if (descsz < 8 || descsz % align != 0)
                                return;
                        for (size_t p = desc; desc + descsz - p >= 8;) {
                                uint32_t ptype, datasz;
                                memcpy(&ptype, buf + p, 4);
                                memcpy(&datasz, buf + p + 4, 4);
                                p += 8;
                                if (ptype < last || datasz > desc + descsz - p || ptype > GNU_PROPERTY_X86_ISA_1_NEEDED)
                                        return;
                                last = ptype;
                                if (ptype == GNU_PROPERTY_X86_ISA_1_NEEDED) {
                                        uint32_t needed;
                                        if (datasz == 4) {
                                                memcpy(&needed, buf + p, 4);
                                                if (needed != 0)
                                                        *isa_level = 31u - (unsigned) __builtin_clz(needed);
                                        }
                                        return;
                                }
                                p += (datasz + align - 1) & ~(align - 1);
                        }
                        return; /* only the first property note counts */
                }
                at = (desc + descsz + align - 1) & ~(align - 1);
        }
}

/* ldconfig's ELF pass: 1 to skip the file. */
static int identify_elf(const struct file *f, const uint8_t *ehdr, int *flag, char **soname, unsigned *isa_level,
                        gh_error_t *err)
{
        bool is64 = f->is64;
        uint64_t phoff = is64 ? ((const Elf64_Ehdr *) ehdr)->e_phoff : ((const Elf32_Ehdr *) ehdr)->e_phoff;
        unsigned phnum = is64 ? ((const Elf64_Ehdr *) ehdr)->e_phnum : ((const Elf32_Ehdr *) ehdr)->e_phnum;
        size_t phsize = is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr), dynsize = is64 ? 16 : 8;
        _cleanup_free_ uint8_t *ph = malloc((size_t) phnum * phsize + 1);
        _cleanup_free_ uint8_t *dyn = NULL;
        uint64_t dyn_off = 0, dyn_len = 0, strtab = 0;
        bool have_strtab = false;
        size_t ndyn;

        if (ph == NULL)
                return gh_err(err, ENOMEM, "reading a library");
        if (!read_at(f, ph, (size_t) phnum * phsize, phoff))
                return 1;
        *flag = GH_LDCACHE_FLAG_ELF;
        *isa_level = 0;
        for (unsigned i = 0; i < phnum; i++) {
                const uint8_t *p = ph + (size_t) i * phsize;
                uint64_t type = PH(p, p_type, is64), off = PH(p, p_offset, is64);
                if (type == PT_DYNAMIC) {
                        dyn_off = (uint32_t) off; /* ldconfig keeps the offset in 32 bits */
                        dyn_len = PH(p, p_filesz, is64);
                } else if (type == PT_INTERP) {
                        _cleanup_free_ char *interp = read_string(f, off);
                        if (interp != NULL && in_list(interp, glibc_interpreters, GH_ARRAY_SIZE(glibc_interpreters)))
                                *flag = GH_LDCACHE_FLAG_ELF_LIBC6;
                } else if (type == PT_GNU_PROPERTY && PH(p, p_align, is64) == (is64 ? 8u : 4u)) {
                        read_isa_level(f, off, PH(p, p_filesz, is64), isa_level);
                }
        }
        if (dyn_len == 0 || dyn_off >= f->size)
                return 1;
        ndyn = (size_t) ((f->size - dyn_off < MAX_DYNAMIC ? f->size - dyn_off : MAX_DYNAMIC) / dynsize);
        if ((dyn = malloc(ndyn * dynsize + 1)) == NULL)
                return gh_err(err, ENOMEM, "reading a library");
        if (!read_at(f, dyn, ndyn * dynsize, dyn_off))
                return 1;
        /* The string table's file offset, through the PT_LOAD segment that holds its address. */
        for (size_t i = 0; i < ndyn && DYN_TAG(dyn + i * dynsize, is64) != DT_NULL && !have_strtab; i++) {
                uint64_t val = DYN_VAL(dyn + i * dynsize, is64), loadoff = 0;
                if (DYN_TAG(dyn + i * dynsize, is64) != DT_STRTAB)
                        continue;
                for (unsigned j = 0; j < phnum; j++) {
                        const uint8_t *p = ph + (size_t) j * phsize;
                        uint64_t vaddr = PH(p, p_vaddr, is64);
                        if (PH(p, p_type, is64) == PT_LOAD && val >= vaddr && val - vaddr < PH(p, p_filesz, is64)) {
                                loadoff = vaddr - PH(p, p_offset, is64);
                                break;
                        }
                }
                strtab = val - loadoff;
                have_strtab = true;
        }
        if (!have_strtab)
                return 1;
        for (size_t i = 0; i < ndyn && DYN_TAG(dyn + i * dynsize, is64) != DT_NULL; i++) {
                uint64_t tag = DYN_TAG(dyn + i * dynsize, is64), val = DYN_VAL(dyn + i * dynsize, is64);
                char *name;
                if (tag != DT_NEEDED && tag != DT_SONAME)
                        continue;
                if ((name = read_string(f, strtab + val)) == NULL)
                        return 1;
                if (tag == DT_NEEDED) {
                        if (*flag == GH_LDCACHE_FLAG_ELF && in_list(name, glibc_libs, GH_ARRAY_SIZE(glibc_libs)))
                                *flag = GH_LDCACHE_FLAG_ELF_LIBC6;
                        free(name);
                } else {
                        free(*soname);
                        *soname = name;
                }
                if (*soname != NULL && *flag != GH_LDCACHE_FLAG_ELF)
                        break;
        }
        return 0;
}

/* An a.out library has no SONAME: its name up to the major version stands for one. */
static char *aout_soname(const char *name)
{
        char *s = strdup(name), *major, *dot;
        if (s != NULL && (major = strstr(s, ".so.")) != NULL && (dot = strchr(major + 4, '.')) != NULL)
                *dot = '\0';
        return s;
}

int gh_ldscan_identify(int fd, const char *name, int *flag, char **soname, unsigned *isa_level, gh_error_t *err)
{
        uint8_t ehdr[sizeof(Elf64_Ehdr)];
        struct stat st;
        struct file f = { .fd = fd };
        int file_flag = -1, r;
        uint16_t type, machine;
        uint32_t aout;

        *soname = NULL;
        *isa_level = 0;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t) st.st_size < sizeof(ehdr))
                return 1;
        f.size = (uint64_t) st.st_size;
        if (!read_at(&f, ehdr, sizeof(ehdr), 0))
                return 1;
        memcpy(&aout, ehdr, 4);
        if ((aout & 0xffff) == ZMAGIC || (aout & 0xffff) == QMAGIC) {
                *flag = GH_LDCACHE_FLAG_LIBC4;
                *soname = aout_soname(name);
                return *soname ? 0 : gh_err(err, ENOMEM, "reading a library");
        }
        if (memcmp(ehdr, ELFMAG, SELFMAG) != 0)
                return 1;
        memcpy(&type, ehdr + offsetof(Elf64_Ehdr, e_type), 2);
        memcpy(&machine, ehdr + offsetof(Elf64_Ehdr, e_machine), 2);
        if (type != ET_DYN)
                return 1;
        if (machine == EM_X86_64)
                file_flag = ehdr[EI_CLASS] == ELFCLASS64 ? GH_LDCACHE_FLAGS_X86_64
                                                         : (GH_LDCACHE_FLAG_X8664_LIBX32 | GH_LDCACHE_FLAG_ELF_LIBC6);
        else if (machine != EM_386 || ehdr[EI_CLASS] != ELFCLASS32)
                return 1;
        if (ehdr[EI_CLASS] != ELFCLASS32 && ehdr[EI_CLASS] != ELFCLASS64)
                return 1;
        f.is64 = ehdr[EI_CLASS] == ELFCLASS64;
        r = identify_elf(&f, ehdr, flag, soname, isa_level, err);
        /* An empty DT_SONAME would be an empty cache key (ldconfig writes one; ld.so can never look
         * it up): such a file is not indexed. */
        if (r == 0 && *soname != NULL && (*soname)[0] == '\0')
                r = 1;
        if (r == 0 && file_flag != -1)
                *flag = file_flag;
        if (r == 0 && *soname == NULL && (*soname = strdup(name)) == NULL)
                return gh_err(err, ENOMEM, "reading a library");
        if (r != 0) {
                free(*soname);
                *soname = NULL;
        }
        return r;
}
