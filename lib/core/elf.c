#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "elf.h"

#if defined(__x86_64__)
#define HOST_CLASS ELFCLASS64
#define HOST_MACHINE EM_X86_64
#define COMPAT_CLASS ELFCLASS32
#define COMPAT_MACHINE EM_386
#elif defined(__aarch64__)
#define HOST_CLASS ELFCLASS64
#define HOST_MACHINE EM_AARCH64
#define COMPAT_CLASS ELFCLASSNONE
#define COMPAT_MACHINE EM_NONE
#elif defined(__i386__)
#define HOST_CLASS ELFCLASS32
#define HOST_MACHINE EM_386
#define COMPAT_CLASS ELFCLASSNONE
#define COMPAT_MACHINE EM_NONE
#else
#error "unsupported architecture"
#endif

static void gh_elf_endp(Elf **e)
{
        if (*e != NULL)
                elf_end(*e);
}
#define _cleanup_elf_ _cleanup_(gh_elf_endp)

/* The one place libelf's errors become text. */
static int elf_fail(gh_error_t *err, const char *name, const char *what)
{
        return gh_err(err, 0, "%s: %s: %s", name, what, elf_errmsg(-1));
}

static const char *machine_name(int machine)
{
        switch (machine) {
        case EM_X86_64: return "x86-64";
        case EM_386: return "i386";
        case EM_AARCH64: return "aarch64";
        case EM_ARM: return "arm";
        case EM_PPC64: return "ppc64";
        default: return "another machine";
        }
}

/* Starts libelf on fd after ruling out scripts and non-ELF files with a plain read, so the
 * message can say what the file is. */
static int elf_open(int fd, const char *name, Elf **out, GElf_Ehdr *ehdr, gh_error_t *err)
{
        unsigned char magic[SELFMAG];
        ssize_t n = pread(fd, magic, sizeof(magic), 0);
        Elf *e;

        if (n < 0)
                return gh_err(err, errno, "reading %s", name);
        if (n >= 2 && magic[0] == '#' && magic[1] == '!')
                return gh_err(err, 0, "%s is a script, not an ELF file", name);
        if (n < (ssize_t) SELFMAG || memcmp(magic, ELFMAG, SELFMAG) != 0)
                return gh_err(err, 0, "%s is not an ELF file", name);
        if (elf_version(EV_CURRENT) == EV_NONE)
                return elf_fail(err, name, "initialising libelf");
        /* ELF_C_READ reads on demand with pread: no mapping that a truncation could turn into SIGBUS. */
        e = elf_begin(fd, ELF_C_READ, NULL);
        if (e == NULL)
                return elf_fail(err, name, "reading ELF");
        if (elf_kind(e) != ELF_K_ELF || gelf_getehdr(e, ehdr) == NULL) {
                int r = elf_fail(err, name, "reading the ELF header");
                elf_end(e);
                return r;
        }
        *out = e;
        return 0;
}

static int check_machine(const GElf_Ehdr *ehdr, const char *name, bool compat32, gh_error_t *err)
{
        int want_class = compat32 ? COMPAT_CLASS : HOST_CLASS, want_machine = compat32 ? COMPAT_MACHINE : HOST_MACHINE;

        if (want_class == ELFCLASSNONE)
                return gh_err(err, 0, "%s: this machine has no 32-bit compatibility ABI", name);
        if (ehdr->e_ident[EI_CLASS] != want_class || ehdr->e_machine != want_machine)
                return gh_err(err, 0, "%s is built for %s (%d-bit), not %s", name, machine_name(ehdr->e_machine),
                              ehdr->e_ident[EI_CLASS] == ELFCLASS32 ? 32 : 64, machine_name(want_machine));
        return 0;
}

static int add_needed(struct gh_elf_lib *lib, size_t *n, const char *s)
{
        char **v = reallocarray(lib->needed, *n + 2, sizeof(*v));
        if (v == NULL)
                return -1;
        lib->needed = v;
        if ((v[*n] = strdup(s)) == NULL)
                return -1;
        v[++*n] = NULL;
        return 0;
}

static int read_dynamic(Elf *e, const char *name, struct gh_elf_lib *lib, gh_error_t *err)
{
        Elf_Scn *scn = NULL;
        size_t nneeded = 0;

        while ((scn = elf_nextscn(e, scn)) != NULL) {
                GElf_Shdr shdr;
                Elf_Data *data;

                if (gelf_getshdr(scn, &shdr) == NULL)
                        return elf_fail(err, name, "reading a section header");
                if (shdr.sh_type != SHT_DYNAMIC)
                        continue;
                data = elf_getdata(scn, NULL);
                if (data == NULL)
                        return elf_fail(err, name, "reading the dynamic section");
                for (size_t i = 0; shdr.sh_entsize > 0 && i < shdr.sh_size / shdr.sh_entsize; i++) {
                        GElf_Dyn dyn;
                        const char *s;
                        if (gelf_getdyn(data, (int) i, &dyn) == NULL || dyn.d_tag == DT_NULL)
                                break;
                        if (dyn.d_tag != DT_SONAME && dyn.d_tag != DT_NEEDED)
                                continue;
                        s = elf_strptr(e, shdr.sh_link, dyn.d_un.d_val);
                        if (s == NULL)
                                return elf_fail(err, name, "reading a dynamic string");
                        if (dyn.d_tag == DT_SONAME && lib->soname == NULL && (lib->soname = strdup(s)) == NULL)
                                return gh_err(err, ENOMEM, "%s", name);
                        if (dyn.d_tag == DT_NEEDED && add_needed(lib, &nneeded, s) < 0)
                                return gh_err(err, ENOMEM, "%s", name);
                }
                break;
        }
        return 0;
}

