/* create/run: the bundle's config.json in, the same document plus the GPU additions out.
 *
 * config.json is read through an fd of the bundle directory, never through a symlink, bounded in
 * size and depth by the hook's own JSON reader.  The new file goes through the one writer
 * (gh_write_file_at: a temporary name with the original's mode and owner, renamed over it): the
 * real runtime sees either the old document or the whole new one. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "file.h"
#include "oci.h"
#include "readfile.h"
#include "runtime.h"

/* What the hook reads of config.json (oci.h), and the bytes, for the document to edit
 * (edit_spec) once it is known to be a GPU container's. */
static int read_spec(int dirfd, const char *bundle, struct stat *st, char **buf, size_t *len,
                     struct gh_oci_spec *parsed, gh_error_t *err)
{
        _cleanup_close_ int fd = -1;

        fd = openat(dirfd, "config.json", O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0 && errno == ELOOP)
                return gh_err(err, 0, "%s/config.json is a symbolic link; the bundle must hold the file itself",
                              bundle);
        if (fd < 0)
                return gh_err(err, errno, "opening %s/config.json", bundle);
        if (fstat(fd, st) < 0)
                return gh_err(err, errno, "reading %s/config.json", bundle);
        if (!S_ISREG(st->st_mode))
                return gh_err(err, 0, "%s/config.json is not a regular file", bundle);
        if (gh_read_bounded(fd, GH_OCI_CONFIG_MAX, buf, len, "the bundle's config.json", err) < 0)
                return -1;
        return gh_oci_spec_parse(*buf, *len, bundle, parsed, err);
}

/* The same mode and owner as the original; atomic (the real runtime reads it next); no fsync: the
 * bundle is read at once and a crash ends the container anyway. */
static int write_spec(int dirfd, const char *bundle, json_t *spec, gh_error_t *err)
{
        _cleanup_free_ char *data = json_dumps(spec, JSON_COMPACT);

        if (data == NULL)
                return gh_err(err, ENOMEM, "writing %s/config.json", bundle);
        if (gh_write_file_at(dirfd, "config.json", data, strlen(data), 0644, GH_WRITE_ATOMIC | GH_WRITE_KEEP_OWNER,
                             NULL, err) < 0)
                return gh_err_wrap(err, "bundle %s", bundle);
        return 0;
}

int gh_rt_prepare_bundle(const char *bundle, const struct gh_config *cfg, const char *config_path, gh_error_t *err)
{
        _cleanup_close_ int dirfd = -1;
        _cleanup_json_ json_t *spec = NULL;
        _cleanup_free_ char *cwd = NULL, *buf = NULL;
        size_t len = 0;
        struct gh_oci_spec parsed = { 0 };
        struct gh_env_decision d = { 0 };
        struct gh_rt_devices devs = { 0 };
        struct stat st;
        int r = -1;

        if (bundle == NULL)
                bundle = cwd = getcwd(NULL, 0);
        if (bundle == NULL)
                return gh_err(err, errno, "finding the bundle (no --bundle, and the current directory)");
        dirfd = open(bundle, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0)
                return gh_err(err, errno, "opening the bundle directory %s", bundle);
        if (read_spec(dirfd, bundle, &st, &buf, &len, &parsed, err) < 0)
                goto out;
        if (gh_env_decide(&parsed, cfg, &d, err) < 0)
                goto out;
        if (!d.gpu_container) {
                r = 0;
                goto out;
        }
        /* The whole document, to edit, only for a GPU container: every other container pays for
         * the hook's reader alone. */
        spec = gh_json_parse(buf, len, "the bundle's config.json", err);
        if (spec == NULL || gh_rt_devices_for(cfg, &d, &devs, err) < 0 ||
            gh_rt_spec_add_gpu(spec, cfg, config_path, &devs, err) < 0 || write_spec(dirfd, bundle, spec, err) < 0)
                goto out;
        r = 0;
out:
        gh_rt_devices_free(&devs);
        gh_env_decision_free(&d);
        gh_oci_spec_free(&parsed);
        return r;
}
