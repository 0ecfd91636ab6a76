/* One error type for the whole library.
 *
 * Functions that can fail take `gh_error_t *err` last and return a negative value after filling it.
 * Callers add context on the way up with gh_err_wrap(); only main() prints the message and picks
 * the exit code.  An error owns its message; free it with gh_error_free() or _cleanup_error_. */
#ifndef GH_ERROR_H
#define GH_ERROR_H

#include <stdarg.h>
#include "gpuhook.h"

typedef struct gpuhook_error *gh_error_t;

/* Creates *err from a printf format.  errnum > 0 appends ": strerror(errnum)" and is kept as the
 * code.  Always returns -1 so callers can write `return gh_err(err, errno, "...")`. */
int gh_err(gh_error_t *err, int errnum, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Prefixes the existing error with context: "context: old message".  Returns -1. */
int gh_err_wrap(gh_error_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Sets the error's code (used by front ends to choose an exit status). Returns -1. */
int gh_err_code(gh_error_t *err, int code);

void gh_error_free(gh_error_t *err);

#endif
