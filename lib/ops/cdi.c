/* CDI specs generated from the plan (cdi.h): the common edits, one device per GPU, MIG device and
 * "all", or one device for an MPS group.  The spec as a file (names, versions, comparison, reading
 * and writing) is cdi-write.c. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "capability.h"
#include "cdi.h"
#include "cleanup.h"
#include "discover.h"
#include "json.h"
#include "log.h"
#include "mps.h"
#include "oci.h"
#include "plan.h"
#include "request.h"
#include "rootfs.h"

/* What the devices' plans share. */
struct cdi_ctx {
        const struct gh_cdi_opts *o;
        struct gh_discovery d; /* the driver root, its files, every GPU (or the group's) */
        struct gh_plan common; /* the plan without any GPU: control nodes, files, links, libraries */
        struct gh_plan group;  /* an MPS group's spec: the plan of its GPU with the group joined */
        bool has_group;
};

static void host_path(const char *root, const char *p, char *out, size_t n)
{
        size_t rl = strlen(root);

        while (rl > 0 && root[rl - 1] == '/')
                rl--;
        snprintf(out, n, "%.*s%s", (int) rl, root, p);
}

static json_t *device_node(const struct cdi_ctx *c, const struct gh_item *it, gh_error_t *err)
{
        _cleanup_close_ int fd = gh_resolve(c->d.droot, it->src, O_PATH | O_NOFOLLOW, err);
        json_t *d = json_object();
        char hp[PATH_MAX];
        struct stat st;

        if (fd < 0 || d == NULL) {
                json_decref(d);
                return NULL;
        }
        if (fstat(fd, &st) < 0 || !S_ISCHR(st.st_mode) || st.st_rdev != it->rdev) {
                json_decref(d);
                gh_err(err, errno ? errno : EINVAL,
                       "device node %s is not the character device %u:%u it was a moment ago", it->src, major(it->rdev),
                       minor(it->rdev));
                return NULL;
        }
        host_path(c->o->root, it->src, hp, sizeof(hp));
        if (gh_json_set_new(d, "path", json_string(it->dst)) < 0 ||
            (strcmp(hp, it->dst) != 0 && gh_json_set_new(d, "hostPath", json_string(hp)) < 0) ||
            gh_json_set_new(d, "type", json_string("c")) < 0 ||
            gh_json_set_new(d, "major", json_integer(major(it->rdev))) < 0 ||
            gh_json_set_new(d, "minor", json_integer(minor(it->rdev))) < 0 ||
            /* the same access the hook path's device cgroup rule gives */
            gh_json_set_new(d, "permissions", json_string("rw")) < 0 ||
            /* mknod'ed by the runtime with the host node's permission bits, as a bind would show them */
            gh_json_set_new(d, "fileMode", json_integer(st.st_mode & 0777)) < 0) {
                json_decref(d);
                gh_err(err, ENOMEM, "writing the CDI spec");
                return NULL;
        }
        return d;
}

static json_t *mount_options(unsigned flags)
{
        json_t *a = json_array();

        if (a == NULL || ((flags & GH_MNT_RDONLY) && gh_json_append_new(a, json_string("ro")) < 0) ||
            ((flags & GH_MNT_NOSUID) && gh_json_append_new(a, json_string("nosuid")) < 0) ||
            ((flags & GH_MNT_NODEV) && gh_json_append_new(a, json_string("nodev")) < 0) ||
            ((flags & GH_MNT_NOEXEC) && gh_json_append_new(a, json_string("noexec")) < 0) ||
            gh_json_append_new(a, json_string("bind")) < 0) {
                json_decref(a);
                return NULL;
        }
        return a;
}

/* A bind mount of a planned file or directory.  An MPS group's directories are host paths, the
 * driver's files are under the driver root. */
