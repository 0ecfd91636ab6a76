/* NVIDIA_VISIBLE_DEVICES parser and resolver.  Besides "no crash": a refusal says why; an accepted
 * list formats back to a list that parses to the same request; resolution against a fixed set of
 * GPUs never selects a MIG device without exposing its parent. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "select.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct gh_mig migs[2] = {
        { .parent_index = 0, .index = 0, .gi = 1, .ci = 0, .uuid = "MIG-11111111-2222-3333-4444-555555555555" },
        { .parent_index = 0, .index = 1, .gi = 2, .ci = 0, .uuid = "MIG-66666666-2222-3333-4444-555555555555" },
};
static struct gh_gpu gpus[2] = {
        { .index = 0,
          .minor = 1,
          .uuid = "GPU-aaaaaaaa-2222-3333-4444-555555555555",
          .busid = "0000:00:06.0",
          .mig_enabled = true,
          .migs = migs,
          .nmigs = 2 },
        { .index = 1, .minor = 0, .uuid = "GPU-bbbbbbbb-2222-3333-4444-555555555555", .busid = "0001:3b:00.0" },
};
static const struct gh_gpu_list list = { .gpus = gpus, .n = 2, .from_nvml = true };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        _cleanup_select_request_ struct gh_select_request req = { 0 }, again = { 0 };
        _cleanup_selection_ struct gh_selection sel = { 0 };
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_free_ char *s = NULL;
        char buf[8192], buf2[8192];

        if (size > 4096)
                return 0;
        s = strndup((const char *) data, size);
        if (s == NULL)
                return 0;
        if (gh_select_parse(s, &req, &err) < 0) {
                if (err == NULL || err->msg == NULL || strlen(err->msg) > 512)
                        abort(); /* a refusal must say why, briefly */
                return 0;
        }
        gh_select_format(&req, buf, sizeof(buf));
        if (!req.is_void && !req.unset && buf[0] != '\0') {
                if (gh_select_parse(buf, &again, &err) < 0)
                        abort();
                gh_select_format(&again, buf2, sizeof(buf2));
                if (strcmp(buf, buf2) != 0)
                        abort();
        }
        if (gh_select_resolve(&req, &list, &sel, &err) < 0) {
                if (err == NULL || strstr(err->msg, "unknown device") == NULL)
                        abort();
                return 0;
        }
        if (sel.ngpus > list.n || sel.nmigs > 2)
                abort();
        for (size_t m = 0; m < sel.nmigs; m++) {
                bool parent = false;
                for (size_t g = 0; g < sel.ngpus; g++)
                        parent |= sel.gpus[g]->index == sel.migs[m]->parent_index;
                if (!parent)
                        abort();
        }
        return 0;
}
