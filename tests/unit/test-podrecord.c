/* lib/front/podrecord.c: the pod from CRI annotations (containerd's and CRI-O's keys, hostile values),
 * and container records: written whole and root-only, read back only when they are ours, collected
 * when the container's init is gone. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "podrecord.h"
#include "proc.h"
#include "tap.h"
#include "utf8.h"

/* The annotations object as config.json's reader gives it: node 0 of doc (the last one parsed). */
static struct gh_json doc;

static int annotations(const char *text)
{
        _cleanup_error_ gh_error_t e = NULL;

        gh_json_free(&doc);
        if (gh_jsonread_parse(text, strlen(text), &doc, &e) < 0) {
                printf("# bad test JSON: %s\n", e->msg);
                return -1;
        }
        return 0;
}

static void test_annotations(void)
{
        struct gh_pod pod;
        int a;

        a = annotations("{\"io.kubernetes.cri.sandbox-name\": \"trainer-0\", \"io.kubernetes.cri.sandbox-namespace\": "
                        "\"ml\", \"io.kubernetes.cri.container-name\": \"worker\", \"io.kubernetes.cri.sandbox-uid\": "
                        "\"1b2c\", \"io.kubernetes.cri.container-type\": \"container\"}");
        ok(gh_pod_from_annotations(&doc, a, &pod) && strcmp(pod.name, "trainer-0") == 0 &&
                   strcmp(pod.namespace_, "ml") == 0 && strcmp(pod.container, "worker") == 0 &&
                   strcmp(pod.uid, "1b2c") == 0,
           "containerd's CRI annotations name pod, namespace, container and uid");
        a = annotations("{\"io.kubernetes.pod.name\": \"web-1\", \"io.kubernetes.pod.namespace\": \"prod\", "
                        "\"io.kubernetes.container.name\": \"nginx\", \"io.kubernetes.pod.uid\": \"9f\"}");
        ok(gh_pod_from_annotations(&doc, a, &pod) && strcmp(pod.name, "web-1") == 0 &&
                   strcmp(pod.namespace_, "prod") == 0 && strcmp(pod.container, "nginx") == 0 &&
                   strcmp(pod.uid, "9f") == 0,
           "CRI-O's annotations name them too");
        a = annotations("{\"io.kubernetes.pod.name\": \"crio\", \"io.kubernetes.cri.sandbox-name\": \"containerd\"}");
        ok(gh_pod_from_annotations(&doc, a, &pod) && strcmp(pod.name, "containerd") == 0,
           "both present: containerd's key wins");
        a = annotations("{\"org.gpu-hook.mps-group\": \"team\", \"io.kubernetes.pod.name\": 7}");
        ok(!gh_pod_from_annotations(&doc, a, &pod) && pod.name[0] == '\0',
           "no pod: a number is not a name, other keys ignored");
        ok(!gh_pod_from_annotations(NULL, -1, &pod), "no annotations at all");
        a = annotations("\"x\"");
        ok(!gh_pod_from_annotations(&doc, a, &pod), "annotations that are not an object");

        /* hostile values */
        a = annotations("{\"io.kubernetes.pod.name\": \"a\\nb\\r\\tc\\u0001d\\u001b[2J\", "
                        "\"io.kubernetes.pod.namespace\": \"q\\\"uo\\\\te\"}");
        gh_pod_from_annotations(&doc, a, &pod);
        is_str(pod.name, "a?b??c?d?[2J", "newline, CR, tab, SOH and ESC become '?' (no second line, no escape)");
        is_str(pod.namespace_, "q\"uo\\te", "quotes and backslashes are kept (the exposition escapes them)");
        char *huge = malloc(100000);
        size_t o = (size_t) sprintf(huge, "{\"io.kubernetes.pod.name\": \"");
        for (int i = 0; i < 20000; i++)
                o += (size_t) sprintf(huge + o, "\u00e9"); /* 2 bytes each */
        sprintf(huge + o, "\"}");
        a = annotations(huge);
        gh_pod_from_annotations(&doc, a, &pod);
        is_int(strlen(pod.name), GH_POD_FIELD_MAX - 2, "a 40000-byte name is cut to %d bytes", GH_POD_FIELD_MAX - 2);
        ok(gh_utf8_seq((const unsigned char *) pod.name + strlen(pod.name) - 2, 2) == 2,
           "on a character boundary (the last 2-byte character is whole)");
        free(huge);
        gh_json_free(&doc);

        char clean[16];
        gh_utf8_clean(clean, sizeof(clean), "a\xff\xc3(b\xe2\x82", 7);
        is_str(clean,
               "a?"
               "?(b?"
               "?",
               "invalid UTF-8 bytes become '?'");
}

