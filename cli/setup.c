/* gpu-cli setup docker|containerd|crio|podman: one command that wires an engine up (docs/engines.md).
 *
 *   docker      daemon.json: "runtimes": {"gpu": {"path": gpu-runtime}} (+ "default-runtime": "gpu"
 *               with --default), every other key kept; a backup of the original; and the name
 *               dockerd looks for with --gpus, nvidia-container-runtime-hook -> gpu-hook, unless
 *               NVIDIA's own file is installed.  Docker >= 29.2 sends --gpus through CDI when it
 *               finds nvidia-cdi-hook: that name too (-> our static nvidia-cdi-hook, never over
 *               NVIDIA's) and our spec in /etc/cdi, written or refreshed (left alone when another
 *               spec of the kind is there; --undo leaves it: other engines may use it).
 *   containerd  config.toml, in place (setup-containerd.c says why not a drop-in): CDI on, and a
 *               "gpu" runtime handler whose BinaryName is gpu-runtime.
 *   crio        a drop-in for a "gpu" runtime, and the hooks.d files.
 *   podman      the hooks.d files (createRuntime; poststop removes the container's record).
 *
 * Each change is computed first; --dry-run prints it as a diff, otherwise only files whose content
 * changes are written, so a second run changes nothing.  --undo takes out exactly what setup put in. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capability.h"
#include "cdi.h"
#include "cdi-specs.h"
#include "cleanup.h"
#include "cli.h"
#include "config.h"  /* the build's: GPUHOOK_HOOK_PATH, GPUHOOK_RUNTIME_PATH, GPUHOOK_NVHOOK_PATH */
#include "oci.h"     /* GH_OCI_HOOKS_DIR_ADMIN, _cleanup_json_ */
#include "require.h" /* gh_version_compare */
#include "setup.h"

#define HOOK_NAME "nvidia-container-runtime-hook"
#define CDI_HOOK_NAME "nvidia-cdi-hook"
/* From this version on, `docker run --gpus` becomes the CDI request nvidia.com/gpu=all when dockerd
 * finds a program named nvidia-cdi-hook on its PATH (else it keeps using the prestart hook). */
#define DOCKER_GPUS_CDI "29.2"

struct setup_opts {
        const char *engine;
        const char *config;    /* the file to edit or write */
        const char *hooks_dir; /* podman/CRI-O hooks.d */
        const char *hook_link; /* docker: where the --gpus hook name goes; "none" = nowhere */
        const char *runtime_path, *hook_path;
        const char *docker_version; /* NULL: asked from dockerd --version */
        const char *cdi_hook_link;  /* docker >= 29.2: where nvidia-cdi-hook goes; "none" = nowhere */
        const char *cdi_hook;       /* what that link points to (our static nvidia-cdi-hook) */
        const char *cdi_spec;       /* docker >= 29.2: our spec, written or refreshed; "none" = not */
        const struct cli_globals *g;
        bool dry_run, undo, set_default;
};

/* One file's change: new == NULL removes it; link != NULL makes path a symlink to it. */
struct change {
        char *path;
        char *old, *new;
        bool exists, backup;
        bool drop_backup; /* undo restored the backup verbatim: remove it */
        bool is_link;     /* a symlink: old/new are "-> TARGET" for the diff */
        bool make_dir;    /* create the file's directory first (/etc/cdi) */
        const char *link; /* the target to create; NULL with is_link: remove */
};

struct plan {
        struct change v[8];
        size_t n;
        const char *restart;
};

