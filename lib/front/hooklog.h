/* gpu-hook's (and gpu-cli cdi-hook's) per-invocation record: one JSON line appended to a log file
 * (syslog when the file cannot be opened), so an administrator can see what the hook decided for
 * every container start and how long each phase took, without turning on debug output. */
#ifndef GH_HOOKLOG_H
#define GH_HOOKLOG_H

#include <jansson.h>
#include <stddef.h>
#include <time.h>

#define GH_HOOKLOG_MAX_PHASES 24

struct gh_hooklog {
        const char *program; /* "gpu-hook" unless set after gh_hooklog_start */
        const char *stage;
        char *trace_id; /* the container id */
        int container_pid;
        json_t *decision; /* owned; NULL until decided */
        struct timespec start, mark;
        struct {
                const char *name;
                long usec;
        } phases[GH_HOOKLOG_MAX_PHASES];
        size_t n_phases;
        const char *result; /* "configured", "skipped", "error" */
        int exit_code;
        char *error; /* owned */
};

void gh_hooklog_start(struct gh_hooklog *log, const char *stage);
/* Records the time since the previous phase (or the start) under NAME (a string that outlives log). */
void gh_hooklog_phase(struct gh_hooklog *log, const char *name);
/* Records USEC under NAME without moving the phase mark: a part of a phase measured elsewhere
 * (gpu-cli configure's own phases inside gpu-hook's "configure"). */
void gh_hooklog_add(struct gh_hooklog *log, const char *name, long usec);
void gh_hooklog_set_trace_id(struct gh_hooklog *log, const char *id);
void gh_hooklog_set_error(struct gh_hooklog *log, const char *msg);

/* The line, without its newline; caller frees.  NULL on out of memory. */
char *gh_hooklog_format(const struct gh_hooklog *log);

/* Appends the line to path (created 0640, never through a symlink); when that fails, sends it to
 * syslog.  path NULL: nothing is written. */
void gh_hooklog_write(const struct gh_hooklog *log, const char *path);

void gh_hooklog_free(struct gh_hooklog *log);

#endif
