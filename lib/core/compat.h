/* CUDA forward compatibility: whether an image's CUDA "compat" libraries (a newer libcuda.so and
 * its helpers, shipped in /usr/local/cuda/compat by NVIDIA's CUDA images) should be preferred over
 * the host driver's in the container's ld.so.cache.  docs/cuda-compat.md has the rule.
 *
 * The image is untrusted: the directory is resolved inside the root, only regular files are ever
 * opened (never a link, a directory, a FIFO or anything under a magic link such as
 * /proc/PID/root), the ELF is read with bounded reads and never loaded or run, and a malformed file
 * only means "not used".  The same function serves the hook path (the plan, lib/core/plan.c) and
 * the CDI path (ops/cdi-hook.c: `enable-cuda-compat` and `gpu-cli cdi-hook --cuda-compat`). */
#ifndef GH_COMPAT_H
#define GH_COMPAT_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define GH_CUDA_COMPAT_DIR "/usr/local/cuda/compat"
/* The ELF note newer compat libraries carry: JSON naming the CUDA version and the driver branches
 * (major versions) the library works with. */
#define GH_CUDA_COMPAT_NOTE_SECTION ".note.cuda.fwd_compatibility"
#define GH_CUDA_COMPAT_NOTE_OWNER "NVIDIA Corporation"
#define GH_CUDA_COMPAT_MAX_LIBS 64      /* compat libraries taken from the directory */
#define GH_CUDA_COMPAT_MAX_DIRENTS 4096 /* directory entries looked at */
#define GH_CUDA_COMPAT_MAX_BRANCHES 64

/* One ld.so.cache entry the compat package gives: key -> path in the container (64-bit). */
struct gh_compat_lib {
        char *soname;
        char *path;
};

struct gh_cuda_compat {
        bool checked;  /* the image was looked at */
        char *dir;     /* the directory looked at, as a container path */
        char *library; /* DIR/libcuda.so.X.Y.Z when one was found (used or not) */
        char *version; /* its version, from the file name: "590.44.01" */
        bool has_note;
        char *cuda_version;                             /* the note's "CUDA Version" ("13.1"), NULL without one */
        unsigned branches[GH_CUDA_COMPAT_MAX_BRANCHES]; /* the note's "Driver" list */
        size_t nbranches;
        bool used;
        char *reason;               /* one line: why it is used or not */
        struct gh_compat_lib *libs; /* when used: what goes into the ld cache */
        size_t nlibs;
};

/* Looks at DIR (NULL: GH_CUDA_COMPAT_DIR) in the container root rootfd and decides with the host
 * driver's version ("580.95.05"; NULL or "" when unknown) and, as NVIDIA does when the driver
 * version is unknown, the host's CUDA version ("13.0", may be NULL).  procfd: a procfs of our pid
 * namespace or AT_FDCWD (gh_open_regular).  Fills *out (free with gh_cuda_compat_free) and returns
 * 0 whatever the image holds; -1 only when memory runs out. */
int gh_cuda_compat_check(int rootfd, int procfd, const char *dir, const char *host_driver, const char *host_cuda,
                         struct gh_cuda_compat *out, gh_error_t *err);

/* The note's JSON (`{"Format":1,"CUDA Version":"13.1","Driver":[535,...,590],"Device":[...]}`)
 * into out->cuda_version and out->branches; -1 with a message when it is not that. */
int gh_cuda_compat_parse_note(const char *json, size_t len, struct gh_cuda_compat *out, gh_error_t *err);

void gh_cuda_compat_free(struct gh_cuda_compat *c);

#endif
