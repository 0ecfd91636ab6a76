/* Small readers of /proc/PID files (libc only). */
#ifndef GH_PROC_H
#define GH_PROC_H

#include <sys/types.h>

/* Field 22 of /proc/PID/stat (start time in clock ticks since boot): with the pid it names one
 * process, whatever reuses the pid later.  0 when the process is gone or is a zombie. */
unsigned long long gh_proc_starttime(pid_t pid);

#endif
