/* ld.so.conf parser (an image's /etc/ld.so.conf and its includes are attacker-written).  Besides
 * "no crash": every directory it returns is a non-empty single line without a comment or a
 * trailing slash, every include pattern a single word; and parsing is line-local, so parsing the
 * text in two pieces cut at a newline gives the same items as parsing it whole. */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "ldconf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct gh_ldconf *c)
{
        for (size_t i = 0; i < c->n; i++) {
                const char *t = c->v[i].text;
                size_t len = strlen(t);
                if (len == 0 || strpbrk(t, "\n#") != NULL)
                        abort();
                if (c->v[i].kind == GH_LDCONF_DIR && (t[len - 1] == '/' || isspace((unsigned char) t[0])))
                        abort();
                if (c->v[i].kind == GH_LDCONF_INCLUDE && strpbrk(t, " \t") != NULL)
                        abort();
        }
}

static bool same(const struct gh_ldconf *a, const struct gh_ldconf *b)
{
        if (a->n != b->n)
                return false;
        for (size_t i = 0; i < a->n; i++)
                if (a->v[i].kind != b->v[i].kind || a->v[i].flag != b->v[i].flag ||
                    strcmp(a->v[i].text, b->v[i].text) != 0)
                        return false;
        return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        _cleanup_error_ gh_error_t err = NULL, err2 = NULL;
        struct gh_ldconf whole = { 0 }, pieces = { 0 };
        const char *text = (const char *) data;
        const char *nl;

        if (size > (64u << 10))
                return 0;
        if (gh_ldconf_parse(text, size, &whole, &err) < 0) {
                if (err == NULL || err->msg == NULL)
                        abort(); /* a refusal says why */
                gh_ldconf_free(&whole);
                return 0;
        }
        check(&whole);
        nl = memchr(text, '\n', size);
        if (nl != NULL) {
                size_t first = (size_t) (nl - text) + 1;
                if (gh_ldconf_parse(text, first, &pieces, &err2) < 0 ||
                    gh_ldconf_parse(text + first, size - first, &pieces, &err2) < 0 || !same(&whole, &pieces))
                        abort();
        }
        gh_ldconf_free(&whole);
        gh_ldconf_free(&pieces);
        return 0;
}
