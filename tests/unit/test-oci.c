/* lib/front/oci.c: bounded reads, the JSON pre-checks, the state and config.json fields the hook uses. */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "oci.h"
#include "readfile.h"
#include "tap.h"

/* Reads `n` bytes of 'x' through a pipe with the given limit. */
static int read_pipe(size_t n, size_t max, size_t *got)
{
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_free_ char *buf = NULL;
        _cleanup_free_ char *data = malloc(n + 1);
        int fds[2], r;

        if (data == NULL || pipe(fds) < 0)
                return -2;
        memset(data, 'x', n);
        if (fork() == 0) {
                close(fds[0]);
                for (size_t off = 0; off < n;) {
                        ssize_t w = write(fds[1], data + off, n - off);
                        if (w <= 0)
                                _exit(1);
                        off += (size_t) w;
                }
                _exit(0);
        }
        close(fds[1]);
        r = gh_read_bounded(fds[0], max, &buf, got, "test input", &err);
        close(fds[0]);
        if (r == 0 && (buf[*got] != '\0' || (*got && buf[*got - 1] != 'x')))
                return -3;
        return r;
}

static void test_read_bounded(void)
{
        size_t got = 0;
        is_int(read_pipe(0, 16, &got), 0, "empty input reads");
        is_int(got, 0, "as 0 bytes");
        is_int(read_pipe(100000, 100000, &got), 0, "input of exactly the limit reads");
        is_int(got, 100000, "all of it");
        is_int(read_pipe(100001, 100000, &got), -1, "one byte over the limit is refused");
}

static void state_error(const char *json, const char *want, const char *desc)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_oci_state st;
        int r = gh_oci_state_parse(json, strlen(json), &st, &err);
        ok(r < 0 && err && strstr(err->msg, want), "%s", desc);
        if (r == 0)
                gh_oci_state_free(&st);
        else if (err && !strstr(err->msg, want))
                tap_diag("got: %s", err->msg);
}

static void test_state(void)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_oci_state st;
        const char *s =
                "{\"ociVersion\":\"1.0.2\",\"id\":\"c\",\"status\":\"creating\",\"pid\":12,\"bundle\":\"/b\",\"root\":\"/b/r\"}";

        is_int(gh_oci_state_parse(s, strlen(s), &st, &err), 0, "a runc/crun state parses");
        is_str(st.id, "c", "id");
        is_int(st.pid, 12, "pid");
        is_str(st.bundle, "/b", "bundle");
        is_str(st.root, "/b/r", "crun's root");
        gh_oci_state_free(&st);
        s = "{\"id\":\"c\",\"bundlePath\":\"/old\"}";
        is_int(gh_oci_state_parse(s, strlen(s), &st, &err), 0, "old Docker's state parses");
        is_str(st.bundle, "/old", "bundlePath is the bundle");
        is_int(st.pid, 0, "no pid is 0");
        gh_oci_state_free(&st);
        /* The buffer is not NUL-terminated: the parser must stay inside len. */
        is_int(gh_oci_state_parse("{\"bundle\":\"/b\"}garbage", 15, &st, &err), 0, "only len bytes are read");
        gh_oci_state_free(&st);

        state_error("{\"pid\":1}", "has no \"bundle\"", "missing bundle");
        state_error("{\"bundle\":\"/b\",\"pid\":-1}", "\"pid\" must be a process id", "negative pid");
        state_error("{\"bundle\":\"/b\",\"pid\":99999999999}", "\"pid\" must be a process id", "huge pid");
        state_error("{\"bundle\":7}", "\"bundle\" must be a string", "bundle of the wrong type");
        state_error("{\"bundle\":\"/b\",\"bundle\":\"/c\"}", "duplicate object key", "duplicate keys");
        state_error("{\"bundle\":\"/\\u0000b\"}", "not valid JSON", "escaped NUL in a string");
        state_error("\xef\xbb\xbf{\"bundle\":\"/b\"}", "not valid JSON", "a byte-order mark is not JSON");
        state_error("{\"bundle\":\"\xed\xa0\x80\"}", "not valid UTF-8", "an encoded surrogate");
        state_error("{\"bundle\":\"\xf4\x90\x80\x80\"}", "not valid UTF-8", "a code point above U+10FFFF");
        state_error("{\"bundle\":\"\xe2\x82\"}", "not valid UTF-8", "a truncated sequence");
        s = "{\"a\":\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\\\"\",\"bundle\":\"/b\"}";
        is_int(gh_oci_state_parse(s, strlen(s), &st, &err), 0,
               "brackets and escaped quotes inside strings are no nesting");
        gh_oci_state_free(&st);
}

