/* dcgm-exporter's HPC job mapping files (hpcjobs.h). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "file.h"
#include "hpcjobs.h"

void gh_hpc_job_id(const struct gh_proc_owner *o, char *buf, size_t size)
{
        if (o->pod.name[0] && o->pod.namespace_[0])
                snprintf(buf, size, "%s/%s", o->pod.namespace_, o->pod.name);
        else if (o->pod.name[0])
                snprintf(buf, size, "%s", o->pod.name);
        else
                snprintf(buf, size, "%s", o->id);
        for (char *p = buf; *p; p++)
                if (isspace((unsigned char) *p))
                        *p = '_';
}

/* The lines of one GPU's file: each running container's job id once. */
static char *jobs_of(const struct gh_gpu *gpu)
{
        char *text = NULL, job[2 * GH_POD_FIELD_MAX + 2];
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);

        if (f == NULL)
                return NULL;
        for (size_t i = 0; gpu->usage && i < gpu->usage->nprocs; i++) {
                const struct gh_proc_owner *o = &gpu->usage->procs[i].owner;
                bool dup = false;
                if (o->kind != GH_OWNER_CONTAINER)
                        continue;
                gh_hpc_job_id(o, job, sizeof(job) - 1);
                for (size_t k = 0; k < i && !dup; k++) {
                        char other[sizeof(job)];
                        const struct gh_proc_owner *p = &gpu->usage->procs[k].owner;
                        if (p->kind != GH_OWNER_CONTAINER)
                                continue;
                        gh_hpc_job_id(p, other, sizeof(other) - 1);
                        dup = strcmp(job, other) == 0;
                }
                if (!dup)
                        fprintf(f, "%s\n", job);
        }
        fclose(f);
        return text;
}

static bool all_digits(const char *s)
{
        if (*s == '\0')
                return false;
        for (; *s; s++)
                if (!isdigit((unsigned char) *s))
                        return false;
        return true;
}

int gh_hpc_jobs_write(const char *dir, const struct gh_gpu_list *list, gh_error_t *err)
{
        _cleanup_close_ int dirfd = -1, rfd = -1;
        _cleanup_closedir_ DIR *d = NULL;
        _cleanup_free_ bool *written = NULL;
        unsigned max_index = 0;
        struct dirent *de;

        if (dir[0] != '/')
                return gh_err(err, EINVAL, "HPC job mapping: '%s' is not an absolute path", dir);
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return gh_err(err, errno, "HPC job mapping: creating %s", dir);
        dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0)
                return gh_err(err, errno, "HPC job mapping: opening %s", dir);
        for (size_t g = 0; g < list->n; g++)
                if (list->gpus[g].index > max_index)
                        max_index = list->gpus[g].index;
        written = calloc((size_t) max_index + 1, sizeof(*written));
        if (written == NULL)
                return gh_err(err, ENOMEM, "HPC job mapping");
        for (size_t g = 0; g < list->n; g++) {
                _cleanup_free_ char *text = jobs_of(&list->gpus[g]);
                char name[16];
                if (text == NULL)
                        return gh_err(err, ENOMEM, "HPC job mapping");
                if (text[0] == '\0')
                        continue;
                snprintf(name, sizeof(name), "%u", list->gpus[g].index);
                if (gh_write_file_at(dirfd, name, text, strlen(text), 0644, GH_WRITE_ATOMIC, NULL, err) < 0)
                        return gh_err_wrap(err, "HPC job mapping: %s", dir);
                written[list->gpus[g].index] = true;
        }
        rfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (rfd < 0 || (d = fdopendir(rfd)) == NULL)
                return gh_err(err, errno, "HPC job mapping: reading %s", dir);
        rfd = -1; /* the DIR owns it */
        while ((de = readdir(d)) != NULL) {
                char canon[32];
                unsigned long idx;
                if (!all_digits(de->d_name))
                        continue;
                idx = strtoul(de->d_name, NULL, 10);
                snprintf(canon, sizeof(canon), "%lu", idx);
                /* GPU N's file, written now, stays; "01" is not GPU 1's */
                if (idx <= max_index && written[idx] && strcmp(canon, de->d_name) == 0)
                        continue;
                if (unlinkat(dirfd, de->d_name, 0) < 0 && errno != ENOENT)
                        return gh_err(err, errno, "HPC job mapping: removing %s/%s", dir, de->d_name);
        }
        return 0;
}
