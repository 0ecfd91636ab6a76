/* Adding checks to doctor's report: what every doctor file (host, container, MPS) uses, and
 * nothing else, so the check files do not depend on one another. */
#ifndef GH_DOCTOR_REPORT_H
#define GH_DOCTOR_REPORT_H

#include "doctor.h"

/* Appends a check: its name, status, the cause and fix (dropped when ok) and the evidence. */
void gh_doctor_add(struct gh_doctor *d, const char *name, enum gh_check_status st, const char *cause, const char *fix,
                   const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Makes the last check's fix a gpu-cli command for MPS group g under dir (NULL: the default): the
 * front end writes the command; the check's fix text, if any, follows it ("then restart ..."). */
void gh_doctor_fix_mps(struct gh_doctor *d, enum gh_fix_command command, const struct gh_mps_group *g, const char *dir);

#endif
