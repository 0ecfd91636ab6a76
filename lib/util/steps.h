/* Step timers for finding where a start's time goes, finer than the hook log's phases.  Built only
 * with `meson setup -Dstep_timers=true` (never in a package): GH_STEP("name") adds the time since
 * the previous step to the bucket "name" (the same name sums, so a step inside a loop gives its
 * total), and at exit the process appends one line "PROGRAM name=us name=us ..." to
 * GH_STEP_TIMERS_FILE (/run/gh-steps.log), opened at the first step.  In every other build the
 * macros are nothing. */
#ifndef GH_STEPS_H
#define GH_STEPS_H

#ifdef GH_STEP_TIMERS
void gh_step(const char *name);
void gh_step_program(const char *program);
#define GH_STEP(name) gh_step(name)
#define GH_STEP_PROGRAM(program) gh_step_program(program)
#else
#define GH_STEP(name) ((void) 0)
#define GH_STEP_PROGRAM(program) ((void) 0)
#endif

#endif
