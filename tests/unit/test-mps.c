/* lib/core/mps.c: MPS group names, sizes, and the group directory's state files (docs/mps.md): only
 * our own regular files of sane size are read (symlinks, FIFOs, directories, group-writable or
 * foreign files are refused), writes replace the file whole, a group is "running" only while its
 * recorded daemon (pid and start time) runs, and the listing is sorted and skips what is broken. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "mps.h"
#include "proc.h"
#include "tests/tap.h"
#include "tests/testutil.h"

#define UUID "GPU-af0f763e-f7c4-6ced-14b4-3f65d4c848a7"

static char T[64];

static void test_names(void)
{
        static const char *good[] = { "train", "a", "A_b.c-1", "x..y",
                                      "0123456789012345678901234567890123456789012345678901234567890123" };
        static const char *bad[] = { "",
                                     ".hidden",
                                     "..",
                                     "-rf",
                                     "a/b",
                                     "a b",
                                     "tr\xc3\xa4in",
                                     "a\nb",
                                     "$(id)",
                                     "01234567890123456789012345678901234567890123456789012345678901234" };
        for (size_t i = 0; i < GH_ARRAY_SIZE(good); i++) {
                _cleanup_error_ gh_error_t err = NULL;
                ok(gh_mps_name_check(good[i], &err) == 0, "group name '%.20s' (%zu chars) is fine", good[i],
                   strlen(good[i]));
        }
        for (size_t i = 0; i < GH_ARRAY_SIZE(bad); i++) {
                _cleanup_error_ gh_error_t err = NULL;
                int r = gh_mps_name_check(bad[i], &err);
                ok(r < 0 && strstr(err->msg, "invalid MPS group name") && !strchr(err->msg, '\n'),
                   "group name %zu of the bad ones is refused in one line: %s", i,
                   r < 0 && !strchr(err->msg, '\n') ? err->msg : "");
        }
        _cleanup_error_ gh_error_t err = NULL;
        ok(gh_mps_name_check(NULL, &err) < 0, "no name is refused");
}

static void test_sizes(void)
{
        static const struct {
                const char *s;
                unsigned long long mib; /* 0: refused */
        } cases[] = {
                { "4G", 4096 },
                { "4GiB", 4096 },
                { "4gb", 4096 },
                { "512M", 512 },
                { "512MiB", 512 },
                { "1024", 1024 },
                { "1T", 1048576 },
                { "0", 0 },
                { "0G", 0 },
                { "", 0 },
                { "G", 0 },
                { "-1G", 0 },
                { "4X", 0 },
                { "4 G", 0 },
                { "1.5G", 0 },
                { "99999999999999999999", 0 },
                { "1099511627777", 0 },
                { "1073741825G", 0 },
                { "1073741824G", 1ULL << 40 },
        };
        for (size_t i = 0; i < GH_ARRAY_SIZE(cases); i++) {
                _cleanup_error_ gh_error_t err = NULL;
                unsigned long long mib = 7;
                int r = gh_mps_parse_size(cases[i].s, &mib, &err);
                if (cases[i].mib)
                        ok(r == 0 && mib == cases[i].mib, "size '%s' is %llu MiB", cases[i].s, cases[i].mib);
                else
                        ok(r < 0 && mib == 7 && strstr(err->msg, "4G, 512M"),
                           "size '%s' is refused, saying how to write one", cases[i].s);
        }
}

static void test_paths(void)
{
        char p[PATH_MAX];

        is_str(gh_mps_dir(NULL), GH_MPS_DEFAULT_DIR, "groups live in " GH_MPS_DEFAULT_DIR " by default");
        is_str(gh_mps_dir("/srv/mps"), "/srv/mps", "or where --mps-dir says");
        gh_mps_group_path(p, sizeof(p), NULL, "train", "pipe");
        is_str(p, GH_MPS_DEFAULT_DIR "/train/pipe", "a group's pipe directory");
        gh_mps_group_path(p, sizeof(p), "/srv/mps", "train", NULL);
        is_str(p, "/srv/mps/train", "a group's directory");
}

struct kv {
        char text[512];
        int n;
};

static void collect(const char *key, const char *value, void *data)
{
        struct kv *kv = data;
        size_t len = strlen(kv->text);
        snprintf(kv->text + len, sizeof(kv->text) - len, "[%s|%s]", key, value);
        kv->n++;
}

static int kv_read(const char *path, struct kv *kv, gh_error_t *err)
{
        memset(kv, 0, sizeof(*kv));
        return gh_mps_kv_read(path, collect, kv, err);
}

