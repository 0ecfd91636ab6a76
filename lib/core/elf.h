/* ELF checks for driver files (libelf): is this a shared library or a program for this machine?
 *
 * A rejection is an error saying why ("is a shell script", "is i386, not x86-64"); callers that
 * are only probing candidates log it at debug level and move on. */
/* This file shadows the system <elf.h> on the library's include path (libelf.h and gelf.h
 * include <elf.h> too), so it carries the real one along.  Outside the guard on purpose: when a
 * quoted include finds this file next to the includer, #include_next searches the whole path
 * again, comes back here once more, and only then reaches the system header. */
#include_next <elf.h>

#ifndef GH_ELF_H
#define GH_ELF_H

#include <stdbool.h>

#include "error.h"

struct gh_elf_lib {
        char *soname;  /* DT_SONAME */
        char **needed; /* DT_NEEDED entries, NULL-terminated */
};

/* fd: an open (O_RDONLY) file; name is for messages.  Accepts an ET_DYN object of the host's
 * class and machine (i386 when compat32 on x86-64) that has a DT_SONAME, and fills *out. */
int gh_elf_check_library(int fd, const char *name, bool compat32, struct gh_elf_lib *out, gh_error_t *err);

/* Accepts a program of the host's class and machine: ET_EXEC, or ET_DYN with a PT_INTERP (a PIE);
 * a "#!" script (the wrapper some installs put in /usr/bin) is rejected. */
int gh_elf_check_binary(int fd, const char *name, gh_error_t *err);

/* Reads the first ELF note owned by `owner` in the SHT_NOTE section called `section` of the file
 * open on fd, without loading or running anything: returns 1 with its descriptor (malloc'ed, NUL
 * added, *len bytes before it), 0 when the file has no such section or note, -1 when the file is
 * not ELF or the section is malformed or larger than GH_ELF_NOTE_MAX. */
#define GH_ELF_NOTE_MAX (64u << 10)
int gh_elf_read_note(int fd, const char *name, const char *section, const char *owner, char **desc, size_t *len,
                     gh_error_t *err);

/* True when one of lib's DT_NEEDED entries is `stem.so` or starts with `stem.so.`. */
bool gh_elf_needs(const struct gh_elf_lib *lib, const char *stem);

void gh_elf_lib_free(struct gh_elf_lib *lib);

#endif
