/* lib/front/statecache.c: the cache file's format (round trip, and input that must be refused) and, as
 * root with the fake driver built, the promise that matters: requirements and device selection on a
 * warm cache decide exactly as with NVML: same pass/fail, same messages, over every expression of
 * the requirement test set (tests/unit/test-require.c, read at run time so the set cannot drift). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "gpus.h"
#include "require.h"
#include "rootfs.h"
#include "select.h"
#include "statecache.h"
#include "tap.h"
#include "testutil.h"

static char top[PATH_MAX];

static void sample_list(struct gh_gpu_list *l, struct gh_gpu *gpus, struct gh_mig *migs)
{
        memset(l, 0, sizeof(*l));
        strcpy(l->driver_version, "580.95.05");
        strcpy(l->cuda_version, "13.0");
        for (unsigned i = 0; i < 2; i++) {
                memset(&gpus[i], 0, sizeof(gpus[i]));
                gpus[i].index = i;
                gpus[i].minor = 1 - i;
                snprintf(gpus[i].uuid, sizeof(gpus[i].uuid), "GPU-0000000%u-1111-2222-3333-444444444444", i);
                snprintf(gpus[i].busid, sizeof(gpus[i].busid), "0000:0%u:00.0", i + 1);
                strcpy(gpus[i].model, "NVIDIA H100 80GB HBM3");
                strcpy(gpus[i].brand, i ? "Tesla" : "Nvidia");
                strcpy(gpus[i].arch, i ? "8.0" : "9.0");
        }
        gpus[1].mig_enabled = true;
        gpus[1].migs = migs;
        gpus[1].nmigs = 2;
        for (unsigned m = 0; m < 2; m++) {
                memset(&migs[m], 0, sizeof(migs[m]));
                migs[m] = (struct gh_mig) { .parent_index = 1, .index = m, .gi = 1 + m, .ci = 0 };
                snprintf(migs[m].uuid, sizeof(migs[m].uuid), "MIG-0000000%u-aaaa-bbbb-cccc-dddddddddddd", m);
        }
        l->gpus = gpus;
        l->n = 2;
        l->from_nvml = true;
}

static void test_format(void)
{
        struct gh_gpu gpus[2];
        struct gh_mig migs[2];
        struct gh_gpu_list l;
        struct gh_driver_fp fp = { .text = (char *) "format 1\nboot x\n",
                                   .libs = { (char *) "/usr/lib/libnvidia-ml.so.1", (char *) "" } };
        _cleanup_statecache_entry_ struct gh_statecache_entry e = { 0 };
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_free_ char *text = NULL;

        sample_list(&l, gpus, migs);
        text = gh_statecache_format(&fp, &l);
        ok(text != NULL, "format a list");
        ok(gh_statecache_parse(text, strlen(text), &e, &err) == 0, "parse it back%s%s", err ? ": " : "",
           err ? err->msg : "");
        is_str(e.fingerprint, fp.text, "round trip: fingerprint");
        is_str(e.libs[0], fp.libs[0], "round trip: library path");
        ok(e.list.n == 2 && e.list.origin == GH_ORIGIN_CACHE && e.list.from_nvml, "round trip: 2 GPUs, origin cache");
        ok(e.list.n == 2 && memcmp(&e.list.gpus[0], &gpus[0], offsetof(struct gh_gpu, migs)) == 0 &&
                   memcmp(&e.list.gpus[1], &gpus[1], offsetof(struct gh_gpu, migs)) == 0,
           "round trip: every GPU field");
        ok(e.list.n == 2 && e.list.gpus[1].nmigs == 2 && memcmp(e.list.gpus[1].migs, migs, sizeof(migs)) == 0,
           "round trip: MIG devices with their parent index");
        is_str(e.list.cuda_version, "13.0", "round trip: CUDA version");

        /* Each mutation of the good text must be refused, with a reason. */
        static const struct {
                const char *from, *to, *what;
        } bad[] = {
                { "\"minor\": 1", "\"minor\": 255", "minor 255 (nvidiactl's)" },
                { "\"minor\": 1", "\"minor\": -1", "negative minor" },
                { "\"minor\": 1", "\"minor\": 1.0", "float minor" },
                { "\"minor\": 1", "\"minor\": 4294967296", "minor past 32 bits" },
                { "\"minor\": 1", "\"minor\": \"1\"", "string minor" },
                { "\"format\": 1", "\"format\": 2", "another format" },
                { "\"cuda_version\": \"13.0\"", "\"cuda_version\": \"13\"", "CUDA version without a dot" },
                { "\"cuda_version\": \"13.0\"", "\"cuda_version\": \"13.0\\u0000x\"", "NUL inside a string" },
                { "\"brand\": \"Tesla\"", "\"brand\": \"Te\\nsla\"", "control character" },
                { "\"bus_id\": \"0000:01:00.0\"", "\"bus_id\": \"01:00.0\"", "bus id not normalised" },
                { "\"bus_id\": \"0000:02:00.0\"", "\"bus_id\": \"0000:00:00.0\"", "GPUs out of bus-id order" },
                { "\"minor\": 0", "\"minor\": 1", "two GPUs with one minor" },
                { "\"gpu_instance\": 1", "\"gpu_instance\": 99999", "absurd GPU instance" },
                { "\"mig_enabled\": true", "\"mig_enabled\": false", "MIG devices with MIG off" },
                { "\"format\": 1", "\"format\": 1, \"format\": 1", "duplicate key" },
                { "\"format\": 1", "\"format\": 1, \"extra\": 1", "unknown key" },
                { "\"architecture\": \"9.0\"", "\"architecture\": \"\"", "empty architecture" },
                { "\"libraries\": [", "\"libraries\": [\"relative\", ", "relative library path" },
        };
        for (size_t i = 0; i < GH_ARRAY_SIZE(bad); i++) {
                _cleanup_statecache_entry_ struct gh_statecache_entry b = { 0 };
                _cleanup_error_ gh_error_t e2 = NULL;
                _cleanup_free_ char *mut = NULL;
                char *at = strstr(text, bad[i].from);
                if (!ok(at != NULL, "mutation '%s' applies", bad[i].what))
                        continue;
                if (asprintf(&mut, "%.*s%s%s", (int) (at - text), text, bad[i].to, at + strlen(bad[i].from)) < 0)
                        abort();
                ok(gh_statecache_parse(mut, strlen(mut), &b, &e2) < 0 && e2 != NULL && b.list.n == 0 &&
                           b.fingerprint == NULL,
                   "refused: %s%s%s", bad[i].what, e2 ? " -> " : "", e2 ? e2->msg : "");
        }
        {
                _cleanup_statecache_entry_ struct gh_statecache_entry b = { 0 };
                _cleanup_error_ gh_error_t e2 = NULL;
                ok(gh_statecache_parse(text, strlen(text) / 2, &b, &e2) < 0, "refused: truncated");
        }
}

