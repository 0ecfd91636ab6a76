/* The host's ldconfig, sealed in a memfd and run in a sandbox pivoted into the container rootfs.
 *
 * Process layout of gh_ldconfig_run():
 *   caller (container mount ns)  reads the child's output with a deadline, kills it on timeout
 *    └ setup child               new mount/pid/ipc/net/uts namespaces, mounts private, pivot_root
 *       └ ldconfig (pid 1)       drops everything, rlimits, seccomp, execveat(memfd)
 * The setup child stays outside the new pid namespace (unshare(CLONE_NEWPID) only affects its
 * children); when it dies its child gets SIGKILL, and the death of pid 1 ends the namespace. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "caps.h"
#include "cleanup.h"
#include "ldconfig.h"
#include "log.h"
#include "rootfs.h"
#include "syscalls.h"

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif
#ifndef F_SEAL_EXEC
#define F_SEAL_EXEC 0x0020
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef __NR_close_range
#define __NR_close_range 436
#endif
#ifndef SECCOMP_RET_KILL_PROCESS
#define SECCOMP_RET_KILL_PROCESS 0x80000000U
#endif

#if defined(__x86_64__)
#define GH_AUDIT_ARCH AUDIT_ARCH_X86_64
#define GH_ELF_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define GH_AUDIT_ARCH AUDIT_ARCH_AARCH64
#define GH_ELF_MACHINE EM_AARCH64
#else
#error "the ldconfig sandbox knows x86_64 and aarch64 only"
#endif

#define MAX_BINARY_SIZE (64 << 20)
#define MAX_LIBDIRS 256
#define EXIT_SETUP 126 /* the sandbox could not be built; the reason is on the output pipe */
#define EXIT_EXEC 127

static unsigned timeout_ms = GH_LDCONFIG_TIMEOUT_MS;

void gh_ldconfig_set_timeout(unsigned ms) { timeout_ms = ms ? ms : GH_LDCONFIG_TIMEOUT_MS; }

/* A dynamically linked ldconfig would load the image's ld.so and libc, i.e. run the image's
 * code; a script would need an interpreter from the image.  Only static ELF programs qualify. */
static int check_static_elf(int fd, const char *path, gh_error_t *err)
{
        Elf64_Ehdr eh;
        Elf64_Phdr ph;

        if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t) sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
                if (pread(fd, &eh, 2, 0) == 2 && memcmp(&eh, "#!", 2) == 0)
                        return gh_err_usage(err,
                                            "--ldconfig=@%s is a script: give the ELF program it runs "
                                            "(on Ubuntu @/sbin/ldconfig.real)",
                                            path);
                return gh_err_usage(err, "--ldconfig=@%s is not an ELF program: give the host's ldconfig binary", path);
        }
        if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != GH_ELF_MACHINE || eh.e_phentsize != sizeof(ph) ||
            eh.e_phnum > 256)
                return gh_err_usage(err, "--ldconfig=@%s is not a program for this machine", path);
        for (unsigned i = 0; i < eh.e_phnum; i++) {
                if (pread(fd, &ph, sizeof(ph), (off_t) (eh.e_phoff + i * sizeof(ph))) != (ssize_t) sizeof(ph))
                        return gh_err(err, 0, "--ldconfig=@%s: truncated ELF program headers", path);
                if (ph.p_type == PT_INTERP)
                        return gh_err_usage(err,
                                            "--ldconfig=@%s is dynamically linked and would load the image's "
                                            "libraries: give a statically linked ldconfig (Debian's /sbin/ldconfig, "
                                            "Ubuntu's /sbin/ldconfig.real)",
                                            path);
        }
        return 0;
}

static int copy_all(int in, int out, off_t size)
{
        off_t done = 0;
        while (done < size) {
                ssize_t n = sendfile(out, in, NULL, (size_t) (size - done));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return n < 0 ? -errno : -EIO;
                done += n;
        }
        return 0;
}

