/* timed-run: run a command and write what it cost, for the benchmarks (bench/common.sh).
 *
 *   timed-run [-t SECONDS] -o FILE -- CMD [ARGS...]
 *
 * Writes one line "WALL_US CPU_US USER_US SYS_US" to FILE: the wall-clock time from just before
 * fork to the end of wait4 (CLOCK_MONOTONIC), and the user + system time of CMD and of every
 * descendant it waited for (wait4's rusage; a container's hooks and its init are runc's children).
 * CPU time does not count the time spent waiting for a core, so it means something on a busy
 * machine where wall time does not.  stdin, stdout and stderr are CMD's.  -t: CMD is killed
 * (SIGKILL) after SECONDS.  Exit status: CMD's, 128+N when a signal N ended it, 124 on timeout,
 * 125 when timed-run itself failed. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pid_t child;
static volatile sig_atomic_t timed_out;

static void on_alarm(int sig)
{
        (void) sig;
        timed_out = 1;
        if (child > 0)
                kill(child, SIGKILL);
}

static long long us(const struct timeval *tv) { return (long long) tv->tv_sec * 1000000 + tv->tv_usec; }

int main(int argc, char **argv)
{
        const char *out = NULL;
        unsigned timeout = 0;
        struct timespec t0, t1;
        struct rusage ru;
        int c, status;
        FILE *f;

        while ((c = getopt(argc, argv, "+t:o:")) != -1) {
                switch (c) {
                case 't': timeout = (unsigned) strtoul(optarg, NULL, 10); break;
                case 'o': out = optarg; break;
                default: return 125;
                }
        }
        if (out == NULL || optind >= argc) {
                fprintf(stderr, "usage: timed-run [-t SECONDS] -o FILE -- CMD [ARGS...]\n");
                return 125;
        }
        signal(SIGALRM, on_alarm);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        child = fork();
        if (child < 0) {
                perror("timed-run: fork");
                return 125;
        }
        if (child == 0) {
                signal(SIGALRM, SIG_DFL);
                execvp(argv[optind], argv + optind);
                fprintf(stderr, "timed-run: %s: %s\n", argv[optind], strerror(errno));
                _exit(127);
        }
        if (timeout > 0)
                alarm(timeout);
        while (wait4(child, &status, 0, &ru) < 0) {
                if (errno != EINTR) {
                        perror("timed-run: wait4");
                        return 125;
                }
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        alarm(0);
        f = fopen(out, "w");
        if (f == NULL) {
                fprintf(stderr, "timed-run: %s: %s\n", out, strerror(errno));
                return 125;
        }
        fprintf(f, "%lld %lld %lld %lld\n",
                (long long) (t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000,
                us(&ru.ru_utime) + us(&ru.ru_stime), us(&ru.ru_utime), us(&ru.ru_stime));
        if (fclose(f) != 0)
                return 125;
        if (timed_out)
                return 124;
        if (WIFSIGNALED(status))
                return 128 + WTERMSIG(status);
        return WEXITSTATUS(status);
}
