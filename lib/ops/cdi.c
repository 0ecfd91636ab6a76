#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "capability.h"
#include "cdi.h"
#include "cleanup.h"
#include "driver.h"
#include "gpus.h"
#include "log.h"
#include "mps.h"
#include "oci.h"
#include "plan.h"
#include "request.h"
#include "rootfs.h"

/* What the devices' plans share. */
struct cdi_ctx {
        const struct gh_cdi_opts *o;
        int droot;
        struct gh_driver *drv;
        struct gh_gpu_list gpus;
        struct gh_plan common; /* the plan without any GPU: control nodes, files, links, libraries */
        struct gh_plan group;  /* an MPS group's spec: the plan of its GPU with the group joined */
        bool has_group;
};

static bool is_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

static bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/* CDI's rules: a letter first, an alphanumeric last, in between alphanumerics and `extra`. */
static bool valid_name(const char *s, const char *extra)
{
        size_t n = strlen(s);

        if (n == 0 || n > 255 || !is_letter(s[0]) || !is_alnum(s[n - 1]))
                return false;
        for (size_t i = 1; i + 1 < n; i++)
                if (!is_alnum(s[i]) && strchr(extra, s[i]) == NULL)
                        return false;
        return true;
}

int gh_cdi_check_mps_name(const char *group, gh_error_t *err)
{
        char name[GH_MPS_NAME_MAX + sizeof(GH_CDI_MPS_PREFIX)];

        if (gh_mps_name_check(group, err) < 0)
                return gh_err_kind(err, GH_ERR_USAGE);
        snprintf(name, sizeof(name), GH_CDI_MPS_PREFIX "%s", group);
        if (!valid_name(name, "_-.:"))
                return gh_err(err, EINVAL,
                              "MPS group '%s' cannot be a CDI device: CDI device names end in a letter or digit; "
                              "start the group under another name",
                              group),
                       gh_err_kind(err, GH_ERR_USAGE);
        return 0;
}

int gh_cdi_check_kind(const char *vendor, const char *class_, gh_error_t *err)
{
        if (!valid_name(vendor, "_-."))
                return gh_err(
                        err, EINVAL,
                        "invalid vendor '%s': a letter first, then letters, digits, '_', '-' or '.', ending in a letter or digit (e.g. nvidia.com)",
                        vendor);
        if (!valid_name(class_, "_-"))
                return gh_err(
                        err, EINVAL,
                        "invalid class '%s': a letter first, then letters, digits, '_' or '-', ending in a letter or digit (e.g. gpu)",
                        class_);
        return 0;
}

static void host_path(const char *root, const char *p, char *out, size_t n)
{
        size_t rl = strlen(root);

        while (rl > 0 && root[rl - 1] == '/')
                rl--;
        snprintf(out, n, "%.*s%s", (int) rl, root, p);
}

/* jansson setters that cannot fail silently: any NULL makes the whole object NULL. */
static int set_new(json_t *obj, const char *key, json_t *v)
{
        return v == NULL ? -1 : json_object_set_new(obj, key, v);
}

static int append_new(json_t *arr, json_t *v) { return v == NULL ? -1 : json_array_append_new(arr, v); }

static json_t *device_node(const struct cdi_ctx *c, const struct gh_item *it, gh_error_t *err)
{
        _cleanup_close_ int fd = gh_resolve(c->droot, it->src, O_PATH | O_NOFOLLOW, err);
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
        if (set_new(d, "path", json_string(it->dst)) < 0 ||
            (strcmp(hp, it->dst) != 0 && set_new(d, "hostPath", json_string(hp)) < 0) ||
            set_new(d, "type", json_string("c")) < 0 || set_new(d, "major", json_integer(major(it->rdev))) < 0 ||
            set_new(d, "minor", json_integer(minor(it->rdev))) < 0 ||
            /* the same access the hook path's device cgroup rule gives */
            set_new(d, "permissions", json_string("rw")) < 0 ||
            /* mknod'ed by the runtime with the host node's permission bits, as a bind would show them */
            set_new(d, "fileMode", json_integer(st.st_mode & 0777)) < 0) {
                json_decref(d);
                gh_err(err, ENOMEM, "writing the CDI spec");
                return NULL;
        }
        return d;
}