int gh_ldconfig_open(const char *spec, gh_error_t *err)
{
        _cleanup_close_ int fd = -1, mfd = -1;
        const char *path;
        struct stat st;
        int r;

        if (spec == NULL || spec[0] != '@')
                return gh_err_usage(err,
                                    "--ldconfig=%s: only the host's ldconfig runs, given as @/path "
                                    "(the image's ldconfig is never executed); use --ldconfig=@/sbin/ldconfig",
                                    spec ? spec : "");
        path = spec + 1;
        if (path[0] != '/')
                return gh_err_usage(err, "--ldconfig=%s: the host path must be absolute, e.g. @/sbin/ldconfig", spec);
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return gh_err(err, errno, "opening the host's ldconfig %s", path);
        if (fstat(fd, &st) < 0)
                return gh_err(err, errno, "inspecting the host's ldconfig %s", path);
        if (!S_ISREG(st.st_mode) || !(st.st_mode & 0111))
                return gh_err(err, 0, "--ldconfig=@%s is not an executable file", path);
        if (st.st_size > MAX_BINARY_SIZE)
                return gh_err(err, 0, "--ldconfig=@%s is larger than %d MiB: not an ldconfig", path,
                              MAX_BINARY_SIZE >> 20);
        if (check_static_elf(fd, path, err) < 0)
                return -1;

        mfd = memfd_create("ldconfig", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
        if (mfd < 0 && errno == EINVAL) /* before Linux 6.3 */
                mfd = memfd_create("ldconfig", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (mfd < 0)
                return gh_err(err, errno, "creating a memfd for %s", path);
        if (ftruncate(mfd, st.st_size) < 0)
                return gh_err(err, errno, "sizing the memfd for %s", path);
        r = copy_all(fd, mfd, st.st_size);
        if (r < 0)
                return gh_err(err, -r, "copying %s into a memfd", path);
        /* Executable by the unprivileged uid the sandbox may switch to, writable by no one. */
        if (fchmod(mfd, 0555) < 0)
                return gh_err(err, errno, "setting the mode of the memfd for %s", path);
        if (fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_EXEC | F_SEAL_SEAL) < 0 &&
            (errno != EINVAL || fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0))
                return gh_err(err, errno, "sealing the memfd holding %s", path);
        gh_debug("ldconfig: sealed %s (%lld bytes) in memfd %d", path, (long long) st.st_size, mfd);
        return TAKE_FD(mfd);
}

/* ---- the sandbox ------------------------------------------------------------------------- */

/* Syscalls of glibc's static ldconfig (strace -f of `ldconfig DIR...` with ld.so.conf includes,
 * stale links and an existing cache) plus what libc may call on error paths (abort, messages). */
static const int allowed_syscalls[] = {
        __NR_read,          __NR_write,        __NR_pread64,      __NR_readv,           __NR_writev,
        __NR_lseek,         __NR_close,        __NR_fstat,        __NR_newfstatat,      __NR_openat,
        __NR_getdents64,    __NR_mmap,         __NR_munmap,       __NR_mremap,          __NR_mprotect,
        __NR_madvise,       __NR_brk,          __NR_renameat,     __NR_unlinkat,        __NR_readlinkat,
        __NR_symlinkat,     __NR_mkdirat,      __NR_fchmod,       __NR_fchmodat,        __NR_fsync,
        __NR_fdatasync,     __NR_exit,         __NR_exit_group,   __NR_set_tid_address, __NR_set_robust_list,
        __NR_prlimit64,     __NR_getrandom,    __NR_faccessat,    __NR_getcwd,          __NR_chdir,
        __NR_fchdir,        __NR_futex,        __NR_rt_sigaction, __NR_rt_sigprocmask,  __NR_rt_sigreturn,
        __NR_sigaltstack,   __NR_getpid,       __NR_gettid,       __NR_tgkill,          __NR_uname,
        __NR_clock_gettime, __NR_gettimeofday, __NR_fcntl,        __NR_umask,           __NR_getuid,
        __NR_geteuid,       __NR_getgid,       __NR_getegid,
#ifdef __NR_statx
        __NR_statx,
#endif
#ifdef __NR_rseq
        __NR_rseq,
#endif
#ifdef __NR_renameat2
        __NR_renameat2,
#endif
#ifdef __NR_faccessat2
        __NR_faccessat2,
#endif
#ifdef __NR_arch_prctl
        __NR_arch_prctl,
#endif
#ifdef __NR_open
        __NR_open,          __NR_stat,         __NR_lstat,        __NR_getdents,        __NR_rename,
        __NR_unlink,        __NR_readlink,     __NR_symlink,      __NR_mkdir,           __NR_chmod,
        __NR_access,        __NR_time,
#endif
};

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ARG_LO(n) (offsetof(struct seccomp_data, args) + (n) * sizeof(uint64_t))
#define ARG_HI(n) (ARG_LO(n) + sizeof(uint32_t))
#else
#define ARG_HI(n) (offsetof(struct seccomp_data, args) + (n) * sizeof(uint64_t))
#define ARG_LO(n) (ARG_HI(n) + sizeof(uint32_t))
#endif

/* Allowlist filter: wrong architecture (or x32) kills; execveat is allowed only on the memfd with
 * AT_EMPTY_PATH (ldconfig can re-run itself, nothing else); ioctl answers ENOTTY (isatty()); any
 * syscall not listed kills the process. */
static int install_seccomp(int memfd)
{
        struct sock_filter f[24 + 2 * GH_ARRAY_SIZE(allowed_syscalls)];
        unsigned n = 0;

#define EMIT(x) (f[n++] = (struct sock_filter) x)
        EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
        EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, GH_AUDIT_ARCH, 1, 0));
        EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
        EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
