/* The OCI state of a createContainer hook run by runc, without reading it from stdin (runc-state.h).
 *
 * runc runs createContainer hooks from `runc init`, which sets GOMAXPROCS to 1 and locks its
 * thread.  Go's exec starts a goroutine that writes the state into the hook's stdin and another
 * that waits for the hook; the waiting one runs first, blocks in waitid and holds the only P, so
 * the writer runs only once the runtime's monitor takes the P back, and the monitor sleeps longer
 * the longer runc init was busy without a blocked syscall (20 us, doubling to 10 ms): after the
 * bind mounts of a CDI spec, 1-2 ms on the CPU machine (bench kinds cdi-true / cdi-cat).  A hook
 * that never reads its stdin is not delayed: after it exits, the waiting goroutine returns, the
 * writer runs at once, gets EPIPE, and Go ignores that.
 *
 * So when our parent is `runc init`, the facts the state would give are read where runc keeps
 * them, and proved: runc init's parent is the `runc create`/`runc run` that changed into the bundle
 * directory (its cwd), whose config.json names the root runc init changed into (our cwd, checked
 * by the caller against config.json's root.path); the container id is that command line's last
 * argument; the pid is runc init's.  Anything that does not add up returns 0, and the caller reads
 * the state from stdin as every other runtime's hook does. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "log.h"
#include "readfile.h"
#include "runc-state.h"

/* The parent of pid (0: ourselves) from /proc/PID/stat, -1 when it cannot be read. */
static pid_t parent_of(pid_t pid)
{
        char path[64], buf[1024], *p;
        _cleanup_close_ int fd = -1;
        ssize_t n;
        int ppid;

        if (pid > 0)
                snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
        else
                snprintf(path, sizeof(path), "/proc/self/stat");
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0 || (n = read(fd, buf, sizeof(buf) - 1)) <= 0)
                return -1;
        buf[n] = '\0';
        /* "pid (comm) S ppid ...": comm may hold anything, so after its last ')' */
        p = strrchr(buf, ')');
        if (p == NULL || sscanf(p + 1, " %*c %d", &ppid) != 1 || ppid <= 0)
                return -1;
        return ppid;
}

/* /proc/PID/cmdline as NUL-separated arguments (malloc'ed, *n of them), NULL when unreadable. */
static char *cmdline_of(pid_t pid, size_t *len, size_t *n)
{
        char path[64];
        _cleanup_close_ int fd = -1;
        _cleanup_error_ gh_error_t e = NULL;
        char *buf = NULL;

        snprintf(path, sizeof(path), "/proc/%d/cmdline", (int) pid);
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0 || gh_read_bounded(fd, 65536, &buf, len, "a command line", &e) < 0 || *len == 0 ||
            buf[*len - 1] != '\0') {
                free(buf);
                return NULL;
        }
        *n = 0;
        for (size_t i = 0; i < *len; i++)
                *n += buf[i] == '\0';
        return buf;
}

/* The i-th argument of a cmdline_of buffer. */
static const char *arg_at(const char *buf, size_t len, size_t i)
{
        const char *p = buf;
        while (i-- > 0) {
                p += strlen(p) + 1;
                if ((size_t) (p - buf) >= len)
                        return NULL;
        }
        return p;
}

static bool is_runc_init(pid_t pid)
{
        size_t len, n;
        _cleanup_free_ char *cl = cmdline_of(pid, &len, &n);
        const char *a0, *base;

        if (cl == NULL || n != 2 || strcmp(arg_at(cl, len, 1), "init") != 0)
                return false;
        a0 = arg_at(cl, len, 0);
        base = strrchr(a0, '/');
        base = base ? base + 1 : a0;
        return strncmp(base, "runc", 4) == 0;
}

int gh_runc_hook_state(struct gh_oci_state *state)
{
        _cleanup_free_ char *cl = NULL, *bundle = NULL, *id = NULL;
        _cleanup_close_ int cwd = -1;
        char path[64], link[PATH_MAX];
        pid_t init, runc;
        struct stat a, b;
        size_t len, n;
        ssize_t r;

        memset(state, 0, sizeof(*state));
        init = parent_of(0);
        if (init <= 1 || !is_runc_init(init) || (runc = parent_of(init)) <= 1)
                return 0;
        cl = cmdline_of(runc, &len, &n);
        if (cl == NULL || n < 3)
                return 0;
        /* create or run: the container id is the last argument */
        id = strdup(arg_at(cl, len, n - 1));
        snprintf(path, sizeof(path), "/proc/%d/cwd", (int) runc);
        r = readlink(path, link, sizeof(link) - 1);
        if (id == NULL || id[0] == '\0' || id[0] == '-' || r <= 0 || link[0] != '/')
                return 0;
        link[r] = '\0';
        /* the bundle's path, as we see it, must be the directory runc is in */
        cwd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (cwd < 0 || fstat(cwd, &a) < 0 || stat(link, &b) < 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino)
                return 0;
        bundle = strdup(link);
        if (bundle == NULL)
                return 0;
        state->id = steal_pointer(&id);
        state->bundle = steal_pointer(&bundle);
        state->pid = init;
        gh_debug("cdi-hook: run by runc init %d (bundle %s, container %s): the state is not read from stdin",
                 (int) init, state->bundle, state->id);
        return 1;
}

int gh_runc_hook_root_is(const char *rootfs, const struct stat *start_dir)
{
        struct stat st;
        return start_dir != NULL && stat(rootfs, &st) == 0 && st.st_dev == start_dir->st_dev &&
               st.st_ino == start_dir->st_ino;
}
