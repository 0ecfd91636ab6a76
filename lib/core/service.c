/* The driver service child: sandbox, then serve NVML over RPC; and its lifecycle in the parent. */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <poll.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "log.h"
#include "rpc.h"
#include "service.h"
#include "syscalls.h"

#define SERVICE_FD 3

static unsigned long read_overflow(const char *path)
{
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        unsigned long v;

        if (f == NULL || fscanf(f, "%lu", &v) != 1 || v == 0 || v > 0xfffffffeUL)
                return 65534;
        return v;
}

uid_t gh_overflow_uid(void) { return (uid_t) read_overflow("/proc/sys/kernel/overflowuid"); }

gid_t gh_overflow_gid(void) { return (gid_t) read_overflow("/proc/sys/kernel/overflowgid"); }

static bool parse_id(const char *s, size_t len, unsigned long *out)
{
        unsigned long v = 0;

        if (len == 0 || len > 10)
                return false;
        for (size_t i = 0; i < len; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return false;
                v = v * 10 + (unsigned long) (s[i] - '0');
        }
        if (v > 0xfffffffeUL) /* (uid_t) -1 means "no change" to the kernel */
                return false;
        *out = v;
        return true;
}

int gh_service_parse_user(const char *spec, uid_t *uid, gid_t *gid, gh_error_t *err)
{
        const char *colon = strchr(spec, ':');
        unsigned long u, g;

        if (!parse_id(spec, colon ? (size_t) (colon - spec) : strlen(spec), &u) ||
            (colon && !parse_id(colon + 1, strlen(colon + 1), &g)))
                return gh_err_usage(err, "bad --user '%s'; use numeric UID or UID:GID", spec);
        *uid = (uid_t) u;
        *gid = (gid_t) (colon ? g : u);
        return 0;
}

