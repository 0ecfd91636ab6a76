/* bpf-progs [PIN_DIR]: how many cgroup device programs the kernel holds, for the soak's "nothing
 * left behind" check where bpftool is not installed (the GPU machine).  Prints "N", or "N+P pinned"
 * when P of them are pinned in PIN_DIR (default /sys/fs/bpf/gpu-hook: gpu-hook's programs kept for
 * reuse, a cache and not a leak), the same words as the soak's bpftool path.  Exit 1 when the
 * kernel's program list cannot be read (no CAP_SYS_ADMIN, no bpf system call). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_PINS 256

static int sys_bpf(int cmd, union bpf_attr *a) { return (int) syscall(SYS_bpf, cmd, a, sizeof(*a)); }

/* The id and type of the program behind fd; -1 when it is not a program. */
static int prog_info(int fd, uint32_t *id, uint32_t *type)
{
        struct bpf_prog_info info;
        union bpf_attr a;

        memset(&info, 0, sizeof(info));
        memset(&a, 0, sizeof(a));
        a.info.bpf_fd = (uint32_t) fd;
        a.info.info_len = sizeof(info);
        a.info.info = (uint64_t) (uintptr_t) &info;
        if (sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &a) < 0)
                return -1;
        *id = info.id;
        *type = info.type;
        return 0;
}

/* The ids of the device programs pinned directly in dir (gpu-hook pins them flat). */
static size_t pinned_ids(const char *dir, uint32_t *ids, size_t max)
{
        DIR *d = opendir(dir);
        struct dirent *e;
        size_t n = 0;

        if (d == NULL)
                return 0;
        while ((e = readdir(d)) != NULL && n < max) {
                char path[4096];
                union bpf_attr a;
                uint32_t id, type;
                int fd;

                if (e->d_name[0] == '.')
                        continue;
                snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
                memset(&a, 0, sizeof(a));
                a.pathname = (uint64_t) (uintptr_t) path;
                fd = sys_bpf(BPF_OBJ_GET, &a);
                if (fd < 0)
                        continue;
                if (prog_info(fd, &id, &type) == 0 && type == BPF_PROG_TYPE_CGROUP_DEVICE)
                        ids[n++] = id;
                close(fd);
        }
        closedir(d);
        return n;
}

int main(int argc, char **argv)
{
        const char *pins = argc > 1 ? argv[1] : "/sys/fs/bpf/gpu-hook";
        uint32_t ids[MAX_PINS], next = 0;
        size_t npins = pinned_ids(pins, ids, MAX_PINS);
        unsigned long total = 0, ours = 0;

        for (;;) {
                union bpf_attr a;
                uint32_t id, type;
                int fd;

                memset(&a, 0, sizeof(a));
                a.start_id = next;
                if (sys_bpf(BPF_PROG_GET_NEXT_ID, &a) < 0) {
                        if (errno == ENOENT)
                                break;
                        fprintf(stderr, "bpf-progs: listing the kernel's BPF programs: %s (run as root)\n",
                                strerror(errno));
                        return 1;
                }
                next = a.next_id;
                memset(&a, 0, sizeof(a));
                a.prog_id = next;
                fd = sys_bpf(BPF_PROG_GET_FD_BY_ID, &a);
                if (fd < 0)
                        continue; /* gone between the two calls */
                if (prog_info(fd, &id, &type) == 0 && type == BPF_PROG_TYPE_CGROUP_DEVICE) {
                        total++;
                        for (size_t i = 0; i < npins; i++)
                                if (ids[i] == id) {
                                        ours++;
                                        break;
                                }
                }
                close(fd);
        }
        if (ours > 0)
                printf("%lu+%lu pinned\n", total - ours, ours);
        else
                printf("%lu\n", total);
        return 0;
}
