#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "strutil.h"

static int log_fd = -1;
static bool log_json;
/* Without --debug only errors and warnings reach stderr; with it, everything goes to the file. */
static enum gh_log_level log_level = GH_LOG_WARN;
static char trace_id[128];
static const char *program = "gpuhook";

static const char *const level_names[] = { "error", "warning", "info", "debug" };

int gh_log_open(const char *path, bool json)
{
        int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
        if (fd < 0)
                return -1;
        gh_log_close();
        log_fd = fd;
        log_json = json;
        log_level = GH_LOG_DEBUG;
        return 0;
}

void gh_log_close(void)
{
        if (log_fd >= 0)
                close(log_fd);
        log_fd = -1;
}

void gh_log_set_level(enum gh_log_level level) { log_level = level; }
enum gh_log_level gh_log_get_level(void) { return log_level; }
void gh_log_set_program(const char *name) { program = name; }

void gh_log_set_trace_id(const char *id) { snprintf(trace_id, sizeof(trace_id), "%s", id ? id : ""); }

void gh_json_escape(char *buf, size_t size, const char *s)
{
        size_t n = 0;
        if (size == 0)
                return;
        for (; s && *s && n + 7 < size; s++) {
                unsigned char c = (unsigned char) *s;
                if (c == '"' || c == '\\') {
                        buf[n++] = '\\';
                        buf[n++] = (char) c;
                } else if (c < 0x20) {
                        n += (size_t) snprintf(buf + n, size - n, "\\u%04x", c);
                } else {
                        buf[n++] = (char) c;
                }
        }
        buf[n] = '\0';
}

void gh_log(enum gh_log_level level, const char *fmt, ...)
{
        char msg[2048], line[4608];
        struct timespec ts;
        struct tm tm;
        va_list ap;
        int n;

        if (level > log_level)
                return;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);

        if (log_fd < 0 || level <= GH_LOG_WARN) {
                /* The runtime shows the hook's stderr to the user: keep it to one human line. */
                if (level <= GH_LOG_WARN)
                        dprintf(STDERR_FILENO, "%s: %s%s\n", program, level == GH_LOG_WARN ? "warning: " : "", msg);
                else if (log_fd < 0)
                        dprintf(STDERR_FILENO, "%s: %s\n", program, msg);
        }
        if (log_fd < 0)
                return;

        clock_gettime(CLOCK_REALTIME, &ts);
        gh_utc_tm(ts.tv_sec, &tm);
        if (log_json) {
                char emsg[3000], eid[300];
                gh_json_escape(emsg, sizeof(emsg), msg);
                gh_json_escape(eid, sizeof(eid), trace_id);
                n = snprintf(
                        line, sizeof(line),
                        "{\"time\":\"%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ\",\"level\":\"%s\",\"program\":\"%s\",\"pid\":%d,\"trace_id\":\"%s\",\"msg\":\"%s\"}\n",
                        tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                        ts.tv_nsec / 1000, level_names[level], program, (int) getpid(), eid, emsg);
        } else {
                n = snprintf(line, sizeof(line), "%02d:%02d:%02d.%06ld %s[%d] %s%s%s: %s\n", tm.tm_hour, tm.tm_min,
                             tm.tm_sec, ts.tv_nsec / 1000, program, (int) getpid(), level_names[level],
                             trace_id[0] ? " " : "", trace_id, msg);
        }
        if (n > 0) {
                if ((size_t) n >= sizeof(line))
                        n = sizeof(line) - 1;
                ssize_t r = write(log_fd, line, (size_t) n);
                (void) r;
        }
}
