#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "caps.h"
#include "cdi-hook.h"
#include "cleanup.h"
#include "compat.h"
#include "config.h" /* the build's: GPUHOOK_DEFAULT_CONFIG */
#include "devices.h"
#include "discover.h"
#include "file.h"
#include "gpus.h"
#include "hookconfig.h"
#include "ldcache.h"
#include "ldscan.h"
#include "log.h"
#include "oci.h"
#include "plan.h"
#include "readfile.h"
#include "rootfs.h"
#include "runc-state.h"

int gh_cdi_pair_parse(const char *opt, char *arg, bool b_abs, struct gh_cdi_pair *out, gh_error_t *err)
{
        char *sep = strstr(arg, "::");

        if (sep == NULL || sep == arg || sep[2] == '\0' || (b_abs && sep[2] != '/'))
                return gh_err_usage(err, "invalid --%s '%s': write it as %s", opt, arg,
                                    b_abs ? "NAME::/ABSOLUTE/PATH" : "A::B");
        *sep = '\0';
        out->a = arg;
        out->b = sep + 2;
        return 0;
}

static bool same_ns(int dirfd, const char *path, const struct stat *self)
{
        struct stat st;
        return fstatat(dirfd, path, &st, 0) == 0 && st.st_dev == self->st_dev && st.st_ino == self->st_ino;
}

/* A createContainer hook runs in the container's mount namespace, before pivot_root, after the
 * runtime mounted the container's /proc.  Anywhere else (a createRuntime or prestart hook, a
 * shell) its mounts would be made in the host's namespace and its files written through the
 * host's view of the rootfs: refuse.  Two facts prove where we are: ROOTFS/proc, resolved in the
 * root, is a procfs (in the host's namespace it is the image's empty directory), and the
 * container's init shares our mount namespace.  The state's pid is that init, numbered in the
 * container's pid namespace (runc: 1) or the runtime's: it is looked up in that procfs, then in
 * ours.  crun passes no pid (0) to these hooks: then the init is pid 1 of that procfs. */
static int check_container_namespace(pid_t pid, int rootfd, const char *rootfs, gh_error_t *err)
{
        static const char where[] =
                "gpu-cli cdi-hook must run as a createContainer hook (the CDI spec's hookName), not createRuntime, prestart or by hand";
        _cleanup_error_ gh_error_t e = NULL;
        _cleanup_close_ int cproc = -1;
        struct stat self, root, fs;
        struct statfs sfs;
        char path[64];

        if (stat("/", &root) < 0 || fstat(rootfd, &fs) < 0)
                return gh_err(err, errno, "looking at the container root %s", rootfs);
        if (root.st_dev == fs.st_dev && root.st_ino == fs.st_ino)
                return gh_err(err, EINVAL, "the container root %s is our own /: %s", rootfs, where);
        if (stat("/proc/self/ns/mnt", &self) < 0)
                return gh_err(err, errno, "reading our mount namespace");
        cproc = gh_resolve(rootfd, "/proc", O_RDONLY | O_DIRECTORY, &e);
        if (cproc < 0 || fstatfs(cproc, &sfs) < 0 || sfs.f_type != PROC_SUPER_MAGIC)
                return gh_err(err, EPERM, "not in the container's mount namespace (its /proc is not mounted here): %s",
                              where);
        snprintf(path, sizeof(path), "%d/ns/mnt", pid > 0 ? (int) pid : 1);
        if (same_ns(cproc, path, &self))
                return 0;
        snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int) pid);
        if (pid > 0 && same_ns(AT_FDCWD, path, &self))
                return 0;
        return gh_err(err, EPERM, "not in the container's mount namespace: %s", where);
}

bool gh_cdi_gpu_node(const struct gh_oci_device *d)
{
        const char *n = d->path;
        return d->type == 'c' && d->major == GH_NVIDIA_MAJOR && d->minor >= 0 && d->minor < GH_NVIDIA_MODESET_MINOR &&
               strncmp(n, "/dev/nvidia", 11) == 0 && n[11] != '\0' && strspn(n + 11, "0123456789") == strlen(n + 11);
}

