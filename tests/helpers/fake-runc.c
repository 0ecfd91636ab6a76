/* fake-runc create ID: the process tree runc builds around a createContainer hook, without a
 * container, for tests of what the hook concludes from it (lib/ops/runc-state.c).
 *
 * This process (its command line ending in ID, like `runc create ... ID`) changes into
 * $FAKE_RUNC_BUNDLE and starts a child that changes into $FAKE_RUNC_ROOT and re-executes this
 * program as exactly `runc init`; that one runs $FAKE_RUNC_HOOK with the arguments in
 * $FAKE_RUNC_ARGS (separated by newlines) and $FAKE_RUNC_STATE on stdin, and exits with the hook's
 * status, which this process passes on. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int run(const char *path, char *const *argv, const char *dir, const char *in)
{
        int status;
        pid_t pid = fork();

        if (pid < 0)
                return perror("fork"), 125;
        if (pid == 0) {
                if (dir != NULL && chdir(dir) < 0) {
                        perror(dir);
                        _exit(125);
                }
                if (in != NULL) {
                        int fd = open(in, O_RDONLY | O_CLOEXEC);
                        if (fd < 0 || dup2(fd, 0) < 0) {
                                perror(in);
                                _exit(125);
                        }
                }
                execv(path, argv);
                perror(path);
                _exit(127);
        }
        if (waitpid(pid, &status, 0) < 0)
                return perror("waitpid"), 125;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static const char *need(const char *name)
{
        const char *v = getenv(name);
        if (v == NULL) {
                fprintf(stderr, "fake-runc: %s is not set\n", name);
                exit(125);
        }
        return v;
}

int main(int argc, char **argv)
{
        if (argc == 2 && strcmp(argv[1], "init") == 0) {
                char *args = strdup(need("FAKE_RUNC_ARGS")), *hook = strdup(need("FAKE_RUNC_HOOK"));
                char *v[256], *save = NULL;
                int n = 0;

                v[n++] = hook;
                for (char *a = strtok_r(args, "\n", &save); a != NULL && n < 255; a = strtok_r(NULL, "\n", &save))
                        v[n++] = a;
                v[n] = NULL;
                return run(hook, v, NULL, need("FAKE_RUNC_STATE"));
        }
        if (argc != 3 || strcmp(argv[1], "create") != 0) {
                fprintf(stderr, "usage: fake-runc create ID (see the source)\n");
                return 125;
        }
        if (chdir(need("FAKE_RUNC_BUNDLE")) < 0)
                return perror("bundle"), 125;
        {
                /* argv exactly "runc init", as runc init's */
                char *iv[] = { "runc", "init", NULL };
                char self[4096];
                ssize_t r = readlink("/proc/self/exe", self, sizeof(self) - 1);
                if (r <= 0)
                        return perror("/proc/self/exe"), 125;
                self[r] = '\0';
                return run(self, iv, need("FAKE_RUNC_ROOT"), NULL);
        }
}
