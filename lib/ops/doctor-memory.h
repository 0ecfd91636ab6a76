/* doctor's checks of GPU memory and container records (doctor-memory.c, docs/doctor.md). */
#ifndef GH_DOCTOR_MEMORY_H
#define GH_DOCTOR_MEMORY_H

#include <sys/types.h>

#include "doctor.h"

/* Host check gpu-memory: the GPU memory no running container owns. */
void gh_doctor_memory_host(int rootfd, const struct gh_doctor_opts *o, struct gh_doctor *d);

/* Container check pod: the pod of the container whose process is pid. */
void gh_doctor_pod(const struct gh_doctor_opts *o, pid_t pid, struct gh_doctor *d);

/* Host check container-records: whether gpu-hook can keep its container records. */
void gh_doctor_records_host(const struct gh_doctor_opts *o, struct gh_doctor *d);

#endif
