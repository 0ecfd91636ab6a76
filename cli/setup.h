/* `gpu-cli setup`: wiring gpu-hook and gpu-runtime into an engine's configuration (setup.c), the file
 * operations it needs (setup-files.c) and containerd's config.toml editor (setup-containerd.c). */
#ifndef GH_CLI_SETUP_H
#define GH_CLI_SETUP_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "error.h"

#define SETUP_BACKUP_SUFFIX ".gpu-cli.bak"

/* Reads a whole regular file (never through a symlink); a missing file is *exists = false, not an error. */
int setup_read(const char *path, char **text, bool *exists, gh_error_t *err);
/* Replaces path through the one writer (atomic, synced), keeping an existing file's mode and owner. */
int setup_write(const char *path, const char *text, gh_error_t *err);
/* PATH.gpu-cli.bak with text, unless a backup is already there (the oldest one is kept). */
int setup_backup(const char *path, const char *text, gh_error_t *err);
int setup_remove(const char *path, gh_error_t *err);
/* A JSON object from text (duplicate keys refused); the error names path, line and column. */
json_t *setup_json_parse(const char *text, const char *path, gh_error_t *err);
/* containerd's config.toml (old; NULL: no file) with gpu-hook's CRI settings added, or with undo
 * taken out again, in *out (NULL: remove the file) (setup-containerd.c). */
int setup_containerd_edit(const char *path, const char *old, const char *runtime_path, bool undo, char **out,
                          gh_error_t *err);
/* old -> new as a line diff; NULL stands for "no file". */
void setup_print_diff(FILE *out, const char *path, const char *old, const char *new);

/* gpu-cli setup dev-char-links (setup-devchar.c); argv[0] = "dev-char-links". */
struct cli_globals;
int cli_setup_dev_char(int argc, char **argv, const struct cli_globals *g);
/* gpu-cli setup bpffs (setup-bpffs.c); argv[0] = "bpffs". */
int cli_setup_bpffs(int argc, char **argv, const struct cli_globals *g);

#endif