static json_t *mount_entry(const struct cdi_ctx *c, const struct gh_item *it)
{
        json_t *m = json_object();
        char hp[PATH_MAX];

        if (it->host_src)
                snprintf(hp, sizeof(hp), "%s", it->src);
        else
                host_path(c->o->root, it->src, hp, sizeof(hp));
        if (gh_json_set_new(m, "hostPath", json_string(hp)) < 0 ||
            gh_json_set_new(m, "containerPath", json_string(it->dst)) < 0 ||
            gh_json_set_new(m, "options", mount_options(it->flags)) < 0) {
                json_decref(m);
                return NULL;
        }
        return m;
}

static bool is_mount(const struct gh_item *it) { return it->kind == GH_ITEM_FILE || it->kind == GH_ITEM_DIR; }

/* The same mount: same source, destination and flags. */
static bool mount_planned(const struct gh_plan *plan, const struct gh_item *it)
{
        for (size_t i = 0; i < plan->n; i++) {
                const struct gh_item *p = &plan->items[i];
                if (is_mount(p) && p->kind == it->kind && p->host_src == it->host_src && p->flags == it->flags &&
                    strcmp(p->dst, it->dst) == 0 && strcmp(p->src, it->src) == 0)
                        return true;
        }
        return false;
}

/* A mount of the common edits the hook makes (gh_cdi_opts.hook_mounts): the driver's read-only
 * files and directories; an MPS group's directories (host paths, writable) stay spec mounts. */
static bool hook_mount(const struct cdi_ctx *c, const struct gh_item *it)
{
        /* "::" splits the argument: a path holding it stays a spec mount. */
        return c->o->hook_mounts && is_mount(it) && !it->host_src &&
               (it->flags == GH_MNT_FILE || it->flags == (GH_MNT_FILE | GH_MNT_NOEXEC)) &&
               (!c->has_group || mount_planned(&c->group, it)) && strstr(c->o->root, "::") == NULL &&
               strstr(it->src, "::") == NULL && strstr(it->dst, "::") == NULL;
}

static bool planned(const struct gh_plan *plan, const char *dst)
{
        for (size_t i = 0; i < plan->n; i++)
                if (plan->items[i].kind == GH_ITEM_DEVICE && strcmp(plan->items[i].dst, dst) == 0)
                        return true;
        return false;
}

/* The device nodes of `plan` that `except` (NULL: none) does not have. */
static json_t *device_nodes(const struct cdi_ctx *c, const struct gh_plan *plan, const struct gh_plan *except,
                            gh_error_t *err)
{
        json_t *a = json_array();

        if (a == NULL) {
                gh_err(err, ENOMEM, "writing the CDI spec");
                return NULL;
        }
        for (size_t i = 0; i < plan->n; i++) {
                const struct gh_item *it = &plan->items[i];
                json_t *d;

                if (it->kind != GH_ITEM_DEVICE || (except != NULL && planned(except, it->dst)))
                        continue;
                d = device_node(c, it, err);
                if (d == NULL || json_array_append_new(a, d) < 0) {
                        json_decref(a);
                        return NULL;
                }
        }
        return a;
}

/* Appends "--OPT=A" or, with b, "--OPT=A::B". */
static int arg_add(json_t *args, const char *opt, const char *a, const char *b)
{
        _cleanup_free_ char *s = NULL;

        if (asprintf(&s, "--%s=%s%s%s", opt, a, b ? "::" : "", b ? b : "") < 0)
                return -1;
        return gh_json_append_new(args, json_string(s));
}

