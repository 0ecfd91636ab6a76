#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "capability.h"
#include "cleanup.h"
#include "devices.h"
#include "readfile.h"
#include "log.h"
#include "rootfs.h"

#define ANY_MAJOR (-1)
#define ANY_MINOR (-1)

void gh_device_list_free(struct gh_device_list *list)
{
        for (size_t i = 0; i < list->n; i++)
                free(list->v[i].path);
        free(list->v);
        *list = (struct gh_device_list) { 0 };
}

int gh_devices_cap_minor(int rootfd, const char *path, unsigned *minor, gh_error_t *err)
{
        static const char tag[] = "DeviceFileMinor:";
        _cleanup_free_ char *text = NULL;
        const char *p;

        if (gh_read_at(rootfd, path, 4096, false, &text, NULL, err) < 0)
                return -1;
        for (p = text; p != NULL && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
                char *end;
                unsigned long v;
                if (strncmp(p, tag, sizeof(tag) - 1) != 0)
                        continue;
                p += sizeof(tag) - 1;
                while (*p == ' ' || *p == '\t')
                        p++;
                errno = 0;
                v = strtoul(p, &end, 10);
                if (end == p || errno != 0 || v > 0xfffff || (*end != '\n' && *end != '\0' && *end != ' '))
                        break;
                *minor = (unsigned) v;
                return 0;
        }
        return gh_err(err, 0, "%s has no valid 'DeviceFileMinor:' line", path);
}

static int add_node(int rootfd, struct gh_device_list *out, const char *path, int major, int minor, bool required,
                    gh_error_t *err)
{
        _cleanup_error_ gh_error_t why = NULL;
        _cleanup_close_ int fd = gh_resolve(rootfd, path, O_PATH, &why);
        struct stat st;

        if (fd < 0) {
                if (required)
                        return gh_err(err, why->code,
                                      "device node %s is missing; is the nvidia kernel module loaded "
                                      "(nvidia-modprobe creates the nodes)?",
                                      path);
                gh_debug("skipping device %s: %s", path, why->msg);
                return 0;
        }
        if (fstat(fd, &st) < 0)
                return gh_err(err, errno, "inspecting device node %s", path);
        if (!S_ISCHR(st.st_mode))
                return gh_err(err, 0, "%s is not a character device; recreate it (nvidia-modprobe)", path);
        if ((major != ANY_MAJOR && major(st.st_rdev) != (unsigned) major) ||
            (minor != ANY_MINOR && minor(st.st_rdev) != (unsigned) minor)) {
                char want[32];
                if (major == ANY_MAJOR)
                        snprintf(want, sizeof(want), "minor %d", minor);
                else
                        snprintf(want, sizeof(want), "%d:%d", major, minor);
                return gh_err(err, 0, "%s has device number %u:%u, expected %s; recreate it (nvidia-modprobe)", path,
                              major(st.st_rdev), minor(st.st_rdev), want);
        }
        for (size_t i = 0; i < out->n; i++)
                if (strcmp(out->v[i].path, path) == 0)
                        return 0;
        if (out->n == out->cap) {
                size_t cap = out->cap ? out->cap * 2 : 8;
                struct gh_device_node *v = reallocarray(out->v, cap, sizeof(*v));
                if (v == NULL)
                        return gh_err(err, ENOMEM, "listing device nodes");
                out->v = v;
                out->cap = cap;
        }
        out->v[out->n].path = strdup(path);
        if (out->v[out->n].path == NULL)
                return gh_err(err, ENOMEM, "listing device nodes");
        out->v[out->n++].rdev = st.st_rdev;
        return 0;
}

/* The nvidia-capN node named by a capabilities access file; absent files are skipped. */
static int add_cap(int rootfd, struct gh_device_list *out, const char *access, gh_error_t *err)
{
        _cleanup_error_ gh_error_t why = NULL;
        char node[64];
        unsigned minor;

        if (gh_devices_cap_minor(rootfd, access, &minor, &why) < 0) {
                if (why->code != ENOENT)
                        return gh_err(err, 0, "%s", why->msg);
                gh_debug("skipping %s: %s", access, why->msg);
                return 0;
        }
        snprintf(node, sizeof(node), "/dev/nvidia-caps/nvidia-cap%u", minor);
        return add_node(rootfd, out, node, ANY_MAJOR, (int) minor, false, err);
}

static int collect(int rootfd, const struct gh_devices_request *req, struct gh_device_list *out, gh_error_t *err)
{
        unsigned caps = gh_capability_expand(req->caps);
        char path[128];

        if (add_node(rootfd, out, "/dev/nvidiactl", GH_NVIDIA_MAJOR, GH_NVIDIACTL_MINOR, true, err) < 0)
                return -1;
        if ((caps & GH_CAP_COMPUTE) &&
            (add_node(rootfd, out, "/dev/nvidia-uvm", ANY_MAJOR, ANY_MINOR, false, err) < 0 ||
             add_node(rootfd, out, "/dev/nvidia-uvm-tools", ANY_MAJOR, ANY_MINOR, false, err) < 0))
                return -1;
        if ((caps & GH_CAP_DISPLAY) &&
            add_node(rootfd, out, "/dev/nvidia-modeset", GH_NVIDIA_MAJOR, GH_NVIDIA_MODESET_MINOR, false, err) < 0)
                return -1;
        for (size_t i = 0; i < req->nminors; i++) {
                snprintf(path, sizeof(path), "/dev/nvidia%u", req->minors[i]);
                if (add_node(rootfd, out, path, GH_NVIDIA_MAJOR, (int) req->minors[i], true, err) < 0)
                        return -1;
        }
        for (size_t i = 0; i < req->nmigs; i++) {
                const struct gh_devices_mig *m = &req->migs[i];
                snprintf(path, sizeof(path), "/proc/driver/nvidia/capabilities/gpu%u/mig/gi%u/access", m->gpu_minor,
                         m->gi);
                if (add_cap(rootfd, out, path, err) < 0)
                        return -1;
                snprintf(path, sizeof(path), "/proc/driver/nvidia/capabilities/gpu%u/mig/gi%u/ci%u/access",
                         m->gpu_minor, m->gi, m->ci);
                if (add_cap(rootfd, out, path, err) < 0)
                        return -1;
        }
        if (req->mig_config && add_cap(rootfd, out, "/proc/driver/nvidia/capabilities/mig/config", err) < 0)
                return -1;
        if (req->mig_monitor && add_cap(rootfd, out, "/proc/driver/nvidia/capabilities/mig/monitor", err) < 0)
                return -1;
        for (size_t i = 0; i < req->nimex; i++) {
                snprintf(path, sizeof(path), "/dev/nvidia-caps-imex-channels/channel%u", req->imex_channels[i]);
                if (add_node(rootfd, out, path, ANY_MAJOR, (int) req->imex_channels[i], false, err) < 0)
                        return -1;
        }
        return 0;
}

int gh_devices_collect(int rootfd, const struct gh_devices_request *req, struct gh_device_list *out, gh_error_t *err)
{
        *out = (struct gh_device_list) { 0 };
        if (collect(rootfd, req, out, err) < 0) {
                gh_device_list_free(out);
                return -1;
        }
        return 0;
}