/* ---- warm cache vs NVML on the fake driver ---- */

/* Every expression test-require.c evaluates or parses: string literals after eval(", check_expr(" and
 * "{ \"" (its table of parse errors). */
static size_t require_set(char ***out)
{
        const char *src = getenv("GH_SOURCE_DIR");
        static const char *const marks[] = { "eval(\"", "check_expr(\"", "{ \"" };
        _cleanup_free_ char *text = NULL, *path = NULL;
        char **v = NULL;
        size_t n = 0, len = 0;
        FILE *f;

        if (src == NULL || asprintf(&path, "%s/tests/unit/test-require.c", src) < 0 || (f = fopen(path, "re")) == NULL)
                return 0;
        if (getdelim(&text, &len, '\0', f) < 0)
                len = 0;
        fclose(f);
        for (size_t k = 0; text && k < GH_ARRAY_SIZE(marks); k++) {
                for (const char *p = strstr(text, marks[k]); p; p = strstr(p + 1, marks[k])) {
                        const char *s = p + strlen(marks[k]), *e = strchr(s, '"');
                        if (e == NULL)
                                break;
                        v = realloc(v, (n + 1) * sizeof(*v));
                        v[n++] = strndup(s, (size_t) (e - s));
                }
        }
        *out = v;
        return n;
}

