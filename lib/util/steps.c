/* Step timers (steps.h); compiled to nothing unless -Dstep_timers=true. */
#include "steps.h"

#ifdef GH_STEP_TIMERS
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define STEPS_MAX 64

static struct {
        const char *name;
        long us, n;
} steps[STEPS_MAX];
static size_t nsteps;
static long last_us = -1;
static int steps_fd = -1;
static const char *steps_program = "?";

static long mono_us(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

static void steps_flush(void)
{
        char line[4096];
        size_t n = (size_t) snprintf(line, sizeof(line), "%s", steps_program);

        for (size_t i = 0; i < nsteps && n < sizeof(line); i++)
                n += (size_t) snprintf(line + n, sizeof(line) - n, " %s=%ld", steps[i].name, steps[i].us);
        if (n < sizeof(line) - 1) {
                line[n++] = '\n';
                if (write(steps_fd, line, n) < 0)
                        return;
        }
}

void gh_step_program(const char *program) { steps_program = program; }

void gh_step(const char *name)
{
        long now = mono_us();
        size_t i;

        if (last_us < 0) {
                /* The first step opens the file while the process still may (before any capability is
                 * dropped) and starts the clock. */
                steps_fd = open(GH_STEP_TIMERS_FILE, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
                if (steps_fd >= 0)
                        atexit(steps_flush);
        }
        for (i = 0; i < nsteps && strcmp(steps[i].name, name) != 0; i++)
                ;
        if (i == nsteps && nsteps < STEPS_MAX)
                steps[nsteps++].name = name;
        if (i < nsteps) {
                steps[i].us += last_us < 0 ? 0 : now - last_us;
                steps[i].n++;
        }
        last_us = mono_us();
}
#endif
