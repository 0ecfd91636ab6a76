#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "cleanup.h"
#include "hooklog.h"
#include "steps.h"
#include "oci.h"
#include "strutil.h"

static long usec_between(const struct timespec *a, const struct timespec *b)
{
        return (long) ((b->tv_sec - a->tv_sec) * 1000000L + (b->tv_nsec - a->tv_nsec) / 1000);
}

void gh_hooklog_start(struct gh_hooklog *log, const char *stage)
{
        memset(log, 0, sizeof(*log));
        log->program = "gpu-hook";
        log->stage = stage;
        log->result = "error";
        clock_gettime(CLOCK_MONOTONIC, &log->start);
        log->mark = log->start;
}

void gh_hooklog_add(struct gh_hooklog *log, const char *name, long usec)
{
        if (log->n_phases < GH_HOOKLOG_MAX_PHASES) {
                log->phases[log->n_phases].name = name;
                log->phases[log->n_phases].usec = usec;
                log->n_phases++;
        }
}

void gh_hooklog_phase(struct gh_hooklog *log, const char *name)
{
        struct timespec now;

        GH_STEP(name); /* name outlives the process's steps: every caller passes a literal */
        clock_gettime(CLOCK_MONOTONIC, &now);
        gh_hooklog_add(log, name, usec_between(&log->mark, &now));
        log->mark = now;
}

void gh_hooklog_set_trace_id(struct gh_hooklog *log, const char *id)
{
        free(log->trace_id);
        log->trace_id = id ? strdup(id) : NULL;
}

void gh_hooklog_set_error(struct gh_hooklog *log, const char *msg)
{
        free(log->error);
        log->error = msg ? strdup(msg) : NULL;
}

char *gh_hooklog_format(const struct gh_hooklog *log)
{
        _cleanup_json_ json_t *j = json_object(), *timings = json_object();
        struct timespec now, wall;
        struct tm tm;
        char when[64];

        if (j == NULL || timings == NULL)
                return NULL;
        clock_gettime(CLOCK_MONOTONIC, &now);
        clock_gettime(CLOCK_REALTIME, &wall);
        gh_utc_tm(wall.tv_sec, &tm);
        snprintf(when, sizeof(when), "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
                 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, wall.tv_nsec / 1000);
        for (size_t i = 0; i < log->n_phases; i++)
                json_object_set_new(timings, log->phases[i].name, json_integer(log->phases[i].usec));
        json_object_set_new(timings, "total", json_integer(usec_between(&log->start, &now)));

        json_object_set_new(j, "time", json_string(when));
        json_object_set_new(j, "program", json_string(log->program ? log->program : "gpu-hook"));
        json_object_set_new(j, "pid", json_integer(getpid()));
        json_object_set_new(j, "trace_id", log->trace_id ? json_string(log->trace_id) : json_null());
        json_object_set_new(j, "stage", json_string(log->stage ? log->stage : ""));
        json_object_set_new(j, "container_pid", json_integer(log->container_pid));
        json_object_set(j, "decision", log->decision ? log->decision : json_null());
        json_object_set(j, "timings_us", timings);
        json_object_set_new(j, "result", json_string(log->result));
        json_object_set_new(j, "exit_code", json_integer(log->exit_code));
        json_object_set_new(j, "error", log->error ? json_string(log->error) : json_null());
        return json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
}

static int append_line(const char *path, const char *line)
{
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        size_t len;

        fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK, 0640);
        if (fd < 0)
                return -1;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                errno = EINVAL;
                return -1;
        }
        if (asprintf(&buf, "%s\n", line) < 0)
                return -1;
        len = strlen(buf);
        /* One write() so that lines of concurrent hooks do not interleave (O_APPEND). */
        return write(fd, buf, len) == (ssize_t) len ? 0 : -1;
}

void gh_hooklog_write(const struct gh_hooklog *log, const char *path)
{
        _cleanup_free_ char *line = NULL;

        if (path == NULL)
                return;
        line = gh_hooklog_format(log);
        if (line == NULL)
                return;
        if (append_line(path, line) == 0)
                return;
        openlog(log->program ? log->program : "gpu-hook", LOG_PID | LOG_NDELAY, LOG_DAEMON);
        syslog(strcmp(log->result, "error") == 0 ? LOG_ERR : LOG_INFO, "%s", line);
        closelog();
}

void gh_hooklog_free(struct gh_hooklog *log)
{
        json_decref(log->decision);
        free(log->trace_id);
        free(log->error);
        memset(log, 0, sizeof(*log));
}