static void test_spec(void)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_oci_spec sp;
        const char *s;

        s = "{\"ociVersion\":\"1.0.0-rc2\",\"process\":{\"env\":[\"A=1\",\"B==2\",\"A=3\",\"E=\"],"
            "\"capabilities\":[\"CAP_KILL\",\"CAP_SYS_ADMIN\"]},\"root\":{\"path\":\"./r//x/.\"},"
            "\"mounts\":[{\"destination\":\"/proc\",\"type\":\"proc\"},{\"destination\":\"/d\",\"source\":\"/dev/null\"}]}";
        is_int(gh_oci_spec_parse(s, strlen(s), "/bundle", &sp, &err), 0, "an rc-era spec parses");
        is_str(sp.rootfs, "/bundle/r/x", "relative root.path joined and cleaned");
        ok(sp.privileged, "flat capability list with CAP_SYS_ADMIN is privileged");
        is_str(gh_oci_getenv(sp.env, sp.n_env, "A"), "3", "the last duplicate wins");
        is_str(gh_oci_getenv(sp.env, sp.n_env, "B"), "=2", "the value keeps later '='");
        is_str(gh_oci_getenv(sp.env, sp.n_env, "E"), "", "an empty value is set");
        ok(gh_oci_getenv(sp.env, sp.n_env, "") == NULL, "the empty name is unset");
        ok(gh_oci_getenv(sp.env, sp.n_env, "C") == NULL, "an absent name is unset");
        is_int(sp.n_mounts, 2, "mounts read");
        ok(sp.mounts[0].source == NULL, "a mount without source");
        is_str(sp.mounts[1].source, "/dev/null", "a mount's source");
        gh_oci_spec_free(&sp);

        s = "{\"ociVersion\":\"1.0.2\",\"process\":{\"capabilities\":{\"effective\":[\"CAP_SYS_ADMIN\"],\"bounding\":[\"CAP_KILL\"]}},"
            "\"root\":{\"path\":\"/abs\"}}";
        is_int(gh_oci_spec_parse(s, strlen(s), "/bundle", &sp, &err), 0, "a 1.0 spec parses");
        ok(!sp.privileged, "CAP_SYS_ADMIN outside the bounding set is not privileged");
        is_str(sp.rootfs, "/abs", "absolute root.path kept");
        is_int(sp.n_env, 0, "no env is an empty env");
        is_int(sp.n_devices, 0, "no linux.devices is none");
        gh_oci_spec_free(&sp);

        s = "{\"ociVersion\":\"1.0.2\",\"process\":{},\"root\":{\"path\":\"/abs\"},\"linux\":{\"devices\":["
            "{\"path\":\"/dev/nvidia0\",\"type\":\"c\",\"major\":195,\"minor\":0,\"fileMode\":438},"
            "{\"path\":\"/dev/fifo\",\"type\":\"p\"}]}}";
        is_int(gh_oci_spec_parse(s, strlen(s), "/bundle", &sp, &err), 0, "a spec with linux.devices parses");
        is_int(sp.n_devices, 2, "both devices read");
        ok(sp.n_devices == 2 && sp.devices[0].type == 'c' && sp.devices[0].major == 195 && sp.devices[0].minor == 0,
           "a character device's type, major and minor");
        ok(sp.n_devices == 2 && sp.devices[1].type == 'p' && sp.devices[1].major == 0, "a FIFO without numbers");
        gh_oci_spec_free(&sp);

        static const char *const bad[] = {
                "\"linux\":[]",
                "\"linux\":{\"devices\":{}}",
                "\"linux\":{\"devices\":[\"/dev/x\"]}",
                "\"linux\":{\"devices\":[{\"path\":\"/dev/x\",\"type\":\"x\"}]}",
                "\"linux\":{\"devices\":[{\"type\":\"c\"}]}",
                "\"linux\":{\"devices\":[{\"path\":\"/dev/x\",\"type\":\"c\",\"major\":\"195\"}]}",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                char buf[512];
                gh_error_free(&err);
                snprintf(buf, sizeof(buf), "{\"ociVersion\":\"1.0.2\",\"process\":{},\"root\":{\"path\":\"/a\"},%s}",
                         bad[i]);
                ok(gh_oci_spec_parse(buf, strlen(buf), "/bundle", &sp, &err) < 0 && err && strstr(err->msg, "linux"),
                   "malformed linux.devices is an error naming it (%s)", bad[i]);
        }
}

