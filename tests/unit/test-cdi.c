/* lib/ops/cdi.c without a driver: CDI name rules, the lowest cdiVersion of a spec, and --check's
 * comparison (what it names first).  The spec itself is tested end to end in
 * tests/integration/test-cdi.sh. */
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>
#include <unistd.h>

#include "cdi-hook.h"
#include "cdi.h"
#include "tests/tap.h"

static json_t *parse(const char *s)
{
        json_error_t e;
        json_t *j = json_loads(s, 0, &e);
        if (j == NULL)
                printf("# bad test JSON: %s\n", e.text);
        return j;
}

static void test_kind(void)
{
        static const char *const good[][2] = { { "nvidia.com", "gpu" }, { "a", "b" }, { "x_y-z.io", "mig-1" } };
        static const char *const bad[][2] = { { "-nvidia.com", "gpu" },  { "nvidia.com.", "gpu" }, { "1vendor", "gpu" },
                                              { "nvidia.com", "gpu.x" }, { "nvidia.com", "" },     { "", "gpu" },
                                              { "nvidia/com", "gpu" },   { "nvidia.com", "gpu-" } };

        for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
                gh_error_t err = NULL;
                ok(gh_cdi_check_kind(good[i][0], good[i][1], &err) == 0, "kind %s/%s is valid", good[i][0], good[i][1]);
                gh_error_free(&err);
        }
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                gh_error_t err = NULL;
                ok(gh_cdi_check_kind(bad[i][0], bad[i][1], &err) < 0 && err && strstr(err->msg, "invalid"),
                   "kind '%s'/'%s' is refused with a message", bad[i][0], bad[i][1]);
                gh_error_free(&err);
        }
}

/* An MPS group's device is mps-NAME: a group name valid for MPS but ending in '.', '-' or '_' is
 * not a CDI device name; a name MPS refuses is refused too. */
static void test_mps_name(void)
{
        static const char *const good[] = { "team", "a", "g1", "_x1", "a.b-c_d", "9" };
        static const char *const bad[] = { "g-", "g.", "g_", "", "../x", "a/b", ".x", "-x", "a b" };

        for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
                gh_error_t err = NULL;
                ok(gh_cdi_check_mps_name(good[i], &err) == 0, "MPS group '%s' can be a CDI device", good[i]);
                gh_error_free(&err);
        }
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                gh_error_t err = NULL;
                ok(gh_cdi_check_mps_name(bad[i], &err) < 0 && err && gh_error_exit_status(err) == 2,
                   "MPS group '%s' is refused as a usage error", bad[i]);
                gh_error_free(&err);
        }
}

static void test_version(void)
{
        static const struct {
                const char *spec, *want, *desc;
        } cases[] = {
                { "{\"devices\":[{\"name\":\"GPU-1\",\"containerEdits\":{}},{\"name\":\"all\",\"containerEdits\":{}}]}",
                  "0.3.0", "UUID names only: 0.3.0" },
                { "{\"devices\":[{\"name\":\"0\",\"containerEdits\":{}}]}", "0.5.0",
                  "a name starting with a digit: 0.5.0" },
                { "{\"devices\":[{\"name\":\"a\",\"containerEdits\":{\"deviceNodes\":[{\"path\":\"/dev/x\",\"hostPath\":\"/r/dev/x\"}]}}]}",
                  "0.5.0", "a device node with hostPath: 0.5.0" },
                { "{\"devices\":[],\"containerEdits\":{\"deviceNodes\":[{\"path\":\"/dev/x\",\"hostPath\":\"/r/dev/x\"}]}}",
                  "0.5.0", "hostPath in the common edits: 0.5.0" },
                { "{\"devices\":[],\"containerEdits\":{\"mounts\":[{\"hostPath\":\"/a\",\"containerPath\":\"/a\",\"type\":\"bind\"}]}}",
                  "0.4.0", "a mount with a type: 0.4.0" },
                { "{\"devices\":[],\"containerEdits\":{\"mounts\":[{\"hostPath\":\"/a\",\"containerPath\":\"/a\"}],"
                  "\"deviceNodes\":[{\"path\":\"/dev/x\",\"hostPath\":\"\"}]}}",
                  "0.3.0", "no type, an empty hostPath: 0.3.0" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                json_t *j = parse(cases[i].spec);
                is_str(j ? gh_cdi_min_version(j) : NULL, cases[i].want, "%s", cases[i].desc);
                json_decref(j);
        }
}

#define SPEC(devs, common)                                                                                             \
        "{\"cdiVersion\":\"0.5.0\",\"kind\":\"nvidia.com/gpu\",\"devices\":[" devs "],\"containerEdits\":{" common "}}"
#define DEV(name, node) "{\"name\":\"" name "\",\"containerEdits\":{\"deviceNodes\":[{\"path\":\"" node "\"}]}}"
#define COMMON(lib, arg)                                                                                               \
        "\"env\":[\"NVIDIA_VISIBLE_DEVICES=void\"],\"mounts\":[{\"hostPath\":\"" lib "\",\"containerPath\":\"" lib     \
        "\"}],\"hooks\":[{\"hookName\":\"createContainer\",\"path\":\"/g\",\"args\":[\"gpu-cli\",\"" arg "\"]}]"

static void test_same(void)
{
        static const struct {
                const char *have, *why, *desc;
        } cases[] = {
                { SPEC(DEV("0", "/dev/nvidia0") "," DEV("all", "/dev/nvidia0"),
                       COMMON("/l/libcuda.so.1", "--mask-proc")),
                  NULL, "the same spec is current" },
                { SPEC(DEV("all", "/dev/nvidia0") "," DEV("0", "/dev/nvidia0"),
                       COMMON("/l/libcuda.so.1", "--mask-proc")),
                  "order", "the same devices in another order: stale, said so" },
                { SPEC(DEV("all", "/dev/nvidia0"), COMMON("/l/libcuda.so.1", "--mask-proc")), "device '0' is missing",
                  "a device the driver has now" },
                { SPEC(DEV("0", "/dev/nvidia0") "," DEV("1", "/dev/nvidia1") "," DEV("all", "/dev/nvidia0"),
                       COMMON("/l/libcuda.so.1", "--mask-proc")),
                  "device '1' is not in the driver any more", "a device that went away" },
                { SPEC(DEV("0", "/dev/nvidia0") "," DEV("all", "/dev/nvidia0"),
                       COMMON("/l/libcuda.so.2", "--mask-proc")),
                  "mount '/l/libcuda.so.1' is missing", "a library of another version" },
                { SPEC(DEV("0", "/dev/nvidia9") "," DEV("all", "/dev/nvidia0"),
                       COMMON("/l/libcuda.so.1", "--mask-proc")),
                  "device '0': device node '/dev/nvidia0' is missing", "a device's node changed" },
                { SPEC(DEV("0", "/dev/nvidia0") "," DEV("all", "/dev/nvidia0"), COMMON("/l/libcuda.so.1", "--link=x")),
                  "hook argument '--mask-proc' differs", "a hook argument" },
        };
        json_t *want = parse(SPEC(DEV("0", "/dev/nvidia0") "," DEV("all", "/dev/nvidia0"),
                                  COMMON("/l/libcuda.so.1", "--mask-proc")));

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                json_t *have = parse(cases[i].have);
                char *why = NULL;
                bool same = want && have && gh_cdi_same(want, have, &why);
                if (cases[i].why == NULL)
                        ok(same && why == NULL, "%s", cases[i].desc);
                else if (!ok(!same && why && strstr(why, cases[i].why), "%s: '%s'", cases[i].desc, cases[i].why))
                        printf("#   got: %s\n", why ? why : "(none)");
                free(why);
                json_decref(have);
        }
        json_decref(want);
}

