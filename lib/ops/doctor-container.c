/* gpu-cli doctor's container checks: what the container asked for (the hook's own decision code),
 * and whether what gpu-hook would plan for it is really there: device nodes present and allowed by
 * its device cgroup, libraries mounted and found by its ld cache, /proc/driver/nvidia masked,
 * requirements met.  Everything in the container is reached through /proc/PID/root with the
 * in-root resolver. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capability.h"
#include "cgroup.h"
#include "cleanup.h"
#include "discover.h"
#include "doctor-internal.h"
#include "doctor-memory.h"
#include "doctor-mps.h"
#include "doctor-report.h"
#include "driver.h"
#include "env.h"
#include "oci.h"
#include "readfile.h"
#include "plan.h"
#include "request.h"
#include "require.h"
#include "rootfs.h"

#define ENVIRON_MAX (4u << 20)

/* The process's environment as a spec (when there is no bundle to read). */
static int spec_from_environ(pid_t pid, struct gh_oci_spec *spec, gh_error_t *err)
{
        _cleanup_free_ char *buf = NULL;
        char path[64];
        size_t len, n = 0;

        memset(spec, 0, sizeof(*spec));
        snprintf(path, sizeof(path), "/proc/%d/environ", (int) pid);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return gh_err(err, errno, "opening %s", path);
        if (gh_read_bounded(fd, ENVIRON_MAX, &buf, &len, path, err) < 0)
                return -1;
        for (size_t i = 0; i < len; i++)
                n += buf[i] == '\0';
        spec->env = calloc(n + 2, sizeof(char *));
        if (spec->env == NULL)
                return gh_err(err, ENOMEM, "reading %s", path);
        for (size_t i = 0; i < len;) {
                size_t l = strnlen(buf + i, len - i);
                if (l > 0 && (spec->env[spec->n_env] = strndup(buf + i, l)) != NULL)
                        spec->n_env++;
                i += l + 1;
        }
        return 0;
}

/* Opens the node in a child that joined the container's device cgroup: 0 allowed (the open
 * succeeded, or the driver refused it for another reason), EPERM denied by the cgroup. */
