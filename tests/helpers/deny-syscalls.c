/* Runs a command with some system calls failing with a chosen errno (seccomp), to prove that the
 * product turns a refused mount or a missing syscall into a clear error or a working fallback.
 * Usage: deny-syscalls ERRNO SYSCALL[,SYSCALL...] COMMAND [ARG...]
 * ERRNO is a name (EPERM, ENOSYS, ENOSPC, EACCES) or a number; syscalls are names (mount, move_mount). */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int parse_errno(const char *s)
{
        static const struct {
                const char *name;
                int value;
        } names[] = { { "EPERM", EPERM },   { "ENOSYS", ENOSYS }, { "ENOSPC", ENOSPC },
                      { "EACCES", EACCES }, { "EINVAL", EINVAL }, { "ENOMEM", ENOMEM } };
        char *end;
        long v;

        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                if (strcmp(s, names[i].name) == 0)
                        return names[i].value;
        v = strtol(s, &end, 10);
        return (*s && !*end && v > 0 && v < 4096) ? (int) v : -1;
}

int main(int argc, char **argv)
{
        scmp_filter_ctx ctx;
        char *list, *name, *save = NULL;
        int err;

        if (argc < 4) {
                fprintf(stderr, "usage: deny-syscalls ERRNO SYSCALL[,SYSCALL...] COMMAND [ARG...]\n");
                return 2;
        }
        err = parse_errno(argv[1]);
        if (err < 0) {
                fprintf(stderr, "deny-syscalls: unknown errno '%s'\n", argv[1]);
                return 2;
        }
        ctx = seccomp_init(SCMP_ACT_ALLOW);
        if (ctx == NULL)
                return 1;
        list = strdup(argv[2]);
        for (name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
                int nr = seccomp_syscall_resolve_name(name);
                if (nr == __NR_SCMP_ERROR) {
                        fprintf(stderr, "deny-syscalls: unknown system call '%s'\n", name);
                        return 2;
                }
                if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(err), nr, 0) < 0) {
                        fprintf(stderr, "deny-syscalls: cannot filter '%s'\n", name);
                        return 1;
                }
        }
        free(list);
        if (seccomp_load(ctx) < 0) {
                perror("deny-syscalls: seccomp_load");
                return 1;
        }
        seccomp_release(ctx);
        execvp(argv[3], argv + 3);
        fprintf(stderr, "deny-syscalls: exec %s: %s\n", argv[3], strerror(errno));
        return 127;
}
