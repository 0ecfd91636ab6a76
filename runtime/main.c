/* gpu-runtime: see runtime.h and docs/engines.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "config.h" /* the build's: GPUHOOK_DEFAULT_CONFIG */
#include "gpuhook.h"
#include "runtime.h"

/* The engine tests build a copy with a compiled-in default in the build directory (engines pass no
 * option for it); see tests/engine/meson.build. */
#ifdef GH_TEST_DEFAULT_CONFIG
#undef GPUHOOK_DEFAULT_CONFIG
#define GPUHOOK_DEFAULT_CONFIG GH_TEST_DEFAULT_CONFIG
#endif

int main(int argc, char **argv)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_config cfg = { 0 };
        struct gh_rt_args a;

        gh_rt_args_scan(argc, argv, &a);
        /* Only our own name answers these; anything else after options is the real runtime's. */
        if (argc == 2 && strcmp(argv[1], "--gpu-runtime-version") == 0) {
                printf("gpu-runtime %s\n", gpuhook_version());
                return 0;
        }
        if (gh_config_load(&cfg, GPUHOOK_DEFAULT_CONFIG, &err) < 0)
                goto fail;
        if (gh_rt_is_create(&a, argv) && gh_rt_prepare_bundle(a.bundle, &cfg, GPUHOOK_DEFAULT_CONFIG, &err) < 0)
                goto fail;
        gh_rt_exec(&cfg, argc, argv, &err);
fail:
        gh_rt_report(&a, err && err->msg ? err->msg : "failed");
        gh_config_free(&cfg);
        /* Like runc, 1 for every failure of our own (the real runtime's status is whatever it
         * exits with). */
        return GH_EXIT_FAILURE;
}
