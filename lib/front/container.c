/* Which container a host process belongs to (cgroup naming + NSpid), and runtime state lookup. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "container.h"
#include "gpus.h"
#include "log.h"
#include "usage.h"
#include "oci.h"
#include "readfile.h"

#define CGROUP_TEXT_MAX (64u << 10)
#define STATE_MAX (8u << 20)

/* Default state directories, each with the runtime whose it is. */
static const struct {
        const char *dir;
        const char *runtime;
} default_roots[] = {
        { "/run/runc", "runc" },
        { "/run/crun", "crun" },
        { "/run/docker/runtime-runc/moby", "docker" },
        { "/run/containerd/runc/k8s.io", "containerd" },
        { "/run/containerd/runc/default", "containerd" },
        { "/run/containerd/runc/moby", "docker" },
};

/* A cgroup path component named after a runtime: prefix, the id, an optional suffix. */
static const struct {
        const char *prefix;
        const char *runtime;
} named_scopes[] = {
        { "docker-", "docker" }, { "cri-containerd-", "containerd" },
        { "crio-", "cri-o" },    { "libpod-", "podman" },
        { "runc-", "runc" },     { "crun-", "crun" },
};

static bool id_char(char c)
{
        return isalnum((unsigned char) c) || c == '_' || c == '.' || c == ':' || c == '@' || c == '-';
}

/* Copies [s, s+len) into id when it is a plausible id. */
static bool take_id(const char *s, size_t len, char id[GH_CONTAINER_ID_MAX])
{
        if (len == 0 || len >= GH_CONTAINER_ID_MAX)
                return false;
        for (size_t i = 0; i < len; i++)
                if (!id_char(s[i]))
                        return false;
        memcpy(id, s, len);
        id[len] = '\0';
        return true;
}

bool gh_container_id_valid(const char *id)
{
        char copy[GH_CONTAINER_ID_MAX];
        return id[0] != '.' && take_id(id, strlen(id), copy);
}

static bool is_hex64(const char *s, size_t len)
{
        if (len != 64)
                return false;
        for (size_t i = 0; i < len; i++)
                if (!isxdigit((unsigned char) s[i]))
                        return false;
        return true;
}

static bool starts(const char *s, size_t len, const char *prefix)
{
        size_t n = strlen(prefix);
        return len >= n && memcmp(s, prefix, n) == 0;
}

/* One cgroup path: 1 when a runtime's naming is found, else 0 with the last component as id. */
static int parse_path(const char *path, size_t len, char runtime[GH_RUNTIME_MAX], char id[GH_CONTAINER_ID_MAX])
{
        const char *comp[64];
        size_t clen[64], n = 0;

        for (size_t i = 0; i < len && n < GH_ARRAY_SIZE(comp);) {
                while (i < len && path[i] == '/')
                        i++;
                size_t start = i;
                while (i < len && path[i] != '/')
                        i++;
                if (i > start) {
                        comp[n] = path + start;
                        clen[n++] = i - start;
                }
        }
        /* From the leaf up: podman puts its process in <libpod-ID.scope>/container. */
        for (size_t k = n; k-- > 0;) {
                const char *c = comp[k];
                size_t l = clen[k];
                if (l > 6 && memcmp(c + l - 6, ".scope", 6) == 0)
                        l -= 6;
                for (size_t s = 0; s < GH_ARRAY_SIZE(named_scopes); s++) {
                        size_t p = strlen(named_scopes[s].prefix);
                        /* conmon's own scopes (libpod-conmon-ID, crio-conmon-ID) are not the container */
                        if (!starts(c, l, named_scopes[s].prefix) || starts(c + p, l - p, "conmon-"))
                                continue;
                        if (take_id(c + p, l - p, id)) {
                                snprintf(runtime, GH_RUNTIME_MAX, "%s", named_scopes[s].runtime);
                                return 1;
                        }
                }
                if (k > 0 && is_hex64(c, l)) {
                        const char *parent = comp[k - 1];
                        size_t pl = clen[k - 1];
                        const char *rt = pl == 6 && memcmp(parent, "docker", 6) == 0 ? "docker"
                                         : pl == 4 && memcmp(parent, "crio", 4) == 0 ? "cri-o"
                                                                                     : NULL;
                        for (size_t j = 0; rt == NULL && j < k; j++)
                                if (starts(comp[j], clen[j], "kubepods"))
                                        rt = "cri";
                        if (rt != NULL && take_id(c, l, id)) {
                                snprintf(runtime, GH_RUNTIME_MAX, "%s", rt);
                                return 1;
                        }
                }
        }
        runtime[0] = '\0';
        id[0] = '\0';
        if (n > 0)
                take_id(comp[n - 1], clen[n - 1], id);
        return 0;
}

