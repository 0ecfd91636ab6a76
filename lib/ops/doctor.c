/* gpu-cli doctor's host checks: driver, device nodes, library versions, NVML, persistenced, how the
 * engines are wired (hooks.d, Docker, CDI), cgroups and /dev/char.  The container checks are in
 * doctor-container.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cdi-specs.h"
#include "cgroup.h"
#include "cleanup.h"
#include "cdi.h"
#include "devchar.h"
#include "discover.h"
#include "doctor-internal.h"
#include "doctor-memory.h"
#include "doctor-mps.h"
#include "doctor-report.h"
#include "driver.h"
#include "gpus.h"
#include "ldcache.h"
#include "log.h"
#include "oci.h"
#include "readfile.h"
#include "rootfs.h"
#include "strutil.h"

#define NVIDIA_MAJOR 195
#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

/* The real file name behind the first 64-bit entry for soname in the root's ld cache. */
int gh_doctor_cache_lookup(int rootfd, const char *cache_path, const char *soname, char *path, size_t psize, char *file,
                           size_t fsize, gh_error_t *err)
{
        _cleanup_close_ int fd = gh_open_regular(rootfd, cache_path, AT_FDCWD, err);
        struct gh_ldcache *cache = NULL;
        int r = 0;

        if (fd < 0 || gh_ldcache_open(fd, cache_path, &cache, err) < 0)
                return -1;
        path[0] = '\0';
        for (size_t i = 0; i < cache->n; i++) {
                const struct gh_ldcache_entry *e = &cache->entries[i];
                if (strcmp(e->key, soname) == 0 && (e->flags & 0xff00) == (GH_LDCACHE_FLAGS_X86_64 & 0xff00)) {
                        snprintf(path, psize, "%s", e->value);
                        break;
                }
        }
        gh_ldcache_close(cache);
        if (path[0] == '\0')
                return gh_err(err, ENOENT, "%s is not in %s", soname, cache_path);
        _cleanup_close_ int lib = gh_resolve(rootfd, path, O_PATH, err);
        _cleanup_free_ char *real = lib >= 0 ? gh_fd_path(lib) : NULL;
        if (lib < 0)
                return gh_err_wrap(err, "%s (from %s)", soname, cache_path);
        snprintf(file, fsize, "%s", real && strchr(real, '/') ? gh_base_name(real) : path);
        return r;
}