/* cdi-hook's brief reading: the same root and devices as the full one, the same errors about them,
 * nothing checked in what it does not read except that it is JSON. */
static void test_spec_brief(void)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_oci_spec full, brief;
        const char *s =
                "{\"ociVersion\":\"1.0.2\",\"process\":{\"env\":[\"A=1\",\"B=\\u00e9\"]},\"root\":{\"path\":\"rootfs\","
                "\"readonly\":true},\"mounts\":[{\"destination\":\"/x\",\"source\":\"/y\",\"options\":[\"ro\"]}],"
                "\"linux\":{\"resources\":{\"devices\":[{\"allow\":false,\"access\":\"rwm\"}]},\"devices\":["
                "{\"path\":\"/dev/nvidia0\",\"type\":\"c\",\"major\":195,\"minor\":0,\"fileMode\":438},"
                "{\"path\":\"/dev/nvidia-uvm\",\"type\":\"c\",\"major\":511,\"minor\":1},{\"path\":\"/dev/fifo\",\"type\":\"p\"}]}}";

        ok(gh_oci_spec_parse(s, strlen(s), "/bundle", &full, &err) == 0 &&
                   gh_oci_spec_parse_brief(s, strlen(s), "/bundle", &brief, &err) == 0,
           "brief: a spec both readings take");
        is_str(brief.rootfs, full.rootfs, "brief: the same root (relative, joined to the bundle)");
        is_str(brief.oci_version, full.oci_version, "brief: the same ociVersion");
        is_int(brief.n_devices, full.n_devices, "brief: the same number of devices");
        for (size_t i = 0; i < brief.n_devices && i < full.n_devices; i++)
                ok(strcmp(brief.devices[i].path, full.devices[i].path) == 0 &&
                           brief.devices[i].type == full.devices[i].type &&
                           brief.devices[i].major == full.devices[i].major &&
                           brief.devices[i].minor == full.devices[i].minor,
                   "brief: device %zu the same (%s)", i, brief.devices[i].path);
        is_int(brief.n_env, 0, "brief: process.env not read");
        gh_oci_spec_free(&full);
        gh_oci_spec_free(&brief);

        static const struct {
                const char *doc, *want;
        } cases[] = {
                { "{\"ociVersion\":\"1\",\"root\":{\"path\":\"/a\"},\"linux\":{\"devices\":{}}}", "linux.devices" },
                { "{\"ociVersion\":\"1\",\"root\":{\"path\":\"/a\"},\"linux\":{\"devices\":[{\"type\":\"c\"}]}}",
                  "linux.devices" },
                { "{\"ociVersion\":\"1\",\"root\":{\"path\":\"/a\"},\"linux\":{\"devices\":[{\"path\":\"/d\",\"type\":"
                  "\"c\",\"major\":1.5}]}}",
                  "must be integers" },
                { "{\"ociVersion\":\"1\",\"root\":{\"path\":\"/a\"},\"linux\":{\"devices\":[{\"path\":\"/d\",\"type\":"
                  "\"c\",\"major\":99999999999999999999}]}}",
                  "must be integers" },
                { "{\"ociVersion\":\"1\",\"root\":{}}", "root.path" },
                { "{\"ociVersion\":\"1\"}", "\"root\" object" },
                { "{\"root\":{\"path\":\"/a\"}}", "ociVersion" },
                { "{\"ociVersion\":\"1\",\"root\":{\"path\":\"/a\"},\"root\":{\"path\":\"/b\"}}", "duplicate" },
                { "{\"ociVersion\":\"1\",\"root\":{\"path\":\"/a\"},\"process\":{\"env\":[\"A\" 1]}}",
                  "not valid JSON" },
                { "{\"ociVersion\":\"1\",\"root\":{\"path\":\"/a\"},\"process\":{\"env\":[\"\\u0000\"]}}", "NUL" },
                { "[1]", "not a JSON object" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                gh_error_free(&err);
                ok(gh_oci_spec_parse_brief(cases[i].doc, strlen(cases[i].doc), "/bundle", &brief, &err) < 0 && err &&
                           strstr(err->msg, cases[i].want),
                   "brief: refused, naming %s", cases[i].want);
                if (err)
                        tap_diag("%s", err->msg);
        }
        /* What it does not read may be anything JSON allows: the full reading refuses this one. */
        s = "{\"ociVersion\":\"1\",\"root\":{\"path\":\"/a\"},\"process\":{\"env\":[\"NO-EQUALS\"]}}";
        gh_error_free(&err);
        ok(gh_oci_spec_parse(s, strlen(s), "/bundle", &full, &err) < 0,
           "brief: the full reading refuses env without =");
        gh_error_free(&err);
        ok(gh_oci_spec_parse_brief(s, strlen(s), "/bundle", &brief, &err) == 0 && strcmp(brief.rootfs, "/a") == 0,
           "brief: the brief one does not look at env");
        gh_oci_spec_free(&brief);

        /* check-requirements' reading: the same, with process.env. */
        s = "{\"ociVersion\":\"1\",\"root\":{\"path\":\"/a\"},\"process\":{\"env\":[\"A=1\",\"NVIDIA_REQUIRE_CUDA=cuda>=12\"],"
            "\"args\":[\"x\"]},\"linux\":{\"devices\":[{\"path\":\"/dev/nvidia1\",\"type\":\"c\",\"major\":195,\"minor\":1}]}}";
        gh_error_free(&err);
        ok(gh_oci_spec_parse_brief_env(s, strlen(s), "/bundle", &brief, &err) == 0 && brief.n_env == 2 &&
                   strcmp(brief.env[1], "NVIDIA_REQUIRE_CUDA=cuda>=12") == 0 && brief.n_devices == 1 &&
                   brief.devices[0].minor == 1,
           "brief with env: process.env and linux.devices read");
        gh_oci_spec_free(&brief);
        s = "{\"ociVersion\":\"1\",\"root\":{\"path\":\"/a\"}}";
        ok(gh_oci_spec_parse_brief_env(s, strlen(s), "/bundle", &brief, &err) == 0 && brief.n_env == 0,
           "brief with env: no process object, no variables (not an error)");
        gh_oci_spec_free(&brief);
        s = "{\"ociVersion\":\"1\",\"root\":{\"path\":\"/a\"},\"process\":{\"env\":[\"NO-EQUALS\"]}}";
        ok(gh_oci_spec_parse_brief_env(s, strlen(s), "/bundle", &brief, &err) < 0 && err && strstr(err->msg, "no '='"),
           "brief with env: an entry without = is refused as the full reading refuses it");
}

int main(void)
{
        test_read_bounded();
        test_state();
        test_spec();
        test_spec_brief();
        return tap_done();
}