/* Their /proc/driver/nvidia/gpus entries are shown in the container, the others are not. */
static int plan_proc_gpus(struct gh_plan *plan, const struct gh_cdi_hook_opts *o, int droot,
                          const struct gh_oci_spec *spec, gh_error_t *err)
{
        _cleanup_gpu_list_ struct gh_gpu_list gpus = { 0 };
        bool any = false;

        for (size_t i = 0; i < spec->n_devices; i++)
                any |= spec->devices[i].type == 'c' && spec->devices[i].major == GH_NVIDIA_MAJOR &&
                       spec->devices[i].minor < GH_NVIDIA_MODESET_MINOR;
        if (!any)
                return 0;
        /* Which bus id each device minor is: the driver-state cache knows while its fingerprint
         * holds (the GPUs' proc entries are in it); else each GPU's proc `information`, which the
         * driver answers by asking the GPU (0.18 ms a GPU on an H200). */
        struct gh_gpus_opts go = { .state_file = o->cache_file, .cache = o->cache };
        if ((o->cache == NULL || o->cache_file == NULL || !gh_gpus_load_cached(droot, &go, &gpus)) &&
            gh_gpus_fast(droot, &gpus, err) < 0)
                return gh_err_wrap(err, "listing the GPUs for /proc/driver/nvidia/gpus");
        for (size_t g = 0; g < gpus.n; g++)
                for (size_t i = 0; i < spec->n_devices; i++) {
                        const struct gh_oci_device *d = &spec->devices[i];
                        if (d->type == 'c' && d->major == GH_NVIDIA_MAJOR &&
                            d->minor == (long long) gpus.gpus[g].minor) {
                                if (gh_plan_add_proc_gpu(plan, gpus.gpus[g].busid, err) < 0)
                                        return -1;
                                break;
                        }
                }
        return 0;
}

/* The folders' libraries (update-ldcache --folder), as ldconfig would index those directories: one
 * entry per SONAME, the first folder winning. */
/* "/a/./b//../c" -> "/a/c", ".." stopping at "/": the path a loader in the container would use
 * (the in-root resolver reads it the same way; the ld cache entries then carry a plain path). */
static char *lexical_path(const char *p)
{
        char *out = malloc(strlen(p) + 2);
        size_t n = 0;

        if (out == NULL)
                return NULL;
        out[n++] = '/';
        while (*p) {
                size_t len;
                while (*p == '/')
                        p++;
                len = strcspn(p, "/");
                if (len == 0)
                        break;
                if (len == 2 && p[0] == '.' && p[1] == '.') {
                        while (n > 1 && out[n - 1] != '/')
                                n--;
                        if (n > 1)
                                n--;
                } else if (!(len == 1 && p[0] == '.')) {
                        if (n > 1)
                                out[n++] = '/';
                        memcpy(out + n, p, len);
                        n += len;
                }
                p += len;
        }
        out[n] = '\0';
        return out;
}

static int plan_folders(struct gh_plan *plan, const struct gh_cdi_hook_opts *o, int rootfd, gh_error_t *err)
{
        struct gh_ldcache_set set = { 0 };
        char **dirs = calloc(o->nfolders + 1, sizeof(*dirs));
        int r = -1;

        if (dirs == NULL)
                return gh_err(err, ENOMEM, "reading --folder");
        for (size_t i = 0; i < o->nfolders; i++)
                if ((dirs[i] = lexical_path(o->folders[i])) == NULL) {
                        gh_err(err, ENOMEM, "reading --folder");
                        goto out;
                }
        if (gh_ldscan_dirs(rootfd, AT_FDCWD, (const char *const *) dirs, o->nfolders, &set, err) < 0)
                goto out;
        for (size_t i = 0; i < set.n; i++) {
                const struct gh_ldcache_entry *e = &set.entries[i];
                bool is32 = e->flags == GH_LDCACHE_FLAGS_I386, dup = false;
                if ((e->flags != GH_LDCACHE_FLAGS_X86_64 && !is32) || e->hwcaps != NULL || e->hwcap != 0)
                        continue;
                for (size_t k = 0; k < plan->nlibs && !dup; k++)
                        dup = plan->libs[k].compat32 == is32 && strcmp(plan->libs[k].soname, e->key) == 0;
                if (!dup && gh_plan_add_library(plan, e->key, e->value, is32, err) < 0)
                        goto out;
        }
        r = 0;
out:
        for (size_t i = 0; i < o->nfolders; i++)
                free(dirs[i]);
        free(dirs);
        gh_ldcache_set_free(&set);
        return r;
}