static void usage(FILE *out)
{
        fprintf(out,
                "Usage: gpu-cli setup docker|containerd|crio|podman [OPTIONS]\n"
                "       gpu-cli setup dev-char-links [OPTIONS]   (see 'gpu-cli setup dev-char-links --help')\n"
                "       gpu-cli setup bpffs [--dry-run | --undo] (see 'gpu-cli setup bpffs --help')\n"
                "\n"
                "Configures a container engine to use gpu-hook and gpu-runtime.\n"
                "  docker      daemon.json: runtime \"gpu\" (gpu-runtime), and nvidia-container-runtime-hook\n"
                "              -> gpu-hook for `docker run --gpus` (not when NVIDIA's own file is installed);\n"
                "              Docker >= 29.2: also nvidia-cdi-hook and our CDI spec, --gpus then goes through CDI\n"
                "  containerd  config.toml: CDI on (enable_cdi, cdi_spec_dirs) and a \"gpu\" runtime handler\n"
                "              (BinaryName = gpu-runtime); containerd 1.6/1.7 (version 2) and 2.x (version 3)\n"
                "  crio        drop-in with a \"gpu\" runtime, and the hooks.d files\n"
                "  podman      the hooks.d files (createRuntime; poststop removes container records)\n"
                "\n"
                "Options:\n"
                "  --config=FILE        the file to edit (docker: /etc/docker/daemon.json, containerd:\n"
                "                       /etc/containerd/config.toml) or write (crio: /etc/crio/crio.conf.d/99-gpu-hook.conf)\n"
                "  --hooks-dir=DIR      hooks.d for podman and crio (default " GH_OCI_HOOKS_DIR_ADMIN ")\n"
                "  --hook-link=PATH     docker: the --gpus hook name (default /usr/local/bin/%s; none: skip)\n"
                "  --docker-version=V   docker: the version of dockerd (default: dockerd --version)\n"
                "  --cdi-hook-link=PATH docker >= " DOCKER_GPUS_CDI
                ": the nvidia-cdi-hook name, which sends --gpus through\n"
                "                       CDI (default /usr/local/bin/" CDI_HOOK_NAME "; none: skip)\n"
                "  --cdi-spec=FILE      docker >= " DOCKER_GPUS_CDI ": our CDI spec, written or refreshed (default\n"
                "                       /etc/cdi/nvidia.com-gpu.json; none: skip)\n"
                "  --cdi-hook=FILE      the nvidia-cdi-hook the link points to (default %s)\n"
                "  --default            docker, crio: make \"gpu\" the default runtime\n"
                "  --runtime-path=FILE  gpu-runtime to configure (default %s)\n"
                "  --hook-path=FILE     gpu-hook to configure (default %s)\n"
                "  --dry-run            print the changes as a diff, change nothing\n"
                "  --undo               take out what setup put in\n"
                "\n"
                "Exit status: 0 done (or nothing to do), 1 failure (nothing changed), 2 usage error.\n",
                HOOK_NAME, GPUHOOK_NVHOOK_PATH, GPUHOOK_RUNTIME_PATH, GPUHOOK_HOOK_PATH);
}

static int add_change(struct plan *p, const char *path, gh_error_t *err)
{
        struct change *c = &p->v[p->n];

        memset(c, 0, sizeof(*c));
        c->path = strdup(path);
        if (c->path == NULL)
                return gh_err(err, ENOMEM, "planning the change");
        if (setup_read(path, &c->old, &c->exists, err) < 0) {
                free(c->path); /* not counted in p->n: nobody else frees it */
                c->path = NULL;
                return -1;
        }
        p->n++;
        return 0;
}

static void plan_free(struct plan *p)
{
        for (size_t i = 0; i < p->n; i++) {
                free(p->v[i].path);
                free(p->v[i].old);
                free(p->v[i].new);
        }
        p->n = 0;
}

/* ---- docker ------------------------------------------------------------------------------- */

/* The indentation of the first indented line, so that a rewrite keeps the file's style. */
static int indent_of(const char *text)
{
        const char *nl = text ? strchr(text, '\n') : NULL;
        int n = 0;

        if (nl == NULL)
                return 4;
        while (nl[1 + n] == ' ')
                n++;
        return n > 0 && n <= 8 ? n : 4;
}

/* Undo: when the file is what setup made of its backup (no edits since), the backup's own text comes
 * back byte for byte, formatting and all. */
static void restore_backup(struct change *c)
{
        _cleanup_free_ char *bak = NULL, *text = NULL, *dump = NULL;
        _cleanup_error_ gh_error_t e = NULL;
        _cleanup_json_ json_t *j = NULL;
        bool exists;

        if (asprintf(&bak, "%s%s", c->path, SETUP_BACKUP_SUFFIX) < 0 || setup_read(bak, &text, &exists, &e) < 0 ||
            !exists || (j = setup_json_parse(text, bak, &e)) == NULL)
                return;
        dump = json_dumps(j, JSON_INDENT(indent_of(c->old)) | JSON_PRESERVE_ORDER);
        if (dump == NULL || c->new == NULL || strncmp(dump, c->new, strlen(dump)) != 0 ||
            strcmp(c->new + strlen(dump), "\n") != 0)
                return;
        free(c->new);
        c->new = steal_pointer(&text);
        c->drop_backup = true;
}

