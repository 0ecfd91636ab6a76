/* UTF-8 (utf8.h). */
#include <stddef.h>

#include "utf8.h"

size_t gh_utf8_seq(const unsigned char *s, size_t n)
{
        unsigned char c = s[0];
        if (c < 0x80)
                return 1;
        if (c >= 0xc2 && c <= 0xdf)
                return n >= 2 && (s[1] & 0xc0) == 0x80 ? 2 : 0;
        if (c >= 0xe0 && c <= 0xef) {
                if (n < 3 || (s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80)
                        return 0;
                if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f))
                        return 0;
                return 3;
        }
        if (c >= 0xf0 && c <= 0xf4) {
                if (n < 4 || (s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 || (s[3] & 0xc0) != 0x80)
                        return 0;
                if ((c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] > 0x8f))
                        return 0;
                return 4;
        }
        return 0;
}

void gh_utf8_clean(char *dst, size_t size, const char *src, size_t len)
{
        const unsigned char *s = (const unsigned char *) src;
        size_t o = 0;

        for (size_t i = 0; i < len && o + 1 < size;) {
                size_t l = gh_utf8_seq(s + i, len - i);
                if (l == 0 || s[i] < 0x20 || s[i] == 0x7f) {
                        dst[o++] = '?';
                        i++;
                        continue;
                }
                if (o + l >= size)
                        break; /* never a part of a character */
                for (size_t k = 0; k < l; k++)
                        dst[o++] = (char) s[i + k];
                i += l;
        }
        dst[o] = '\0';
}
