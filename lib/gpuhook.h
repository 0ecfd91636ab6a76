/* libgpuhook: give OCI containers an NVIDIA GPU.
 *
 * This is the only public header.  Every exported symbol starts with gpuhook_; everything else in
 * the library is hidden (see libgpuhook.sym). */
#ifndef GPUHOOK_H
#define GPUHOOK_H

#ifdef __cplusplus
extern "C" {
#endif

/* Errors: functions return a negative value and fill *err; free it with gpuhook_error_free(). */
struct gpuhook_error {
        int code;  /* errno value when the cause was a system call, else 0 or an exit-code hint */
        char *msg; /* one line: what failed, on what, and what to do */
};
void gpuhook_error_free(struct gpuhook_error *err);

/* The library's version string, e.g. "0.1.0". */
const char *gpuhook_version(void);

#ifdef __cplusplus
}
#endif
#endif
