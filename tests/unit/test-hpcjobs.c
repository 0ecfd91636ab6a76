/* lib/ops/hpcjobs.c: dcgm-exporter's HPC job mapping files from an attributed snapshot: one file per
 * GPU in use by a running container, one line per job (NAMESPACE/POD or the container id), written
 * whole; other numbered files removed, anything else left. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "hpcjobs.h"
#include "tap.h"

static char dir[64];

static char *slurp(const char *name)
{
        static char buf[4096];
        char path[128];
        FILE *f;
        size_t n;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        if ((f = fopen(path, "r")) == NULL)
                return NULL;
        n = fread(buf, 1, sizeof(buf) - 1, f);
        buf[n] = '\0';
        fclose(f);
        return buf;
}

static void touch(const char *name)
{
        char path[128];
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        FILE *f = fopen(path, "w");
        if (f)
                fclose(f);
}

static struct gh_gpu_proc proc(enum gh_owner_kind kind, const char *id, const char *ns, const char *pod)
{
        struct gh_gpu_proc p = { .pid = 100, .used_memory = 1 << 20 };
        p.owner.kind = kind;
        p.owner.in_container = kind == GH_OWNER_CONTAINER || kind == GH_OWNER_CONTAINER_GONE;
        snprintf(p.owner.id, sizeof(p.owner.id), "%s", id);
        snprintf(p.owner.pod.namespace_, sizeof(p.owner.pod.namespace_), "%s", ns);
        snprintf(p.owner.pod.name, sizeof(p.owner.pod.name), "%s", pod);
        return p;
}

int main(void)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_gpu_proc p0[] = {
                proc(GH_OWNER_CONTAINER, "aaaa", "ml", "trainer-0"),
                proc(GH_OWNER_CONTAINER, "bbbb", "ml", "trainer-0"), /* a second container of the pod */
                proc(GH_OWNER_CONTAINER, "cccc", "", ""),            /* plain Docker: its id */
                proc(GH_OWNER_CONTAINER, "dddd", "", "my pod"),      /* whitespace would split the line */
                proc(GH_OWNER_CONTAINER_GONE, "eeee", "ml", "gone"),
                proc(GH_OWNER_HOST, "", "", ""),
        };
        struct gh_gpu_proc p1[] = { proc(GH_OWNER_HOST, "", "", "") };
        struct gh_gpu_usage u0 = { .procs = p0, .nprocs = 6 }, u1 = { .procs = p1, .nprocs = 1 };
        struct gh_gpu gpus[2] = { { .index = 0, .usage = &u0 }, { .index = 1, .usage = &u1 } };
        struct gh_gpu_list list = { .gpus = gpus, .n = 2 };
        struct stat st;
        char path[128];

        snprintf(dir, sizeof(dir), "%s/gh-hpc.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (mkdtemp(dir) == NULL)
                return 1;
        touch("1");
        touch("07");
        touch("README");
        ok(gh_hpc_jobs_write(dir, &list, &err) == 0, "the mapping is written");
        is_str(slurp("0"), "ml/trainer-0\ncccc\nmy_pod\n",
               "GPU 0: each running container's job once (a pod's two containers: one line; no whitespace)");
        ok(slurp("1") == NULL, "GPU 1 (only a host process) has no file: an empty one would hide its series");
        ok(slurp("07") == NULL, "a numbered file of no GPU is removed");
        ok(slurp("README") != NULL, "a file not named by a number is left alone");
        snprintf(path, sizeof(path), "%s/0", dir);
        ok(stat(path, &st) == 0 && (st.st_mode & 07777) == 0644, "0644: dcgm-exporter may run as another user");
        u0.nprocs = 0;
        ok(gh_hpc_jobs_write(dir, &list, &err) == 0 && slurp("0") == NULL,
           "when the containers stop, GPU 0's file goes");
        gh_error_free(&err);
        ok(gh_hpc_jobs_write("relative/dir", &list, &err) < 0, "a relative directory is refused");
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        if (system(cmd) != 0)
                printf("# could not remove %s\n", dir);
        return tap_done();
}
