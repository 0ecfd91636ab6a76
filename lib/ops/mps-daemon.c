/* MPS groups' control daemons (mps-daemon.h, docs/mps.md): start, stop, and talk to one
 * nvidia-cuda-mps-control per group.  The group directory's state files are core/mps.c's. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "capability.h"
#include "cleanup.h"
#include "file.h"
#include "log.h"
#include "mps-cdi.h"
#include "mps-daemon.h"
#include "proc.h"

#define REMOVE_DEPTH_MAX 32
#define OUTPUT_MAX 65536

static int pidfd_open_(pid_t pid) { return (int) syscall(SYS_pidfd_open, pid, 0); }

/* Waits for pid (not necessarily our child) to exit; true when it did within timeout_ms. */
static bool wait_gone(pid_t pid, unsigned long long starttime, int timeout_ms)
{
        _cleanup_close_ int pfd = pidfd_open_(pid);
        if (pfd < 0)
                return errno == ESRCH || gh_proc_starttime(pid) != starttime;
        if (gh_proc_starttime(pid) != starttime)
                return true;
        struct pollfd p = { .fd = pfd, .events = POLLIN };
        return poll(&p, 1, timeout_ms) == 1;
}

/* SIGKILL every process of the session `sid` (the daemon and the servers it started). */
static void kill_session(pid_t sid)
{
        _cleanup_closedir_ DIR *d = opendir("/proc");
        struct dirent *de;

        while (d && (de = readdir(d)) != NULL) {
                pid_t pid;
                if (gh_parse_pid(de->d_name, &pid) == 0 && getsid(pid) == sid)
                        kill(pid, SIGKILL);
        }
}

/* True when pid's environment holds `needle` exactly (one "K=V" entry). */
static bool environ_has(pid_t pid, const char *needle)
{
        char path[64];
        _cleanup_free_ char *buf = malloc(65536);
        _cleanup_close_ int fd = -1;
        ssize_t n;

        snprintf(path, sizeof(path), "/proc/%d/environ", (int) pid);
        if (buf == NULL || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || (n = read(fd, buf, 65535)) <= 0)
                return false;
        buf[n] = '\0';
        for (char *p = buf; p < buf + n; p += strlen(p) + 1)
                if (strcmp(p, needle) == 0)
                        return true;
        return false;
}

#define MEMBERS_MAX 64
struct member {
        pid_t pid;
        unsigned long long start;
};

/* The daemon's helpers: processes of its session, its children, and anything running with the
 * group's pipe directory in its environment (MPS servers inherit the daemon's). */
static size_t group_members(const char *group, pid_t daemon, struct member *m, size_t max)
{
        _cleanup_closedir_ DIR *d = opendir("/proc");
        struct dirent *de;
        char needle[PATH_MAX + 32];
        size_t n = 0;

        snprintf(needle, sizeof(needle), "CUDA_MPS_PIPE_DIRECTORY=%s/pipe", group);
        while (d && n < max && (de = readdir(d)) != NULL) {
                pid_t pid;
                if (gh_parse_pid(de->d_name, &pid) < 0 || pid == getpid())
                        continue;
                if (getsid(pid) == daemon || environ_has(pid, needle)) {
                        m[n].pid = pid;
                        m[n].start = gh_proc_starttime(pid);
                        if (m[n].start)
                                n++;
                }
        }
        return n;
}

/* The fixed environment of the daemon and its client: nothing inherited. */
static void group_env(const char *group, const char *control, const char *uuid, char *buf[4], char **envp)
{
        _cleanup_free_ char *bindir = strdup(control);
        char *slash = bindir ? strrchr(bindir, '/') : NULL;
        size_t k = 0;

        if (slash)
                *slash = '\0';
        /* the daemon starts nvidia-cuda-mps-server from its PATH: the driver's directory first */
        if (asprintf(&buf[0], "PATH=%s:/usr/sbin:/usr/bin:/sbin:/bin", slash && bindir[0] ? bindir : "/usr/bin") < 0)
                buf[0] = NULL;
        if (asprintf(&buf[1], "CUDA_MPS_PIPE_DIRECTORY=%s/pipe", group) < 0)
                buf[1] = NULL;
        if (asprintf(&buf[2], "CUDA_MPS_LOG_DIRECTORY=%s/log", group) < 0)
                buf[2] = NULL;
        buf[3] = NULL;
        if (uuid && asprintf(&buf[3], "CUDA_VISIBLE_DEVICES=%s", uuid) < 0)
                buf[3] = NULL;
        for (int i = 0; i < 4; i++)
                if (buf[i])
                        envp[k++] = buf[i];
        envp[k] = NULL;
}

