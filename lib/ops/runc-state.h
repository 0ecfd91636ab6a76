/* A createContainer hook's OCI state under runc, from where runc keeps it instead of stdin
 * (runc-state.c says why: runc writes the state late).
 *
 *   gh_runc_hook_state()        1 with state's id, pid and bundle when our parent is `runc init`
 *                               and its parent's directory is a bundle we can see; 0 otherwise
 *                               (read the state from stdin)
 *   gh_runc_hook_root_is()      whether rootfs (config.json's root) is start_dir, the directory
 *                               the hook was started in (runc init runs its createContainer hooks
 *                               there): the proof the caller needs before it uses that state */
#ifndef GH_RUNC_STATE_H
#define GH_RUNC_STATE_H

#include "oci.h"

int gh_runc_hook_state(struct gh_oci_state *state);
struct stat;
int gh_runc_hook_root_is(const char *rootfs, const struct stat *start_dir);

#endif