static int docker_json(const struct setup_opts *o, struct change *c, gh_error_t *err)
{
        _cleanup_json_ json_t *j = NULL;
        json_t *runtimes, *gpu, *def;
        char *dump;

        if (c->exists && strspn(c->old, " \t\r\n") != strlen(c->old)) {
                j = setup_json_parse(c->old, c->path, err);
                if (j == NULL)
                        return gh_err_wrap(err, "refusing to edit it");
        } else {
                j = json_object();
        }
        if (j == NULL)
                return gh_err(err, ENOMEM, "%s", c->path);
        runtimes = json_object_get(j, "runtimes");
        if (runtimes != NULL && !json_is_object(runtimes))
                return gh_err(err, 0, "%s: \"runtimes\" is not an object; fix the file first", c->path);
        gpu = runtimes ? json_object_get(runtimes, "gpu") : NULL;
        def = json_object_get(j, "default-runtime");
        if (def != NULL && !json_is_string(def))
                return gh_err(err, 0, "%s: \"default-runtime\" is not a string; fix the file first", c->path);

        if (o->undo && gpu == NULL && (def == NULL || strcmp(json_string_value(def), "gpu") != 0)) {
                c->new = c->exists ? strdup(c->old) : NULL; /* nothing of setup's in it */
                return c->exists && c->new == NULL ? gh_err(err, ENOMEM, "%s", c->path) : 0;
        }
        if (o->undo) {
                const char *p = json_string_value(json_object_get(gpu, "path"));
                if (gpu != NULL && (p == NULL || strcmp(p, o->runtime_path) != 0))
                        return gh_err(err, 0, "%s: runtimes.gpu is not the one setup adds (%s); remove it by hand",
                                      c->path, p ? p : "no path");
                if (gpu != NULL)
                        json_object_del(runtimes, "gpu");
                if (runtimes != NULL && json_object_size(runtimes) == 0)
                        json_object_del(j, "runtimes");
                if (def != NULL && strcmp(json_string_value(def), "gpu") == 0)
                        json_object_del(j, "default-runtime");
        } else {
                const char *p = json_string_value(json_object_get(gpu, "path"));
                if (gpu != NULL && (p == NULL || strcmp(p, o->runtime_path) != 0))
                        return gh_err(err, 0, "%s: runtimes.gpu already names %s; remove it or run setup --undo first",
                                      c->path, p ? p : "something else");
                if (runtimes == NULL && json_object_set_new(j, "runtimes", runtimes = json_object()) < 0)
                        return gh_err(err, ENOMEM, "%s", c->path);
                if (gpu == NULL &&
                    json_object_set_new(runtimes, "gpu", json_pack("{s:s}", "path", o->runtime_path)) < 0)
                        return gh_err(err, ENOMEM, "%s", c->path);
                if (o->set_default && def != NULL && strcmp(json_string_value(def), "gpu") != 0)
                        return gh_err(err, 0, "%s: \"default-runtime\" is already \"%s\"; change it by hand", c->path,
                                      json_string_value(def));
                if (o->set_default && json_object_set_new(j, "default-runtime", json_string("gpu")) < 0)
                        return gh_err(err, ENOMEM, "%s", c->path);
        }
        if (!c->exists && json_object_size(j) == 0) {
                c->new = NULL; /* undo of a file that was never there */
                return 0;
        }
        dump = json_dumps(j, JSON_INDENT(indent_of(c->old)) | JSON_PRESERVE_ORDER);
        if (dump == NULL || asprintf(&c->new, "%s\n", dump) < 0) {
                free(dump);
                return gh_err(err, ENOMEM, "%s", c->path);
        }
        free(dump);
        c->backup = c->exists && !o->undo;
        if (o->undo)
                restore_backup(c);
        return 0;
}

/* Where another program called name would be found first on a usual PATH (not ours: a link to
 * target). */
static const char *foreign_program(const char *name, const char *target, char *buf, size_t size)
{
        static const char *const dirs[] = { "/usr/local/sbin", "/usr/local/bin", "/usr/sbin",
                                            "/usr/bin",        "/sbin",          "/bin" };
        char t[PATH_MAX];

        for (size_t i = 0; i < GH_ARRAY_SIZE(dirs); i++) {
                snprintf(buf, size, "%s/%s", dirs[i], name);
                ssize_t n = readlink(buf, t, sizeof(t) - 1);
                if (n > 0) {
                        t[n] = '\0';
                        if (strcmp(t, target) == 0)
                                continue;
                }
                if (access(buf, F_OK) == 0)
                        return buf;
        }
        return NULL;
}