static void free_env(char *buf[4])
{
        for (int i = 0; i < 4; i++)
                free(buf[i]);
}

static int open_base(const char *dir, bool create, gh_error_t *err)
{
        struct stat st;
        int fd;

        /* mkdir -p of a trusted host path (the default or an administrator's choice) */
        if (create && gh_mkdir_p_trusted(AT_FDCWD, dir, 0755, err) < 0)
                return -1;
        fd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return gh_err(err, errno, "opening the MPS group directory %s", dir);
        if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 022)) {
                close(fd);
                return gh_err(err, 0,
                              "the MPS group directory %s must be owned by uid %d and not writable by others; "
                              "fix its owner and mode",
                              dir, (int) geteuid());
        }
        return fd;
}

static int remove_tree_at(int parent, const char *name, int depth)
{
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int fd;

        if (depth > REMOVE_DEPTH_MAX)
                return -(errno = ELOOP);
        fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : unlinkat(parent, name, 0);
        d = fdopendir(fd);
        if (d == NULL) {
                close(fd);
                return -1;
        }
        while ((de = readdir(d)) != NULL) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                /* never follows a link: a container of the group may have written into pipe/ */
                if (unlinkat(dirfd(d), de->d_name, 0) < 0) {
                        if (errno != EISDIR && errno != EPERM)
                                return -1;
                        if (remove_tree_at(dirfd(d), de->d_name, depth + 1) < 0)
                                return -1;
                }
        }
        return unlinkat(parent, name, AT_REMOVEDIR);
}

