/* /dev/char/MAJOR:MINOR links for the NVIDIA device nodes (gpu-cli setup dev-char-links and doctor's
 * dev-char-links check; docs/engines.md, "Device access that survives daemon-reload").
 *
 * systemd keeps a unit's device allow list as paths; a runtime with the systemd cgroup driver
 * names each device it allows as /dev/char/MAJOR:MINOR.  At every `systemctl daemon-reload`
 * systemd rebuilds the rules from those paths, and a path that does not exist drops out: the
 * running container loses the device (NVML: "Unknown Error").  udev makes such links for the nodes
 * it creates; NVIDIA's nodes are made by nvidia-modprobe or the driver installer, not by udev, so
 * they have none unless something makes them.
 *
 * The links made are NVIDIA's `nvidia-ctk system create-dev-char-symlinks` links: for every
 * character device DRIVER_ROOT/dev/nvidia* and DRIVER_ROOT/dev/nvidia-caps/nvidia-* (nvidia-fs*,
 * nvidia-nvswitch* and nvidia-nvlink* excepted) a link DEV_CHAR/MAJOR:MINOR whose target is the
 * node's absolute path; with create_all, every node the loaded driver can have whether made yet or
 * not: /dev/nvidiaN per GPU, nvidiactl, nvidia-modeset, nvidia-uvm and -uvm-tools (when the module
 * is loaded) and the MIG capability nodes, with the majors of DRIVER_ROOT/proc/devices.
 *
 * Links made are written to a record (default /run/gpu-hook/dev-char-links, "LINK<TAB>TARGET"
 * lines; /run goes at reboot as /dev does), so that undo removes only links made here and still
 * pointing where they were made.  Anything else at a link's path is left alone. */
#ifndef GH_DEVCHAR_H
#define GH_DEVCHAR_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define GH_DEVCHAR_DEFAULT_DIR "/dev/char"
#define GH_DEVCHAR_DEFAULT_RECORD "/run/gpu-hook/dev-char-links"

enum gh_devchar_state {
        GH_DEVCHAR_MISSING, /* nothing at the link's path */
        GH_DEVCHAR_OK,      /* a link to the node (ours, udev's, NVIDIA's) or the node itself */
        GH_DEVCHAR_OTHER,   /* something else: left alone */
};

enum gh_devchar_done { GH_DEVCHAR_NOTHING, GH_DEVCHAR_MADE, GH_DEVCHAR_FAILED };

struct gh_devchar_link {
        char path[PATH_MAX];   /* DEV_CHAR/MAJOR:MINOR */
        char target[PATH_MAX]; /* DRIVER_ROOT/dev/NAME */
        unsigned major, minor;
        enum gh_devchar_state state;
        char other[PATH_MAX + 32]; /* OTHER: what is there ("a directory", "a link to X") */
        enum gh_devchar_done done;
        int error; /* FAILED: errno */
};

struct gh_devchar_list {
        struct gh_devchar_link *v;
        size_t n;
};

/* The links the driver under driver_root wants in dev_char, each with what is there now. */
int gh_devchar_plan(const char *driver_root, const char *dev_char, bool create_all, struct gh_devchar_list *out,
                    gh_error_t *err);

/* Makes the MISSING links (dev_char is created 0755 when missing) and adds them to the record.
 * Sets each link's done.  Fails only when the record or dev_char cannot be used. */
int gh_devchar_create(const char *dev_char, struct gh_devchar_list *list, const char *record, gh_error_t *err);

struct gh_devchar_undo_entry {
        char path[PATH_MAX], target[PATH_MAX];
        bool removed;             /* it was our link: removed (or removing it is what dry_run would do) */
        char kept[PATH_MAX + 32]; /* not removed: why (it was replaced, it is gone) */
};

struct gh_devchar_undo {
        struct gh_devchar_undo_entry *v;
        size_t n;
};

/* Removes the recorded links under dev_char that still point where they were made and drops
 * every recorded entry under dev_char from the record (links of other directories stay).
 * dry_run: changes nothing, says what it would do. */
int gh_devchar_undo(const char *dev_char, const char *record, bool dry_run, struct gh_devchar_undo *out,
                    gh_error_t *err);

void gh_devchar_list_free(struct gh_devchar_list *l);
void gh_devchar_undo_free(struct gh_devchar_undo *u);

#endif
