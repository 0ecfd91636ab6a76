/* lib/core/compat.c (and its ELF note reader in lib/core/elf.c): the CUDA forward-compatibility
 * rule on images built here from the fake driver's compat packages (tests/fake-driver, README.md),
 * for host driver versions on every side of each package, and the note parser on hand-written
 * descriptors.  End to end in containers: tests/integration/test-cuda-compat.sh. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "compat.h"
#include "elf.h"
#include "rootfs.h"
#include "tests/tap.h"
#include "tests/testutil.h"

static char T[256];
static const char *art;

/* image NAME KIND: T/NAME with that package, by tests/fake-driver/make-compat.py */
static int image(const char *name, const char *kind)
{
        char cmd[2048];
        snprintf(
                cmd, sizeof(cmd),
                "python3 %s/tests/fake-driver/make-compat.py --artifacts %s --host-file /etc/hostname %s/%s %s >/dev/null",
                getenv("GH_SOURCE_DIR"), art, T, name, kind);
        return system(cmd);
}

/* The decision for image NAME and a host; *reason copied out. */
static int decide(const char *name, const char *driver, const char *cuda, char *reason, size_t size, size_t *nlibs)
{
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_cuda_compat c;
        char root[512];
        int used;

        snprintf(root, sizeof(root), "%s/%s", T, name);
        _cleanup_close_ int fd = gh_rootfs_open(root, &err);
        if (fd < 0 || gh_cuda_compat_check(fd, AT_FDCWD, NULL, driver, cuda, &c, &err) < 0) {
                snprintf(reason, size, "error: %s", err ? err->msg : "?");
                return -1;
        }
        snprintf(reason, size, "%s", c.reason ? c.reason : "");
        used = c.used;
        if (nlibs)
                *nlibs = c.nlibs;
        gh_cuda_compat_free(&c);
        return used;
}

static void check(const char *name, const char *driver, const char *cuda, int want, const char *why)
{
        char reason[512];
        int got = decide(name, driver, cuda, reason, sizeof(reason), NULL);
        if (!ok(got == want, "%s, host driver %s%s%s: %s (%s)", name, driver ? driver : "unknown",
                cuda ? ", CUDA " : "", cuda ? cuda : "", want ? "used" : "not used", why))
                tap_diag("got %d: %s", got, reason);
}

static void test_rule(void)
{
        static const char *const kinds[] = { "newer",   "samebranch", "older",   "otherbranch", "nonote",
                                             "badnote", "link-out",   "link-in", "directory",   "two" };
        char reason[512];
        size_t n = 0;

        for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
                if (image(kinds[i], kinds[i]) != 0) {
                        ok(0, "make-compat.py %s", kinds[i]);
                        return;
                }
        check("newer", "580.95.05", NULL, 1, "590.44.01 lists 580 and is newer");
        check("newer", "590.48.01", NULL, 0, "the same branch, not newer");
        check("newer", "590.44.01", NULL, 0, "the same version is not newer");
        check("newer", "600.10", NULL, 0, "600 is not in the note's list");
        check("newer", "535.247.01", NULL, 1, "535 listed, older");
        check("newer", "560.35.03", NULL, 0, "560 is not in this note's list");
        check("samebranch", "580.95.05", NULL, 1, "580.105.08 > 580.95.05 (numbers, not text)");
        check("samebranch", "580.105.08", NULL, 0, "equal");
        check("older", "580.95.05", NULL, 0, "575 note, host 580");
        check("older", "570.1.1", NULL, 1, "575.57.08 lists 570 and is newer");
        check("otherbranch", "580.95.05", NULL, 0, "580 not listed although 590 > 580");
        check("otherbranch", "570.124.06", NULL, 1, "570 listed");
        check("nonote", "580.95.05", NULL, 1, "no note: major 590 > 580 (toolkit 1.18's rule)");
        check("nonote", "590.10.01", NULL, 0, "no note: the same major is not enough");
        check("badnote", "580.95.05", NULL, 0, "a note that is not JSON");
        check("newer", NULL, "13.0", 1, "driver unknown: the note's CUDA 13.1 > 13.0");
        check("newer", NULL, "13.1", 0, "driver unknown: CUDA 13.1 is not newer");
        check("newer", "", NULL, 0, "nothing known about the host");
        check("nonote", NULL, "12.0", 0, "driver unknown and no note: no CUDA version to compare");
        check("link-out", "580.95.05", NULL, 0, "a symbolic link out of the image");
        check("link-in", "580.95.05", NULL, 0, "a symbolic link inside the image: still not a regular file");
        check("directory", "580.95.05", NULL, 0, "a directory");
        check("two", "580.95.05", NULL, 0, "two libcuda.so.X.Y");

        ok(decide("newer", "580.95.05", NULL, reason, sizeof(reason), &n) == 1 && n == 3,
           "newer: libcuda.so.1, libcuda.so and libnvidia-ptxjitcompiler.so.1 are preferred (%zu)", n);
        decide("link-out", "580.95.05", NULL, reason, sizeof(reason), NULL);
        is_str(reason, "not used: /usr/local/cuda/compat/libcuda.so.590.44.01 is a symbolic link, not a regular file",
               "the reason names the file and what it is");
        decide("newer", "600.10", NULL, reason, sizeof(reason), NULL);
        is_str(reason,
               "not used: its note lists the driver branches 535,550,570,575,580,590, not the host's 600 (driver 600.10)",
               "the reason lists the note's branches");
        mkdir(T, 0755);
        char p[600];
        snprintf(p, sizeof(p), "%s/empty", T);
        mkdir(p, 0755);
        decide("empty", "580.95.05", NULL, reason, sizeof(reason), NULL);
        is_str(reason, "not used: the image has no /usr/local/cuda/compat", "an image without the directory");
}

