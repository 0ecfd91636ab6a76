/* lib/util/proc.c: the one pid parser and the start time that tells a reused pid. */
#include <sys/types.h>
#include <unistd.h>

#include "proc.h"
#include "tap.h"

int main(void)
{
        pid_t pid = 42;

        ok(gh_parse_pid("1", &pid) == 0 && pid == 1, "1");
        ok(gh_parse_pid("4194304", &pid) == 0 && pid == GH_PID_MAX, "the kernel's largest pid");
        pid = 42;
        static const char *const bad[] = { "",   "0",       "-1", "+1",   " 1",  "1 ",
                                           "01", "4194305", "1x", "0x10", "1.0", "99999999999999999999",
                                           NULL };
        for (int i = 0; bad[i]; i++)
                ok(gh_parse_pid(bad[i], &pid) < 0 && pid == 42, "'%s' is not a pid (and *pid is left alone)", bad[i]);
        ok(gh_parse_pid(NULL, &pid) < 0, "NULL is not a pid");
        ok(gh_proc_starttime(getpid()) > 0, "our own start time is known");
        ok(gh_proc_starttime(GH_PID_MAX) == 0 || getpid() == GH_PID_MAX, "a pid nobody has: 0");
        return tap_done();
}
