/* The driver-state cache (statecache.h, docs/statecache.md): the file format, and the careful
 * reading and atomic writing of a file that decides what the privileged hook believes. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "file.h"
#include "fingerprint.h"
#include "log.h"
#include "statecache.h"

#define MAX_MIGS 64
#define MAX_FP (256 * 1024)

void gh_statecache_entry_free(struct gh_statecache_entry *e)
{
        if (e == NULL)
                return;
        free(e->fingerprint);
        for (size_t i = 0; i < GH_DRIVER_FP_NLIBS; i++)
                free(e->libs[i]);
        gh_gpu_list_free(&e->list);
        memset(e, 0, sizeof(*e));
}

/* A string that is what it says: no NUL inside, no control characters, shorter than max. */
static bool good_string(const char *s, size_t len, size_t max, bool empty_ok)
{
        if (len >= max || strlen(s) != len || (len == 0 && !empty_ok))
                return false;
        for (size_t i = 0; i < len; i++)
                if ((unsigned char) s[i] < 0x20 || s[i] == 0x7f)
                        return false;
        return true;
}

#define COPY(dst, s, len, empty_ok)                                                                                    \
        (good_string((s), (len), sizeof(dst), (empty_ok)) ? (memcpy((dst), (s), (len) + 1), true) : false)

static int parse_mig(json_t *o, struct gh_gpu *gpu, struct gh_mig *mig, gh_error_t *err)
{
        json_error_t je;
        json_int_t index, gi, ci;
        const char *uuid;
        size_t ulen;

        if (json_unpack_ex(o, &je, JSON_STRICT, "{s:I, s:I, s:I, s:s%}", "index", &index, "gpu_instance", &gi,
                           "compute_instance", &ci, "uuid", &uuid, &ulen) < 0)
                return gh_err(err, 0, "GPU %s: MIG device: %s", gpu->busid, je.text);
        if (index < 0 || index >= MAX_MIGS || gi < 0 || gi > 4095 || ci < 0 || ci > 4095 ||
            !COPY(mig->uuid, uuid, ulen, false))
                return gh_err(err, 0, "GPU %s: a MIG device out of range", gpu->busid);
        mig->index = (unsigned) index;
        mig->gi = (unsigned) gi;
        mig->ci = (unsigned) ci;
        return 0;
}

static int parse_gpu(json_t *o, struct gh_gpu *gpu, gh_error_t *err)
{
        const char *uuid, *busid, *model, *brand, *arch;
        size_t ulen, blen, mlen, brlen, alen;
        json_error_t je;
        json_int_t minor;
        json_t *migs;
        int mig_enabled;
        char norm[GH_BUSID_MAX];

        if (json_unpack_ex(o, &je, JSON_STRICT, "{s:I, s:s%, s:s%, s:s%, s:s%, s:s%, s:b, s:o}", "minor", &minor,
                           "uuid", &uuid, &ulen, "bus_id", &busid, &blen, "model", &model, &mlen, "brand", &brand,
                           &brlen, "architecture", &arch, &alen, "mig_enabled", &mig_enabled, "mig_devices", &migs) < 0)
                return gh_err(err, 0, "a GPU: %s", je.text);
        if (minor < 0 || minor > 254 || !COPY(gpu->uuid, uuid, ulen, false) || !COPY(gpu->busid, busid, blen, false) ||
            !COPY(gpu->model, model, mlen, false) || !COPY(gpu->brand, brand, brlen, false) ||
            !COPY(gpu->arch, arch, alen, false) || !gh_version_is_dotted(gpu->arch) ||
            gh_busid_normalize(gpu->busid, norm, sizeof(norm)) < 0 || strcmp(norm, gpu->busid) != 0)
                return gh_err(err, 0, "a GPU with a field out of range");
        gpu->minor = (unsigned) minor;
        gpu->mig_enabled = mig_enabled;
        if (!json_is_array(migs) || json_array_size(migs) > MAX_MIGS)
                return gh_err(err, 0, "GPU %s: mig_devices must be an array of at most %d", gpu->busid, MAX_MIGS);
        if (json_array_size(migs) > 0 && !mig_enabled)
                return gh_err(err, 0, "GPU %s: MIG devices with MIG disabled", gpu->busid);
        gpu->migs = calloc(json_array_size(migs) + 1, sizeof(*gpu->migs));
        if (gpu->migs == NULL)
                return gh_err(err, ENOMEM, "reading the driver-state cache");
        for (size_t m = 0; m < json_array_size(migs); m++) {
                if (parse_mig(json_array_get(migs, m), gpu, &gpu->migs[m], err) < 0)
                        return -1;
                if (m > 0 && gpu->migs[m].index <= gpu->migs[m - 1].index)
                        return gh_err(err, 0, "GPU %s: MIG devices out of order", gpu->busid);
                gpu->nmigs++;
        }
        return 0;
}

