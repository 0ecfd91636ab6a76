/* Graphics loader configuration: the small files that tell the Vulkan loader, glvnd's libEGL and
 * NVIDIA's EGL where the driver is (docs/graphics.md).
 *
 *   Vulkan ICD            vulkan/icd.d/nvidia_icd*.json            -> /usr/share/vulkan/icd.d
 *   Vulkan implicit layer vulkan/implicit_layer.d/nvidia_layers*.json -> /usr/share/vulkan/implicit_layer.d
 *   glvnd EGL vendor      glvnd/egl_vendor.d/ *nvidia*.json         -> /usr/share/glvnd/egl_vendor.d
 *   EGL external platform egl/egl_external_platform.d/ *nvidia*.json -> /usr/share/egl/egl_external_platform.d
 *   application profiles  nvidia/nvidia-application-profiles-<version>-rc -> /usr/share/nvidia
 *
 * Each kind is looked for under /etc (not the profiles), /usr/share, /usr/local/share and the
 * driver's own prefix's share/ (the directory above the driver's library directory, e.g.
 * /usr/local/nvidia for /usr/local/nvidia/lib64), in that order; the first file of a name wins.
 * A file is taken only if it is a regular file of bounded size, valid JSON with the keys its loader
 * needs, and the library it names is one this driver root provides: a bare name must be the SONAME
 * of a discovered library (the container's ld.so.cache will list it), an absolute path must resolve
 * in the driver root to a discovered library (the plan then links that very path in the container
 * to where the library is placed). */
#ifndef GH_LOADERS_H
#define GH_LOADERS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"

struct gh_driver_files;

#define GH_LOADER_JSON_MAX (64 * 1024)
#define GH_LOADER_PROFILES_MAX (1024 * 1024)

enum gh_loader_kind {
        GH_LOADER_VULKAN_ICD,
        GH_LOADER_VULKAN_LAYER,
        GH_LOADER_EGL_VENDOR,
        GH_LOADER_EGL_PLATFORM,
        GH_LOADER_APP_PROFILES,
};

struct gh_loader_file {
        enum gh_loader_kind kind;
        char *path;        /* in the driver root, symlinks resolved */
        char *dst;         /* in the container: the loader's directory + the file's name */
        char *library;     /* library_path as the file writes it; NULL for application profiles */
        char *library_src; /* absolute library_path: the driver library (in the root) it resolves to */
        unsigned cap;      /* GH_CAP_GRAPHICS */
        dev_t st_dev;
        ino_t st_ino;
};

struct gh_loader_files {
        struct gh_loader_file *v;
        size_t n, cap;
};

/* "vulkan_icd", "vulkan_layer", "egl_vendor", "egl_platform", "application_profiles". */
const char *gh_loader_kind_name(enum gh_loader_kind kind);

/* Checks the text of one file of a kind (len bytes, need not be NUL-terminated) and returns in
 * *library the library it names (NULL for application profiles).  Every check failure is an error
 * saying what is wrong. */
int gh_loader_parse(enum gh_loader_kind kind, const char *text, size_t len, char **library, gh_error_t *err);

/* Finds the loader files under rootfd.  root_prefix: the root's host path ("" for "/"); lib_dir:
 * the in-root directory of the driver's libraries (NULL when unknown); libs: the discovered
 * libraries that named libraries must be among. */
int gh_loader_find(int rootfd, const char *root_prefix, const char *lib_dir, const char *version,
                   const struct gh_driver_files *libs, struct gh_loader_files *out, gh_error_t *err);

void gh_loader_files_free(struct gh_loader_files *files);

#endif