static json_t *mount_options(unsigned flags)
{
        json_t *a = json_array();

        if (a == NULL || ((flags & GH_MNT_RDONLY) && append_new(a, json_string("ro")) < 0) ||
            ((flags & GH_MNT_NOSUID) && append_new(a, json_string("nosuid")) < 0) ||
            ((flags & GH_MNT_NODEV) && append_new(a, json_string("nodev")) < 0) ||
            ((flags & GH_MNT_NOEXEC) && append_new(a, json_string("noexec")) < 0) ||
            append_new(a, json_string("bind")) < 0) {
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
        if (set_new(m, "hostPath", json_string(hp)) < 0 || set_new(m, "containerPath", json_string(it->dst)) < 0 ||
            set_new(m, "options", mount_options(it->flags)) < 0) {
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
        return append_new(args, json_string(s));
}

/* The createContainer hook: everything of the plan a runtime cannot do from the spec itself. */
static json_t *hook(const struct cdi_ctx *c)
{
        const struct gh_plan *p = &c->common;
        json_t *args = json_array(), *env = json_array();

        if (args == NULL || env == NULL || append_new(args, json_string("gpu-cli")) < 0 ||
            (strcmp(c->o->root, "/") != 0 && arg_add(args, "root", c->o->root, NULL) < 0) ||
            append_new(args, json_string("cdi-hook")) < 0)
                goto fail;
        for (size_t i = 0; i < p->n; i++)
                if (p->items[i].kind == GH_ITEM_SYMLINK &&
                    arg_add(args, "link", p->items[i].target, p->items[i].dst) < 0)
                        goto fail;
        for (size_t i = 0; i < p->nlibs; i++)
                if (arg_add(args, p->libs[i].compat32 ? "library32" : "library", p->libs[i].soname, p->libs[i].path) <
                    0)
                        goto fail;
        if (p->mask_proc && append_new(args, json_string("--mask-proc")) < 0)
                goto fail;
        /* The hook's environment is ours to choose: the runtime's would otherwise leak in. */
        if (append_new(env, json_string("PATH=/usr/sbin:/usr/bin:/sbin:/bin")) < 0)
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

        if (e == NULL || set_new(e, "env", env) < 0)
                goto nomem;
        /* An installed NVIDIA hook (or ours from hooks.d) then leaves the container alone. */
        if (append_new(env, json_string("NVIDIA_VISIBLE_DEVICES=void")) < 0)
                goto nomem;
        nodes = device_nodes(c, p, NULL, err);
        if (nodes == NULL)
                goto fail;
        if (set_new(e, "deviceNodes", nodes) < 0 || set_new(e, "mounts", mounts) < 0)
                goto nomem;
        for (size_t i = 0; i < p->n; i++) {
                const struct gh_item *it = &p->items[i];

                if (!is_mount(it))
                        continue;
                /* a group's spec: not what joining the group leaves out (the host's MPS pipe directory) */
                if (c->has_group && !mount_planned(&c->group, it))
                        continue;
                if (append_new(mounts, mount_entry(c, it)) < 0)
                        goto nomem;
        }
        if (set_new(e, "hooks", hooks) < 0 || append_new(hooks, hook(c)) < 0)
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
            gh_plan_build(c->droot, c->drv, &c->gpus, &req, &c->o->layout, &plan, err) < 0)
                return gh_err_wrap(err, "CDI device '%s'", name);
        nodes = device_nodes(c, &plan, &c->common, err);
        if (nodes == NULL)
                goto out;
        d = json_object();
        edits = json_object();
        if (append_new(devices, d) < 0 || set_new(d, "name", json_string(name)) < 0 ||
            set_new(d, "containerEdits", edits) < 0 || set_new(edits, "deviceNodes", nodes) < 0) {
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
            gh_plan_build(c->droot, c->drv, &c->gpus, &req, &c->o->layout, &c->group, err) < 0)
                return gh_err_wrap(err, "CDI device '%s'", name);
        c->has_group = true;
        nodes = device_nodes(c, &c->group, &c->common, err);
        if (nodes == NULL)
                return -1;
        d = json_object();
        edits = json_object();
        mounts = json_array();
        if (append_new(devices, d) < 0 || set_new(d, "name", json_string(name)) < 0 ||
            set_new(d, "containerEdits", edits) < 0 || set_new(edits, "deviceNodes", nodes) < 0 ||
            set_new(edits, "mounts", mounts) < 0)
                return gh_err(err, ENOMEM, "writing the CDI spec");
        for (size_t i = 0; i < c->group.n; i++) {
                const struct gh_item *it = &c->group.items[i];
                if (is_mount(it) && !mount_planned(&c->common, it) && append_new(mounts, mount_entry(c, it)) < 0)
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

        for (size_t g = 0; g < c->gpus.n; g++) {
                const struct gh_gpu *gpu = &c->gpus.gpus[g];

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
        struct cdi_ctx c = { .o = o, .droot = -1 };
        struct gh_driver_opts dopts;
        struct gh_mps_group group;
        json_t *spec = NULL, *devices = NULL, *edits = NULL;
        char kind[512];
        int r = -1;

        *out = NULL;
        if (gh_cdi_check_kind(o->vendor, o->class_, err) < 0 || (o->mps_group && load_group(o, &group, err) < 0))
                return -1;
        c.droot = gh_rootfs_open(o->root, err);
        if (c.droot < 0)
                return gh_err_wrap(err, "driver root");
        req.caps = o->caps;
        req.uid = o->uid;
        req.gid = o->gid;
        gh_plan_driver_opts(&req, o->ldcache, o->path, &dopts);
        if (gh_driver_discover(c.droot, &dopts, &c.drv, err) < 0)
                goto out;
        /* Every GPU and MIG device: the list "all" loads (NVML only when there are MIG instances); a
         * group's spec needs its GPU only. */
        if (gh_request_set_devices(&req, o->mps_group ? group.gpu_uuid : "all", err) < 0 ||
            gh_plan_load_gpus(c.droot, &req, &c.gpus, err) < 0)
                goto out;
        if (gh_request_set_devices(&req, "none", err) < 0 ||
            gh_plan_build(c.droot, c.drv, &c.gpus, &req, &o->layout, &c.common, err) < 0)
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
        if (set_new(spec, "cdiVersion", json_string("0.3.0")) < 0 || set_new(spec, "kind", json_string(kind)) < 0 ||
            json_object_set(spec, "devices", devices) < 0 || json_object_set(spec, "containerEdits", edits) < 0 ||
            set_new(spec, "cdiVersion", json_string(gh_cdi_min_version(spec))) < 0) {
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
        gh_gpu_list_free(&c.gpus);
        if (c.drv)
                gh_driver_free(c.drv);
        if (c.droot >= 0)
                close(c.droot);
        return r;
}

/* ---- versions and comparison ---- */

/* Whether an entry of edits[list] has a non-empty string `key`: a field a version added
 * (deviceNodes[].hostPath came with 0.5.0, mounts[].type with 0.4.0). */
static bool edits_use(json_t *edits, const char *list, const char *key)
{
        json_t *entries = json_object_get(edits, list), *e;
        size_t i;

        json_array_foreach (entries, i, e) {
                json_t *v = json_object_get(e, key);
                if (json_is_string(v) && json_string_length(v) > 0)
                        return true;
        }
        return false;
}

static bool edits_need_050(json_t *edits) { return edits_use(edits, "deviceNodes", "hostPath"); }

static bool edits_need_040(json_t *edits) { return edits_use(edits, "mounts", "type"); }

const char *gh_cdi_min_version(json_t *spec)
{
        json_t *devices = json_object_get(spec, "devices"), *d;
        bool v050 = edits_need_050(json_object_get(spec, "containerEdits"));
        bool v040 = edits_need_040(json_object_get(spec, "containerEdits"));
        size_t i;

        json_array_foreach (devices, i, d) {
                const char *name = json_string_value(json_object_get(d, "name"));
                /* 0.5.0 allowed a device name to start with a digit */
                v050 |= name != NULL && name[0] >= '0' && name[0] <= '9';
                v050 |= edits_need_050(json_object_get(d, "containerEdits"));
                v040 |= edits_need_040(json_object_get(d, "containerEdits"));
        }
        return v050 ? "0.5.0" : v040 ? "0.4.0" : "0.3.0";
}

static bool differ(char **why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool differ(char **why, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(why, fmt, ap) < 0)
                *why = NULL;
        va_end(ap);
        return false;
}

/* json_equal() says NULL differs from NULL: an absent member equals an absent member here. */
static bool same(json_t *a, json_t *b) { return (a == NULL && b == NULL) || json_equal(a, b); }

static json_t *find_by(json_t *arr, const char *key, const char *value)
{
        json_t *v;
        size_t i;

        json_array_foreach (arr, i, v) {
                const char *s = json_string_value(json_object_get(v, key));
                if (s != NULL && strcmp(s, value) == 0)
                        return v;
        }
        return NULL;
}

/* Arrays of objects identified by `key`: the first one missing, extra or different. */
static bool same_keyed(json_t *want, json_t *have, const char *key, const char *what, const char *where, char **why)
{
        json_t *v;
        size_t i;

        json_array_foreach (want, i, v) {
                const char *id = json_string_value(json_object_get(v, key));
                json_t *h = find_by(have, key, id ? id : "");
                if (h == NULL)
                        return differ(why, "%s%s '%s' is missing (the driver has it now)", where, what, id ? id : "?");
                if (!same(v, h))
                        return differ(why, "%s%s '%s' differs", where, what, id ? id : "?");
        }
        json_array_foreach (have, i, v) {
                const char *id = json_string_value(json_object_get(v, key));
                if (find_by(want, key, id ? id : "") == NULL)
                        return differ(why, "%s%s '%s' is not in the driver any more", where, what, id ? id : "?");
        }
        return true;
}

static bool same_edits(json_t *want, json_t *have, const char *where, char **why)
{
        json_t *wh = json_object_get(want, "hooks"), *hh = json_object_get(have, "hooks");

        if (!same_keyed(json_object_get(want, "deviceNodes"), json_object_get(have, "deviceNodes"), "path",
                        "device node", where, why) ||
            !same_keyed(json_object_get(want, "mounts"), json_object_get(have, "mounts"), "containerPath", "mount",
                        where, why))
                return false;
        if (!same(json_object_get(want, "env"), json_object_get(have, "env")))
                return differ(why, "%sthe environment differs", where);
        if (json_array_size(wh) != json_array_size(hh))
                return differ(why, "%sthe number of hooks differs", where);
        for (size_t i = 0; i < json_array_size(wh); i++) {
                json_t *wa = json_object_get(json_array_get(wh, i), "args"),
                       *ha = json_object_get(json_array_get(hh, i), "args");
                for (size_t k = 0; k < json_array_size(wa); k++)
                        if (!same(json_array_get(wa, k), json_array_get(ha, k)))
                                return differ(why, "%shook argument '%s' differs", where,
                                              json_string_value(json_array_get(wa, k)) ?: "?");
                if (!same(json_array_get(wh, i), json_array_get(hh, i)))
                        return differ(why, "%sthe hook differs", where);
        }
        return true;
}

bool gh_cdi_same(json_t *want, json_t *have, char **why)
{
        json_t *wd = json_object_get(want, "devices"), *hd = json_object_get(have, "devices"), *v;
        size_t i;

        *why = NULL;
        if (!same(json_object_get(want, "kind"), json_object_get(have, "kind")))
                return differ(why, "its kind is not %s", json_string_value(json_object_get(want, "kind")));
        /* Devices that came or went first: they say the most about what changed. */
        json_array_foreach (wd, i, v) {
                const char *name = json_string_value(json_object_get(v, "name"));
                if (find_by(hd, "name", name) == NULL)
                        return differ(why, "device '%s' is missing (the driver has it now)", name);
        }
        json_array_foreach (hd, i, v) {
                const char *name = json_string_value(json_object_get(v, "name"));
                if (find_by(wd, "name", name ? name : "") == NULL)
                        return differ(why, "device '%s' is not in the driver any more", name ? name : "?");
        }
        if (!same_edits(json_object_get(want, "containerEdits"), json_object_get(have, "containerEdits"), "", why))
                return false;
        json_array_foreach (wd, i, v) {
                const char *name = json_string_value(json_object_get(v, "name"));
                _cleanup_free_ char *where = NULL;
                if (asprintf(&where, "device '%s': ", name) < 0)
                        return false;
                if (!same_edits(json_object_get(v, "containerEdits"),
                                json_object_get(find_by(hd, "name", name), "containerEdits"), where, why))
                        return false;
        }
        if (!same(want, have))
                return differ(why, "cdiVersion or the order of its entries differs");
        return true;
}