int gh_elf_check_library(int fd, const char *name, bool compat32, struct gh_elf_lib *out, gh_error_t *err)
{
        _cleanup_elf_ Elf *e = NULL;
        struct gh_elf_lib lib = { 0 };
        GElf_Ehdr ehdr;

        if (elf_open(fd, name, &e, &ehdr, err) < 0)
                return -1;
        if (ehdr.e_type != ET_DYN)
                return gh_err(err, 0, "%s is not a shared library (ELF type %u)", name, (unsigned) ehdr.e_type);
        if (check_machine(&ehdr, name, compat32, err) < 0)
                return -1;
        if (read_dynamic(e, name, &lib, err) < 0) {
                gh_elf_lib_free(&lib);
                return -1;
        }
        if (lib.soname == NULL) {
                gh_elf_lib_free(&lib);
                return gh_err(err, 0, "%s has no SONAME", name);
        }
        *out = lib;
        return 0;
}

int gh_elf_check_binary(int fd, const char *name, gh_error_t *err)
{
        _cleanup_elf_ Elf *e = NULL;
        GElf_Ehdr ehdr;
        size_t nphdr;
        bool interp = false;

        if (elf_open(fd, name, &e, &ehdr, err) < 0)
                return -1;
        if (check_machine(&ehdr, name, false, err) < 0)
                return -1;
        if (ehdr.e_type == ET_EXEC)
                return 0;
        if (ehdr.e_type != ET_DYN)
                return gh_err(err, 0, "%s is not an executable (ELF type %u)", name, (unsigned) ehdr.e_type);
        if (elf_getphdrnum(e, &nphdr) < 0)
                return elf_fail(err, name, "reading program headers");
        for (size_t i = 0; i < nphdr && !interp; i++) {
                GElf_Phdr phdr;
                if (gelf_getphdr(e, (int) i, &phdr) == NULL)
                        return elf_fail(err, name, "reading a program header");
                interp = phdr.p_type == PT_INTERP;
        }
        if (!interp)
                return gh_err(err, 0, "%s is a shared library, not an executable", name);
        return 0;
}

int gh_elf_read_note(int fd, const char *name, const char *section, const char *owner, char **desc, size_t *len,
                     gh_error_t *err)
{
        _cleanup_elf_ Elf *e = NULL;
        GElf_Ehdr ehdr;
        Elf_Scn *scn = NULL;
        size_t shstrndx;

        *desc = NULL;
        *len = 0;
        if (elf_open(fd, name, &e, &ehdr, err) < 0)
                return -1;
        if (elf_getshdrstrndx(e, &shstrndx) < 0)
                return elf_fail(err, name, "reading the section names");
        while ((scn = elf_nextscn(e, scn)) != NULL) {
                GElf_Shdr shdr;
                GElf_Nhdr nhdr;
                Elf_Data *data;
                const char *sname;
                size_t off = 0, name_off, desc_off;

                if (gelf_getshdr(scn, &shdr) == NULL)
                        return elf_fail(err, name, "reading a section header");
                if (shdr.sh_type != SHT_NOTE || (sname = elf_strptr(e, shstrndx, shdr.sh_name)) == NULL ||
                    strcmp(sname, section) != 0)
                        continue;
                if (shdr.sh_size > GH_ELF_NOTE_MAX)
                        return gh_err(err, 0, "%s: section %s is %llu bytes, more than %u", name, section,
                                      (unsigned long long) shdr.sh_size, GH_ELF_NOTE_MAX);
                if ((data = elf_getdata(scn, NULL)) == NULL)
                        return elf_fail(err, name, "reading a note section");
                /* gelf_getnote checks every size against the data and returns 0 at the end. */
                while ((off = gelf_getnote(data, off, &nhdr, &name_off, &desc_off)) > 0) {
                        const char *n = (const char *) data->d_buf + name_off;
                        /* the name's NUL padding is not counted the same way by every writer */
                        if (strnlen(n, nhdr.n_namesz) != strlen(owner) || memcmp(n, owner, strlen(owner)) != 0)
                                continue;
                        if ((*desc = malloc(nhdr.n_descsz + 1)) == NULL)
                                return gh_err(err, ENOMEM, "%s", name);
                        memcpy(*desc, (const char *) data->d_buf + desc_off, nhdr.n_descsz);
                        (*desc)[nhdr.n_descsz] = '\0';
                        *len = nhdr.n_descsz;
                        return 1;
                }
                return 0;
        }
        return 0;
}

bool gh_elf_needs(const struct gh_elf_lib *lib, const char *stem)
{
        size_t len = strlen(stem);

        for (char **p = lib->needed; p && *p; p++)
                if (strncmp(*p, stem, len) == 0 && strncmp(*p + len, ".so", 3) == 0 &&
                    ((*p)[len + 3] == '\0' || (*p)[len + 3] == '.'))
                        return true;
        return false;
}

void gh_elf_lib_free(struct gh_elf_lib *lib)
{
        free(lib->soname);
        for (char **p = lib->needed; p && *p; p++)
                free(*p);
        free(lib->needed);
        *lib = (struct gh_elf_lib) { 0 };
}