static int parse_root(json_t *root, struct gh_statecache_entry *e, gh_error_t *err)
{
        const char *fp, *drv, *cuda;
        size_t fplen, dlen, clen;
        json_int_t format;
        json_t *libs, *gpus;
        json_error_t je;

        if (json_unpack_ex(root, &je, JSON_STRICT, "{s:I, s:s%, s:o, s:s%, s:s%, s:o}", "format", &format,
                           "fingerprint", &fp, &fplen, "libraries", &libs, "nvrm_version", &drv, &dlen, "cuda_version",
                           &cuda, &clen, "gpus", &gpus) < 0)
                return gh_err(err, 0, "%s", je.text);
        if (format != GH_STATECACHE_FORMAT)
                return gh_err(err, 0, "format %lld, not %d", (long long) format, GH_STATECACHE_FORMAT);
        if (fplen == 0 || fplen >= MAX_FP || strlen(fp) != fplen)
                return gh_err(err, 0, "a bad fingerprint");
        for (size_t i = 0; i < fplen; i++)
                if (((unsigned char) fp[i] < 0x20 && fp[i] != '\n') || fp[i] == 0x7f)
                        return gh_err(err, 0, "a bad fingerprint");
        if ((e->fingerprint = strdup(fp)) == NULL)
                return gh_err(err, ENOMEM, "reading the driver-state cache");
        if (!json_is_array(libs) || json_array_size(libs) != GH_DRIVER_FP_NLIBS)
                return gh_err(err, 0, "libraries must be an array of %d paths", GH_DRIVER_FP_NLIBS);
        for (size_t i = 0; i < GH_DRIVER_FP_NLIBS; i++) {
                json_t *v = json_array_get(libs, i);
                const char *s = json_string_value(v);
                if (s == NULL || !good_string(s, json_string_length(v), PATH_MAX, true) || (s[0] && s[0] != '/'))
                        return gh_err(err, 0, "a bad library path");
                if ((e->libs[i] = strdup(s)) == NULL)
                        return gh_err(err, ENOMEM, "reading the driver-state cache");
        }
        if (!COPY(e->list.driver_version, drv, dlen, false) || !gh_version_is_dotted(drv) ||
            !COPY(e->list.cuda_version, cuda, clen, false) || !gh_version_is_dotted(cuda))
                return gh_err(err, 0, "a bad driver or CUDA version");
        if (!json_is_array(gpus) || json_array_size(gpus) > GH_STATECACHE_MAX_GPUS)
                return gh_err(err, 0, "gpus must be an array of at most %d", GH_STATECACHE_MAX_GPUS);
        e->list.gpus = calloc(json_array_size(gpus) + 1, sizeof(*e->list.gpus));
        if (e->list.gpus == NULL)
                return gh_err(err, ENOMEM, "reading the driver-state cache");
        for (size_t g = 0; g < json_array_size(gpus); g++) {
                struct gh_gpu *gpu = &e->list.gpus[g];
                e->list.n++; /* counted first so that a half-filled GPU's MIG array is freed */
                if (parse_gpu(json_array_get(gpus, g), gpu, err) < 0)
                        return -1;
                gpu->index = (unsigned) g;
                for (size_t m = 0; m < gpu->nmigs; m++)
                        gpu->migs[m].parent_index = (unsigned) g;
                if (g > 0 && strcmp(gpu->busid, e->list.gpus[g - 1].busid) <= 0)
                        return gh_err(err, 0, "GPUs not in ascending bus-id order");
                for (size_t k = 0; k < g; k++)
                        if (e->list.gpus[k].minor == gpu->minor)
                                return gh_err(err, 0, "two GPUs with minor %u", gpu->minor);
        }
        e->list.from_nvml = true;
        e->list.origin = GH_ORIGIN_CACHE;
        return 0;
}

int gh_statecache_parse(const char *buf, size_t len, struct gh_statecache_entry *e, gh_error_t *err)
{
        json_error_t je;
        json_t *root;
        int r;

        memset(e, 0, sizeof(*e));
        if (len > GH_STATECACHE_MAX_SIZE)
                return gh_err(err, EFBIG, "larger than %d KiB", GH_STATECACHE_MAX_SIZE / 1024);
        root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
        if (root == NULL)
                return gh_err(err, 0, "not JSON (line %d: %s)", je.line, je.text);
        r = parse_root(root, e, err);
        json_decref(root);
        if (r < 0)
                gh_statecache_entry_free(e);
        return r;
}

