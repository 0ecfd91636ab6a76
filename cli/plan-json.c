/* The plan as JSON: `gpu-cli list --json` and `gpu-cli configure --dry-run` (docs/plan.md). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "capability.h"
#include "cli.h"
#include "plan.h"

static const char *const section_names[] = {
        [GH_ROLE_DEVICE] = "devices",     [GH_ROLE_LIBRARY] = "libraries", [GH_ROLE_BINARY] = "binaries",
        [GH_ROLE_FIRMWARE] = "firmwares", [GH_ROLE_IPC] = "ipcs",          [GH_ROLE_LINK] = "links",
        [GH_ROLE_CONFIG] = "configs",
};

static json_t *item_json(const struct gh_item *it, const char *prefix)
{
        json_t *o = json_object();
        char *host = NULL;

        if (it->kind == GH_ITEM_SYMLINK) {
                json_object_set_new(o, "container_path", json_string(it->dst));
                json_object_set_new(o, "target", json_string(it->target));
                return o;
        }
        if (asprintf(&host, "%s%s", it->host_src ? "" : prefix, it->src) < 0)
                host = NULL;
        json_object_set_new(o, "path", json_string(it->src));
        json_object_set_new(o, "host_path", host ? json_string(host) : json_null());
        json_object_set_new(o, "container_path", json_string(it->dst));
        free(host);
        switch (it->role) {
        case GH_ROLE_DEVICE:
                json_object_set_new(o, "major", json_integer(major(it->rdev)));
                json_object_set_new(o, "minor", json_integer(minor(it->rdev)));
                break;
        case GH_ROLE_LIBRARY:
                if (it->soname)
                        json_object_set_new(o, "soname", json_string(it->soname));
                break;
        case GH_ROLE_IPC:
                json_object_set_new(o, "type", json_string(it->kind == GH_ITEM_DIR ? "directory" : "socket"));
                break;
        default: break;
        }
        if (it->cap && gh_capability_name(it->cap))
                json_object_set_new(o, "capability", json_string(gh_capability_name(it->cap)));
        if (it->role == GH_ROLE_LIBRARY)
                json_object_set_new(o, "compat32", json_boolean(it->compat32));
        {
                json_t *flags = json_array();
                static const struct {
                        unsigned bit;
                        const char *name;
                } names[] = {
                        { GH_MNT_RDONLY, "ro" },
                        { GH_MNT_NOSUID, "nosuid" },
                        { GH_MNT_NODEV, "nodev" },
                        { GH_MNT_NOEXEC, "noexec" },
                };
                for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                        if (it->flags & names[i].bit)
                                json_array_append_new(flags, json_string(names[i].name));
                json_object_set_new(o, "mount_flags", flags);
        }
        return o;
}

/* The CUDA forward compatibility decision (docs/cuda-compat.md); null when no image was looked at. */
static json_t *compat_json(const struct gh_cuda_compat *c)
{
        json_t *o, *branches;

        if (!c->checked)
                return json_null();
        o = json_object();
        branches = json_array();
        json_object_set_new(o, "dir", json_string(c->dir));
        json_object_set_new(o, "library", c->library ? json_string(c->library) : json_null());
        json_object_set_new(o, "version", c->version ? json_string(c->version) : json_null());
        json_object_set_new(o, "note", json_boolean(c->has_note));
        json_object_set_new(o, "cuda_version", c->cuda_version ? json_string(c->cuda_version) : json_null());
        for (size_t i = 0; i < c->nbranches; i++)
                json_array_append_new(branches, json_integer(c->branches[i]));
        json_object_set_new(o, "driver_branches", branches);
        json_object_set_new(o, "used", json_boolean(c->used));
        json_object_set_new(o, "reason", json_string(c->reason ? c->reason : ""));
        return o;
}

json_t *cli_plan_json(const struct gh_plan *plan, const char *root, unsigned sections)
{
        json_t *doc = json_object(), *arrays[GH_ROLE_CONFIG + 1] = { NULL };
        char *prefix = strdup(root);

        if (doc == NULL || prefix == NULL) {
                free(prefix);
                json_decref(doc);
                return NULL;
        }
        /* Host paths: the root's own path in front, without a doubled slash. */
        for (size_t n = strlen(prefix); n > 0 && prefix[n - 1] == '/'; n--)
                prefix[n - 1] = '\0';
        json_object_set_new(doc, "root", json_string(root));
        json_object_set_new(doc, "driver_version", json_string(plan->driver_version));
        if (sections == CLI_PLAN_ALL) {
                json_t *l = json_object();
                json_object_set_new(l, "libdir", json_string(plan->layout.libdir));
                json_object_set_new(l, "libdir32", json_string(plan->layout.libdir32));
                json_object_set_new(doc, "layout", l);
        }
        /* Sections asked for but empty still appear, so scripts can index them. */
        for (int r = GH_ROLE_DEVICE; r <= GH_ROLE_CONFIG; r++) {
                if (!(sections & (1u << r)))
                        continue;
                arrays[r] = json_array();
                json_object_set_new(doc, section_names[r], arrays[r]);
        }
        for (size_t i = 0; i < plan->n; i++)
                if (arrays[plan->items[i].role])
                        json_array_append_new(arrays[plan->items[i].role], item_json(&plan->items[i], prefix));
        if (sections == CLI_PLAN_ALL) {
                json_t *proc = json_object(), *files = json_array(), *gpus = json_array();
                json_t *rules = json_array(), *cache = json_array();
                json_object_set_new(proc, "masked", json_boolean(plan->mask_proc));
                if (plan->params)
                        json_array_append_new(files, json_string("params"));
                if (plan->version)
                        json_array_append_new(files, json_string("version"));
                if (plan->registry)
                        json_array_append_new(files, json_string("registry"));
                json_object_set_new(proc, "files", files);
                for (size_t i = 0; i < plan->nproc_gpus; i++)
                        json_array_append_new(gpus, json_string(plan->proc_gpus[i].busid));
                json_object_set_new(proc, "gpus", gpus);
                json_object_set_new(doc, "proc", proc);
                for (size_t i = 0; i < plan->nrules; i++) {
                        json_t *r = json_object();
                        char type[2] = { plan->rules[i].type, '\0' };
                        json_object_set_new(r, "type", json_string(type));
                        json_object_set_new(r, "major", json_integer(plan->rules[i].major));
                        json_object_set_new(r, "minor", json_integer(plan->rules[i].minor));
                        json_object_set_new(r, "access", json_string("rwm"));
                        json_array_append_new(rules, r);
                }
                json_object_set_new(doc, "cgroup", rules);
                for (size_t i = 0; i < plan->nlibs; i++) {
                        json_t *e = json_object();
                        json_object_set_new(e, "soname", json_string(plan->libs[i].soname));
                        json_object_set_new(e, "path", json_string(plan->libs[i].path));
                        json_object_set_new(e, "compat32", json_boolean(plan->libs[i].compat32));
                        json_array_append_new(cache, e);
                }
                json_object_set_new(doc, "ldcache", cache);
                json_object_set_new(doc, "cuda_compat", compat_json(&plan->compat));
        }
        free(prefix);
        return doc;
}
