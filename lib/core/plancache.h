/* The plan kept between container starts (docs/statecache.md, "Plans").
 *
 * A plan depends on the request, the image's library layout, the driver root and its options, the
 * driver (what the driver-state fingerprint covers: version, ld.so.cache, libraries, GPUs, MIG) and
 * which of the driver's sockets and the MPS pipe directory exist.  gh_plan_cache_key() writes the
 * first and the last as text; the driver-state cache (front/statecache.c, through the gh_gpu_cache
 * interface of gpumodel.h) keeps a plan's text under that key together with the fingerprint it was
 * built under, and hands it back only while both match.  The sources are opened and every target
 * checked again at every start, as for a plan built then: what is kept is the decision, not a file
 * descriptor. */
#ifndef GH_PLANCACHE_H
#define GH_PLANCACHE_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "plan.h"
#include "request.h"

/* The plan as one line of JSON (malloc'ed), or NULL when out of memory.  Sources are not part of it. */
char *gh_plan_to_text(const struct gh_plan *plan);

/* The inverse, strict: every member present with its type and range, paths absolute without "." or
 * ".." components, no host path, device nodes where they are on the driver root, the device rules
 * exactly one 'c' rule per planned node (in their order), no MPS group; then gh_cgroup_check_rules. */
int gh_plan_from_text(const char *text, size_t len, struct gh_plan *plan, gh_error_t *err);

/* Whether every device node the plan names is, under the driver root droot, the character device
 * it names (with --no-devbind nodes are made from the plan's numbers, not bound from the root). */
int gh_plan_check_devices(const struct gh_plan *plan, int droot, gh_error_t *err);

/* The key text (malloc'ed; NULL when out of memory).  droot is the driver root's fd. */
char *gh_plan_cache_key(int droot, const char *root, const char *ldcache, const char *path,
                        const struct gh_request *req, const struct gh_layout *layout);

/* The plan kept under the key of (droot, root, ldcache, path, req, layout) in req's cache (which
 * must keep plans: plan_lookup, plan_save, state_file) while the driver's fingerprint is the one it
 * was kept under: 1 with *plan filled; 0 when none is kept, the fingerprint changed or the kept one
 * is refused (not valid, or a device node it names is not that node under droot: every one with
 * check_all_devices, else those it makes with mknod).  The fingerprint is first taken with the
 * libraries the kept one names (the root's ld.so.cache, whose identity it holds, is not parsed
 * again); on a miss it is taken whole, before anything is discovered.  *key (the key) and *fp_text
 * (the fingerprint to keep a plan under; NULL when the driver has none), malloc'ed, are for
 * gh_plan_cache_keep. */
int gh_plan_cache_find(int droot, const char *root, const char *ldcache, const char *path, const struct gh_request *req,
                       const struct gh_layout *layout, bool check_all_devices, struct gh_plan *plan, char **key,
                       char **fp_text);

/* Keeps plan under key for fp_text in req's cache (nothing when either is NULL, or for a plan
 * that joins an MPS group); a failure is only logged: the next start builds it again. */
void gh_plan_cache_keep(const struct gh_request *req, const char *key, const char *fp_text, const struct gh_plan *plan);

#endif