/* The createContainer hook: everything of the plan a runtime cannot do from the spec itself. */
static json_t *hook(const struct cdi_ctx *c)
{
        const struct gh_plan *p = &c->common;
        json_t *args = json_array(), *env = json_array();

        if (args == NULL || env == NULL || gh_json_append_new(args, json_string("gpu-cli")) < 0 ||
            (strcmp(c->o->root, "/") != 0 && arg_add(args, "root", c->o->root, NULL) < 0) ||
            gh_json_append_new(args, json_string("cdi-hook")) < 0)
                goto fail;
        /* First: the links and the ld cache may name what they mount. */
        for (size_t i = 0; i < p->n; i++) {
                const struct gh_item *it = &p->items[i];
                char hp[PATH_MAX];
                if (!hook_mount(c, it))
                        continue;
                host_path(c->o->root, it->src, hp, sizeof(hp));
                static const char *const opt[2][2] = { { "mount", "mount-noexec" },
                                                       { "mount-dir", "mount-dir-noexec" } };
                if (arg_add(args, opt[it->kind == GH_ITEM_DIR][(it->flags & GH_MNT_NOEXEC) != 0], hp, it->dst) < 0)
                        goto fail;
        }
        for (size_t i = 0; i < p->n; i++)
                if (p->items[i].kind == GH_ITEM_SYMLINK &&
                    arg_add(args, "link", p->items[i].target, p->items[i].dst) < 0)
                        goto fail;
        for (size_t i = 0; i < p->nlibs; i++)
                if (arg_add(args, p->libs[i].compat32 ? "library32" : "library", p->libs[i].soname, p->libs[i].path) <
                    0)
                        goto fail;
        /* CUDA forward compatibility is decided per image, when the hook runs (docs/cuda-compat.md). */
        for (size_t i = 0; i < p->nlibs; i++)
                if (!p->libs[i].compat32 && strcmp(p->libs[i].soname, "libcuda.so.1") == 0 && p->driver_version) {
                        if (arg_add(args, "cuda-compat", p->driver_version, NULL) < 0)
                                goto fail;
                        break;
                }
        if (p->mask_proc && gh_json_append_new(args, json_string("--mask-proc")) < 0)
                goto fail;
        if (c->o->check_requirements && gh_json_append_new(args, json_string("--check-requirements")) < 0)
                goto fail;
        /* The hook's environment is ours to choose: the runtime's would otherwise leak in. */
        if (gh_json_append_new(env, json_string("PATH=/usr/sbin:/usr/bin:/sbin:/bin")) < 0)
                goto fail;
        /* "o" steals args and env, also when packing fails. */
        return json_pack("{s:s, s:s, s:o, s:o}", "hookName", "createContainer", "path", c->o->hook_path, "args", args,
                         "env", env);
fail:
        json_decref(args);
        json_decref(env);
        return NULL;
}

static json_t *common_edits(const struct cdi_ctx *c, gh_error_t *err)
{
        const struct gh_plan *p = &c->common;
        json_t *e = json_object(), *env = json_array(), *mounts = json_array(), *hooks = json_array(), *nodes;

        if (e == NULL || gh_json_set_new(e, "env", env) < 0)
                goto nomem;
        /* An installed NVIDIA hook (or ours from hooks.d) then leaves the container alone. */
        if (gh_json_append_new(env, json_string("NVIDIA_VISIBLE_DEVICES=void")) < 0)
                goto nomem;
        nodes = device_nodes(c, p, NULL, err);
        if (nodes == NULL)
                goto fail;
        if (gh_json_set_new(e, "deviceNodes", nodes) < 0 || gh_json_set_new(e, "mounts", mounts) < 0)
                goto nomem;
        for (size_t i = 0; i < p->n; i++) {
                const struct gh_item *it = &p->items[i];

                if (!is_mount(it))
                        continue;
                /* a group's spec: not what joining the group leaves out (the host's MPS pipe directory) */
                if (c->has_group && !mount_planned(&c->group, it))
                        continue;
                if (hook_mount(c, it))
                        continue; /* in the hook's arguments */
                if (gh_json_append_new(mounts, mount_entry(c, it)) < 0)
                        goto nomem;
        }
        if (gh_json_set_new(e, "hooks", hooks) < 0 || gh_json_append_new(hooks, hook(c)) < 0)
                goto nomem;
        return e;
nomem:
        gh_err(err, ENOMEM, "writing the CDI spec");
fail:
        json_decref(e);
        return NULL;
}

