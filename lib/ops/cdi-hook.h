/* The createContainer hook that a CDI spec names (`gpu-cli cdi-hook`).
 *
 * A CDI spec carries what a runtime can do by itself (device nodes, bind mounts, environment);
 * the rest of an injection happens here, inside the container's mount namespace after the
 * runtime's mounts and before pivot_root: the SONAME and other symlinks, the container's
 * /etc/ld.so.cache, and /proc/driver/nvidia masked the way `configure` masks it.
 *
 * The hook takes everything from its argv (written by `cdi generate`) and from the OCI state on
 * stdin and the bundle's config.json (written by the runtime); never from its environment.  It
 * refuses to run outside the container's mount namespace (as a createRuntime or prestart hook
 * its mounts would land in the host's). */
#ifndef GH_CDI_HOOK_H
#define GH_CDI_HOOK_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "hooklog.h"

/* One "A::B" argument split in two (the strings point into argv). */
struct gh_cdi_pair {
        const char *a, *b;
};

struct gh_cdi_hook_opts {
        const char *root;          /* driver root, "/" by default: where /proc/driver/nvidia is read */
        int state_fd;              /* the OCI state (stdin) */
        struct gh_cdi_pair *links; /* a = target, b = link path in the container */
        size_t nlinks;
        struct gh_cdi_pair *libs; /* a = SONAME, b = container path; 64-bit */
        size_t nlibs;
        struct gh_cdi_pair *libs32; /* the same, i386 */
        size_t nlibs32;
        bool mask_proc;         /* mask /proc/driver/nvidia, showing the GPUs in config.json's linux.devices */
        struct gh_hooklog *log; /* when not NULL: each phase's time, the container's id and pid go here */
};

/* Splits "A::B" (both parts non-empty, B an absolute path when b_abs).  Returns -1 with a message
 * naming the option otherwise. */
int gh_cdi_pair_parse(const char *opt, char *arg, bool b_abs, struct gh_cdi_pair *out, gh_error_t *err);

int gh_cdi_hook_run(const struct gh_cdi_hook_opts *opts, gh_error_t *err);

#endif
