/* lib/util/strutil.c: the string helpers every layer shares. */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "strutil.h"
#include "tap.h"

int main(void)
{
        char a[] = " \t compute,utility \r\n\v\f", b[] = "   ", c[] = "x";

        ok(gh_is_blank(' ') && gh_is_blank('\t') && gh_is_blank('\n') && gh_is_blank('\r') && gh_is_blank('\v') &&
                   gh_is_blank('\f'),
           "blanks: space, \\t, \\n, \\r, \\v, \\f");
        ok(!gh_is_blank('a') && !gh_is_blank('\0') && !gh_is_blank(',') && !gh_is_blank((char) 0xa0),
           "not blank: letters, NUL, comma, a non-ASCII byte");
        is_str(gh_trim(a), "compute,utility", "trim: both ends, every blank");
        is_str(gh_trim(b), "", "trim: blanks only");
        is_str(gh_trim(c), "x", "trim: nothing to trim");
        is_str(gh_base_name("/usr/lib/libcuda.so.1"), "libcuda.so.1", "base name of a path");
        is_str(gh_base_name("libcuda.so.1"), "libcuda.so.1", "base name of a bare name");
        is_str(gh_base_name("/dir/"), "", "base name of a directory path is empty");
        ok(gh_ends_with("nvidia.com-gpu.json", ".json") && !gh_ends_with("a.yaml", ".json") &&
                   !gh_ends_with("json", ".json") && gh_ends_with(".json", ".json"),
           "ends_with");
        {
                /* gh_utc_tm against the C library's gmtime_r: every day from 1900 to 2400 at a
                 * varying second, both sides of the epoch, and the ends of a 32-bit time_t. */
                int bad = 0;
                long long checked = 0;
                for (long long d = -25567; d <= 157054 && bad < 5; d++) {
                        time_t t = (time_t) (d * 86400 + (d * 7919 % 86400 + 86400) % 86400);
                        struct tm want, got;
                        gmtime_r(&t, &want);
                        gh_utc_tm(t, &got);
                        checked++;
                        if (got.tm_year != want.tm_year || got.tm_mon != want.tm_mon || got.tm_mday != want.tm_mday ||
                            got.tm_hour != want.tm_hour || got.tm_min != want.tm_min || got.tm_sec != want.tm_sec ||
                            got.tm_wday != want.tm_wday || got.tm_yday != want.tm_yday) {
                                tap_diag(
                                        "utc %lld: got %d-%d-%d %d:%d:%d wday %d yday %d, want %d-%d-%d %d:%d:%d wday %d yday %d",
                                        (long long) t, got.tm_year, got.tm_mon, got.tm_mday, got.tm_hour, got.tm_min,
                                        got.tm_sec, got.tm_wday, got.tm_yday, want.tm_year, want.tm_mon, want.tm_mday,
                                        want.tm_hour, want.tm_min, want.tm_sec, want.tm_wday, want.tm_yday);
                                bad++;
                        }
                }
                const time_t ends[] = { 0,         -1, 86399, 86400, INT32_MAX, INT32_MIN, 951782400 /* 2000-02-29 */,
                                        1796313280 };
                for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++) {
                        struct tm want, got;
                        gmtime_r(&ends[i], &want);
                        gh_utc_tm(ends[i], &got);
                        if (memcmp(&(int[]) { got.tm_year, got.tm_mon, got.tm_mday, got.tm_hour, got.tm_min,
                                              got.tm_sec },
                                   &(int[]) { want.tm_year, want.tm_mon, want.tm_mday, want.tm_hour, want.tm_min,
                                              want.tm_sec },
                                   6 * sizeof(int)) != 0) {
                                tap_diag("utc %lld differs", (long long) ends[i]);
                                bad++;
                        }
                }
                ok(bad == 0 && checked == 182622, "utc: the same date and time as gmtime_r on %lld days and the edges",
                   checked);
        }
        return tap_done();
}