/* Appends the device `name` whose plan is that of the request `devices`. */
static int add_device(const struct cdi_ctx *c, json_t *devices, const char *name, const char *request, gh_error_t *err)
{
        _cleanup_request_ struct gh_request req = GH_REQUEST_INIT;
        struct gh_plan plan = { 0 };
        json_t *d, *edits, *nodes;
        int r = -1;

        req.caps = c->o->caps;
        req.uid = c->o->uid;
        req.gid = c->o->gid;
        if (gh_request_set_devices(&req, request, err) < 0 ||
            gh_plan_build(c->d.droot, c->d.drv, &c->d.gpus, &req, &c->o->layout, &plan, err) < 0)
                return gh_err_wrap(err, "CDI device '%s'", name);
        nodes = device_nodes(c, &plan, &c->common, err);
        if (nodes == NULL)
                goto out;
        d = json_object();
        edits = json_object();
        if (gh_json_append_new(devices, d) < 0 || gh_json_set_new(d, "name", json_string(name)) < 0 ||
            gh_json_set_new(d, "containerEdits", edits) < 0 || gh_json_set_new(edits, "deviceNodes", nodes) < 0) {
                gh_err(err, ENOMEM, "writing the CDI spec");
                goto out;
        }
        r = 0;
out:
        gh_plan_free(&plan);
        return r;
}

/* The device mps-NAME of an MPS group: the group GPU's nodes and the group's directories, what the
 * plan of that GPU with the group joined has beyond the common plan.  The plan stays in c->group:
 * the common edits leave out what it does not have. */
static int add_group_device(struct cdi_ctx *c, json_t *devices, const struct gh_mps_group *g, gh_error_t *err)
{
        _cleanup_request_ struct gh_request req = GH_REQUEST_INIT;
        _cleanup_free_ char *name = NULL;
        json_t *d, *edits, *nodes, *mounts;

        if (asprintf(&name, GH_CDI_MPS_PREFIX "%s", g->name) < 0)
                return gh_err(err, ENOMEM, "writing the CDI spec");
        req.caps = c->o->caps;
        req.uid = c->o->uid;
        req.gid = c->o->gid;
        req.mps_group = strdup(g->name);
        req.mps_dir = c->o->mps_dir ? strdup(c->o->mps_dir) : NULL;
        if (req.mps_group == NULL || (c->o->mps_dir && req.mps_dir == NULL))
                return gh_err(err, ENOMEM, "writing the CDI spec");
        if (gh_request_set_devices(&req, g->gpu_uuid, err) < 0 ||
            gh_plan_build(c->d.droot, c->d.drv, &c->d.gpus, &req, &c->o->layout, &c->group, err) < 0)
                return gh_err_wrap(err, "CDI device '%s'", name);
        c->has_group = true;
        nodes = device_nodes(c, &c->group, &c->common, err);
        if (nodes == NULL)
                return -1;
        d = json_object();
        edits = json_object();
        mounts = json_array();
        if (gh_json_append_new(devices, d) < 0 || gh_json_set_new(d, "name", json_string(name)) < 0 ||
            gh_json_set_new(d, "containerEdits", edits) < 0 || gh_json_set_new(edits, "deviceNodes", nodes) < 0 ||
            gh_json_set_new(edits, "mounts", mounts) < 0)
                return gh_err(err, ENOMEM, "writing the CDI spec");
        for (size_t i = 0; i < c->group.n; i++) {
                const struct gh_item *it = &c->group.items[i];
                if (is_mount(it) && !mount_planned(&c->common, it) &&
                    gh_json_append_new(mounts, mount_entry(c, it)) < 0)
                        return gh_err(err, ENOMEM, "writing the CDI spec");
        }
        return 0;
}

/* The MPS group a group's spec is for: it must exist and run. */
static int load_group(const struct gh_cdi_opts *o, struct gh_mps_group *g, gh_error_t *err)
{
        if (gh_cdi_check_mps_name(o->mps_group, err) < 0)
                return -1;
        return gh_mps_load_running(o->mps_dir, o->mps_group, g, err);
}

