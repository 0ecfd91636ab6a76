/* One error type for the whole library.
 *
 * Functions that can fail take `gh_error_t *err` last and return a negative value after filling it.
 * Callers add context on the way up with gh_err_wrap(); only main() prints the message and picks
 * the exit status, from the error's kind (gh_error_exit_status: one table for every command).
 * gh_err() makes a SYSTEM error when given an errno, else a FAILURE; usage errors are made by
 * gh_err_usage(); the few places that know "no driver" or "requirement not met" set the kind
 * (gh_err_kind).  The errno (code) never stands for a kind.  An error owns its message; free it with gh_error_free() or _cleanup_error_. */
#ifndef GH_ERROR_H
#define GH_ERROR_H

#include <stdarg.h>
#include "gpuhook.h"

typedef struct gpuhook_error *gh_error_t;

/* Creates *err from a printf format.  errnum > 0 appends ": strerror(errnum)" and is kept as the
 * code.  Always returns -1 so callers can write `return gh_err(err, errno, "...")`. */
int gh_err(gh_error_t *err, int errnum, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A usage error (kind GH_ERR_USAGE, exit status 2): bad input from the caller, an argument, a
 * configuration value or a request that no retry fixes.  Returns -1. */
int gh_err_usage(gh_error_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prefixes the existing error with context: "context: old message".  Returns -1. */
int gh_err_wrap(gh_error_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Sets the error's errno value (for callers that test it, e.g. ENOENT). Returns -1. */
int gh_err_code(gh_error_t *err, int code);

#define GH_ERR_FAILURE GPUHOOK_ERR_FAILURE
#define GH_ERR_SYSTEM GPUHOOK_ERR_SYSTEM
#define GH_ERR_USAGE GPUHOOK_ERR_USAGE
#define GH_ERR_NO_DRIVER GPUHOOK_ERR_NO_DRIVER
#define GH_ERR_REQUIREMENT GPUHOOK_ERR_REQUIREMENT

/* Sets the error's kind.  Returns -1. */
int gh_err_kind(gh_error_t *err, enum gpuhook_error_kind kind);

/* The kind, GH_ERR_FAILURE for NULL. */
enum gpuhook_error_kind gh_error_kind(const struct gpuhook_error *err);

/* The exit statuses of every program (gpu-hook, gpu-cli, gpu-runtime for its own failures, and
 * the children they wait for): the one table, documented in each --help and in README.md.  An
 * error's status comes from its kind (gh_error_exit_status). */
enum gh_exit_status {
        GH_EXIT_OK = 0,
        GH_EXIT_FAILURE = 1,     /* the operation failed (also a system error); the message says why */
        GH_EXIT_USAGE = 2,       /* bad command line, configuration or request */
        GH_EXIT_NO_DRIVER = 3,   /* no NVIDIA driver under the driver root */
        GH_EXIT_REQUIREMENT = 4, /* a requirement (cuda>=..., --require) is not met */
};

/* The exit status for an error (see gpuhook_error_exit_status), and back: the kind an exit status
 * stands for (a child's status read by its parent). */
int gh_error_exit_status(const struct gpuhook_error *err);
enum gpuhook_error_kind gh_error_kind_of_status(int status);

void gh_error_free(gh_error_t *err);

#endif
