/* Headless OpenGL ES 2 through EGL: on the first device-platform display that initialises (an EGL
 * device, no window system), clear a 64x64 pbuffer to blue, draw a red triangle over its lower-left
 * half, read the pixels back and check them.  "gles: PASS" or one line and exit 1. */
#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GLES2/gl2.h>
#include <stdio.h>
#include <string.h>

#define W 64
#define H 64

static const char *vs_src = "attribute vec2 pos;\nvoid main() { gl_Position = vec4(pos, 0.0, 1.0); }\n";
static const char *fs_src = "precision mediump float;\nvoid main() { gl_FragColor = vec4(1.0, 0.0, 0.0, 1.0); }\n";

static EGLDisplay open_display(void)
{
        PFNEGLQUERYDEVICESEXTPROC query_devices = (PFNEGLQUERYDEVICESEXTPROC) eglGetProcAddress("eglQueryDevicesEXT");
        PFNEGLGETPLATFORMDISPLAYEXTPROC get_platform_display =
                (PFNEGLGETPLATFORMDISPLAYEXTPROC) eglGetProcAddress("eglGetPlatformDisplayEXT");
        EGLDeviceEXT devs[16];
        EGLint n = 0;

        if (!query_devices || !get_platform_display || !query_devices(16, devs, &n))
                return EGL_NO_DISPLAY;
        for (EGLint i = 0; i < n; i++) {
                EGLDisplay dpy = get_platform_display(EGL_PLATFORM_DEVICE_EXT, devs[i], NULL);
                if (dpy != EGL_NO_DISPLAY && eglInitialize(dpy, NULL, NULL))
                        return dpy;
        }
        return EGL_NO_DISPLAY;
}

static GLuint shader(GLenum type, const char *src)
{
        GLuint s = glCreateShader(type);
        GLint ok = 0;
        char log[512] = "";

        glShaderSource(s, 1, &src, NULL);
        glCompileShader(s);
        glGetShaderiv(s, GL_COMPILE_STATUS, &ok);
        if (!ok) {
                glGetShaderInfoLog(s, sizeof(log), NULL, log);
                printf("gles: FAIL: shader does not compile: %s\n", log);
                return 0;
        }
        return s;
}

int main(void)
{
        static const EGLint cfg_attrs[] = { EGL_SURFACE_TYPE,
                                            EGL_PBUFFER_BIT,
                                            EGL_RENDERABLE_TYPE,
                                            EGL_OPENGL_ES2_BIT,
                                            EGL_RED_SIZE,
                                            8,
                                            EGL_GREEN_SIZE,
                                            8,
                                            EGL_BLUE_SIZE,
                                            8,
                                            EGL_NONE };
        static const EGLint pb_attrs[] = { EGL_WIDTH, W, EGL_HEIGHT, H, EGL_NONE };
        static const EGLint ctx_attrs[] = { EGL_CONTEXT_CLIENT_VERSION, 2, EGL_NONE };
        static const GLfloat tri[] = { -1.0f, -1.0f, 1.0f, -1.0f, -1.0f, 1.0f };
        static unsigned char px[W * H * 4];
        EGLDisplay dpy = open_display();
        EGLConfig cfg;
        EGLint n = 0;
        EGLSurface surf;
        EGLContext ctx;
        GLuint vs, fs, prog;
        int red = 0, blue = 0, other = 0;

        if (dpy == EGL_NO_DISPLAY) {
                printf("gles: FAIL: no EGL device display initialises (0x%x)\n", eglGetError());
                return 1;
        }
        if (!eglBindAPI(EGL_OPENGL_ES_API) || !eglChooseConfig(dpy, cfg_attrs, &cfg, 1, &n) || n < 1) {
                printf("gles: FAIL: no RGB8 pbuffer GLES2 config (0x%x)\n", eglGetError());
                return 1;
        }
        surf = eglCreatePbufferSurface(dpy, cfg, pb_attrs);
        ctx = eglCreateContext(dpy, cfg, EGL_NO_CONTEXT, ctx_attrs);
        if (surf == EGL_NO_SURFACE || ctx == EGL_NO_CONTEXT || !eglMakeCurrent(dpy, surf, surf, ctx)) {
                printf("gles: FAIL: no GLES2 context on a %dx%d pbuffer (0x%x)\n", W, H, eglGetError());
                return 1;
        }
        if ((vs = shader(GL_VERTEX_SHADER, vs_src)) == 0 || (fs = shader(GL_FRAGMENT_SHADER, fs_src)) == 0)
                return 1;
        prog = glCreateProgram();
        glAttachShader(prog, vs);
        glAttachShader(prog, fs);
        glBindAttribLocation(prog, 0, "pos");
        glLinkProgram(prog);
        glViewport(0, 0, W, H);
        glClearColor(0.0f, 0.0f, 1.0f, 1.0f);
        glClear(GL_COLOR_BUFFER_BIT);
        glUseProgram(prog);
        glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, 0, tri);
        glEnableVertexAttribArray(0);
        glDrawArrays(GL_TRIANGLES, 0, 3);
        glFinish();
        glReadPixels(0, 0, W, H, GL_RGBA, GL_UNSIGNED_BYTE, px);
        if (glGetError() != GL_NO_ERROR) {
                printf("gles: FAIL: GL error 0x%x\n", glGetError());
                return 1;
        }
        for (int i = 0; i < W * H; i++) {
                const unsigned char *p = px + 4 * i;
                if (p[0] > 250 && p[1] < 5 && p[2] < 5)
                        red++;
                else if (p[0] < 5 && p[1] < 5 && p[2] > 250)
                        blue++;
                else
                        other++;
        }
        /* Lower-left half red (with the diagonal), upper-right blue; row 0 is the bottom. */
        const unsigned char *ll = px + 4 * (8 * W + 8), *ur = px + 4 * (56 * W + 56);
        int ok = ll[0] > 250 && ll[2] < 5 && ur[0] < 5 && ur[2] > 250 && red >= W * H * 45 / 100 &&
                 blue >= W * H * 45 / 100 && other == 0;
        printf("gles: %s on a %dx%d pbuffer: %d red, %d blue, %d other pixels; (8,8) %s, (56,56) %s\n",
               (const char *) glGetString(GL_RENDERER), W, H, red, blue, other, ll[0] > 250 ? "red" : "not red",
               ur[2] > 250 ? "blue" : "not blue");
        eglMakeCurrent(dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
        eglTerminate(dpy);
        if (!ok) {
                printf("gles: FAIL: the pixels read back are not the triangle drawn\n");
                return 1;
        }
        printf("gles: PASS\n");
        return 0;
}
