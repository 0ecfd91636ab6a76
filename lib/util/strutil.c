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
