/* GPU enumeration.  The fast path reads the driver's proc files under the driver root; the NVML
 * path asks the driver service (service.c) and only adds what NVML alone knows. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "driver.h"
#include "fingerprint.h"
#include "gpus.h"
#include "readfile.h"
#include "log.h"
#include "rootfs.h"
#include "service.h"

/* The driver's proc files are a few hundred bytes; a file far larger than that is not one. */
#define PROC_FILE_MAX (64 * 1024)
#define PROC_NVIDIA "proc/driver/nvidia"

/* Reads a whole (small) file below the root into a NUL-terminated buffer. */
static int read_in_root(int rootfd, const char *path, char **out, size_t *len, gh_error_t *err)
{
        return gh_read_at(rootfd, path, PROC_FILE_MAX, false, out, len, err);
}

static void copy_trimmed(char *dst, size_t size, const char *s, size_t len)
{
        while (len > 0 && isspace((unsigned char) *s))
                s++, len--;
        while (len > 0 && isspace((unsigned char) s[len - 1]))
                len--;
        if (len >= size)
                len = size - 1;
        memcpy(dst, s, len);
        dst[len] = '\0';
}

/* "Key:<blanks>value" lines; the key is compared after trimming, the value is trimmed. */
static bool field(const char *line, size_t len, const char *key, const char **value, size_t *vlen)
{
        const char *colon = memchr(line, ':', len);
        size_t klen;

        if (colon == NULL)
                return false;
        klen = (size_t) (colon - line);
        while (klen > 0 && isspace((unsigned char) line[klen - 1]))
                klen--;
        if (klen != strlen(key) || strncasecmp(line, key, klen) != 0)
                return false;
        *value = colon + 1;
        *vlen = len - (size_t) (colon + 1 - line);
        return true;
}

static bool parse_uint(const char *s, size_t len, unsigned long max, unsigned *out)
{
        char buf[16];
        char *end;
        unsigned long v;

        copy_trimmed(buf, sizeof(buf), s, len);
        if (buf[0] == '\0' || !isdigit((unsigned char) buf[0]) || strlen(buf) > 10)
                return false;
        errno = 0;
        v = strtoul(buf, &end, 10);
        if (errno != 0 || *end != '\0' || v > max)
                return false;
        *out = (unsigned) v;
        return true;
}

int gh_gpus_parse_information(const char *text, size_t len, const char *what, struct gh_gpu *gpu, gh_error_t *err)
{
        const char *p = text, *end = text + len;
        bool have_minor = false;

        gpu->uuid[0] = gpu->busid[0] = gpu->model[0] = '\0';
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                size_t llen = (size_t) ((nl ? nl : end) - p);
                const char *v;
                size_t vlen;

                if (field(p, llen, "Model", &v, &vlen)) {
                        copy_trimmed(gpu->model, sizeof(gpu->model), v, vlen);
                } else if (field(p, llen, "GPU UUID", &v, &vlen)) {
                        copy_trimmed(gpu->uuid, sizeof(gpu->uuid), v, vlen);
                } else if (field(p, llen, "Bus Location", &v, &vlen)) {
                        char raw[GH_BUSID_MAX];
                        copy_trimmed(raw, sizeof(raw), v, vlen);
                        if (gh_busid_normalize(raw, gpu->busid, sizeof(gpu->busid)) < 0)
                                return gh_err(err, 0, "%s: bad Bus Location '%s'; is this an NVIDIA driver's file?",
                                              what, raw);
                } else if (field(p, llen, "Device Minor", &v, &vlen)) {
                        /* 255 and above belong to nvidiactl and nvidia-modeset. */
                        if (!parse_uint(v, vlen, 254, &gpu->minor))
                                return gh_err(err, 0, "%s: bad Device Minor '%.*s'; is this an NVIDIA driver's file?",
                                              what, (int) (vlen > 20 ? 20 : vlen), v);
                        have_minor = true;
                }
                p = nl ? nl + 1 : end;
        }
        if (!have_minor)
                return gh_err(err, 0, "%s: no Device Minor line; is this an NVIDIA driver's file?", what);
        if (gpu->uuid[0] == '\0')
                return gh_err(err, 0, "%s: no GPU UUID line; is this an NVIDIA driver's file?", what);
        return 0;
}