/* Unmounts the group's shm and removes its directory; quiet, for cleanup paths. */
static int remove_group(const char *dir, const char *name, gh_error_t *err)
{
        char shm[PATH_MAX];
        _cleanup_close_ int base = -1;

        gh_mps_group_path(shm, sizeof(shm), dir, name, "shm");
        while (umount2(shm, MNT_DETACH | UMOUNT_NOFOLLOW) == 0)
                ; /* stacked mounts, if any */
        base = open(gh_mps_dir(dir), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (base < 0 || remove_tree_at(base, name, 0) < 0)
                return gh_err(err, errno, "removing the MPS group directory %s/%s", gh_mps_dir(dir), name);
        return 0;
}

int gh_mps_control(const char *dir, const char *name, const char *control, const char *commands, char **output,
                   gh_error_t *err)
{
        char group[PATH_MAX], *envbuf[4] = { 0 }, *envp[5];
        char *out = NULL;
        size_t len = 0;
        int outp[2] = { -1, -1 }, status = 0;
        _cleanup_close_ int in = -1, pfd = -1;
        pid_t pid;
        bool timed_out = false;

        *output = NULL;
        gh_mps_group_path(group, sizeof(group), dir, name, NULL);
        in = memfd_create("mps-commands", MFD_CLOEXEC);
        if (in < 0 || write(in, commands, strlen(commands)) != (ssize_t) strlen(commands) ||
            lseek(in, 0, SEEK_SET) < 0 || pipe2(outp, O_CLOEXEC) < 0)
                return gh_err(err, errno, "talking to the MPS control daemon of group '%s'", name);
        group_env(group, control, NULL, envbuf, envp);
        pid = fork();
        if (pid == 0) {
                dup2(in, 0);
                dup2(outp[1], 1);
                dup2(outp[1], 2);
                execve(control, (char *[]) { (char *) GH_MPS_CONTROL, NULL }, envp);
                _exit(127);
        }
        free_env(envbuf);
        close(outp[1]);
        if (pid < 0) {
                close(outp[0]);
                return gh_err(err, errno, "starting %s", control);
        }
        out = calloc(1, OUTPUT_MAX + 1);
        for (;;) {
                struct pollfd p = { .fd = outp[0], .events = POLLIN };
                int r = poll(&p, 1, 10000);
                if (r == 0) {
                        timed_out = true;
                        kill(pid, SIGKILL);
                        break;
                }
                if (r < 0 && errno == EINTR)
                        continue;
                ssize_t k = r > 0 && out ? read(outp[0], out + len, OUTPUT_MAX - len) : -1;
                if (k <= 0)
                        break;
                len += (size_t) k;
                if (len == OUTPUT_MAX)
                        break;
        }
        close(outp[0]);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        if (out == NULL)
                return gh_err(err, ENOMEM, "talking to the MPS control daemon");
        out[len] = '\0';
        if (timed_out || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                char *nl;
                while ((nl = strchr(out, '\n')) != NULL && nl[1] == '\0')
                        *nl = '\0';
                for (char *c = out; *c; c++)
                        if (*c == '\n')
                                *c = ' ';
                gh_err(err, 0, "%s for group '%s' %s: %.200s", GH_MPS_CONTROL, name,
                       timed_out ? "did not answer in 10 s" : "failed", out[0] ? out : "(no output)");
                free(out);
                return -1;
        }
        *output = out;
        return 0;
}

/* Child side of the daemon start: never returns. */
static void exec_daemon(const char *group, const char *control, const char *uuid, int logfd)
{
        char shm[PATH_MAX], *envbuf[4] = { 0 }, *envp[5];
        int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);

        dup2(logfd, 1);
        dup2(logfd, 2);
        if (devnull >= 0)
                dup2(devnull, 0);
        snprintf(shm, sizeof(shm), "%s/shm", group);
        /* Its own mount namespace, where the group's tmpfs is /dev/shm: MPS servers and clients
         * share memory through /dev/shm, so clients of this group must see this one. */
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0 ||
            mount(shm, "/dev/shm", NULL, MS_BIND, NULL) < 0) {
                dprintf(2, "gpu-cli: cannot give the MPS daemon its own /dev/shm: %m\n");
                _exit(126);
        }
        group_env(group, control, uuid, envbuf, envp);
        execve(control, (char *[]) { (char *) GH_MPS_CONTROL, (char *) "-f", NULL }, envp);
        dprintf(2, "gpu-cli: cannot run %s: %m\n", control);
        _exit(127);
}

/* Forks the daemon into its own session (it outlives gpu-cli) and returns its pid. */
static pid_t spawn_daemon(const char *group, const char *control, const char *uuid, gh_error_t *err)
{
        char logpath[PATH_MAX];
        int sync[2];
        pid_t mid, daemon_pid = -1;
        _cleanup_close_ int logfd = -1;

        snprintf(logpath, sizeof(logpath), "%s/log/gpu-cli.log", group);
        logfd = open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (logfd < 0)
                return gh_err(err, errno, "creating %s", logpath);
        if (pipe2(sync, O_CLOEXEC) < 0)
                return gh_err(err, errno, "starting the MPS control daemon");
        mid = fork();
        if (mid == 0) {
                close(sync[0]);
                pid_t d = fork();
                if (d == 0) {
                        close(sync[1]);
                        /* its own session, whose id is its pid: stop finds its servers by it */
                        setsid();
                        exec_daemon(group, control, uuid, logfd);
                }
                (void) !write(sync[1], &d, sizeof(d));
                _exit(d < 0);
        }
        close(sync[1]);
        if (mid < 0) {
                close(sync[0]);
                return gh_err(err, errno, "starting the MPS control daemon");
        }
        if (read(sync[0], &daemon_pid, sizeof(daemon_pid)) != sizeof(daemon_pid))
                daemon_pid = -1;
        close(sync[0]);
        while (waitpid(mid, NULL, 0) < 0 && errno == EINTR)
                ;
        if (daemon_pid <= 0)
                return gh_err(err, EAGAIN, "starting the MPS control daemon");
        return daemon_pid;
}

