/* YAML to jansson through libyaml's event parser (yaml-read.h says what is accepted and why). */
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "cleanup.h"
#include "json.h" /* GH_JSON_MAX_DEPTH */
#include "yaml-read.h"

#define YAML_SONAME "libyaml-0.so.2"

static struct {
        bool tried;
        void *lib;
        __typeof__(yaml_parser_initialize) *initialize;
        __typeof__(yaml_parser_set_input_string) *set_input_string;
        __typeof__(yaml_parser_parse) *parse;
        __typeof__(yaml_event_delete) *event_delete;
        __typeof__(yaml_parser_delete) *parser_delete;
        char why[256];
} y;

static bool load_libyaml(void)
{
        if (y.tried)
                return y.lib != NULL;
        y.tried = true;
        y.lib = dlopen(YAML_SONAME, RTLD_NOW | RTLD_LOCAL);
        if (y.lib == NULL) {
                snprintf(y.why, sizeof(y.why), "%s", dlerror());
                return false;
        }
        y.initialize = (__typeof__(y.initialize)) dlsym(y.lib, "yaml_parser_initialize");
        y.set_input_string = (__typeof__(y.set_input_string)) dlsym(y.lib, "yaml_parser_set_input_string");
        y.parse = (__typeof__(y.parse)) dlsym(y.lib, "yaml_parser_parse");
        y.event_delete = (__typeof__(y.event_delete)) dlsym(y.lib, "yaml_event_delete");
        y.parser_delete = (__typeof__(y.parser_delete)) dlsym(y.lib, "yaml_parser_delete");
        if (!y.initialize || !y.set_input_string || !y.parse || !y.event_delete || !y.parser_delete) {
                snprintf(y.why, sizeof(y.why), "%s lacks a function of libyaml 0.2", YAML_SONAME);
                dlclose(y.lib);
                y.lib = NULL;
                return false;
        }
        return true;
}

/* YAML 1.2 core schema for a plain scalar: null, a boolean, a decimal integer, else a string. */
static json_t *plain_scalar(const char *s, size_t n)
{
        static const char *const nulls[] = { "", "~", "null", "Null", "NULL" };
        static const char *const trues[] = { "true", "True", "TRUE" };
        static const char *const falses[] = { "false", "False", "FALSE" };

        for (size_t i = 0; i < GH_ARRAY_SIZE(nulls); i++)
                if (strcmp(s, nulls[i]) == 0)
                        return json_null();
        for (size_t i = 0; i < GH_ARRAY_SIZE(trues); i++)
                if (strcmp(s, trues[i]) == 0)
                        return json_true();
        for (size_t i = 0; i < GH_ARRAY_SIZE(falses); i++)
                if (strcmp(s, falses[i]) == 0)
                        return json_false();
        size_t d = (s[0] == '-' || s[0] == '+') ? 1 : 0;
        if (n > d && n - d <= 18 && strspn(s + d, "0123456789") == n - d)
                return json_integer(strtoll(s, NULL, 10));
        return json_stringn(s, n);
}

struct frame {
        json_t *value; /* an object or array */
        char *key;     /* an object's key waiting for its value */
};

struct conv {
        struct frame stack[GH_JSON_MAX_DEPTH + 1];
        size_t depth;
        json_t *root;
        size_t nodes;
        const char *what;
        gh_error_t *err;
};

static int fail_at(struct conv *c, const yaml_event_t *ev, const char *msg)
{
        return gh_err(c->err, 0, "%s: line %zu, column %zu: %s", c->what, (size_t) ev->start_mark.line + 1,
                      (size_t) ev->start_mark.column + 1, msg);
}

/* Puts v (owned) where the parser is: the root, the next array element or the pending key's value;
 * an object's keys are taken by scalar_event, so here one must be pending. */
static int place(struct conv *c, json_t *v, const yaml_event_t *ev)
{
        if (v == NULL)
                return gh_err(c->err, ENOMEM, "reading %s", c->what);
        if (++c->nodes > GH_YAML_MAX_NODES) {
                json_decref(v);
                return fail_at(c, ev, "more than a million YAML nodes; refusing it");
        }
        if (c->depth == 0) {
                if (c->root != NULL) {
                        json_decref(v);
                        return fail_at(c, ev, "more than one value at the top");
                }
                c->root = v;
                return 0;
        }
        struct frame *f = &c->stack[c->depth - 1];
        if (json_is_array(f->value))
                return json_array_append_new(f->value, v) < 0 ? gh_err(c->err, ENOMEM, "reading %s", c->what) : 0;
        if (f->key == NULL) {
                json_decref(v);
                return fail_at(c, ev, "a mapping key must be a scalar");
        }
        if (json_object_get(f->value, f->key) != NULL) {
                char msg[160];
                json_decref(v);
                snprintf(msg, sizeof(msg), "duplicate key '%.100s'", f->key);
                return fail_at(c, ev, msg);
        }
        int r = json_object_set_new(f->value, f->key, v);
        free(f->key);
        f->key = NULL;
        return r < 0 ? gh_err(c->err, ENOMEM, "reading %s", c->what) : 0;
}

