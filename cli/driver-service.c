/* gpu-cli driver-service: the driver service child's part (lib/core/service.c), run by a static
 * program that cannot load the driver's libraries itself (gpu-hook): it forks, and the child execs
 * this with the driver root and its socket as inherited descriptors.  Not a command for people; it
 * is not in --help.  Everything it does from here is what the child of a dynamic program does:
 * chroot into the driver root, drop to the unprivileged ids, drop every capability, no_new_privs,
 * then dlopen NVML or libcuda and answer on the socket. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "service.h"

static bool number(const char *arg, const char *name, unsigned long max, unsigned long *out)
{
        size_t n = strlen(name);
        char *end;

        if (strncmp(arg, name, n) != 0 || arg[n] != '=' || arg[n + 1] < '0' || arg[n + 1] > '9')
                return false;
        *out = strtoul(arg + n + 1, &end, 10);
        return *end == '\0' && *out <= max;
}

int cmd_driver_service(int argc, char **argv, const struct cli_globals *g)
{
        unsigned long root = 0, sock = 0, uid = 0, gid = 0, parent = 0, seen = 0;
        const char *cuda = NULL;
        struct stat st;

        (void) g;
        for (int i = 1; i < argc; i++) {
                if (number(argv[i], "--root-fd", 1023, &root))
                        seen |= 1;
                else if (number(argv[i], "--socket-fd", 1023, &sock))
                        seen |= 2;
                else if (number(argv[i], "--uid", 0xfffffffeUL, &uid))
                        seen |= 4;
                else if (number(argv[i], "--gid", 0xfffffffeUL, &gid))
                        seen |= 8;
                else if (number(argv[i], "--parent", 0x7fffffffUL, &parent))
                        seen |= 16;
                else if (strncmp(argv[i], "--cuda=", 7) == 0)
                        cuda = argv[i] + 7;
                else
                        break;
        }
        if (seen != 31 || fstat((int) root, &st) < 0 || !S_ISDIR(st.st_mode) || fstat((int) sock, &st) < 0 ||
            !S_ISSOCK(st.st_mode)) {
                fprintf(stderr,
                        "gpu-cli: driver-service is run by gpu-hook for its driver service child, not by hand\n");
                return GH_EXIT_USAGE;
        }
        gh_service_child((int) root, (int) sock, (uid_t) uid, (gid_t) gid, (pid_t) parent, cuda != NULL,
                         cuda != NULL && cuda[0] != '\0' ? cuda : NULL);
}