static void test_kv(void)
{
        char path[PATH_MAX], other[PATH_MAX + 8], victim[PATH_MAX];
        _cleanup_error_ gh_error_t err = NULL;
        struct stat st;
        struct kv kv;
        int r;

        snprintf(path, sizeof(path), "%s/kv/state", T);
        put_file("", "%s/kv/.keep", T);
        ok(gh_mps_kv_write(path, "a=1\nb=x=y\nno equals sign\nc=\n", &err) == 0, "a state file is written");
        ok(stat(path, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0644 && st.st_uid == geteuid(),
           "a regular file of ours, mode 0644");
        ok(kv_read(path, &kv, &err) == 0 && kv.n == 3 && strcmp(kv.text, "[a|1][b|x=y][c|]") == 0,
           "read back: KEY=VALUE lines, the value keeps later '=', a line without '=' is skipped: %s", kv.text);
        char *left = sh_output("ls -A '%s/kv'", T);
        ok(left && strcmp(left, ".keep\nstate\n") == 0, "no temporary file is left next to it");
        free(left);
        ok(gh_mps_kv_write(path, "z=26\n", &err) == 0 && kv_read(path, &kv, &err) == 0 &&
                   strcmp(kv.text, "[z|26]") == 0,
           "a second write replaces the whole file");

        /* A planted link at the temporary name or at the file itself is never written through. */
        snprintf(victim, sizeof(victim), "%s/victim", T);
        put_file("precious\n", "%s", victim);
        snprintf(other, sizeof(other), "%s.tmp", path);
        if (symlink(victim, other) < 0)
                abort();
        r = gh_mps_kv_write(path, "y=25\n", &err);
        left = sh_output("cat '%s'", victim);
        ok(left && strcmp(left, "precious\n") == 0, "a symlink planted at %s.tmp is not written through (write %s)",
           "state", r == 0 ? "succeeded" : "refused");
        free(left);
        gh_error_free(&err);
        unlink(other);
        snprintf(other, sizeof(other), "%s/kv/linked", T);
        if (symlink(victim, other) < 0)
                abort();
        r = gh_mps_kv_write(other, "y=25\n", &err);
        left = sh_output("cat '%s'", victim);
        ok(left && strcmp(left, "precious\n") == 0 && (r < 0 || (lstat(other, &st) == 0 && S_ISREG(st.st_mode))),
           "a state path that is a symlink is replaced, not followed");
        free(left);
        gh_error_free(&err);

        /* What is read. */
        snprintf(other, sizeof(other), "%s/kv/link", T);
        if (symlink(path, other) < 0)
                abort();
        r = kv_read(other, &kv, &err);
        ok(r < 0 && kv.n == 0, "a symlink to a good state file is refused: %s", r < 0 ? err->msg : "");
        gh_error_free(&err);
        r = kv_read(strcat(strcpy(other, T), "/kv/missing"), &kv, &err);
        ok(r < 0 && err->code == ENOENT, "a missing file fails with ENOENT");
        gh_error_free(&err);

        struct {
                const char *setup, *what;
        } refused[] = {
                { "chmod 0664 \"$K\"", "a group-writable file" },
                { "chmod 0646 \"$K\"", "an other-writable file" },
                { "rm \"$K\" && mkfifo -m 0644 \"$K\"", "a FIFO (without blocking on it)" },
                { "rm \"$K\" && mkdir \"$K\"", "a directory" },
                { "head -c 4609 /dev/zero | tr '\\0' x > \"$K\"", "a file over 4608 bytes" },
        };
        setenv("K", path, 1);
        for (size_t i = 0; i < GH_ARRAY_SIZE(refused); i++) {
                sh("rm -rf \"$K\"; printf 'k=v\\n' > \"$K\"; chmod 0644 \"$K\"");
                sh("%s", refused[i].setup);
                r = kv_read(path, &kv, &err);
                ok(r < 0 && err->code == EBADMSG && kv.n == 0 && strstr(err->msg, path),
                   "%s is refused (EBADMSG), naming it", refused[i].what);
                gh_error_free(&err);
        }
        sh("rm -rf \"$K\"; printf 'k=v\\n' > \"$K\"; chmod 0644 \"$K\"");
        ok(kv_read(path, &kv, &err) == 0 && kv.n == 1, "the same file, ours and 0644, is read");
        if (geteuid() == 0) {
                sh("chown 1234 \"$K\"");
                r = kv_read(path, &kv, &err);
                ok(r < 0 && err->code == EBADMSG, "a file of another user is refused (root: we are not uid 1234)");
        } else {
                tap_diag("not root: the foreign-owner case needs chown, skipped");
        }
}

static void group(struct gh_mps_group *g, const char *name, pid_t pid, unsigned long long starttime)
{
        memset(g, 0, sizeof(*g));
        snprintf(g->name, sizeof(g->name), "%s", name);
        snprintf(g->gpu_uuid, sizeof(g->gpu_uuid), "%s", UUID);
        g->gpu_index = 1;
        g->threads = 25;
        g->memory_mib = 8192;
        g->pid = pid;
        g->starttime = starttime;
}

static void save(const char *dir, const struct gh_mps_group *g)
{
        _cleanup_error_ gh_error_t err = NULL;
        char p[PATH_MAX];

        gh_mps_group_path(p, sizeof(p), dir, g->name, NULL);
        if (mkdir(p, 0755) < 0 || gh_mps_save(dir, g, &err) < 0)
                abort();
}

static void test_groups(void)
{
        char dir[PATH_MAX];
        struct gh_mps_group g, in;
        _cleanup_error_ gh_error_t err = NULL;
        unsigned long long me = gh_proc_starttime(getpid());
        pid_t dead;
        int r;

        snprintf(dir, sizeof(dir), "%s/groups", T);
        if (mkdir(dir, 0755) < 0)
                abort();
        if ((dead = fork()) == 0)
                _exit(0);
        waitpid(dead, NULL, 0);

        ok(me != 0, "our own start time is known");
        group(&g, "train", getpid(), me);
        save(dir, &g);
        ok(gh_mps_load(dir, "train", &in, &err) == 0, "a saved group loads");
        ok(strcmp(in.name, "train") == 0 && strcmp(in.gpu_uuid, UUID) == 0 && in.gpu_index == 1 && in.threads == 25 &&
                   in.memory_mib == 8192 && in.pid == getpid() && in.starttime == me,
           "every field comes back");
        ok(in.alive, "a group whose daemon runs is alive");
        ok(gh_mps_load_running(dir, "train", &in, &err) == 0, "and may be joined");

        group(&g, "gone", dead, me);
        save(dir, &g);
        ok(gh_mps_load(dir, "gone", &in, &err) == 0 && !in.alive, "a group whose daemon is gone loads, not alive");
        r = gh_mps_load_running(dir, "gone", &in, &err);
        ok(r < 0 && strstr(err->msg, "'gone' is not running") && strstr(err->msg, "gpu-cli mps stop gone"),
           "and may not be joined; the error says how to restart it: %s", r < 0 ? err->msg : "");
        gh_error_free(&err);

        group(&g, "reused", getpid(), me + 1);
        save(dir, &g);
        ok(gh_mps_load(dir, "reused", &in, &err) == 0 && !in.alive,
           "a running pid with another start time (a reused pid) is not the group's daemon");
        group(&g, "nostart", getpid(), 0);
        save(dir, &g);
        ok(gh_mps_load(dir, "nostart", &in, &err) == 0 && !in.alive, "nor is one without a recorded start time");

        r = gh_mps_load(dir, "nosuch", &in, &err);
        ok(r < 0 && err->code == ENOENT && strstr(err->msg, "no MPS group 'nosuch'") && strstr(err->msg, "mps list"),
           "a group that does not exist: %s", r < 0 ? err->msg : "");
        gh_error_free(&err);
        r = gh_mps_load(dir, "..", &in, &err);
        ok(r < 0 && strstr(err->msg, "invalid MPS group name"), "'..' is refused as a name before any file is read");
        gh_error_free(&err);

        put_file("name=other\ngpu_uuid=" UUID "\n", "%s/liar/group", dir);
        r = gh_mps_load(dir, "liar", &in, &err);
        ok(r < 0 && strstr(err->msg, "malformed") && strstr(err->msg, "mps stop liar"),
           "a state that names another group is malformed: %s", r < 0 ? err->msg : "");
        gh_error_free(&err);
        put_file("name=nogpu\npid=1\n", "%s/nogpu/group", dir);
        r = gh_mps_load(dir, "nogpu", &in, &err);
        ok(r < 0 && strstr(err->msg, "malformed"), "so is one without a GPU");
        gh_error_free(&err);
        put_file("name=loose\ngpu_uuid=" UUID "\n", "%s/loose/group", dir);
        sh("chmod 0666 %s/loose/group", dir);
        r = gh_mps_load(dir, "loose", &in, &err);
        ok(r < 0 && strstr(err->msg, "not a root-owned regular file") && strstr(err->msg, "mps stop loose"),
           "a world-writable state is refused, saying what to do: %s", r < 0 ? err->msg : "");
        gh_error_free(&err);

        /* The listing: sorted, without what is not a group or is broken. */
        put_file("", "%s/.hidden/group", dir);
        put_file("", "%s/bad name/group", dir);
        struct gh_mps_group *v = NULL;
        size_t n = 0;
        char names[256] = "";
        ok(gh_mps_list(dir, &v, &n, &err) == 0, "the groups are listed");
        for (size_t i = 0; i < n; i++)
                snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s%s", i ? " " : "", v[i].name,
                         v[i].alive ? "+" : "");
        is_str(names, "gone nostart reused train+", "sorted by name, alive ones marked, broken ones left out");
        free(v);

        snprintf(dir, sizeof(dir), "%s/no-such-dir", T);
        v = (void *) 1;
        ok(gh_mps_list(dir, &v, &n, &err) == 0 && n == 0 && v == NULL,
           "a groups directory that does not exist lists none");
}

int main(void)
{
        snprintf(T, sizeof(T), "/tmp/test-mps.XXXXXX");
        if (mkdtemp(T) == NULL)
                return 1;
        test_names();
        test_sizes();
        test_paths();
        test_kv();
        test_groups();
        sh("rm -rf '%s'", T);
        return tap_done();
}