static int open_as_container(const struct gh_cgroup *cg, int crootfd, const char *dst)
{
        pid_t child;
        int status;

        fflush(NULL);
        child = fork();
        if (child < 0)
                return errno;
        if (child == 0) {
                char pid[16], fdpath[64];
                int procs = openat(cg->dirfd, "cgroup.procs", O_WRONLY | O_CLOEXEC);
                int n = snprintf(pid, sizeof(pid), "%d\n", (int) getpid());
                if (procs < 0 || write(procs, pid, (size_t) n) != n)
                        _exit(125);
                int node = gh_resolve(crootfd, dst, O_PATH, NULL);
                if (node < 0)
                        _exit(126);
                snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", node);
                int fd = open(fdpath, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
                _exit(fd >= 0 ? 0 : errno == EPERM ? 1 : 0);
        }
        while (waitpid(child, &status, 0) < 0 && errno == EINTR)
                ;
        if (!WIFEXITED(status))
                return EIO;
        return WEXITSTATUS(status) == 0 ? 0 : WEXITSTATUS(status) == 1 ? EPERM : EIO;
}

static void check_devices(const struct gh_plan *plan, int crootfd, pid_t pid, struct gh_doctor *d)
{
        char ev[512] = "", bad[256] = "";
        struct gh_cgroup cg = { .dirfd = -1 };
        _cleanup_error_ gh_error_t err = NULL;
        bool have_cg = gh_cgroup_find(pid, GH_CGROUP_AUTO, &cg, &err) == 0;
        size_t n = 0;

        for (size_t i = 0; i < plan->n; i++) {
                const struct gh_item *it = &plan->items[i];
                struct stat st;
                if (it->kind != GH_ITEM_DEVICE)
                        continue;
                _cleanup_close_ int fd = gh_resolve(crootfd, it->dst, O_PATH | O_NOFOLLOW, NULL);
                if (fd < 0 || fstat(fd, &st) < 0 || !S_ISCHR(st.st_mode) || st.st_rdev != it->rdev) {
                        if (!bad[0])
                                snprintf(bad, sizeof(bad), "%s", it->dst);
                        continue;
                }
                n++;
                if (have_cg && open_as_container(&cg, crootfd, it->dst) == EPERM) {
                        char cause[512];
                        snprintf(cause, sizeof(cause),
                                 "The container's device cgroup denies %s (c %u:%u): its rules were "
                                 "rewritten after it started, typically by systemd at a 'systemctl daemon-reload' "
                                 "(NVML: \"Unknown Error\").",
                                 it->dst, major(it->rdev), minor(it->rdev));
                        gh_doctor_add(
                                d, "device-cgroup", GH_CHECK_FAIL, cause,
                                "restart the container; to keep it from happening again create the /dev/char links "
                                "(see dev-char-links on the host)",
                                "open(%s) in the container's cgroup %s: EPERM", it->dst, cg.path);
                        gh_cgroup_close(&cg);
                        return;
                }
                snprintf(ev + strlen(ev), sizeof(ev) - strlen(ev), "%s%s", ev[0] ? ", " : "", it->dst);
        }
        if (bad[0]) {
                gh_doctor_add(
                        d, "device-nodes", GH_CHECK_FAIL,
                        "The container lacks the device nodes gpu-hook plans for it: the hook did not run, or failed.",
                        "check the hook's log (/var/log/gpu-hook.log) and the runtime's hook wiring (hooks.d, createRuntime)",
                        "%s is missing or not the driver's node", bad);
        } else {
                gh_doctor_add(d, "device-nodes", GH_CHECK_OK, NULL, NULL, "%s", ev);
                gh_doctor_add(d, "device-cgroup", GH_CHECK_OK, NULL, NULL,
                              have_cg ? "%zu node(s) open from the container's cgroup %s"
                                      : "%zu node(s); no device cgroup%s",
                              n, have_cg ? cg.path : "");
        }
        gh_cgroup_close(&cg);
}

static void check_libraries(const struct gh_plan *plan, int crootfd, struct gh_doctor *d)
{
        size_t n = 0;

        for (size_t i = 0; i < plan->n; i++) {
                const struct gh_item *it = &plan->items[i];
                if (it->role != GH_ROLE_LIBRARY)
                        continue;
                _cleanup_close_ int fd = gh_resolve(crootfd, it->dst, O_PATH, NULL);
                if (fd < 0) {
                        gh_doctor_add(
                                d, "libraries", GH_CHECK_FAIL,
                                "The driver libraries the container asked for are not mounted: the hook did not run, or "
                                "ran with other capabilities.",
                                "check the hook's log (/var/log/gpu-hook.log) and NVIDIA_DRIVER_CAPABILITIES",
                                "%s is missing", it->dst);
                        return;
                }
                n++;
        }
        gh_doctor_add(d, "libraries", GH_CHECK_OK, NULL, NULL, "%zu planned librar%s present", n, n == 1 ? "y" : "ies");
}

static void check_ldcache(const struct gh_plan *plan, unsigned caps, int crootfd, struct gh_doctor *d)
{
        const char *const want[] = { caps & GH_CAP_COMPUTE ? "libcuda.so.1" : NULL,
                                     caps & GH_CAP_UTILITY ? "libnvidia-ml.so.1" : NULL };
        char ev[512] = "";

        for (size_t i = 0; i < GH_ARRAY_SIZE(want); i++) {
                _cleanup_error_ gh_error_t err = NULL;
                char path[PATH_MAX], file[NAME_MAX + 1], cause[512];
                if (want[i] == NULL)
                        continue;
                if (gh_doctor_cache_lookup(crootfd, "/etc/ld.so.cache", want[i], path, sizeof(path), file, sizeof(file),
                                           &err) < 0) {
                        snprintf(cause, sizeof(cause),
                                 "The container's ld cache does not resolve %s, so programs cannot load it "
                                 "even if the file is there.",
                                 want[i]);
                        gh_doctor_add(
                                d, "ldcache", GH_CHECK_FAIL, cause,
                                "rerun the injection (gpu-cli configure --pid=PID ... ROOTFS writes the cache), or run ldconfig in the container",
                                "%s", err->msg);
                        return;
                }
                if (!gh_driver_name_has_version(file, plan->driver_version)) {
                        snprintf(cause, sizeof(cause),
                                 "%s resolves to %s, not the driver's %s: the image ships its own copy, "
                                 "which does not match the kernel module.",
                                 want[i], file, plan->driver_version);
                        gh_doctor_add(d, "ldcache", GH_CHECK_FAIL, cause, "remove the driver libraries from the image",
                                      "%s -> %s", want[i], path);
                        return;
                }
                snprintf(ev + strlen(ev), sizeof(ev) - strlen(ev), "%s%s -> %s", ev[0] ? ", " : "", want[i], file);
        }
        gh_doctor_add(d, "ldcache", GH_CHECK_OK, NULL, NULL, "%s",
                      ev[0] ? ev : "nothing to resolve for these capabilities");
}

static void check_proc_masked(pid_t pid, int crootfd, struct gh_doctor *d)
{
        char path[64], line[4096];
        bool masked = false;

        snprintf(path, sizeof(path), "/proc/%d/mountinfo", (int) pid);
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
                char mnt[4096];
                if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) == 1 &&
                    (strcmp(mnt, "/proc/driver/nvidia") == 0 || strcmp(mnt, "/proc/driver") == 0))
                        masked = true;
        }
        _cleanup_close_ int fd = gh_resolve(crootfd, "/proc/driver/nvidia", O_PATH, NULL);
        if (!masked && fd < 0)
                gh_doctor_add(d, "proc-masked", GH_CHECK_OK, NULL, NULL,
                              "the container has no /proc/driver/nvidia (the host's procfs shows no driver to hide)");
        else if (masked)
                gh_doctor_add(d, "proc-masked", GH_CHECK_OK, NULL, NULL,
                              "/proc/driver/nvidia is a separate (masking) mount in the container");
        else
                gh_doctor_add(
                        d, "proc-masked", GH_CHECK_WARN,
                        "The container sees the host's /proc/driver/nvidia: every GPU's details, not only its own.",
                        "let gpu-hook configure the container (it mounts a filtered copy there)",
                        "no mount at /proc/driver/nvidia in %s", path);
}

