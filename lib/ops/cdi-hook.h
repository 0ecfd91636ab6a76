/* The createContainer hook that a CDI spec names: our own (`gpu-cli cdi-hook`) and NVIDIA's
 * command line (`nvidia-cdi-hook SUBCOMMAND`, cli/nvhook.c).  Both fill one gh_cdi_hook_opts and
 * run gh_cdi_hook_run(): one code path, two command lines (docs/cdi.md, docs/nvidia-cdi-hook.md).
 *
 * A CDI spec carries what a runtime can do by itself (device nodes, bind mounts, environment);
 * the rest of an injection happens here (and the driver's read-only mounts too, when the spec was
 * written with `cdi generate --mounts=hook`: --mount, cheaper here than in the runtime), inside the container's mount namespace after the
 * runtime's mounts and before pivot_root: symlinks, the container's /etc/ld.so.cache (with the
 * libraries the spec names or that its folders hold, and the CUDA compat libraries when the rule
 * says so), /proc/driver/nvidia masked the way `configure` masks it, the driver's application
 * profile, the mode of /dev entries.
 *
 * The hook takes everything from its argv (written by a spec) and from the OCI state on stdin and
 * the bundle's config.json (written by the runtime); never from its environment.  It refuses to
 * run outside the container's mount namespace (as a createRuntime or prestart hook its mounts
 * would land in the host's). */
#ifndef GH_CDI_HOOK_H
#define GH_CDI_HOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"
#include "hooklog.h"

/* One "A::B" argument split in two (the strings point into argv); for a mount: a directory
 * (--mount-dir), noexec (--mount-noexec, --mount-dir-noexec). */
struct gh_cdi_pair {
        const char *a, *b;
        bool dir, noexec;
};

/* The record `enable-cuda-compat` leaves in the container (NVIDIA's hook writes the same kind of
 * drop-in): the compat directory, so that a later `update-ldcache` of the same container (a hook
 * process of its own) keeps preferring it, and so does an ldconfig run inside the container. */
#define GH_CDI_COMPAT_RECORD "/etc/ld.so.conf.d/00-compat-gpu-hook.conf"
/* What `update-application-profile` writes (the driver reads *.conf there). */
#define GH_CDI_APP_PROFILE_DIR "/etc/nvidia/nvidia-application-profiles-rc.d"
#define GH_CDI_APP_PROFILE "10-container.conf"

struct gh_gpu_cache;
struct stat;
struct gh_cdi_hook_opts {
        const char *root;             /* driver root, "/" by default: where /proc/driver/nvidia is read */
        int state_fd;                 /* the OCI state (stdin) */
        const char *state_file;       /* or a file holding it (--container-spec); NULL: state_fd */
        const struct stat *start_dir; /* the directory the hook was started in, or NULL (runc-state.h) */
        const char *config;           /* the hook configuration (cuda-compat key); NULL: the compiled default */
        struct gh_cdi_pair *mounts;   /* a = host path, b = container path: read-only binds, made first */
        size_t nmounts;
        struct gh_cdi_pair *links; /* a = target, b = link path in the container */
        size_t nlinks;
        bool replace_files;       /* a link replaces a file at its path (NVIDIA's create-symlinks) */
        struct gh_cdi_pair *libs; /* a = SONAME, b = container path; 64-bit */
        size_t nlibs;
        struct gh_cdi_pair *libs32; /* the same, i386 */
        size_t nlibs32;
        const char **folders; /* container directories whose libraries go into the ld cache */
        size_t nfolders;
        /* container directories that get their libraries' SONAME links (create-soname-symlinks,
         * `ldconfig -n -N` without ldconfig): LIB_SONAME -> the file, beside it */
        const char **soname_folders;
        size_t nsoname_folders;
        bool ldcache; /* rewrite the ld cache even with nothing new in it (update-ldcache) */
        /* CUDA forward compatibility: with compat_driver (the host driver version) or compat_cuda
         * (the host CUDA version) the image's compat libraries are looked at (docs/cuda-compat.md). */
        const char *compat_driver, *compat_cuda;
        const char *compat_dir;   /* NULL: /usr/local/cuda/compat */
        bool mask_proc;           /* mask /proc/driver/nvidia, showing the GPUs in config.json's linux.devices */
        bool app_profile;         /* the application profile limiting EGL/Vulkan to the container's GPUs */
        const char **chmod_paths; /* under /dev, in the container */
        size_t nchmod;
        mode_t chmod_mode;
        struct gh_hooklog *log; /* when not NULL: each phase's time, the container's id and pid go here */
        /* check-requirements: the image's NVIDIA_REQUIRE_* (config.json's process.env) against the
         * driver, before anything else; with nothing else asked, the container is not touched. */
        bool check_requirements;
        const char *cache_file;           /* the driver-state cache the facts may come from; NULL: none */
        const struct gh_gpu_cache *cache; /* its code (front/statecache.h) */
        /* This process cannot load the driver's libraries (a static program: its dlopen would need
         * the very glibc it was linked with): the facts come from the cache alone, and a miss makes
         * gh_cdi_hook_run return 1, having done nothing, so that the caller asks a program that can. */
        bool no_driver_libs;
};

/* Splits "A::B" (both parts non-empty, B an absolute path when b_abs).  Returns -1 with a message
 * naming the option otherwise. */
int gh_cdi_pair_parse(const char *opt, char *arg, bool b_abs, struct gh_cdi_pair *out, gh_error_t *err);

/* 0 done, -1 failed (err says why), 1 only with check_requirements and no_driver_libs (above). */
int gh_cdi_hook_run(const struct gh_cdi_hook_opts *opts, gh_error_t *err);

/* A GPU's own node in config.json's linux.devices: /dev/nvidiaN, character, major 195, N below the
 * modeset minor (the container's GPUs, whoever wrote the spec). */
struct gh_oci_device;
bool gh_cdi_gpu_node(const struct gh_oci_device *d);

/* The check of check_requirements (lib/ops/cdi-require.c): 0 when the image states no requirement,
 * NVIDIA_DISABLE_REQUIRE is set, or every requirement holds; 1 when no_driver_libs and the cache
 * cannot answer; else -1, the error naming the requirement (kind GH_ERR_REQUIREMENT when one is
 * not met). */
struct gh_oci_spec;
int gh_cdi_check_requirements(const struct gh_cdi_hook_opts *o, int driver_rootfd, const struct gh_oci_spec *spec,
                              gh_error_t *err);

/* The application profile's text for the GPU minors set in mask (bit N: /dev/nvidiaN). */
int gh_cdi_app_profile_text(unsigned long long mask, char *buf, size_t size);

/* What a spec's hook path is, for doctor and `cdi list` (docs/doctor.md): whether it exists and can
 * run, and whether it is ours (this gpu-cli, gpu-hook's nvidia-cdi-hook, or a link to one). */
enum gh_hook_binary {
        GH_HOOK_BINARY_MISSING, /* no such file: every container of the spec fails to start */
        GH_HOOK_BINARY_NOT_EXEC,
        GH_HOOK_BINARY_OURS,
        GH_HOOK_BINARY_OTHER, /* someone else's, e.g. NVIDIA's nvidia-cdi-hook or nvidia-ctk */
};
/* ours: NULL-terminated paths of our own programs (this gpu-cli, the installed nvidia-cdi-hook);
 * a hook path is ours when it is one of them or the same file.  why: a line for messages. */
enum gh_hook_binary gh_cdi_hook_binary(const char *path, const char *const *ours, char *why, size_t size);

#endif