/* A link named after one of NVIDIA's programs, pointing at ours: made (or, with --undo, removed)
 * only where no file of NVIDIA's is, and never over one. */
static int link_change(const struct setup_opts *o, struct plan *p, const char *link, const char *target,
                       const char *name, const char *uses, gh_error_t *err)
{
        char cur[PATH_MAX], other[PATH_MAX];
        struct change *c;
        struct stat st;
        ssize_t n;

        if (strcmp(link, "none") == 0)
                return 0;
        c = &p->v[p->n];
        memset(c, 0, sizeof(*c));
        n = readlink(link, cur, sizeof(cur) - 1);
        bool ours = n > 0 && ((cur[n] = '\0'), strcmp(cur, target) == 0);
        if (!ours && lstat(link, &st) == 0) {
                if (o->undo)
                        return 0;
                printf("%s exists and is not gpu-cli's link (NVIDIA's?): left as it is; %s uses it\n", link, uses);
                return 0;
        }
        if (!o->undo && !ours && foreign_program(name, target, other, sizeof(other)) != NULL) {
                printf("NVIDIA's %s is installed (%s): not adding gpu-cli's link; %s keeps using it\n", name, other,
                       uses);
                return 0;
        }
        if (o->undo ? !ours : ours)
                return 0;
        c->path = strdup(link);
        if (c->path == NULL)
                return gh_err(err, ENOMEM, "planning the link");
        c->exists = ours;
        c->is_link = true;
        c->link = o->undo ? NULL : target;
        if ((ours && asprintf(&c->old, "-> %s", target) < 0) || (!o->undo && asprintf(&c->new, "-> %s", target) < 0))
                return gh_err(err, ENOMEM, "planning the link");
        p->n++;
        return 0;
}

static int docker_link(const struct setup_opts *o, struct plan *p, gh_error_t *err)
{
        return link_change(o, p, o->hook_link, o->hook_path, HOOK_NAME, "docker run --gpus", err);
}

/* dockerd's version: --docker-version, else the first dotted number `dockerd --version` prints
 * ("Docker version 29.2.0, build ..."); NULL when there is no dockerd to ask. */
static char *docker_version(const struct setup_opts *o)
{
        static const char *const dirs[] = { "/usr/local/sbin", "/usr/local/bin", "/usr/sbin",
                                            "/usr/bin",        "/sbin",          "/bin" };
        char path[PATH_MAX], line[256], *v = NULL;

        if (o->docker_version)
                return strdup(o->docker_version);
        for (size_t i = 0; i < GH_ARRAY_SIZE(dirs); i++) {
                snprintf(path, sizeof(path), "%s/dockerd", dirs[i]);
                if (access(path, X_OK) != 0)
                        continue;
                /* the host's own dockerd, with a fixed environment; nothing of a container's runs here */
                char cmd[PATH_MAX + 64];
                snprintf(cmd, sizeof(cmd), "env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin '%s' --version 2>/dev/null",
                         path);
                FILE *f = popen(cmd, "r");
                if (f != NULL && fgets(line, sizeof(line), f) != NULL) {
                        char *d = strpbrk(line, "0123456789");
                        if (d != NULL) {
                                d[strspn(d, "0123456789.")] = '\0';
                                v = strdup(d);
                        }
                }
                if (f != NULL)
                        pclose(f);
                return v;
        }
        return NULL;
}

/* Another spec of kind nvidia.com/gpu beside ours (in its directory; for /etc/cdi or /var/run/cdi in
 * both, as CDI readers take both), read as every CDI spec is (cdi-specs.h): a second definition of
 * nvidia.com/gpu=all is a conflict for every CDI reader.  An MPS group's spec (its devices are
 * mps-NAME) is no conflict.  Its path, or NULL. */