int gh_gpus_driver_version(int rootfd, char *buf, size_t size, gh_error_t *err)
{
        _cleanup_free_ char *text = NULL;

        if (read_in_root(rootfd, PROC_NVIDIA "/version", &text, NULL, err) < 0) {
                if ((*err)->code == ENOENT || (*err)->code == ENOTDIR)
                        return gh_err_kind(err, GH_ERR_NO_DRIVER),
                               gh_err_wrap(err, "no NVIDIA driver under this root (is the nvidia module loaded?)");
                return -1;
        }
        if (gh_driver_parse_version(text, strlen(text), buf, size, err) < 0)
                return gh_err_wrap(err, PROC_NVIDIA "/version");
        return 0;
}

static int by_busid(const void *a, const void *b)
{
        return strcmp(((const struct gh_gpu *) a)->busid, ((const struct gh_gpu *) b)->busid);
}

static void gh_gpus_number(struct gh_gpu_list *list)
{
        qsort(list->gpus, list->n, sizeof(*list->gpus), by_busid);
        for (size_t i = 0; i < list->n; i++) {
                list->gpus[i].index = (unsigned) i;
                for (size_t m = 0; m < list->gpus[i].nmigs; m++)
                        list->gpus[i].migs[m].parent_index = (unsigned) i;
        }
}

static int read_gpu(int rootfd, const char *name, struct gh_gpu *gpu, gh_error_t *err)
{
        _cleanup_free_ char *path = NULL, *text = NULL;
        size_t len;

        if (asprintf(&path, PROC_NVIDIA "/gpus/%s/information", name) < 0)
                return gh_err(err, ENOMEM, "listing GPUs");
        if (read_in_root(rootfd, path, &text, &len, err) < 0)
                return -1;
        if (gh_gpus_parse_information(text, len, path, gpu, err) < 0)
                return -1;
        /* The directory is named after the bus id; older drivers' files may lack the line. */
        if (gpu->busid[0] == '\0' && gh_busid_normalize(name, gpu->busid, sizeof(gpu->busid)) < 0)
                return gh_err(err, 0, "%s: no Bus Location line and the directory is not a bus id", path);
        return 0;
}

int gh_gpus_fast(int rootfd, struct gh_gpu_list *list, gh_error_t *err)
{
        _cleanup_gpu_list_ struct gh_gpu_list l = { 0 };
        _cleanup_closedir_ DIR *dir = NULL;
        int dfd;
        struct dirent *de;

        memset(list, 0, sizeof(*list));
        if (gh_gpus_driver_version(rootfd, l.driver_version, sizeof(l.driver_version), err) < 0)
                return -1;
        dfd = gh_resolve(rootfd, PROC_NVIDIA "/gpus", O_RDONLY | O_DIRECTORY, err);
        if (dfd < 0) {
                /* A loaded driver without GPUs has no gpus directory: zero GPUs, not an error. */
                if ((*err)->code != ENOENT)
                        return -1;
                gh_error_free(err);
                *list = l;
                memset(&l, 0, sizeof(l));
                return 0;
        }
        dir = fdopendir(dfd);
        if (dir == NULL) {
                close(dfd);
                return gh_err(err, errno, "listing " PROC_NVIDIA "/gpus");
        }
        while ((errno = 0, de = readdir(dir)) != NULL) {
                struct gh_gpu *grown;
                if (de->d_name[0] == '.')
                        continue;
                grown = realloc(l.gpus, (l.n + 1) * sizeof(*grown));
                if (grown == NULL)
                        return gh_err(err, ENOMEM, "listing GPUs");
                l.gpus = grown;
                memset(&l.gpus[l.n], 0, sizeof(l.gpus[l.n]));
                l.n++;
                if (read_gpu(rootfd, de->d_name, &l.gpus[l.n - 1], err) < 0)
                        return -1;
        }
        if (errno != 0)
                return gh_err(err, errno, "listing " PROC_NVIDIA "/gpus");
        gh_gpus_number(&l);
        *list = l;
        memset(&l, 0, sizeof(l));
        gh_debug("GPUs from the fast path: %zu, driver %s", list->n, list->driver_version);
        return 0;
}

