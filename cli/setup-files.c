/* The file side of `gpu-cli setup`: read a file whole, show a change as a diff, write it atomically
 * with the old mode and owner, keep one backup of a file we edit, remove a file we wrote.
 *
 * Every change is computed in memory first; a file is written only when its new content differs,
 * which is what makes a second run a no-op. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "file.h"
#include "readfile.h"
#include "setup.h"

#define SETUP_FILE_MAX (4u << 20)

int setup_read(const char *path, char **text, bool *exists, gh_error_t *err)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
        size_t len;
        struct stat st;

        *text = NULL;
        *exists = false;
        if (fd < 0 && errno == ENOENT)
                return 0;
        if (fd < 0 && errno == ELOOP)
                return gh_err(err, 0, "%s is a symbolic link; edit the file it points to with --config", path);
        if (fd < 0)
                return gh_err(err, errno, "opening %s", path);
        if (fstat(fd, &st) < 0)
                return gh_err(err, errno, "reading %s", path);
        if (!S_ISREG(st.st_mode))
                return gh_err(err, 0, "%s is not a regular file", path);
        *exists = true;
        return gh_read_bounded(fd, SETUP_FILE_MAX, text, &len, path, err);
}

json_t *setup_json_parse(const char *text, const char *path, gh_error_t *err)
{
        json_error_t jerr;
        json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);

        if (j == NULL) {
                gh_err(err, 0, "%s is not valid JSON: line %d column %d: %s", path, jerr.line, jerr.column, jerr.text);
                return NULL;
        }
        if (!json_is_object(j)) {
                json_decref(j);
                gh_err(err, 0, "%s is not a JSON object", path);
                return NULL;
        }
        return j;
}

static char **split_lines(const char *s, size_t *n)
{
        size_t cap = 16;
        char **v = calloc(cap, sizeof(char *));

        *n = 0;
        while (v != NULL && s != NULL && *s) {
                const char *e = strchrnul(s, '\n');
                if (*n + 1 >= cap) {
                        char **g = reallocarray(v, cap *= 2, sizeof(char *));
                        if (g == NULL)
                                break;
                        v = g;
                }
                v[(*n)++] = strndup(s, (size_t) (e - s));
                v[*n] = NULL; /* reallocarray's new slots are not zeroed; the strv cleanup stops here */
                s = *e ? e + 1 : e;
        }
        return v;
}

/* A full-context line diff (longest common subsequence): setup's files are a few dozen lines. */
void setup_print_diff(FILE *out, const char *path, const char *old, const char *new)
{
        size_t n, m;
        _cleanup_strv_ char **a = split_lines(old, &n);
        _cleanup_strv_ char **b = split_lines(new, &m);
        _cleanup_free_ unsigned *lcs = NULL;

        fprintf(out, "--- %s\n+++ %s\n", old ? path : "/dev/null", new ? path : "/dev/null");
        if (a == NULL || b == NULL || n > 4000 || m > 4000 || (lcs = calloc((n + 1) * (m + 1), sizeof(*lcs))) == NULL) {
                for (size_t i = 0; a && i < n; i++)
                        fprintf(out, "-%s\n", a[i]);
                for (size_t j = 0; b && j < m; j++)
                        fprintf(out, "+%s\n", b[j]);
                return;
        }
#define L(i, j) lcs[(i) * (m + 1) + (j)]
        for (size_t i = n; i-- > 0;)
                for (size_t j = m; j-- > 0;)
                        L(i, j) = strcmp(a[i], b[j]) == 0      ? L(i + 1, j + 1) + 1
                                  : L(i + 1, j) >= L(i, j + 1) ? L(i + 1, j)
                                                               : L(i, j + 1);
        size_t i = 0, j = 0;
        while (i < n || j < m) {
                if (i < n && j < m && strcmp(a[i], b[j]) == 0) {
                        fprintf(out, " %s\n", a[i]);
                        i++, j++;
                } else if (j < m && (i == n || L(i, j + 1) >= L(i + 1, j))) {
                        fprintf(out, "+%s\n", b[j++]);
                } else {
                        fprintf(out, "-%s\n", a[i++]);
                }
        }
#undef L
}

/* An engine's configuration outlives a reboot: synced; an administrator's mode and owner kept. */
int setup_write(const char *path, const char *text, gh_error_t *err)
{
        return gh_write_file_at(AT_FDCWD, path, text, strlen(text), 0644,
                                GH_WRITE_ATOMIC | GH_WRITE_SYNC | GH_WRITE_KEEP_OWNER, NULL, err);
}

int setup_backup(const char *path, const char *text, gh_error_t *err)
{
        char bak[PATH_MAX];
        struct stat st;

        if (snprintf(bak, sizeof(bak), "%s%s", path, SETUP_BACKUP_SUFFIX) >= (int) sizeof(bak))
                return gh_err(err, ENAMETOOLONG, "backing up %s", path);
        if (lstat(bak, &st) == 0)
                return 0; /* the first backup is the one from before gpu-cli ever touched the file */
        return setup_write(bak, text, err) < 0 ? gh_err_wrap(err, "backing up %s", path) : 0;
}

int setup_remove(const char *path, gh_error_t *err)
{
        if (unlink(path) < 0 && errno != ENOENT)
                return gh_err(err, errno, "removing %s", path);
        return 0;
}