/* create-soname-symlinks: in each folder, a library whose file name is not its SONAME gets the link
 * SONAME -> file beside it, as `ldconfig -n -N` makes them.  A SONAME link already there is kept
 * (the scan names it instead of the file); anything else at that name is left alone, with a
 * warning, as ldconfig leaves it. */
static int plan_soname_links(struct gh_plan *plan, const struct gh_cdi_hook_opts *o, int rootfd, gh_error_t *err)
{
        for (size_t i = 0; i < o->nsoname_folders; i++) {
                _cleanup_free_ char *dir = lexical_path(o->soname_folders[i]);
                struct gh_ldcache_set set = { 0 };
                const char *dirs[1];
                int r = 0;

                if (dir == NULL)
                        return gh_err(err, ENOMEM, "reading --folder");
                dirs[0] = dir;
                if (gh_ldscan_dirs(rootfd, AT_FDCWD, dirs, 1, &set, err) < 0)
                        return -1;
                for (size_t k = 0; k < set.n && r == 0; k++) {
                        const struct gh_ldcache_entry *e = &set.entries[k];
                        const char *base = strrchr(e->value, '/');
                        _cleanup_free_ char *link = NULL;
                        base = base ? base + 1 : e->value;
                        if (e->hwcaps != NULL || strchr(e->key, '/') != NULL || strcmp(base, e->key) == 0)
                                continue;
                        if (asprintf(&link, "%.*s/%s", (int) (base - e->value - 1), e->value, e->key) < 0) {
                                r = gh_err(err, ENOMEM, "planning SONAME links");
                                break;
                        }
                        size_t before = plan->n;
                        r = gh_plan_add_symlink(plan, link, base, true, err);
                        if (r == 0 && plan->n > before)
                                plan->items[plan->n - 1].replace = false;
                }
                gh_ldcache_set_free(&set);
                if (r < 0)
                        return -1;
        }
        return 0;
}

/* cuda-compat in the hook configuration (default true).  A configuration that cannot be read is
 * reported and counts as the default: it must not stop CDI containers. */
static bool compat_allowed(const struct gh_cdi_hook_opts *o)
{
        _cleanup_error_ gh_error_t e = NULL;
        struct gh_config cfg;
        bool allowed;

        if (gh_config_load(&cfg, o->config ? o->config : GPUHOOK_DEFAULT_CONFIG, &e) < 0) {
                gh_warn("%s; CUDA forward compatibility stays on", e->msg);
                return true;
        }
        allowed = cfg.cuda_compat;
        gh_config_free(&cfg);
        return allowed;
}

/* The directory a previous enable-cuda-compat of this container recorded (GH_CDI_COMPAT_RECORD),
 * or NULL.  The image could have written the file too: that only makes us apply the same rule. */
static char *compat_record(int rootfd)
{
        _cleanup_error_ gh_error_t e = NULL;
        _cleanup_free_ char *text = NULL;
        size_t len;

        if (gh_read_at(rootfd, GH_CDI_COMPAT_RECORD, 4096, true, &text, &len, &e) < 0)
                return NULL;
        text[strcspn(text, "\n")] = '\0';
        return text[0] == '/' ? strdup(text) : NULL;
}

/* CUDA forward compatibility: asked for by this hook (enable-cuda-compat, cdi-hook --cuda-compat),
 * or recorded by an earlier enable-cuda-compat when this hook rewrites the ld cache. */
