/* Small string helpers (strutil.h). */
#include <string.h>

#include "strutil.h"

bool gh_is_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

char *gh_trim(char *s)
{
        char *e;

        while (gh_is_blank(*s))
                s++;
        e = s + strlen(s);
        while (e > s && gh_is_blank(e[-1]))
                *--e = '\0';
        return s;
}

const char *gh_base_name(const char *path)
{
        const char *slash = strrchr(path, '/');
        return slash ? slash + 1 : path;
}

bool gh_ends_with(const char *s, const char *suffix)
{
        size_t a = strlen(s), b = strlen(suffix);
        return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* Days since 1970-01-01 to a civil date, the proleptic Gregorian calendar counted in 400-year eras
 * of 146097 days (each era starts on a 1 March, so the leap day is the era-year's last day). */
void gh_utc_tm(time_t t, struct tm *tm)
{
        long long days = t / 86400, secs = t % 86400;
        if (secs < 0) {
                secs += 86400;
                days--;
        }
        long long z = days + 719468; /* days since 0000-03-01 */
        long long era = (z >= 0 ? z : z - 146096) / 146097;
        long long doe = z - era * 146097;                                      /* [0, 146096] */
        long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* [0, 399] */
        long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);               /* [0, 365], from 1 March */
        long long mp = (5 * doy + 2) / 153;                                    /* [0, 11], March = 0 */
        long long month = mp < 10 ? mp + 3 : mp - 9;                           /* [1, 12] */
        long long year = yoe + era * 400 + (month <= 2);
        bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;

        memset(tm, 0, sizeof(*tm));
        tm->tm_sec = (int) (secs % 60);
        tm->tm_min = (int) (secs / 60 % 60);
        tm->tm_hour = (int) (secs / 3600);
        tm->tm_mday = (int) (doy - (153 * mp + 2) / 5 + 1);
        tm->tm_mon = (int) month - 1;
        tm->tm_year = (int) (year - 1900);
        tm->tm_wday = (int) (((days % 7) + 11) % 7); /* 1970-01-01 was a Thursday */
        /* Day of the year from 1 January: March 1 is day 59 (60 in a leap year). */
        tm->tm_yday = (int) (mp < 10 ? doy + 59 + leap : doy - 306);
}