/* What doctor and cdi list say about a spec's hook path (gh_cdi_hook_binary). */
static void test_hook_binary(void)
{
        char dir[] = "/tmp/gh-test-hookbin.XXXXXX", ours[128], link[128], other[128], plain[128], why[512];
        const char *list[2] = { ours, NULL };

        if (mkdtemp(dir) == NULL) {
                ok(0, "mkdtemp");
                return;
        }
        snprintf(ours, sizeof(ours), "%s/gpu-cli", dir);
        snprintf(link, sizeof(link), "%s/nvidia-cdi-hook", dir);
        snprintf(other, sizeof(other), "%s/nvidia-ctk", dir);
        snprintf(plain, sizeof(plain), "%s/plain", dir);
        FILE *f = fopen(ours, "w");
        fputs("#!/bin/sh\n", f);
        fclose(f);
        chmod(ours, 0755);
        if (symlink(ours, link) < 0)
                ok(0, "symlink");
        f = fopen(other, "w");
        fputs("#!/bin/sh\n", f);
        fclose(f);
        chmod(other, 0755);
        f = fopen(plain, "w");
        fclose(f);
        chmod(plain, 0644);
        is_int(gh_cdi_hook_binary("/usr/local/bin/no-such-hook", list, why, sizeof(why)), GH_HOOK_BINARY_MISSING,
               "a hook path that does not exist: missing");
        ok(strstr(why, "every container of this spec fails to start") != NULL, "... saying what that means: %s", why);
        is_int(gh_cdi_hook_binary("relative/hook", list, why, sizeof(why)), GH_HOOK_BINARY_MISSING, "a relative path");
        is_int(gh_cdi_hook_binary(plain, list, why, sizeof(why)), GH_HOOK_BINARY_NOT_EXEC, "a file that cannot run");
        is_int(gh_cdi_hook_binary(dir, list, why, sizeof(why)), GH_HOOK_BINARY_NOT_EXEC, "a directory");
        is_int(gh_cdi_hook_binary(ours, list, why, sizeof(why)), GH_HOOK_BINARY_OURS, "our program");
        is_int(gh_cdi_hook_binary(link, list, why, sizeof(why)), GH_HOOK_BINARY_OURS, "a link to our program");
        is_int(gh_cdi_hook_binary(other, list, why, sizeof(why)), GH_HOOK_BINARY_OTHER, "someone else's program");
        unlink(ours);
        unlink(link);
        unlink(other);
        unlink(plain);
        rmdir(dir);
}

static void test_app_profile(void)
{
        char buf[256];
        gh_cdi_app_profile_text(0x5, buf, sizeof(buf));
        is_str(buf,
               "{\"profiles\":[{\"name\":\"_container_\",\"settings\":[\"EGLVisibleDGPUDevices\",0x5]}],"
               "\"rules\":[{\"pattern\":[],\"profile\":\"_container_\"}]}",
               "the application profile for /dev/nvidia0 and /dev/nvidia2");
}

int main(void)
{
        test_hook_binary();
        test_app_profile();
        test_kind();
        test_mps_name();
        test_version();
        test_same();
        return tap_done();
}