char *gh_statecache_format(const struct gh_driver_fp *fp, const struct gh_gpu_list *list)
{
        json_t *root, *gpus = json_array();
        char *text;

        if (gpus == NULL)
                return NULL;
        for (size_t i = 0; i < list->n; i++) {
                const struct gh_gpu *g = &list->gpus[i];
                json_t *migs = json_array();
                for (size_t m = 0; migs && m < g->nmigs; m++)
                        json_array_append_new(migs, json_pack("{s:i, s:i, s:i, s:s}", "index", (int) g->migs[m].index,
                                                              "gpu_instance", (int) g->migs[m].gi, "compute_instance",
                                                              (int) g->migs[m].ci, "uuid", g->migs[m].uuid));
                json_array_append_new(gpus, json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:b, s:o*}", "minor",
                                                      (int) g->minor, "uuid", g->uuid, "bus_id", g->busid, "model",
                                                      g->model, "brand", g->brand, "architecture", g->arch,
                                                      "mig_enabled", g->mig_enabled, "mig_devices", migs));
        }
        root = json_pack("{s:i, s:s, s:[s,s], s:s, s:s, s:o}", "format", GH_STATECACHE_FORMAT, "fingerprint", fp->text,
                         "libraries", fp->libs[0], fp->libs[1], "nvrm_version", list->driver_version, "cuda_version",
                         list->cuda_version, "gpus", gpus);
        if (root == NULL)
                return NULL;
        text = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
        json_decref(root);
        return text;
}

/* ---- the file ---- */

/* The bytes of a cache file that passes the checks (regular, root's, not writable by others,
 * bounded); *buf is NUL-terminated. */
static int read_checked(const char *path, char **out, size_t *len, gh_error_t *err)
{
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        size_t used = 0;

        /* O_NONBLOCK: a FIFO put there opens at once (and is then refused) instead of blocking. */
        fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
                return gh_err(err, errno, errno == ELOOP ? "a symlink" : errno == ENOENT ? "missing" : "cannot open");
        if (fstat(fd, &st) < 0)
                return gh_err(err, errno, "cannot stat");
        if (!S_ISREG(st.st_mode))
                return gh_err(err, 0, "not a regular file");
        if (st.st_uid != 0)
                return gh_err(err, 0, "not owned by root (uid %u)", (unsigned) st.st_uid);
        if (st.st_mode & 022)
                return gh_err(err, 0, "writable by group or other (mode %04o)", (unsigned) st.st_mode & 07777);
        if (st.st_size > GH_STATECACHE_MAX_SIZE)
                return gh_err(err, EFBIG, "larger than %d KiB", GH_STATECACHE_MAX_SIZE / 1024);
        buf = malloc((size_t) st.st_size + 1);
        if (buf == NULL)
                return gh_err(err, ENOMEM, "reading");
        for (;;) {
                ssize_t n = read(fd, buf + used, (size_t) st.st_size + 1 - used);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return gh_err(err, errno, "reading");
                if (n == 0)
                        break;
                used += (size_t) n;
                if (used > (size_t) st.st_size)
                        return gh_err(err, 0, "grew while read");
        }
        buf[used] = '\0';
        *out = steal_pointer(&buf);
        *len = used;
        return 0;
}

int gh_statecache_read(const char *path, struct gh_statecache_entry *e, gh_error_t *err)
{
        _cleanup_free_ char *buf = NULL;
        size_t used = 0;

        memset(e, 0, sizeof(*e));
        if (read_checked(path, &buf, &used, err) < 0)
                return -1;
        return gh_statecache_parse(buf, used, e, err);
}

/* The first fingerprint line that differs, as "key". */
static void first_difference(const char *a, const char *b, char *why, size_t size)
{
        while (*a && *b) {
                size_t la = strcspn(a, "\n"), lb = strcspn(b, "\n");
                if (la != lb || memcmp(a, b, la) != 0) {
                        snprintf(why, size, "stale: %.*s changed", (int) strcspn(a, " \n"), a);
                        return;
                }
                a += la + (a[la] == '\n');
                b += lb + (b[lb] == '\n');
        }
        snprintf(why, size, "stale");
}

static int busid_cmp(const void *a, const void *b) { return strcmp(*(char *const *) a, *(char *const *) b); }

