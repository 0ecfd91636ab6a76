/* Small readers of /proc/PID files (libc only). */
#ifndef GH_PROC_H
#define GH_PROC_H

#include <sys/types.h>

/* The kernel's largest pid (PID_MAX_LIMIT on 64-bit). */
#define GH_PID_MAX (1 << 22)

/* A process id as written in /proc, on a command line or in a state file: decimal digits only (no
 * sign, no blank), 1..GH_PID_MAX.  Returns 0 and sets *pid, or -1 (and leaves *pid alone). */
int gh_parse_pid(const char *s, pid_t *pid);

/* Field 22 of /proc/PID/stat (start time in clock ticks since boot): with the pid it names one
 * process, whatever reuses the pid later.  0 when the process is gone or is a zombie. */
unsigned long long gh_proc_starttime(pid_t pid);

#endif