static int plan_compat(struct gh_plan *plan, const struct gh_cdi_hook_opts *o, int rootfd, int droot, bool *record,
                       gh_error_t *err)
{
        _cleanup_free_ char *recorded = NULL;
        char live[64];

        *record = false;
        if (o->compat_driver != NULL || o->compat_cuda != NULL) {
                if (!compat_allowed(o))
                        return 0;
                if (gh_plan_cuda_compat(plan, rootfd, AT_FDCWD, o->compat_dir, o->compat_driver ? o->compat_driver : "",
                                        o->compat_cuda, err) < 0)
                        return -1;
                *record = plan->compat.used;
                return 0;
        }
        if (!(o->ldcache || plan->nlibs > 0) || (recorded = compat_record(rootfd)) == NULL || !compat_allowed(o))
                return 0;
        _cleanup_error_ gh_error_t e = NULL;
        if (gh_gpus_driver_version(droot, live, sizeof(live), &e) < 0) {
                gh_warn("CUDA forward compatibility recorded in %s, but %s", GH_CDI_COMPAT_RECORD, e->msg);
                return 0;
        }
        return gh_plan_cuda_compat(plan, rootfd, AT_FDCWD, recorded, live, NULL, err);
}

static int build_plan(struct gh_plan *plan, const struct gh_cdi_hook_opts *o, int rootfd, int droot,
                      const struct gh_oci_spec *spec, bool *record, gh_error_t *err)
{
        /* The mounts first, as configure plans them: host paths, read-only, nosuid, nodev (noexec). */
        for (size_t i = 0; i < o->nmounts; i++) {
                size_t before = plan->n;
                if (gh_plan_add(plan, o->mounts[i].dir ? GH_ITEM_DIR : GH_ITEM_FILE, o->mounts[i].a, o->mounts[i].b,
                                GH_MNT_FILE | (o->mounts[i].noexec ? GH_MNT_NOEXEC : 0), err) < 0)
                        return -1;
                if (plan->n > before) /* not a second mount on one path (the first wins) */
                        plan->items[plan->n - 1].host_src = true;
        }
        for (size_t i = 0; i < o->nlinks; i++) {
                if (gh_plan_add_symlink(plan, o->links[i].b, o->links[i].a, true, err) < 0)
                        return -1;
                if (plan->n > 0 && plan->items[plan->n - 1].kind == GH_ITEM_SYMLINK)
                        plan->items[plan->n - 1].replace = o->replace_files;
        }
        for (size_t i = 0; i < o->nlibs; i++)
                if (gh_plan_add_library(plan, o->libs[i].a, o->libs[i].b, false, err) < 0)
                        return -1;
        for (size_t i = 0; i < o->nlibs32; i++)
                if (gh_plan_add_library(plan, o->libs32[i].a, o->libs32[i].b, true, err) < 0)
                        return -1;
        if (o->nfolders > 0 && plan_folders(plan, o, rootfd, err) < 0)
                return -1;
        if (o->nsoname_folders > 0 && plan_soname_links(plan, o, rootfd, err) < 0)
                return -1;
        if (plan_compat(plan, o, rootfd, droot, record, err) < 0)
                return -1;
        if (!o->mask_proc)
                return 0;
        if (gh_plan_read_proc(plan, droot, err) < 0)
                return -1;
        return plan_proc_gpus(plan, o, droot, spec, err);
}

/* A small file written whole into a directory of the container (dirfd from the in-root resolver):
 * through the one writer, atomically, so a link at name is replaced, never followed. */
static int write_in_dir(int dirfd, const char *name, const char *text, mode_t mode, const char *what, gh_error_t *err)
{
        if (gh_write_file_at(dirfd, name, text, strlen(text), mode, GH_WRITE_ATOMIC, NULL, err) < 0)
                return gh_err_wrap(err, "writing %s in the container", what);
        return 0;
}

