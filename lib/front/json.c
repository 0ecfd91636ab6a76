/* The JSON helper (json.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "utf8.h"

/* One pass before jansson: its own messages for these cases ("unable to decode byte", "maximum
 * parsing depth reached" at 2048) neither say what to fix nor stop early enough. */
int gh_json_precheck(const char *buf, size_t len, const char *what, gh_error_t *err)
{
        const unsigned char *s = (const unsigned char *) buf;
        bool in_string = false;
        size_t depth = 0, i = 0;

        while (i < len) {
                unsigned char c = s[i];
                if (c >= 0x80) {
                        size_t l = gh_utf8_seq(s + i, len - i);
                        if (l == 0)
                                return gh_err(err, 0,
                                              "%s is not valid UTF-8 (byte 0x%02x at offset %zu); fix the encoding",
                                              what, c, i);
                        i += l;
                        continue;
                }
                if (c == '\0')
                        return gh_err(err, 0, "%s contains a NUL byte at offset %zu; it must be JSON text", what, i);
                if (in_string) {
                        if (c == '\\')
                                i++;
                        else if (c == '"')
                                in_string = false;
                } else if (c == '"') {
                        in_string = true;
                } else if (c == '{' || c == '[') {
                        if (++depth > GH_JSON_MAX_DEPTH)
                                return gh_err(err, 0, "%s nests JSON deeper than %d levels; refusing it", what,
                                              GH_JSON_MAX_DEPTH);
                } else if ((c == '}' || c == ']') && depth > 0) {
                        depth--;
                }
                i++;
        }
        return 0;
}

json_t *gh_json_parse(const char *buf, size_t len, const char *what, gh_error_t *err)
{
        json_error_t jerr;
        size_t blank = 0;
        json_t *j;

        while (blank < len && strchr(" \t\r\n", buf[blank]) != NULL && buf[blank] != '\0')
                blank++;
        if (blank == len) {
                gh_err(err, 0, "%s is empty; expected a JSON object", what);
                return NULL;
        }
        if (gh_json_precheck(buf, len, what, err) < 0)
                return NULL;
        j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
        if (j == NULL) {
                gh_err(err, 0, "%s is not valid JSON: line %d column %d: %s", what, jerr.line, jerr.column, jerr.text);
                return NULL;
        }
        if (!json_is_object(j)) {
                json_decref(j);
                gh_err(err, 0, "%s is not a JSON object", what);
                return NULL;
        }
        return j;
}

int gh_json_set_new(json_t *obj, const char *key, json_t *v)
{
        return v == NULL ? -1 : json_object_set_new(obj, key, v);
}

int gh_json_append_new(json_t *arr, json_t *v) { return v == NULL ? -1 : json_array_append_new(arr, v); }

json_t *gh_json_string_or_null(const char *s) { return s ? json_string(s) : json_null(); }

json_t *gh_json_int_or_null(long long v, bool known) { return known ? json_integer(v) : json_null(); }

char *gh_json_text(json_t *doc, int indent)
{
        char *text = json_dumps(doc, (indent > 0 ? JSON_INDENT(indent) : JSON_COMPACT) | JSON_PRESERVE_ORDER), *grown;

        if (text == NULL || (grown = realloc(text, strlen(text) + 2)) == NULL) {
                free(text);
                return NULL;
        }
        return strcat(grown, "\n");
}

int gh_json_print(json_t *doc)
{
        char *text = doc ? gh_json_text(doc, 2) : NULL;
        int r = text && fputs(text, stdout) != EOF && fflush(stdout) == 0 ? 0 : -1;

        free(text);
        json_decref(doc);
        return r;
}