#ifdef __x86_64__
        EMIT(BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000U, 0, 1)); /* x32 ABI */
        EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
#endif
        EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execveat, 0, 8));
        EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(0)));
        EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t) memfd, 0, 5));
        EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_HI(0)));
        EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 3));
        EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(4)));
        EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AT_EMPTY_PATH, 0, 1));
        EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
        EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
        EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 0, 1));
        EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOTTY));
        for (size_t i = 0; i < GH_ARRAY_SIZE(allowed_syscalls); i++) {
                EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t) allowed_syscalls[i], 0, 1));
                EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
        }
        EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
#undef EMIT
        struct sock_fprog prog = { .len = (unsigned short) n, .filter = f };
        return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
}

/* Reports a setup failure on the output pipe (stderr) and ends the child. */
__attribute__((noreturn)) static void child_fail(gh_error_t *err)
{
        dprintf(STDERR_FILENO, "%s\n", err && *err ? (*err)->msg : "ldconfig sandbox: unknown error");
        _exit(EXIT_SETUP);
}

/* Makes cwd (the rootfs in our new mount namespace) the root of a mount of its own, so that
 * pivot_root() accepts it, and leaves cwd on that mount.  Recursive, so libraries bind-mounted
 * into the rootfs are seen. */
static int bind_cwd_onto_itself(const char *host_path, const struct stat *root_st, gh_error_t *err)
{
        _cleanup_close_ int tree = gh_open_tree(AT_FDCWD, ".", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
        struct stat st;

        if (tree >= 0) {
                if (gh_move_mount(tree, "", AT_FDCWD, ".", MOVE_MOUNT_F_EMPTY_PATH) < 0)
                        return gh_err(err, errno, "ldconfig sandbox: attaching the rootfs bind mount");
                if (fchdir(tree) < 0)
                        return gh_err(err, errno, "ldconfig sandbox: entering the rootfs bind mount");
        } else {
                if (errno != ENOSYS)
                        return gh_err(err, errno, "ldconfig sandbox: cloning the rootfs mount");
                /* Legacy API: mount on "." then walk the host path again, as runc does; the
                 * path leads to the rootfs from the host side, which the container cannot
                 * change, and the inode is checked below. */
                if (mount(".", ".", NULL, MS_BIND | MS_REC, NULL) < 0)
                        return gh_err(err, errno, "ldconfig sandbox: bind-mounting the rootfs onto itself");
                if (chdir(host_path) < 0)
                        return gh_err(err, errno, "ldconfig sandbox: entering the rootfs bind mount %s", host_path);
        }
        if (stat(".", &st) < 0 || st.st_dev != root_st->st_dev || st.st_ino != root_st->st_ino)
                return gh_err(err, 0, "ldconfig sandbox: the rootfs changed under the bind mount; retry");
        return 0;
}

static int enter_rootfs(int rootfd, gh_error_t *err)
{
        _cleanup_free_ char *host_path = gh_fd_path(rootfd);
        struct stat root_st;

        if (fstat(rootfd, &root_st) < 0)
                return gh_err(err, errno, "ldconfig sandbox: inspecting the rootfs");
        /* unshare() moves our cwd into the new namespace's copy of its mount: that is how the
         * rootfs, opened in the old namespace, is found in the new one without a path. */
        if (fchdir(rootfd) < 0)
                return gh_err(err, errno, "ldconfig sandbox: entering the rootfs");
        if (unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWNET | CLONE_NEWUTS) < 0)
                return gh_err(err, errno, "ldconfig sandbox: creating namespaces");
        /* Nothing below may propagate to the container's (or the host's) mounts. */
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return gh_err(err, errno, "ldconfig sandbox: making mounts private");
        if (bind_cwd_onto_itself(host_path ? host_path : "", &root_st, err) < 0)
                return -1;
        if (syscall(SYS_pivot_root, ".", ".") < 0)
                return gh_err(err, errno, "ldconfig sandbox: pivot_root into the rootfs");
        if (umount2(".", MNT_DETACH) < 0)
                return gh_err(err, errno, "ldconfig sandbox: detaching the old root");
        if (chdir("/") < 0)
                return gh_err(err, errno, "ldconfig sandbox: chdir /");
        /* The runtime may have mounted the container's proc and sysfs in the rootfs already;
         * ldconfig needs neither, and /proc/PID/root of the container's init still leads to
         * the host at this stage. */
        (void) umount2("/proc", MNT_DETACH | UMOUNT_NOFOLLOW);
        (void) umount2("/sys", MNT_DETACH | UMOUNT_NOFOLLOW);
        return 0;
}

