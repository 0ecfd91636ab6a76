/* Driver discovery: which files of the NVIDIA driver under a driver root a container gets.
 *
 * Everything is looked up inside the root with the in-root resolver (rootfs.h): the root's own
 * ld.so.cache names the libraries, its PATH holds the programs, its /lib/firmware and /run hold
 * the firmware and the service sockets.  Paths in the result are absolute paths INSIDE the root,
 * after every symlink was resolved (inside the root); prefix them with the root to get host paths.
 *
 * What is taken (docs/architecture.md#what-a-container-gets):
 *   libraries  cache entries named `<stem>.so` or `<stem>.so.*` for a stem of the capability table,
 *              x86-64 (and i386 with GH_CAP_COMPAT32), whose real file is named `*.so.<version>` and
 *              is an ELF shared object of that machine with a SONAME (non-GLVND libGL/libEGL/libGLES
 *              only when they depend on libnvidia-glcore or libnvidia-eglcore); each file once;
 *   programs   the first ELF program of each name along opts->path, then the `bin` directory beside
 *              the one holding libnvidia-ml (scripts, e.g. wrappers in /usr/bin, are skipped);
 *   firmware   /lib/firmware/nvidia/<version>/gsp*.bin, else <libnvidia-ml dir>/../firmware/nvidia/
 *              <version>/gsp*.bin;
 *   ipcs       the persistenced and fabricmanager sockets (utility), the MPS pipe directory
 *              (compute), each only when present;
 *   loaders    with graphics: the Vulkan ICD and layer files, the EGL vendor and external platform
 *              files and the application profiles whose libraries were found (loaders.h).
 * NVIDIA's EGL platform libraries (libnvidia-egl-wayland, -gbm, -xcb, -xlib) carry their own
 * version, not the driver's: for them any `.so.N.N[.N]` file is taken. */
#ifndef GH_DRIVER_H
#define GH_DRIVER_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"
#include "loaders.h"

#define GH_DRIVER_DEFAULT_LDCACHE "/etc/ld.so.cache"
#define GH_DRIVER_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define GH_DRIVER_DEFAULT_MPS_PIPE_DIR "/tmp/nvidia-mps"

struct gh_driver_opts {
        unsigned caps;            /* GH_CAP_* wanted (implications applied here); compat32 adds i386 */
        const char *ldcache;      /* cache inside the root; NULL = GH_DRIVER_DEFAULT_LDCACHE */
        const char *path;         /* program search path inside the root; NULL = GH_DRIVER_DEFAULT_PATH */
        const char *mps_pipe_dir; /* NULL = GH_DRIVER_DEFAULT_MPS_PIPE_DIR */
        bool no_persistenced, no_fabricmanager, no_gsp_firmware;
};

struct gh_driver_file {
        char *path;    /* absolute, inside the driver root, symlinks resolved */
        char *soname;  /* libraries: DT_SONAME; else NULL */
        unsigned cap;  /* the GH_CAP_* bit that brought it in */
        bool compat32; /* an i386 library */
        mode_t type;   /* S_IFREG, S_IFSOCK or S_IFDIR */
        dev_t st_dev;
        ino_t st_ino;
};

struct gh_driver_files {
        struct gh_driver_file *v;
        size_t n, cap;
};

struct gh_driver {
        char *version; /* NVRM version, "580.95.05" */
        struct gh_driver_files libs, bins, firmware, ipcs;
        struct gh_loader_files loaders; /* graphics: Vulkan/EGL loader files, application profiles */
};

/* Discovers the driver under rootfd (O_PATH|O_DIRECTORY, see gh_rootfs_open).  A root without
 * proc/driver/nvidia/version is an error of kind GH_ERR_NO_DRIVER. */
int gh_driver_discover(int rootfd, const struct gh_driver_opts *opts, struct gh_driver **out, gh_error_t *err);
void gh_driver_free(struct gh_driver *driver);

/* Reads the NVRM version out of the text of proc/driver/nvidia/version (len bytes, need not be
 * NUL-terminated): the first a.b[.c] token of the "NVRM version:" line. */
int gh_driver_parse_version(const char *text, size_t len, char *buf, size_t size, gh_error_t *err);

/* True when a file name is `<anything>.so.<version>` exactly. */
bool gh_driver_name_has_version(const char *name, const char *version);

/* The capability bit of a library cache key (libcuda.so.1 -> GH_CAP_COMPUTE), 0 when none. */
unsigned gh_driver_library_cap(const char *key);

#endif
