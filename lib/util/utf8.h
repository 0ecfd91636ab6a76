/* UTF-8 checks for text that reaches JSON parsers, label values and records. */
#ifndef GH_UTF8_H
#define GH_UTF8_H

#include <stddef.h>

/* Length of the UTF-8 sequence at s (at most n bytes), 0 when it is not valid UTF-8: no overlong
 * forms, no surrogates, nothing above U+10FFFF. */
size_t gh_utf8_seq(const unsigned char *s, size_t n);

/* Copies len bytes of src into dst (size bytes, always NUL-terminated) as valid UTF-8 without
 * control characters: a byte that starts no valid sequence, below 0x20 or 0x7f becomes '?'; a
 * character that does not fit whole is left out, and so is everything after it. */
void gh_utf8_clean(char *dst, size_t size, const char *src, size_t len);

#endif
