/* A small TAP producer for C unit tests.  ok() records one test point; tap_done() prints the plan
 * and returns the exit status.  tap_skip_all() ends the program as a skipped test (exit 77). */
#ifndef GH_TAP_H
#define GH_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int tap_count, tap_failures;

__attribute__((format(printf, 4, 5), unused)) static int tap_ok(int cond, const char *file, int line, const char *fmt,
                                                                ...)
{
        va_list ap;
        printf("%sok %d - ", cond ? "" : "not ", ++tap_count);
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        printf("\n");
        if (!cond) {
                tap_failures++;
                printf("#   failed at %s:%d\n", file, line);
        }
        fflush(stdout);
        return cond;
}

#define ok(cond, ...) tap_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define is_int(got, want, ...)                                                                                         \
        do {                                                                                                           \
                long long _g = (long long) (got), _w = (long long) (want);                                             \
                if (!ok(_g == _w, __VA_ARGS__))                                                                        \
                        printf("#   got %lld, want %lld\n", _g, _w);                                                   \
        } while (0)
#define is_str(got, want, ...)                                                                                         \
        do {                                                                                                           \
                const char *_g = (got), *_w = (want);                                                                  \
                if (!ok(_g && _w && strcmp(_g, _w) == 0, __VA_ARGS__))                                                 \
                        printf("#   got '%s', want '%s'\n", _g ? _g : "(null)", _w ? _w : "(null)");                   \
        } while (0)

__attribute__((unused, format(printf, 1, 2))) static void tap_diag(const char *fmt, ...)
{
        va_list ap;
        printf("# ");
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        printf("\n");
}

__attribute__((unused, noreturn)) static void tap_skip_all(const char *why)
{
        printf("1..0 # SKIP %s\n", why);
        /* meson 1.0 reports a TAP test exiting 77 as an error: under meson (GH_BUILD_DIR set) the
         * plan line alone says "skipped"; run by hand, 77 says it too. */
        exit(getenv("GH_BUILD_DIR") ? 0 : 77);
}

__attribute__((unused)) static int tap_done(void)
{
        printf("1..%d\n", tap_count);
        return tap_failures ? 1 : 0;
}

#endif
