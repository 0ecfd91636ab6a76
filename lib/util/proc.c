/* Small readers of /proc/PID files shared by the operations (MPS groups, container attribution). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "proc.h"

int gh_parse_pid(const char *s, pid_t *pid)
{
        long v = 0;

        if (s == NULL || *s < '1' || *s > '9')
                return -1;
        for (; *s; s++) {
                if (*s < '0' || *s > '9' || (v = v * 10 + (*s - '0')) > GH_PID_MAX)
                        return -1;
        }
        *pid = (pid_t) v;
        return 0;
}

/* Field 22 of /proc/PID/stat (start time in clock ticks); 0 when the process is gone. */
unsigned long long gh_proc_starttime(pid_t pid)
{
        char path[64], buf[1024], *p;
        unsigned long long v = 0;
        ssize_t n;
        _cleanup_close_ int fd = -1;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || (n = read(fd, buf, sizeof(buf) - 1)) <= 0)
                return 0;
        buf[n] = '\0';
        p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
        if (p == NULL || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
                return 0; /* a zombie has exited: nobody reaped it yet */
        /* p is at the ')' ending field 2; each space found starts the next field */
        for (int field = 2; field < 22 && p; field++)
                p = strchr(p + 1, ' ');
        if (p)
                v = strtoull(p + 1, NULL, 10);
        return v;
}