static char *other_nvidia_spec(const char *ours)
{
        _cleanup_free_ char *dir = strdup(ours);
        _cleanup_error_ gh_error_t e = NULL;
        const char *dirs[3] = { NULL, NULL, NULL };
        char *slash = dir ? strrchr(dir, '/') : NULL, *other = NULL;
        struct gh_cdi_set set;

        if (slash == NULL)
                return NULL;
        *slash = '\0';
        dirs[0] = dir;
        if (strcmp(dir, GH_CDI_DIR_STATIC) == 0 || strcmp(dir, GH_CDI_DIR_DYNAMIC) == 0)
                dirs[1] = strcmp(dir, GH_CDI_DIR_STATIC) == 0 ? GH_CDI_DIR_DYNAMIC : GH_CDI_DIR_STATIC;
        if (gh_cdi_set_load(dirs, NULL, NULL, &set, &e) < 0)
                return NULL;
        for (size_t i = 0; i < set.nspecs && other == NULL; i++) {
                const struct gh_cdi_spec *sp = &set.specs[i];
                const char *kind = sp->doc ? json_string_value(json_object_get(sp->doc, "kind")) : NULL;
                if (kind != NULL && strcmp(kind, "nvidia.com/gpu") == 0 && strcmp(sp->path, ours) != 0 &&
                    sp->writer != GH_CDI_WRITER_OURS_MPS)
                        other = strdup(sp->path);
        }
        gh_cdi_set_free(&set);
        return other;
}

/* Docker >= 29.2: the nvidia-cdi-hook name and our spec, so that --gpus goes through CDI. */
static int docker_cdi(const struct setup_opts *o, struct plan *p, gh_error_t *err)
{
        _cleanup_free_ char *version = docker_version(o), *other = NULL, *why = NULL;
        _cleanup_json_ json_t *spec = NULL, *old = NULL;
        char self[PATH_MAX];
        struct change *c;

        if (version == NULL || gh_version_compare(version, DOCKER_GPUS_CDI) < 0) {
                if (!o->undo)
                        return 0; /* --gpus takes the prestart hook (docker_link) */
        } else if (!o->undo) {
                printf("Docker %s: docker run --gpus now goes through CDI (nvidia.com/gpu=all) when dockerd finds %s "
                       "on its PATH%s\n",
                       version, CDI_HOOK_NAME, strcmp(o->cdi_spec, "none") ? "; the spec: " : "");
                if (strcmp(o->cdi_spec, "none") != 0)
                        printf("  %s\n", o->cdi_spec);
        }
        if (link_change(o, p, o->cdi_hook_link, o->cdi_hook, CDI_HOOK_NAME, "docker run --gpus (CDI)", err) < 0)
                return -1;
        if (strcmp(o->cdi_spec, "none") == 0)
                return 0;
        if (!o->undo && (other = other_nvidia_spec(o->cdi_spec)) != NULL) {
                printf("%s also defines nvidia.com/gpu devices: not writing %s beside it (two specs of one kind "
                       "conflict); docker run --gpus uses it\n",
                       other, o->cdi_spec);
                return 0;
        }
        if (add_change(p, o->cdi_spec, err) < 0)
                return -1;
        c = &p->v[p->n - 1];
        if (c->exists && (gh_cdi_spec_read(o->cdi_spec, &old, err) < 0 ||
                          gh_cdi_spec_writer(old, o->cdi_spec) != GH_CDI_WRITER_OURS)) {
                if (old == NULL)
                        return gh_err_wrap(err, "refusing to replace it");
                p->n--;
                free(c->path);
                free(c->old);
                printf("%s is not a spec gpu-cli wrote: left as it is\n", o->cdi_spec);
                return 0;
        }
        if (o->undo) {
                /* `gpu-cli cdi generate` writes the same file, and podman or containerd may use it too */
                p->n--;
                free(c->path);
                free(c->old);
                if (old != NULL)
                        printf("%s left in place (other engines may use it): remove it by hand if nothing does\n",
                               o->cdi_spec);
                return 0;
        }
        struct gh_cdi_opts co = {
                .root = o->g->root,
                .ldcache = o->g->ldcache,
                .vendor = "nvidia.com",
                .class_ = "gpu",
                .names = GH_CDI_NAME_INDEX | GH_CDI_NAME_UUID,
                .caps = GH_CAP_ALL,
                .uid = o->g->uid,
                .gid = o->g->gid,
        };
        if (gh_layout_named("debian", &co.layout, err) < 0)
                return -1;
        if (cli_self_path(self, sizeof(self)) < 0)
                return gh_err(err, errno, "finding our own path for the spec's hook");
        co.hook_path = self;
        if (gh_cdi_generate(&co, &spec, err) < 0)
                return gh_err_wrap(err, "writing the CDI spec for docker run --gpus");
        c->new = gh_cdi_text(spec);
        c->make_dir = true;
        return c->new ? 0 : gh_err(err, ENOMEM, "writing the CDI spec");
}

