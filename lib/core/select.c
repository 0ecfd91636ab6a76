/* Device selection lists: parse NVIDIA_VISIBLE_DEVICES-style text, then match it against GPUs. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cleanup.h"
#include "select.h"
#include "strutil.h"

/* Long enough for any UUID or bus id; longer items are surely not devices and would only make
 * error messages unreadable. */
#define ITEM_MAX 256

/* A decimal index without sign or blanks; bounded so "99999999999" is unknown, not wrapped. */
static bool parse_index(const char *s, size_t len, unsigned *out)
{
        unsigned long v = 0;

        if (len == 0 || len > 6)
                return false;
        for (size_t i = 0; i < len; i++) {
                if (!isdigit((unsigned char) s[i]))
                        return false;
                v = v * 10 + (unsigned) (s[i] - '0');
        }
        *out = (unsigned) v;
        return true;
}

static bool has_prefix_ci(const char *s, const char *prefix) { return strncasecmp(s, prefix, strlen(prefix)) == 0; }

static int classify(const char *text, struct gh_select_item *item, gh_error_t *err)
{
        size_t len = strlen(text);
        const char *colon = strchr(text, ':');

        item->kind = GH_SELECT_INDEX;
        if (parse_index(text, len, &item->index))
                return 0;
        if (has_prefix_ci(text, "GPU-") && len > 4) {
                item->kind = GH_SELECT_GPU_UUID;
                return 0;
        }
        if (has_prefix_ci(text, "MIG-") && len > 4) {
                item->kind = GH_SELECT_MIG_UUID;
                return 0;
        }
        if (colon != NULL && strchr(colon + 1, ':') == NULL &&
            parse_index(text, (size_t) (colon - text), &item->index) &&
            parse_index(colon + 1, strlen(colon + 1), &item->mig)) {
                item->kind = GH_SELECT_MIG_INDEX;
                return 0;
        }
        if (gh_busid_normalize(text, item->busid, sizeof(item->busid)) == 0) {
                item->kind = GH_SELECT_BUSID;
                return 0;
        }
        return gh_err(err, 0,
                      "unknown device '%s'; use an index, a GPU-/MIG- UUID, a PCI bus id, GPU:MIG, 'all' or 'none'",
                      text);
}

static bool same_item(const struct gh_select_item *a, const struct gh_select_item *b)
{
        if (a->kind != b->kind)
                return false;
        switch (a->kind) {
        case GH_SELECT_INDEX: return a->index == b->index;
        case GH_SELECT_MIG_INDEX: return a->index == b->index && a->mig == b->mig;
        case GH_SELECT_BUSID: return strcmp(a->busid, b->busid) == 0;
        case GH_SELECT_GPU_UUID:
        case GH_SELECT_MIG_UUID:
        default: return strcasecmp(a->text, b->text) == 0;
        }
}

void gh_select_request_free(struct gh_select_request *req)
{
        if (req == NULL)
                return;
        for (size_t i = 0; i < req->n; i++)
                free(req->items[i].text);
        free(req->items);
        memset(req, 0, sizeof(*req));
}

static int add_item(struct gh_select_request *req, const char *start, size_t len, gh_error_t *err)
{
        struct gh_select_item item = { 0 };
        struct gh_select_item *grown;

        if (len > ITEM_MAX)
                return gh_err(err, 0, "unknown device '%.32s...' (%zu characters); device names are shorter", start,
                              len);
        item.text = strndup(start, len);
        if (item.text == NULL)
                return gh_err(err, ENOMEM, "parsing the device list");
        if (strcasecmp(item.text, "all") == 0 || strcasecmp(item.text, "none") == 0 ||
            strcasecmp(item.text, "void") == 0) {
                if (strcasecmp(item.text, "all") == 0)
                        req->all = true;
                else if (strcasecmp(item.text, "none") == 0)
                        req->none = true;
                else
                        req->is_void = true;
                free(item.text);
                return 0;
        }
        if (classify(item.text, &item, err) < 0) {
                free(item.text);
                return -1;
        }
        for (size_t i = 0; i < req->n; i++) {
                if (same_item(&req->items[i], &item)) {
                        free(item.text);
                        return 0;
                }
        }
        grown = realloc(req->items, (req->n + 1) * sizeof(*grown));
        if (grown == NULL) {
                free(item.text);
                return gh_err(err, ENOMEM, "parsing the device list");
        }
        req->items = grown;
        req->items[req->n++] = item;
        return 0;
}

