/* json_internal.h — what the JSON parser (json.c), its accessors
 * (json_access.c) and the config getters (config.c) share: the node.
 *
 * Memory: one arena per document holds every node, string and table;
 * objects of more than 8 members get a hash table for look-ups (and for
 * finding duplicate keys), so a 150k-entry vocabulary parses in linear
 * time.
 */
#ifndef WICK_JSON_INTERNAL_H
#define WICK_JSON_INTERNAL_H

#include "formats_internal.h"

typedef struct json_doc {
    wk_arena arena;
    char *name;
    wk_json *root;
} json_doc;

struct wk_json {
    wk_json_type kind;
    bool b;
    bool is_int;                /* a number whose literal fits int64 exactly */
    int64_t i;
    double num;
    const char *s;              /* string (NUL-terminated) */
    size_t len;
    size_t n;                   /* elements / members */
    wk_json **items;
    const char **keys;          /* objects */
    size_t *klens;
    uint32_t *slots;            /* objects of more than 8 members: index + 1 */
    size_t cap;
    json_doc *doc;
};


/* The member of object o named key[0..klen), or -1. */
int64_t wk_json_obj_find(const wk_json *o, const char *key, size_t klen);
/* Builds o's member table (a hash table past 8 members, in arena a) once
 * its keys are in; *dup is the first member whose key repeats an earlier
 * one, or -1. false on memory (nothing set). */
bool wk_json_obj_index(wk_arena *a, wk_json *o, int64_t *dup);

#endif /* WICK_JSON_INTERNAL_H */
