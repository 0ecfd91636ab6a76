/* doctor's report (doctor.h, doctor-report.h): the checks in the order they ran, each with what
 * was seen and, for anything but ok, the cause and the fix. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor-report.h"

const char *gh_check_status_name(enum gh_check_status s)
{
        return s == GH_CHECK_OK ? "ok" : s == GH_CHECK_WARN ? "warn" : "fail";
}

void gh_doctor_add(struct gh_doctor *d, const char *name, enum gh_check_status st, const char *cause, const char *fix,
                   const char *fmt, ...)
{
        struct gh_check *grown = realloc(d->checks, (d->n + 1) * sizeof(*grown));
        va_list ap;
        char *ev = NULL;

        if (grown == NULL)
                return;
        d->checks = grown;
        va_start(ap, fmt);
        if (vasprintf(&ev, fmt, ap) < 0)
                ev = NULL;
        va_end(ap);
        d->checks[d->n++] = (struct gh_check) {
                .name = strdup(name),
                .status = st,
                .evidence = ev,
                .cause = st == GH_CHECK_OK || cause == NULL ? NULL : strdup(cause),
                .fix = st == GH_CHECK_OK || fix == NULL ? NULL : strdup(fix),
        };
}

void gh_doctor_fix_mps(struct gh_doctor *d, enum gh_fix_command command, const struct gh_mps_group *g, const char *dir)
{
        struct gh_check *c = d->n > 0 ? &d->checks[d->n - 1] : NULL;

        if (c == NULL || c->status == GH_CHECK_OK || (c->mps = malloc(sizeof(*c->mps))) == NULL)
                return;
        *c->mps = *g;
        c->mps_dir = dir ? strdup(dir) : NULL;
        c->command = command;
}

enum gh_check_status gh_doctor_worst(const struct gh_doctor *d)
{
        enum gh_check_status w = GH_CHECK_OK;
        for (size_t i = 0; i < d->n; i++)
                if (d->checks[i].status > w)
                        w = d->checks[i].status;
        return w;
}

void gh_doctor_free(struct gh_doctor *d)
{
        for (size_t i = 0; i < d->n; i++) {
                free(d->checks[i].name);
                free(d->checks[i].evidence);
                free(d->checks[i].cause);
                free(d->checks[i].fix);
                free(d->checks[i].mps);
                free(d->checks[i].mps_dir);
        }
        free(d->checks);
        memset(d, 0, sizeof(*d));
}