static int add_devices(const struct cdi_ctx *c, json_t *devices, gh_error_t *err)
{
        unsigned names = c->o->names;
        char buf[64];

        for (size_t g = 0; g < c->d.gpus.n; g++) {
                const struct gh_gpu *gpu = &c->d.gpus.gpus[g];

                snprintf(buf, sizeof(buf), "%u", gpu->index);
                if (((names & GH_CDI_NAME_INDEX) && add_device(c, devices, buf, buf, err) < 0) ||
                    ((names & GH_CDI_NAME_UUID) && add_device(c, devices, gpu->uuid, gpu->uuid, err) < 0))
                        return -1;
                for (size_t m = 0; m < gpu->nmigs; m++) {
                        const struct gh_mig *mig = &gpu->migs[m];
                        snprintf(buf, sizeof(buf), "%u:%u", gpu->index, mig->index);
                        if (((names & GH_CDI_NAME_INDEX) && add_device(c, devices, buf, buf, err) < 0) ||
                            ((names & GH_CDI_NAME_UUID) && add_device(c, devices, mig->uuid, mig->uuid, err) < 0))
                                return -1;
                }
        }
        return add_device(c, devices, "all", "all", err);
}

int gh_cdi_generate(const struct gh_cdi_opts *o, json_t **out, gh_error_t *err)
{
        _cleanup_request_ struct gh_request req = GH_REQUEST_INIT;
        struct cdi_ctx c = { .o = o, .d = GH_DISCOVERY_INIT };
        struct gh_mps_group group;
        json_t *spec = NULL, *devices = NULL, *edits = NULL;
        char kind[512];
        int r = -1;

        *out = NULL;
        if (gh_cdi_check_kind(o->vendor, o->class_, err) < 0 || (o->mps_group && load_group(o, &group, err) < 0))
                return -1;
        req.caps = o->caps;
        req.uid = o->uid;
        req.gid = o->gid;
        /* Every GPU and MIG device: the list "all" loads (NVML only when there are MIG instances); a
         * group's spec needs its GPU only. */
        if (gh_request_set_devices(&req, o->mps_group ? group.gpu_uuid : "all", err) < 0 ||
            gh_discover(o->root, o->ldcache, o->path, &req, &c.d, err) < 0)
                goto out;
        if (gh_request_set_devices(&req, "none", err) < 0 ||
            gh_plan_build(c.d.droot, c.d.drv, &c.d.gpus, &req, &o->layout, &c.common, err) < 0)
                goto out;
        spec = json_object();
        devices = json_array();
        if (spec == NULL || devices == NULL) {
                gh_err(err, ENOMEM, "writing the CDI spec");
                goto out;
        }
        if (o->mps_group ? add_group_device(&c, devices, &group, err) < 0 : add_devices(&c, devices, err) < 0)
                goto out;
        edits = common_edits(&c, err);
        if (edits == NULL)
                goto out;
        snprintf(kind, sizeof(kind), "%s/%s", o->vendor, o->class_);
        if (gh_json_set_new(spec, "cdiVersion", json_string("0.3.0")) < 0 ||
            gh_json_set_new(spec, "kind", json_string(kind)) < 0 || json_object_set(spec, "devices", devices) < 0 ||
            json_object_set(spec, "containerEdits", edits) < 0 ||
            gh_json_set_new(spec, "cdiVersion", json_string(gh_cdi_min_version(spec))) < 0) {
                gh_err(err, ENOMEM, "writing the CDI spec");
                goto out;
        }
        *out = spec;
        spec = NULL;
        r = 0;
out:
        json_decref(spec);
        json_decref(devices);
        json_decref(edits);
        gh_plan_free(&c.common);
        gh_plan_free(&c.group);
        gh_discovery_free(&c.d);
        return r;
}