/* ---- containerd, CRI-O, hooks.d: whole files that are ours ---------------------------------- */

static char *crio_text(const struct setup_opts *o)
{
        char *s = NULL;
        if (asprintf(&s,
                     "# Written by gpu-cli setup crio; `gpu-cli setup crio --undo` removes it.\n"
                     "%s"
                     "[crio.runtime.runtimes.gpu]\n"
                     "runtime_path = \"%s\"\n"
                     "runtime_type = \"oci\"\n"
                     "runtime_root = \"/run/gpu-runtime\"\n",
                     o->set_default ? "[crio.runtime]\ndefault_runtime = \"gpu\"\n\n" : "", o->runtime_path) < 0)
                return NULL;
        return s;
}

/* stage: createRuntime (the injection) or poststop (the container's record goes with it) */
static char *hooksd_text(const struct setup_opts *o, const char *stage)
{
        _cleanup_json_ json_t *j =
                json_pack("{s:s, s:{s:s, s:[s,s], s:[s]}, s:{s:b}, s:[s]}", "version", "1.0.0", "hook", "path",
                          o->hook_path, "args", "gpu-hook", stage, "env", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "when",
                          "always", 1, "stages", stage);
        char *dump = j ? json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL, *s = NULL;

        if (dump != NULL && asprintf(&s, "%s\n", dump) < 0)
                s = NULL;
        free(dump);
        return s;
}

/* A file setup owns: written whole, removed by --undo only while it is still setup's. */
static int own_file(const struct setup_opts *o, struct plan *p, const char *path, char *text, char *alt,
                    gh_error_t *err)
{
        _cleanup_free_ char *want = text, *other = alt;
        struct change *c;

        if (want == NULL)
                return gh_err(err, ENOMEM, "planning %s", path);
        if (add_change(p, path, err) < 0)
                return -1;
        c = &p->v[p->n - 1];
        if (o->undo) {
                /* other: the same file written with the other --default (undo does not need it again) */
                if (c->exists && strcmp(c->old, want) != 0 && (other == NULL || strcmp(c->old, other) != 0))
                        return gh_err(err, 0, "%s was changed since gpu-cli wrote it; remove it by hand", path);
                c->new = NULL;
                return 0;
        }
        c->new = steal_pointer(&want);
        return 0;
}

static int containerd_toml(const struct setup_opts *o, struct plan *p, gh_error_t *err)
{
        struct change *c;

        if (add_change(p, o->config ? o->config : "/etc/containerd/config.toml", err) < 0)
                return -1;
        c = &p->v[p->n - 1];
        if (setup_containerd_edit(c->path, c->exists ? c->old : NULL, o->runtime_path, o->undo, &c->new, err) < 0)
                return -1;
        c->backup = c->exists && !o->undo;
        if (o->undo && c->new != NULL) {
                /* undo gave the original back: the backup of it has done its job */
                _cleanup_free_ char *bak = NULL, *text = NULL;
                _cleanup_error_ gh_error_t e = NULL;
                bool there = false;
                if (asprintf(&bak, "%s%s", c->path, SETUP_BACKUP_SUFFIX) >= 0 &&
                    setup_read(bak, &text, &there, &e) == 0 && there && strcmp(text, c->new) == 0)
                        c->drop_backup = true;
        }
        return 0;
}

/* The drop-in that gpu-cli setup containerd wrote before it edited config.toml: it reset the node's
 * CRI settings on containerd 1.x (setup-containerd.c), so it goes, while it is still ours. */
#define LEGACY_DROPIN "/etc/containerd/conf.d/99-gpu-hook.toml"
static int legacy_dropin(struct plan *p, gh_error_t *err)
{
        struct change *c;

        if (add_change(p, LEGACY_DROPIN, err) < 0)
                return -1;
        c = &p->v[p->n - 1];
        if (c->exists && strncmp(c->old, "# Written by gpu-cli setup containerd", 37) != 0) {
                c->new = strdup(c->old); /* not ours: left alone */
                return c->new ? 0 : gh_err(err, ENOMEM, "planning %s", c->path);
        }
        return 0;
}

