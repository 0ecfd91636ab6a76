#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

__attribute__((format(printf, 1, 0))) static char *vformat(const char *fmt, va_list ap)
{
        char *s = NULL;
        if (vasprintf(&s, fmt, ap) < 0)
                return NULL;
        return s;
}

/* Messages are one line even when they quote hostile input (an image's environment, a file name):
 * control characters are written as \xNN. */
#define GH_ESCAPED_MSG_MAX 400

static char *one_line(char *s)
{
        size_t n = 0, extra = 0;
        char *out;

        if (s == NULL)
                return NULL;
        for (const unsigned char *p = (const unsigned char *) s; *p; p++)
                extra += (*p < 0x20 || *p == 0x7f) ? 3 : 0;
        if (extra == 0)
                return s;
        out = malloc(strlen(s) + extra + 8);
        if (out == NULL)
                return s;
        for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
                /* Escaping can quadruple hostile input: keep such a message short. */
                if (n >= GH_ESCAPED_MSG_MAX) {
                        memcpy(out + n, "...", 4);
                        n += 3;
                        break;
                }
                if (*p < 0x20 || *p == 0x7f)
                        n += (size_t) sprintf(out + n, "\\x%02x", *p);
                else
                        out[n++] = (char) *p;
        }
        out[n] = '\0';
        free(s);
        return out;
}

__attribute__((format(printf, 3, 0))) static int verr(gh_error_t *err, int errnum, const char *fmt, va_list ap)
{
        char *msg, *full = NULL;

        if (err == NULL)
                return -1;
        msg = vformat(fmt, ap);
        if (msg != NULL && errnum > 0) {
                if (asprintf(&full, "%s: %s", msg, strerror(errnum)) < 0)
                        full = NULL;
                free(msg);
                msg = full;
        }
        gh_error_free(err);
        *err = calloc(1, sizeof(**err));
        if (*err == NULL) {
                free(msg);
                return -1;
        }
        (*err)->code = errnum > 0 ? errnum : 0;
        (*err)->kind = errnum > 0 ? GH_ERR_SYSTEM : GH_ERR_FAILURE;
        (*err)->msg = msg != NULL ? one_line(msg) : strdup("out of memory");
        return -1;
}

int gh_err(gh_error_t *err, int errnum, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        verr(err, errnum, fmt, ap);
        va_end(ap);
        return -1;
}

int gh_err_usage(gh_error_t *err, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        verr(err, 0, fmt, ap);
        va_end(ap);
        return gh_err_kind(err, GH_ERR_USAGE);
}

int gh_err_wrap(gh_error_t *err, const char *fmt, ...)
{
        va_list ap;
        char *ctx, *full = NULL;

        if (err == NULL || *err == NULL)
                return -1;
        va_start(ap, fmt);
        ctx = vformat(fmt, ap);
        va_end(ap);
        if (ctx == NULL)
                return -1;
        if (asprintf(&full, "%s: %s", ctx, (*err)->msg ? (*err)->msg : "") >= 0) {
                free((*err)->msg);
                (*err)->msg = one_line(full);
        }
        free(ctx);
        return -1;
}

int gh_err_code(gh_error_t *err, int code)
{
        if (err != NULL && *err != NULL)
                (*err)->code = code;
        return -1;
}

int gh_err_kind(gh_error_t *err, enum gpuhook_error_kind kind)
{
        if (err != NULL && *err != NULL)
                (*err)->kind = kind;
        return -1;
}

enum gpuhook_error_kind gh_error_kind(const struct gpuhook_error *err) { return err ? err->kind : GH_ERR_FAILURE; }

/* The one kind -> exit status table. */
static const struct {
        enum gpuhook_error_kind kind;
        int status;
} exit_status[] = {
        { GH_ERR_FAILURE, GH_EXIT_FAILURE },
        { GH_ERR_SYSTEM, GH_EXIT_FAILURE },
        { GH_ERR_USAGE, GH_EXIT_USAGE },
        { GH_ERR_NO_DRIVER, GH_EXIT_NO_DRIVER },
        { GH_ERR_REQUIREMENT, GH_EXIT_REQUIREMENT },
};

int gh_error_exit_status(const struct gpuhook_error *err)
{
        for (size_t i = 0; err != NULL && i < sizeof(exit_status) / sizeof(exit_status[0]); i++)
                if (exit_status[i].kind == err->kind)
                        return exit_status[i].status;
        return GH_EXIT_FAILURE;
}

enum gpuhook_error_kind gh_error_kind_of_status(int status)
{
        for (size_t i = 0; i < sizeof(exit_status) / sizeof(exit_status[0]); i++)
                if (exit_status[i].status == status && exit_status[i].kind != GH_ERR_SYSTEM)
                        return exit_status[i].kind;
        return GH_ERR_FAILURE;
}

__attribute__((visibility("default"))) int gpuhook_error_exit_status(const struct gpuhook_error *err)
{
        return gh_error_exit_status(err);
}

void gh_error_free(gh_error_t *err)
{
        if (err == NULL || *err == NULL)
                return;
        free((*err)->msg);
        free(*err);
        *err = NULL;
}

__attribute__((visibility("default"))) void gpuhook_error_free(struct gpuhook_error *e) { gh_error_free(&e); }
