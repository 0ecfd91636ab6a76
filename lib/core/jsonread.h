/* A small strict JSON reader for the library (which links no JSON library): parses a whole
 * document (RFC 8259: objects, arrays, strings with every escape, numbers, literals) into a flat
 * tree of nodes, refusing duplicate keys in an object, a NUL in a string, raw control characters,
 * nesting deeper than GH_JSON_MAX_DEPTH and anything after the value.  Used for the driver's
 * loader files (loaders.c). */
#ifndef GH_JSONREAD_H
#define GH_JSONREAD_H

#include <stddef.h>

#include "error.h"

#define GH_JSON_MAX_DEPTH 64

enum gh_json_type { GH_JSON_NULL, GH_JSON_BOOL, GH_JSON_NUMBER, GH_JSON_STRING, GH_JSON_ARRAY, GH_JSON_OBJECT };

struct gh_json_node {
        enum gh_json_type type;
        char *key; /* a member of an object: its name (decoded) */
        char *str; /* STRING: the decoded value, NUL-terminated; NUMBER: the number as written */
        int child; /* ARRAY, OBJECT: the first element, -1 when empty */
        int next;  /* the next element of the parent, -1 at the end */
};

struct gh_json {
        struct gh_json_node *v; /* v[0] is the document's value */
        size_t n, cap;
};

int gh_jsonread_parse(const char *text, size_t len, struct gh_json *doc, gh_error_t *err);

/* The member `key` of object node obj, -1 when absent (or obj is no object). */
int gh_json_get(const struct gh_json *doc, int obj, const char *key);

/* Node i as an unsigned integer (a NUMBER written as plain digits, at most max): 0, or -1. */
int gh_json_uint(const struct gh_json *doc, int i, unsigned long max, unsigned long *out);

void gh_json_free(struct gh_json *doc);

#endif
