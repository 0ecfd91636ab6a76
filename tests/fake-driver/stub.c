/* A stand-in for a driver library that gpu-hook only has to find, copy and mount: it must be a
 * real ELF shared object with the right SONAME, and the GL/EGL front ends must keep their
 * DT_NEEDED on the core library (--as-needed would drop it without a reference). */
#ifndef FAKE_SYM
#error "build with -DFAKE_SYM=<identifier>"
#endif

#ifdef FAKE_NEEDS
int FAKE_NEEDS(void);
#endif

int FAKE_SYM(void);

int FAKE_SYM(void)
{
#ifdef FAKE_NEEDS
        return FAKE_NEEDS() + 1;
#else
        return 1;
#endif
}