/* A node under the root is c MAJOR:MINOR; -1 with a reason when not. */
static int check_node(int rootfd, const char *rel, unsigned major_, unsigned minor_, char *why, size_t size)
{
        struct stat st;

        if (fstatat(rootfd, rel, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return snprintf(why, size, "/%s is missing", rel), -1;
        if (!S_ISCHR(st.st_mode) || major(st.st_rdev) != major_ || minor(st.st_rdev) != minor_)
                return snprintf(why, size, "/%s is %s %u:%u, not c %u:%u", rel,
                                S_ISCHR(st.st_mode) ? "c" : "not a character device", major(st.st_rdev),
                                minor(st.st_rdev), major_, minor_),
                       -1;
        return 0;
}

static void check_nodes(int rootfd, const struct gh_gpu_list *fast, struct gh_doctor *d)
{
        char why[256] = "", fix[256] = "", ev[512] = "/dev/nvidiactl";

        if (check_node(rootfd, "dev/nvidiactl", NVIDIA_MAJOR, 255, why, sizeof(why)) < 0)
                snprintf(fix, sizeof(fix), "nvidia-modprobe -c 255 (or: mknod -m 666 /dev/nvidiactl c 195 255)");
        for (size_t i = 0; i < fast->n && why[0] == '\0'; i++) {
                char rel[32];
                unsigned m = fast->gpus[i].minor;
                snprintf(rel, sizeof(rel), "dev/nvidia%u", m);
                if (check_node(rootfd, rel, NVIDIA_MAJOR, m, why, sizeof(why)) < 0)
                        snprintf(fix, sizeof(fix),
                                 "nvidia-modprobe -c %u (or: rm -f /dev/nvidia%u; mknod -m 666 /dev/nvidia%u c 195 %u)",
                                 m, m, m, m);
                else
                        snprintf(ev + strlen(ev), sizeof(ev) - strlen(ev), ", /dev/nvidia%u (c 195:%u)", m, m);
        }
        if (why[0] != '\0') {
                char cause[320];
                snprintf(cause, sizeof(cause), "%s, so no container can be given that device.", why);
                gh_doctor_add(d, "device-nodes", GH_CHECK_FAIL, cause, fix, "%s", why);
        } else {
                gh_doctor_add(d, "device-nodes", GH_CHECK_OK, NULL, NULL, "%s", ev);
        }
}

/* Kernel module vs the user-space libraries the loader would pick. */
static bool check_versions(int rootfd, const struct gh_doctor_opts *o, const char *version, struct gh_doctor *d)
{
        _cleanup_error_ gh_error_t err = NULL;
        char path[PATH_MAX], file[NAME_MAX + 1], cause[512], fix[256];
        const char *cache = o->ldcache ? o->ldcache : "/etc/ld.so.cache";

        if (gh_doctor_cache_lookup(rootfd, cache, "libnvidia-ml.so.1", path, sizeof(path), file, sizeof(file), &err) <
            0) {
                gh_doctor_add(
                        d, "library-version", GH_CHECK_FAIL,
                        "The driver's user-space libraries are not in the loader's cache, so nothing can load NVML or CUDA.",
                        "install the driver's libraries, then run ldconfig", "%s", err->msg);
                return false;
        }
        if (!gh_driver_name_has_version(file, version)) {
                snprintf(cause, sizeof(cause),
                         "The user-space driver (%s) is not the loaded kernel module's version %s: "
                         "the driver was upgraded without a reboot (NVML says \"Driver/library version mismatch\").",
                         file, version);
                snprintf(
                        fix, sizeof(fix),
                        "reboot (or reload the modules: rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia; modprobe nvidia)");
                gh_doctor_add(d, "library-version", GH_CHECK_FAIL, cause, fix,
                              "libnvidia-ml.so.1 -> %s (%s), kernel module %s", path, file, version);
                return false;
        }
        gh_doctor_add(d, "library-version", GH_CHECK_OK, NULL, NULL, "libnvidia-ml.so.1 -> %s, kernel module %s", file,
                      version);
        return true;
}

static void check_nvml(int rootfd, const struct gh_doctor_opts *o, bool versions_ok, struct gh_doctor *d)
{
        struct gh_gpus_opts gopts = GH_GPUS_OPTS_DEFAULT;
        _cleanup_gpu_list_ struct gh_gpu_list list = { 0 };
        _cleanup_error_ gh_error_t err = NULL;

        gopts.uid = o->uid;
        gopts.gid = o->gid;
        if (gh_gpus_load(rootfd, &gopts, &list, &err) < 0)
                gh_doctor_add(
                        d, "nvml", GH_CHECK_FAIL,
                        versions_ok
                                ? "NVML cannot talk to the driver, so nvidia-smi, requirements and gpu-cli ps fail too."
                                : "NVML refuses to run against a kernel module of another version (see library-version).",
                        versions_ok ? "run nvidia-smi on the host and read dmesg for NVRM errors" : "reboot", "%s",
                        err->msg);
        else
                gh_doctor_add(d, "nvml", GH_CHECK_OK, NULL, NULL, "NVML answers: %zu GPU(s), CUDA %s", list.n,
                              list.cuda_version);
}

static void check_persistenced(int rootfd, struct gh_doctor *d)
{
        struct stat st;

        if (fstatat(rootfd, "run/nvidia-persistenced/socket", &st, 0) == 0 && S_ISSOCK(st.st_mode))
                gh_doctor_add(d, "persistenced", GH_CHECK_OK, NULL, NULL, "/run/nvidia-persistenced/socket is there");
        else
                gh_doctor_add(
                        d, "persistenced", GH_CHECK_WARN,
                        "nvidia-persistenced is not running, so the driver tears the GPUs down when the last user exits and "
                        "every container start pays for bringing them up again.",
                        "systemctl enable --now nvidia-persistenced", "no /run/nvidia-persistenced/socket");
}

/* Whether a hooks.d file's "stages" run the hook before the container starts. */
static bool injects(json_t *stages)
{
        size_t i;
        json_t *v;

        json_array_foreach (stages, i, v) {
                const char *st = json_string_value(v);
                if (st && (strcmp(st, "createRuntime") == 0 || strcmp(st, "prestart") == 0))
                        return true;
        }
        return false;
}

/* podman and CRI-O: a hooks.d file that runs gpu-hook (or NVIDIA's hook) before the container starts. */
static void check_hooks_dirs(const struct gh_doctor_opts *o, struct gh_doctor *d)
{
        const char *const *dirs = o->hooks_dirs ? o->hooks_dirs : gh_oci_hooks_dirs;
        char searched[512] = "";

        for (size_t i = 0; dirs[i] != NULL; i++) {
                _cleanup_closedir_ DIR *dir = opendir(dirs[i]);
                struct dirent *de;
                snprintf(searched + strlen(searched), sizeof(searched) - strlen(searched), "%s%s", i ? ", " : "",
                         dirs[i]);
                while (dir != NULL && (de = readdir(dir)) != NULL) {
                        _cleanup_error_ gh_error_t err = NULL;
                        _cleanup_free_ char *path = NULL, *buf = NULL;
                        _cleanup_json_ json_t *j = NULL;
                        size_t len;
                        size_t nl = strlen(de->d_name);
                        if (nl < 6 || strcmp(de->d_name + nl - 5, ".json") != 0 ||
                            asprintf(&path, "%s/%s", dirs[i], de->d_name) < 0)
                                continue;
                        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
                        if (fd < 0 || gh_read_bounded(fd, 1 << 20, &buf, &len, path, &err) < 0 ||
                            (j = gh_json_parse(buf, len, path, &err)) == NULL) {
                                if (err != NULL &&
                                    (strstr(buf ? buf : "", "gpu-hook") || strstr(buf ? buf : "", "nvidia")))
                                        gh_doctor_add(
                                                d, "hooks.d", GH_CHECK_FAIL,
                                                "The hooks.d file for GPUs is not valid JSON, so podman and CRI-O ignore it.",
                                                "reinstall it from contrib/hooks.d/oci-gpu-hook.json", "%s", err->msg);
                                continue;
                        }
                        const char *hp = json_string_value(json_object_get(json_object_get(j, "hook"), "path"));
                        const char *base = hp ? gh_base_name(hp) : NULL;
                        if (base == NULL ||
                            (strcmp(base, "gpu-hook") != 0 && strcmp(base, "nvidia-container-toolkit") != 0 &&
                             strcmp(base, "nvidia-container-runtime-hook") != 0))
                                continue;
                        if (!injects(json_object_get(j, "stages")))
                                continue; /* gpu-hook's poststop file: it removes records, injects nothing */
                        if (access(hp, X_OK) < 0) {
                                gh_doctor_add(
                                        d, "hooks.d", GH_CHECK_FAIL,
                                        "The hooks.d file names a hook program that does not exist or cannot run.",
                                        "install gpu-hook at that path, or fix \"hook\": {\"path\": ...} in the file",
                                        "%s: hook.path %s: %s", path, hp, strerror(errno));
                                return;
                        }
                        gh_doctor_add(d, "hooks.d", GH_CHECK_OK, NULL, NULL, "%s runs %s", path, hp);
                        return;
                }
        }
        gh_doctor_add(d, "hooks.d", GH_CHECK_WARN,
                      "No hooks.d file runs gpu-hook, so podman and CRI-O start GPU containers without GPUs.",
                      "install -m 644 contrib/hooks.d/oci-gpu-hook.json " GH_OCI_HOOKS_DIR_VENDOR "/", "searched %s",
                      searched);
}

static bool on_path(const char *name, char *found, size_t size)
{
        static const char *const dirs[] = { "/usr/local/sbin", "/usr/local/bin", "/usr/sbin",
                                            "/usr/bin",        "/sbin",          "/bin" };
        for (size_t i = 0; i < GH_ARRAY_SIZE(dirs); i++) {
                snprintf(found, size, "%s/%s", dirs[i], name);
                if (access(found, X_OK) == 0)
                        return true;
        }
        return false;
}

/* dockerd's GPU runtimes from daemon.json ("runtimes": {NAME: {"path": ...}}, "default-runtime"):
 * gpu-runtime or NVIDIA's runtime named there must be able to run, or `docker run --runtime=NAME`
 * (every container, when it is the default) fails.  Appends what it found to `ev`; returns false
 * after adding a failed check. */
static bool docker_runtimes(const char *conf, struct gh_doctor *d, char *ev, size_t size)
{
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_free_ char *buf = NULL;
        _cleanup_json_ json_t *root = NULL;
        _cleanup_close_ int fd = open(conf, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        const char *deflt, *name;
        json_t *runtimes, *rt;
        size_t len, used = strlen(ev);
        bool any = false;

        if (fd < 0) {
                snprintf(ev + used, size - used, "; no %s", conf);
                return true;
        }
        if (gh_read_bounded(fd, 1 << 20, &buf, &len, conf, &err) < 0 ||
            (root = gh_json_parse(buf, len, conf, &err)) == NULL || !json_is_object(root)) {
                gh_doctor_add(d, "docker", GH_CHECK_FAIL, "dockerd does not start with a daemon.json it cannot read.",
                              "fix the file (or move it away and run gpu-cli setup docker)", "%s",
                              err ? err->msg : "daemon.json is not a JSON object");
                return false;
        }
        deflt = json_string_value(json_object_get(root, "default-runtime"));
        runtimes = json_object_get(root, "runtimes");
        if (json_is_object(runtimes)) {
                json_object_foreach (runtimes, name, rt) {
                        const char *path = json_string_value(json_object_get(rt, "path"));
                        const char *base = path ? gh_base_name(path) : NULL;
                        bool is_default = deflt && strcmp(deflt, name) == 0;
                        if (base == NULL ||
                            (strcmp(base, "gpu-runtime") != 0 && strcmp(base, "nvidia-container-runtime") != 0))
                                continue;
                        if (path[0] == '/' && access(path, X_OK) < 0) {
                                char cause[256];
                                if (is_default)
                                        snprintf(cause, sizeof(cause),
                                                 "daemon.json names a GPU runtime that cannot run, as the default: "
                                                 "every docker run fails.");
                                else
                                        snprintf(cause, sizeof(cause),
                                                 "daemon.json names a GPU runtime that cannot run: docker run "
                                                 "--runtime=%.64s fails.",
                                                 name);
                                gh_doctor_add(
                                        d, "docker", GH_CHECK_FAIL, cause,
                                        "install gpu-runtime there, or run gpu-cli setup docker --runtime-path=PATH",
                                        "%s: runtime %s: %s: %s", conf, name, path, strerror(errno));
                                return false;
                        }
                        used = strlen(ev);
                        snprintf(ev + used, size - used, "; runtime %s: %s%s", name, path,
                                 is_default ? " (default)" : "");
                        any = true;
                }
        }
        if (!any) {
                used = strlen(ev);
                snprintf(ev + used, size - used, "; no GPU runtime in %s", conf);
        }
        return true;
}

static void check_docker(const struct gh_doctor_opts *o, struct gh_doctor *d)
{
        char dockerd[PATH_MAX], hook[PATH_MAX], ev[2048];
        bool have_hook;

        if (!on_path("dockerd", dockerd, sizeof(dockerd))) {
                gh_doctor_add(d, "docker", GH_CHECK_OK, NULL, NULL, "Docker is not installed");
                return;
        }
        have_hook = on_path("nvidia-container-runtime-hook", hook, sizeof(hook));
        if (have_hook)
                snprintf(ev, sizeof(ev), "%s; dockerd finds %s", dockerd, hook);
        else
                snprintf(ev, sizeof(ev), "%s, no nvidia-container-runtime-hook on the standard PATH", dockerd);
        if (!docker_runtimes(o->docker_config ? o->docker_config : "/etc/docker/daemon.json", d, ev, sizeof(ev)))
                return;
        if (have_hook)
                gh_doctor_add(d, "docker", GH_CHECK_OK, NULL, NULL, "%s", ev);
        else
                gh_doctor_add(
                        d, "docker", GH_CHECK_WARN,
                        "dockerd looks up nvidia-container-runtime-hook on its PATH when it starts; without it "
                        "'docker run --gpus' fails with 'could not select device driver \"\" with capabilities: [[gpu]]'.",
                        "gpu-cli setup docker (or ln -s /usr/bin/gpu-hook /usr/local/bin/nvidia-container-runtime-hook), "
                        "then restart dockerd",
                        "%s", ev);
}

struct conflict_ctx {
        struct gh_doctor *d;
        size_t *problems;
};

static void add_conflict(const struct gh_cdi_set *set, size_t a, size_t b, const char *first, size_t count, void *vctx)
{
        struct conflict_ctx *c = vctx;
        _cleanup_free_ char *pa = gh_cdi_printable(set->specs[a].path, PATH_MAX);
        _cleanup_free_ char *pb = gh_cdi_printable(set->specs[b].path, PATH_MAX);
        char fix[PATH_MAX * 2 + 64];

        snprintf(fix, sizeof(fix), "keep one of them: rm %s (or rm %s)", pb ? pb : "?", pa ? pa : "?");
        gh_doctor_add(c->d, "cdi", GH_CHECK_WARN,
                      "Two specs of the same priority define the same devices: CDI readers refuse those devices "
                      "(\"unresolvable CDI devices\").",
                      fix, "%s and %s both define %s%s", pa ? pa : "?", pb ? pb : "?", first,
                      count > 1 ? " and more" : "");
        (*c->problems)++;
}

/* Every CDI spec, whoever wrote it (cdi-specs.h): one warning per spec that cannot be read, is
 * stale for the loaded driver, or defines a device that another spec of its directory defines too. */
static void check_cdi(const struct gh_doctor_opts *o, const char *version, struct gh_doctor *d)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_cdi_set set;
        char ev[1024] = "";
        size_t problems = 0;

        if (gh_cdi_set_load(o->cdi_dirs ? o->cdi_dirs : gh_cdi_spec_dirs, NULL, version, &set, &err) < 0) {
                gh_doctor_add(d, "cdi", GH_CHECK_WARN, "The CDI specs could not be read.",
                              "free memory and run it again", "%s", err->msg);
                return;
        }
        for (size_t i = 0; i < set.nspecs; i++) {
                const struct gh_cdi_spec *sp = &set.specs[i];
                _cleanup_free_ char *p = gh_cdi_printable(sp->path, PATH_MAX);
                if (sp->error) {
                        gh_doctor_add(d, "cdi", GH_CHECK_WARN,
                                      "CDI readers skip a spec they cannot read: the devices it means to offer are "
                                      "unknown to podman, containerd, CRI-O and Docker.",
                                      "fix it or remove it", "%s", sp->error);
                        problems++;
                } else if (sp->stale) {
                        char cause[512];
                        snprintf(cause, sizeof(cause),
                                 "The spec (written by %s) no longer matches this host, so containers started "
                                 "from it get missing or mismatched driver files, or fail to start.",
                                 gh_cdi_writer_name(sp->writer));
                        gh_doctor_add(d, "cdi", GH_CHECK_WARN, cause, sp->fix, "%s: %s", p ? p : "?", sp->stale);
                        problems++;
                } else if (sp->hook) {
                        gh_doctor_add(d, "cdi", GH_CHECK_WARN,
                                      "The spec's createContainer hook cannot run, so every container given one of "
                                      "its devices fails to start.",
                                      "install the program it names (NVIDIA's toolkit, or gpu-hook's "
                                      "nvidia-cdi-hook: gpu-cli setup docker, or -Dnvidia_cdi_hook_name=true), or "
                                      "write the spec again",
                                      "%s: %s", p ? p : "?", sp->hook);
                        problems++;
                } else {
                        size_t used = strlen(ev);
                        const char *b = p ? gh_base_name(p) : NULL;
                        snprintf(ev + used, sizeof(ev) - used, "%s%s (%s)", used ? ", " : "", b ? b : "?",
                                 gh_cdi_writer_name(sp->writer));
                }
        }
        gh_cdi_set_conflicts(&set, add_conflict, &(struct conflict_ctx) { d, &problems });
        if (problems == 0) {
                if (set.nspecs == 0)
                        gh_doctor_add(d, "cdi", GH_CHECK_OK, NULL, NULL, "no CDI spec (not needed with gpu-hook)");
                else
                        gh_doctor_add(d, "cdi", GH_CHECK_OK, NULL, NULL, "%zu CDI spec(s), current for driver %s: %s",
                                      set.nspecs, version, ev);
        }
        gh_cdi_set_free(&set);
}

enum gh_cgroup_manager gh_doctor_manager(const struct gh_doctor_opts *o)
{
        struct stat st;
        if (o->manager != GH_MANAGER_AUTO)
                return o->manager;
        return stat("/run/systemd/system", &st) == 0 ? GH_MANAGER_SYSTEMD : GH_MANAGER_CGROUPFS;
}

static void check_dev_char(const struct gh_doctor_opts *o, bool systemd, struct gh_doctor *d);

static void check_cgroups(const struct gh_doctor_opts *o, struct gh_doctor *d)
{
        struct statfs sf;
        bool v2 = statfs("/sys/fs/cgroup", &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC;
        bool hybrid = !v2 && statfs("/sys/fs/cgroup/unified", &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC;
        bool systemd = gh_doctor_manager(o) == GH_MANAGER_SYSTEMD;
        gh_doctor_add(d, "cgroups", GH_CHECK_OK, NULL, NULL, "cgroup %s, managed by %s",
                      v2       ? "v2"
                      : hybrid ? "v1 (hybrid)"
                               : "v1",
                      systemd ? "systemd" : "cgroupfs");
        check_dev_char(o, systemd, d);
        if (!v2)
                return; /* device programs are cgroup v2's; v1 has the devices controller */
        /* Without a bpffs gpu-hook cannot pin a container's device program for the next one of the
         * same devices (lib/core/cgroup-bpf.c): every start loads and verifies its own. */
        if (statfs("/sys/fs/bpf", &sf) != 0 || (unsigned long) sf.f_type != 0xcafe4a11UL)
                gh_doctor_add(d, "device-programs", GH_CHECK_WARN,
                              "No bpf filesystem at /sys/fs/bpf (systemd mounts one at boot; this host has none), so "
                              "each GPU container loads its own device-cgroup program: about 0.5 ms per start.",
                              "gpu-cli setup bpffs", "no bpffs at /sys/fs/bpf: device programs are not kept");
        else
                gh_doctor_add(d, "device-programs", GH_CHECK_OK, NULL, NULL, "kept in %s (bpffs)",
                              GH_CGROUP_BPF_PIN_DIR);
}

/* systemd rebuilds a unit's device rules from /dev/char/MAJ:MIN at daemon-reload: a node without
 * such a link drops out of every running container's allow list.  The links wanted are those
 * `gpu-cli setup dev-char-links` makes (devchar.h), so this check and that command agree. */
static void check_dev_char(const struct gh_doctor_opts *o, bool systemd, struct gh_doctor *d)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_devchar_list list;
        char dir[PATH_MAX], missing[512] = "", fix[PATH_MAX + 128];
        size_t bad = 0;

        if (o->dev_char)
                snprintf(dir, sizeof(dir), "%s", o->dev_char);
        else if (strcmp(o->root, "/") == 0)
                snprintf(dir, sizeof(dir), "%s", GH_DEVCHAR_DEFAULT_DIR);
        else
                snprintf(dir, sizeof(dir), "%s%s", o->root, GH_DEVCHAR_DEFAULT_DIR);
        if (gh_devchar_plan(o->root, dir, false, &list, &err) < 0) {
                gh_doctor_add(d, "dev-char-links", GH_CHECK_WARN, "The NVIDIA device nodes could not be listed.",
                              "see the device-nodes check", "%s", err->msg);
                return;
        }
        for (size_t i = 0; i < list.n; i++) {
                const struct gh_devchar_link *l = &list.v[i];
                size_t used = strlen(missing);
                if (l->state == GH_DEVCHAR_OK)
                        continue;
                bad++;
                snprintf(missing + used, sizeof(missing) - used, "%s%s%s%s", used ? ", " : "", l->path,
                         l->state == GH_DEVCHAR_OTHER ? " is " : "", l->state == GH_DEVCHAR_OTHER ? l->other : "");
        }
        snprintf(fix, sizeof(fix),
                 "gpu-cli%s%s setup dev-char-links%s%s (and install the udev rule "
                 "71-gpu-hook-dev-char.rules so that it runs when the driver loads)",
                 strcmp(o->root, "/") ? " --root=" : "", strcmp(o->root, "/") ? o->root : "",
                 o->dev_char || strcmp(o->root, "/") ? " --dev-char-path=" : "",
                 o->dev_char || strcmp(o->root, "/") ? dir : "");
        if (bad == 0)
                gh_doctor_add(d, "dev-char-links", GH_CHECK_OK, NULL, NULL, "%s links exist for the %zu NVIDIA node(s)",
                              dir, list.n);
        else if (!systemd)
                gh_doctor_add(d, "dev-char-links", GH_CHECK_OK, NULL, NULL,
                              "no link for %zu of %zu NVIDIA node(s) (%s), not needed with cgroupfs", bad, list.n,
                              missing);
        else
                gh_doctor_add(
                        d, "dev-char-links", GH_CHECK_WARN,
                        "systemd manages the containers' cgroups and rebuilds their device rules from /dev/char at every "
                        "'systemctl daemon-reload': running containers then lose their GPUs (NVML: \"Unknown Error\").",
                        fix, "%zu of %zu missing: %s", bad, list.n, missing);
        gh_devchar_list_free(&list);
}

bool gh_doctor_driver_ready(const char *root, const char *ldcache, char *why, size_t size)
{
        _cleanup_gpu_list_ struct gh_gpu_list fast = { 0 };
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_close_ int rootfd = gh_rootfs_open(root, &err);
        char version[GH_VERSION_MAX], path[PATH_MAX], file[NAME_MAX + 1];

        if (rootfd < 0 || gh_gpus_driver_version(rootfd, version, sizeof(version), &err) < 0)
                return snprintf(why, size, "%s", err->msg), false;
        if (gh_gpus_fast(rootfd, &fast, &err) < 0)
                return snprintf(why, size, "%s", err->msg), false;
        if (fast.n == 0)
                return snprintf(why, size, "no GPU in /proc/driver/nvidia/gpus yet"), false;
        if (check_node(rootfd, "dev/nvidiactl", NVIDIA_MAJOR, 255, why, size) < 0)
                return false;
        for (size_t i = 0; i < fast.n; i++) {
                char rel[32];
                snprintf(rel, sizeof(rel), "dev/nvidia%u", fast.gpus[i].minor);
                if (check_node(rootfd, rel, NVIDIA_MAJOR, fast.gpus[i].minor, why, size) < 0)
                        return false;
        }
        if (gh_doctor_cache_lookup(rootfd, ldcache ? ldcache : "/etc/ld.so.cache", "libnvidia-ml.so.1", path,
                                   sizeof(path), file, sizeof(file), &err) < 0)
                return snprintf(why, size, "%s", err->msg), false;
        if (!gh_driver_name_has_version(file, version))
                return snprintf(why, size,
                                "the user-space driver (%s) is not the kernel module's version %s: reboot, "
                                "or reload the module",
                                file, version),
                       false;
        return true;
}

void gh_doctor_host(const struct gh_doctor_opts *o, struct gh_doctor *d)
{
        _cleanup_gpu_list_ struct gh_gpu_list fast = { 0 };
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_close_ int rootfd = -1;
        char version[GH_VERSION_MAX];

        memset(d, 0, sizeof(*d));
        rootfd = gh_driver_root_open(o->root, &err);
        if (rootfd < 0 || gh_gpus_driver_version(rootfd, version, sizeof(version), &err) < 0) {
                gh_doctor_add(d, "driver", GH_CHECK_FAIL,
                              "The NVIDIA kernel module is not loaded, so no container can use a GPU.",
                              "modprobe nvidia (install the NVIDIA driver first if that fails)", "%s", err->msg);
                return;
        }
        if (gh_gpus_fast(rootfd, &fast, &err) < 0) {
                gh_doctor_add(d, "driver", GH_CHECK_FAIL,
                              "The driver's /proc/driver/nvidia is unreadable or malformed.",
                              "reload the driver (rmmod nvidia; modprobe nvidia) and read dmesg", "%s", err->msg);
                return;
        }
        gh_doctor_add(d, "driver", GH_CHECK_OK, NULL, NULL, "NVIDIA kernel module %s, %zu GPU(s)", version, fast.n);
        check_nodes(rootfd, &fast, d);
        bool versions_ok = check_versions(rootfd, o, version, d);
        check_nvml(rootfd, o, versions_ok, d);
        check_persistenced(rootfd, d);
        check_hooks_dirs(o, d);
        check_docker(o, d);
        check_cdi(o, version, d);
        check_cgroups(o, d);
        gh_doctor_mps_host(o, d);
        gh_doctor_records_host(o, d);
        gh_doctor_memory_host(rootfd, o, d);
}
