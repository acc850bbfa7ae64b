/* bench_args.h — what the language-model benchmark drivers
 * (llm_bench.c, engine_bench.c) share: a seeded generator of random token
 * ids and a parser of comma-separated numbers. */
#ifndef WICK_BENCH_ARGS_H
#define WICK_BENCH_ARGS_H

#include <stdint.h>
#include <stdlib.h>

/* the next of a linear congruential sequence, its high 31 bits */
static inline uint32_t rnd(uint64_t *state)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*state >> 33);
}

/* "1,8,32" into out (at most cap); the count, or -1 on a bad number */
static inline int parse_list(const char *s, int64_t *out, int cap)
{
    int n = 0;
    while (*s && n < cap) {
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s) return -1;
        out[n++] = v;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

#endif
