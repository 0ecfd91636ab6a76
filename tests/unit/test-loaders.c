/* lib/core/loaders.c: which loader files are valid (gh_loader_parse), and discovery on a driver root
 * built here: search order, the driver's own prefix, first valid file of a name wins, library
 * checks (bare SONAME, absolute path to a discovered library), non-regular and oversized files. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "driver.h"
#include "loaders.h"
#include "rootfs.h"
#include "tests/tap.h"
#include "tests/testutil.h"

static void test_parse(void)
{
        static const struct {
                enum gh_loader_kind kind;
                const char *text, *library; /* library NULL: refused (or profiles: accepted, none) */
                const char *why;
        } cases[] = {
                { GH_LOADER_VULKAN_ICD,
                  "{\"file_format_version\": \"1.0.1\", \"ICD\": {\"library_path\": \"libGLX_nvidia.so.0\", \"api_version\": \"1.4.312\"}}",
                  "libGLX_nvidia.so.0", "NVIDIA's ICD file" },
                { GH_LOADER_VULKAN_ICD, "{\"file_format_version\": \"1.0.1\", \"ICD\": {}}", NULL, "no library_path" },
                { GH_LOADER_VULKAN_ICD, "{\"ICD\": {\"library_path\": \"libGLX_nvidia.so.0\"}}", NULL,
                  "no file_format_version" },
                { GH_LOADER_VULKAN_ICD, "{\"file_format_version\": \"1.0\", \"ICD\": {\"library_path\": \"x.so\"}}",
                  NULL, "a version with one dot" },
                { GH_LOADER_VULKAN_ICD, "{\"file_format_version\": \"1.0.0\", \"ICD\": {\"library_path\": \"\"}}", NULL,
                  "an empty library_path" },
                { GH_LOADER_VULKAN_ICD, "{\"file_format_version\": \"1.0.0\", \"ICD\": {\"library_path\": 7}}", NULL,
                  "a number as library_path" },
                { GH_LOADER_VULKAN_ICD,
                  "{\"file_format_version\": \"1.0.0\", \"ICD\": {\"library_path\": \"a\"}, \"ICD\": {\"library_path\": \"b\"}}",
                  NULL, "duplicate keys" },
                { GH_LOADER_VULKAN_ICD, "[1, 2]", NULL, "not an object" },
                { GH_LOADER_VULKAN_ICD, "{\"file_format_version\": \"1.0.0\", \"ICD\": {\"library_path\": \"x\"", NULL,
                  "truncated JSON" },
                { GH_LOADER_VULKAN_ICD,
                  "{\"file_format_version\": \"1.0.0\", \"ICD\": {\"library_path\": \"a\\u0000b\"}}", NULL,
                  "a NUL inside library_path" },
                { GH_LOADER_VULKAN_ICD,
                  "{\"file_format_version\": \"1.0.0\", \"x\": [1.5e+3, -0, true, null, {}], \"ICD\": {\"library_path\": \"libGLX\\u005fnvidia.so.0\"}}",
                  "libGLX_nvidia.so.0", "escapes and every value type" },
                { GH_LOADER_VULKAN_ICD,
                  "{\"file_format_version\": \"1.0.0\", \"ICD\": {\"library_path\": \"a\\ud800b\"}}", NULL,
                  "a lone surrogate" },
                { GH_LOADER_VULKAN_ICD, "{\"file_format_version\": \"1.0.0\", \"ICD\": {\"library_path\": \"a\"}} x",
                  NULL, "text after the value" },
                { GH_LOADER_VULKAN_ICD,
                  "{\"file_format_version\": \"1.0.0\", \"n\": 01, \"ICD\": {\"library_path\": \"a\"}}", NULL,
                  "a number with a leading zero" },
                { GH_LOADER_VULKAN_ICD,
                  "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
                  NULL, "nested 72 deep" },
                { GH_LOADER_VULKAN_LAYER,
                  "{\"file_format_version\": \"1.0.1\", \"layer\": {\"name\": \"VK_LAYER_NV_optimus\", \"library_path\": \"libGLX_nvidia.so.0\"}}",
                  "libGLX_nvidia.so.0", "a layer object" },
                { GH_LOADER_VULKAN_LAYER,
                  "{\"file_format_version\": \"1.0.1\", \"layers\": [{\"library_path\": \"libA.so.1\"}, {\"library_path\": \"libA.so.1\"}]}",
                  "libA.so.1", "a layers array naming one library" },
                { GH_LOADER_VULKAN_LAYER,
                  "{\"file_format_version\": \"1.0.1\", \"layers\": [{\"library_path\": \"libA.so.1\"}, {\"library_path\": \"libB.so.1\"}]}",
                  NULL, "layers naming two libraries" },
                { GH_LOADER_VULKAN_LAYER,
                  "{\"file_format_version\": \"1.0.1\", \"ICD\": {\"library_path\": \"libA.so.1\"}}", NULL,
                  "an ICD file where a layer is expected" },
                { GH_LOADER_EGL_VENDOR,
                  "{\"file_format_version\" : \"1.0.0\", \"ICD\" : {\"library_path\" : \"libEGL_nvidia.so.0\"}}",
                  "libEGL_nvidia.so.0", "NVIDIA's EGL vendor file" },
                { GH_LOADER_EGL_PLATFORM,
                  "{\"file_format_version\" : \"1.0.0\", \"ICD\" : {\"library_path\" : \"libnvidia-egl-gbm.so.1\"}}",
                  "libnvidia-egl-gbm.so.1", "an EGL platform file" },
                { GH_LOADER_APP_PROFILES, "{\"rules\": [], \"profiles\": []}", "", "application profiles" },
                { GH_LOADER_APP_PROFILES, "{\"rules\": 1}", NULL, "profiles without arrays" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                _cleanup_error_ gh_error_t err = NULL;
                _cleanup_free_ char *lib = NULL;
                int r = gh_loader_parse(cases[i].kind, cases[i].text, strlen(cases[i].text), &lib, &err);
                if (cases[i].library == NULL) {
                        ok(r < 0 && err && err->msg[0], "parse %s: %s: refused (%s)",
                           gh_loader_kind_name(cases[i].kind), cases[i].why, err ? err->msg : "accepted");
                } else if (cases[i].library[0] == '\0') {
                        ok(r == 0 && lib == NULL, "parse %s: %s: accepted", gh_loader_kind_name(cases[i].kind),
                           cases[i].why);
                } else {
                        ok(r == 0 && lib && strcmp(lib, cases[i].library) == 0, "parse %s: %s: library %s",
                           gh_loader_kind_name(cases[i].kind), cases[i].why,
                           lib   ? lib
                           : err ? err->msg
                                 : "?");
                }
        }
}