static char dir[64];

static int count_files(void)
{
        DIR *d = opendir(dir);
        struct dirent *de;
        int n = 0;
        while (d && (de = readdir(d)))
                n += de->d_name[0] != '.';
        if (d)
                closedir(d);
        return n;
}

/* A pid that has exited (reaped), and its start time while it ran. */
static pid_t dead_pid(unsigned long long *start)
{
        int p[2];
        pid_t pid;
        char c;

        if (pipe(p) < 0 || (pid = fork()) < 0)
                return -1;
        if (pid == 0) {
                close(p[1]);
                if (read(p[0], &c, 1) < 0)
                        _exit(1);
                _exit(0);
        }
        close(p[0]);
        *start = gh_proc_starttime(pid);
        close(p[1]);
        waitpid(pid, NULL, 0);
        return pid;
}

static bool keep_claimed(const char *id, void *data)
{
        (void) data;
        return strcmp(id, "c1a1med") == 0;
}

static void test_records(void)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_record r = { .id = "0123abcd", .pid = getpid() }, back;
        struct stat st;
        char path[256];
        int fd;

        snprintf(dir, sizeof(dir), "%s/gh-records.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (mkdtemp(dir) == NULL)
                return;
        rmdir(dir);
        r.starttime = gh_proc_starttime(getpid());
        snprintf(r.pod.name, sizeof(r.pod.name), "trainer-0");
        snprintf(r.pod.namespace_, sizeof(r.pod.namespace_), "ml");
        snprintf(r.pod.container, sizeof(r.pod.container), "worker");
        ok(gh_record_save(dir, &r, &err) == 0, "a record is saved (the directory made)");
        ok(stat(dir, &st) == 0 && (st.st_mode & 07777) == 0700, "the directory is 0700");
        snprintf(path, sizeof(path), "%s/0123abcd", dir);
        ok(stat(path, &st) == 0 && (st.st_mode & 07777) == 0600 && st.st_uid == geteuid(), "the record is 0600, ours");
        fd = gh_record_dir_open(dir, false, &err);
        ok(fd >= 0 && gh_record_load(fd, "0123abcd", &back, &err) == 1 && back.pid == r.pid &&
                   back.starttime == r.starttime && strcmp(back.pod.name, "trainer-0") == 0 &&
                   strcmp(back.pod.namespace_, "ml") == 0 && strcmp(back.pod.container, "worker") == 0,
           "it reads back as written");
        ok(gh_record_running(&back), "its process runs");
        back.starttime++;
        ok(!gh_record_running(&back), "another start time: a reused pid is not the container's init");
        is_int(gh_record_load(fd, "nope", &back, &err), 0, "no record: 0");

        struct gh_record bad = r;
        snprintf(bad.id, sizeof(bad.id), "../escape");
        gh_error_free(&err);
        ok(gh_record_save(dir, &bad, &err) < 0, "an id with a slash is refused");
        snprintf(bad.id, sizeof(bad.id), ".hidden");
        gh_error_free(&err);
        ok(gh_record_save(dir, &bad, &err) < 0, "an id starting with '.' is refused");

        /* files that are not records of ours */
        snprintf(path, sizeof(path), "%s/openrec", dir);
        FILE *f = fopen(path, "w");
        fprintf(f, "gpu-hook-record=1\nid=openrec\npid=%d\nstarttime=%llu\n", (int) getpid(), r.starttime);
        fclose(f);
        chmod(path, 0620);
        gh_error_free(&err);
        ok(gh_record_load(fd, "openrec", &back, &err) < 0 && err->code == EBADMSG,
           "a record others may write is refused");
        chmod(path, 0600);
        gh_error_free(&err);
        is_int(gh_record_load(fd, "openrec", &back, &err), 1, "the same file, 0600: read");
        snprintf(path, sizeof(path), "%s/linked", dir);
        if (symlink("openrec", path) < 0)
                printf("# symlink: %m\n");
        gh_error_free(&err);
        ok(gh_record_load(fd, "linked", &back, &err) < 0, "a symlink is not followed");
        unlink(path);
        snprintf(path, sizeof(path), "%s/wrongid", dir);
        f = fopen(path, "w");
        fprintf(f, "gpu-hook-record=1\nid=other\npid=1\nstarttime=1\n");
        fclose(f);
        chmod(path, 0600);
        gh_error_free(&err);
        ok(gh_record_load(fd, "wrongid", &back, &err) < 0, "a record naming another id is refused");

        /* collection */
        unsigned long long start = 0;
        struct gh_record dead = { .id = "deadbeef" }, claimed = { .id = "c1a1med" };
        dead.pid = dead_pid(&start);
        dead.starttime = start;
        claimed.pid = dead.pid;
        claimed.starttime = start;
        gh_error_free(&err);
        ok(gh_record_save(dir, &dead, &err) == 0 && gh_record_save(dir, &claimed, &err) == 0,
           "records of two containers whose init is gone");
        long left = gh_record_collect(fd, keep_claimed, NULL, &err);
        snprintf(path, sizeof(path), "%s/deadbeef", dir);
        ok(access(path, F_OK) < 0, "collect removes the record of a container that is gone");
        snprintf(path, sizeof(path), "%s/c1a1med", dir);
        ok(access(path, F_OK) == 0, "and keeps one a GPU process still claims (a leftover's evidence)");
        snprintf(path, sizeof(path), "%s/wrongid", dir);
        ok(access(path, F_OK) < 0, "and removes a file that is not a record");
        is_int(left, 3, "records left: ours (running), openrec (running), the claimed one");

        /* the hook collects once the directory is large */
        for (int i = 0; i < 1100; i++) {
                snprintf(dead.id, sizeof(dead.id), "dead%04d", i);
                gh_record_save(dir, &dead, &err);
        }
        snprintf(r.id, sizeof(r.id), "fresh");
        gh_error_free(&err);
        ok(gh_record_save(dir, &r, &err) == 0, "a save into a directory of 1100 stale records");
        is_int(count_files(), 3, "collected them first (left: the running ones and the one just saved)");

        /* a reader changes nothing and refuses a directory others may write; the writer tightens it */
        chmod(dir, 0755);
        close(fd);
        gh_error_free(&err);
        fd = gh_record_dir_open(dir, false, &err);
        ok(fd >= 0 && stat(dir, &st) == 0 && (st.st_mode & 07777) == 0755,
           "a reader opens a 0755 directory of ours and leaves it 0755");
        if (fd >= 0)
                close(fd);
        chmod(dir, 0777);
        gh_error_free(&err);
        fd = gh_record_dir_open(dir, false, &err);
        ok(fd < 0 && strstr(err->msg, "may be written by others"), "a reader refuses a directory others may write");
        gh_error_free(&err);
        snprintf(r.id, sizeof(r.id), "again");
        ok(gh_record_save(dir, &r, &err) == 0 && stat(dir, &st) == 0 && (st.st_mode & 07777) == 0700,
           "the writer tightens it to 0700 and writes");
        fd = gh_record_dir_open(dir, false, &err);
        if (geteuid() == 0) {
                if (chown(dir, 1, 1) < 0)
                        printf("# chown: %m\n");
                close(fd);
                gh_error_free(&err);
                fd = gh_record_dir_open(dir, false, &err);
                ok(fd < 0, "a directory of another uid is refused");
                if (chown(dir, 0, 0) < 0)
                        printf("# chown: %m\n");
        }
        if (fd >= 0)
                close(fd);
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        if (system(cmd) != 0)
                printf("# could not remove %s\n", dir);
}

int main(void)
{
        test_annotations();
        test_records();
        return tap_done();
}
