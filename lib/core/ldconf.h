/* An image's /etc/ld.so.conf: the library directories its ldconfig would index, read the way
 * glibc's ldconfig reads them (see docs/ldcache.md), through the in-root resolver.
 *
 * The file format: one directory per line, optionally "DIR=TYPE" (libc4, libc5, libc6, glibc2);
 * '#' starts a comment anywhere; "include PATTERN..." reads more files (glob patterns, relative
 * ones against the including file's directory); "hwcap ..." lines are ignored.
 *
 * The text is written by the image's author: the reader bounds what it does (file size, number of
 * files, include depth, directory entries looked at, directories returned) and never opens
 * anything but a regular file inside the root. */
#ifndef GH_LDCONF_H
#define GH_LDCONF_H

#include <stddef.h>

#include "error.h"

#define GH_LDCONF_MAX_FILE (256u << 10)  /* a larger configuration file is ignored, with a warning */
#define GH_LDCONF_MAX_FILES 256          /* configuration files read, includes counted */
#define GH_LDCONF_MAX_DEPTH 16           /* include nesting (an include loop stops here) */
#define GH_LDCONF_MAX_DIRS 4096          /* directories collected */
#define GH_LDCONF_MAX_GLOB_ENTRIES 65536 /* directory entries looked at while expanding includes */

/* glibc's FLAG_ANY: the line gave no (known) library type. */
#define GH_LDCONF_FLAG_ANY (-1)

enum gh_ldconf_kind {
        GH_LDCONF_DIR,     /* text: a directory, trailing blanks and slashes removed */
        GH_LDCONF_INCLUDE, /* text: one glob pattern, as written */
};

struct gh_ldconf_item {
        enum gh_ldconf_kind kind;
        char *text;
        int flag;      /* DIR: GH_LDCONF_FLAG_ANY or the library type's cache flag */
        unsigned line; /* 1-based, for messages */
};

struct gh_ldconf {
        struct gh_ldconf_item *v;
        size_t n, cap;
};

/* Parses one file's text (len bytes, NULs allowed: a line ends at its first one) into items,
 * appending to *out.  Fails only when memory runs out or more than GH_LDCONF_MAX_DIRS items. */
int gh_ldconf_parse(const char *text, size_t len, struct gh_ldconf *out, gh_error_t *err);

void gh_ldconf_free(struct gh_ldconf *c);

/* Reads FILE (absolute, inside the root) and every file its includes name, depth first in
 * ldconfig's order, and returns only the directory items, in order, duplicates kept.  A missing
 * file yields nothing; an unreadable, non-regular or oversized one is skipped with a warning.
 * procfd as for gh_open_regular(). */
int gh_ldconf_load(int rootfd, int procfd, const char *file, struct gh_ldconf *dirs, gh_error_t *err);

#endif