static void test_note(void)
{
        static const struct {
                const char *json;
                int ok;
                const char *cuda;
                size_t nbranches;
                const char *what;
        } cases[] = {
                { "{\"Format\":1,\"CUDA Version\":\"12.9\",\"Driver\":[535,550,560,565,570,575],\"Device\":[1,2,7]}", 0,
                  "12.9", 6, "the CUDA 12.9 package's note" },
                { "{\"Format\":1,\"CUDA Version\":\"13.2\"}", 0, "13.2", 0, "no Driver list (an Orin package)" },
                { "{\"Format\":1,\"CUDA Version\":\"13.1\",\"Driver\":[590]}\0\0\0", 0, "13.1", 1, "NUL padding" },
                { "{\"Format\":1,\"CUDA Version\":", -1, NULL, 0, "truncated" },
                { "[535]", -1, NULL, 0, "not an object" },
                { "{\"CUDA Version\":13.1}", -1, NULL, 0, "a CUDA Version that is not a string" },
                { "{\"CUDA Version\":\"thirteen\"}", -1, NULL, 0, "a CUDA Version that is not a version" },
                { "{\"Driver\":[\"580\"]}", -1, NULL, 0, "a branch that is a string" },
                { "{\"Driver\":[-580]}", -1, NULL, 0, "a negative branch" },
                { "{\"Driver\":580}", -1, NULL, 0, "Driver not a list" },
                { "{\"Driver\":[1e3]}", -1, NULL, 0, "a branch that is not an integer" },
                { "{\"Driver\":[535],\"Driver\":[580]}", -1, NULL, 0, "a duplicate key" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                _cleanup_error_ gh_error_t err = NULL;
                struct gh_cuda_compat c = { 0 };
                size_t len = strlen(cases[i].json) + (strstr(cases[i].what, "NUL") ? 3 : 0);
                int r = gh_cuda_compat_parse_note(cases[i].json, len, &c, &err);
                ok(r == cases[i].ok && (r < 0 || ((cases[i].cuda == NULL) == (c.cuda_version == NULL) &&
                                                  (!c.cuda_version || strcmp(c.cuda_version, cases[i].cuda) == 0) &&
                                                  c.nbranches == cases[i].nbranches)),
                   "note: %s%s%s", cases[i].what, r < 0 ? ": " : "", r < 0 && err ? err->msg : "");
                gh_cuda_compat_free(&c);
        }
}

static void test_elf_note(void)
{
        char path[600], *desc = NULL;
        size_t len = 0;

        snprintf(path, sizeof(path), "%s/compat-newer-libcuda.so.590.44.01", art);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        _cleanup_error_ gh_error_t e1 = NULL, e2 = NULL, e3 = NULL;
        is_int(gh_elf_read_note(fd, path, GH_CUDA_COMPAT_NOTE_SECTION, GH_CUDA_COMPAT_NOTE_OWNER, &desc, &len, &e1), 1,
               "the fake compat libcuda's note is found");
        ok(desc && len == strlen(desc) && strncmp(desc, "{\"Format\":1,\"CUDA Version\":\"13.1\"", 33) == 0,
           "... its descriptor is the JSON (%zu bytes)", len);
        free(desc);
        desc = NULL;
        is_int(gh_elf_read_note(fd, path, GH_CUDA_COMPAT_NOTE_SECTION, "Someone Else", &desc, &len, &e2), 0,
               "a note of another owner is not taken");
        snprintf(path, sizeof(path), "%s/compat-nonote-libcuda.so.590.44.01", art);
        _cleanup_close_ int fd2 = open(path, O_RDONLY | O_CLOEXEC);
        is_int(gh_elf_read_note(fd2, path, GH_CUDA_COMPAT_NOTE_SECTION, GH_CUDA_COMPAT_NOTE_OWNER, &desc, &len, &e3), 0,
               "a libcuda without the section: 0");
        _cleanup_close_ int fd3 = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
        _cleanup_error_ gh_error_t e4 = NULL;
        is_int(gh_elf_read_note(fd3, "/etc/hostname", GH_CUDA_COMPAT_NOTE_SECTION, GH_CUDA_COMPAT_NOTE_OWNER, &desc,
                                &len, &e4),
               -1, "not an ELF file: -1");
        ok(e4 && strstr(e4->msg, "not an ELF file"), "... saying so");
}

int main(void)
{
        art = getenv("FAKE_DRIVER_DIR");
        if (art == NULL || getenv("GH_SOURCE_DIR") == NULL)
                tap_skip_all("needs FAKE_DRIVER_DIR and GH_SOURCE_DIR (run under meson test)");
        snprintf(T, sizeof(T), "/tmp/gh-test-compat.XXXXXX");
        if (mkdtemp(T) == NULL)
                tap_skip_all("no temp dir");
        test_note();
        test_elf_note();
        test_rule();
        char cmd[300];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", T);
        if (system(cmd) != 0)
                tap_diag("could not remove %s", T);
        return tap_done();
}
