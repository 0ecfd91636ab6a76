/* What doctor.c (host checks) and doctor-container.c share. */
#ifndef GH_DOCTOR_INTERNAL_H
#define GH_DOCTOR_INTERNAL_H

#include "doctor.h"

void gh_doctor_add(struct gh_doctor *d, const char *name, enum gh_check_status st, const char *cause, const char *fix,
                   const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* The first 64-bit ld cache entry for soname in the cache at cache_path under rootfd (in-root
 * resolver): its path, and the file name it finally resolves to. */
int gh_doctor_cache_lookup(int rootfd, const char *cache_path, const char *soname, char *path, size_t psize, char *file,
                           size_t fsize, gh_error_t *err);

enum gh_cgroup_manager gh_doctor_manager(const struct gh_doctor_opts *o);

/* doctor-mps.c: one check per MPS group on the host; the group a container asked for (name; from_env:
 * through GPU_HOOK_MPS_GROUP), checked against what the container sees under crootfd. */
void gh_doctor_mps_host(const struct gh_doctor_opts *o, struct gh_doctor *d);
void gh_doctor_mps_container(const struct gh_doctor_opts *o, const char *name, bool from_env, int crootfd,
                             struct gh_doctor *d);

/* doctor-memory.c: the GPU memory no running container owns (host check gpu-memory), and the pod of
 * the container whose process is pid (container check pod). */
void gh_doctor_memory_host(int rootfd, const struct gh_doctor_opts *o, struct gh_doctor *d);
void gh_doctor_pod(const struct gh_doctor_opts *o, pid_t pid, struct gh_doctor *d);
/* doctor-memory.c: whether gpu-hook can keep its container records (host check container-records). */
void gh_doctor_records_host(const struct gh_doctor_opts *o, struct gh_doctor *d);

#endif