int gh_select_parse(const char *list, struct gh_select_request *req, gh_error_t *err)
{
        const char *p;

        memset(req, 0, sizeof(*req));
        if (list == NULL) {
                req->unset = true;
                return 0;
        }
        p = list;
        for (;;) {
                const char *end = strchr(p, ',');
                const char *s = p, *e = end ? end : p + strlen(p);

                while (s < e && gh_is_blank(*s))
                        s++;
                while (e > s && gh_is_blank(e[-1]))
                        e--;
                if (e > s && add_item(req, s, (size_t) (e - s), err) < 0) {
                        gh_select_request_free(req);
                        return -1;
                }
                if (end == NULL)
                        break;
                p = end + 1;
        }
        /* An empty value (or only commas and blanks) means "not a GPU container", like void. */
        if (req->n == 0 && !req->all && !req->none)
                req->is_void = true;
        return 0;
}

void gh_select_format(const struct gh_select_request *req, char *buf, size_t size)
{
        size_t used = 0;

        if (size == 0)
                return;
        buf[0] = '\0';
#define APPEND(...)                                                                                                    \
        do {                                                                                                           \
                if (used < size) {                                                                                     \
                        int _n = snprintf(buf + used, size - used, __VA_ARGS__);                                       \
                        used += _n > 0 ? (size_t) _n : 0;                                                              \
                }                                                                                                      \
        } while (0)
        if (req->unset) {
                APPEND("(unset)");
                return;
        }
        if (req->is_void) {
                APPEND("void");
                return;
        }
        if (req->all)
                APPEND("all");
        if (req->none)
                APPEND("%snone", used ? "," : "");
        for (size_t i = 0; i < req->n; i++) {
                const struct gh_select_item *it = &req->items[i];
                const char *sep = used ? "," : "";
                switch (it->kind) {
                case GH_SELECT_INDEX: APPEND("%s%u", sep, it->index); break;
                case GH_SELECT_MIG_INDEX: APPEND("%s%u:%u", sep, it->index, it->mig); break;
                case GH_SELECT_BUSID: APPEND("%s%s", sep, it->busid); break;
                case GH_SELECT_GPU_UUID:
                case GH_SELECT_MIG_UUID:
                default: APPEND("%s%s", sep, it->text); break;
                }
        }
#undef APPEND
}

void gh_selection_free(struct gh_selection *sel)
{
        if (sel == NULL)
                return;
        free(sel->gpus);
        free(sel->full);
        free(sel->migs);
        memset(sel, 0, sizeof(*sel));
}

/* Per-GPU flags while matching; turned into the sorted pointer arrays at the end. */
struct marks {
        bool *gpu_full;
        bool **mig; /* mig[g][m] */
};

