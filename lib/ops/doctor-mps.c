/* gpu-cli doctor's MPS checks (docs/mps.md): on the host, one check per group (is its daemon
 * alive?); for a container that asked for a group, whether the group runs, its limits, and whether
 * the container really has the group's pipe directory at /tmp/nvidia-mps and its shm at /dev/shm:
 * the directory the container sees there (reached through /proc/PID/root with the in-root
 * resolver) must be the very directory of the group on the host (same device and inode). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cleanup.h"
#include "doctor-mps.h"
#include "doctor-report.h"
#include "mps.h"
#include "oci.h"
#include "rootfs.h"

static const char *mps_dir(const struct gh_doctor_opts *o)
{
        if (o->mps_dir != NULL)
                return o->mps_dir;
        return o->config && o->config->mps.dir ? o->config->mps.dir : GH_MPS_DEFAULT_DIR;
}

/* The directory a fix names: NULL when it is the default (the command needs no option). */
static const char *o_dir(const struct gh_doctor_opts *o)
{
        const char *dir = mps_dir(o);
        return strcmp(dir, GH_MPS_DEFAULT_DIR) == 0 ? NULL : dir;
}

/* "threads 30%, memory 4096M" */
static void limits_text(const struct gh_mps_group *g, char *buf, size_t size)
{
        char t[32] = "no thread limit", m[48] = "no memory limit";

        if (g->threads)
                snprintf(t, sizeof(t), "threads %d%%", g->threads);
        if (g->memory_mib)
                snprintf(m, sizeof(m), "memory %lluM", g->memory_mib);
        snprintf(buf, size, "%s, %s", t, m);
}

void gh_doctor_mps_host(const struct gh_doctor_opts *o, struct gh_doctor *d)
{
        _cleanup_free_ struct gh_mps_group *groups = NULL;
        _cleanup_error_ gh_error_t err = NULL;
        const char *dir = mps_dir(o);
        size_t n = 0;

        if (gh_mps_list(dir, &groups, &n, &err) < 0) {
                gh_doctor_add(d, "mps-groups", GH_CHECK_WARN,
                              "The MPS groups cannot be read, so containers cannot join them.",
                              "fix what the message names (the directory must be root's and not writable by others)",
                              "%s", err->msg);
                return;
        }
        for (size_t i = 0; i < n; i++) {
                const struct gh_mps_group *g = &groups[i];
                char lim[96], cause[256];
                limits_text(g, lim, sizeof(lim));
                if (g->alive) {
                        gh_doctor_add(d, "mps-group", GH_CHECK_OK, NULL, NULL, "%s: daemon %d alive on GPU %u (%s), %s",
                                      g->name, (int) g->pid, g->gpu_index, g->gpu_uuid, lim);
                        continue;
                }
                snprintf(cause, sizeof(cause),
                         "The control daemon of MPS group %s is gone: containers of the group find no "
                         "MPS server, and new ones cannot join it.",
                         g->name);
                gh_doctor_add(d, "mps-group", GH_CHECK_FAIL, cause, "then restart the group's containers",
                              "%s: daemon %d is not running (GPU %u, %s; state %s/%s)", g->name, (int) g->pid,
                              g->gpu_index, lim, dir, g->name);
                gh_doctor_fix_mps(d, GH_FIX_MPS_RESTART, g, o_dir(o));
        }
}

/* 0 when the container's dst is the host directory dir/name/sub (the same inode). */
static int same_dir(int crootfd, const char *dst, const char *dir, const char *name, const char *sub, char *why,
                    size_t size)
{
        char host[PATH_MAX];
        struct stat hs, cs;

        snprintf(host, sizeof(host), "%s/%s/%s", dir, name, sub);
        if (stat(host, &hs) < 0)
                return snprintf(why, size, "%s: %s", host, strerror(errno)), -1;
        _cleanup_close_ int fd = gh_resolve(crootfd, dst, O_PATH | O_DIRECTORY, NULL);
        if (fd < 0 || fstat(fd, &cs) < 0)
                return snprintf(why, size, "the container has no directory %s", dst), -1;
        if (cs.st_dev != hs.st_dev || cs.st_ino != hs.st_ino)
                return snprintf(why, size, "the container's %s is not %s", dst, host), -1;
        return 0;
}

void gh_doctor_mps_container(const struct gh_doctor_opts *o, const char *name, bool from_env, int crootfd,
                             struct gh_doctor *d)
{
        _cleanup_error_ gh_error_t err = NULL;
        const char *dir = mps_dir(o),
                   *how = from_env ? "GPU_HOOK_MPS_GROUP" : "annotation " GH_OCI_ANNOTATION_MPS_GROUP;
        struct gh_mps_group g;
        char lim[96], why[PATH_MAX + 64], cause[512];

        if (gh_mps_load(dir, name, &g, &err) < 0) {
                snprintf(cause, sizeof(cause),
                         "The container asks for MPS group %s, which does not exist under %s: its CUDA "
                         "programs find no MPS daemon.",
                         name, dir);
                gh_doctor_add(d, "mps-group", GH_CHECK_FAIL, cause, "then restart the container", "%s=%s: %s", how,
                              name, err->msg);
                memset(&g, 0, sizeof(g));
                snprintf(g.name, sizeof(g.name), "%s", name);
                gh_doctor_fix_mps(d, GH_FIX_MPS_START, &g, o_dir(o));
                return;
        }
        limits_text(&g, lim, sizeof(lim));
        if (!g.alive) {
                snprintf(cause, sizeof(cause),
                         "The control daemon of MPS group %s is gone: CUDA programs in the container "
                         "cannot reach an MPS server.",
                         name);
                gh_doctor_add(d, "mps-group", GH_CHECK_FAIL, cause, "then restart the container",
                              "%s=%s: daemon %d is not running (GPU %u, %s)", how, name, (int) g.pid, g.gpu_index, lim);
                gh_doctor_fix_mps(d, GH_FIX_MPS_RESTART, &g, o_dir(o));
                return;
        }
        if (same_dir(crootfd, GH_MPS_CONTAINER_PIPE_DIR, dir, name, "pipe", why, sizeof(why)) < 0 ||
            same_dir(crootfd, GH_MPS_CONTAINER_SHM_DIR, dir, name, "shm", why, sizeof(why)) < 0) {
                snprintf(cause, sizeof(cause),
                         "The container asks for MPS group %s but does not see the group's pipe directory "
                         "and shm: the hook did not run for it, or the group was restarted after it started; its CUDA "
                         "programs bypass the group's limits or find no daemon.",
                         name);
                gh_doctor_add(d, "mps-group", GH_CHECK_FAIL, cause,
                              "restart the container with gpu-hook as its hook (it mounts the group's directories)",
                              "%s=%s (daemon %d alive, %s): %s", how, name, (int) g.pid, lim, why);
                return;
        }
        gh_doctor_add(d, "mps-group", GH_CHECK_OK, NULL, NULL,
                      "%s=%s: daemon %d alive on GPU %u (%s), %s; " GH_MPS_CONTAINER_PIPE_DIR
                      " and " GH_MPS_CONTAINER_SHM_DIR " are the group's",
                      how, name, (int) g.pid, g.gpu_index, g.gpu_uuid, lim);
}
