/* lib/core/request.c: one request, written as gpu-cli arguments and read back; one set of limits. */
#include <string.h>

#include "capability.h"
#include "cleanup.h"
#include "request.h"
#include "tests/tap.h"

static int parse(struct gh_request *req, const char *const *args, gh_error_t *err)
{
        char *argv[64];
        int argc = 0;
        const struct gh_request_cli cli = { .shortopts = "d:R:" };

        argv[argc++] = (char *) "configure";
        for (; *args; args++)
                argv[argc++] = (char *) *args;
        argv[argc] = NULL;
        return gh_request_parse_args(req, argc, argv, &cli, err);
}

static char *joined(char **v)
{
        size_t len = 1;
        char *s;

        for (char **p = v; p && *p; p++)
                len += strlen(*p) + 1;
        s = calloc(1, len);
        for (char **p = v; p && *p; p++) {
                strcat(s, *p);
                strcat(s, " ");
        }
        return s;
}

/* to_argv(parse(args)) == to_argv(parse(to_argv(parse(args)))) and the fields survive. */
static void round_trip(const char *what, const char *const *args, const char *want)
{
        _cleanup_request_ struct gh_request a = GH_REQUEST_INIT, b = GH_REQUEST_INIT;
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_strv_ char **va = NULL, **vb = NULL;
        _cleanup_free_ char *sa = NULL, *sb = NULL;
        size_t na = 0, nb = 0;
        int r = parse(&a, args, &err);

        if (!ok(r > 0, "%s: parses", what)) {
                printf("#   %s\n", err ? err->msg : "?");
                return;
        }
        ok(gh_request_to_argv(&a, &va, &na, &err) == 0, "%s: written", what);
        sa = joined(va);
        is_str(sa, want, "%s: the arguments", what);
        /* parse what was written */
        {
                const char *args2[64];
                size_t i;
                for (i = 0; i < na && i < 63; i++)
                        args2[i] = va[i];
                args2[i] = NULL;
                ok(parse(&b, args2, &err) > 0, "%s: read back", what);
        }
        ok(gh_request_to_argv(&b, &vb, &nb, &err) == 0, "%s: written again", what);
        sb = joined(vb);
        is_str(sb, sa, "%s: the same request after a round trip", what);
        is_int(b.caps, a.caps, "%s: capabilities", what);
        is_int(b.nimex, a.nimex, "%s: IMEX channels", what);
        is_int(b.uid, a.uid, "%s: uid", what);
        is_int(b.gid, a.gid, "%s: gid", what);
}

static void refused(const char *what, const char *const *args, const char *msg)
{
        _cleanup_request_ struct gh_request req = GH_REQUEST_INIT;
        _cleanup_error_ gh_error_t err = NULL;

        if (ok(parse(&req, args, &err) < 0, "%s: refused", what))
                ok(err && strstr(err->msg, msg), "%s: the message says '%s' (%s)", what, msg, err ? err->msg : "");
}

