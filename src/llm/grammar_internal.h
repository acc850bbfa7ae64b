/* grammar_internal.h — a compiled JSON-schema grammar (wick_llm.h's
 * wk_grammar) as json_schema.c builds it and grammar.c runs it: a table of
 * nodes, each one kind of JSON value with its constraints, that refer to
 * each other by index (so $ref cycles are just indices). The recogniser
 * (grammar.c) keeps a stack of frames per live parse, one frame per node
 * being written.
 */
#ifndef WICK_GRAMMAR_INTERNAL_H
#define WICK_GRAMMAR_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include "wick_ext.h"
#include "wick_llm.h"

/* Limits of what the grammar generates (docs/grammar.md): each run of
 * whitespace between tokens of the JSON text, the digits of numbers, the
 * nesting of objects and arrays, the properties an object may declare. */
#define G_WS_MAX 24          /* bytes of one run of whitespace (of which one
                                newline at most: a line break and indentation) */
#define G_INT_DIGITS 18      /* "integer": at most 18 digits (fits int64) */
#define G_NUM_DIGITS 16      /* "number": integer part and fraction each  */
#define G_BOUNDED_DIGITS 15  /* a number with bounds: integer + fraction digits, no exponent */
#define G_EXP_DIGITS 2       /* exponent digits                           */
#define G_DEPTH_MAX 64       /* objects and arrays nested                 */
#define G_MAX_PROPS 64       /* declared properties of one object         */
#define G_MAX_NODES 200000   /* nodes of one grammar (a schema's size)    */
#define G_MAX_NEST 512       /* schemas inside schemas, through $refs too */

typedef enum gkind {
    G_OBJECT,     /* props [a, a + n), additional: child (-1: none)                 */
    G_ARRAY,      /* prefix items alts [a, a + n), then child (-1: none); min, max   */
    G_STRING,     /* min, max characters (max -1: none)                              */
    G_NUMBER,     /* integer or not; bounds                                          */
    G_LITERALS,   /* one of the JSON texts lits [a, a + n) (sorted, distinct)        */
    G_ANYOF       /* one of the nodes alts [a, a + n); n 0: nothing (unsatisfiable)  */
} gkind;

typedef struct gnode {
    uint8_t kind;
    bool integer;                  /* G_NUMBER                                  */
    bool has_lo, has_hi, lo_excl, hi_excl;
    double lo, hi;                 /* G_NUMBER bounds ("number")                */
    int64_t ilo, ihi;              /* "integer": inclusive bounds, exact        */
    int32_t a, n, child;
    int64_t min, max;              /* items, characters; max -1: none           */
    int32_t min_depth;             /* containers a value of it needs at least   */
} gnode;

typedef struct gprop {
    int32_t lit;                   /* the key as JSON text, quotes included     */
    int32_t node;
    bool required;
    uint64_t hash;                 /* of the key's decoded bytes (g_hash)       */
} gprop;

struct wk_grammar {
    atomic_int refs;
    gnode *nodes;
    int32_t n_nodes, cap_nodes;
    gprop *props;
    int32_t n_props, cap_props;
    int32_t *alts;
    int32_t n_alts, cap_alts;
    char *lit_bytes;               /* literal i: lit_bytes[lit_off[i] .. lit_off[i + 1]) */
    int64_t n_lit_bytes, cap_lit_bytes;
    int64_t *lit_off;
    int32_t n_lits, cap_lits;
    int32_t root;
    int32_t key_node;              /* any string: the keys of additional properties */
};

/* FNV-1a over bytes, continued from h (start: G_HASH0) */
#define G_HASH0 0xcbf29ce484222325ull
static inline uint64_t g_hash(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ull;
    return h;
}

static inline const char *g_lit(const wk_grammar *g, int32_t i, int64_t *len)
{
    *len = g->lit_off[i + 1] - g->lit_off[i];
    return g->lit_bytes + g->lit_off[i];
}

#endif
