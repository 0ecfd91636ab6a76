/* A plan as text and back, for the driver-state cache (docs/statecache.md, "Plans"). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cleanup.h"
#include "fingerprint.h"
#include "jsonread.h"
#include "log.h"
#include "plancache.h"
#include "rootfs.h"
#include "steps.h"

/* ---- writing ------------------------------------------------------------------------------- */

static void put_str(FILE *f, const char *s)
{
        if (s == NULL) {
                fputs("null", f);
                return;
        }
        fputc('"', f);
        for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
                if (*p == '"' || *p == '\\')
                        fprintf(f, "\\%c", *p);
                else if (*p == '\n')
                        fputs("\\n", f); /* the /proc texts are lines: two bytes each, not six */
                else if (*p < 0x20 || *p == 0x7f)
                        fprintf(f, "\\u%04x", *p);
                else
                        fputc(*p, f);
        }
        fputc('"', f);
}

char *gh_plan_to_text(const struct gh_plan *p)
{
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        if (f == NULL)
                return NULL;
        fputs("{\"version\":", f);
        put_str(f, p->driver_version);
        fputs(",\"libdir\":", f);
        put_str(f, p->layout.libdir);
        fputs(",\"libdir32\":", f);
        put_str(f, p->layout.libdir32);
        fprintf(f, ",\"flags\":[%d,%d,%d,%d]", p->mask_proc, p->no_devbind, p->used_nvml, p->mps_group);
        fputs(",\"params\":", f);
        put_str(f, p->params);
        fputs(",\"proc_version\":", f);
        put_str(f, p->version);
        fputs(",\"registry\":", f);
        put_str(f, p->registry);
        fputs(",\"items\":[", f);
        for (size_t i = 0; i < p->n; i++) {
                const struct gh_item *it = &p->items[i];
                fprintf(f, "%s[%d,%d,", i ? "," : "", (int) it->kind, (int) it->role);
                put_str(f, it->src);
                fputc(',', f);
                put_str(f, it->dst);
                fputc(',', f);
                put_str(f, it->target);
                fprintf(f, ",%u,%u,%u,%d,%u,%d,", it->flags, major(it->rdev), minor(it->rdev), it->optional, it->cap,
                        it->compat32);
                put_str(f, it->soname);
                fprintf(f, ",%d]", it->host_src);
        }
        fputs("],\"proc_gpus\":[", f);
        for (size_t i = 0; i < p->nproc_gpus; i++) {
                fputs(i ? "," : "", f);
                put_str(f, p->proc_gpus[i].busid);
        }
        fputs("],\"libs\":[", f);
        for (size_t i = 0; i < p->nlibs; i++) {
                fputs(i ? ",[" : "[", f);
                put_str(f, p->libs[i].soname);
                fputc(',', f);
                put_str(f, p->libs[i].path);
                fprintf(f, ",%d]", p->libs[i].compat32);
        }
        fputs("],\"rules\":[", f);
        for (size_t i = 0; i < p->nrules; i++)
                fprintf(f, "%s[%u,%u,%u]", i ? "," : "", (unsigned) (unsigned char) p->rules[i].type, p->rules[i].major,
                        p->rules[i].minor);
        fputs("]}", f);
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

/* ---- reading ------------------------------------------------------------------------------- */

struct reader {
        struct gh_json *d;
        const char *why;
};

static int bad(struct reader *r, const char *why)
{
        if (r->why == NULL)
                r->why = why;
        return -1;
}

/* A string or null member (NULL for null), a string at most max bytes long: the decoded string is
 * taken from the document (not copied; each node is read once). */
static int get_str(struct reader *r, int node, size_t max, char **out)
{
        *out = NULL;
        if (node < 0)
                return bad(r, "a member is missing");
        if (r->d->v[node].type == GH_JSON_NULL)
                return 0;
        if (r->d->v[node].type != GH_JSON_STRING || r->d->v[node].str == NULL || strlen(r->d->v[node].str) > max)
                return bad(r, "a string member is not one");
        *out = steal_pointer(&r->d->v[node].str);
        return 0;
}

static int get_uint(struct reader *r, int node, unsigned long long max, unsigned long long *out)
{
        long long v;

        if (gh_json_integer(r->d, node, &v) < 0 || v < 0 || (unsigned long long) v > max)
                return bad(r, "a number is out of range");
        *out = (unsigned long long) v;
        return 0;
}

/* The n-th element of an array node, -1 past the end. */
static int elem(const struct gh_json *d, int arr, size_t n)
{
        int c = arr >= 0 && d->v[arr].type == GH_JSON_ARRAY ? d->v[arr].child : -1;
        while (c >= 0 && n-- > 0)
                c = d->v[c].next;
        return c;
}

static size_t count(const struct gh_json *d, int arr)
{
        size_t n = 0;
        for (int c = elem(d, arr, 0); c >= 0; c = d->v[c].next)
                n++;
        return n;
}

/* A path the plan may name: absolute, no "." or ".." component (checked again where it is used:
 * sources through the in-root resolver of the driver root, targets of the container's). */
static bool plain_path(const char *s)
{
        if (s == NULL || s[0] != '/')
                return false;
        for (const char *c = s; *c; c++)
                if (c[0] == '/' && c[1] == '.' &&
                    (c[2] == '/' || c[2] == '\0' || (c[2] == '.' && (c[3] == '/' || c[3] == '\0'))))
                        return false;
        return true;
}

static int read_item(struct reader *r, int node, struct gh_item *it)
{
        unsigned long long v[10];
        static const int num_at[] = { 0, 1, 5, 6, 7, 8, 9, 10, 12 };
        static const unsigned long long num_max[] = {
                GH_ITEM_SYMLINK, GH_ROLE_CONFIG, 0xff, 4095, 0xfffff, 1, 0xffffffffu, 1, 1
        };
        int at[13];
        size_t n = 0;

        /* The 13 elements in one walk of the list. */
        for (int c = elem(r->d, node, 0); c >= 0; c = r->d->v[c].next)
                if (n++ < 13)
                        at[n - 1] = c;
        if (n != 13)
                return bad(r, "an item has the wrong shape");
        for (size_t k = 0; k < sizeof(num_at) / sizeof(num_at[0]); k++)
                if (get_uint(r, at[num_at[k]], num_max[k], &v[k]) < 0)
                        return -1;
        it->kind = (enum gh_item_kind) v[0];
        it->role = (enum gh_item_role) v[1];
        it->flags = (unsigned) v[2];
        it->rdev = makedev((unsigned) v[3], (unsigned) v[4]);
        it->optional = v[5] != 0;
        it->cap = (unsigned) v[6];
        it->compat32 = v[7] != 0;
        it->host_src = v[8] != 0;
        if (get_str(r, at[2], 4096, &it->src) < 0 || get_str(r, at[3], 4096, &it->dst) < 0 ||
            get_str(r, at[4], 4096, &it->target) < 0 || get_str(r, at[11], 256, &it->soname) < 0)
                return -1;
        if (!plain_path(it->dst) || (it->kind == GH_ITEM_SYMLINK ? it->target == NULL : !plain_path(it->src)))
                return bad(r, "an item names no plain path");
        /* Only what a kept plan can hold: never a host path (those come with MPS groups, whose plans
         * are not kept), a device node only where it is on the driver root. */
        if (it->host_src)
                return bad(r, "an item names a host path");
        if (it->kind == GH_ITEM_DEVICE && strcmp(it->src, it->dst) != 0)
                return bad(r, "a device node is placed elsewhere than on the driver root");
        return 0;
}

int gh_plan_from_text(const char *text, size_t len, struct gh_plan *p, gh_error_t *err)
{
        struct gh_json d = { 0 };
        struct reader r = { .d = &d };
        _cleanup_free_ char *libdir = NULL, *libdir32 = NULL;
        unsigned long long fl[4], x[3];
        int items, gpus, libs, rules, flags;

        memset(p, 0, sizeof(*p));
        if (gh_jsonread_parse(text, len, &d, err) < 0)
                return gh_err_wrap(err, "a kept plan");
        if (d.v[0].type != GH_JSON_OBJECT) {
                bad(&r, "not an object");
                goto out;
        }
        flags = gh_json_get(&d, 0, "flags");
        if (get_str(&r, gh_json_get(&d, 0, "version"), 64, &p->driver_version) < 0 ||
            get_str(&r, gh_json_get(&d, 0, "libdir"), sizeof(p->layout.libdir) - 1, &libdir) < 0 ||
            get_str(&r, gh_json_get(&d, 0, "libdir32"), sizeof(p->layout.libdir32) - 1, &libdir32) < 0 ||
            get_str(&r, gh_json_get(&d, 0, "params"), 1 << 16, &p->params) < 0 ||
            get_str(&r, gh_json_get(&d, 0, "proc_version"), 1 << 16, &p->version) < 0 ||
            get_str(&r, gh_json_get(&d, 0, "registry"), 1 << 16, &p->registry) < 0 ||
            (count(&d, flags) != 4 && bad(&r, "the flags have the wrong shape") < 0))
                goto out;
        for (size_t i = 0; i < 4; i++)
                if (get_uint(&r, elem(&d, flags, i), 1, &fl[i]) < 0)
                        goto out;
        if (libdir == NULL || libdir32 == NULL || p->driver_version == NULL) {
                bad(&r, "the driver version or a library directory is missing");
                goto out;
        }
        snprintf(p->layout.libdir, sizeof(p->layout.libdir), "%s", libdir);
        snprintf(p->layout.libdir32, sizeof(p->layout.libdir32), "%s", libdir32);
        p->mask_proc = fl[0], p->no_devbind = fl[1], p->used_nvml = fl[2], p->mps_group = fl[3];
        p->params_len = p->params ? strlen(p->params) : 0;
        p->version_len = p->version ? strlen(p->version) : 0;
        p->registry_len = p->registry ? strlen(p->registry) : 0;

        items = gh_json_get(&d, 0, "items");
        gpus = gh_json_get(&d, 0, "proc_gpus");
        libs = gh_json_get(&d, 0, "libs");
        rules = gh_json_get(&d, 0, "rules");
        if (items < 0 || gpus < 0 || libs < 0 || rules < 0 || d.v[items].type != GH_JSON_ARRAY ||
            d.v[gpus].type != GH_JSON_ARRAY || d.v[libs].type != GH_JSON_ARRAY || d.v[rules].type != GH_JSON_ARRAY ||
            count(&d, rules) > GH_CGROUP_MAX_RULES) {
                bad(&r, "a list is missing");
                goto out;
        }
        p->cap = count(&d, items);
        p->items = calloc(p->cap ? p->cap : 1, sizeof(*p->items));
        p->proc_gpus = calloc(count(&d, gpus) + 1, sizeof(*p->proc_gpus));
        p->libs = calloc(count(&d, libs) + 1, sizeof(*p->libs));
        p->rules = calloc(count(&d, rules) + 1, sizeof(*p->rules));
        if (p->items == NULL || p->proc_gpus == NULL || p->libs == NULL || p->rules == NULL) {
                bad(&r, "out of memory");
                goto out;
        }
        for (int c = elem(&d, items, 0); c >= 0; c = d.v[c].next) {
                struct gh_item *it = &p->items[p->n++];
                it->source.fd = -1;
                if (read_item(&r, c, it) < 0)
                        goto out;
        }
        for (int c = elem(&d, gpus, 0); c >= 0; c = d.v[c].next) {
                struct gh_proc_gpu *g = &p->proc_gpus[p->nproc_gpus++];
                g->source.fd = -1;
                if (get_str(&r, c, 31, &g->busid) < 0)
                        goto out;
                if (g->busid == NULL || strchr(g->busid, '/') != NULL || g->busid[0] == '.') {
                        bad(&r, "a GPU's bus id is not one");
                        goto out;
                }
        }
        for (int c = elem(&d, libs, 0); c >= 0; c = d.v[c].next) {
                struct gh_plan_lib *l = &p->libs[p->nlibs++];
                if ((count(&d, c) != 3 && bad(&r, "a library entry has the wrong shape") < 0) ||
                    get_str(&r, elem(&d, c, 0), 256, &l->soname) < 0 ||
                    get_str(&r, elem(&d, c, 1), 4096, &l->path) < 0 || get_uint(&r, elem(&d, c, 2), 1, &x[0]) < 0)
                        goto out;
                if (l->soname == NULL || !plain_path(l->path)) {
                        bad(&r, "a library entry is not one");
                        goto out;
                }
                l->compat32 = x[0] != 0;
        }
        for (int c = elem(&d, rules, 0); c >= 0; c = d.v[c].next) {
                struct gh_dev_rule *rule = &p->rules[p->nrules++];
                if ((count(&d, c) != 3 && bad(&r, "a device rule has the wrong shape") < 0) ||
                    get_uint(&r, elem(&d, c, 0), 0xff, &x[0]) < 0 ||
                    get_uint(&r, elem(&d, c, 1), 0xffffffffu, &x[1]) < 0 ||
                    get_uint(&r, elem(&d, c, 2), 0xffffffffu, &x[2]) < 0)
                        goto out;
                rule->type = (char) x[0];
                rule->major = (unsigned) x[1];
                rule->minor = (unsigned) x[2];
        }
        /* The device rules are exactly the planned nodes, one 'c' rule each in their order (what
         * gh_plan_build makes), so a node's rule holds only while the node itself does
         * (gh_plan_check_devices). */
        {
                size_t k = 0;
                for (size_t i = 0; i < p->n; i++) {
                        const struct gh_item *it = &p->items[i];
                        if (it->kind != GH_ITEM_DEVICE)
                                continue;
                        if (k >= p->nrules || p->rules[k].type != 'c' || p->rules[k].major != major(it->rdev) ||
                            p->rules[k].minor != minor(it->rdev)) {
                                bad(&r, "the device rules are not the planned device nodes");
                                goto out;
                        }
                        k++;
                }
                if (k != p->nrules) {
                        bad(&r, "the device rules are not the planned device nodes");
                        goto out;
                }
        }
        if (p->mps_group) {
                bad(&r, "a plan that joins an MPS group is never kept");
                goto out;
        }
        if (gh_cgroup_check_rules(p->rules, p->nrules, err) < 0) {
                gh_json_free(&d);
                gh_plan_free(p);
                return gh_err_wrap(err, "a kept plan");
        }
out:
        gh_json_free(&d);
        if (r.why != NULL) {
                gh_plan_free(p);
                return gh_err(err, strcmp(r.why, "out of memory") == 0 ? ENOMEM : 0, "a kept plan: %s", r.why);
        }
        return 0;
}

int gh_plan_check_devices(const struct gh_plan *p, int droot, gh_error_t *err)
{
        for (size_t i = 0; i < p->n; i++) {
                const struct gh_item *it = &p->items[i];
                _cleanup_close_ int fd = -1;
                struct stat st;

                if (it->kind != GH_ITEM_DEVICE)
                        continue;
                fd = gh_resolve(droot, it->src, O_PATH, err);
                if (fd < 0)
                        return gh_err_wrap(err, "the kept plan's device node %s", it->src);
                if (fstat(fd, &st) < 0)
                        return gh_err(err, errno, "the kept plan's device node %s", it->src);
                if (!S_ISCHR(st.st_mode) || st.st_rdev != it->rdev)
                        return gh_err(err, 0, "the kept plan's device node %s is not the character device %u:%u",
                                      it->src, major(it->rdev), minor(it->rdev));
        }
        return 0;
}

/* ---- the key ------------------------------------------------------------------------------- */

char *gh_plan_cache_key(int droot, const char *root, const char *ldcache, const char *path,
                        const struct gh_request *req, const struct gh_layout *layout)
{
        _cleanup_strv_ char **argv = NULL;
        static const char *const present[] = { GH_DRIVER_PERSISTENCED_SOCKET, GH_DRIVER_FABRICMANAGER_SOCKET };
        char *buf = NULL;
        size_t n = 0, len = 0;
        _cleanup_error_ gh_error_t err = NULL;
        FILE *f;

        if (gh_request_to_argv(req, &argv, &n, &err) < 0 || (f = open_memstream(&buf, &len)) == NULL)
                return NULL;
        /* Everything gh_plan_build's result depends on besides the driver (the fingerprint): the
         * request as gpu-cli's options, where the image keeps its libraries, the driver root and its
         * options, and which of the driver's sockets and the MPS pipe directory are there now (the
         * only files the plan takes or leaves by whether they exist at this moment). */
        fprintf(f, "root %s\nldcache %s\npath %s\nlibdir %s\nlibdir32 %s\n", root, ldcache ? ldcache : "-",
                path ? path : "-", layout->libdir, layout->libdir32);
        for (size_t i = 0; i < n; i++)
                fprintf(f, "arg %s\n", argv[i]);
        for (size_t i = 0; i < sizeof(present) / sizeof(present[0]); i++) {
                _cleanup_close_ int fd = gh_resolve(droot, present[i], O_PATH, NULL);
                fprintf(f, "present %s %d\n", present[i], fd >= 0);
        }
        {
                const char *mps = req->mps_pipe_dir ? req->mps_pipe_dir : GH_DRIVER_DEFAULT_MPS_PIPE_DIR;
                _cleanup_close_ int fd = gh_resolve(droot, mps, O_PATH, NULL);
                fprintf(f, "present %s %d\n", mps, fd >= 0);
        }
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

/* Whether the driver's fingerprint, taken with the libraries kept names, is kept: then *fp_text. */
static bool same_driver(int droot, const char *kept, char **fp_text)
{
        _cleanup_driver_fp_ struct gh_driver_fp fp = { 0 };
        _cleanup_error_ gh_error_t e = NULL;
        char *libs[GH_DRIVER_FP_NLIBS];
        bool same;

        if (gh_driver_fp_libs_of(kept, libs) < 0)
                return false;
        same = gh_driver_fingerprint(droot, libs, &fp, &e) == 0 && strcmp(fp.text, kept) == 0;
        for (size_t i = 0; i < GH_DRIVER_FP_NLIBS; i++)
                free(libs[i]);
        if (same)
                *fp_text = steal_pointer(&fp.text);
        return same;
}

int gh_plan_cache_find(int droot, const char *root, const char *ldcache, const char *path, const struct gh_request *req,
                       const struct gh_layout *layout, bool check_all_devices, struct gh_plan *plan, char **key,
                       char **fp_text)
{
        _cleanup_error_ gh_error_t e = NULL;
        _cleanup_free_ char *text = NULL, *kept_fp = NULL;

        *fp_text = NULL;
        *key = gh_plan_cache_key(droot, root, ldcache, path, req, layout);
        GH_STEP("driver.key");
        if (*key == NULL || req->cache->plan_lookup(req->state_file, *key, &kept_fp, &text) != 1 ||
            (GH_STEP("driver.planfile"), !same_driver(droot, kept_fp, fp_text))) {
                /* No plan for this driver: the fingerprint to keep the one built now under, taken
                 * whole (the libraries looked up in the ld.so.cache) before anything is discovered. */
                _cleanup_driver_fp_ struct gh_driver_fp fp = { 0 };
                if (gh_driver_fingerprint(droot, NULL, &fp, &e) == 0)
                        *fp_text = steal_pointer(&fp.text);
                GH_STEP("driver.fingerprint");
                return 0;
        }
        GH_STEP("driver.fingerprint");
        if (gh_plan_from_text(text, strlen(text), plan, &e) < 0 || (GH_STEP("driver.planparse"), 0) ||
            ((check_all_devices || plan->no_devbind) && gh_plan_check_devices(plan, droot, &e) < 0)) {
                gh_debug("plan: the kept one is refused (%s); building it", e->msg);
                gh_plan_free(plan);
                memset(plan, 0, sizeof(*plan));
                return 0;
        }
        gh_debug("plan: kept one (%zu items)", plan->n);
        return 1;
}

void gh_plan_cache_keep(const struct gh_request *req, const char *key, const char *fp_text, const struct gh_plan *plan)
{
        _cleanup_free_ char *text = NULL;
        _cleanup_error_ gh_error_t e = NULL;

        /* Not a plan that joins an MPS group: its directories come and go with the group. */
        if (key == NULL || fp_text == NULL || plan->mps_group)
                return;
        text = gh_plan_to_text(plan);
        if (text == NULL || req->cache->plan_save(req->state_file, key, fp_text, text, &e) < 0)
                gh_debug("plan: not kept: %s", e ? e->msg : "out of memory");
}
