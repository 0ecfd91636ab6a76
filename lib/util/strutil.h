/* Small string helpers every layer uses (libc only): written once here. */
#ifndef GH_STRUTIL_H
#define GH_STRUTIL_H

#include <stdbool.h>

/* ASCII white space (what isspace() is in the C locale): space, \t, \n, \r, \v, \f. */
bool gh_is_blank(char c);

/* s without leading and trailing white space, in place (the returned pointer is inside s). */
char *gh_trim(char *s);

/* The last component of a path ("a/b" -> "b", "b" -> "b"); points into path. */
const char *gh_base_name(const char *path);

/* Whether s ends with suffix. */
bool gh_ends_with(const char *s, const char *suffix);

#endif
