/* A fake nvidia-cuda-mps-control for tests (README.md): enough of the real one's behaviour for
 * gpu-cli's MPS groups to be tested without a GPU.
 *
 *   nvidia-cuda-mps-control -f | -d   the control daemon (foreground / background).  It serves
 *       $CUDA_MPS_PIPE_DIRECTORY/control (a unix socket here; the real one uses named pipes),
 *       appends every command it receives to $CUDA_MPS_LOG_DIRECTORY/commands.log, logs its start
 *       (pid, CUDA_VISIBLE_DEVICES, the device:inode of its /dev/shm) to control.log, and leaves
 *       a marker file /dev/shm/fake-mps-control.<pid>, so a test can tell which /dev/shm it saw.
 *   nvidia-cuda-mps-control            the client: sends each stdin line to the daemon and prints
 *       the answer.  "hold" keeps the connection open until the daemon quits: the daemon lists such
 *       connections (by their SO_PEERCRED pid) as clients of a server whose pid is its own.
 *
 * The file .fake-mps-mode beside the program changes the daemon: "die" (exits at once), "refuse-
 * limits" (answers set_* commands with an error), "ignore-quit" (stays after quit). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_HELD 64

static char mode[64] = "ok";

static void read_mode(void)
{
        char exe[PATH_MAX], path[PATH_MAX + 32];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        FILE *f;

        if (n <= 0)
                return;
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash)
                *slash = '\0';
        snprintf(path, sizeof(path), "%s/.fake-mps-mode", exe);
        f = fopen(path, "r");
        if (f) {
                if (fgets(mode, sizeof(mode), f))
                        mode[strcspn(mode, "\r\n")] = '\0';
                fclose(f);
        }
}

static int control_path(struct sockaddr_un *sa)
{
        const char *dir = getenv("CUDA_MPS_PIPE_DIRECTORY");
        memset(sa, 0, sizeof(*sa));
        sa->sun_family = AF_UNIX;
        return snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/control", dir ? dir : "/tmp/nvidia-mps") <
                               (int) sizeof(sa->sun_path)
                       ? 0
                       : -1;
}

static void log_line(const char *file, const char *fmt, const char *arg)
{
        const char *dir = getenv("CUDA_MPS_LOG_DIRECTORY");
        char path[PATH_MAX];
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", dir ? dir : "/var/log/nvidia-mps", file);
        f = fopen(path, "a");
        if (f) {
                fprintf(f, fmt, arg);
                fputc('\n', f);
                fclose(f);
        }
}

static int client(void)
{
        struct sockaddr_un sa;
        char line[512], buf[4096];

        if (control_path(&sa) < 0)
                return 1;
        while (fgets(line, sizeof(line), stdin)) {
                int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                ssize_t n;
                if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                        fprintf(stderr, "Cannot find MPS control daemon process\n");
                        return 1;
                }
                if (write(fd, line, strlen(line)) < 0)
                        return 1;
                if (strncmp(line, "hold", 4) != 0)
                        shutdown(fd, SHUT_WR);
                while ((n = read(fd, buf, sizeof(buf))) > 0)
                        fwrite(buf, 1, (size_t) n, stdout);
                fflush(stdout);
                close(fd);
        }
        return 0;
}

struct held {
        int fd;
        pid_t pid;
};

static int daemon_main(int background)
{
        struct sockaddr_un sa;
        struct held held[MAX_HELD];
        size_t nheld = 0;
        char marker[64], info[512];
        struct stat st;
        int lfd;

        read_mode();
        if (strcmp(mode, "die") == 0) {
                fprintf(stderr, "fake nvidia-cuda-mps-control: told to die (.fake-mps-mode)\n");
                return 1;
        }
        if (control_path(&sa) < 0)
                return 1;
        if (background) {
                pid_t p = fork();
                if (p != 0)
                        return p < 0;
                setsid();
        }
        signal(SIGPIPE, SIG_IGN);
        /* the marker first: once the socket exists, gpu-cli considers the daemon started */
        snprintf(marker, sizeof(marker), "/dev/shm/fake-mps-control.%d", (int) getpid());
        int m = open(marker, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (m >= 0)
                close(m);
        unlink(sa.sun_path);
        lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (lfd < 0 || bind(lfd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || listen(lfd, 16) < 0) {
                fprintf(stderr, "fake nvidia-cuda-mps-control: cannot serve %s: %m\n", sa.sun_path);
                return 1;
        }
        if (stat("/dev/shm", &st) < 0)
                memset(&st, 0, sizeof(st));
        snprintf(info, sizeof(info), "start pid=%d visible=%s shm=%lu:%lu", (int) getpid(),
                 getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "(unset)", (unsigned long) st.st_dev,
                 (unsigned long) st.st_ino);
        log_line("control.log", "%s", info);
        for (;;) {
                struct pollfd p[MAX_HELD + 1];
                p[0] = (struct pollfd) { .fd = lfd, .events = POLLIN };
                for (size_t i = 0; i < nheld; i++)
                        p[i + 1] = (struct pollfd) { .fd = held[i].fd, .events = POLLIN };
                if (poll(p, nheld + 1, -1) < 0)
                        continue;
                for (size_t i = nheld; i-- > 0;) {
                        if (p[i + 1].revents == 0)
                                continue;
                        close(held[i].fd); /* a held client went away */
                        held[i] = held[--nheld];
                }
                if (!(p[0].revents & POLLIN))
                        continue;
                int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
                char line[512], reply[4096] = "";
                ssize_t n;
                size_t len = 0;
                if (c < 0)
                        continue;
                while (len < sizeof(line) - 1 && memchr(line, '\n', len) == NULL &&
                       (n = read(c, line + len, sizeof(line) - 1 - len)) > 0)
                        len += (size_t) n;
                line[len] = '\0';
                line[strcspn(line, "\r\n")] = '\0';
                log_line("commands.log", "%s", line);
                if (strcmp(line, "quit") == 0) {
                        close(c);
                        if (strcmp(mode, "ignore-quit") == 0)
                                continue;
                        unlink(sa.sun_path);
                        unlink(marker);
                        log_line("control.log", "%s", "quit");
                        return 0;
                }
                if (strcmp(line, "hold") == 0) {
                        struct ucred cred;
                        socklen_t sl = sizeof(cred);
                        if (nheld < MAX_HELD && getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &sl) == 0) {
                                held[nheld++] = (struct held) { .fd = c, .pid = cred.pid };
                                continue; /* stays open: a connected client */
                        }
                } else if (strncmp(line, "set_", 4) == 0) {
                        if (strcmp(mode, "refuse-limits") == 0)
                                snprintf(reply, sizeof(reply), "Error: invalid value\n");
                        else if (strncmp(line, "set_default_active_thread_percentage ", 37) == 0)
                                snprintf(reply, sizeof(reply), "%s.0\n", line + 37);
                } else if (strcmp(line, "get_server_list") == 0) {
                        if (nheld)
                                snprintf(reply, sizeof(reply), "%d\n", (int) getpid());
                } else if (strncmp(line, "get_client_list ", 16) == 0) {
                        if (atoi(line + 16) == (int) getpid())
                                for (size_t i = 0; i < nheld; i++)
                                        snprintf(reply + strlen(reply), sizeof(reply) - strlen(reply), "%d\n",
                                                 (int) held[i].pid);
                } else {
                        snprintf(reply, sizeof(reply), "Unrecognized command: %s\n", line);
                }
                (void) !write(c, reply, strlen(reply)); /* a client that went away is no matter */
                close(c);
        }
}

int main(int argc, char **argv)
{
        if (argc > 1 && (strcmp(argv[1], "-f") == 0 || strcmp(argv[1], "-d") == 0))
                return daemon_main(strcmp(argv[1], "-d") == 0);
        if (argc > 1) {
                fprintf(stderr, "usage: nvidia-cuda-mps-control [-d|-f]\n");
                return 2;
        }
        return client();
}
