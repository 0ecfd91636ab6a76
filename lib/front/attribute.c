/* Who holds each GPU process's memory (attribute.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attribute.h"
#include "cleanup.h"
#include "container.h"
#include "gpus.h"
#include "log.h"
#include "mps.h"
#include "oci.h"
#include "podrecord.h"

/* What is known of one container id; looked up once per id in a pass. */
struct known {
        char id[GH_CONTAINER_ID_MAX];
        enum gh_owner_kind kind;
        bool state_known;
        struct gh_pod pod;
};

struct pass {
        const struct gh_attribution *a;
        int records; /* the record directory, -1: none */
        struct known *known;
        size_t n, cap;
        struct gh_mps_group *groups;
        size_t ngroups;
        bool groups_loaded;
};

static void pass_open(struct pass *p, const struct gh_attribution *a)
{
        _cleanup_error_ gh_error_t err = NULL;

        *p = (struct pass) { .a = a, .records = -1 };
        if (a->records_dir != NULL && (p->records = gh_record_dir_open(a->records_dir, false, &err)) < 0 &&
            err->code != ENOENT)
                gh_debug("%s", err->msg);
}

static void pass_close(struct pass *p)
{
        if (p->records >= 0)
                close(p->records);
        free(p->known);
        free(p->groups);
}

/* The pod in the annotations of a bundle's config.json; nothing when it cannot be read. */
static void pod_of_bundle(const char *bundle, struct gh_pod *pod)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_oci_spec spec;

        if (bundle[0] == '\0' || gh_oci_spec_load(bundle, &spec, &err) < 0)
                return;
        *pod = spec.pod;
        gh_oci_spec_free(&spec);
}

static const struct known *lookup(struct pass *p, const char *id)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_container_ref ref;
        struct gh_record r;
        struct known *k;

        for (size_t i = 0; i < p->n; i++)
                if (strcmp(p->known[i].id, id) == 0)
                        return &p->known[i];
        if (p->n == p->cap) {
                size_t cap = p->cap ? p->cap * 2 : 16;
                struct known *grown = realloc(p->known, cap * sizeof(*grown));
                if (grown == NULL)
                        return NULL;
                p->known = grown;
                p->cap = cap;
        }
        k = &p->known[p->n++];
        *k = (struct known) { .kind = GH_OWNER_CONTAINER };
        snprintf(k->id, sizeof(k->id), "%s", id);
        int got = p->records >= 0 ? gh_record_load(p->records, id, &r, &err) : 0;
        if (got == 1) {
                k->kind = gh_record_running(&r) ? GH_OWNER_CONTAINER : GH_OWNER_CONTAINER_GONE;
                k->state_known = true;
                k->pod = r.pod;
                return k;
        }
        if (got < 0)
                gh_debug("%s", err->msg);
        gh_error_free(&err);
        if (gh_container_find(id, p->a->state_roots, &ref, &err) == 0 && strcmp(ref.id, id) == 0) {
                k->state_known = true;
                pod_of_bundle(ref.bundle, &k->pod);
        } else if (err != NULL && err->code == ESRCH) {
                k->kind = GH_OWNER_CONTAINER_GONE;
                k->state_known = true;
        }
        return k;
}

/* An MPS group whose daemon leads the session of pid, or NULL. */
static const struct gh_mps_group *group_of(struct pass *p, pid_t pid)
{
        pid_t sid;

        if (p->a->mps_dir == NULL)
                return NULL;
        if (!p->groups_loaded) {
                _cleanup_error_ gh_error_t err = NULL;
                p->groups_loaded = true;
                if (gh_mps_list(p->a->mps_dir, &p->groups, &p->ngroups, &err) < 0)
                        gh_debug("MPS groups: %s", err->msg);
        }
        sid = getsid(pid);
        for (size_t i = 0; sid > 0 && i < p->ngroups; i++)
                if (p->groups[i].pid == sid)
                        return &p->groups[i];
        return NULL;
}

static int attribute(struct pass *p, pid_t pid, struct gh_proc_owner *o)
{
        _cleanup_error_ gh_error_t err = NULL;

        if (gh_proc_owner(pid, p->a->state_roots, o, &err) < 0) {
                gh_debug("attributing PID %d: %s", (int) pid, err->msg);
                *o = (struct gh_proc_owner) { .ns_pid = pid };
                return -1;
        }
        o->kind = GH_OWNER_HOST;
        if (o->in_container) {
                const struct known *k = lookup(p, o->id);
                if (k != NULL) {
                        o->kind = k->kind;
                        o->state_known = k->state_known;
                        o->pod = k->pod;
                } else {
                        o->kind = GH_OWNER_CONTAINER;
                }
                return 0;
        }
        const struct gh_mps_group *g = group_of(p, pid);
        if (g != NULL) {
                o->kind = g->alive ? GH_OWNER_MPS_SERVER : GH_OWNER_MPS_STOPPED;
                snprintf(o->mps_group, sizeof(o->mps_group), "%s", g->name);
        }
        return 0;
}