int main(void)
{
        round_trip("nothing", (const char *[]) { NULL }, "");
        round_trip("everything",
                   (const char *[]) { "--device=0,GPU-12345678-1234-1234-1234-123456789abc,00:06.0,1:2,MIG-abc",
                                      "-R",
                                      "cuda>=12.0",
                                      "--require=brand=tesla,driver>=500",
                                      "--compute",
                                      "--video",
                                      "--compat32",
                                      "--mig-config=all",
                                      "--mig-monitor=all",
                                      "--imex-channel=3,1",
                                      "--imex-channel=3",
                                      "--user=1000",
                                      "--ldconfig=@/sbin/ldconfig",
                                      "--no-cgroups",
                                      "--no-devbind",
                                      "--no-persistenced",
                                      "--no-fabricmanager",
                                      "--no-gsp-firmware",
                                      "--mps-pipe-dir=/run/mps",
                                      NULL },
                   "--device=0,GPU-12345678-1234-1234-1234-123456789abc,0000:00:06.0,1:2,MIG-abc "
                   "--require=cuda>=12.0 --require=brand=tesla,driver>=500 --compute --video --compat32 "
                   "--mig-config=all --mig-monitor=all --imex-channel=3 --imex-channel=1 --user=1000:1000 "
                   "--ldconfig=@/sbin/ldconfig --mps-pipe-dir=/run/mps --no-cgroups --no-devbind "
                   "--no-persistenced --no-fabricmanager --no-gsp-firmware ");
        round_trip("all", (const char *[]) { "-d", "all", "--utility", NULL }, "--device=all --utility ");
        round_trip("none alone is no device", (const char *[]) { "--device=none", "--utility", NULL }, "--utility ");

        {
                _cleanup_request_ struct gh_request req = GH_REQUEST_INIT;
                _cleanup_error_ gh_error_t err = NULL;
                ok(parse(&req, (const char *[]) { "--video", "--display", NULL }, &err) > 0, "implications: parses");
                is_int(gh_request_caps(&req), GH_CAP_VIDEO | GH_CAP_COMPUTE | GH_CAP_DISPLAY | GH_CAP_GRAPHICS,
                       "implications: video -> compute, display -> graphics");
                ok(!gh_request_wants_gpus(&req), "no --device: no GPU to load");
        }

        /* The service child's identity: numbers only, validated when parsed. */
        refused("--user=65534:x", (const char *[]) { "--user=65534:x", NULL }, "65534:x");
        refused("--user=nobody", (const char *[]) { "--user=nobody", NULL }, "nobody");
        refused("--user=1:", (const char *[]) { "--user=1:", NULL }, "1:");
        refused("--ldconfig in the image", (const char *[]) { "--ldconfig=/sbin/ldconfig", NULL }, "@/path");
        refused("--mig-config=0", (const char *[]) { "--mig-config=0", NULL }, "only 'all'");
        refused("bad device", (const char *[]) { "--device=gpu0", NULL }, "gpu0");
        refused("bad requirement", (const char *[]) { "--require=cuda>>1", NULL }, "cuda>>1");
        refused("IMEX channel 2^20", (const char *[]) { "--imex-channel=1048576", NULL }, "1048576");
        refused("unknown option", (const char *[]) { "--bogus", NULL }, "--bogus");

        /* Limits: exactly the maximum passes, one more is refused, in every front end (the hook's
         * env decision uses the same constants: tests/unit/test-hook-dryrun.sh). */
        {
                _cleanup_request_ struct gh_request req = GH_REQUEST_INIT;
                _cleanup_error_ gh_error_t err = NULL;
                _cleanup_strv_ char **v = NULL;
                size_t n = 0;
                int r = 0;
                for (unsigned i = 0; i < GH_REQUEST_MAX_IMEX_CHANNELS && r == 0; i++)
                        r = gh_request_add_imex_channel(&req, i, &err);
                ok(r == 0, "%d IMEX channels pass", GH_REQUEST_MAX_IMEX_CHANNELS);
                ok(gh_request_add_imex_channel(&req, 5, &err) == 0, "a duplicate channel is not one more");
                ok(gh_request_add_imex_channel(&req, GH_REQUEST_MAX_IMEX_CHANNELS, &err) < 0,
                   "channel number %d is refused", GH_REQUEST_MAX_IMEX_CHANNELS + 1);
                ok(gh_request_to_argv(&req, &v, &n, &err) == 0, "the largest request fits one command line");
                is_int(n, GH_REQUEST_MAX_IMEX_CHANNELS, "one argument per channel");
        }
        {
                _cleanup_request_ struct gh_request req = GH_REQUEST_INIT;
                _cleanup_error_ gh_error_t err = NULL;
                int r = 0;
                for (unsigned i = 0; i < GH_REQUEST_MAX_REQUIREMENTS && r == 0; i++)
                        r = gh_request_add_requirement(&req, "cuda>=1.0", &err);
                ok(r == 0, "%d requirements pass", GH_REQUEST_MAX_REQUIREMENTS);
                ok(gh_request_add_requirement(&req, "cuda>=1.0", &err) < 0, "one more is refused");
        }
        return tap_done();
}
