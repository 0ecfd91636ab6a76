/* What doctor.c (host checks) lends doctor-container.c. */
#ifndef GH_DOCTOR_INTERNAL_H
#define GH_DOCTOR_INTERNAL_H

#include "doctor.h"

/* The first 64-bit ld cache entry for soname in the cache at cache_path under rootfd (in-root
 * resolver): its path, and the file name it finally resolves to. */
int gh_doctor_cache_lookup(int rootfd, const char *cache_path, const char *soname, char *path, size_t psize, char *file,
                           size_t fsize, gh_error_t *err);

enum gh_cgroup_manager gh_doctor_manager(const struct gh_doctor_opts *o);

#endif