static bool same_lists(const struct gh_gpu_list *a, const struct gh_gpu_list *b)
{
        if (a->n != b->n || strcmp(a->driver_version, b->driver_version) || strcmp(a->cuda_version, b->cuda_version))
                return false;
        for (size_t i = 0; i < a->n; i++) {
                const struct gh_gpu *x = &a->gpus[i], *y = &b->gpus[i];
                if (memcmp(x, y, offsetof(struct gh_gpu, migs)) != 0 || x->nmigs != y->nmigs ||
                    (x->nmigs && memcmp(x->migs, y->migs, x->nmigs * sizeof(*x->migs)) != 0))
                        return false;
        }
        return true;
}

/* rc, error code and message of one requirement on one selection. */
static char *decide(const char *expr, const char *devices, const struct gh_gpu_list *l)
{
        _cleanup_select_request_ struct gh_select_request req = { 0 };
        _cleanup_selection_ struct gh_selection sel = { 0 };
        _cleanup_error_ gh_error_t err = NULL;
        char *out = NULL;
        int r = 0;

        if (devices != NULL && (gh_select_parse(devices, &req, &err) < 0 || gh_select_resolve(&req, l, &sel, &err) < 0))
                r = -100;
        else
                r = gh_require_check_expr(expr, l, devices ? &sel : NULL, &err);
        if (asprintf(&out, "%d/%d/%s", r, err ? err->code : 0, err ? err->msg : "") < 0)
                abort();
        return out;
}

static void test_equivalence(void)
{
        static const char *const selections[] = { NULL, "all", "0", "1", "5", "7", "0,7", "0:0", "1:1", "6:0", "3" };
        char dir[PATH_MAX + 16], state[PATH_MAX + 32];
        struct gh_gpus_opts nvml = GH_GPUS_OPTS_DEFAULT, cached = GH_GPUS_OPTS_DEFAULT;
        _cleanup_gpu_list_ struct gh_gpu_list a = { 0 };
        _cleanup_gpu_list_ struct gh_gpu_list fill = { 0 };
        _cleanup_gpu_list_ struct gh_gpu_list b = { 0 };
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_close_ int rootfd = -1;
        char **exprs = NULL;
        size_t nexprs, same = 0, checked = 0;

        if (geteuid() != 0 || getenv("GH_BUILD_DIR") == NULL || getenv("GH_SOURCE_DIR") == NULL) {
                tap_diag("warm cache vs NVML needs root and the fake driver (GH_BUILD_DIR): skipped");
                return;
        }
        snprintf(dir, sizeof(dir), "%s/fake", top);
        snprintf(state, sizeof(state), "%s/cache/state.json", top);
        if (!ok(sh("'%s/tests/fake-driver/make-root.sh' '%s' --profile '%s/tests/fake-driver/profiles/8gpu-mig.json' "
                   ">/dev/null 2>&1",
                   getenv("GH_SOURCE_DIR"), dir, getenv("GH_SOURCE_DIR")) == 0,
                "make the 8-GPU MIG fake driver root"))
                return;
        rootfd = gh_rootfs_open(dir, &err);
        cached.state_file = state;
        cached.cache = &gh_statecache;
        ok(rootfd >= 0 && gh_gpus_load(rootfd, &nvml, &a, &err) == 0 && a.origin == GH_ORIGIN_NVML, "NVML answers");
        ok(gh_gpus_load(rootfd, &cached, &fill, &err) == 0 && fill.origin == GH_ORIGIN_NVML, "a cold cache asks NVML");
        ok(gh_gpus_load(rootfd, &cached, &b, &err) == 0 && b.origin == GH_ORIGIN_CACHE, "then the cache answers");
        ok(same_lists(&a, &b), "the cached list is NVML's, field by field (MIG cap minors included)");

        nexprs = require_set(&exprs);
        ok(nexprs >= 40, "the requirement test set has %zu expressions", nexprs);
        for (size_t i = 0; i < nexprs; i++) {
                for (size_t s = 0; s < GH_ARRAY_SIZE(selections); s++) {
                        _cleanup_free_ char *x = decide(exprs[i], selections[s], &a);
                        _cleanup_free_ char *y = decide(exprs[i], selections[s], &b);
                        checked++;
                        if (strcmp(x, y) == 0)
                                same++;
                        else
                                tap_diag("'%s' on %s: NVML %s, cache %s", exprs[i], selections[s] ? selections[s] : "-",
                                         x, y);
                }
                free(exprs[i]);
        }
        free(exprs);
        is_int((int) same, (int) checked, "every requirement x selection (%zu) decides the same, with the same message",
               checked);
}