static int read_cap_minor(int rootfd, const char *path, unsigned *minor, bool *found, gh_error_t *err)
{
        _cleanup_free_ char *text = NULL;
        size_t len;

        *found = false;
        if (read_in_root(rootfd, path, &text, &len, err) < 0) {
                if ((*err)->code == ENOENT) {
                        gh_error_free(err);
                        return 0;
                }
                return -1;
        }
        for (const char *p = text; p < text + len;) {
                const char *nl = memchr(p, '\n', (size_t) (text + len - p));
                size_t llen = (size_t) ((nl ? nl : text + len) - p);
                const char *v;
                size_t vlen;
                if (field(p, llen, "DeviceFileMinor", &v, &vlen)) {
                        if (!parse_uint(v, vlen, (1u << 20) - 1, minor))
                                return gh_err(err, 0, "%s: bad DeviceFileMinor", path);
                        *found = true;
                        return 0;
                }
                p = nl ? nl + 1 : text + len;
        }
        return gh_err(err, 0, "%s: no DeviceFileMinor line", path);
}

int gh_gpus_read_mig_caps(int rootfd, struct gh_gpu_list *list, gh_error_t *err)
{
        for (size_t g = 0; g < list->n; g++) {
                struct gh_gpu *gpu = &list->gpus[g];
                for (size_t m = 0; m < gpu->nmigs; m++) {
                        struct gh_mig *mig = &gpu->migs[m];
                        char path[256];
                        bool gi_found, ci_found;

                        snprintf(path, sizeof(path), PROC_NVIDIA "/capabilities/gpu%u/mig/gi%u/access", gpu->minor,
                                 mig->gi);
                        if (read_cap_minor(rootfd, path, &mig->gi_cap_minor, &gi_found, err) < 0)
                                return -1;
                        snprintf(path, sizeof(path), PROC_NVIDIA "/capabilities/gpu%u/mig/gi%u/ci%u/access", gpu->minor,
                                 mig->gi, mig->ci);
                        if (read_cap_minor(rootfd, path, &mig->ci_cap_minor, &ci_found, err) < 0)
                                return -1;
                        mig->has_caps = gi_found && ci_found;
                        if (!mig->has_caps)
                                gh_debug("MIG device %s: no capability files for gi%u/ci%u", mig->uuid, mig->gi,
                                         mig->ci);
                }
        }
        return 0;
}

const char *gh_gpus_origin_name(enum gh_gpus_origin origin)
{
        switch (origin) {
        case GH_ORIGIN_NVML: return "nvml";
        case GH_ORIGIN_CACHE: return "cache";
        case GH_ORIGIN_CUDA: return "proc+libcuda";
        case GH_ORIGIN_PROC:
        default: return "proc";
        }
}

