/* CDI (Container Device Interface) specs: the injection plan (plan.h) written for every device.
 *
 * A spec has common edits (what every GPU container gets: control nodes, the driver's files as
 * read-only bind mounts, NVIDIA_VISIBLE_DEVICES=void, and a createContainer hook running
 * `gpu-cli cdi-hook` for the links, the ld cache and the /proc/driver/nvidia mask) and one device
 * per GPU (by index and/or UUID), per MIG device (GPU:MIG and/or MIG UUID) and `all`, each with the
 * device nodes its plan has beyond the common ones.  Every part comes from gh_plan_build() for the
 * same request the hook path would build: the two writers cannot disagree on a file.
 *
 * A spec for an MPS group (mps_group set; docs/cdi.md) has one device, mps-NAME: the plan of the
 * group's GPU with the group joined.  Its common edits are the common plan's less what joining a
 * group takes away (the host's default MPS pipe directory); the device adds the GPU's nodes and
 * the group's pipe and shm directories, mounted from their host paths.
 *
 * The document is JSON (a subset of YAML, so any CDI reader takes it).  cdiVersion is the lowest
 * that has every feature used: 0.3.0, or 0.5.0 when a device name starts with a digit or a device
 * node has a hostPath (a driver root other than /). */
#ifndef GH_CDI_H
#define GH_CDI_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

#include "error.h"
#include "plan.h"

enum {
        GH_CDI_NAME_INDEX = 1 << 0, /* "0", "0:1" */
        GH_CDI_NAME_UUID = 1 << 1,  /* "GPU-...", "MIG-..." */
};

struct gh_cdi_opts {
        const char *root;      /* driver root, "/" by default */
        const char *ldcache;   /* the driver root's ld.so.cache (NULL: /etc/ld.so.cache) */
        const char *path;      /* PATH for the driver's programs (NULL: the default) */
        const char *vendor;    /* "nvidia.com" */
        const char *class_;    /* "gpu" */
        unsigned names;        /* GH_CDI_NAME_* */
        unsigned caps;         /* GH_CAP_* (implications applied here) */
        const char *hook_path; /* absolute path of the gpu-cli the hook runs */
        struct gh_layout layout;
        uid_t uid; /* identity of the driver service (NVML, for MIG devices); -1: overflow */
        gid_t gid;
        const char *mps_group; /* a spec for this MPS group only (NULL: the spec of every GPU) */
        const char *mps_dir;   /* where MPS groups live (NULL: GH_MPS_DEFAULT_DIR) */
        /* The driver's read-only file and directory mounts go to the createContainer hook's
         * arguments (--mount=HOST::CONTAINER, --mount-dir=, -noexec) instead of the spec's "mounts": the hook
         * attaches them with the new mount API, cheaper than a runtime's mount, remount and checks
         * per entry (docs/cdi.md#mounts-by-the-hook).  Device nodes, env and other mounts stay. */
        bool hook_mounts;
        /* The hook also checks the image's NVIDIA_REQUIRE_* first (cdi-hook --check-requirements),
         * refusing the container as gpu-hook does when one is not met (docs/cdi.md). */
        bool check_requirements;
};

#define GH_CDI_MPS_PREFIX "mps-"

/* Checks that an MPS group's device name (mps-NAME) is a valid CDI device name: CDI names end in a
 * letter or digit, MPS group names may end in '.', '-' or '_'.  A usage error names the group. */
int gh_cdi_check_mps_name(const char *group, gh_error_t *err);

/* Validates a vendor ("nvidia.com") or class ("gpu") name as CDI does; -1 with a message naming it. */
int gh_cdi_check_kind(const char *vendor, const char *class_, gh_error_t *err);

/* Builds the spec for the driver under o->root (cdi.c).  Fails with kind GH_ERR_NO_DRIVER when
 * there is none. */
int gh_cdi_generate(const struct gh_cdi_opts *o, json_t **spec, gh_error_t *err);

/* ---- the spec we write, as a document and a file (cdi-write.c; reading every spec on the host,
 * whoever wrote it, is cdi-specs.h) ---- */

/* The lowest cdiVersion that has every feature the spec uses. */
const char *gh_cdi_min_version(json_t *spec);

/* Compares two specs; returns true when equal, else false with a one-line reason in *why (caller
 * frees): the first device, node, mount or hook argument that differs. */
bool gh_cdi_same(json_t *want, json_t *have, char **why);

/* Where CDI readers (podman, containerd, CRI-O) look for specs, the one list: specs written once
 * go to the first, those regenerated at every boot (MPS groups) to the second. */
#define GH_CDI_DIR_STATIC "/etc/cdi"
#define GH_CDI_DIR_DYNAMIC "/var/run/cdi"
extern const char *const gh_cdi_spec_dirs[]; /* both, NULL-terminated */

/* The default spec path: GH_CDI_DIR_STATIC/VENDOR-CLASS.json, or for an MPS group
 * GH_CDI_DIR_DYNAMIC/VENDOR-CLASS-mps-GROUP.json.  NULL when out of memory; caller frees. */
char *gh_cdi_default_path(const char *vendor, const char *class_, const char *mps_group);

/* Whether a spec's common createContainer hook makes the driver's mounts (--mount or --mount-dir
 * among its arguments: written with gh_cdi_opts.hook_mounts). */
bool gh_cdi_spec_hook_mounts(json_t *spec);
/* Whether its hook checks requirements (--check-requirements: gh_cdi_opts.check_requirements). */
bool gh_cdi_spec_checks_requirements(json_t *spec);

/* The spec as the text written (indented JSON and a newline); NULL when out of memory. */
char *gh_cdi_text(json_t *spec);

/* Writes spec to path through the one writer: atomic, synced, mode 0644, its directory made if
 * missing.  *st (may be NULL): the file written. */
struct stat;
int gh_cdi_write(json_t *spec, const char *path, struct stat *st, gh_error_t *err);

#endif