int gh_statecache_lookup(int rootfd, const char *path, struct gh_gpu_list *list, char *why, size_t size)
{
        _cleanup_statecache_entry_ struct gh_statecache_entry e = { 0 };
        _cleanup_driver_fp_ struct gh_driver_fp fp = { 0 };
        _cleanup_error_ gh_error_t err = NULL;
        char dummy[8];

        if (why == NULL)
                why = dummy, size = sizeof(dummy);
        memset(list, 0, sizeof(*list));
        if (gh_statecache_read(path, &e, &err) < 0) {
                snprintf(why, size, "%s%s", err->code == ENOENT ? "" : "ignored: ", err->msg);
                return 0;
        }
        if (gh_driver_fingerprint(rootfd, e.libs, &fp, &err) < 0) {
                snprintf(why, size, "no fingerprint: %s", err->msg);
                return 0;
        }
        if (strcmp(fp.text, e.fingerprint) != 0) {
                first_difference(fp.text, e.fingerprint, why, size);
                return 0;
        }
        /* The fingerprint matches; what the cache says must still agree with what proc says. */
        if (strcmp(fp.driver_version, e.list.driver_version) != 0 || fp.nbusids != e.list.n) {
                snprintf(why, size, "ignored: disagrees with /proc/driver/nvidia");
                return 0;
        }
        qsort(fp.busids, fp.nbusids, sizeof(*fp.busids), busid_cmp);
        for (size_t i = 0; i < e.list.n; i++) {
                if (strcmp(fp.busids[i], e.list.gpus[i].busid) != 0) {
                        snprintf(why, size, "ignored: disagrees with /proc/driver/nvidia");
                        return 0;
                }
        }
        *list = e.list;
        memset(&e.list, 0, sizeof(e.list));
        snprintf(why, size, "hit");
        return 1;
}

static int split_path(const char *path, char **dir, const char **base, gh_error_t *err)
{
        const char *slash = strrchr(path, '/');

        if (path[0] != '/' || slash == NULL || slash[1] == '\0')
                return gh_err_usage(err, "driver-state cache '%s': use an absolute file path", path);
        *base = slash + 1;
        *dir = slash == path ? strdup("/") : strndup(path, (size_t) (slash - path));
        if (*dir == NULL)
                return gh_err(err, ENOMEM, "driver-state cache");
        return 0;
}

static int open_dir(const char *dir, bool create, gh_error_t *err)
{
        struct stat st;
        int fd;

        fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT && create) {
                if (gh_mkdir_p_trusted(AT_FDCWD, dir, 0755, err) < 0)
                        return -1;
                fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        if (fd < 0)
                return gh_err(err, errno, "opening %s", dir);
        if (fstat(fd, &st) < 0 || st.st_uid != 0 || (st.st_mode & 022)) {
                close(fd);
                return gh_err(err, EPERM, "%s must be a directory owned by root and not writable by group or other",
                              dir);
        }
        return fd;
}

int gh_statecache_save(const char *path, const struct gh_driver_fp *fp, const struct gh_gpu_list *list, gh_error_t *err)
{
        _cleanup_free_ char *dir = NULL, *text = NULL, *file = NULL;
        _cleanup_close_ int dfd = -1;
        const char *base;
        int len;

        if (geteuid() != 0)
                return gh_err(err, EPERM, "only root writes the driver-state cache");
        if (split_path(path, &dir, &base, err) < 0)
                return -1;
        text = gh_statecache_format(fp, list);
        if (text == NULL || (len = asprintf(&file, "%s\n", text)) < 0)
                return gh_err(err, ENOMEM, "formatting the driver-state cache");
        dfd = open_dir(dir, true, err);
        if (dfd < 0)
                return -1;
        /* Atomic (concurrent cold starts each write their own temporary file; the last rename wins);
         * no fsync: a file torn by a crash fails its checks and is asked again. */
        return gh_write_file_at(dfd, base, file, (size_t) len, 0644, GH_WRITE_ATOMIC, NULL, err) < 0
                       ? gh_err_wrap(err, "driver-state cache")
                       : 0;
}

int gh_statecache_clear(const char *path, gh_error_t *err)
{
        _cleanup_free_ char *dir = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        const char *base;
        struct dirent *de;
        int dfd;
        size_t blen;

        if (split_path(path, &dir, &base, err) < 0)
                return -1;
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return errno == ENOENT ? 0 : gh_err(err, errno, "opening %s", dir);
        d = fdopendir(dfd);
        if (d == NULL) {
                close(dfd);
                return gh_err(err, errno, "opening %s", dir);
        }
        if (unlinkat(dfd, base, 0) < 0 && errno != ENOENT)
                return gh_err(err, errno, "removing %s", path);
        blen = strlen(base);
        while ((de = readdir(d)) != NULL)
                if ((de->d_name[0] == '.' && strncmp(de->d_name + 1, base, blen) == 0 && de->d_name[blen + 1] == '.') ||
                    (strncmp(de->d_name, base, blen) == 0 && strncmp(de->d_name + blen, ".plan-", 6) == 0))
                        unlinkat(dfd, de->d_name, 0);
        return 0;
}