/* The createRuntime file, and the poststop file that removes the container's record (the same
 * names as contrib/hooks.d's, so that these mask the packaged ones). */
static int hooksd_file(const struct setup_opts *o, struct plan *p, gh_error_t *err)
{
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/oci-gpu-hook.json", o->hooks_dir);
        if (own_file(o, p, path, hooksd_text(o, "createRuntime"), NULL, err) < 0)
                return -1;
        snprintf(path, sizeof(path), "%s/oci-gpu-hook-poststop.json", o->hooks_dir);
        return own_file(o, p, path, hooksd_text(o, "poststop"), NULL, err);
}

static int build_plan(const struct setup_opts *o, struct plan *p, gh_error_t *err)
{
        if (strcmp(o->engine, "docker") == 0) {
                if (add_change(p, o->config ? o->config : "/etc/docker/daemon.json", err) < 0 ||
                    docker_json(o, &p->v[p->n - 1], err) < 0 || docker_link(o, p, err) < 0 || docker_cdi(o, p, err) < 0)
                        return -1;
                p->restart = "restart dockerd (`kill -HUP` reloads the runtimes, but the --gpus hook name is looked up "
                             "only at start)";
        } else if (strcmp(o->engine, "containerd") == 0) {
                if (containerd_toml(o, p, err) < 0 || (o->config == NULL && legacy_dropin(p, err) < 0))
                        return -1;
                p->restart = "restart containerd; Kubernetes: a RuntimeClass with handler \"gpu\"";
        } else if (strcmp(o->engine, "crio") == 0) {
                struct setup_opts flipped = *o;
                flipped.set_default = !o->set_default;
                if (own_file(o, p, o->config ? o->config : "/etc/crio/crio.conf.d/99-gpu-hook.conf", crio_text(o),
                             crio_text(&flipped), err) < 0 ||
                    hooksd_file(o, p, err) < 0)
                        return -1;
                p->restart = "restart crio; Kubernetes: a RuntimeClass with handler \"gpu\"";
        } else {
                if (hooksd_file(o, p, err) < 0)
                        return -1;
                p->restart = "nothing to restart: podman reads hooks.d for every container";
        }
        return 0;
}

static bool changes(const struct change *c)
{
        if (c->new == NULL)
                return c->exists;
        return !c->exists || c->old == NULL || strcmp(c->old, c->new) != 0;
}

static int apply(const struct change *c, gh_error_t *err)
{
        if (c->is_link) {
                if (setup_remove(c->path, err) < 0)
                        return -1;
                if (c->link != NULL && symlink(c->link, c->path) < 0)
                        return gh_err(err, errno, "linking %s to %s", c->path, c->link);
                return 0;
        }
        if (c->new == NULL)
                return setup_remove(c->path, err);
        if (c->make_dir) {
                char dir[PATH_MAX];
                snprintf(dir, sizeof(dir), "%s", c->path);
                for (char *q = dir + 1; (q = strchr(q, '/')) != NULL; q++) {
                        *q = '\0';
                        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                                return gh_err(err, errno, "creating %s", dir);
                        *q = '/';
                }
        }
        if (c->backup && setup_backup(c->path, c->old, err) < 0)
                return -1;
        if (setup_write(c->path, c->new, err) < 0)
                return -1;
        if (c->drop_backup) {
                char bak[PATH_MAX];
                snprintf(bak, sizeof(bak), "%s%s", c->path, SETUP_BACKUP_SUFFIX);
                return setup_remove(bak, err);
        }
        return 0;
}