static int match_item(const struct gh_select_item *it, const struct gh_gpu_list *list, struct marks *mk,
                      gh_error_t *err)
{
        for (size_t g = 0; g < list->n; g++) {
                const struct gh_gpu *gpu = &list->gpus[g];
                switch (it->kind) {
                case GH_SELECT_INDEX:
                        if (gpu->index == it->index)
                                return mk->gpu_full[g] = true, 0;
                        break;
                case GH_SELECT_GPU_UUID:
                        if (strcasecmp(gpu->uuid, it->text) == 0)
                                return mk->gpu_full[g] = true, 0;
                        break;
                case GH_SELECT_BUSID: {
                        char norm[GH_BUSID_MAX];
                        if (gh_busid_normalize(gpu->busid, norm, sizeof(norm)) == 0 && strcmp(norm, it->busid) == 0)
                                return mk->gpu_full[g] = true, 0;
                        break;
                }
                case GH_SELECT_MIG_INDEX:
                        if (gpu->index != it->index)
                                break;
                        for (size_t m = 0; m < gpu->nmigs; m++)
                                if (gpu->migs[m].index == it->mig)
                                        return mk->mig[g][m] = true, 0;
                        break;
                case GH_SELECT_MIG_UUID:
                default:
                        for (size_t m = 0; m < gpu->nmigs; m++)
                                if (strcasecmp(gpu->migs[m].uuid, it->text) == 0)
                                        return mk->mig[g][m] = true, 0;
                        break;
                }
        }
        if (it->kind == GH_SELECT_MIG_INDEX || it->kind == GH_SELECT_MIG_UUID)
                return gh_err(err, 0, "unknown device '%s': no such MIG device%s; see 'gpu-cli info'", it->text,
                              list->from_nvml ? "" : " (MIG devices are only known through NVML)");
        return gh_err(err, 0, "unknown device '%s': no such GPU among the %zu found; see 'gpu-cli info'", it->text,
                      list->n);
}

static void free_marks(struct marks *mk, size_t n)
{
        if (mk->mig != NULL)
                for (size_t g = 0; g < n; g++)
                        free(mk->mig[g]);
        free(mk->mig);
        free(mk->gpu_full);
}

static int collect(const struct gh_gpu_list *list, const struct marks *mk, struct gh_selection *sel, gh_error_t *err)
{
        size_t total_migs = 0;

        for (size_t g = 0; g < list->n; g++)
                total_migs += list->gpus[g].nmigs;
        sel->gpus = calloc(list->n + 1, sizeof(*sel->gpus));
        sel->full = calloc(list->n + 1, sizeof(*sel->full));
        sel->migs = calloc(total_migs + 1, sizeof(*sel->migs));
        if (sel->gpus == NULL || sel->full == NULL || sel->migs == NULL)
                return gh_err(err, ENOMEM, "selecting devices");
        /* The list is in index order already (gpus.c sorts by bus id and numbers in that order). */
        for (size_t g = 0; g < list->n; g++) {
                bool any_mig = false;
                for (size_t m = 0; m < list->gpus[g].nmigs; m++) {
                        if (mk->mig[g][m]) {
                                sel->migs[sel->nmigs++] = &list->gpus[g].migs[m];
                                any_mig = true;
                        }
                }
                if (mk->gpu_full[g] || any_mig) {
                        sel->full[sel->ngpus] = mk->gpu_full[g];
                        sel->gpus[sel->ngpus++] = &list->gpus[g];
                }
        }
        return 0;
}

int gh_select_resolve(const struct gh_select_request *req, const struct gh_gpu_list *list, struct gh_selection *sel,
                      gh_error_t *err)
{
        struct marks mk = { 0 };
        int r = 0;

        memset(sel, 0, sizeof(*sel));
        if (req->is_void || req->unset)
                return 0;
        mk.gpu_full = calloc(list->n + 1, sizeof(*mk.gpu_full));
        mk.mig = calloc(list->n + 1, sizeof(*mk.mig));
        if (mk.gpu_full == NULL || mk.mig == NULL) {
                free_marks(&mk, 0);
                return gh_err(err, ENOMEM, "selecting devices");
        }
        for (size_t g = 0; g < list->n; g++) {
                mk.mig[g] = calloc(list->gpus[g].nmigs + 1, sizeof(bool));
                if (mk.mig[g] == NULL) {
                        free_marks(&mk, list->n);
                        return gh_err(err, ENOMEM, "selecting devices");
                }
                if (req->all) {
                        mk.gpu_full[g] = true;
                        memset(mk.mig[g], 1, list->gpus[g].nmigs * sizeof(bool));
                }
        }
        for (size_t i = 0; i < req->n && r == 0; i++)
                r = match_item(&req->items[i], list, &mk, err);
        if (r == 0)
                r = collect(list, &mk, sel, err);
        free_marks(&mk, list->n);
        if (r < 0)
                gh_selection_free(sel);
        return r;
}