static void last_log_line(const char *group, char *buf, size_t size)
{
        char path[PATH_MAX], text[4096];
        _cleanup_close_ int fd = -1;
        ssize_t n;

        buf[0] = '\0';
        snprintf(path, sizeof(path), "%s/log/gpu-cli.log", group);
        fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return;
        off_t end = lseek(fd, 0, SEEK_END);
        lseek(fd, end > (off_t) sizeof(text) - 1 ? end - (off_t) sizeof(text) + 1 : 0, SEEK_SET);
        n = read(fd, text, sizeof(text) - 1);
        if (n <= 0)
                return;
        text[n] = '\0';
        while (n > 0 && text[n - 1] == '\n')
                text[--n] = '\0';
        char *l = strrchr(text, '\n');
        snprintf(buf, size, "%s", l ? l + 1 : text);
}

/* The daemon answers once its control pipe exists; it must still be alive then. */
static int wait_ready(const char *group, const struct gh_mps_group *g, int timeout_ms, gh_error_t *err)
{
        char control[PATH_MAX], line[512];
        struct timespec t0, t;

        snprintf(control, sizeof(control), "%s/pipe/control", group);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (;;) {
                if (!gh_mps_group_alive(g)) {
                        last_log_line(group, line, sizeof(line));
                        return gh_err(err, 0, "the MPS control daemon exited at once%s%s (log: %s/log)",
                                      line[0] ? ": " : "", line, group);
                }
                if (access(control, F_OK) == 0)
                        return 0;
                clock_gettime(CLOCK_MONOTONIC, &t);
                if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > timeout_ms)
                        return gh_err(err, ETIMEDOUT, "the MPS control daemon did not create %s (log: %s/log)", control,
                                      group);
                usleep(5000);
        }
}

static int apply_limits(const struct gh_mps_start *o, gh_error_t *err)
{
        char cmds[256] = "";
        size_t len = 0;
        _cleanup_free_ char *out = NULL;

        if (o->threads > 0)
                len += (size_t) snprintf(cmds + len, sizeof(cmds) - len, "set_default_active_thread_percentage %d\n",
                                         o->threads);
        /* device 0: the daemon sees only the group's GPU (CUDA_VISIBLE_DEVICES) */
        if (o->memory_mib > 0)
                snprintf(cmds + len, sizeof(cmds) - len, "set_default_device_pinned_mem_limit 0 %lluM\n",
                         o->memory_mib);
        if (cmds[0] == '\0')
                return 0;
        if (gh_mps_control(o->dir, o->name, o->control, cmds, &out, err) < 0)
                return gh_err_wrap(err, "setting the limits of MPS group '%s'", o->name);
        /* the client prints errors on stdout and still exits 0 for a refused command */
        if (out && (strcasestr(out, "error") || strcasestr(out, "invalid") || strcasestr(out, "unrecognized")))
                return gh_err(err, 0, "the MPS control daemon refused the limits of group '%s': %.200s", o->name, out);
        return 0;
}

