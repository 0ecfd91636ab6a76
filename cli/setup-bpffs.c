/* gpu-cli setup bpffs: a bpf filesystem at /sys/fs/bpf where none is, as systemd mounts one at boot.
 * gpu-hook pins each device-cgroup program there (one per rule set, lib/core/cgroup-bpf.c), so a
 * GPU container started while no other of its rule set runs takes the kept program instead of
 * loading and verifying a new one.  Without a bpffs it keeps only the program's id, which lasts as
 * long as some cgroup holds the program (machines without systemd: containers in a VM, CI). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "cgroup.h"
#include "cleanup.h"
#include "cli.h"
#include "setup.h"

#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC 0xcafe4a11
#endif

#define BPFFS_DEFAULT "/sys/fs/bpf"
/* systemd's own for it: nosuid,nodev,noexec,relatime and only root may look inside. */
#define BPFFS_FLAGS (MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RELATIME)
#define BPFFS_OPTIONS "mode=0700"

static void usage(FILE *out)
{
        fprintf(out, "Usage: gpu-cli setup bpffs [--dry-run | --undo]\n"
                     "\n"
                     "Mounts a bpf filesystem at " BPFFS_DEFAULT " when none is there (nosuid,nodev,noexec,mode=0700,\n"
                     "as systemd mounts it at boot).  gpu-hook keeps each container's device-cgroup program pinned\n"
                     "there (" GH_CGROUP_BPF_PIN_DIR "), so the next GPU container of the same devices reuses it\n"
                     "instead of loading a new one (about half a millisecond per start).  The mount lasts until\n"
                     "reboot; for good, add to /etc/fstab:\n"
                     "  bpffs " BPFFS_DEFAULT " bpf nosuid,nodev,noexec,relatime,mode=700 0 0\n"
                     "\n"
                     "  --dry-run   say what would be done, change nothing\n"
                     "  --undo      unmount it again, if it holds nothing but gpu-hook's pins (those are removed)\n"
                     "\n"
                     "Exit status: 0 done (or nothing to do), 1 failure (nothing changed), 2 usage error.\n");
}

static bool is_bpffs(const char *path)
{
        struct statfs sf;
        return statfs(path, &sf) == 0 && (unsigned long) sf.f_type == (unsigned long) BPF_FS_MAGIC;
}

/* Whether the bpffs at path holds anything but our pin directory (and the two files a kernel with
 * CONFIG_BPF_PRELOAD puts in every bpffs). */
static int holds_others(const char *path, gh_error_t *err)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        const char *ours = strrchr(GH_CGROUP_BPF_PIN_DIR, '/') + 1;
        _cleanup_closedir_ DIR *dir = NULL;
        struct dirent *e;

        if (fd < 0 || (dir = fdopendir(fd)) == NULL)
                return gh_err(err, errno, "reading %s", path);
        fd = -1; /* the DIR owns it */
        while ((e = readdir(dir)) != NULL)
                if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 && strcmp(e->d_name, ours) != 0 &&
                    strcmp(e->d_name, "maps.debug") != 0 && strcmp(e->d_name, "progs.debug") != 0)
                        return 1;
        return 0;
}

static int undo(bool dry_run)
{
        _cleanup_error_ gh_error_t err = NULL;
        int others;

        if (!is_bpffs(BPFFS_DEFAULT)) {
                printf("bpffs: none at %s: nothing to change\n", BPFFS_DEFAULT);
                return GH_EXIT_OK;
        }
        if ((others = holds_others(BPFFS_DEFAULT, &err)) < 0)
                goto fail;
        if (others) {
                gh_err(&err, 0, "%s holds pins other than gpu-hook's; left mounted", BPFFS_DEFAULT);
                goto fail;
        }
        if (dry_run) {
                printf("would remove %s and unmount %s\n", GH_CGROUP_BPF_PIN_DIR, BPFFS_DEFAULT);
                return GH_EXIT_OK;
        }
        if (gh_cgroup_bpf_forget(&err) < 0)
                goto fail;
        if (umount2(BPFFS_DEFAULT, UMOUNT_NOFOLLOW) < 0) {
                gh_err(&err, errno, "unmounting %s", BPFFS_DEFAULT);
                goto fail;
        }
        printf("unmounted %s\n", BPFFS_DEFAULT);
        return GH_EXIT_OK;
fail:
        fprintf(stderr, "gpu-cli: setup bpffs --undo: %s\n", err->msg);
        return GH_EXIT_FAILURE;
}

int cli_setup_bpffs(int argc, char **argv, const struct cli_globals *g)
{
        static const struct option opts[] = {
                { "dry-run", no_argument, NULL, 'n' },
                { "undo", no_argument, NULL, 'u' },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        bool dry_run = false, do_undo = false;
        struct stat st;
        int c;

        (void) g;
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
                switch (c) {
                case 'n': dry_run = true; break;
                case 'u': do_undo = true; break;
                case 'h': usage(stdout); return GH_EXIT_OK;
                default: usage(stderr); return GH_EXIT_USAGE;
                }
        }
        if (optind != argc) {
                fprintf(stderr, "gpu-cli: setup bpffs: unexpected argument '%s'\n", argv[optind]);
                return GH_EXIT_USAGE;
        }
        if (do_undo)
                return undo(dry_run);
        if (is_bpffs(BPFFS_DEFAULT)) {
                printf("bpffs: already mounted at %s: nothing to change\n", BPFFS_DEFAULT);
                return GH_EXIT_OK;
        }
        if (lstat(BPFFS_DEFAULT, &st) < 0 || !S_ISDIR(st.st_mode)) {
                fprintf(stderr,
                        "gpu-cli: setup bpffs: %s is not a directory (a kernel without CONFIG_BPF_SYSCALL, or /sys "
                        "not mounted); nothing changed\n",
                        BPFFS_DEFAULT);
                return GH_EXIT_FAILURE;
        }
        if (dry_run) {
                printf("would mount bpffs at %s (%s)\n", BPFFS_DEFAULT, BPFFS_OPTIONS);
                return GH_EXIT_OK;
        }
        if (mount("bpffs", BPFFS_DEFAULT, "bpf", BPFFS_FLAGS, BPFFS_OPTIONS) < 0) {
                fprintf(stderr, "gpu-cli: setup bpffs: mounting bpffs at %s: %s%s\n", BPFFS_DEFAULT, strerror(errno),
                        errno == EPERM ? " (needs root: CAP_SYS_ADMIN in the host's mount namespace)" : "");
                return GH_EXIT_FAILURE;
        }
        printf("mounted bpffs at %s; it lasts until reboot (see --help for the /etc/fstab line)\n", BPFFS_DEFAULT);
        return GH_EXIT_OK;
}