/* Plans kept next to the cache file (gh_statecache_plan_*): handed back only under the same key and
 * the same fingerprint, and never from a file that is not root's alone, cut short or tampered with
 * (then the caller builds the plan); cache clear removes them. */
/* gh_statecache_plan_lookup, and the fingerprint it hands back compared as plancache.c does: 1
 * only for a plan kept under key and want. */
static int lookup(const char *state, const char *key, const char *want, char **text)
{
        _cleanup_free_ char *kept = NULL;
        int r = gh_statecache_plan_lookup(state, key, &kept, text);

        if (r == 1 && strcmp(kept, want) == 0)
                return 1;
        free(*text);
        *text = NULL;
        return 0;
}

static void test_plans(void)
{
        char dir[PATH_MAX + 16], state[PATH_MAX + 32];
        static const char key[] = "root /\narg --device=all\n", fp[] = "boot 1\nversion 580\n", plan[] = "{\"v\":1}";
        _cleanup_error_ gh_error_t err = NULL;
        char *text = NULL;

        if (geteuid() != 0) {
                tap_diag("kept plans: only root writes the cache: skipped");
                return;
        }
        snprintf(dir, sizeof(dir), "%s/plans", top);
        snprintf(state, sizeof(state), "%s/state.json", dir);
        ok(mkdir(dir, 0755) == 0, "plans: a cache directory");
        ok(gh_statecache_plan_save(state, key, fp, plan, &err) == 0, "plans: one is kept");
        ok(lookup(state, key, fp, &text) == 1 && text && strcmp(text, plan) == 0,
           "plans: and handed back, byte for byte, with the fingerprint it was kept under");
        free(text);
        text = NULL;
        ok(lookup(state, key, "boot 1\nversion 581\n", &text) == 0 && text == NULL,
           "plans: not under another fingerprint (a driver change)");
        ok(lookup(state, "root /\narg --device=0\n", fp, &text) == 0 && text == NULL, "plans: not under another key");
        is_int(sh("n=$(ls '%s'/state.json.plan-* | wc -l); [ $n = 1 ]", dir), 0, "plans: in one file");
        sh("chmod 0666 '%s'/state.json.plan-*", dir);
        ok(lookup(state, key, fp, &text) == 0, "plans: not from a file others may write");
        sh("chmod 0644 '%s'/state.json.plan-*", dir);
        ok(lookup(state, key, fp, &text) == 1, "plans: (mode restored: handed back again)");
        free(text);
        text = NULL;
        sh("f=$(ls '%s'/state.json.plan-*); head -c -2 \"$f\" >\"$f.x\"; cat \"$f.x\" >\"$f\"; rm \"$f.x\"", dir);
        ok(lookup(state, key, fp, &text) == 0, "plans: not from a file cut short");
        ok(gh_statecache_plan_save(state, key, fp, plan, &err) == 0, "plans: kept again");
        sh("f=$(ls '%s'/state.json.plan-*); sed -i 's/version 580/version 581/' \"$f\"", dir);
        ok(lookup(state, key, fp, &text) == 0, "plans: not when the fingerprint in the file differs");
        for (int i = 0; i < GH_STATECACHE_MAX_PLANS + 3; i++) {
                char k[64];
                snprintf(k, sizeof(k), "key %d", i);
                gh_statecache_plan_save(state, k, fp, plan, &err);
        }
        ok(sh("n=$(ls '%s'/state.json.plan-* | wc -l); [ $n -le %d ]", dir, GH_STATECACHE_MAX_PLANS) == 0,
           "plans: at most %d files", GH_STATECACHE_MAX_PLANS);
        ok(gh_statecache_clear(state, &err) == 0 && sh("! ls '%s'/state.json.plan-* 2>/dev/null", dir) == 0,
           "plans: cache clear removes them");
}

int main(void)
{
        snprintf(top, sizeof(top), "/tmp/gh-test-statecache.XXXXXX");
        if (mkdtemp(top) == NULL)
                return 1;
        test_format();
        test_equivalence();
        test_plans();
        sh("rm -rf '%s'", top);
        return tap_done();
}