int gh_cgroup_container(const char *text, size_t len, char runtime[GH_RUNTIME_MAX], char id[GH_CONTAINER_ID_MAX])
{
        /* Preference: the unified (v2) line, then systemd's, then devices', then any other. */
        const char *best = NULL;
        size_t best_len = 0;
        int best_rank = -1;

        runtime[0] = id[0] = '\0';
        for (size_t i = 0; i < len;) {
                const char *line = text + i, *end = memchr(line, '\n', len - i);
                size_t l = end ? (size_t) (end - line) : len - i;
                const char *c1 = memchr(line, ':', l), *c2;
                char rt[GH_RUNTIME_MAX], cid[GH_CONTAINER_ID_MAX];

                i += l + 1;
                if (l == 0)
                        continue;
                if (c1 == NULL || (c2 = memchr(c1 + 1, ':', l - (size_t) (c1 + 1 - line))) == NULL)
                        return -1;
                const char *path = c2 + 1;
                size_t plen = l - (size_t) (path - line);
                if (plen == 0 || path[0] != '/')
                        return -1;
                if (parse_path(path, plen, rt, cid) == 1) {
                        memcpy(runtime, rt, sizeof(rt));
                        memcpy(id, cid, sizeof(cid));
                        return 1;
                }
                size_t ctl = (size_t) (c2 - c1 - 1);
                int rank = ctl == 0                                               ? 3
                           : ctl == 12 && memcmp(c1 + 1, "name=systemd", 12) == 0 ? 2
                           : ctl == 7 && memcmp(c1 + 1, "devices", 7) == 0        ? 1
                                                                                  : 0;
                if (rank > best_rank) {
                        best = path;
                        best_len = plen;
                        best_rank = rank;
                }
        }
        if (best != NULL)
                parse_path(best, best_len, runtime, id);
        runtime[0] = '\0';
        return 0;
}

static int read_small(const char *path, size_t max, char **buf, size_t *len, gh_error_t *err)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

        if (fd < 0)
                return gh_err(err, errno, "opening %s", path);
        return gh_read_bounded(fd, max, buf, len, path, err);
}

/* The runtime whose state directory holds id: a default root's, or by the state file format. */
static const char *runtime_of(const char *id, const char *const *state_roots)
{
        char path[PATH_MAX];
        struct stat st;

        for (size_t i = 0; i < GH_ARRAY_SIZE(default_roots); i++) {
                snprintf(path, sizeof(path), "%s/%s", default_roots[i].dir, id);
                if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
                        return default_roots[i].runtime;
        }
        for (size_t i = 0; state_roots != NULL && state_roots[i] != NULL; i++) {
                snprintf(path, sizeof(path), "%s/%s/state.json", state_roots[i], id);
                if (access(path, F_OK) == 0)
                        return "runc";
                snprintf(path, sizeof(path), "%s/%s/status", state_roots[i], id);
                if (access(path, F_OK) == 0)
                        return "crun";
        }
        return NULL;
}

int gh_proc_owner(pid_t pid, const char *const *state_roots, struct gh_proc_owner *out, gh_error_t *err)
{
        _cleanup_free_ char *cg = NULL, *status = NULL;
        size_t cglen, slen;
        char path[64];
        int depth = 0, r;

        memset(out, 0, sizeof(*out));
        out->ns_pid = pid;
        snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
        if (read_small(path, CGROUP_TEXT_MAX, &status, &slen, err) < 0)
                return -1;
        snprintf(path, sizeof(path), "/proc/%d/cgroup", (int) pid);
        if (read_small(path, CGROUP_TEXT_MAX, &cg, &cglen, err) < 0)
                return -1;
        for (char *line = status; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
                if (strncmp(line, "Name:\t", 6) == 0) {
                        size_t n = strcspn(line + 6, "\n");
                        snprintf(out->comm, sizeof(out->comm), "%.*s", (int) (n < 16 ? n : 16), line + 6);
                        for (char *c = out->comm; *c; c++)
                                if ((unsigned char) *c < 0x20 || *c == 0x7f)
                                        *c = '?';
                } else if (strncmp(line, "NSpid:", 6) == 0) {
                        /* host pid, then one PID per nested namespace: the last is the innermost */
                        char *p = line + 6, *end;
                        for (;;) {
                                long v = strtol(p, &end, 10);
                                if (end == p)
                                        break;
                                if (v > 0)
                                        out->ns_pid = (pid_t) v;
                                depth++;
                                p = end;
                        }
                }
        }
        r = gh_cgroup_container(cg, cglen, out->runtime, out->id);
        if (r < 0)
                return gh_err(err, 0, "%s: malformed", path);
        if (r == 1) {
                out->in_container = true;
                return 0;
        }
        /* No runtime's naming: a process in its own PID namespace under a plain cgroup name
         * (runc or crun with the cgroupfs manager). */
        if (depth > 1 && out->id[0] != '\0') {
                const char *rt = runtime_of(out->id, state_roots);
                out->in_container = true;
                snprintf(out->runtime, sizeof(out->runtime), "%s", rt ? rt : "unknown");
                return 0;
        }
        out->id[0] = '\0';
        out->runtime[0] = '\0';
        return 0;
}