static int set_limits(gh_error_t *err)
{
        /* RLIMIT_AS is generous because ldconfig maps each library whole and CUDA images ship
         * libraries of more than 1 GiB; memory actually touched stays small. */
        static const struct {
                int resource;
                rlim_t value;
        } limits[] = {
                { RLIMIT_NOFILE, 256 }, { RLIMIT_AS, (rlim_t) 4 << 30 },
                { RLIMIT_CPU, 10 },     { RLIMIT_FSIZE, 64 << 20 },
                { RLIMIT_NPROC, 1 },    { RLIMIT_CORE, 0 },
                { RLIMIT_MEMLOCK, 0 },  { RLIMIT_MSGQUEUE, 0 },
                { RLIMIT_LOCKS, 64 },
        };
        for (size_t i = 0; i < GH_ARRAY_SIZE(limits); i++) {
                struct rlimit rl = { limits[i].value, limits[i].value };
                struct rlimit cur;
                if (getrlimit(limits[i].resource, &cur) == 0 && cur.rlim_max != RLIM_INFINITY &&
                    cur.rlim_max < rl.rlim_max)
                        rl.rlim_cur = rl.rlim_max = cur.rlim_max;
                if (setrlimit(limits[i].resource, &rl) < 0)
                        return gh_err(err, errno, "ldconfig sandbox: setting resource limit %d", limits[i].resource);
        }
        return 0;
}

__attribute__((noreturn)) static void run_ldconfig(int memfd, int outfd, uid_t uid, gid_t gid, const char *const *argv)
{
        static char *const envp[] = { NULL };
        _cleanup_error_ gh_error_t err = NULL;

        (void) prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if (dup2(outfd, STDOUT_FILENO) < 0 || dup2(outfd, STDERR_FILENO) < 0)
                _exit(EXIT_SETUP);
        close(STDIN_FILENO);
        if (syscall(__NR_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) < 0) {
                for (int fd = 3; fd < 4096; fd++)
                        (void) fcntl(fd, F_SETFD, FD_CLOEXEC);
        }
        if (gh_caps_drop_all_as(uid, gid, &err) < 0)
                child_fail(&err);
        /* A uid change clears the parent-death signal. */
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if (set_limits(&err) < 0)
                child_fail(&err);
        if (install_seccomp(memfd) < 0) {
                gh_err(&err, errno, "ldconfig sandbox: installing the seccomp filter");
                child_fail(&err);
        }
        syscall(__NR_execveat, memfd, "", argv, envp, AT_EMPTY_PATH);
        _exit(EXIT_EXEC);
}

__attribute__((noreturn)) static void setup_child(int memfd, int rootfd, int outfd, const char *const *argv)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct stat st;
        int status;
        pid_t pid;

        if (dup2(outfd, STDERR_FILENO) < 0)
                _exit(EXIT_SETUP);
        if (fstat(rootfd, &st) < 0) {
                gh_err(&err, errno, "ldconfig sandbox: inspecting the rootfs");
                child_fail(&err);
        }
        if (enter_rootfs(rootfd, &err) < 0)
                child_fail(&err);
        pid = fork();
        if (pid < 0) {
                gh_err(&err, errno, "ldconfig sandbox: fork");
                child_fail(&err);
        }
        if (pid == 0)
                run_ldconfig(memfd, outfd, st.st_uid, st.st_gid, argv);
        while (waitpid(pid, &status, 0) < 0) {
                if (errno != EINTR)
                        _exit(EXIT_SETUP);
        }
        _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

static long long now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Keeps the tail of the child's output (its last line goes into the error message). */
struct tail {
        char buf[2048];
        size_t len;
};

static void tail_add(struct tail *t, const char *data, size_t n)
{
        if (n >= sizeof(t->buf)) {
                data += n - sizeof(t->buf) + 1;
                n = sizeof(t->buf) - 1;
        }
        if (t->len + n >= sizeof(t->buf)) {
                size_t drop = t->len + n - sizeof(t->buf) + 1;
                memmove(t->buf, t->buf + drop, t->len - drop);
                t->len -= drop;
        }
        memcpy(t->buf + t->len, data, n);
        t->len += n;
        t->buf[t->len] = '\0';
}

