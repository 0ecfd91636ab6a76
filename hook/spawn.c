/* Running gpu-cli configure from the hook.
 *
 * Why exec and not the library: one privileged code path (the manual `gpu-cli configure --pid`
 * that users script against is exactly what the hook runs), and the hook stays a small program
 * that loads nothing heavy for the many containers that ask for no GPU.  The price is one
 * posix_spawn (about a millisecond) for GPU containers only. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capability.h"
#include "cleanup.h"
#include "hook.h"

struct argv_builder {
        char **v;
        size_t n;
        bool failed;
};

__attribute__((format(printf, 2, 3))) static void add(struct argv_builder *b, const char *fmt, ...)
{
        va_list ap;
        char *s = NULL, **grown;

        if (b->failed)
                return;
        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                s = NULL;
        va_end(ap);
        grown = s ? realloc(b->v, (b->n + 2) * sizeof(char *)) : NULL;
        if (grown == NULL) {
                free(s);
                b->failed = true;
                return;
        }
        b->v = grown;
        b->v[b->n++] = s;
        b->v[b->n] = NULL;
}

/* Requested items joined by commas; NULL for "none" alone (configure then adds no GPU). */
static char *device_list(const struct gh_select_request *req)
{
        char *list = NULL;
        size_t len = 0;

        if (req->all)
                return strdup("all");
        for (size_t i = 0; i < req->n; i++) {
                size_t l = strlen(req->items[i].text);
                char *grown = realloc(list, len + l + 2);
                if (grown == NULL) {
                        free(list);
                        return NULL;
                }
                list = grown;
                if (len)
                        list[len++] = ',';
                memcpy(list + len, req->items[i].text, l + 1);
                len += l;
        }
        return list;
}

char **gh_hook_configure_argv(const struct gh_config *cfg, const struct gh_env_decision *d, pid_t pid,
                              const char *rootfs, const char *debug, gh_error_t *err)
{
        static const unsigned caps[] = { GH_CAP_COMPUTE, GH_CAP_COMPAT32, GH_CAP_DISPLAY, GH_CAP_GRAPHICS,
                                         GH_CAP_NGX,     GH_CAP_UTILITY,  GH_CAP_VIDEO };
        struct argv_builder b = { 0 };
        _cleanup_free_ char *devices = NULL;

        if (!d->devices.all && d->devices.n > 0 && (devices = device_list(&d->devices)) == NULL)
                return gh_err(err, ENOMEM, "building the gpu-cli command line"), NULL;
        if (debug == NULL)
                debug = cfg->cli.debug;

        add(&b, "%s", cfg->cli.path);
        add(&b, "--root=%s", cfg->cli.root);
        if (cfg->cli.ldcache)
                add(&b, "--ldcache=%s", cfg->cli.ldcache);
        if (cfg->cli.user)
                add(&b, "--user=%s", cfg->cli.user);
        if (debug) {
                add(&b, "--debug=%s", debug);
                add(&b, "--log-format=json");
        }
        if (cfg->cli.load_kmods)
                add(&b, "--load-kmods");
        if (cfg->cli.state_file)
                add(&b, "--state-file=%s", cfg->cli.state_file);
        if (cfg->cli.no_cache)
                add(&b, "--no-cache");
        add(&b, "configure");
        add(&b, "--pid=%d", (int) pid);
        if (d->devices.all)
                add(&b, "--device=all");
        else if (devices)
                add(&b, "--device=%s", devices);
        for (size_t i = 0; i < d->n_requirements; i++)
                add(&b, "--require=%s", d->requirements[i]);
        for (size_t i = 0; i < GH_ARRAY_SIZE(caps); i++)
                if (d->capabilities & caps[i])
                        add(&b, "--%s", gh_capability_name(caps[i]));
        if (cfg->cli.no_cgroups)
                add(&b, "--no-cgroups");
        if (cfg->cli.ldconfig)
                add(&b, "--ldconfig=%s", cfg->cli.ldconfig);
        if (d->mig_config)
                add(&b, "--mig-config=all");
        if (d->mig_monitor)
                add(&b, "--mig-monitor=all");
        for (size_t i = 0; i < d->n_imex_channels; i++)
                add(&b, "--imex-channel=%u", d->imex_channels[i]);
        add(&b, "%s", rootfs);
        if (b.failed) {
                gh_strvfreep(&b.v);
                return gh_err(err, ENOMEM, "building the gpu-cli command line"), NULL;
        }
        return b.v;
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

int gh_hook_run(char **argv, char **last, gh_error_t *err)
{
        char *envp[] = { (char *) GH_HOOK_CHILD_PATH, NULL };
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        _cleanup_close_ int rfd = -1, wfd = -1;
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

        sigemptyset(&none);
        sigfillset(&all);
        posix_spawnattr_init(&attr);
        posix_spawnattr_setsigmask(&attr, &none);
        posix_spawnattr_setsigdefault(&attr, &all);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, wfd, STDERR_FILENO);
        /* Nothing the hook inherited from the runtime leaks into the privileged child. */
        posix_spawn_file_actions_addclosefrom_np(&fa, 3);
        r = posix_spawn(&child, argv[0], &fa, &attr, argv, envp);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        if (r != 0)
                return gh_err(err, r, "running %s; check \"cli.path\" in the gpu-hook configuration", argv[0]);
        gh_closep(&wfd);
        wfd = -1;

        for (;;) {
                char buf[4096];
                ssize_t n = read(rfd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                /* The runtime shows our stderr to the user: pass gpu-cli's message through. */
                for (ssize_t off = 0; off < n;) {
                        ssize_t w = write(STDERR_FILENO, buf + off, (size_t) (n - off));
                        if (w < 0 && errno == EINTR)
                                continue;
                        if (w <= 0)
                                break;
                        off += w;
                }
                remember(tail, sizeof(tail), &used, buf, (size_t) n);
        }
        while (waitpid(child, &status, 0) < 0) {
                if (errno != EINTR)
                        return gh_err(err, errno, "waiting for %s", argv[0]);
        }
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
                return 0;
        *last = last_line(tail, used);
        if (WIFSIGNALED(status))
                return 128 + WTERMSIG(status);
        return WEXITSTATUS(status);
}
