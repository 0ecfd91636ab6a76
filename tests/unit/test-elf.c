/* lib/core/elf.c: which files pass as driver libraries and programs.  Objects are built with gcc here. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "elf.h"
#include "tests/tap.h"
#include "tests/testutil.h"

static char T[256];

/* Checks T/name as a library; returns 0 when accepted, with the error text in why[]. */
static int lib_check(const char *name, bool compat32, struct gh_elf_lib *out, char *why, size_t size)
{
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_close_ int fd = -1;
        char path[512];
        struct gh_elf_lib lib = { 0 };
        int r;

        snprintf(path, sizeof(path), "%s/%s", T, name);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                snprintf(why, size, "cannot open %s", path);
                return -2;
        }
        r = gh_elf_check_library(fd, name, compat32, &lib, &err);
        snprintf(why, size, "%s", err ? err->msg : "");
        if (r == 0 && out)
                *out = lib;
        else
                gh_elf_lib_free(&lib);
        return r;
}

static int bin_check(const char *name, char *why, size_t size)
{
        _cleanup_error_ gh_error_t err = NULL;
        _cleanup_close_ int fd = -1;
        char path[512];
        int r;

        snprintf(path, sizeof(path), "%s/%s", T, name);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                snprintf(why, size, "cannot open %s", path);
                return -2;
        }
        r = gh_elf_check_binary(fd, name, &err);
        snprintf(why, size, "%s", err ? err->msg : "");
        return r;
}

int main(void)
{
        char why[1024];
        struct gh_elf_lib lib = { 0 };

        snprintf(T, sizeof(T), "/tmp/test-elf.XXXXXX");
        if (mkdtemp(T) == NULL)
                return 1;
        if (sh("set -e; cd '%s'; echo 'int core(void){return 1;}' > core.c; echo 'int core(void); int gl(void){return core();}' > gl.c;"
               "echo 'int main(void){return 0;}' > main.c;"
               "gcc -shared -fPIC -Wl,-soname,libnvidia-glcore.so.580.95.05 -o libnvidia-glcore.so.580.95.05 core.c;"
               "ln -s libnvidia-glcore.so.580.95.05 libnvidia-glcore.so;"
               "gcc -shared -fPIC -Wl,-soname,libGL.so.1 -Wl,--no-as-needed -o libGL.so.580.95.05 gl.c -L. -lnvidia-glcore;"
               "gcc -shared -fPIC -Wl,-soname,libEGL.so.1 -o libEGL-mesa.so gl.c;"
               "gcc -shared -fPIC -o nosoname.so core.c;"
               "gcc -m32 -shared -fPIC -Wl,-soname,libcuda.so.1 -o libcuda32.so core.c;"
               "gcc -shared -fPIC -Wl,-soname,libcuda.so.1 -o libcuda64.so core.c;"
               "gcc -pie -fPIE -o pie main.c; gcc -no-pie -o nopie main.c; gcc -m32 -o exe32 main.c;"
               "gcc -static -o static main.c 2>/dev/null || cp nopie static;"
               "printf '#!/bin/sh\\nexec /usr/local/nvidia/bin/nvidia-smi \"$@\"\\n' > wrapper; chmod +x wrapper;"
               "echo 'just text' > text; : > empty; head -c 100 libcuda64.so > truncated.so;"
               "head -c 64 libcuda64.so > header-only.so; gcc -c -fPIC -o object.o core.c",
               T) != 0) {
                sh("rm -rf '%s'", T);
                tap_skip_all("cannot build test objects with gcc (and gcc -m32)");
        }

        /* Libraries */
        if (ok(lib_check("libcuda64.so", false, &lib, why, sizeof(why)) == 0, "x86-64 shared library accepted"))
                is_str(lib.soname, "libcuda.so.1", "its SONAME is returned");
        gh_elf_lib_free(&lib);
        ok(lib_check("libcuda32.so", false, NULL, why, sizeof(why)) < 0 && strstr(why, "i386"),
           "i386 library rejected for the host (%s)", why);
        ok(lib_check("libcuda32.so", true, NULL, why, sizeof(why)) == 0, "i386 library accepted for compat32");
        ok(lib_check("libcuda64.so", true, NULL, why, sizeof(why)) < 0 && strstr(why, "x86-64"),
           "x86-64 library rejected for compat32 (%s)", why);
        ok(lib_check("nosoname.so", false, NULL, why, sizeof(why)) < 0 && strstr(why, "SONAME"),
           "library without SONAME rejected (%s)", why);
        ok(lib_check("wrapper", false, NULL, why, sizeof(why)) < 0 && strstr(why, "script"),
           "script rejected as a library (%s)", why);
        ok(lib_check("text", false, NULL, why, sizeof(why)) < 0 && strstr(why, "not an ELF"), "text file rejected (%s)",
           why);
        ok(lib_check("empty", false, NULL, why, sizeof(why)) < 0, "empty file rejected (%s)", why);
        ok(lib_check("truncated.so", false, NULL, why, sizeof(why)) < 0, "truncated library rejected (%s)", why);
        ok(lib_check("header-only.so", false, NULL, why, sizeof(why)) < 0, "header-only library rejected (%s)", why);
        ok(lib_check("object.o", false, NULL, why, sizeof(why)) < 0 && strstr(why, "not a shared library"),
           "relocatable object rejected (%s)", why);
        ok(lib_check("nopie", false, NULL, why, sizeof(why)) < 0, "executable rejected as a library (%s)", why);

        /* DT_NEEDED: NVIDIA's non-GLVND libGL needs its GL core, Mesa's does not. */
        if (ok(lib_check("libGL.so.580.95.05", false, &lib, why, sizeof(why)) == 0, "libGL accepted")) {
                ok(gh_elf_needs(&lib, "libnvidia-glcore"), "NVIDIA-like libGL depends on libnvidia-glcore");
                ok(!gh_elf_needs(&lib, "libnvidia-glcor"), "a stem must match in full");
                ok(!gh_elf_needs(&lib, "libnvidia-eglcore"), "and not on libnvidia-eglcore");
        }
        gh_elf_lib_free(&lib);
        if (ok(lib_check("libEGL-mesa.so", false, &lib, why, sizeof(why)) == 0, "Mesa-like libEGL parses"))
                ok(!gh_elf_needs(&lib, "libnvidia-eglcore") && !gh_elf_needs(&lib, "libnvidia-glcore"),
                   "Mesa-like libEGL has no NVIDIA core dependency");
        gh_elf_lib_free(&lib);

        /* Programs */
        ok(bin_check("pie", why, sizeof(why)) == 0, "PIE executable accepted (%s)", why);
        ok(bin_check("nopie", why, sizeof(why)) == 0, "non-PIE executable accepted (%s)", why);
        ok(bin_check("static", why, sizeof(why)) == 0, "static executable accepted (%s)", why);
        ok(bin_check("wrapper", why, sizeof(why)) < 0 && strstr(why, "script"), "shell wrapper rejected (%s)", why);
        ok(bin_check("exe32", why, sizeof(why)) < 0 && strstr(why, "i386"), "i386 executable rejected (%s)", why);
        ok(bin_check("libcuda64.so", why, sizeof(why)) < 0 && strstr(why, "not an executable"),
           "shared library rejected as a program (%s)", why);
        ok(bin_check("text", why, sizeof(why)) < 0, "text file rejected as a program (%s)", why);
        ok(bin_check("truncated.so", why, sizeof(why)) < 0, "truncated file rejected as a program (%s)", why);

        sh("rm -rf '%s'", T);
        return tap_done();
}
