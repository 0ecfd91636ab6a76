/* Helpers shared by the C unit tests. */
#ifndef GH_TESTUTIL_H
#define GH_TESTUTIL_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs a printf-formatted shell command; returns its exit status (-1 when it did not exit). */
__attribute__((format(printf, 1, 2), unused)) static int sh(const char *fmt, ...)
{
        char cmd[8192];
        va_list ap;
        int st;

        va_start(ap, fmt);
        vsnprintf(cmd, sizeof(cmd), fmt, ap);
        va_end(ap);
        st = system(cmd);
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The standard output of a printf-formatted shell command, malloc'ed (NULL when it cannot run). */
__attribute__((format(printf, 1, 2), unused)) static char *sh_output(const char *fmt, ...)
{
        char cmd[8192], line[4096], *buf = NULL;
        size_t len = 0;
        FILE *out, *p;
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(cmd, sizeof(cmd), fmt, ap);
        va_end(ap);
        if ((p = popen(cmd, "r")) == NULL)
                return NULL;
        out = open_memstream(&buf, &len);
        while (out != NULL && fgets(line, sizeof(line), p))
                fputs(line, out);
        pclose(p);
        if (out != NULL)
                fclose(out);
        return buf;
}

/* Writes text to a printf-formatted path, creating its parent directories; aborts on failure (a test
 * whose fixture cannot be made must not go on). */
__attribute__((format(printf, 2, 3), unused)) static void put_file(const char *text, const char *fmt, ...)
{
        char path[4096];
        size_t len = strlen(text);
        va_list ap;
        int fd;

        va_start(ap, fmt);
        vsnprintf(path, sizeof(path), fmt, ap);
        va_end(ap);
        for (char *s = strchr(path + 1, '/'); s; s = strchr(s + 1, '/')) {
                *s = '\0';
                if (mkdir(path, 0755) < 0 && errno != EEXIST)
                        abort();
                *s = '/';
        }
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, text, len) != (ssize_t) len)
                abort();
        close(fd);
}

/* The open descriptors of this process. */
__attribute__((unused)) static int count_fds(void)
{
        DIR *d = opendir("/proc/self/fd");
        int n = 0;

        if (d == NULL)
                return -1;
        while (readdir(d) != NULL)
                n++;
        closedir(d);
        return n;
}

__attribute__((unused)) static int write_proc_file(const char *path, const char *text)
{
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        ssize_t n = fd < 0 ? -1 : write(fd, text, strlen(text));

        if (fd >= 0)
                close(fd);
        return n == (ssize_t) strlen(text) ? 0 : -1;
}

/* Enters a mount namespace of our own, with "/" made private so that nothing mounted here reaches
 * the host: as root a new mount namespace; otherwise a new user namespace (our uid and gid mapped
 * to 0) that owns a new mount namespace, which is enough for bind mounts, tmpfs and the new mount
 * API but not for device nodes.  Returns 0, or -1 with the reason in why (for a skip line). */
__attribute__((unused)) static int enter_mount_ns(char *why, size_t size)
{
        uid_t uid = geteuid();
        gid_t gid = getegid();
        char map[64];

        if (uid == 0) {
                if (unshare(CLONE_NEWNS) < 0)
                        return snprintf(why, size, "unshare(CLONE_NEWNS): %s", strerror(errno)), -1;
        } else {
                if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
                        return snprintf(why, size, "not root and no user namespace (unshare: %s)", strerror(errno)), -1;
                snprintf(map, sizeof(map), "0 %u 1", (unsigned) uid);
                if (write_proc_file("/proc/self/setgroups", "deny") < 0 ||
                    write_proc_file("/proc/self/uid_map", map) < 0)
                        return snprintf(why, size, "not root and cannot map our uid in a user namespace"), -1;
                snprintf(map, sizeof(map), "0 %u 1", (unsigned) gid);
                if (write_proc_file("/proc/self/gid_map", map) < 0)
                        return snprintf(why, size, "not root and cannot map our gid in a user namespace"), -1;
        }
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return snprintf(why, size, "making / private: %s", strerror(errno)), -1;
        return 0;
}

/* True when we entered a user namespace of our own (enter_mount_ns as non-root): device nodes
 * cannot be made or used there. */
__attribute__((unused)) static int in_user_ns(void)
{
        char line[128] = "";
        FILE *f = fopen("/proc/self/uid_map", "re");
        unsigned a = 0, b = 0, n = 0;

        if (f == NULL)
                return 0;
        if (fgets(line, sizeof(line), f) == NULL || sscanf(line, "%u %u %u", &a, &b, &n) != 3)
                n = 0;
        fclose(f);
        return !(a == 0 && b == 0 && n == 4294967295u);
}

#endif