int gh_mps_start(const struct gh_mps_start *o, struct gh_mps_group *out, gh_error_t *err)
{
        char group[PATH_MAX], shm[PATH_MAX];
        _cleanup_close_ int base = -1, gfd = -1;
        struct gh_mps_group g = { 0 };
        int timeout = o->timeout_ms > 0 ? o->timeout_ms : 10000;

        if (gh_mps_name_check(o->name, err) < 0)
                return -1;
        if (o->threads < 0 || o->threads > 100)
                return gh_err_usage(err, "invalid --threads=%d: give a percentage from 1 to 100", o->threads);
        base = open_base(gh_mps_dir(o->dir), true, err);
        if (base < 0)
                return -1;
        if (mkdirat(base, o->name, 0755) < 0) {
                if (errno == EEXIST) {
                        gh_err(err, 0, "MPS group '%s' exists; stop it first with 'gpu-cli mps stop %s'", o->name,
                               o->name);
                        return gh_err_code(err, EEXIST);
                }
                return gh_err(err, errno, "creating MPS group '%s'", o->name);
        }
        gh_mps_group_path(group, sizeof(group), o->dir, o->name, NULL);
        gh_mps_group_path(shm, sizeof(shm), o->dir, o->name, "shm");
        gfd = openat(base, o->name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (gfd < 0 || mkdirat(gfd, "pipe", 0755) < 0 || mkdirat(gfd, "log", 0755) < 0 ||
            mkdirat(gfd, "shm", 0755) < 0) {
                gh_err(err, errno, "creating MPS group '%s'", o->name);
                goto fail;
        }
        if (mount("tmpfs", shm, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") < 0) {
                gh_err(err, errno, "mounting the shm of MPS group '%s' on %s", o->name, shm);
                goto fail;
        }
        snprintf(g.name, sizeof(g.name), "%s", o->name);
        snprintf(g.gpu_uuid, sizeof(g.gpu_uuid), "%s", o->gpu->uuid);
        g.gpu_index = o->gpu->index;
        g.threads = o->threads;
        g.memory_mib = o->memory_mib;
        g.pid = spawn_daemon(group, o->control, o->gpu->uuid, err);
        if (g.pid < 0)
                goto fail;
        g.starttime = gh_proc_starttime(g.pid);
        if (wait_ready(group, &g, timeout, err) < 0 || apply_limits(o, err) < 0 || gh_mps_save(o->dir, &g, err) < 0)
                goto fail;
        g.alive = true;
        gh_debug("MPS group %s: daemon %d on %s", g.name, (int) g.pid, g.gpu_uuid);
        if (out)
                *out = g;
        return 0;
fail:
        if (g.pid > 0) {
                kill_session(g.pid);
                wait_gone(g.pid, g.starttime, 2000);
        }
        {
                _cleanup_error_ gh_error_t e = NULL;
                if (remove_group(o->dir, o->name, &e) < 0)
                        gh_warn("%s", e->msg);
        }
        return -1;
}

int gh_mps_stop(const char *dir, const char *name, const char *control, int timeout_ms, gh_error_t *err)
{
        struct gh_mps_group g;
        char path[PATH_MAX];
        struct stat st;

        if (gh_mps_name_check(name, err) < 0)
                return -1;
        gh_mps_group_path(path, sizeof(path), dir, name, NULL);
        if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode)) {
                gh_err(err, 0, "no MPS group '%s' (see 'gpu-cli mps list')", name);
                return gh_err_code(err, ENOENT);
        }
        /* its CDI device goes first: no new container asks for a group that is stopping */
        {
                _cleanup_error_ gh_error_t e = NULL;
                if (gh_mps_cdi_remove(dir, name, &e) < 0)
                        gh_warn("%s", e->msg);
        }
        if (gh_mps_load(dir, name, &g, err) < 0) {
                /* a group whose start was interrupted: clean up what is there */
                gh_warn("%s; removing what is left of it", (*err)->msg);
                gh_error_free(err);
                return remove_group(dir, name, err);
        }
        if (g.alive) {
                _cleanup_free_ char *out = NULL;
                _cleanup_error_ gh_error_t e = NULL;
                struct member members[MEMBERS_MAX];
                char group[PATH_MAX];
                size_t nm;

                gh_mps_group_path(group, sizeof(group), dir, name, NULL);
                nm = group_members(group, g.pid, members, MEMBERS_MAX);
                if (control && gh_mps_control(dir, name, control, "quit\n", &out, &e) < 0)
                        gh_warn("%s", e->msg);
                if (!wait_gone(g.pid, g.starttime, timeout_ms > 0 ? timeout_ms : 5000)) {
                        gh_warn("MPS group '%s': the daemon did not quit; killing its session", name);
                }
                /* whatever is left of its session (servers of clients that hang on) goes too */
                unsigned long long now = gh_proc_starttime(g.pid);
                if (now == g.starttime || now == 0) /* not if the pid was reused meanwhile */
                        kill_session(g.pid);
                wait_gone(g.pid, g.starttime, 2000);
                /* MPS servers wind down after the daemon: give them a moment, then SIGKILL */
                for (size_t i = 0; i < nm; i++) {
                        if (wait_gone(members[i].pid, members[i].start, 2000))
                                continue;
                        gh_warn("MPS group '%s': process %d did not exit; killing it", name, (int) members[i].pid);
                        kill(members[i].pid, SIGKILL);
                        wait_gone(members[i].pid, members[i].start, 1000);
                }
        }
        return remove_group(dir, name, err);
}
