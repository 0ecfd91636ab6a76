/* doctor's MPS checks (doctor-mps.c, docs/mps.md). */
#ifndef GH_DOCTOR_MPS_H
#define GH_DOCTOR_MPS_H

#include <stdbool.h>

#include "doctor.h"

/* One check per MPS group on the host (is its daemon alive?). */
void gh_doctor_mps_host(const struct gh_doctor_opts *o, struct gh_doctor *d);

/* The group a container asked for (name; from_env: through GPU_HOOK_MPS_GROUP), checked against
 * what the container sees under crootfd. */
void gh_doctor_mps_container(const struct gh_doctor_opts *o, const char *name, bool from_env, int crootfd,
                             struct gh_doctor *d);

#endif
