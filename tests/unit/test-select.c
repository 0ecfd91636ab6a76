/* lib/core/select.c: NVIDIA_VISIBLE_DEVICES parsing and resolution against a GPU list. */
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "select.h"
#include "tap.h"

static struct gh_mig migs0[2], migs2[1];
static struct gh_gpu gpus[3];
static struct gh_gpu_list list = {
        .driver_version = "580.95.05", .cuda_version = "13.0", .gpus = gpus, .n = 3, .from_nvml = true
};

static void setup(void)
{
        static const char *uuids[] = { "GPU-aaaaaaaa-0000-0000-0000-000000000000",
                                       "GPU-bbbbbbbb-0000-0000-0000-000000000000",
                                       "GPU-cccccccc-0000-0000-0000-000000000000" };
        static const char *busids[] = { "0000:00:06.0", "0000:00:07.0", "0001:3b:00.0" };
        for (unsigned i = 0; i < 3; i++) {
                gpus[i].index = i;
                gpus[i].minor = 2 - i;
                strcpy(gpus[i].uuid, uuids[i]);
                strcpy(gpus[i].busid, busids[i]);
        }
        gpus[0].mig_enabled = true;
        gpus[0].migs = migs0;
        gpus[0].nmigs = 2;
        migs0[0] = (struct gh_mig) { .parent_index = 0, .index = 0, .gi = 1, .ci = 0 };
        strcpy(migs0[0].uuid, "MIG-11111111-0000-0000-0000-000000000000");
        migs0[1] = (struct gh_mig) { .parent_index = 0, .index = 1, .gi = 2, .ci = 0 };
        strcpy(migs0[1].uuid, "MIG-22222222-0000-0000-0000-000000000000");
        gpus[2].mig_enabled = true;
        gpus[2].migs = migs2;
        gpus[2].nmigs = 1;
        migs2[0] = (struct gh_mig) { .parent_index = 2, .index = 3, .gi = 7, .ci = 1 };
        strcpy(migs2[0].uuid, "MIG-33333333-0000-0000-0000-000000000000");
}

/* Parses, resolves and renders the result as "G0,G2|0:1" (GPU indices | MIG pairs), or the error. */
static char *run(const char *text)
{
        _cleanup_select_request_ struct gh_select_request req = { 0 };
        _cleanup_selection_ struct gh_selection sel = { 0 };
        _cleanup_error_ gh_error_t err = NULL;
        char buf[512] = "";
        size_t used = 0;

        if (gh_select_parse(text, &req, &err) < 0 || gh_select_resolve(&req, &list, &sel, &err) < 0)
                return strdup(err->msg);
        for (size_t i = 0; i < sel.ngpus; i++)
                used += (size_t) snprintf(buf + used, sizeof(buf) - used, "%s%s%u", i ? "," : "",
                                          sel.full[i] ? "G" : "p", sel.gpus[i]->index);
        used += (size_t) snprintf(buf + used, sizeof(buf) - used, "|");
        for (size_t i = 0; i < sel.nmigs; i++)
                used += (size_t) snprintf(buf + used, sizeof(buf) - used, "%s%u:%u", i ? "," : "",
                                          sel.migs[i]->parent_index, sel.migs[i]->index);
        return strdup(buf);
}

#define RESOLVES(text, want, ...)                                                                                      \
        do {                                                                                                           \
                char *_got = run(text);                                                                                \
                is_str(_got, want, __VA_ARGS__);                                                                       \
                free(_got);                                                                                            \
        } while (0)

static bool error_names(const char *text, const char *item)
{
        char *got = run(text);
        char want[300];
        bool r;
        snprintf(want, sizeof(want), "unknown device '%s'", item);
        r = strstr(got, want) != NULL;
        if (!r)
                printf("#   got '%s'\n", got);
        free(got);
        return r;
}

static void test_parse_flags(void)
{
        struct gh_select_request req;
        gh_error_t err = NULL;
        char buf[256];

        ok(gh_select_parse(NULL, &req, &err) == 0 && req.unset && !req.is_void, "unset list is reported as unset");
        gh_select_request_free(&req);
        ok(gh_select_parse("", &req, &err) == 0 && req.is_void, "empty string is void (not a GPU container)");
        gh_select_request_free(&req);
        ok(gh_select_parse(" , ,", &req, &err) == 0 && req.is_void, "only blanks and commas is void");
        gh_select_request_free(&req);
        ok(gh_select_parse("0,void", &req, &err) == 0 && req.is_void, "any item 'void' makes it void");
        gh_select_request_free(&req);
        ok(gh_select_parse("ALL", &req, &err) == 0 && req.all && req.n == 0, "'ALL' is all (case-insensitive)");
        gh_select_request_free(&req);
        ok(gh_select_parse("none", &req, &err) == 0 && req.none && !req.is_void && req.n == 0,
           "'none' is none, not void");
        gh_select_request_free(&req);
        ok(gh_select_parse(" 0 ,\t1,, 0,gpu-AAAA,GPU-aaaa ", &req, &err) == 0 && req.n == 3,
           "items trimmed, empty dropped, duplicates (case-insensitive UUIDs) removed");
        gh_select_format(&req, buf, sizeof(buf));
        is_str(buf, "0,1,gpu-AAAA", "format writes the normalised list");
        gh_select_request_free(&req);
        ok(gh_select_parse("00:06.0,0000:00:06.0,00000000:00:06.0", &req, &err) == 0 && req.n == 1 &&
                   strcmp(req.items[0].busid, "0000:00:06.0") == 0,
           "three spellings of one bus id are one item");
        gh_select_request_free(&req);
        ok(gh_select_parse("0:1", &req, &err) == 0 && req.n == 1 && req.items[0].kind == GH_SELECT_MIG_INDEX &&
                   req.items[0].index == 0 && req.items[0].mig == 1,
           "'0:1' is a GPU:MIG pair");
        gh_select_request_free(&req);
        ok(gh_select_parse("MIG-xyz", &req, &err) == 0 && req.items[0].kind == GH_SELECT_MIG_UUID,
           "MIG- is a MIG UUID");
        gh_select_request_free(&req);
        ok(gh_select_parse("foo", &req, &err) < 0 && strstr(err->msg, "unknown device 'foo'") != NULL,
           "parse rejects an item of no known form, naming it");
        gh_error_free(&err);
        ok(gh_select_parse("0,1,,-1", &req, &err) < 0 && strstr(err->msg, "'-1'") != NULL, "negative index rejected");
        gh_error_free(&err);
}

