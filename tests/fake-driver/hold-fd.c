/* hold-fd [--user=UID] PATH...: opens each PATH with O_PATH (a device node of the fake driver cannot
 * really be opened), optionally becomes UID (no capability, still dumpable so that a process of
 * the same uid may look at its descriptors), prints "ready PID" (its PID as it sees it) and waits
 * for a signal.  To the fake NVML a process holding /dev/nvidiaN this way uses GPU N. */
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
        long uid = -1;
        int i = 1;

        if (argc > 1 && strncmp(argv[1], "--user=", 7) == 0) {
                uid = strtol(argv[1] + 7, NULL, 10);
                i++;
        }
        if (i >= argc) {
                fprintf(stderr, "usage: hold-fd [--user=UID] PATH...\n");
                return 2;
        }
        for (; i < argc; i++) {
                if (open(argv[i], O_PATH | O_CLOEXEC) < 0) {
                        fprintf(stderr, "hold-fd: %s: %m\n", argv[i]);
                        return 1;
                }
        }
        if (uid >= 0 &&
            (setgroups(0, NULL) < 0 || setresgid((gid_t) uid, (gid_t) uid, (gid_t) uid) < 0 ||
             setresuid((uid_t) uid, (uid_t) uid, (uid_t) uid) < 0 || prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)) {
                fprintf(stderr, "hold-fd: becoming uid %ld: %m\n", uid);
                return 1;
        }
        printf("ready %d\n", (int) getpid());
        fflush(stdout);
        for (;;)
                pause();
}
