/* `--ldconfig=@HOSTPATH`: run the HOST's ldconfig over a container rootfs, sandboxed
 * (docs/threat-model.md#rule-3).  The image's own ldconfig never runs.
 *
 *   1. gh_ldconfig_open("@/sbin/ldconfig") in the host mount namespace: the binary is copied into a
 *      sealed memfd, so nothing the container does later can change or replace what runs.
 *   2. setns() into the container's mount namespace, open the rootfs there, enter GH_PHASE_LDCONFIG.
 *   3. gh_ldconfig_run(memfd, rootfd, dirs): a child in new mount/pid/ipc/net/uts namespaces
 *      pivots into the rootfs, takes the rootfs owner's uid/gid with no capability at all,
 *      no_new_privs, rlimits, an empty environment and a seccomp allowlist, and execs the memfd as
 *      `ldconfig DIR...` (the dirs are scanned even when the image's ld.so.conf omits them).
 *
 * No capability is kept for ldconfig: it runs as the owner of the rootfs directory (uid 0 for a
 * rootful container), which owns /etc and the library directories, so plain permissions let it
 * write /etc/ld.so.cache and the SONAME links.  CAP_DAC_OVERRIDE would add nothing for a sane
 * image and would let it write files in the rootfs (or in a volume) that their modes protect. */
#ifndef GH_LDCONFIG_H
#define GH_LDCONFIG_H

#include "error.h"

/* Default time a sandboxed ldconfig may take before it is killed. */
#define GH_LDCONFIG_TIMEOUT_MS 10000

/* spec is "@/absolute/host/path" of a statically linked ELF ldconfig.  Returns a sealed
 * (shrink, grow, write, seal), close-on-exec memfd holding a copy of it. */
int gh_ldconfig_open(const char *spec, gh_error_t *err);

/* Runs the sealed ldconfig in memfd over the rootfs (an fd opened in the current mount namespace,
 * which is the container's), scanning libdirs (absolute paths inside the rootfs, NULL-terminated,
 * may be NULL).  Needs GH_PHASE_LDCONFIG's capabilities.  Fails with ldconfig's exit status or
 * signal and its last line of output. */
int gh_ldconfig_run(int memfd, int container_rootfd, const char *const *libdirs, gh_error_t *err);

/* Changes the timeout of later gh_ldconfig_run() calls (tests). */
void gh_ldconfig_set_timeout(unsigned timeout_ms);

#endif
