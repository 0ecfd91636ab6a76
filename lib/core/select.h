/* Device selection: NVIDIA_VISIBLE_DEVICES / --device lists (docs/environment.md).
 *
 * Two steps so that a dry run needs no driver: gh_select_parse() turns the text into requested
 * items, gh_select_resolve() matches them against the GPUs of a gh_gpu_list. */
#ifndef GH_SELECT_H
#define GH_SELECT_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "gpus.h"

enum gh_select_kind {
        GH_SELECT_INDEX,     /* "0" */
        GH_SELECT_GPU_UUID,  /* "GPU-..." */
        GH_SELECT_BUSID,     /* "00:06.0", "0000:00:06.0", "00000000:00:06.0" */
        GH_SELECT_MIG_UUID,  /* "MIG-..." */
        GH_SELECT_MIG_INDEX, /* "0:1" = MIG device 1 of GPU 0 */
};

struct gh_select_item {
        enum gh_select_kind kind;
        char *text;               /* the item as written, trimmed (for messages) */
        unsigned index;           /* INDEX, MIG_INDEX: the GPU index */
        unsigned mig;             /* MIG_INDEX: the MIG index */
        char busid[GH_BUSID_MAX]; /* BUSID: normalised "0000:00:06.0" */
};

struct gh_select_request {
        bool unset;                   /* the list was NULL: decided by the caller (legacy image => all) */
        bool is_void;                 /* "" or any item "void": not a GPU container */
        bool all;                     /* any item "all" (case-insensitive): every GPU and MIG device */
        bool none;                    /* an item "none": driver files but no device (other items still apply) */
        struct gh_select_item *items; /* the remaining items, duplicates removed, in order */
        size_t n;
};

/* Parses a comma list: items trimmed of blanks, empty items dropped, duplicates (same text, case-
 * insensitively) removed.  list may be NULL (sets unset).  An item that is none of the forms above
 * is an error "unknown device '<item>'". */
int gh_select_parse(const char *list, struct gh_select_request *req, gh_error_t *err);
void gh_select_request_free(struct gh_select_request *req);
#define _cleanup_select_request_ __attribute__((cleanup(gh_select_request_free)))

/* The resolved set.  Pointers point into the gh_gpu_list passed to gh_select_resolve (which must
 * outlive it).  gpus: every GPU whose device node the container gets, in index order, without
 * duplicates: the GPUs selected directly and the parents of the selected MIG devices.  migs: the
 * MIG devices selected, in (parent index, mig index) order.  full[i] tells whether gpus[i] was
 * selected as a whole GPU (false: only as the parent of a MIG device). */
struct gh_selection {
        const struct gh_gpu **gpus;
        bool *full;
        size_t ngpus;
        const struct gh_mig **migs;
        size_t nmigs;
};

/* Matches the request against the GPUs.  "all" selects every GPU and every MIG device; an item
 * that matches nothing is an error "unknown device '<item>'" naming it.  A void or none request
 * resolves to the empty selection. */
int gh_select_resolve(const struct gh_select_request *req, const struct gh_gpu_list *list, struct gh_selection *sel,
                      gh_error_t *err);
void gh_selection_free(struct gh_selection *sel);
#define _cleanup_selection_ __attribute__((cleanup(gh_selection_free)))

/* Writes the request back as a normalised comma list ("all", "0,GPU-...,0000:00:06.0,0:1") into
 * buf, for dry-run output and logs. */
void gh_select_format(const struct gh_select_request *req, char *buf, size_t size);

#endif
