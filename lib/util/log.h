/* Logging: a level-filtered stream to stderr and/or a --debug=FILE, as text or JSON lines.
 * JSON lines carry a trace id (the container id when there is one) so one start can be followed
 * across gpu-hook and gpu-cli. */
#ifndef GH_LOG_H
#define GH_LOG_H

#include <stdbool.h>

enum gh_log_level { GH_LOG_ERROR = 0, GH_LOG_WARN, GH_LOG_INFO, GH_LOG_DEBUG };

/* Opens FILE for appending debug output (O_APPEND|O_CLOEXEC|O_NOFOLLOW, 0600). json selects the
 * JSON-lines format.  Returns -1 with errno set when the file cannot be opened. */
int gh_log_open(const char *path, bool json);
void gh_log_set_level(enum gh_log_level level);
enum gh_log_level gh_log_get_level(void);
void gh_log_set_trace_id(const char *trace_id);
void gh_log_set_program(const char *name);
void gh_log_close(void);

void gh_log(enum gh_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define gh_debug(...)                                                                                                  \
        do {                                                                                                           \
                if (gh_log_get_level() >= GH_LOG_DEBUG)                                                                \
                        gh_log(GH_LOG_DEBUG, __VA_ARGS__);                                                             \
        } while (0)
#define gh_info(...) gh_log(GH_LOG_INFO, __VA_ARGS__)
#define gh_warn(...) gh_log(GH_LOG_WARN, __VA_ARGS__)

/* Escapes s as the body of a JSON string into buf (always NUL-terminated, truncated if needed). */
void gh_json_escape(char *buf, size_t size, const char *s);

#endif