void gh_doctor_container(const struct gh_doctor_opts *o, pid_t pid, const char *bundle, struct gh_doctor *d)
{
        struct gh_oci_spec spec = { 0 };
        struct gh_env_decision dec = { 0 };
        _cleanup_request_ struct gh_request req = GH_REQUEST_INIT;
        struct gh_plan plan = { 0 };
        struct gh_layout layout;
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_close_ int crootfd = -1;
        char croot[64], devs[256], caps[128];

        memset(d, 0, sizeof(*d));
        snprintf(croot, sizeof(croot), "/proc/%d/root", (int) pid);
        if ((crootfd = gh_rootfs_open(croot, &err)) < 0) {
                gh_doctor_add(d, "container", GH_CHECK_FAIL, "The process is gone, or this is not run as root.",
                              "pass the PID of a running container process, as root", "%s", err->msg);
                return;
        }
        if ((bundle ? gh_oci_spec_load(bundle, &spec, &err) : spec_from_environ(pid, &spec, &err)) < 0 ||
            gh_env_decide(&spec, o->config, &dec, &err) < 0) {
                gh_doctor_add(d, "gpu-requested", GH_CHECK_FAIL, "What the container asks for cannot be read.",
                              "fix the container's NVIDIA_* environment", "%s", err->msg);
                goto out;
        }
        const char *nvd = gh_oci_getenv(spec.env, spec.n_env, "NVIDIA_VISIBLE_DEVICES");
        if (!dec.gpu_container) {
                gh_doctor_add(
                        d, "gpu-requested", GH_CHECK_FAIL,
                        nvd == NULL ? "The container asked for no GPU: NVIDIA_VISIBLE_DEVICES is not set (no --gpus)."
                                    : "The container asked for no GPU: NVIDIA_VISIBLE_DEVICES is 'void' or empty.",
                        "start it with --gpus all (Docker) or -e NVIDIA_VISIBLE_DEVICES=all",
                        "NVIDIA_VISIBLE_DEVICES=%s%s", nvd ? nvd : "(unset)",
                        dec.ignored_unprivileged ? " (ignored: unprivileged and the configuration refuses it)" : "");
                goto out;
        }
        gh_select_format(&dec.devices, devs, sizeof(devs));
        gh_capability_format(dec.capabilities, caps, sizeof(caps));
        gh_doctor_add(d, "gpu-requested", GH_CHECK_OK, NULL, NULL, "%s: devices %s, capabilities %s (%s)",
                      bundle ? "config.json" : "environment", devs, caps[0] ? caps : "none",
                      bundle ? bundle : "from /proc/PID/environ");
        gh_doctor_pod(o, pid, d);
        if (!(dec.capabilities & GH_CAP_UTILITY))
                gh_doctor_add(d, "utility", GH_CHECK_WARN,
                              "nvidia-smi and NVML are not injected: NVIDIA_DRIVER_CAPABILITIES lacks utility.",
                              "-e NVIDIA_DRIVER_CAPABILITIES=compute,utility", "capabilities %s",
                              caps[0] ? caps : "none");
        if (dec.mps_group != NULL)
                gh_doctor_mps_container(o, dec.mps_group, dec.mps_from_env, crootfd, d);
        gh_layout_detect(crootfd, &layout);
        if (gh_env_request(o->config, &dec, &req, &err) < 0 ||
            /* the mps-group check covers the group: plan the rest without it */
            (free(req.mps_group), req.mps_group = NULL, false) ||
            gh_plan_for_root(o->root, o->ldcache, NULL, &req, &layout, &plan, &err) < 0) {
                bool unmet = gh_error_kind(err) == GH_ERR_REQUIREMENT;
                gh_doctor_add(
                        d, "requirements", GH_CHECK_FAIL,
                        unmet ? "The image requires a newer CUDA (or another GPU) than this driver and GPU provide."
                              : "gpu-hook could not plan the injection for this container.",
                        unmet ? "upgrade the driver, or use an image built for this CUDA version "
                                "(NVIDIA_DISABLE_REQUIRE=1 skips the check at your own risk)"
                              : "fix what the message names",
                        "%s", err->msg);
                goto out;
        }
        gh_doctor_add(d, "requirements", GH_CHECK_OK, NULL, NULL, "%zu requirement(s) hold against driver %s",
                      req.nrequirements, plan.driver_version);
        check_devices(&plan, crootfd, pid, d);
        check_libraries(&plan, crootfd, d);
        check_ldcache(&plan, gh_request_caps(&req), crootfd, d);
        check_proc_masked(pid, crootfd, d);
out:
        gh_plan_free(&plan);
        gh_env_decision_free(&dec);
        gh_oci_spec_free(&spec);
}