/* Reads one container's state file: runc's state.json or crun's status. */
static int read_state(const char *dir, const char *runtime, struct gh_container_ref *out, gh_error_t *err)
{
        _cleanup_free_ char *buf = NULL, *path = NULL;
        _cleanup_json_ json_t *j = NULL;
        bool runc_format;
        size_t len;
        json_int_t pid;

        if (asprintf(&path, "%s/state.json", dir) < 0)
                return gh_err(err, ENOMEM, "reading %s", dir);
        runc_format = access(path, F_OK) == 0;
        if (!runc_format) {
                free(path);
                if (asprintf(&path, "%s/status", dir) < 0)
                        path = NULL;
                if (path == NULL)
                        return gh_err(err, ENOMEM, "reading %s", dir);
        }
        if (read_small(path, STATE_MAX, &buf, &len, err) < 0 || (j = gh_json_parse(buf, len, path, err)) == NULL)
                return -1;
        pid = json_integer_value(json_object_get(j, runc_format ? "init_process_pid" : "pid"));
        if (pid <= 0 || pid > INT_MAX)
                return gh_err(err, 0, "%s names no running process", path);
        out->pid = (pid_t) pid;
        snprintf(out->runtime, sizeof(out->runtime), "%s", runtime ? runtime : runc_format ? "runc" : "crun");
        if (runc_format) {
                json_t *labels = json_object_get(json_object_get(j, "config"), "labels"), *l;
                size_t i;
                json_array_foreach (labels, i, l) {
                        const char *s = json_string_value(l);
                        if (s != NULL && strncmp(s, "bundle=", 7) == 0)
                                snprintf(out->bundle, sizeof(out->bundle), "%s", s + 7);
                }
        } else {
                const char *b = json_string_value(json_object_get(j, "bundle"));
                if (b != NULL)
                        snprintf(out->bundle, sizeof(out->bundle), "%s", b);
        }
        return 0;
}

int gh_container_find(const char *id, const char *const *state_roots, struct gh_container_ref *out, gh_error_t *err)
{
        size_t idlen = strlen(id), found = 0, nextra = 0;
        char dir[PATH_MAX] = "";
        const char *runtime = NULL;

        memset(out, 0, sizeof(*out));
        if (idlen < 4 || idlen >= GH_CONTAINER_ID_MAX || !take_id(id, idlen, out->id) || id[0] == '.')
                return gh_err_usage(
                        err, "bad container id '%s'; give the id (or a unique prefix of 4 or more characters)", id);
        while (state_roots != NULL && state_roots[nextra] != NULL)
                nextra++;
        bool exact = false;
        for (size_t i = 0; i < GH_ARRAY_SIZE(default_roots) + nextra && !exact; i++) {
                bool is_default = i < GH_ARRAY_SIZE(default_roots);
                const char *root = is_default ? default_roots[i].dir : state_roots[i - GH_ARRAY_SIZE(default_roots)];
                _cleanup_closedir_ DIR *d = opendir(root);
                struct dirent *de;

                while (d != NULL && (de = readdir(d)) != NULL) {
                        if (de->d_name[0] == '.' || strncmp(de->d_name, id, idlen) != 0)
                                continue;
                        exact = strcmp(de->d_name, id) == 0;
                        if (exact)
                                found = 0; /* an exact match wins over prefixes seen before */
                        if (found++ == 0) {
                                snprintf(dir, sizeof(dir), "%s/%s", root, de->d_name);
                                snprintf(out->id, sizeof(out->id), "%s", de->d_name);
                                runtime = is_default ? default_roots[i].runtime : NULL;
                        }
                        if (exact)
                                break;
                }
        }
        if (found == 0)
                return gh_err(err, ENOENT,
                              "no running container '%s' in the runc, crun, Docker or containerd state "
                              "directories; pass --state-dir=DIR for another runtime root, or --pid=PID",
                              id);
        if (found > 1)
                return gh_err_usage(err, "container id prefix '%s' is ambiguous; give more characters", id);
        if (read_state(dir, runtime, out, err) < 0)
                return gh_err_wrap(err, "container %s", out->id);
        if (kill(out->pid, 0) < 0 && errno == ESRCH)
                return gh_err(err, ESRCH, "container %s is not running (its process %d is gone)", out->id,
                              (int) out->pid);
        return 0;
}
