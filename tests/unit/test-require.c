/* lib/core/require.c: the NVIDIA_REQUIRE_* expression language, its evaluation and its messages. */
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "require.h"
#include "tap.h"

static const struct gh_require_facts h100 = { .cuda = "13.0", .driver = "580.95.05", .arch = "9.0", .brand = "Nvidia" };
static const struct gh_require_facts nogpu = { .cuda = "13.0", .driver = "580.95.05" };

/* 1 = holds, 0 = does not hold, -1 = parse error */
static int eval(const char *expr, const struct gh_require_facts *f)
{
        _cleanup_require_ struct gh_require *req = NULL;
        _cleanup_error_ gh_error_t err = NULL;

        if (gh_require_parse(expr, &req, &err) < 0)
                return -1;
        return gh_require_eval(req, f, NULL) ? 1 : 0;
}

static char *parse_error(const char *expr)
{
        _cleanup_require_ struct gh_require *req = NULL;
        _cleanup_error_ gh_error_t err = NULL;

        if (gh_require_parse(expr, &req, &err) == 0)
                return strdup("(parsed)");
        return strdup(err->msg);
}

static void test_versions(void)
{
        is_int(gh_version_compare("13.0", "13"), 0, "missing trailing components are 0");
        is_int(gh_version_compare("13.0.1", "13.0"), 1, "13.0.1 > 13.0");
        is_int(gh_version_compare("9.2", "10.0"), -1, "numeric, not lexical: 9.2 < 10.0");
        is_int(gh_version_compare("580.95.05", "580.95.5"), 0, "leading zeros are numbers: 05 == 5");
        is_int(gh_version_compare("1.a", "1"), -2, "non-numeric version reported");
}

static void test_eval(void)
{
        is_int(eval("cuda>=12.0", &h100), 1, "cuda>=12.0 holds on CUDA 13.0");
        is_int(eval("cuda>=13.1", &h100), 0, "cuda>=13.1 fails on CUDA 13.0");
        is_int(eval("CUDA>=13", &h100), 1, "keys are case-insensitive");
        is_int(eval("cuda=13", &h100), 1, "= with a shorter version");
        is_int(eval("cuda!=13.0", &h100), 0, "!=");
        is_int(eval("cuda<13.0", &h100), 0, "< strict");
        is_int(eval("cuda<=13.0", &h100), 1, "<=");
        is_int(eval("cuda>12.9", &h100), 1, ">");
        is_int(eval("driver>=580.95", &h100), 1, "driver version three components vs two");
        is_int(eval("driver<580.95.06", &h100), 1, "driver per-component compare");
        is_int(eval("arch>=9.0", &h100), 1, "arch on an H100");
        is_int(eval("arch<9.0", &h100), 0, "arch< fails on an H100");
        is_int(eval("brand=NVIDIA", &h100), 1, "brand compares case-insensitively");
        is_int(eval("brand!=tesla", &h100), 1, "brand !=");
        is_int(eval("brand=tesla", &h100), 0, "brand mismatch");
        is_int(eval("cuda>=14.0 brand=tesla,driver>=470", &h100), 0, "OR of two failing alternatives fails");
        is_int(eval("cuda>=14.0 brand=nvidia,driver>=470", &h100), 1, "second alternative holds (AND of two)");
        is_int(eval("cuda>=12.0 brand=tesla,driver>=470", &h100), 1, "first alternative holds");
        is_int(eval("cuda>=12.0,brand=tesla", &h100), 0, "AND with one false condition fails");
        is_int(eval("  cuda>=12.0   \t arch>=10.0 ", &h100), 1, "extra blanks between alternatives");
        is_int(eval("cuda>=12.0,", &h100), 1, "trailing comma is dropped");
        is_int(eval("arch>=10.0,brand=tesla", &nogpu), 1, "no GPU: arch and brand pass");
        is_int(eval("cuda>=14.0", &nogpu), 0, "no GPU: cuda is still checked");
        {
                struct gh_require_facts unknown = { .driver = "580.95.05", .arch = "9.0", .brand = "" };
                is_int(eval("cuda>=1.0", &unknown), 0, "unknown CUDA version fails a cuda condition");
                is_int(eval("brand!=tesla", &unknown), 0, "unknown brand fails a brand condition");
        }
}

