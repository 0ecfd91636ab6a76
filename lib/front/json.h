/* The one JSON helper of the front end and the operations (jansson): a bounded, strict parser, the
 * setters that cannot fail silently, and printing.  The core links no JSON library; its own reader
 * is core/jsonread.c. */
#ifndef GH_JSON_H
#define GH_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "jsonread.h" /* GH_JSON_MAX_DEPTH: one nesting limit for both readers */

/* Parses a JSON document: checks UTF-8 and nesting depth first (so the message says which), then
 * loads it with jansson, rejecting duplicate keys.  The document must be an object.  `what` names
 * the input in messages. */
json_t *gh_json_parse(const char *buf, size_t len, const char *what, gh_error_t *err);

/* Setters that take a new reference and fail on NULL (a failed json_string() or json_pack()), so
 * a document is never written with a member silently missing.  -1 on failure. */
int gh_json_set_new(json_t *obj, const char *key, json_t *v);
int gh_json_append_new(json_t *arr, json_t *v);

/* s as a JSON string, or null when NULL; v as an integer, or null when not known. */
json_t *gh_json_string_or_null(const char *s);
json_t *gh_json_int_or_null(long long v, bool known);

/* The document as text: indented by `indent` (0: compact), keys in their order, and a newline;
 * NULL when out of memory.  Caller frees. */
char *gh_json_text(json_t *doc, int indent);

/* Prints the document (indented by 2) on stdout and frees it; -1 when it is NULL (a failed build)
 * or could not be written. */
int gh_json_print(json_t *doc);

static inline void gh_json_decrefp(json_t **j)
{
        if (*j)
                json_decref(*j);
}
#define _cleanup_json_ __attribute__((cleanup(gh_json_decrefp)))

#endif
