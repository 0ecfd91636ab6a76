/* YAML documents read into jansson values, so that a YAML CDI spec (nvidia-ctk's default, the DRA
 * driver's) is analysed by the same code as a JSON one.
 *
 * The parser is libyaml, loaded with dlopen on first use: gpu-cli is also the per-container
 * cdi-hook, whose start must not map a library it never uses (docs/cdi.md, "Specs written by
 * others").  Only what CDI specs are made of is accepted: mappings with scalar keys (no duplicates),
 * sequences and scalars, at most GH_JSON_MAX_DEPTH levels deep; the first document only, as Go's
 * YAML readers take it.  Aliases are refused (a few bytes of them expand into gigabytes), as are
 * documents of more than GH_YAML_MAX_NODES nodes.  Plain scalars take YAML 1.2's core types
 * (null, true/false, decimal integers); quoted ones are strings; floats stay strings (CDI has none). */
#ifndef GH_YAML_READ_H
#define GH_YAML_READ_H

#include <jansson.h>
#include <stddef.h>

#include "error.h"

#define GH_YAML_MAX_NODES (1u << 20)

/* The document in buf[0..len) as a jansson value, or NULL with a one-line error naming `what` (the
 * file) and, for a syntax error, the line and column. */
json_t *gh_yaml_parse(const char *buf, size_t len, const char *what, gh_error_t *err);

#endif