static char T[256];

static void put(const char *rel, const char *text)
{
        char p[512];
        snprintf(p, sizeof(p), "%s/%s", T, rel);
        if (sh("mkdir -p \"$(dirname '%s')\"", p) != 0)
                abort();
        FILE *f = fopen(p, "w");
        if (f == NULL)
                abort();
        fputs(text, f);
        fclose(f);
}

#define ICD(lib) "{\"file_format_version\": \"1.0.0\", \"ICD\": {\"library_path\": \"" lib "\"}}\n"

static const struct gh_loader_file *find(const struct gh_loader_files *f, const char *dst)
{
        for (size_t i = 0; i < f->n; i++)
                if (strcmp(f->v[i].dst, dst) == 0)
                        return &f->v[i];
        return NULL;
}

static void test_find(void)
{
        _cleanup_close_ int rootfd = -1;
        _cleanup_error_ gh_error_t err = NULL;
        struct gh_loader_files out = { 0 };
        struct gh_driver_file lib[2] = { 0 };
        struct gh_driver_files libs = { .v = lib, .n = 2, .cap = 2 };
        const struct gh_loader_file *f;
        struct stat st;
        char p[512], big[GH_LOADER_JSON_MAX + 64];

        snprintf(T, sizeof(T), "/tmp/gh-test-loaders.XXXXXX");
        if (mkdtemp(T) == NULL)
                abort();
        /* The driver: libraries in /opt/nv/lib64, its files in /opt/nv/share. */
        put("opt/nv/lib64/libGLX_nvidia.so.1.2.3", "elf");
        put("opt/nv/lib64/libEGL_nvidia.so.1.2.3", "elf");
        sh("ln -s libGLX_nvidia.so.1.2.3 %s/opt/nv/lib64/libGLX_nvidia.so.0", T);
        lib[0] = (struct gh_driver_file) { .path = "/opt/nv/lib64/libGLX_nvidia.so.1.2.3",
                                           .soname = "libGLX_nvidia.so.0" };
        lib[1] = (struct gh_driver_file) { .path = "/opt/nv/lib64/libEGL_nvidia.so.1.2.3",
                                           .soname = "libEGL_nvidia.so.0" };
        for (int i = 0; i < 2; i++) {
                snprintf(p, sizeof(p), "%s%s", T, lib[i].path);
                stat(p, &st);
                lib[i].st_dev = st.st_dev;
                lib[i].st_ino = st.st_ino;
        }
        put("opt/nv/share/vulkan/icd.d/nvidia_icd.json", ICD("libGLX_nvidia.so.0"));
        /* absolute, through the SONAME link: the library itself is what counts */
        put("opt/nv/share/vulkan/implicit_layer.d/nvidia_layers.json",
            "{\"file_format_version\": \"1.0.0\", \"layer\": {\"library_path\": \"/opt/nv/lib64/libGLX_nvidia.so.0\"}}");
        /* /etc first, but broken: the valid one further down wins */
        put("etc/glvnd/egl_vendor.d/10_nvidia.json", "{\"file_format_version\": ");
        put("usr/share/glvnd/egl_vendor.d/10_nvidia.json", ICD("libEGL_nvidia.so.0"));
        /* /usr/share before the driver's prefix: both named 10_nvidia.json, the first wins */
        put("opt/nv/share/glvnd/egl_vendor.d/10_nvidia.json", ICD("libEGL_nvidia.so.0") " ");
        put("usr/share/glvnd/egl_vendor.d/50_mesa.json", ICD("libEGL_mesa.so.0"));
        put("opt/nv/share/egl/egl_external_platform.d/15_nvidia_gbm.json", ICD("libnvidia-egl-gbm.so.1"));
        put("opt/nv/share/egl/egl_external_platform.d/20_nvidia_rel.json", ICD("../lib64/libGLX_nvidia.so.0"));
        put("opt/nv/share/egl/egl_external_platform.d/30_nvidia_other.json", ICD("/opt/nv/lib64/libEGL_nvidia.so.9"));
        put("opt/nv/share/egl/egl_external_platform.d/40_nvidia_proc.json",
            ICD("/proc/self/root/opt/nv/lib64/libEGL_nvidia.so.1.2.3"));
        memset(big, ' ', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        memcpy(big, ICD("libGLX_nvidia.so.0"), strlen(ICD("libGLX_nvidia.so.0")));
        put("usr/share/vulkan/icd.d/nvidia_icd.big.json", big);
        sh("mkfifo %s/usr/share/vulkan/icd.d/nvidia_icd.fifo.json", T);
        sh("mkdir -p %s/usr/share/vulkan/icd.d/nvidia_icd.dir.json", T);
        put("opt/nv/share/nvidia/nvidia-application-profiles-1.2.3-rc", "{\"rules\": [], \"profiles\": []}\n");
        put("opt/nv/share/nvidia/nvidia-application-profiles-9.9.9-rc", "{\"rules\": [], \"profiles\": []}\n");

        rootfd = gh_rootfs_open(T, &err);
        ok(rootfd >= 0 && gh_loader_find(rootfd, T, "/opt/nv/lib64", "1.2.3", &libs, &out, &err) == 0,
           "find: succeeds (%s)", err ? err->msg : "ok");
        f = find(&out, "/usr/share/vulkan/icd.d/nvidia_icd.json");
        ok(f && strcmp(f->path, "/opt/nv/share/vulkan/icd.d/nvidia_icd.json") == 0 && f->library_src == NULL,
           "find: the ICD below the driver's prefix (/opt/nv/lib64 -> /opt/nv/share)");
        f = find(&out, "/usr/share/vulkan/implicit_layer.d/nvidia_layers.json");
        ok(f && f->library_src && strcmp(f->library_src, lib[0].path) == 0 &&
                   strcmp(f->library, "/opt/nv/lib64/libGLX_nvidia.so.0") == 0,
           "find: an absolute library path resolves to the discovered library, placed at that path");
        f = find(&out, "/usr/share/glvnd/egl_vendor.d/10_nvidia.json");
        ok(f && strcmp(f->path, "/usr/share/glvnd/egl_vendor.d/10_nvidia.json") == 0,
           "find: a broken file in /etc does not hide /usr/share's, which wins over the prefix's");
        ok(find(&out, "/usr/share/glvnd/egl_vendor.d/50_mesa.json") == NULL, "find: not an NVIDIA file name: ignored");
        ok(find(&out, "/usr/share/egl/egl_external_platform.d/15_nvidia_gbm.json") == NULL,
           "find: a library this driver does not provide: skipped");
        ok(find(&out, "/usr/share/egl/egl_external_platform.d/20_nvidia_rel.json") == NULL,
           "find: a relative library path: skipped");
        ok(find(&out, "/usr/share/egl/egl_external_platform.d/30_nvidia_other.json") == NULL,
           "find: an absolute path to a missing library: skipped");
        ok(find(&out, "/usr/share/egl/egl_external_platform.d/40_nvidia_proc.json") == NULL,
           "find: an absolute path under /proc: skipped");
        ok(find(&out, "/usr/share/vulkan/icd.d/nvidia_icd.big.json") == NULL, "find: over the size bound: skipped");
        ok(find(&out, "/usr/share/vulkan/icd.d/nvidia_icd.fifo.json") == NULL &&
                   find(&out, "/usr/share/vulkan/icd.d/nvidia_icd.dir.json") == NULL,
           "find: a FIFO or directory: skipped (not opened)");
        f = find(&out, "/usr/share/nvidia/nvidia-application-profiles-1.2.3-rc");
        ok(f && f->library == NULL, "find: the application profiles of this driver version");
        ok(find(&out, "/usr/share/nvidia/nvidia-application-profiles-9.9.9-rc") == NULL,
           "find: another version's application profiles: ignored");
        is_int(out.n, 4, "find: four files in all");
        gh_loader_files_free(&out);
        sh("rm -rf %s", T);
}

int main(void)
{
        test_parse();
        test_find();
        return tap_done();
}