static void test_parse_errors(void)
{
        static const struct {
                const char *expr, *want;
        } cases[] = {
                { "foo>=1.0", "invalid expression 'foo>=1.0'" },
                { "cudaa>=1", "unknown key" },
                { "cuda", "no operator" },
                { "cuda~1.0", "no operator" },
                { "cuda>=", "no value" },
                { "cuda>=1.x", "not a version" },
                { "cuda>=.1", "not a version" },
                { "cuda>=1..2", "not a version" },
                { "brand>=tesla", "brand allows only = and !=" },
                { "brand=te$la", "bad brand name" },
                { "", "it is empty" },
                { "   ", "it is empty" },
                { ",", "has no condition" },
                { "cuda>=1.0 ,", "has no condition" },
                { "cuda>=1.2.3.4.5.6.7.8.9", "not a version" },
                { "cuda>=1234567890", "not a version" },
        };
        for (size_t i = 0; i < GH_ARRAY_SIZE(cases); i++) {
                char *got = parse_error(cases[i].expr);
                ok(strstr(got, cases[i].want) != NULL && strstr(got, "invalid expression") != NULL, "'%s' rejected: %s",
                   cases[i].expr, cases[i].want);
                if (strstr(got, cases[i].want) == NULL)
                        printf("#   got '%s'\n", got);
                free(got);
        }
        {
                char *big = malloc(10000);
                memset(big, 'a', 9999);
                big[9999] = '\0';
                char *got = parse_error(big);
                ok(strstr(got, "longer than") != NULL && strlen(got) < 200, "a 10 kB expression is refused briefly");
                free(got);
                free(big);
        }
}

static void test_messages(void)
{
        struct gh_gpu gpus[2] = { 0 };
        struct gh_gpu_list list = { .driver_version = "580.95.05", .cuda_version = "13.0", .gpus = gpus, .n = 2 };
        const struct gh_gpu *selected[2] = { &gpus[0], &gpus[1] };
        bool full[2] = { true, true };
        struct gh_selection sel = { .gpus = selected, .full = full, .ngpus = 2 };
        gh_error_t err = NULL;

        for (unsigned i = 0; i < 2; i++) {
                gpus[i].index = i;
                strcpy(gpus[i].model, i ? "NVIDIA A100" : "NVIDIA H100");
                strcpy(gpus[i].arch, i ? "8.0" : "9.0");
                strcpy(gpus[i].brand, i ? "Tesla" : "Nvidia");
        }
        ok(gh_require_check_expr("cuda>=13.1", &list, &sel, &err) < 0 && err->kind == GH_ERR_REQUIREMENT &&
                   err->code == 0,
           "cuda>=13.1 not met, with the requirement code");
        is_str(err ? err->msg : NULL,
               "requirement 'cuda>=13.1' not met: the driver supports CUDA 13.0; update the NVIDIA driver on the host "
               "to one that supports CUDA 13.1 or newer",
               "cuda failure says to update the driver");
        gh_error_free(&err);
        ok(gh_require_check_expr("arch>=9.0", &list, &sel, &err) < 0 && strstr(err->msg, "on GPU 1 (NVIDIA A100") &&
                   strstr(err->msg, "compute capability 8.0"),
           "arch failure names the failing GPU and its arch");
        gh_error_free(&err);
        ok(gh_require_check_expr("cuda>=12.0,brand=nvidia", &list, &sel, &err) < 0 &&
                   strstr(err->msg, "('brand=nvidia' is false)") && strstr(err->msg, "GPU 1"),
           "compound failure names the failing condition");
        gh_error_free(&err);
        ok(gh_require_check_expr("driver>=600", &list, NULL, &err) < 0 && strstr(err->msg, "580.95.05"),
           "driver failure shows the host driver");
        gh_error_free(&err);
        ok(gh_require_check_expr("cuda>=12.0 arch>=10.0", &list, &sel, &err) == 0,
           "requirement holding on all GPUs passes");
        gh_error_free(&err);
        ok(gh_require_check_expr("arch>=10.0", &list, NULL, &err) == 0, "no GPU selected: arch passes");
        gh_error_free(&err);
        ok(gh_require_check_expr("bogus=1", &list, NULL, &err) < 0 && err->code == 0 &&
                   strstr(err->msg, "invalid expression"),
           "parse error keeps its own message and code");
        gh_error_free(&err);
}

static unsigned keys(const char *expr)
{
        _cleanup_require_ struct gh_require *req = NULL;
        _cleanup_error_ gh_error_t err = NULL;

        if (gh_require_parse(expr, &req, &err) < 0)
                return ~0u;
        return gh_require_keys(req);
}

static void test_keys(void)
{
        is_int((int) keys("cuda>=12.0"), GH_REQUIRE_KEY_CUDA, "keys: cuda alone");
        is_int((int) keys("CUDA>=12.0,cuda<14 cuda=11.8"), GH_REQUIRE_KEY_CUDA,
               "keys: only cuda, any case, AND and OR");
        is_int((int) keys("cuda>=12.0 brand=tesla"), GH_REQUIRE_KEY_CUDA | GH_REQUIRE_KEY_BRAND,
               "keys: a brand in another alternative counts");
        is_int((int) keys("cuda>=12.0,arch>=8.0"), GH_REQUIRE_KEY_CUDA | GH_REQUIRE_KEY_ARCH, "keys: cuda and arch");
        is_int((int) keys("driver>=500"), GH_REQUIRE_KEY_DRIVER, "keys: driver alone");
}

int main(void)
{
        test_versions();
        test_eval();
        test_parse_errors();
        test_messages();
        test_keys();
        return tap_done();
}
