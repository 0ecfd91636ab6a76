/* The CDI specs on this host, whoever wrote them: read (JSON or YAML), checked for the shape CDI
 * readers require, attributed to their writer, checked against the loaded driver, and resolved as
 * the runtimes resolve them (docs/cdi.md, "Specs written by others").
 *
 * Directories are read as Go's CDI package (podman, containerd, CRI-O, Docker) reads them: the
 * regular files directly in each directory whose name ends in .json or .yaml (a .yml file is not
 * read by runtimes: it is listed with an error saying so; subdirectories are skipped), in byte order of their names.  A directory's priority is its place
 * in the list (/etc/cdi 0, /var/run/cdi 1): a device that a later directory's spec defines again
 * replaces the earlier one; two specs of the same directory that define the same device make that
 * device unresolvable (runtimes refuse it). */
#ifndef GH_CDI_SPECS_H
#define GH_CDI_SPECS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define GH_CDI_SPEC_MAX (16u << 20) /* a 64-GPU spec with MIG devices is well under a megabyte */

enum gh_cdi_writer {
        GH_CDI_WRITER_UNKNOWN,
        GH_CDI_WRITER_OURS,          /* gpu-cli cdi generate */
        GH_CDI_WRITER_OURS_MPS,      /* gpu-cli mps start / cdi generate --mps-group */
        GH_CDI_WRITER_NVIDIA_CTK,    /* nvidia-ctk cdi generate (or nvidia-cdi-refresh) */
        GH_CDI_WRITER_DEVICE_PLUGIN, /* NVIDIA's Kubernetes device plugin */
        GH_CDI_WRITER_DRA,           /* NVIDIA's DRA driver (kubelet plugin) */
};

/* "gpu-hook", "gpu-hook-mps", "nvidia-ctk", "device-plugin", "dra-driver", "unknown". */
const char *gh_cdi_writer_name(enum gh_cdi_writer w);

/* Reads one spec file: JSON, or YAML when the name ends in .yaml; at most GH_CDI_SPEC_MAX bytes of
 * a regular file.  The document must have the shape CDI readers require (cdiVersion, a valid
 * kind, a non-empty devices list of named devices, containerEdits with fields of the right types);
 * otherwise -1 with one line naming the file and the first thing wrong. */
int gh_cdi_spec_read(const char *path, json_t **doc, gh_error_t *err);

/* The same on text already read; `name` decides the format and names the input in errors. */
int gh_cdi_spec_parse(const char *buf, size_t len, const char *name, json_t **doc, gh_error_t *err);

/* Who wrote the spec, from its kind, its hooks and its file name. */
enum gh_cdi_writer gh_cdi_spec_writer(json_t *doc, const char *path);

struct gh_cdi_spec {
        char *path;
        int priority; /* its directory's index; for files named one by one, their order */
        char *error;  /* why it cannot be read (then nothing below is set) */
        json_t *doc;
        enum gh_cdi_writer writer;
        char *stale;     /* why it no longer matches this host (NULL: it does) */
        char *hook;      /* why one of its hook programs cannot run (NULL: they can, or it has none) */
        char *fix;       /* the command that writes it again */
        size_t ndevices; /* devices it defines */
};

enum gh_cdi_device_state {
        GH_CDI_DEVICE_OK,
        GH_CDI_DEVICE_OVERRIDDEN, /* a spec of a later directory defines it again */
        GH_CDI_DEVICE_CONFLICT,   /* another spec of the same directory defines it too */
};

struct gh_cdi_device {
        char *name;  /* VENDOR/CLASS=NAME */
        size_t spec; /* index into specs */
        enum gh_cdi_device_state state;
        size_t other; /* OVERRIDDEN: the spec that wins; CONFLICT: the other spec */
};

struct gh_cdi_set {
        struct gh_cdi_spec *specs;
        size_t nspecs;
        struct gh_cdi_device *devices; /* in spec order, then the spec's own order */
        size_t ndevices;
};

/* Reads the spec directories (dirs, NULL-terminated) or, when files is not NULL, those files each
 * as its own priority, and resolves the devices.  driver_version: the loaded driver's version,
 * or NULL when no driver is loaded (then only the spec's host paths are checked).  Never fails
 * as a whole: a spec that cannot be read has its error set; only memory exhaustion returns -1. */
int gh_cdi_set_load(const char *const *dirs, const char *const *files, const char *driver_version,
                    struct gh_cdi_set *set, gh_error_t *err);

/* For each pair of specs of one priority that define the same devices: fn with the two specs, the
 * first such device and how many there are. */
typedef void (*gh_cdi_conflict_fn)(const struct gh_cdi_set *set, size_t a, size_t b, const char *first, size_t count,
                                   void *ctx);
void gh_cdi_set_conflicts(const struct gh_cdi_set *set, gh_cdi_conflict_fn fn, void *ctx);

void gh_cdi_set_free(struct gh_cdi_set *set);

/* The distinct hook programs ("path") the spec's hooks run, top-level and per device, at most max;
 * the strings point into doc.  Returns how many. */
size_t gh_cdi_spec_hook_paths(json_t *doc, const char **paths, size_t max);

/* Why a hook program of doc cannot run (missing, not an executable file: every container given
 * one of its devices then fails to start), for the first such program; NULL when all can.  The
 * caller frees. */
char *gh_cdi_spec_hook_broken(json_t *doc);

/* Why doc no longer matches the host: a driver version in its paths or hook arguments other than
 * driver_version (NULL: not checked), a device node whose major:minor differs from the host's, a
 * host path that does not exist.  NULL when it matches.  The caller frees. */
char *gh_cdi_spec_stale(json_t *doc, const char *driver_version);

/* The command (or the step) that writes the spec at path again, for its writer. */
char *gh_cdi_spec_fix(json_t *doc, const char *path, enum gh_cdi_writer writer);

/* A copy of s fit for one line of output: control characters and bytes that are not printable
 * ASCII as \xHH, at most max bytes of it (then "..."). */
char *gh_cdi_printable(const char *s, size_t max);

#endif