/* ---- Plans (core/plancache.h) ----------------------------------------------------------------
 * One file per key next to the cache file, "<cache file>.plan-<hash of the key>": a header line
 * "gpu-hook-plan 1 KEYLEN FPLEN PLANLEN", then the key, the fingerprint the plan was built under and
 * the plan, byte for byte.  The hash only names the file: key and fingerprint are compared whole.  At
 * most GH_STATECACHE_MAX_PLANS files; one more removes the others first. */
#define PLAN_MAGIC "gpu-hook-plan 1"

static char *plan_file(const char *path, const char *key)
{
        uint64_t h = 0xcbf29ce484222325ull;
        char *f;

        for (const unsigned char *p = (const unsigned char *) key; *p; p++)
                h = (h ^ *p) * 0x100000001b3ull;
        return asprintf(&f, "%s.plan-%016llx", path, (unsigned long long) h) < 0 ? NULL : f;
}

int gh_statecache_plan_lookup(const char *path, const char *key, char **fingerprint, char **text)
{
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_free_ char *file = plan_file(path, key), *buf = NULL;
        size_t len, kl, fl, pl;
        int hdr = 0;

        *fingerprint = *text = NULL;
        if (file == NULL || read_checked(file, &buf, &len, &err) < 0)
                return 0;
        if (sscanf(buf, PLAN_MAGIC " %zu %zu %zu\n%n", &kl, &fl, &pl, &hdr) != 3 || hdr <= 0 || (size_t) hdr > len ||
            kl != strlen(key) || len - (size_t) hdr != kl + fl + pl || memcmp(buf + hdr, key, kl) != 0)
                return 0;
        *fingerprint = strndup(buf + hdr + kl, fl);
        *text = strndup(buf + hdr + kl + fl, pl);
        if (*fingerprint != NULL && strlen(*fingerprint) == fl && *text != NULL && strlen(*text) == pl)
                return 1;
        free(*fingerprint);
        free(*text);
        *fingerprint = *text = NULL;
        return 0;
}

int gh_statecache_plan_save(const char *path, const char *key, const char *fingerprint, const char *text,
                            gh_error_t *err)
{
        _cleanup_free_ char *dir = NULL, *file = plan_file(path, key), *body = NULL;
        _cleanup_close_ int dfd = -1;
        _cleanup_closedir_ DIR *d = NULL;
        const char *base, *fbase;
        struct dirent *de;
        size_t blen, nplans = 0;
        int len;

        if (geteuid() != 0)
                return gh_err(err, EPERM, "only root writes the driver-state cache");
        if (file == NULL || split_path(path, &dir, &base, err) < 0)
                return file == NULL ? gh_err(err, ENOMEM, "keeping the plan") : -1;
        len = asprintf(&body, PLAN_MAGIC " %zu %zu %zu\n%s%s%s", strlen(key), strlen(fingerprint), strlen(text), key,
                       fingerprint, text);
        if (len < 0 || (size_t) len > GH_STATECACHE_MAX_SIZE)
                return gh_err(err, len < 0 ? ENOMEM : EFBIG, "keeping the plan");
        dfd = open_dir(dir, true, err);
        if (dfd < 0)
                return -1;
        blen = strlen(base);
        if ((d = fdopendir(dup(dfd))) != NULL) {
                while ((de = readdir(d)) != NULL)
                        nplans += strncmp(de->d_name, base, blen) == 0 && strncmp(de->d_name + blen, ".plan-", 6) == 0;
                if (nplans >= GH_STATECACHE_MAX_PLANS) {
                        rewinddir(d);
                        while ((de = readdir(d)) != NULL)
                                if (strncmp(de->d_name, base, blen) == 0 &&
                                    strncmp(de->d_name + blen, ".plan-", 6) == 0)
                                        unlinkat(dfd, de->d_name, 0);
                }
        }
        fbase = strrchr(file, '/') + 1;
        return gh_write_file_at(dfd, fbase, body, (size_t) len, 0644, GH_WRITE_ATOMIC, NULL, err) < 0
                       ? gh_err_wrap(err, "keeping the plan")
                       : 0;
}

const struct gh_gpu_cache gh_statecache = {
        .lookup = gh_statecache_lookup,
        .save = gh_statecache_save,
        .plan_lookup = gh_statecache_plan_lookup,
        .plan_save = gh_statecache_plan_save,
};
