/* The CDI spec of an MPS group (docs/mps.md): `gpu-cli mps start` writes it (gh_mps_cdi_write)
 * and records in the group's directory what it wrote; `mps stop` (gh_mps_stop) removes that file,
 * and only that file. */
#ifndef GH_MPS_CDI_H
#define GH_MPS_CDI_H

#include <limits.h>
#include <sys/types.h>

#include "cdi.h"
#include "error.h"

struct gh_mps_cdi {
        char path[PATH_MAX];
        char kind[256]; /* VENDOR/CLASS: the device is KIND=mps-NAME */
        dev_t dev;      /* the file written (a file put in its place since is not ours) */
        ino_t ino;
};

/* Writes the spec of the running group o->mps_group (gh_cdi_generate) to path (NULL: the default,
 * gh_cdi_default_path) and records it in the group's directory (o->mps_dir).  An existing file is
 * replaced only when it is a spec of this group (one left by a group that was not stopped), never
 * another spec.  *written: the path written (caller frees). */
int gh_mps_cdi_write(const struct gh_cdi_opts *o, const char *path, char **written, gh_error_t *err);

/* The spec recorded for a group: 1 with *c filled, 0 when none is recorded, -1 on error. */
int gh_mps_cdi_load(const char *dir, const char *name, struct gh_mps_cdi *c, gh_error_t *err);

/* Removes the recorded spec when that file is still the one written (same device and inode, a
 * regular file); a file that is gone is no error, one replaced since is left alone with an error. */
int gh_mps_cdi_remove(const char *dir, const char *name, gh_error_t *err);

#endif