static const char *tail_last_line(struct tail *t)
{
        char *nl;
        while (t->len > 0 && (t->buf[t->len - 1] == '\n' || t->buf[t->len - 1] == ' '))
                t->buf[--t->len] = '\0';
        nl = strrchr(t->buf, '\n');
        return nl ? nl + 1 : t->buf;
}

/* Reads the pipe until EOF (every writer gone) or the deadline.  Returns false on timeout. */
static bool drain(int fd, struct tail *t, long long deadline)
{
        char chunk[1024];
        for (;;) {
                long long left = deadline - now_ms();
                struct pollfd p = { .fd = fd, .events = POLLIN };
                ssize_t n;
                int r;

                if (left <= 0)
                        return false;
                r = poll(&p, 1, (int) left);
                if (r == 0)
                        return false;
                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        return true; /* cannot happen with a valid fd; let waitpid() decide */
                }
                n = read(fd, chunk, sizeof(chunk));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return true;
                tail_add(t, chunk, (size_t) n);
        }
}

int gh_ldconfig_run(int memfd, int rootfd, const char *const *libdirs, gh_error_t *err)
{
        const char *argv[MAX_LIBDIRS + 2];
        _cleanup_close_ int rd = -1, wr = -1;
        struct tail out = { .len = 0 };
        size_t argc = 0;
        int pipefd[2], status;
        bool finished;
        pid_t pid;

        argv[argc++] = "ldconfig";
        for (size_t i = 0; libdirs && libdirs[i]; i++) {
                if (libdirs[i][0] != '/' || strlen(libdirs[i]) >= PATH_MAX || strchr(libdirs[i], '\n'))
                        return gh_err(err, EINVAL, "running ldconfig: library directory '%s' is not an absolute path",
                                      libdirs[i]);
                if (argc > MAX_LIBDIRS)
                        return gh_err(err, E2BIG, "running ldconfig: more than %d library directories", MAX_LIBDIRS);
                argv[argc++] = libdirs[i];
        }
        argv[argc] = NULL;

        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return gh_err(err, errno, "running ldconfig: pipe");
        rd = pipefd[0];
        wr = pipefd[1];
        pid = fork();
        if (pid < 0)
                return gh_err(err, errno, "running ldconfig: fork");
        if (pid == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
                setup_child(memfd, rootfd, wr, argv);
        }
        close(TAKE_FD(wr));

        finished = drain(rd, &out, now_ms() + timeout_ms);
        if (!finished)
                kill(pid, SIGKILL); /* its child, pid 1 of the sandbox, follows (PDEATHSIG) */
        while (waitpid(pid, &status, 0) < 0) {
                if (errno != EINTR)
                        return gh_err(err, errno, "running ldconfig: waiting for the sandbox");
        }
        if (!finished) {
                gh_err(err, 0,
                       "running ldconfig in the container: killed after %u ms; check the image's library "
                       "directories or drop --ldconfig",
                       timeout_ms);
                return gh_err_code(err, ETIMEDOUT);
        }
        if (!WIFEXITED(status))
                return gh_err(err, 0, "running ldconfig in the container: sandbox killed by signal %d",
                              WTERMSIG(status));

        const char *last = tail_last_line(&out);
        if (out.len > 0)
                gh_debug("ldconfig output (tail): %s", out.buf);
        switch (WEXITSTATUS(status)) {
        case 0:
                if (*last)
                        gh_debug("ldconfig said: %s", last);
                return 0;
        case EXIT_SETUP:
                return gh_err(err, 0, "running ldconfig in the container: %s", *last ? last : "sandbox setup failed");
        case EXIT_EXEC: return gh_err(err, 0, "running ldconfig in the container: could not execute the sealed binary");
        case 128 + SIGSYS:
                return gh_err(err, 0,
                              "running ldconfig in the container: it made a system call the sandbox forbids "
                              "(seccomp); use the distribution's ldconfig or drop --ldconfig");
        default:
                if (WEXITSTATUS(status) > 128)
                        return gh_err(err, 0, "running ldconfig in the container: killed by signal %d%s%s",
                                      WEXITSTATUS(status) - 128, *last ? ": " : "", last);
                return gh_err(err, 0, "running ldconfig in the container: exit status %d%s%s", WEXITSTATUS(status),
                              *last ? ": " : "", last);
        }
}
