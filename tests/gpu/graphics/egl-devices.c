/* EGL devices through glvnd: enumerate them (EGL_EXT_device_enumeration), open each one's display
 * on the device platform, print its EGL vendor and version and, through a GLES2 context on a
 * 1x1 pbuffer, the GL vendor and renderer.  "egl: PASS" when an NVIDIA display initialised; exit 1
 * with one line otherwise. */
#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GLES2/gl2.h>
#include <stdio.h>
#include <string.h>

static PFNEGLQUERYDEVICESEXTPROC query_devices;
static PFNEGLQUERYDEVICESTRINGEXTPROC query_device_string;
static PFNEGLGETPLATFORMDISPLAYEXTPROC get_platform_display;

static void gl_strings(EGLDisplay dpy, unsigned i)
{
        static const EGLint cfg_attrs[] = { EGL_SURFACE_TYPE, EGL_PBUFFER_BIT, EGL_RENDERABLE_TYPE, EGL_OPENGL_ES2_BIT,
                                            EGL_NONE };
        static const EGLint pb_attrs[] = { EGL_WIDTH, 1, EGL_HEIGHT, 1, EGL_NONE };
        static const EGLint ctx_attrs[] = { EGL_CONTEXT_CLIENT_VERSION, 2, EGL_NONE };
        EGLConfig cfg;
        EGLint n = 0;
        EGLSurface surf;
        EGLContext ctx;

        if (!eglBindAPI(EGL_OPENGL_ES_API) || !eglChooseConfig(dpy, cfg_attrs, &cfg, 1, &n) || n < 1) {
                printf("egl: device %u: no pbuffer GLES2 config (0x%x)\n", i, eglGetError());
                return;
        }
        surf = eglCreatePbufferSurface(dpy, cfg, pb_attrs);
        ctx = eglCreateContext(dpy, cfg, EGL_NO_CONTEXT, ctx_attrs);
        if (surf == EGL_NO_SURFACE || ctx == EGL_NO_CONTEXT || !eglMakeCurrent(dpy, surf, surf, ctx)) {
                printf("egl: device %u: no GLES2 context (0x%x)\n", i, eglGetError());
                return;
        }
        printf("egl: device %u: GL vendor %s, renderer %s, version %s\n", i, (const char *) glGetString(GL_VENDOR),
               (const char *) glGetString(GL_RENDERER), (const char *) glGetString(GL_VERSION));
        eglMakeCurrent(dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
        eglDestroyContext(dpy, ctx);
        eglDestroySurface(dpy, surf);
}

int main(void)
{
        const char *client = eglQueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS);
        EGLDeviceEXT devs[16];
        EGLint n = 0;
        int nvidia = 0;

        /* EGL_EXT_device_base is enumeration + query in one (glvnd advertises it that way) */
        if (client == NULL ||
            (strstr(client, "EGL_EXT_device_enumeration") == NULL && strstr(client, "EGL_EXT_device_base") == NULL) ||
            strstr(client, "EGL_EXT_platform_device") == NULL) {
                printf("egl: FAIL: no EGL_EXT_device_enumeration/EGL_EXT_platform_device (client extensions: %s)\n",
                       client ? client : "none");
                return 1;
        }
        query_devices = (PFNEGLQUERYDEVICESEXTPROC) eglGetProcAddress("eglQueryDevicesEXT");
        query_device_string = (PFNEGLQUERYDEVICESTRINGEXTPROC) eglGetProcAddress("eglQueryDeviceStringEXT");
        get_platform_display = (PFNEGLGETPLATFORMDISPLAYEXTPROC) eglGetProcAddress("eglGetPlatformDisplayEXT");
        if (!query_devices || !query_device_string || !get_platform_display) {
                printf("egl: FAIL: the device functions are missing\n");
                return 1;
        }
        if (!query_devices(16, devs, &n) || n == 0) {
                printf("egl: FAIL: no EGL devices (eglQueryDevicesEXT: %d devices, error 0x%x)\n", n, eglGetError());
                return 1;
        }
        for (EGLint i = 0; i < n; i++) {
                const char *ext = query_device_string(devs[i], EGL_EXTENSIONS);
                EGLDisplay dpy = get_platform_display(EGL_PLATFORM_DEVICE_EXT, devs[i], NULL);
                EGLint major, minor;
                const char *vendor;

                printf("egl: device %d: extensions %s\n", i, ext ? ext : "(none)");
                if (dpy == EGL_NO_DISPLAY || !eglInitialize(dpy, &major, &minor)) {
                        printf("egl: device %d: no display (0x%x)\n", i, eglGetError());
                        continue;
                }
                vendor = eglQueryString(dpy, EGL_VENDOR);
                printf("egl: device %d: EGL %d.%d, vendor %s, version %s\n", i, major, minor, vendor ? vendor : "?",
                       eglQueryString(dpy, EGL_VERSION));
                nvidia += vendor && strstr(vendor, "NVIDIA") != NULL;
                gl_strings(dpy, (unsigned) i);
                eglTerminate(dpy);
        }
        if (nvidia == 0) {
                printf("egl: FAIL: %d device(s), no NVIDIA display\n", n);
                return 1;
        }
        printf("egl: PASS\n");
        return 0;
}
