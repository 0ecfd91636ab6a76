/* The ELF note of a CUDA forward-compatibility libcuda: a SHT_NOTE section
 * .note.cuda.fwd_compatibility holding one note owned by "NVIDIA Corporation" whose descriptor
 * is JSON naming the CUDA version and the driver branches the library runs on (the format of
 * NVIDIA's compat packages since CUDA 12.9; docs/cuda-compat.md).  FAKE_COMPAT_NOTE picks the
 * fixture (README.md, "CUDA compat libraries"); linked into a fake libcuda built from cuda.c. */
#if FAKE_COMPAT_NOTE == 1 /* 590.44.01, CUDA 13.1: lists the fake driver's branch 580 */
#define DESC                                                                                                           \
        "{\"Format\":1,\"CUDA Version\":\"13.1\",\"Driver\":[535,550,570,575,580,590],\"Device\":[1,2,7,8,9,10,11,12,13,14]}"
#elif FAKE_COMPAT_NOTE == 2 /* 575.57.08, CUDA 12.9: older than the fake driver */
#define DESC                                                                                                           \
        "{\"Format\":1,\"CUDA Version\":\"12.9\",\"Driver\":[535,550,560,565,570,575],\"Device\":[1,2,7,8,9,10,11,12,13,14]}"
#elif FAKE_COMPAT_NOTE == 3 /* 590.44.01 built for other branches: 580 is not listed */
#define DESC                                                                                                           \
        "{\"Format\":1,\"CUDA Version\":\"13.1\",\"Driver\":[535,550,570,590],\"Device\":[1,2,7,8,9,10,11,12,13,14]}"
#elif FAKE_COMPAT_NOTE == 4 /* 580.105.08, CUDA 13.0: the same branch, newer */
#define DESC                                                                                                           \
        "{\"Format\":1,\"CUDA Version\":\"13.0\",\"Driver\":[535,550,570,575,580],\"Device\":[1,2,7,8,9,10,11,12,13,14]}"
#elif FAKE_COMPAT_NOTE == 5 /* a note that is not JSON */
#define DESC "{\"Format\":1,\"CUDA Version\":"
#else
#error "FAKE_COMPAT_NOTE must be 1..5"
#endif

/* gas gives a section named .note* the type SHT_NOTE. */
__attribute__((section(".note.cuda.fwd_compatibility"), used, aligned(4))) static const struct {
        unsigned namesz, descsz, type;
        char name[20]; /* "NVIDIA Corporation" and its NUL, padded to 4 bytes */
        char desc[(sizeof(DESC) + 3) & ~3u];
} fake_compat_note = { 19, sizeof(DESC) - 1, 1, "NVIDIA Corporation", DESC };
