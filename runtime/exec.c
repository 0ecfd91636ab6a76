/* Running the real runtime, and telling the engine when gpu-runtime itself fails.
 *
 * The runtime is named in the configuration ("runtime.runtimes", default runc): a plain name is
 * looked up on the PATH the engine gave us (engines find runc the same way), an absolute path is
 * taken as it is.  gpu-runtime itself is skipped, so installing it under the name runc cannot make
 * it exec itself forever. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "runtime.h"

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

static bool is_self(const struct stat *self, const char *path)
{
        struct stat st;
        return stat(path, &st) == 0 && st.st_dev == self->st_dev && st.st_ino == self->st_ino;
}

static bool usable(const char *path)
{
        struct stat st;
        return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* The path of name (absolute, or searched on PATH) when it is an executable other than us. */
static char *resolve(const char *name, const struct stat *self)
{
        const char *path = getenv("PATH");
        char buf[4096];

        if (name[0] == '/')
                return usable(name) && !is_self(self, name) ? strdup(name) : NULL;
        if (path == NULL || path[0] == '\0')
                path = DEFAULT_PATH;
        for (const char *p = path; *p;) {
                const char *e = strchrnul(p, ':');
                int n = snprintf(buf, sizeof(buf), "%.*s/%s", (int) (e - p), p, name);
                if (e > p && p[0] == '/' && n > 0 && (size_t) n < sizeof(buf) && usable(buf) && !is_self(self, buf))
                        return strdup(buf);
                p = *e ? e + 1 : e;
        }
        return NULL;
}

int gh_rt_exec(const struct gh_config *cfg, int argc, char **argv, gh_error_t *err)
{
        struct stat self;
        char *path = NULL;

        if (stat("/proc/self/exe", &self) < 0)
                return gh_err(err, errno, "inspecting /proc/self/exe");
        for (size_t i = 0; i < cfg->runtime.n_runtimes && path == NULL; i++)
                path = resolve(cfg->runtime.runtimes[i], &self);
        if (path == NULL)
                return gh_err(err, ENOENT,
                              "no OCI runtime found (tried %s%s); install runc or set \"runtime.runtimes\"",
                              cfg->runtime.runtimes[0], cfg->runtime.n_runtimes > 1 ? " and others" : "");
        (void) argc;
        argv[0] = path;
        execv(path, argv);
        return gh_err(err, errno, "running %s", path);
}

/* One JSON string, escaped by jansson. */
static char *json_quote(const char *s)
{
        json_t *j = json_string(s);
        char *out = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
        json_decref(j);
        return out;
}

void gh_rt_report(const struct gh_rt_args *a, const char *msg)
{
        _cleanup_free_ char *quoted = NULL, *line = NULL;
        _cleanup_close_ int fd = -1;
        char when[64];
        struct tm tm;
        time_t now = time(NULL);

        fprintf(stderr, "gpu-runtime: %s\n", msg);
        if (a->log == NULL)
                return;
        fd = open(a->log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0644);
        if (fd < 0)
                return;
        gmtime_r(&now, &tm);
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
        /* Engines show the log's message as it is: say whose it is. */
        if (asprintf(&line, "gpu-runtime: %s", msg) < 0)
                line = NULL;
        quoted = json_quote(line ? line : msg);
        if (a->log_json && quoted != NULL)
                dprintf(fd, "{\"level\":\"error\",\"msg\":%.*s,\"time\":\"%s\"}\n", (int) strlen(quoted), quoted, when);
        else
                dprintf(fd, "time=\"%s\" level=error msg=%s\n", when, quoted ? quoted : "\"gpu-runtime failed\"");
}