static bool is_host_root(int rootfd)
{
        struct stat a, b;
        return fstat(rootfd, &a) == 0 && stat("/", &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Everything up to (not including) dlopen.  why gets the reason on failure. */
static int sandbox(int rootfd, int sock, uid_t uid, gid_t gid, pid_t parent, char *why, size_t size)
{
        bool privileged = geteuid() == 0, host_root = is_host_root(rootfd);
        int nul, fd;
        cap_t none;

        if (fchdir(rootfd) < 0)
                return snprintf(why, size, "entering the driver root: %m"), -1;
        /* Only the socket survives, as fd 3; stdin/stdout point at /dev/null, stderr stays. */
        fd = fcntl(sock, F_DUPFD, 10);
        nul = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (fd < 0 || nul < 0 || dup2(nul, STDIN_FILENO) < 0 || dup2(nul, STDOUT_FILENO) < 0 ||
            dup2(fd, SERVICE_FD) < 0)
                return snprintf(why, size, "setting up the service's descriptors: %m"), -1;
        for (int i = SERVICE_FD + 1; i < 1024; i++)
                close(i); /* close_range() is newer than some kernels this runs on */
        /* Unprivileged callers can still use the host's own driver, unchrooted. */
        if (chroot(".") < 0 && (privileged || !host_root))
                return snprintf(why, size, "chroot into the driver root: %m; run as root"), -1;
        if (chdir("/") < 0)
                return snprintf(why, size, "chdir / in the driver root: %m"), -1;
        if (privileged) {
                for (int c = 0; prctl(PR_CAPBSET_READ, c, 0, 0, 0) >= 0; c++)
                        if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0)
                                return snprintf(why, size, "dropping capability %d from the bounding set: %m", c), -1;
                if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
                        return snprintf(why, size, "switching to uid %u gid %u: %m; check --user", (unsigned) uid,
                                        (unsigned) gid),
                               -1;
        }
        none = cap_init();
        if (none == NULL || cap_set_proc(none) < 0) {
                cap_free(none);
                return snprintf(why, size, "dropping capabilities: %m"), -1;
        }
        cap_free(none);
        prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return snprintf(why, size, "setting no_new_privs: %m"), -1;
        /* Set after the uid change: changing credentials clears the parent-death signal. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != parent)
                _exit(127);
        clearenv();
        return 0;
}

void gh_service_child(int rootfd, int sock, uid_t uid, gid_t gid, pid_t parent, bool cuda, const char *cuda_lib)
{
        char why[256] = "";

        /* The parent may die before the first check; the second check after the uid change covers it. */
        prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if (getppid() != parent)
                _exit(127);
        gh_log_close();
        signal(SIGPIPE, SIG_DFL);
        if (sandbox(rootfd, sock, uid, gid, parent, why, sizeof(why)) == 0) {
                if (cuda)
                        gh_rpc_cuda_load(cuda_lib, why, sizeof(why));
                else
                        gh_rpc_nvml_load(why, sizeof(why));
        }
        if (why[0] != '\0')
                gh_rpc_set_setup_error(why);
        gh_rpc_serve(SERVICE_FD);
        _exit(0);
}

/* Waits up to ms for the child to end by itself; returns true with *status when it did.  A pidfd
 * wakes us the moment it exits (the NVML shutdown takes a few ms); without one, poll in 1 ms steps. */
static bool wait_briefly(pid_t pid, int ms, int *status)
{
        int pfd = gh_pidfd_open(pid, 0);

        if (pfd >= 0) {
                struct pollfd p = { .fd = pfd, .events = POLLIN };
                int r;
                while ((r = poll(&p, 1, ms)) < 0 && errno == EINTR)
                        ;
                close(pfd);
                if (r <= 0)
                        return false;
                return waitpid(pid, status, WNOHANG) == pid;
        }
        for (int waited = 0; waited <= ms; waited++) {
                pid_t r = waitpid(pid, status, WNOHANG);
                if (r == pid || (r < 0 && errno != EINTR))
                        return r == pid;
                nanosleep(&(struct timespec) { .tv_nsec = 1000 * 1000 }, NULL);
        }
        return false;
}

static void stop_child(pid_t pid, bool failed, gh_error_t *err)
{
        bool timed_out = failed && *err != NULL && (*err)->code == ETIMEDOUT;
        int status = 0;

        /* After a lost connection, a child that already died says why (a crash); a hung one is
         * killed at once so the whole wait stays bounded by the RPC timeout. */
        if (!timed_out && wait_briefly(pid, failed ? 300 : 1000, &status)) {
                if (failed && WIFSIGNALED(status))
                        gh_err(err, 0, "libnvidia-ml crashed the NVML service (%s)", strsignal(WTERMSIG(status)));
                return;
        }
        kill(pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
}

static const char *helper; /* gh_service_set_helper */

void gh_service_set_helper(const char *path) { helper = path; }

/* The child's half in the helper program (a static parent): its descriptors kept across exec, the
 * same arguments on its command line.  Only on failure does this return to the caller, who then
 * answers the parent with the reason. */
static void exec_helper(int rootfd, int sock, uid_t uid, gid_t gid, pid_t parent, bool cuda, const char *cuda_lib,
                        char *why, size_t size)
{
        char a[5][64], *lib = NULL;
        char *argv[10];
        char *envp[] = { (char *) "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
        int n = 0;

        if (fcntl(rootfd, F_SETFD, 0) < 0 || fcntl(sock, F_SETFD, 0) < 0) {
                snprintf(why, size, "handing the driver service to %s: %m", helper);
                return;
        }
        snprintf(a[0], sizeof(a[0]), "--root-fd=%d", rootfd);
        snprintf(a[1], sizeof(a[1]), "--socket-fd=%d", sock);
        snprintf(a[2], sizeof(a[2]), "--uid=%u", (unsigned) uid);
        snprintf(a[3], sizeof(a[3]), "--gid=%u", (unsigned) gid);
        snprintf(a[4], sizeof(a[4]), "--parent=%d", (int) parent);
        argv[n++] = (char *) "gpu-cli";
        argv[n++] = (char *) "driver-service";
        for (int i = 0; i < 5; i++)
                argv[n++] = a[i];
        if (cuda) {
                if (asprintf(&lib, "--cuda=%s", cuda_lib ? cuda_lib : "") < 0) {
                        snprintf(why, size, "handing the driver service to %s: out of memory", helper);
                        return;
                }
                argv[n++] = lib;
        }
        argv[n] = NULL;
        execve(helper, argv, envp);
        snprintf(why, size, "running %s for the driver service: %m; check \"cli.path\"", helper);
        free(lib);
}

bool gh_service_can_load(void)
{
        static int known = -1;

        if (known < 0) {
                const ElfW(Phdr) *ph = (const ElfW(Phdr) *) getauxval(AT_PHDR);
                unsigned long n = getauxval(AT_PHNUM);
                known = 0;
                for (unsigned long i = 0; ph != NULL && i < n; i++)
                        if (ph[i].p_type == PT_INTERP)
                                known = 1;
        }
        return known == 1;
}

/* Forks the sandboxed child (NVML, or libcuda when cuda) and runs the client half on its socket. */
static int with_service(int rootfd, const struct gh_gpus_opts *opts, bool cuda, const char *cuda_lib,
                        struct gh_gpu_list *list, char *cuda_out, size_t cuda_size, gh_error_t *err)
{
        uid_t uid = opts->uid == (uid_t) -1 ? gh_overflow_uid() : opts->uid;
        gid_t gid = opts->gid == (gid_t) -1 ? gh_overflow_gid() : opts->gid;
        _cleanup_close_ int ours = -1, theirs = -1;
        int sv[2], r;
        pid_t parent = getpid(), pid;

        if (!gh_service_can_load() && helper == NULL)
                return gh_err(
                        err, ELIBACC,
                        "%s: this program is linked statically and loads no driver library; run gpu-cli, which can",
                        cuda ? "asking libcuda for the CUDA version" : "querying the driver through NVML");
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return gh_err(err, errno, "starting the NVML service: socketpair");
        ours = sv[0];
        theirs = sv[1];
        fflush(NULL); /* buffered output must not be written twice */
        pid = fork();
        if (pid < 0)
                return gh_err(err, errno, "starting the NVML service: fork");
        if (pid == 0) {
                close(ours);
                if (!gh_service_can_load()) {
                        /* A static program cannot dlopen the driver: the helper (gpu-cli) runs the
                         * child's part, sandbox included, from its first instruction. */
                        char why[256] = "";
                        exec_helper(rootfd, theirs, uid, gid, parent, cuda, cuda_lib, why, sizeof(why));
                        gh_rpc_set_setup_error(why);
                        gh_rpc_serve(theirs);
                        _exit(0);
                }
                gh_service_child(rootfd, theirs, uid, gid, parent, cuda, cuda_lib);
        }
        close(TAKE_FD(theirs));
        gh_debug("%s service: pid %d, uid %u, gid %u", cuda ? "libcuda" : "NVML", (int) pid, (unsigned) uid,
                 (unsigned) gid);
        /* A child that died before reading our request must give us EPIPE, not kill us with SIGPIPE. */
        struct sigaction ign = { .sa_handler = SIG_IGN }, old_pipe;
        sigaction(SIGPIPE, &ign, &old_pipe);
        r = cuda ? gh_rpc_fetch_cuda(ours, opts->timeout_ms, cuda_out, cuda_size, err)
                 : gh_rpc_fetch(ours, opts->timeout_ms, opts->with_usage, list, err);
        sigaction(SIGPIPE, &old_pipe, NULL);
        close(TAKE_FD(ours)); /* EOF tells a healthy child to exit */
        stop_child(pid, r < 0, err);
        if (r < 0)
                return gh_err_wrap(err,
                                   cuda ? "asking libcuda for the CUDA version" : "querying the driver through NVML");
        return 0;
}

int gh_service_cuda_version(int rootfd, const struct gh_gpus_opts *opts, const char *lib, char *cuda, size_t size,
                            gh_error_t *err)
{
        if (with_service(rootfd, opts, true, lib, NULL, cuda, size, err) < 0)
                return -1;
        gh_debug("CUDA version from libcuda (no NVML, no cuInit): %s", cuda);
        return 0;
}

int gh_service_query(int rootfd, const struct gh_gpus_opts *opts, struct gh_gpu_list *list, gh_error_t *err)
{
        memset(list, 0, sizeof(*list));
        if (with_service(rootfd, opts, false, NULL, list, NULL, 0, err) < 0)
                return -1;
        gh_debug("GPUs from the NVML service: %zu, driver %s, CUDA %s", list->n, list->driver_version,
                 list->cuda_version);
        return 0;
}