static int open_collection(struct conv *c, json_t *v, const yaml_event_t *ev)
{
        if (v == NULL)
                return gh_err(c->err, ENOMEM, "reading %s", c->what);
        if (c->depth >= GH_JSON_MAX_DEPTH) {
                json_decref(v);
                return fail_at(c, ev, "nested deeper than 64 levels; refusing it");
        }
        json_incref(v);
        if (place(c, v, ev) < 0) {
                json_decref(v);
                return -1;
        }
        c->stack[c->depth++] = (struct frame) { .value = v };
        return 0;
}

static int scalar_event(struct conv *c, const yaml_event_t *ev)
{
        const char *s = (const char *) ev->data.scalar.value;
        size_t n = ev->data.scalar.length;
        const char *tag = (const char *) ev->data.scalar.tag;
        bool as_string = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE ||
                         (tag != NULL && strcmp(tag, "tag:yaml.org,2002:str") == 0);

        if (memchr(s, '\0', n) != NULL)
                return fail_at(c, ev, "a NUL character in a scalar");
        if (c->depth > 0 && json_is_object(c->stack[c->depth - 1].value) && c->stack[c->depth - 1].key == NULL) {
                /* a key: its text, whatever type a value of that text would have */
                if (++c->nodes > GH_YAML_MAX_NODES)
                        return fail_at(c, ev, "more than a million YAML nodes; refusing it");
                c->stack[c->depth - 1].key = strndup(s, n);
                return c->stack[c->depth - 1].key ? 0 : gh_err(c->err, ENOMEM, "reading %s", c->what);
        }
        return place(c, as_string ? json_stringn(s, n) : plain_scalar(s, n), ev);
}

json_t *gh_yaml_parse(const char *buf, size_t len, const char *what, gh_error_t *err)
{
        struct conv c = { .what = what, .err = err };
        yaml_parser_t parser;
        bool done = false;
        int r = 0;

        if (!load_libyaml()) {
                gh_err(err, ENOENT, "%s: reading YAML needs %s (%s); install libyaml (Debian: libyaml-0-2)", what,
                       YAML_SONAME, y.why);
                return NULL;
        }
        if (!y.initialize(&parser)) {
                gh_err(err, ENOMEM, "reading %s", what);
                return NULL;
        }
        y.set_input_string(&parser, (const unsigned char *) buf, len);
        while (!done && r == 0) {
                yaml_event_t ev;
                if (!y.parse(&parser, &ev)) {
                        r = gh_err(err, 0, "%s: line %zu, column %zu: %s%s%s", what,
                                   (size_t) parser.problem_mark.line + 1, (size_t) parser.problem_mark.column + 1,
                                   parser.problem ? parser.problem : "not YAML", parser.context ? " " : "",
                                   parser.context ? parser.context : "");
                        break;
                }
                switch (ev.type) {
                case YAML_MAPPING_START_EVENT: r = open_collection(&c, json_object(), &ev); break;
                case YAML_SEQUENCE_START_EVENT: r = open_collection(&c, json_array(), &ev); break;
                case YAML_MAPPING_END_EVENT:
                case YAML_SEQUENCE_END_EVENT:
                        if (c.depth > 0) {
                                c.depth--;
                                free(c.stack[c.depth].key);
                                json_decref(c.stack[c.depth].value);
                        }
                        break;
                case YAML_SCALAR_EVENT: r = scalar_event(&c, &ev); break;
                case YAML_ALIAS_EVENT:
                        r = fail_at(&c, &ev, "YAML aliases (*name) are refused: CDI specs have none");
                        break;
                case YAML_DOCUMENT_END_EVENT: /* the first document is the spec, as for Go's readers */
                case YAML_STREAM_END_EVENT: done = true; break;
                case YAML_NO_EVENT:
                case YAML_STREAM_START_EVENT:
                case YAML_DOCUMENT_START_EVENT:
                default: break;
                }
                y.event_delete(&ev);
        }
        y.parser_delete(&parser);
        while (c.depth > 0) {
                c.depth--;
                free(c.stack[c.depth].key);
                json_decref(c.stack[c.depth].value);
        }
        if (r == 0 && c.root == NULL)
                r = gh_err(err, 0, "%s is empty; expected a YAML mapping", what);
        if (r < 0) {
                json_decref(c.root);
                return NULL;
        }
        return c.root;
}
