/* Running `gpu-cli configure` from the hook, when the configuration asks for it ("cli": {"exec":
 * true}, with "path" the program): for a site that wraps gpu-cli, or to compare.  By default the hook
 * configures in its own process (configure.c), which saves this process start. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "file.h"
#include "hook.h"
#include "mps.h"

char **gh_hook_configure_argv(const struct gh_config *cfg, const struct gh_request *req, pid_t pid, const char *rootfs,
                              const char *debug, bool timings, gh_error_t *err)
{
        _cleanup_strv_ char **v = NULL;
        char beside[PATH_MAX];
        size_t n = 0;

        if (debug == NULL)
                debug = cfg->cli.debug;
        if (gh_argv_add(&v, &n, err, "%s", gh_config_cli_path(cfg, beside, sizeof(beside))) < 0 ||
            gh_argv_add(&v, &n, err, "--root=%s", cfg->cli.root) < 0 ||
            (cfg->cli.ldcache && gh_argv_add(&v, &n, err, "--ldcache=%s", cfg->cli.ldcache) < 0) ||
            (debug && (gh_argv_add(&v, &n, err, "--debug=%s", debug) < 0 ||
                       gh_argv_add(&v, &n, err, "--log-format=json") < 0)) ||
            (cfg->cli.load_kmods && gh_argv_add(&v, &n, err, "--load-kmods") < 0) ||
            (cfg->cli.state_file && gh_argv_add(&v, &n, err, "--state-file=%s", cfg->cli.state_file) < 0) ||
            (cfg->cli.no_cache && gh_argv_add(&v, &n, err, "--no-cache") < 0) ||
            gh_argv_add(&v, &n, err, "configure") < 0 ||
            (timings && gh_argv_add(&v, &n, err, "--timings-fd=%d", GH_HOOK_TIMINGS_FD) < 0) ||
            gh_argv_add(&v, &n, err, "--pid=%d", (int) pid) < 0 || gh_request_to_argv(req, &v, &n, err) < 0 ||
            gh_argv_add(&v, &n, err, "%s", rootfs) < 0)
                return gh_err_wrap(err, "building the gpu-cli command line"), NULL;
        return steal_pointer(&v);
}

/* Keeps the last line of what the child wrote, for the log record. */
static void remember(char *tail, size_t size, size_t *used, const char *buf, size_t n)
{
        if (n >= size) {
                buf += n - (size - 1);
                n = size - 1;
        }
        if (*used + n >= size) {
                size_t drop = *used + n - (size - 1);
                memmove(tail, tail + drop, *used - drop);
                *used -= drop;
        }
        memcpy(tail + *used, buf, n);
        *used += n;
        tail[*used] = '\0';
}

static char *last_line(char *tail, size_t used)
{
        char *start;
        while (used > 0 && (tail[used - 1] == '\n' || tail[used - 1] == '\r'))
                tail[--used] = '\0';
        start = strrchr(tail, '\n');
        return strdup(start ? start + 1 : tail);
}

static long long mono_us(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The timings line, read once the child is gone.  Non-blocking: a process gpu-cli started and that
 * outlived it must not hold the hook. */
static void read_timings(int fd, struct gh_hook_timings *t)
{
        size_t used = 0;
        ssize_t n;

        while (used < sizeof(t->line) - 1 && (n = read(fd, t->line + used, sizeof(t->line) - 1 - used)) != 0) {
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                used += (size_t) n;
        }
        t->line[used] = '\0';
}

int gh_hook_run(char **argv, struct gh_hook_timings *timings, char **last, gh_error_t *err)
{
        char *envp[] = { (char *) GH_HOOK_CHILD_PATH, NULL };
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        _cleanup_close_ int rfd = -1, wfd = -1, trfd = -1, twfd = -1;
        char tail[1024] = "";
        size_t used = 0;
        sigset_t none, all;
        pid_t child;
        int pipefd[2], status, r;

        *last = NULL;
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return gh_err(err, errno, "creating a pipe for %s", argv[0]);
        rfd = pipefd[0];
        wfd = pipefd[1];
        if (timings != NULL) {
                timings->line[0] = '\0';
                if (pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) < 0)
                        return gh_err(err, errno, "creating a pipe for %s", argv[0]);
                trfd = pipefd[0];
                /* Above GH_HOOK_TIMINGS_FD, so that the dup2 below is never a no-op that keeps O_CLOEXEC. */
                twfd = fcntl(pipefd[1], F_DUPFD_CLOEXEC, GH_HOOK_TIMINGS_FD + 1);
                gh_closep(&pipefd[1]);
                if (twfd < 0)
                        return gh_err(err, errno, "creating a pipe for %s", argv[0]);
        }

        sigemptyset(&none);
        sigfillset(&all);
        posix_spawnattr_init(&attr);
        posix_spawnattr_setsigmask(&attr, &none);
        posix_spawnattr_setsigdefault(&attr, &all);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, wfd, STDERR_FILENO);
        if (timings != NULL)
                posix_spawn_file_actions_adddup2(&fa, twfd, GH_HOOK_TIMINGS_FD);
        /* Nothing the hook inherited from the runtime leaks into the privileged child. */
        posix_spawn_file_actions_addclosefrom_np(&fa, timings != NULL ? GH_HOOK_TIMINGS_FD + 1 : 3);
        if (timings != NULL)
                timings->spawned_us = mono_us();
        r = posix_spawn(&child, argv[0], &fa, &attr, argv, envp);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        if (r != 0)
                return gh_err(err, r, "running %s; check \"cli.path\" in the gpu-hook configuration", argv[0]);
        gh_closep(&wfd);
        wfd = -1;
        gh_closep(&twfd);
        twfd = -1;

        for (;;) {
                char buf[4096];
                ssize_t n = read(rfd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                /* The runtime shows our stderr to the user: pass gpu-cli's message through. */
                (void) gh_write_all(STDERR_FILENO, buf, (size_t) n);
                remember(tail, sizeof(tail), &used, buf, (size_t) n);
        }
        while (waitpid(child, &status, 0) < 0) {
                if (errno != EINTR)
                        return gh_err(err, errno, "waiting for %s", argv[0]);
        }
        if (timings != NULL) {
                timings->reaped_us = mono_us();
                read_timings(trfd, timings);
        }
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
                return 0;
        *last = last_line(tail, used);
        if (WIFSIGNALED(status))
                return 128 + WTERMSIG(status);
        return WEXITSTATUS(status);
}