static int write_compat_record(int rootfd, const char *dir, gh_error_t *err)
{
        _cleanup_free_ char *text = NULL;
        _cleanup_close_ int d = gh_mkdir_p(rootfd, "/etc/ld.so.conf.d", 0755, err);

        if (d < 0 || asprintf(&text, "%s\n", dir) < 0)
                return d < 0 ? -1 : gh_err(err, ENOMEM, "recording CUDA forward compatibility");
        return write_in_dir(d, "00-compat-gpu-hook.conf", text, 0644, GH_CDI_COMPAT_RECORD, err);
}

int gh_cdi_app_profile_text(unsigned long long mask, char *buf, size_t size)
{
        return snprintf(buf, size,
                        "{\"profiles\":[{\"name\":\"_container_\",\"settings\":[\"EGLVisibleDGPUDevices\",0x%llx]}],"
                        "\"rules\":[{\"pattern\":[],\"profile\":\"_container_\"}]}",
                        mask);
}

/* The driver's application profile limiting EGL and Vulkan to the container's GPUs. */
static int write_app_profile(int rootfd, const struct gh_oci_spec *spec, gh_error_t *err)
{
        unsigned long long mask = 0;
        char text[256];

        for (size_t i = 0; i < spec->n_devices; i++)
                if (gh_cdi_gpu_node(&spec->devices[i]) && spec->devices[i].minor < 64)
                        mask |= 1ULL << spec->devices[i].minor;
        if (mask == 0)
                return 0; /* no GPU node: nothing to restrict */
        _cleanup_close_ int d = gh_mkdir_p(rootfd, GH_CDI_APP_PROFILE_DIR, 0555, err);
        if (d < 0)
                return -1;
        gh_cdi_app_profile_text(mask, text, sizeof(text));
        return write_in_dir(d, GH_CDI_APP_PROFILE, text, 0444, GH_CDI_APP_PROFILE_DIR "/" GH_CDI_APP_PROFILE, err);
}

/* chmod (deprecated in NVIDIA's hook, still in old specs: `--mode 755 --path /dev/dri`).  Only a
 * directory or character device on the container's own /dev (the runtime's tmpfs) is changed: a
 * path that leads elsewhere (a link to a bind-mounted host file or directory) is left alone. */
static int apply_chmod(int rootfd, const struct gh_cdi_hook_opts *o, gh_error_t *err)
{
        _cleanup_error_ gh_error_t e = NULL;
        _cleanup_close_ int dev = gh_resolve(rootfd, "/dev", O_PATH | O_DIRECTORY, &e);
        struct stat dst;

        if (dev < 0 || fstat(dev, &dst) < 0) {
                gh_warn("chmod: the container has no /dev: nothing changed");
                return 0;
        }
        for (size_t i = 0; i < o->nchmod; i++) {
                const char *p = o->chmod_paths[i];
                _cleanup_error_ gh_error_t pe = NULL;
                _cleanup_close_ int fd = -1;
                char self[64];
                struct stat st;

                if (strncmp(p, "/dev/", 5) != 0) {
                        gh_warn("chmod: %s is not under /dev: left alone", p);
                        continue;
                }
                fd = gh_resolve(rootfd, p, O_PATH, &pe);
                if (fd < 0 || fstat(fd, &st) < 0) {
                        gh_debug("chmod: %s: %s (skipped)", p, pe ? pe->msg : "cannot stat");
                        continue;
                }
                if (st.st_dev != dst.st_dev || !(S_ISDIR(st.st_mode) || S_ISCHR(st.st_mode))) {
                        gh_warn("chmod: %s is not a directory or device node of the container's /dev: left alone", p);
                        continue;
                }
                if ((st.st_mode & 07777) == o->chmod_mode)
                        continue;
                snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
                if (chmod(self, o->chmod_mode) < 0)
                        return gh_err(err, errno, "chmod %o %s in the container", (unsigned) o->chmod_mode, p);
                gh_debug("chmod %o %s", (unsigned) o->chmod_mode, p);
        }
        return 0;
}

