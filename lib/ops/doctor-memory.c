/* gpu-cli doctor: the GPU memory that no running container owns, and the pod a container belongs to
 * (attribution as gpu-cli ps does it, front/attribute.h). */
#include <inttypes.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>

#include "attribute.h"
#include "cleanup.h"
#include "doctor-memory.h"
#include "doctor-report.h"
#include "gpus.h"
#include "podrecord.h"

static const char *dir_or(const char *dir, const char *fallback) { return dir ? dir : fallback; }

static void attribution_of(const struct gh_doctor_opts *o, struct gh_attribution *a)
{
        *a = (struct gh_attribution) {
                .state_roots = o->state_roots,
                .records_dir = o->config ? o->config->containers.dir : NULL,
                .mps_dir = dir_or(o->mps_dir, o->config ? o->config->mps.dir : NULL),
        };
}

/* Appends to buf (size bytes, already holding `used`) */
__attribute__((format(printf, 4, 5))) static size_t add(char *buf, size_t size, size_t used, const char *fmt, ...)
{
        va_list ap;
        int n;

        if (used >= size)
                return used;
        va_start(ap, fmt);
        n = vsnprintf(buf + used, size - used, fmt, ap);
        va_end(ap);
        return n < 0 ? used : used + (size_t) n;
}

void gh_doctor_memory_host(int rootfd, const struct gh_doctor_opts *o, struct gh_doctor *d)
{
        struct gh_gpus_opts gopts = GH_GPUS_OPTS_DEFAULT;
        _cleanup_gpu_list_ struct gh_gpu_list list = { 0 };
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_attribution a;
        char ev[2048] = "", fix[1024] = "";
        size_t nev = 0, nfix = 0;
        unsigned left = 0, host = 0;
        uint64_t left_bytes = 0, host_bytes = 0;

        gopts.uid = o->uid;
        gopts.gid = o->gid;
        gopts.with_usage = true;
        if (gh_gpus_load(rootfd, &gopts, &list, &err) < 0) {
                gh_doctor_add(d, "gpu-memory", GH_CHECK_WARN, "NVML does not say which processes use the GPUs.",
                              "run nvidia-smi on the host; gpu-cli ps --json shows the same", "%s", err->msg);
                return;
        }
        attribution_of(o, &a);
        gh_usage_attribute(&list, &a);
        for (size_t g = 0; g < list.n; g++) {
                for (size_t i = 0; list.gpus[g].usage && i < list.gpus[g].usage->nprocs; i++) {
                        const struct gh_gpu_proc *p = &list.gpus[g].usage->procs[i];
                        uint64_t m = p->used_memory == GH_UNKNOWN_U64 ? 0 : p->used_memory;
                        if (!gh_owner_unowned(p->owner.kind))
                                continue;
                        if (p->owner.kind == GH_OWNER_HOST) {
                                host++;
                                host_bytes += m;
                                nev = add(ev, sizeof(ev), nev, "%sGPU %u: PID %d (%s) on the host, %" PRIu64 " MiB",
                                          nev ? "; " : "", list.gpus[g].index, (int) p->pid, p->owner.comm, m >> 20);
                                continue;
                        }
                        left++;
                        left_bytes += m;
                        if (p->owner.kind == GH_OWNER_CONTAINER_GONE) {
                                nev = add(ev, sizeof(ev), nev,
                                          "%sGPU %u: PID %d (%s) of %s container %s, whose init is gone, %" PRIu64
                                          " MiB",
                                          nev ? "; " : "", list.gpus[g].index, (int) p->pid, p->owner.comm,
                                          p->owner.runtime, p->owner.id, m >> 20);
                                nfix = add(fix, sizeof(fix), nfix, "%s%d", nfix ? " " : "kill ", (int) p->pid);
                        } else {
                                nev = add(ev, sizeof(ev), nev,
                                          "%sGPU %u: PID %d (%s), the MPS server of group %s, whose daemon is gone, "
                                          "%" PRIu64 " MiB",
                                          nev ? "; " : "", list.gpus[g].index, (int) p->pid, p->owner.comm,
                                          p->owner.mps_group, m >> 20);
                                nfix = add(fix, sizeof(fix), nfix, "%sgpu-cli mps%s%s stop %s", nfix ? "; " : "",
                                           o->mps_dir ? " --mps-dir=" : "", o->mps_dir ? o->mps_dir : "",
                                           p->owner.mps_group);
                        }
                }
        }
        if (left > 0)
                gh_doctor_add(d, "gpu-memory", GH_CHECK_WARN,
                              "GPU memory stays allocated by processes that outlived their container or MPS group: the "
                              "next containers get less.",
                              fix, "%u process(es) hold %" PRIu64 " MiB no running container owns: %s", left,
                              left_bytes >> 20, ev);
        else if (host > 0)
                gh_doctor_add(d, "gpu-memory", GH_CHECK_OK, NULL, NULL,
                              "%u host process(es) outside containers hold %" PRIu64 " MiB: %s", host, host_bytes >> 20,
                              ev);
        else
                gh_doctor_add(d, "gpu-memory", GH_CHECK_OK, NULL, NULL,
                              "no GPU memory is held outside running containers");
}

void gh_doctor_pod(const struct gh_doctor_opts *o, pid_t pid, struct gh_doctor *d)
{
        struct gh_attribution a;
        struct gh_proc_owner w;

        attribution_of(o, &a);
        if (gh_attribute_pid(pid, &a, &w) < 0 || !w.in_container || w.pod.name[0] == '\0')
                return; /* no pod: a plain Docker or podman container */
        gh_doctor_add(d, "pod", GH_CHECK_OK, NULL, NULL, "%s container %s is container '%s' of pod %s%s%s%s%s",
                      w.runtime, w.id, w.pod.container[0] ? w.pod.container : "?",
                      w.pod.namespace_[0] ? w.pod.namespace_ : "", w.pod.namespace_[0] ? "/" : "", w.pod.name,
                      w.pod.uid[0] ? ", uid " : "", w.pod.uid);
}

void gh_doctor_records_host(const struct gh_doctor_opts *o, struct gh_doctor *d)
{
        const char *dir = o->config ? o->config->containers.dir : NULL;
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_closedir_ DIR *dd = NULL;
        struct dirent *de;
        int fd;
        size_t n = 0;

        if (dir == NULL) {
                gh_doctor_add(d, "container-records", GH_CHECK_OK, NULL, NULL,
                              "off (containers.dir is empty): ps and metrics name no pods");
                return;
        }
        fd = gh_record_dir_open(dir, false, &err);
        if (fd < 0 && err->code == ENOENT) {
                gh_doctor_add(d, "container-records", GH_CHECK_OK, NULL, NULL,
                              "no GPU container recorded yet (%s does not exist)", dir);
                return;
        }
        if (fd < 0) {
                gh_doctor_add(d, "container-records", GH_CHECK_WARN,
                              "gpu-hook cannot keep its container records there, so ps, top and metrics cannot name "
                              "pods or tell a leftover from a running container.",
                              "chown root: the directory and chmod 0700 it, or remove it (gpu-hook makes it again)",
                              "%s", err->msg);
                return;
        }
        int rfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        close(fd);
        if (rfd >= 0 && (dd = fdopendir(rfd)) == NULL)
                close(rfd);
        while (dd && (de = readdir(dd)) != NULL)
                n += de->d_name[0] != '.';
        gh_doctor_add(d, "container-records", GH_CHECK_OK, NULL, NULL, "%zu record(s) in %s", n, dir);
}