static long mono_us(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

/* A cache hit: NVML's facts without NVML.  The MIG cap minors are still read from proc. */
int gh_gpus_load_cached(int rootfd, const struct gh_gpus_opts *opts, struct gh_gpu_list *list)
{
        _cleanup_error_ gh_error_t e = NULL;
        char why[256];
        long t0 = mono_us();

        if (opts->cache->lookup(rootfd, opts->state_file, list, why, sizeof(why)) <= 0) {
                gh_debug("driver-state cache %s: %s (%ld us)", opts->state_file, why, mono_us() - t0);
                return 0;
        }
        if (gh_gpus_read_mig_caps(rootfd, list, &e) < 0) {
                gh_debug("driver-state cache %s: not used: %s", opts->state_file, e->msg);
                gh_gpu_list_free(list);
                return 0;
        }
        gh_debug("driver-state cache %s: hit, %zu GPUs, CUDA %s (%ld us)", opts->state_file, list->n,
                 list->cuda_version, mono_us() - t0);
        return 1;
}

/* After a miss: the answer NVML just gave is saved under the fingerprint taken before asking. */
static void save_cached(const struct gh_gpus_opts *opts, const struct gh_driver_fp *fp, const struct gh_gpu_list *list)
{
        _cleanup_error_ gh_error_t e = NULL;

        if (fp->text == NULL)
                return;
        if (opts->cache->save(opts->state_file, fp, list, &e) < 0)
                gh_debug("driver-state cache not saved: %s", e->msg);
        else
                gh_debug("driver-state cache %s saved", opts->state_file);
}

/* The fast path, and the CUDA version from the driver's libcuda (no NVML).  fp is the fingerprint
 * already taken, if any; else one is taken here (and dropped), because it knows which file is the
 * driver's libcuda. */
static int load_cuda(int rootfd, const struct gh_gpus_opts *opts, const struct gh_driver_fp *fp,
                     struct gh_gpu_list *list, gh_error_t *err)
{
        _cleanup_driver_fp_ struct gh_driver_fp own = { 0 };
        _cleanup_error_ gh_error_t e = NULL;

        if (gh_gpus_fast(rootfd, list, err) < 0)
                return -1;
        if (fp->text == NULL) {
                if (gh_driver_fingerprint(rootfd, NULL, &own, &e) < 0)
                        gh_debug("finding the driver's libcuda: %s; loading libcuda.so.1 by name", e->msg);
                fp = &own;
        }
        if (gh_service_cuda_version(rootfd, opts, fp->libs[1] && fp->libs[1][0] ? fp->libs[1] : NULL,
                                    list->cuda_version, sizeof(list->cuda_version), err) < 0) {
                gh_gpu_list_free(list);
                return -1;
        }
        list->origin = GH_ORIGIN_CUDA;
        return 0;
}

int gh_gpus_load(int rootfd, const struct gh_gpus_opts *opts, struct gh_gpu_list *list, gh_error_t *err)
{
        static const struct gh_gpus_opts defaults = GH_GPUS_OPTS_DEFAULT;
        _cleanup_driver_fp_ struct gh_driver_fp fp = { 0 };

        if (opts == NULL)
                opts = &defaults;
        if (opts->source == GH_GPUS_FAST) {
                gh_debug("enumerating GPUs: fast path (proc/driver/nvidia)");
                return gh_gpus_fast(rootfd, list, err);
        }
        if (opts->source == GH_GPUS_CUDA)
                return load_cuda(rootfd, opts, &fp, list, err);
        if (opts->state_file != NULL && opts->cache == NULL)
                gh_debug("driver-state cache: none handed to the library; asking NVML");
        else if (opts->state_file != NULL) {
                _cleanup_error_ gh_error_t e = NULL;
                if (!opts->refresh && gh_gpus_load_cached(rootfd, opts, list))
                        return 0;
                /* Taken before NVML answers: a change meanwhile leaves a cache that will not match.
                 * Only root writes the cache, so only root needs it. */
                if (geteuid() == 0 && gh_driver_fingerprint(rootfd, NULL, &fp, &e) < 0)
                        gh_debug("driver-state cache: no fingerprint (%s); not saving", e->msg);
        }
        if (opts->cuda_enough && !opts->refresh) {
                _cleanup_error_ gh_error_t e = NULL;
                if (load_cuda(rootfd, opts, &fp, list, &e) == 0) {
                        gh_debug("enumerating GPUs: fast path, CUDA %s from libcuda (only cuda requirements)",
                                 list->cuda_version);
                        return 0;
                }
                gh_debug("CUDA version from libcuda: %s; asking NVML", e->msg);
        }
        gh_debug("enumerating GPUs: NVML service");
        if (gh_service_query(rootfd, opts, list, err) < 0)
                return -1;
        gh_gpus_number(list);
        list->origin = GH_ORIGIN_NVML;
        if (opts->state_file != NULL && opts->cache != NULL)
                save_cached(opts, &fp, list);
        if (gh_gpus_read_mig_caps(rootfd, list, err) < 0) {
                gh_gpu_list_free(list);
                return -1;
        }
        return 0;
}
