/* parity.h — the op-parity runner (build/wick-parity): every op x dtype x
 * layout case runs on every available device (cuda:N, rocm:N; the cpu
 * itself when there is no GPU) and on the cpu with the same inputs, and
 * the two results must agree (normalized squared error with a per-dtype
 * bound, exact for integer and copy-like results, NaN and Inf in the same
 * places). Inputs are made on the host from the case's seed and uploaded
 * to both devices, where the same view ops give the same layout
 * (transposed, narrowed, broadcast). In-place destinations live inside a
 * poisoned storage; the whole storage is compared.
 *
 * Self-contained apart from the header-only codecs of tests/t_dtype.h.
 */
#ifndef WICK_PARITY_H
#define WICK_PARITY_H

#include <stdbool.h>
#include <stdint.h>
#include "wick.h"
#include "../t_dtype.h"

/* how an input's view is made from its base storage */
/* PK_SWAP12: a rank-4 view [B, X, Y, D] of memory laid out [B, Y, X, D] (a
 * [B, T, H, D] tensor seen as [B, H, T, D], as attention and rope take it) */
/* PK_T01: a view [X, Y, ..] of memory laid out [Y, X, ..] (dims 0 and 1
 * swapped: paged attention's q [T, Hq, D] from [Hq, T, D]) */
typedef enum p_kind { PK_CONTIG, PK_TRANSPOSED, PK_NARROWED, PK_BROADCAST, PK_SWAP12, PK_T01 } p_kind;

/* how an input's values are drawn */
/* PG_IDS_BAD: PG_IDS with element n/2 of the base set to `lo` (an out-of-range id)
 * PG_INF_ROWS: PG_UNIFORM, with rows (runs of the base's last dim) 1, 5, 9, ..
 *   all -inf and every third element of rows 2, 6, 10, .. -inf
 * PG_MASK_INF: PG_UNIFORM with one element in ten -inf and the first row of
 *   the base (its last dim) all -inf (an attention mask hiding a whole row) */
/* PG_SORTKEYS: floats from a small set with ties, NaN, +-inf and +-0 (one
 *   in four) or PG_FULL's spread; integers as PG_FULL with one in four
 *   from a small set (ties, the extremes) */
/* PG_Q8: j / 64 for integers j in [-127, 127], with every element whose
 *   index, or whose run of the base's last dim, is a multiple of 32 at
 *   +-127 / 64: any 32 consecutive values along either dim of a 2-d base
 *   hold a +-127 / 64, so 8-bit activation blocks (qmatmul's q8 path) of
 *   x or of x transposed represent them exactly (scale 1 / 64) */
typedef enum p_gen { PG_UNIFORM, PG_POSITIVE, PG_AWAY, PG_SMALLSET, PG_FULL, PG_IDS, PG_MASK, PG_POISON, PG_IDS_BAD,
                     PG_INF_ROWS, PG_MASK_INF, PG_SORTKEYS, PG_Q8 } p_gen;

typedef struct p_input {
    wk_dtype dt;
    wk_shape shape;    /* logical shape of the view */
    p_kind kind;
    p_gen gen;
    double lo, hi;     /* PG_UNIFORM range; PG_IDS: ids in [0, hi) */
} p_input;