static int parse(int argc, char **argv, struct setup_opts *o)
{
        static const struct option opts[] = {
                { "config", required_argument, NULL, 'c' },
                { "hooks-dir", required_argument, NULL, 'H' },
                { "hook-link", required_argument, NULL, 'l' },
                { "runtime-path", required_argument, NULL, 'R' },
                { "hook-path", required_argument, NULL, 'P' },
                { "docker-version", required_argument, NULL, 'V' },
                { "cdi-hook-link", required_argument, NULL, 'L' },
                { "cdi-spec", required_argument, NULL, 'S' },
                { "cdi-hook", required_argument, NULL, 'T' },
                { "default", no_argument, NULL, 'D' },
                { "dry-run", no_argument, NULL, 'n' },
                { "undo", no_argument, NULL, 'u' },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        int c;

        while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
                switch (c) {
                case 'c': o->config = optarg; break;
                case 'H': o->hooks_dir = optarg; break;
                case 'l': o->hook_link = optarg; break;
                case 'R': o->runtime_path = optarg; break;
                case 'P': o->hook_path = optarg; break;
                case 'V': o->docker_version = optarg; break;
                case 'L': o->cdi_hook_link = optarg; break;
                case 'S': o->cdi_spec = optarg; break;
                case 'T': o->cdi_hook = optarg; break;
                case 'D': o->set_default = true; break;
                case 'n': o->dry_run = true; break;
                case 'u': o->undo = true; break;
                case 'h': usage(stdout); exit(GH_EXIT_OK);
                default: usage(stderr); return -1;
                }
        }
        if (optind + 1 != argc) {
                fprintf(stderr, "gpu-cli: setup: name one engine: docker, containerd, crio or podman\n");
                return -1;
        }
        o->engine = argv[optind];
        if (strcmp(o->engine, "docker") != 0 && strcmp(o->engine, "containerd") != 0 &&
            strcmp(o->engine, "crio") != 0 && strcmp(o->engine, "podman") != 0) {
                fprintf(stderr, "gpu-cli: setup: unknown engine '%s'; use docker, containerd, crio or podman\n",
                        o->engine);
                return -1;
        }
        const char *paths[] = { o->config,
                                o->hooks_dir,
                                o->runtime_path,
                                o->hook_path,
                                strcmp(o->hook_link, "none") ? o->hook_link : NULL,
                                strcmp(o->cdi_hook_link, "none") ? o->cdi_hook_link : NULL,
                                strcmp(o->cdi_spec, "none") ? o->cdi_spec : NULL,
                                o->cdi_hook };
        for (size_t i = 0; i < GH_ARRAY_SIZE(paths); i++)
                if (paths[i] != NULL && paths[i][0] != '/') {
                        fprintf(stderr, "gpu-cli: setup: '%s' must be an absolute path\n", paths[i]);
                        return -1;
                }
        return 0;
}

int cmd_setup(int argc, char **argv, const struct cli_globals *g)
{
        struct setup_opts o = { .hooks_dir = GH_OCI_HOOKS_DIR_ADMIN,
                                .hook_link = "/usr/local/bin/" HOOK_NAME,
                                .runtime_path = GPUHOOK_RUNTIME_PATH,
                                .hook_path = GPUHOOK_HOOK_PATH,
                                .cdi_hook_link = "/usr/local/bin/" CDI_HOOK_NAME,
                                .cdi_hook = GPUHOOK_NVHOOK_PATH,
                                .cdi_spec = GH_CDI_DIR_STATIC "/nvidia.com-gpu.json",
                                .g = g };
        _cleanup_error_ gh_error_t err = NULL;
        struct plan p = { 0 };
        size_t changed = 0;
        int r = GH_EXIT_FAILURE;

        if (argc >= 2 && strcmp(argv[1], "dev-char-links") == 0)
                return cli_setup_dev_char(argc - 1, argv + 1, g);
        if (argc >= 2 && strcmp(argv[1], "bpffs") == 0)
                return cli_setup_bpffs(argc - 1, argv + 1, g);
        if (parse(argc, argv, &o) < 0)
                return GH_EXIT_USAGE;
        if (build_plan(&o, &p, &err) < 0)
                goto out;
        for (size_t i = 0; i < p.n; i++) {
                const struct change *c = &p.v[i];
                if (!changes(c))
                        continue;
                changed++;
                if (o.dry_run)
                        setup_print_diff(stdout, c->path, c->exists ? c->old : NULL, c->new);
                else if (apply(c, &err) < 0)
                        goto out;
                else
                        printf("%s %s\n", c->new == NULL ? "removed" : c->exists ? "updated" : "created", c->path);
        }
        if (changed == 0)
                printf("%s: nothing to change\n", o.engine);
        else if (!o.dry_run)
                printf("now %s\n", p.restart);
        r = GH_EXIT_OK;
out:
        if (r != GH_EXIT_OK)
                fprintf(stderr, "gpu-cli: setup: %s\n", err && err->msg ? err->msg : "failed");
        plan_free(&p);
        return r;
}
