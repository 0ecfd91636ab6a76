/* gpu-cli setup dev-char-links: the /dev/char/MAJOR:MINOR links systemd needs to keep a container's
 * NVIDIA devices across `systemctl daemon-reload` (lib/ops/devchar.h). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cleanup.h"
#include "cli.h"
#include "devchar.h"
#include "setup.h"

static void usage(FILE *out)
{
        fprintf(out, "Usage: gpu-cli [--root=DIR] setup dev-char-links [--create-all] [--dry-run | --undo]\n"
                     "                                [--dev-char-path=DIR] [--driver-root=DIR] [--record=FILE]\n"
                     "\n"
                     "Makes a link DIR/MAJOR:MINOR -> /dev/NODE for each NVIDIA device node (/dev/nvidia*,\n"
                     "/dev/nvidia-caps/nvidia-*; not nvidia-fs, -nvswitch, -nvlink), as NVIDIA's `nvidia-ctk system\n"
                     "create-dev-char-symlinks` does.  With the systemd cgroup driver, a container started through\n"
                     "hooks.d or `docker run --gpus` keeps its GPUs across `systemctl daemon-reload` only when these\n"
                     "links exist.  Anything already at a link's path is left alone (a warning if it is not a link to\n"
                     "that node).\n"
                     "\n"
                     "  --create-all         every node the loaded driver can have, made yet or not: each GPU's\n"
                     "                       /dev/nvidiaN, nvidiactl, nvidia-modeset, nvidia-uvm(-tools), the MIG\n"
                     "                       capabilities (majors from /proc/devices); what the udev rule runs\n"
                     "  --dev-char-path=DIR  where the links go (default " GH_DEVCHAR_DEFAULT_DIR ")\n"
                     "  --driver-root=DIR    whose dev/ holds the nodes (default: --root, else /); the links name\n"
                     "                       DIR/dev/NODE\n"
                     "  --record=FILE        the links made, for --undo (default " GH_DEVCHAR_DEFAULT_RECORD ")\n"
                     "  --dry-run            say what would be made (or removed), change nothing\n"
                     "  --undo               remove the links made here that still point where they were made\n"
                     "\n"
                     "Exit status: 0 done (or nothing to do), 1 a link could not be made or something else is at its\n"
                     "path, 2 usage error.\n");
}

static int undo(const char *dev_char, const char *record, bool dry_run)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_devchar_undo u;
        size_t removed = 0;

        if (gh_devchar_undo(dev_char, record, dry_run, &u, &err) < 0) {
                fprintf(stderr, "gpu-cli: setup dev-char-links --undo: %s\n", err->msg);
                return GH_EXIT_FAILURE;
        }
        for (size_t i = 0; i < u.n; i++) {
                if (u.v[i].removed) {
                        printf("%s %s\n", dry_run ? "would remove" : "removed", u.v[i].path);
                        removed++;
                } else {
                        fprintf(stderr, "gpu-cli: setup dev-char-links --undo: %s left alone: %s\n", u.v[i].path,
                                u.v[i].kept);
                }
        }
        if (u.n == 0)
                printf("dev-char-links: no link of ours in %s\n", dev_char);
        gh_devchar_undo_free(&u);
        return GH_EXIT_OK;
}

int cli_setup_dev_char(int argc, char **argv, const struct cli_globals *g)
{
        static const struct option opts[] = {
                { "create-all", no_argument, NULL, 'a' },
                { "dev-char-path", required_argument, NULL, 'd' },
                { "driver-root", required_argument, NULL, 'r' },
                { "record", required_argument, NULL, 'R' },
                { "dry-run", no_argument, NULL, 'n' },
                { "undo", no_argument, NULL, 'u' },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        _cleanup_error_ gh_error_t err = NULL;
        const char *dev_char = GH_DEVCHAR_DEFAULT_DIR, *root = g->root ? g->root : "/",
                   *record = GH_DEVCHAR_DEFAULT_RECORD;
        bool create_all = false, dry_run = false, do_undo = false;
        struct gh_devchar_list list;
        size_t made = 0, left = 0;
        int c;

        while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
                switch (c) {
                case 'a': create_all = true; break;
                case 'd': dev_char = optarg; break;
                case 'r': root = optarg; break;
                case 'R': record = optarg; break;
                case 'n': dry_run = true; break;
                case 'u': do_undo = true; break;
                case 'h': usage(stdout); return GH_EXIT_OK;
                default: usage(stderr); return GH_EXIT_USAGE;
                }
        }
        if (optind != argc) {
                fprintf(stderr, "gpu-cli: setup dev-char-links: unexpected argument '%s'\n", argv[optind]);
                return GH_EXIT_USAGE;
        }
        if (dev_char[0] != '/' || record[0] != '/' || root[0] != '/') {
                fprintf(stderr, "gpu-cli: setup dev-char-links: --dev-char-path, --driver-root and --record take "
                                "absolute paths\n");
                return GH_EXIT_USAGE;
        }
        if (do_undo && create_all) {
                fprintf(stderr, "gpu-cli: setup dev-char-links: --undo removes what the record names; "
                                "--create-all is for making links\n");
                return GH_EXIT_USAGE;
        }
        if (do_undo)
                return undo(dev_char, record, dry_run);
        if (gh_devchar_plan(root, dev_char, create_all, &list, &err) < 0 ||
            (!dry_run && gh_devchar_create(dev_char, &list, record, &err) < 0)) {
                fprintf(stderr, "gpu-cli: setup dev-char-links: %s\n", err->msg);
                return GH_EXIT_FAILURE;
        }
        for (size_t i = 0; i < list.n; i++) {
                const struct gh_devchar_link *l = &list.v[i];
                if (dry_run && l->state == GH_DEVCHAR_MISSING) {
                        printf("would link %s -> %s\n", l->path, l->target);
                        made++;
                } else if (l->done == GH_DEVCHAR_MADE) {
                        printf("linked %s -> %s\n", l->path, l->target);
                        made++;
                } else if (l->done == GH_DEVCHAR_FAILED) {
                        fprintf(stderr, "gpu-cli: setup dev-char-links: cannot link %s -> %s: %s\n", l->path, l->target,
                                strerror(l->error));
                        left++;
                } else if (l->state == GH_DEVCHAR_OTHER) {
                        fprintf(stderr, "gpu-cli: setup dev-char-links: %s is %s, not a link to %s: left alone\n",
                                l->path, l->other, l->target);
                        left++;
                }
        }
        if (list.n == 0)
                printf("dev-char-links: no NVIDIA device node under %s%s\n", strcmp(root, "/") ? root : "",
                       create_all ? " (the driver lists none)" : "/dev");
        else if (made == 0 && left == 0)
                printf("dev-char-links: nothing to change (%zu link(s) in %s)\n", list.n, dev_char);
        gh_devchar_list_free(&list);
        return left ? GH_EXIT_FAILURE : GH_EXIT_OK;
}