int gh_attribute_pid(pid_t pid, const struct gh_attribution *a, struct gh_proc_owner *out)
{
        struct pass p;
        int r;

        pass_open(&p, a);
        r = attribute(&p, pid, out);
        pass_close(&p);
        return r;
}

/* A record some GPU process still claims: the evidence that the process is a leftover. */
static bool claimed(const char *id, void *data)
{
        const struct gh_gpu_list *list = data;

        for (size_t g = 0; g < list->n; g++)
                for (size_t i = 0; list->gpus[g].usage && i < list->gpus[g].usage->nprocs; i++) {
                        const struct gh_proc_owner *o = &list->gpus[g].usage->procs[i].owner;
                        if (o->in_container && strcmp(o->id, id) == 0)
                                return true;
                }
        return false;
}

void gh_usage_attribute(struct gh_gpu_list *list, const struct gh_attribution *a)
{
        struct pass p;

        pass_open(&p, a);
        for (size_t g = 0; g < list->n; g++) {
                struct gh_gpu_usage *u = list->gpus[g].usage;
                for (size_t i = 0; u != NULL && i < u->nprocs; i++)
                        attribute(&p, u->procs[i].pid, &u->procs[i].owner); /* gone: a host process */
        }
        if (a->collect && p.records >= 0) {
                _cleanup_error_ gh_error_t err = NULL;
                if (gh_record_collect(p.records, claimed, list, &err) < 0)
                        gh_debug("%s", err->msg);
        }
        pass_close(&p);
}

struct gh_container_sum *gh_usage_container_sums(const struct gh_gpu_list *list, bool hosts, size_t *nout)
{
        struct gh_container_sum *out;
        size_t max = 0, n = 0;

        *nout = 0;
        for (size_t g = 0; g < list->n; g++)
                max += list->gpus[g].usage ? list->gpus[g].usage->nprocs : 0;
        if (max == 0 || (out = calloc(max, sizeof(*out))) == NULL)
                return NULL;
        for (size_t g = 0; g < list->n; g++) {
                const struct gh_gpu_usage *u = list->gpus[g].usage;
                for (size_t i = 0; u && i < u->nprocs; i++) {
                        const struct gh_gpu_proc *p = &u->procs[i];
                        struct gh_container_sum *s = NULL;
                        if (!p->owner.in_container && !hosts)
                                continue;
                        for (size_t k = 0; k < n && s == NULL; k++)
                                if (out[k].gpu == &list->gpus[g] &&
                                    out[k].owner->in_container == p->owner.in_container &&
                                    strcmp(out[k].owner->id, p->owner.id) == 0 &&
                                    strcmp(out[k].owner->runtime, p->owner.runtime) == 0)
                                        s = &out[k];
                        if (s == NULL) {
                                s = &out[n++];
                                *s = (struct gh_container_sum) { .gpu = &list->gpus[g],
                                                                 .owner = &p->owner,
                                                                 .util = -1 };
                        }
                        s->procs++;
                        if (p->used_memory != GH_UNKNOWN_U64) {
                                s->memory += p->used_memory;
                                s->memory_known = true;
                        }
                        if (p->sm_util >= 0)
                                s->util = s->util < 0                  ? p->sm_util
                                          : s->util + p->sm_util > 100 ? 100
                                                                       : s->util + p->sm_util;
                }
        }
        *nout = n;
        return out;
}

void gh_usage_unowned(const struct gh_gpu *gpu, struct gh_unowned *u)
{
        *u = (struct gh_unowned) { .known = gpu->usage != NULL };
        for (size_t i = 0; gpu->usage && i < gpu->usage->nprocs; i++) {
                const struct gh_gpu_proc *p = &gpu->usage->procs[i];
                uint64_t m = p->used_memory == GH_UNKNOWN_U64 ? 0 : p->used_memory;
                if (!gh_owner_unowned(p->owner.kind))
                        continue;
                u->procs++;
                if (p->used_memory == GH_UNKNOWN_U64)
                        u->known = false;
                if (p->owner.kind == GH_OWNER_CONTAINER_GONE)
                        u->container_gone += m;
                else if (p->owner.kind == GH_OWNER_MPS_STOPPED)
                        u->mps_stopped += m;
                else
                        u->host += m;
        }
}