/* the op families the runner knows how to call */
typedef enum p_family {
    PF_UNARY, PF_AFFINE, PF_POWF, PF_ELU, PF_BINARY, PF_CMP, PF_WHERE, PF_CAST, PF_REDUCE, PF_MATMUL,
    PF_INDEX_SELECT, PF_GATHER, PF_SCATTER_SET, PF_SCATTER_ADD, PF_INDEX_ADD, PF_COPY_INTO, PF_CONST_SET,
    PF_COPY2D, PF_CAT, PF_RAND_UNIFORM, PF_RAND_NORMAL,
    /* fused NN ops; sub selects the variant (below), dims[0] the softmax dim,
     * p0 eps (norms), position offset (rope) or scale (attention) */
    PF_SOFTMAX,        /* sub 0 softmax, 1 log_softmax                        */
    PF_RMS_NORM,       /* in: x, weight; sub 0 weight, 1 no weight, 2 Gemma  */
    PF_LAYER_NORM,     /* in: x, weight, bias; sub 0 both, 1 none, 2 weight  */
    PF_ADD_RMS_NORM,   /* in: x, residual, weight; sub 1 Gemma; the result
                          compared is stack(norm, sum): both outputs          */
    PF_SILU_MUL,
    PF_ROPE,           /* in: x, cos, sin; sub 0 rope, 1 rope_i, 2 rope_thd   */
    PF_ROPE_KV,        /* in: qkv, cos, sin, both caches [2, B, Hkv, C, D]; opt[0]
                          Hq; p0 the position; sub bit 0 interleaved, bit 1 the
                          position from a u32 device tensor; compared: the
                          queries and both caches, flattened and joined      */
    PF_LINEAR_SILU_MUL, /* in: x, w [2F, K]                                    */
    PF_LINEAR_ROPE_KV, /* in: x [T, K], w [H D, K], the tables cos and sin as
                          [2, n_pos, D/2] f32, both caches [2, 1, Hkv, C, D];
                          opt[0], p0 and sub as PF_ROPE_KV's; compared as
                          PF_ROPE_KV's                                       */
    PF_ATTENTION,      /* in: q, k, v, mask (nin 4) or none; p0 scale, p1
                          softcap, causal, window                            */
    PF_PAGED_ATTENTION, /* in: q [T, Hq, D], the k and v pools [NB, BS, Hkv,
                          D]; ids: block_table, seq, pos (u32, host values
                          made by the case); p0 scale, p1 softcap, window   */
    /* block-quantized ops: in[0] is f32 [rows, cols] quantized on the cpu
     * to `to` (then moved to the device); dims[0] = 1: rows 1 .. rows - 2
     * of it (a row view); sub: the float result dtype */
    PF_DEQUANTIZE,
    PF_QMATMUL,        /* in: w (f32 -> to), x                               */
    PF_QGATHER,        /* in: table (f32 -> to), ids                         */
    /* convolutions, pools, upsampling, sorting: options in opt[] */
    PF_CONV,           /* in: x, w, bias (nin 3) or none; sub 0 conv1d, 1
                          conv_transpose1d, 2 conv2d, 3 conv_transpose2d;
                          opt: stride[2], padding[2], dilation[2],
                          output_padding[2], groups                       */
    PF_POOL,           /* sub 0 avg, 1 max (values), 2 max (its indices);
                          opt: kernel[2], stride[2], padding[2], ceil_mode,
                          exclude_pad                                     */
    PF_UPSAMPLE,       /* sub 0 nearest1d, 1 nearest2d, 2 bilinear; dims[0],
                          dims[1] the output H, W (L: dims[1]); p0, p1 the
                          scales; opt[0] align_corners                   */
    PF_SORT            /* sub 0 arg_sort, 1 sort (values), 2 topk (values),
                          3 topk (indices); opt[0] descending / largest,
                          opt[1] k                                        */
} p_family;

typedef struct p_case {
    char name[160];        /* op/dtype/layout/size */
    const char *op;        /* wk_op_names() name, for filters and coverage */
    wk_dtype dt;           /* the dtype the coverage table files it under */
    p_family fam;
    int sub;               /* unary/binary/cmp/reduce op */
    double p0, p1;         /* parameters */
    int dim;               /* dim argument; for reduce: ndims (-1: all) */
    int dims[4];
    bool keepdim;
    wk_dtype to;           /* PF_CAST target */
    int nin;
    p_input in[4];         /* in[0] is the destination of in-place ops */
    bool accum;            /* accumulating op: the looser bound */
    bool exact;            /* results must agree bit for bit */
    double bound;          /* > 0: this normalized-error bound instead of the dtype's */
    bool expect_err;       /* must fail with WK_ERR_INDEX on the cpu and every device,
                              an in-place destination left unchanged */
    bool causal;           /* PF_ATTENTION */
    int window;            /* PF_ATTENTION: > 0 a sliding window */
    int64_t opt[10];       /* PF_CONV, PF_POOL, PF_UPSAMPLE, PF_SORT (above) */
    const uint32_t *ids[3];  /* PF_PAGED_ATTENTION: block_table, seq, pos (host) */
    wk_shape ids_shape[3];
} p_case;

/* parity_main.c: run one case on every selected device (checks filters) */
void p_run(p_case *c);
/* parity_main.c: true in --quick mode (no size above 1023) */
bool p_quick(void);
/* parity_cases.c: enumerate every case, calling p_run */
void p_all_cases(void);

#endif /* WICK_PARITY_H */
