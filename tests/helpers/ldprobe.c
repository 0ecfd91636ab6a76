/* ldprobe: for each library name on stdin, dlopen() it in a child and print "NAME PATH" with the
 * file the dynamic loader picked, or "NAME -" when it found none.  Built into a test image (and
 * run there under chroot) to compare two ld.so.cache files by what the loader does with them. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
        char name[4096];

        while (fgets(name, sizeof(name), stdin) != NULL) {
                pid_t pid;
                name[strcspn(name, "\n")] = '\0';
                if (name[0] == '\0')
                        continue;
                fflush(stdout);
                pid = fork();
                if (pid == 0) {
                        struct link_map *lm = NULL;
                        void *h;
                        alarm(10);
                        h = dlopen(name, RTLD_LAZY | RTLD_LOCAL);
                        if (h != NULL && dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm != NULL)
                                printf("%s %s\n", name, lm->l_name);
                        else
                                printf("%s -\n", name);
                        fflush(stdout);
                        _exit(0);
                }
                if (pid < 0 || waitpid(pid, NULL, 0) < 0)
                        return 1;
        }
        return 0;
}
