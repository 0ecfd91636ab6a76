/* gpu-cli doctor: ordered checks of the host's driver and wiring, or of one running container
 * against the plan gpu-hook would make for it.  Each check says ok, warn or fail, what it saw, and
 * for anything but ok the cause in one sentence and the fix as a command or a config line.
 * docs/doctor.md lists the checks and the symptoms they explain. */
#ifndef GH_DOCTOR_H
#define GH_DOCTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"
#include "hookconfig.h"
#include "mps.h"

enum gh_check_status { GH_CHECK_OK, GH_CHECK_WARN, GH_CHECK_FAIL };

/* A fix that is a gpu-cli command: the library says which command and for what; the front end
 * writes the command line in its own syntax (cli/doctor.c), followed by the check's fix text. */
enum gh_fix_command {
        GH_FIX_TEXT = 0,    /* no command: fix is the whole fix */
        GH_FIX_MPS_START,   /* start MPS group mps->name (on a GPU the user picks) */
        GH_FIX_MPS_RESTART, /* stop MPS group mps->name and start it again on its GPU with its limits */
};

struct gh_check {
        char *name; /* "driver", "device-nodes", ... (stable, for scripts) */
        enum gh_check_status status;
        char *evidence; /* what was seen */
        char *cause;    /* NULL when ok */
        char *fix;      /* NULL when ok (or, with a command, nothing to add to it) */
        enum gh_fix_command command;
        struct gh_mps_group *mps; /* the group the command is for */
        char *mps_dir;            /* where it lives; NULL: the default */
};

struct gh_doctor {
        struct gh_check *checks;
        size_t n;
};

enum gh_cgroup_manager { GH_MANAGER_AUTO, GH_MANAGER_SYSTEMD, GH_MANAGER_CGROUPFS };

struct gh_doctor_opts {
        const char *root;    /* driver root ("/") */
        const char *ldcache; /* NULL: etc/ld.so.cache under root */
        uid_t uid;           /* NVML service identity; (uid_t) -1: overflow */
        gid_t gid;
        const char *const *hooks_dirs;  /* NULL: gh_oci_hooks_dirs */
        const char *const *cdi_dirs;    /* NULL: gh_cdi_spec_dirs */
        const char *docker_config;      /* NULL: /etc/docker/daemon.json */
        enum gh_cgroup_manager manager; /* AUTO: systemd when /run/systemd/system exists */
        const struct gh_config *config; /* the hook's configuration (policy for the decision) */
        const char *mps_dir;            /* where MPS groups live; NULL: the config's mps.dir */
        const char *const *state_roots; /* extra runtime state directories (NULL-terminated, may be NULL) */
        const char *dev_char; /* where /dev/char links go; NULL: /dev/char (ROOT/dev/char under another --root) */
};

const char *gh_check_status_name(enum gh_check_status s);

/* Host checks.  Never fails as a whole: every problem is a check's result. */
void gh_doctor_host(const struct gh_doctor_opts *o, struct gh_doctor *out);

/* Checks of the container whose init (or any) process is pid.  bundle: its OCI bundle, whose
 * config.json decides what it asked for; NULL: the process's own environment does. */
void gh_doctor_container(const struct gh_doctor_opts *o, pid_t pid, const char *bundle, struct gh_doctor *out);

/* Whether the driver under root is loaded far enough to write a CDI spec: its version, the GPUs in
 * /proc/driver/nvidia/gpus, /dev/nvidiactl and each GPU's /dev/nvidiaN with their numbers, and
 * libnvidia-ml.so.1 of the module's version in the ld cache (ldcache: NULL for /etc/ld.so.cache).
 * false with the first thing missing in why. */
bool gh_doctor_driver_ready(const char *root, const char *ldcache, char *why, size_t size);

/* The worst status among the checks. */
enum gh_check_status gh_doctor_worst(const struct gh_doctor *d);

void gh_doctor_free(struct gh_doctor *d);

#endif
