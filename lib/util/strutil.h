/* Small string helpers every layer uses (libc only): written once here. */
#ifndef GH_STRUTIL_H
#define GH_STRUTIL_H

#include <stdbool.h>
#include <time.h>

/* ASCII white space (what isspace() is in the C locale): space, \t, \n, \r, \v, \f. */
bool gh_is_blank(char c);

/* s without leading and trailing white space, in place (the returned pointer is inside s). */
char *gh_trim(char *s);

/* The last component of a path ("a/b" -> "b", "b" -> "b"); points into path. */
const char *gh_base_name(const char *path);

/* Whether s ends with suffix. */
bool gh_ends_with(const char *s, const char *suffix);

/* t (seconds since the epoch) as UTC in *tm (year, month, day, hour, minute, second, weekday and
 * day of the year), as gmtime_r gives it, without glibc's first-call time-zone set-up: gmtime_r
 * reads /etc/localtime (seven system calls) even though UTC needs no zone, and every hook that
 * logs would pay that. */
void gh_utc_tm(time_t t, struct tm *tm);

#endif