static int read_state(const struct gh_cdi_hook_opts *o, struct gh_oci_state *state, gh_error_t *err)
{
        _cleanup_close_ int fd = -1;

        if (o->state_file == NULL || strcmp(o->state_file, "-") == 0)
                return gh_oci_state_read(o->state_fd, state, err);
        fd = open(o->state_file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return gh_err(err, errno, "opening the container state %s", o->state_file);
        return gh_oci_state_read(fd, state, err);
}

static void phase(const struct gh_cdi_hook_opts *o, const char *name)
{
        if (o->log != NULL)
                gh_hooklog_phase(o->log, name);
}

/* Whether the hook has anything to do in the container besides checking requirements. */
static bool touches_container(const struct gh_cdi_hook_opts *o)
{
        return o->nmounts || o->nlinks || o->nlibs || o->nlibs32 || o->nfolders || o->nsoname_folders || o->ldcache ||
               o->compat_driver || o->compat_cuda || o->mask_proc || o->app_profile || o->nchmod;
}

int gh_cdi_hook_run(const struct gh_cdi_hook_opts *o, gh_error_t *err)
{
        struct gh_oci_state state = { 0 };
        struct gh_oci_spec spec = { 0 };
        struct gh_plan plan = { 0 };
        _cleanup_close_ int droot = -1, rootfd = -1;
        bool record = false, runc;
        int ret = -1;

        if (gh_caps_init_phases((1u << GH_PHASE_DISCOVER) | (1u << GH_PHASE_ENTER) | (1u << GH_PHASE_MOUNT) |
                                        (1u << GH_PHASE_LDCACHE),
                                err) < 0 ||
            gh_caps_enter(GH_PHASE_DISCOVER, err) < 0)
                return -1;
        phase(o, "setup");
        /* Under runc, the state's facts from where runc keeps them (runc-state.c: runc writes it to
         * stdin late), proved below by config.json's root being where runc init started us. */
        runc = false;
        if (o->state_file == NULL && o->state_fd == STDIN_FILENO && o->start_dir != NULL) {
                /* runc's processes are looked at as the namespace check looks at the container's:
                 * with the enter phase's CAP_SYS_PTRACE */
                if (gh_caps_enter(GH_PHASE_ENTER, err) < 0)
                        return -1;
                runc = gh_runc_hook_state(&state) == 1;
                if (gh_caps_enter(GH_PHASE_DISCOVER, err) < 0)
                        return -1;
        }
again:
        if (!runc && read_state(o, &state, err) < 0)
                return -1;
        gh_log_set_trace_id(state.id);
        if (o->log != NULL) {
                gh_hooklog_set_trace_id(o->log, state.id);
                o->log->container_pid = state.pid;
        }
        phase(o, "state");
        /* Only root.path and linux.devices (and process.env for the requirements): a spec's edits make
         * config.json large. */
        if (gh_oci_spec_load_brief(state.bundle, o->check_requirements, &spec, err) < 0) {
                if (!runc)
                        goto out;
                gh_error_free(err);
        }
        if (runc && (spec.rootfs == NULL || !gh_runc_hook_root_is(spec.rootfs, o->start_dir))) {
                gh_debug("cdi-hook: %s's root is not where runc init started this hook: reading the state",
                         state.bundle);
                gh_oci_spec_free(&spec);
                gh_oci_state_free(&state);
                runc = false;
                goto again;
        }
        phase(o, "spec");
        /* The requirements first, and nothing more when that is all: a check writes nothing, so it
         * needs neither the container's root nor its mount namespace. */
        if (o->check_requirements) {
                int r;
                droot = gh_driver_root_open(o->root, err);
                if (droot < 0 || (r = gh_cdi_check_requirements(o, droot, &spec, err)) < 0)
                        goto out;
                phase(o, "require");
                /* r > 0: the cache cannot answer in a program that loads no driver library; nothing of
                 * the container was touched yet, and the caller runs the whole hook elsewhere. */
                if (r > 0 || !touches_container(o)) {
                        ret = r;
                        goto out;
                }
        }
        rootfd = gh_rootfs_open(spec.rootfs, err);
        if (rootfd < 0) {
                gh_err_wrap(err, "container root");
                goto out;
        }
        if (gh_caps_enter(GH_PHASE_ENTER, err) < 0 ||
            check_container_namespace(state.pid, rootfd, spec.rootfs, err) < 0 ||
            gh_caps_enter(GH_PHASE_DISCOVER, err) < 0)
                goto out;
        phase(o, "check");
        if (droot < 0 && (droot = gh_driver_root_open(o->root, err)) < 0)
                goto out;
        if (build_plan(&plan, o, rootfd, droot, &spec, &record, err) < 0)
                goto out;
        phase(o, "plan");
        /* open_tree(OPEN_TREE_CLONE) of the GPUs' proc directories needs the mount phase. */
        if (gh_caps_enter(GH_PHASE_MOUNT, err) < 0 || gh_plan_open_sources(&plan, droot, o->root, err) < 0)
                goto out;
        phase(o, "open");
        if (gh_plan_apply(&plan, rootfd, err) < 0) {
                gh_err_wrap(err, "container %s", spec.rootfs);
                goto out;
        }
        phase(o, "apply");
        if ((plan.nlibs > 0 || o->ldcache || record) &&
            (gh_caps_enter(GH_PHASE_LDCACHE, err) < 0 || gh_ldcache_update(&plan, rootfd, AT_FDCWD, err) < 0))
                goto out;
        phase(o, "ldcache");
        if ((record || o->app_profile || o->nchmod > 0) && gh_caps_enter(GH_PHASE_LDCACHE, err) < 0)
                goto out;
        if (record && write_compat_record(rootfd, plan.compat.dir, err) < 0)
                goto out;
        if (o->app_profile && write_app_profile(rootfd, &spec, err) < 0)
                goto out;
        if (o->nchmod > 0 && apply_chmod(rootfd, o, err) < 0)
                goto out;
        if (record || o->app_profile || o->nchmod > 0)
                phase(o, "files");
        gh_debug("cdi-hook: %zu links, %zu libraries in the ld cache%s, /proc/driver/nvidia %s (%zu GPUs) in %s",
                 o->nlinks, plan.nlibs, plan.compat.used ? " (CUDA compat preferred)" : "",
                 o->mask_proc ? "masked" : "untouched", plan.nproc_gpus, spec.rootfs);
        ret = 0;
out : {
        gh_error_t e = NULL;
        gh_caps_enter(GH_PHASE_DONE, &e);
        gh_error_free(&e);
}
        gh_plan_free(&plan);
        gh_oci_spec_free(&spec);
        gh_oci_state_free(&state);
        return ret;
}

enum gh_hook_binary gh_cdi_hook_binary(const char *path, const char *const *ours, char *why, size_t size)
{
        struct stat st, o;

        if (path == NULL || path[0] != '/') {
                snprintf(why, size, "the hook path '%s' is not absolute", path ? path : "");
                return GH_HOOK_BINARY_MISSING;
        }
        if (stat(path, &st) < 0) {
                snprintf(why, size, "%s does not exist (%s): every container of this spec fails to start", path,
                         strerror(errno));
                return GH_HOOK_BINARY_MISSING;
        }
        if (!S_ISREG(st.st_mode) || access(path, X_OK) < 0) {
                snprintf(why, size, "%s is not an executable file", path);
                return GH_HOOK_BINARY_NOT_EXEC;
        }
        for (size_t i = 0; ours && ours[i]; i++)
                if (stat(ours[i], &o) == 0 && o.st_dev == st.st_dev && o.st_ino == st.st_ino) {
                        snprintf(why, size, "%s is gpu-hook's (%s)", path, ours[i]);
                        return GH_HOOK_BINARY_OURS;
                }
        snprintf(why, size, "%s exists and is not gpu-hook's", path);
        return GH_HOOK_BINARY_OTHER;
}
