/* Runs a command with the new mount API and openat2 answering ENOSYS, as on an old kernel.
 * Usage: no-new-mount-api [--only-openat2] COMMAND [ARG...] */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifndef __NR_openat2
#define __NR_openat2 437
#endif

int main(int argc, char **argv)
{
        static const int mount_api[] = { 428 /* open_tree */, 429 /* move_mount */,
                                         430 /* fsopen */,    431 /* fsconfig */,
                                         432 /* fsmount */,   442 /* mount_setattr */,
                                         457 /* statmount */, 467 /* open_tree_attr */ };
        int first = 1, only_openat2 = 0;
        scmp_filter_ctx ctx;

        if (argc > 1 && strcmp(argv[1], "--only-openat2") == 0) {
                only_openat2 = 1;
                first = 2;
        }
        if (argc <= first) {
                fprintf(stderr, "usage: no-new-mount-api [--only-openat2] COMMAND [ARG...]\n");
                return 2;
        }
        ctx = seccomp_init(SCMP_ACT_ALLOW);
        if (ctx == NULL)
                return 1;
        if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), __NR_openat2, 0) < 0)
                return 1;
        for (size_t i = 0; !only_openat2 && i < sizeof(mount_api) / sizeof(mount_api[0]); i++)
                if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), mount_api[i], 0) < 0)
                        return 1;
        if (seccomp_load(ctx) < 0) {
                perror("seccomp_load");
                return 1;
        }
        execvp(argv[first], argv + first);
        fprintf(stderr, "no-new-mount-api: exec %s: %s\n", argv[first], strerror(errno));
        return 127;
}