static void test_resolve(void)
{
        RESOLVES("all", "G0,G1,G2|0:0,0:1,2:3", "all: every GPU and MIG device");
        RESOLVES("none", "|", "none: no device");
        RESOLVES("", "|", "empty: no device");
        RESOLVES("1", "G1|", "index");
        RESOLVES("2,0", "G0,G2|", "indices come back in index order");
        RESOLVES("GPU-BBBBBBBB-0000-0000-0000-000000000000", "G1|", "GPU UUID, case-insensitive");
        RESOLVES("0001:3B:00.0", "G2|", "bus id with domain, upper case");
        RESOLVES("00000001:3b:00.0", "G2|", "bus id with NVML's 8-digit domain");
        RESOLVES("00:07.0", "G1|", "short bus id (domain 0)");
        RESOLVES("0:1", "p0|0:1", "GPU:MIG selects the MIG device and exposes its parent");
        RESOLVES("MIG-33333333-0000-0000-0000-000000000000", "p2|2:3", "MIG UUID selects it and its parent");
        RESOLVES("mig-11111111-0000-0000-0000-000000000000,0", "G0|0:0", "MIG plus its parent GPU: parent is full");
        RESOLVES("2:3,0:0", "p0,p2|0:0,2:3", "MIG pairs in (gpu, mig) order");
        RESOLVES("none,1", "G1|", "'none' with other items: the others still apply");
        RESOLVES("all,1", "G0,G1,G2|0:0,0:1,2:3", "'all' with an index is still all");
}

static void test_errors(void)
{
        ok(error_names("3", "3"), "index past the end is an unknown device");
        ok(error_names("0,GPU-deadbeef", "GPU-deadbeef"), "unknown GPU UUID named");
        ok(error_names("GPU-aaaaaaaa-0000-0000-0000-00000000000", "GPU-aaaaaaaa-0000-0000-0000-00000000000"),
           "UUID prefix is not a match");
        ok(error_names("0:2", "0:2"), "MIG index past the end named");
        ok(error_names("1:0", "1:0"), "MIG pair on a GPU without MIG named");
        ok(error_names("MIG-44444444", "MIG-44444444"), "unknown MIG UUID named");
        ok(error_names("0000:00:08.0", "0000:00:08.0"), "unknown bus id named");
        ok(error_names("3b:00.0", "3b:00.0"), "a short bus id means domain 0000");
        ok(error_names("00:20.0", "00:20.0"), "device number past 0x1f is no bus id");
        ok(error_names("00:06.8", "00:06.8"), "function past 7 is no bus id");
        ok(error_names("0x1", "0x1"), "hex index rejected");
        ok(error_names("1 2", "1 2"), "inner blank is not a separator");
        ok(error_names("0:1:2", "0:1:2"), "three-part pair rejected");
        ok(error_names("GPU-", "GPU-"), "bare GPU- rejected");
        ok(error_names("99999999999", "99999999999"), "huge index rejected, not wrapped");
        {
                char big[2000];
                memset(big, 'a', sizeof(big) - 1);
                big[sizeof(big) - 1] = '\0';
                char *got = run(big);
                ok(strstr(got, "unknown device 'aaaa") != NULL && strlen(got) < 300,
                   "a 2000-character item gives a short error");
                free(got);
        }
        /* On a fast-path list MIG devices are unknown: the error says where they come from. */
        list.from_nvml = false;
        gpus[0].nmigs = 0;
        {
                char *got = run("0:0");
                ok(strstr(got, "unknown device '0:0'") && strstr(got, "only known through NVML"),
                   "MIG item on a fast-path list says MIG needs NVML");
                free(got);
        }
        gpus[0].nmigs = 2;
        list.from_nvml = true;
}

int main(void)
{
        setup();
        test_parse_flags();
        test_resolve();
        test_errors();
        return tap_done();
}
