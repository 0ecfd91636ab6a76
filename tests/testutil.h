/* Helpers shared by the C unit tests. */
#ifndef GH_TESTUTIL_H
#define GH_TESTUTIL_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

/* Runs a printf-formatted shell command; returns its exit status (-1 when it did not exit). */
__attribute__((format(printf, 1, 2), unused)) static int sh(const char *fmt, ...)
{
        char cmd[8192];
        va_list ap;
        int st;

        va_start(ap, fmt);
        vsnprintf(cmd, sizeof(cmd), fmt, ap);
        va_end(ap);
        st = system(cmd);
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The standard output of a printf-formatted shell command, malloc'ed (NULL when it cannot run). */
__attribute__((format(printf, 1, 2), unused)) static char *sh_output(const char *fmt, ...)
{
        char cmd[8192], line[4096], *buf = NULL;
        size_t len = 0;
        FILE *out, *p;
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(cmd, sizeof(cmd), fmt, ap);
        va_end(ap);
        if ((p = popen(cmd, "r")) == NULL)
                return NULL;
        out = open_memstream(&buf, &len);
        while (out != NULL && fgets(line, sizeof(line), p))
                fputs(line, out);
        pclose(p);
        if (out != NULL)
                fclose(out);
        return buf;
}

#endif
