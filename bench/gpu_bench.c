/* gpu_bench.c — wick-gpu-bench: the wick side of the GPU benchmark
 * (bench/gpu_vs_torch.py drives it and times the same ops in PyTorch).
 *
 * Every case calls wick's public C API the way a user does. Inputs come
 * from wk_rand_uniform on the device (seeded; never zeros) and are made
 * once per run, shared by the cases that name the same input key.
 *
 * Timing, after `warmup` untimed calls:
 *   - events (the headline figure, as PyTorch is timed with CUDA events):
 *     `reps` reps back to back, each bracketed by two wick events
 *     (wk_event_record; out = op(...); wk_event_record), then one wait;
 *     the median of wk_event_elapsed_ms over the reps. On a GPU that is
 *     device time from the first event to the second: the op's kernels,
 *     plus any time the device waited for the host to launch them.
 *   - host clock per rep (host_*_ms): synchronize; t0; out = op(...);
 *     synchronize; t1; the median of `reps` such reps. This includes one
 *     launch and one synchronization latency per rep (a few microseconds).
 *   - batch: synchronize; t0; `reps` calls back to back (each output
 *     released as soon as the call returns); synchronize; t1; divided by
 *     reps. Launch and synchronization latency are then hidden behind the
 *     device work.
 * Each op allocates its output (wick ops return new tensors); that is part
 * of what is timed, as it is in PyTorch. Each output is released outside
 * the timing (after the clock or before the next start event).
 *
 * Checking. With --dump DIR the driver writes, outside the timing, every
 * input it made (DIR/KEY.bin) and the output of the last timed rep
 * (DIR/CASE.out.bin) as raw little-endian row-major data, so the script
 * can compare wick's output with PyTorch's for the very same input.
 *
 * Special cases: `launch_chain` issues 10,000 dependent 1-element adds
 * (x = x + 1) and compares the time per add with a bare chain of 10,000
 * launches of a 1-element kernel through the CUDA driver API (opened with
 * dlopen; the kernel is a few lines of PTX), both in this process, the
 * chains taking turns; each figure is the median of 9 chains. Two more
 * figures say where wick's extra time goes: each chain's host time to
 * issue its launches (before the final wait; equal to the chain's time
 * when the host is the limit), and a bare chain of a kernel with the
 * signature of wick's small add (three pointers, two ints).
 * `h2d_d2h` copies 1 GiB from pinned host memory (wk_host_alloc) to the
 * device (wk_from_host) and back into pinned memory (wk_to_host), timed on
 * the host clock around each copy (both return synchronized), with device
 * events around them as well (event_*_ms); then the same from and to
 * pageable (malloc) memory (pageable_*_ms). Both round trips are checked
 * byte for byte.
 *
 * Output: one JSON object per line per case on stdout (the fields are
 * printed by run_op_case, run_chain and run_xfer);
 * messages on stderr. Usage: wick-gpu-bench --help.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "wick.h"
#include "wick_ext.h"
#include "../cli/timing.h"

/* ---- sizes ---------------------------------------------------------------- */

typedef struct sizes {
    int64_t n_elem;              /* contiguous elementwise: elements        */
    int64_t sq;                  /* square [sq, sq] f32                     */
    int64_t red_rows, red_cols;  /* last-dim reductions                     */
    int64_t tab_rows, tab_cols;  /* index_select table                      */
    int64_t n_ids;
    int64_t mm_s, mm_l;          /* square matmuls                          */
    int64_t mm_b, mm_bd;         /* batched: mm_b x [mm_bd, mm_bd]          */
    int64_t chain;               /* dependent adds                          */
    int64_t xfer;                /* host <-> device bytes                   */
    int64_t nn_rows[2], nn_cols[2];  /* the NN rows: [16384, 4096], [4096, 32000] */
    int64_t rope_h, rope_d;      /* rope x [1, H, rows x cols / (H D), D]   */
    int64_t at_h, at_hkv, at_tq[4], at_d[4], at_tk[3];  /* attention shapes (below) */
} sizes;

static const sizes full_sizes = {
    (int64_t)1 << 28, 16384, 65536, 4096, 128256, 4096, 8192, 4096, 8192, 64, 512, 10000, (int64_t)1 << 30,
    { 16384, 4096 }, { 4096, 32000 }, 32, 128,     /* rows a, b; cols a, b; rope H, D */
    /* prefill [1, 32, T, D] for (T, D) = (4096, 128), (16384, 128), (4096, 64),
     * (4096, 256); decode q [1, 32, 1, 128], k and v [1, 8, Tk, 128] */
    32, 8, { 4096, 16384, 4096, 4096 }, { 128, 128, 64, 256 }, { 4096, 16384, 65536 },
};
/* --small: the same cases at sizes a CPU runs in a moment (tests) */
static const sizes small_sizes = {
    (int64_t)1 << 16, 256, 512, 256, 1000, 64, 64, 128, 192, 4, 64, 200, (int64_t)1 << 20,
    { 64, 16 }, { 256, 1024 }, 4, 64,
    4, 2, { 64, 128, 64, 64 }, { 128, 128, 64, 256 }, { 64, 256, 1024 },
};

/* ---- inputs --------------------------------------------------------------- */

typedef enum shape_id {
    SH_ELEM, SH_SQ, SH_ROW, SH_COL, SH_RED, SH_TABLE, SH_IDS, SH_MM_S, SH_MM_L, SH_MM_B,
    SH_NN_A, SH_NN_B, SH_NNW_A, SH_NNW_B,       /* NN rows and their [cols] weights   */
    SH_ROPE_A, SH_ROPE_B, SH_TAB_A, SH_TAB_B,   /* rope x; its cos/sin tables         */
    SH_PF0, SH_PF1, SH_PF2, SH_PF3,             /* attention prefill q, k, v          */
    SH_DQ, SH_DKV0, SH_DKV1, SH_DKV2            /* attention decode q; k and v        */
} shape_id;

typedef struct input_spec {
    const char *key;
    wk_dtype dt;
    shape_id shape;
} input_spec;

static const input_spec input_specs[] = {
    { "x_f32", WK_F32, SH_ELEM },        { "y_f32", WK_F32, SH_ELEM },
    { "x_bf16", WK_BF16, SH_ELEM },      { "y_bf16", WK_BF16, SH_ELEM },
    { "sq_f32", WK_F32, SH_SQ },         { "row_f32", WK_F32, SH_ROW },
    { "col_f32", WK_F32, SH_COL },       { "red_f32", WK_F32, SH_RED },
    { "red_bf16", WK_BF16, SH_RED },     { "table_bf16", WK_BF16, SH_TABLE },
    { "ids_i64", WK_I64, SH_IDS },
    { "mms_bf16_a", WK_BF16, SH_MM_S },  { "mms_bf16_b", WK_BF16, SH_MM_S },
    { "mml_bf16_a", WK_BF16, SH_MM_L },  { "mml_bf16_b", WK_BF16, SH_MM_L },
    { "mmb_bf16_a", WK_BF16, SH_MM_B },  { "mmb_bf16_b", WK_BF16, SH_MM_B },
    { "mms_f16_a", WK_F16, SH_MM_S },    { "mms_f16_b", WK_F16, SH_MM_S },
    { "mml_f16_a", WK_F16, SH_MM_L },    { "mml_f16_b", WK_F16, SH_MM_L },
    { "mmb_f16_a", WK_F16, SH_MM_B },    { "mmb_f16_b", WK_F16, SH_MM_B },
    { "mms_f32_a", WK_F32, SH_MM_S },    { "mms_f32_b", WK_F32, SH_MM_S },
    { "mml_f32_a", WK_F32, SH_MM_L },    { "mml_f32_b", WK_F32, SH_MM_L },
    { "mmb_f32_a", WK_F32, SH_MM_B },    { "mmb_f32_b", WK_F32, SH_MM_B },
    { "nna_bf16", WK_BF16, SH_NN_A },    { "nnb_bf16", WK_BF16, SH_NN_B },
    { "nna_f32", WK_F32, SH_NN_A },      { "nnb_f32", WK_F32, SH_NN_B },
    { "nnwa_bf16", WK_BF16, SH_NNW_A },  { "nnwb_bf16", WK_BF16, SH_NNW_B },
    { "nnba_bf16", WK_BF16, SH_NNW_A },  { "nnbb_bf16", WK_BF16, SH_NNW_B },
    { "nnwa_f32", WK_F32, SH_NNW_A },    { "nnwb_f32", WK_F32, SH_NNW_B },
    { "nnba_f32", WK_F32, SH_NNW_A },    { "nnbb_f32", WK_F32, SH_NNW_B },
    { "ropea_bf16", WK_BF16, SH_ROPE_A }, { "ropeb_bf16", WK_BF16, SH_ROPE_B },
    { "ropea_f32", WK_F32, SH_ROPE_A },  { "ropeb_f32", WK_F32, SH_ROPE_B },
    /* wk_rope_tables (head dim rope_d, base 10000), not random */
    { "cosa", WK_F32, SH_TAB_A },        { "sina", WK_F32, SH_TAB_A },
    { "cosb", WK_F32, SH_TAB_B },        { "sinb", WK_F32, SH_TAB_B },
    { "pf0_q", WK_BF16, SH_PF0 }, { "pf0_k", WK_BF16, SH_PF0 }, { "pf0_v", WK_BF16, SH_PF0 },
    { "pf1_q", WK_BF16, SH_PF1 }, { "pf1_k", WK_BF16, SH_PF1 }, { "pf1_v", WK_BF16, SH_PF1 },
    { "pf2_q", WK_BF16, SH_PF2 }, { "pf2_k", WK_BF16, SH_PF2 }, { "pf2_v", WK_BF16, SH_PF2 },
    { "pf3_q", WK_BF16, SH_PF3 }, { "pf3_k", WK_BF16, SH_PF3 }, { "pf3_v", WK_BF16, SH_PF3 },
    { "dec_q", WK_BF16, SH_DQ },
    { "dec0_k", WK_BF16, SH_DKV0 }, { "dec0_v", WK_BF16, SH_DKV0 },
    { "dec1_k", WK_BF16, SH_DKV1 }, { "dec1_v", WK_BF16, SH_DKV1 },
    { "dec2_k", WK_BF16, SH_DKV2 }, { "dec2_v", WK_BF16, SH_DKV2 },
};
#define N_INPUTS (int)(sizeof input_specs / sizeof input_specs[0])

static wk_shape shape_of(shape_id id, const sizes *s)
{
    switch (id) {
    case SH_ELEM: return WK_SHAPE(s->n_elem);
    case SH_SQ: return WK_SHAPE(s->sq, s->sq);
    case SH_ROW: return WK_SHAPE(s->sq);
    case SH_COL: return WK_SHAPE(s->sq, 1);
    case SH_RED: return WK_SHAPE(s->red_rows, s->red_cols);
    case SH_TABLE: return WK_SHAPE(s->tab_rows, s->tab_cols);
    case SH_IDS: return WK_SHAPE(s->n_ids);
    case SH_MM_S: return WK_SHAPE(s->mm_s, s->mm_s);
    case SH_MM_L: return WK_SHAPE(s->mm_l, s->mm_l);
    case SH_MM_B: return WK_SHAPE(s->mm_b, s->mm_bd, s->mm_bd);
    case SH_NN_A: return WK_SHAPE(s->nn_rows[0], s->nn_cols[0]);
    case SH_NN_B: return WK_SHAPE(s->nn_rows[1], s->nn_cols[1]);
    case SH_NNW_A: return WK_SHAPE(s->nn_cols[0]);
    case SH_NNW_B: return WK_SHAPE(s->nn_cols[1]);
    case SH_ROPE_A: case SH_ROPE_B: {
        const int i = id == SH_ROPE_B;
        return WK_SHAPE(1, s->rope_h, s->nn_rows[i] * s->nn_cols[i] / (s->rope_h * s->rope_d), s->rope_d);
    }
    case SH_TAB_A: case SH_TAB_B: {
        const int i = id == SH_TAB_B;
        return WK_SHAPE(s->nn_rows[i] * s->nn_cols[i] / (s->rope_h * s->rope_d), s->rope_d / 2);
    }
    case SH_PF0: case SH_PF1: case SH_PF2: case SH_PF3: {
        const int i = (int)(id - SH_PF0);
        return WK_SHAPE(1, s->at_h, s->at_tq[i], s->at_d[i]);
    }
    case SH_DQ: return WK_SHAPE(1, s->at_h, 1, 128);
    case SH_DKV0: case SH_DKV1: case SH_DKV2: return WK_SHAPE(1, s->at_hkv, s->at_tk[id - SH_DKV0], 128);
    }
    return WK_SCALAR;
}

/* ---- cases ---------------------------------------------------------------- */

typedef enum case_kind {
    CK_UNARY, CK_AFFINE, CK_BINARY, CK_CAST, CK_CONTIG_T, CK_UNARY_T, CK_REDUCE, CK_INDEX, CK_MATMUL,
    CK_CHAIN, CK_XFER,
    CK_SOFTMAX, CK_LOG_SOFTMAX, CK_RMS_NORM, CK_LAYER_NORM, CK_ROPE,   /* along the last dim */
    CK_ATTN, CK_ATTN_DECODE,                                            /* wk_attention       */
    CK_QMM, CK_DMV                      /* wk_qmatmul; dense matvec wk_matmul (run_q_case) */
} case_kind;

typedef struct gcase {
    const char *name;
    const char *call;        /* the public function timed                 */
    case_kind kind;
    int op;                  /* wk_unary_op / wk_binary_op / wk_reduce_op */
    int dim;                 /* reductions                                */
    wk_dtype out_dt;         /* casts                                     */
    const char *in0, *in1;   /* input keys                                */
    bool tiled;              /* matmul with WICK_GEMM=tiled               */
    const char *in2, *in3;   /* more input keys (NN ops, attention)       */
} gcase;

#define UN(name, op, x) { name, "wk_unary", CK_UNARY, op, 0, WK_F32, x, NULL, false, NULL, NULL }
#define BI(name, op, x, y) { name, "wk_binary", CK_BINARY, op, 0, WK_F32, x, y, false, NULL, NULL }
#define RED(name, op, x, dim) { name, "wk_reduce", CK_REDUCE, op, dim, WK_F32, x, NULL, false, NULL, NULL }
#define MM(name, a, b, tiled) { name, "wk_matmul", CK_MATMUL, 0, 0, WK_F32, a, b, tiled, NULL, NULL }
/* NN ops on [rows, cols] (rope: [1, H, T, D] of as many elements); op of
 * attention: bit 1 causal, bit 2 the portable path forced */
#define NN(n_, c_, k_, x, w, b) { .name = n_, .call = c_, .kind = k_, .in0 = x, .in1 = w, .in2 = b }
#define NNX(sfx, tab)                                                                                      \
    NN("softmax_" sfx, "wk_softmax", CK_SOFTMAX, "nn" sfx, NULL, NULL),                                 \
    NN("log_softmax_" sfx, "wk_log_softmax", CK_LOG_SOFTMAX, "nn" sfx, NULL, NULL),                     \
    NN("rms_norm_" sfx, "wk_rms_norm", CK_RMS_NORM, "nn" sfx, "nnw" sfx, NULL),                         \
    NN("layer_norm_" sfx, "wk_layer_norm", CK_LAYER_NORM, "nn" sfx, "nnw" sfx, "nnb" sfx),              \
    { .name = "rope_" sfx, .call = "wk_rope", .kind = CK_ROPE, .in0 = "rope" sfx, .in1 = "cos" tab,     \
      .in2 = "sin" tab }
#define ATT(n_, k_, causal, q, k, v)                                                                        \
    { .name = n_, .call = "wk_attention", .kind = k_, .op = causal, .in0 = q, .in1 = k, .in2 = v }

/* ---- quantized matmul rows (run_q_case, below) ------------------------------- */
/* W [n, k] quantized (op: its block dtype; dense rows: WK_BF16/WK_F16 with
 * wk_matmul on the transposed view), x [m, k] (dim: m) bf16 (f16 for the
 * f16 dense rows); in0 "up": n = 14336, k = 4096, "down": n = 4096, k =
 * 14336 (an 8B model's MLP). */
#define QMM(n_, qt, m, shp) { .name = n_, .call = "wk_qmatmul", .kind = CK_QMM, .op = qt, .dim = m, .in0 = shp }
#define QROWS(t, qt)                                                                         \
    QMM(t "_up_m1", qt, 1, "up"), QMM(t "_down_m1", qt, 1, "down"), QMM(t "_up_m8", qt, 8, "up"), \
    QMM(t "_down_m8", qt, 8, "down")
#define DMV(n_, dt, m, shp) { .name = n_, .call = "wk_matmul", .kind = CK_DMV, .op = dt, .dim = m, .in0 = shp }
#define Q_CASES                                                                              \
    QROWS("qmv_q4_0", WK_Q4_0), QROWS("qmv_q4_k", WK_Q4_K), QROWS("qmv_q5_k", WK_Q5_K),           \
    QROWS("qmv_q6_k", WK_Q6_K), QROWS("qmv_q8_0", WK_Q8_0),                                     \
    QMM("qmm_q4_k_up_m2048", WK_Q4_K, 2048, "up"), QMM("qmm_q4_k_down_m2048", WK_Q4_K, 2048, "down"), \
    QMM("qmm_q8_0_up_m2048", WK_Q8_0, 2048, "up"), QMM("qmm_q8_0_down_m2048", WK_Q8_0, 2048, "down"), \
    DMV("dmv_bf16_up_m1", WK_BF16, 1, "up"), DMV("dmv_bf16_down_m1", WK_BF16, 1, "down"),         \
    DMV("dmv_f16_up_m1", WK_F16, 1, "up"), DMV("dmv_f16_down_m1", WK_F16, 1, "down"),             \
    DMV("dmv_bf16_up_m8", WK_BF16, 8, "up"), DMV("dmv_bf16_down_m8", WK_BF16, 8, "down")
struct run_ctx;
static void run_q_case(struct run_ctx *r, const gcase *c);

static const gcase cases[] = {
    UN("exp_f32", WK_EXP, "x_f32"),
    UN("silu_f32", WK_SILU, "x_f32"),
    UN("gelu_f32", WK_GELU, "x_f32"),
    { "affine_f32", "wk_affine", CK_AFFINE, 0, 0, WK_F32, "x_f32", NULL, false, NULL, NULL },
    BI("add_f32", WK_ADD, "x_f32", "y_f32"),
    BI("mul_f32", WK_MUL, "x_f32", "y_f32"),
    UN("exp_bf16", WK_EXP, "x_bf16"),
    UN("silu_bf16", WK_SILU, "x_bf16"),
    UN("gelu_bf16", WK_GELU, "x_bf16"),
    { "affine_bf16", "wk_affine", CK_AFFINE, 0, 0, WK_F32, "x_bf16", NULL, false, NULL, NULL },
    BI("add_bf16", WK_ADD, "x_bf16", "y_bf16"),
    BI("mul_bf16", WK_MUL, "x_bf16", "y_bf16"),
    { "cast_f32_bf16", "wk_to_dtype", CK_CAST, 0, 0, WK_BF16, "x_f32", NULL, false, NULL, NULL },
    { "cast_bf16_f32", "wk_to_dtype", CK_CAST, 0, 0, WK_F32, "x_bf16", NULL, false, NULL, NULL },
    { "cast_f32_f16", "wk_to_dtype", CK_CAST, 0, 0, WK_F16, "x_f32", NULL, false, NULL, NULL },
    BI("add_row_f32", WK_ADD, "sq_f32", "row_f32"),
    BI("add_col_f32", WK_ADD, "sq_f32", "col_f32"),
    { "transpose_copy_f32", "wk_contiguous", CK_CONTIG_T, 0, 0, WK_F32, "sq_f32", NULL, false, NULL, NULL },
    { "exp_transposed_f32", "wk_exp", CK_UNARY_T, WK_EXP, 0, WK_F32, "sq_f32", NULL, false, NULL, NULL },
    RED("sum_last_f32", WK_SUM, "red_f32", -1),
    RED("max_last_f32", WK_MAX, "red_f32", -1),
    RED("argmax_last_f32", WK_ARGMAX, "red_f32", -1),
    RED("sum_last_bf16", WK_SUM, "red_bf16", -1),
    RED("max_last_bf16", WK_MAX, "red_bf16", -1),
    RED("argmax_last_bf16", WK_ARGMAX, "red_bf16", -1),
    RED("sum_dim0_f32", WK_SUM, "sq_f32", 0),
    { "index_select_bf16", "wk_index_select", CK_INDEX, 0, 0, WK_F32, "table_bf16", "ids_i64", false, NULL, NULL },
    MM("matmul_bf16_s", "mms_bf16_a", "mms_bf16_b", false),
    MM("matmul_bf16_l", "mml_bf16_a", "mml_bf16_b", false),
    MM("matmul_bf16_b", "mmb_bf16_a", "mmb_bf16_b", false),
    MM("matmul_f16_s", "mms_f16_a", "mms_f16_b", false),
    MM("matmul_f16_l", "mml_f16_a", "mml_f16_b", false),
    MM("matmul_f16_b", "mmb_f16_a", "mmb_f16_b", false),
    MM("matmul_f32_s", "mms_f32_a", "mms_f32_b", false),
    MM("matmul_f32_l", "mml_f32_a", "mml_f32_b", false),
    MM("matmul_f32_b", "mmb_f32_a", "mmb_f32_b", false),
    MM("matmul_tiled_f32_s", "mms_f32_a", "mms_f32_b", true),
    { "launch_chain", "wk_add", CK_CHAIN, WK_ADD, 0, WK_F32, NULL, NULL, false, NULL, NULL },
    { "h2d_d2h", "wk_from_host+wk_to_host", CK_XFER, 0, 0, WK_U8, NULL, NULL, false, NULL, NULL },
    NNX("a_bf16", "a"), NNX("b_bf16", "b"), NNX("a_f32", "a"), NNX("b_f32", "b"),
    ATT("attn_causal_t4096_d128", CK_ATTN, 1, "pf0_q", "pf0_k", "pf0_v"),
    ATT("attn_causal_t16384_d128", CK_ATTN, 1, "pf1_q", "pf1_k", "pf1_v"),
    ATT("attn_causal_t4096_d64", CK_ATTN, 1, "pf2_q", "pf2_k", "pf2_v"),
    ATT("attn_causal_t4096_d256", CK_ATTN, 1, "pf3_q", "pf3_k", "pf3_v"),
    ATT("attn_t4096_d128", CK_ATTN, 0, "pf0_q", "pf0_k", "pf0_v"),
    ATT("attn_decode_tk4096", CK_ATTN_DECODE, 0, "dec_q", "dec0_k", "dec0_v"),
    ATT("attn_decode_tk16384", CK_ATTN_DECODE, 0, "dec_q", "dec1_k", "dec1_v"),
    ATT("attn_decode_tk65536", CK_ATTN_DECODE, 0, "dec_q", "dec2_k", "dec2_v"),
    /* the portable path (plain FMAs, what gfx1030 runs), forced: op bit 2 */
    ATT("attn_portable_causal_t4096_d128", CK_ATTN, 3, "pf0_q", "pf0_k", "pf0_v"),
    ATT("attn_portable_decode_tk4096", CK_ATTN_DECODE, 2, "dec_q", "dec0_k", "dec0_v"),
    Q_CASES
};
#define N_CASES (int)(sizeof cases / sizeof cases[0])

/* ---- helpers --------------------------------------------------------------- */

typedef struct run_ctx {
    wk_device *dev;
    const sizes *sz;
    int reps, warmup;
    const char *dump_dir;
    wk_tensor *inputs[N_INPUTS];
    bool dumped[N_INPUTS];
} run_ctx;

static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') printf("\\%c", ch);
        else if (ch == '\n') fputs("\\n", stdout);
        else if (ch < 0x20) printf("\\u%04x", ch);
        else putchar(ch);
    }
    putchar('"');
}

static void json_shape(wk_shape s)
{
    putchar('[');
    for (int i = 0; i < s.rank; i++) printf("%s%lld", i ? "," : "", (long long)s.dims[i]);
    putchar(']');
}

static int input_index(const char *key)
{
    for (int i = 0; i < N_INPUTS; i++)
        if (strcmp(input_specs[i].key, key) == 0) return i;
    return -1;
}

/* The input named key, made on first use. NULL on error (wk_last_error). */
static wk_tensor *get_input(run_ctx *r, const char *key)
{
    int i = input_index(key);
    if (i < 0) return NULL;
    if (r->inputs[i]) return r->inputs[i];
    const input_spec *s = &input_specs[i];
    wk_shape sh = shape_of(s->shape, r->sz);
    if (s->shape == SH_TAB_A || s->shape == SH_TAB_B) {
        /* cos and sin come together; key "cosX" is at i, "sinX" at i + 1 */
        const int ic = key[0] == 'c' ? i : i - 1;
        if (wk_rope_tables(r->dev, r->sz->rope_d, 10000.0, sh.dims[0], NULL, &r->inputs[ic], &r->inputs[ic + 1]) !=
            WK_OK)
            return NULL;
        return r->inputs[i];
    }
    if (s->dt == WK_I64) {
        /* ids uniform in [0, rows): drawn in f64 (exact), truncated */
        wk_tensor *f = wk_rand_uniform(r->dev, WK_F64, sh, 0.0, (double)r->sz->tab_rows - 0.5);
        r->inputs[i] = f ? wk_to_dtype(f, WK_I64) : NULL;
        wk_release(f);
    } else {
        r->inputs[i] = wk_rand_uniform(r->dev, s->dt, sh, -2.0, 2.0);
    }
    return r->inputs[i];
}

/* Writes t to path as raw row-major data; false with a message in err. */
static bool write_tensor(const char *path, const wk_tensor *t, char *err, size_t err_size)
{
    size_t bytes = (size_t)wk_tensor_numel(t) * wk_dtype_size(wk_tensor_dtype(t));
    void *host = malloc(bytes ? bytes : 1);
    if (!host) {
        snprintf(err, err_size, "out of host memory for %zu bytes", bytes);
        return false;
    }
    bool ok = false;
    if (wk_to_host(t, host, bytes) != WK_OK) {
        snprintf(err, err_size, "wk_to_host: %s", wk_last_error());
    } else {
        FILE *f = fopen(path, "wb");
        if (f) {
            ok = fwrite(host, 1, bytes, f) == bytes;
            if (fclose(f) != 0) ok = false;
        }
        if (!ok) snprintf(err, err_size, "cannot write %.300s: %s", path, strerror(errno));
    }
    free(host);
    return ok;
}

/* ---- one op call ------------------------------------------------------------ */

typedef struct case_args {
    wk_tensor *a, *b;     /* what the op is called with (views included) */
    wk_tensor *c, *d;     /* more inputs (NN ops, attention)             */
    wk_tensor *view;      /* a transposed view this case made, or NULL   */
} case_args;

static wk_tensor *case_call(const gcase *c, const case_args *x)
{
    switch (c->kind) {
    case CK_UNARY: case CK_UNARY_T: return wk_unary((wk_unary_op)c->op, x->a);
    case CK_AFFINE: return wk_affine(x->a, 1.5, 0.25);
    case CK_BINARY: return wk_binary((wk_binary_op)c->op, x->a, x->b);
    case CK_CAST: return wk_to_dtype(x->a, c->out_dt);
    case CK_CONTIG_T: return wk_contiguous(x->a);
    case CK_REDUCE: return wk_reduce((wk_reduce_op)c->op, x->a, &c->dim, 1, false);
    case CK_INDEX: return wk_index_select(x->a, x->b, 0);
    case CK_MATMUL: return wk_matmul(x->a, x->b);
    case CK_SOFTMAX: return wk_softmax(x->a, -1);
    case CK_LOG_SOFTMAX: return wk_log_softmax(x->a, -1);
    case CK_RMS_NORM: return wk_rms_norm(x->a, x->b, 1e-6);
    case CK_LAYER_NORM: return wk_layer_norm(x->a, x->b, x->c, 1e-5);
    case CK_ROPE: return wk_rope(x->a, x->b, x->c, 0);
    case CK_ATTN: case CK_ATTN_DECODE: {
        wk_attention_opts o;
        memset(&o, 0, sizeof o);
        o.causal = (c->op & 1) != 0;
        return wk_attention(x->a, x->b, x->c, &o);   /* op bit 2: case_knobs forced the portable path */
    }
    default: return NULL;
    }
}

static double tensor_bytes(const wk_tensor *t)
{
    return (double)wk_tensor_numel(t) * (double)wk_dtype_size(wk_tensor_dtype(t));
}

/* ---- the common case: time an op, dump inputs and output --------------------- */

static int n_failed;   /* cases that printed an error */

/* frees the first n events of ev (NULL entries are fine) and ev itself */
static void free_events(wk_event **ev, int n)
{
    for (int i = 0; ev && i < n; i++) wk_event_free(ev[i]);
    free(ev);
}

static void print_error(const gcase *c, const char *msg)
{
    n_failed++;
    printf("{\"case\":");
    json_string(c->name);
    printf(",\"error\":");
    json_string(msg);
    printf("}\n");
    fflush(stdout);
}

/* The knobs a case sets around its timing: WICK_GEMM=tiled (c->tiled),
 * and for attention's op bit 2 the portable paths (WICK_GPU_ATTN: the FMA
 * prefill kernel, and for decode the FMA flash-decoding that gfx1030
 * runs); on = false puts the caller's values back. The plugin reads its
 * knobs once, so each change is followed by wk_env_refresh. */
static void case_knobs(const gcase *c, bool on)
{
    static struct { bool set, had; char prev[64]; } attn;
    const bool portable = (c->kind == CK_ATTN || c->kind == CK_ATTN_DECODE) && (c->op & 2);
    if (c->tiled) {
        if (on) setenv("WICK_GEMM", "tiled", 1);
        else unsetenv("WICK_GEMM");
    }
    if (portable && on) {
        const char *e = getenv("WICK_GPU_ATTN");
        attn.had = e != NULL;
        if (attn.had) snprintf(attn.prev, sizeof attn.prev, "%s", e);
        setenv("WICK_GPU_ATTN", c->kind == CK_ATTN_DECODE ? "decode_fma" : "portable", 1);
        attn.set = true;
    } else if (portable && attn.set) {
        if (attn.had) setenv("WICK_GPU_ATTN", attn.prev, 1);
        else unsetenv("WICK_GPU_ATTN");
        attn.set = false;
    }
    if (c->tiled || portable) wk_env_refresh();
}

static void run_op_case(run_ctx *r, const gcase *c)
{
    char err[1024] = "";
    case_args x = { NULL, NULL, NULL, NULL, NULL };
    const char *keys[4] = { c->in0, c->in1, c->in2, c->in3 };
    double *times = NULL, *ev_times = NULL;
    wk_event **ev = NULL;
    wk_tensor *last = NULL;
    wk_tensor **slot[4] = { &x.a, &x.b, &x.c, &x.d };
    bool got = true;
    for (int k = 0; k < 4 && got; k++)
        if (keys[k]) got = (*slot[k] = get_input(r, keys[k])) != NULL;
    if (!got) {
        snprintf(err, sizeof err, "making the inputs failed: %s", wk_last_error());
        goto fail;
    }
    if (c->kind == CK_CONTIG_T || c->kind == CK_UNARY_T) {
        x.view = wk_transpose(x.a, 0, 1);
        if (!x.view) {
            snprintf(err, sizeof err, "wk_transpose: %s", wk_last_error());
            goto fail;
        }
        x.a = x.view;
    }
    case_knobs(c, true);
    times = malloc((size_t)r->reps * sizeof *times);
    ev_times = malloc((size_t)r->reps * sizeof *ev_times);
    ev = calloc((size_t)r->reps * 2, sizeof *ev);
    if (!times || !ev_times || !ev) {
        snprintf(err, sizeof err, "out of host memory");
        goto fail;
    }
    for (int i = 0; i < 2 * r->reps; i++)
        if (!(ev[i] = wk_event_new(r->dev))) goto fail_wk;
    if (wk_device_synchronize(r->dev) != WK_OK) goto fail_wk;
    for (int i = 0; i < r->warmup; i++) {
        wk_tensor *out = case_call(c, &x);
        if (!out) goto fail_wk;
        wk_release(out);
    }
    /* host clock, one synchronized rep at a time */
    for (int i = 0; i < r->reps; i++) {
        if (wk_device_synchronize(r->dev) != WK_OK) goto fail_wk;
        double t0 = wk_now_ms();
        wk_tensor *out = case_call(c, &x);
        if (!out || wk_device_synchronize(r->dev) != WK_OK) {
            wk_release(out);
            goto fail_wk;
        }
        times[i] = wk_now_ms() - t0;
        wk_release(out);
    }
    /* back to back */
    if (wk_device_synchronize(r->dev) != WK_OK) goto fail_wk;
    double b0 = wk_now_ms();
    for (int i = 0; i < r->reps; i++) {
        wk_tensor *out = case_call(c, &x);
        if (!out) goto fail_wk;
        wk_release(out);
    }
    if (wk_device_synchronize(r->dev) != WK_OK) goto fail_wk;
    double batch_ms = (wk_now_ms() - b0) / r->reps;
    /* events around each rep, back to back, one wait at the end (the
     * headline; last keeps the output of the last rep for the check) */
    for (int i = 0; i < r->reps; i++) {
        wk_release(last);                /* outside the events, as in the loops above */
        last = NULL;
        if (wk_event_record(ev[2 * i]) != WK_OK) goto fail_wk;
        last = case_call(c, &x);
        if (!last || wk_event_record(ev[2 * i + 1]) != WK_OK) goto fail_wk;
    }
    if (wk_event_synchronize(ev[2 * r->reps - 1]) != WK_OK) goto fail_wk;
    for (int i = 0; i < r->reps; i++)
        if (wk_event_elapsed_ms(ev[2 * i], ev[2 * i + 1], &ev_times[i]) != WK_OK) goto fail_wk;
    case_knobs(c, false);

    /* compulsory traffic: each input read once, the output written once;
     * index_select reads only the selected rows; attention decode: the
     * keys and values (what the issue's bar counts) */
    double bytes = tensor_bytes(last) + (c->kind == CK_INDEX ? tensor_bytes(last) + tensor_bytes(x.b)
                                                           : tensor_bytes(x.a) + (x.b ? tensor_bytes(x.b) : 0) +
                                                                 (x.c ? tensor_bytes(x.c) : 0) +
                                                                 (x.d ? tensor_bytes(x.d) : 0));
    if (c->kind == CK_ATTN_DECODE) bytes = tensor_bytes(x.b) + tensor_bytes(x.c);
    double flops = 0;
    if (c->kind == CK_MATMUL) {
        wk_shape sa = wk_tensor_shape(x.a);
        flops = 2.0 * (double)wk_tensor_numel(last) * (double)sa.dims[sa.rank - 1];
    } else if (c->kind == CK_ATTN) {
        /* 4 B H D per visible (query, key) pair: q k^T and p v */
        wk_shape sq = wk_tensor_shape(x.a), sk = wk_tensor_shape(x.b);
        const double tq = (double)sq.dims[2], tk = (double)sk.dims[2];
        const double pairs = c->op ? tq * (tq + 1) / 2 + tq * (tk - tq) : tq * tk;   /* causal: bottom right */
        flops = 4.0 * (double)sq.dims[0] * (double)sq.dims[1] * (double)sq.dims[3] * pairs;
    }
    /* the output of the last timed rep, and any input not written yet */
    bool dumped = false;
    if (r->dump_dir) {
        dumped = true;
        for (int k = 0; k < 4 && dumped; k++) {
            if (!keys[k]) continue;
            int idx = input_index(keys[k]);
            if (r->dumped[idx]) continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s.bin", r->dump_dir, keys[k]);
            dumped = r->dumped[idx] = write_tensor(path, r->inputs[idx], err, sizeof err);
        }
        if (dumped) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s.out.bin", r->dump_dir, c->name);
            dumped = write_tensor(path, last, err, sizeof err);
        }
    }
    double med = wk_median(ev_times, r->reps), host_med = wk_median(times, r->reps);
    printf("{\"case\":");
    json_string(c->name);
    printf(",\"call\":");
    json_string(c->call);
    printf(",\"reps\":%d,\"warmup\":%d,\"timing\":\"events\",\"median_ms\":%.6f,\"min_ms\":%.6f,\"max_ms\":%.6f,"
           "\"host_median_ms\":%.6f,\"host_min_ms\":%.6f,\"host_max_ms\":%.6f,\"batch_ms\":%.6f,"
           "\"bytes\":%.0f,\"flops\":%.0f,\"inputs\":[",
           r->reps, r->warmup, med, ev_times[0], ev_times[r->reps - 1], host_med, times[0], times[r->reps - 1],
           batch_ms, bytes, flops);
    for (int k = 0; k < 4; k++) {
        if (!keys[k]) continue;
        const wk_tensor *t = r->inputs[input_index(keys[k])];
        printf("%s{\"key\":", k ? "," : "");
        json_string(keys[k]);
        printf(",\"dtype\":");
        json_string(wk_dtype_name(wk_tensor_dtype(t)));
        printf(",\"shape\":");
        json_shape(wk_tensor_shape(t));
        printf("}");
    }
    printf("],\"output\":{\"dtype\":");
    json_string(wk_dtype_name(wk_tensor_dtype(last)));
    printf(",\"shape\":");
    json_shape(wk_tensor_shape(last));
    printf("},\"dumped\":%s", dumped ? "true" : "false");
    if (r->dump_dir && !dumped) {
        printf(",\"dump_error\":");
        json_string(err);
    }
    printf("}\n");
    fflush(stdout);
    wk_release(last);
    wk_release(x.view);
    free_events(ev, 2 * r->reps);
    free(times);
    free(ev_times);
    return;
fail_wk:
    snprintf(err, sizeof err, "%s", wk_last_error());
fail:
    case_knobs(c, false);
    wk_release(last);
    wk_release(x.view);
    free_events(ev, 2 * r->reps);
    free(times);
    free(ev_times);
    (void)wk_device_synchronize(r->dev);
    print_error(c, err[0] ? err : "failed");
    wk_clear_error();
}

/* ---- the bare launch chain: CUDA driver API, opened at run time --------------- */

/* a 1-element kernel: p[0] += 1.0f */
static const char bump_ptx[] =
    ".version 7.0\n"
    ".target sm_50\n"
    ".address_size 64\n"
    ".visible .entry wk_bump(.param .u64 wk_bump_p)\n"
    "{\n"
    "  .reg .b64 %rd<3>;\n"
    "  .reg .f32 %f<3>;\n"
    "  ld.param.u64 %rd1, [wk_bump_p];\n"
    "  cvta.to.global.u64 %rd2, %rd1;\n"
    "  ld.global.f32 %f1, [%rd2];\n"
    "  add.f32 %f2, %f1, 0f3F800000;\n"
    "  st.global.f32 [%rd2], %f2;\n"
    "  ret;\n"
    "}\n"
    /* the same add with the signature of wick's small binary kernel
     * (a, b, dst, n, op): d[0] = a[0] + b[0] */
    ".visible .entry wk_add5(.param .u64 wk_add5_a, .param .u64 wk_add5_b, .param .u64 wk_add5_d,\n"
    "                        .param .u32 wk_add5_n, .param .u32 wk_add5_op)\n"
    "{\n"
    "  .reg .b64 %rd<7>;\n"
    "  .reg .f32 %f<4>;\n"
    "  ld.param.u64 %rd1, [wk_add5_a];\n"
    "  ld.param.u64 %rd2, [wk_add5_b];\n"
    "  ld.param.u64 %rd3, [wk_add5_d];\n"
    "  cvta.to.global.u64 %rd4, %rd1;\n"
    "  cvta.to.global.u64 %rd5, %rd2;\n"
    "  cvta.to.global.u64 %rd6, %rd3;\n"
    "  ld.global.f32 %f1, [%rd4];\n"
    "  ld.global.f32 %f2, [%rd5];\n"
    "  add.f32 %f3, %f1, %f2;\n"
    "  st.global.f32 [%rd6], %f3;\n"
    "  ret;\n"
    "}\n";

typedef int cu_res;
typedef struct cu_api {
    void *lib;
    cu_res (*init)(unsigned);
    cu_res (*device_get)(int *, int);
    cu_res (*primary_retain)(void **, int);
    cu_res (*primary_release)(int);
    cu_res (*ctx_set_current)(void *);
    cu_res (*module_load_data)(void **, const void *);
    cu_res (*module_unload)(void *);
    cu_res (*module_get_function)(void **, void *, const char *);
    cu_res (*mem_alloc)(unsigned long long *, size_t);
    cu_res (*mem_free)(unsigned long long);
    cu_res (*memset_d32)(unsigned long long, unsigned, size_t);
    cu_res (*memcpy_dtoh)(void *, unsigned long long, size_t);
    cu_res (*stream_create)(void **, unsigned);
    cu_res (*stream_destroy)(void *);
    cu_res (*stream_sync)(void *);
    cu_res (*launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                     void **, void **);
} cu_api;

static bool cu_open(cu_api *a, char *err, size_t err_size)
{
    memset(a, 0, sizeof *a);
    a->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!a->lib) {
        snprintf(err, err_size, "libcuda.so.1 not found");
        return false;
    }
#define CU_SYM(field, name)                                                     \
    if (!(*(void **)&a->field = dlsym(a->lib, name))) {                         \
        snprintf(err, err_size, "libcuda.so.1 has no %s", name);               \
        return false;                                                           \
    }
    CU_SYM(init, "cuInit") CU_SYM(device_get, "cuDeviceGet")
    CU_SYM(primary_retain, "cuDevicePrimaryCtxRetain") CU_SYM(primary_release, "cuDevicePrimaryCtxRelease_v2")
    CU_SYM(ctx_set_current, "cuCtxSetCurrent") CU_SYM(module_load_data, "cuModuleLoadData")
    CU_SYM(module_unload, "cuModuleUnload") CU_SYM(module_get_function, "cuModuleGetFunction")
    CU_SYM(mem_alloc, "cuMemAlloc_v2") CU_SYM(mem_free, "cuMemFree_v2") CU_SYM(memset_d32, "cuMemsetD32_v2")
    CU_SYM(memcpy_dtoh, "cuMemcpyDtoH_v2") CU_SYM(stream_create, "cuStreamCreate")
    CU_SYM(stream_destroy, "cuStreamDestroy_v2") CU_SYM(stream_sync, "cuStreamSynchronize")
    CU_SYM(launch, "cuLaunchKernel")
#undef CU_SYM
    return true;
}

/* The bare chain's state: the primary context, the kernels, a stream,
 * the 1-element buffer p[0] (and p[1], one: the wide chain's second
 * buffer and its addend). */
typedef struct bare_chain {
    cu_api a;
    void *ctx, *mod, *fn, *fn5, *stream;
    unsigned long long p[2], one;
    int dev;
} bare_chain;

#define CU_STEP(call)                                                                       \
    do {                                                                                    \
        if (rc == 0) {                                                                      \
            rc = (call);                                                                    \
            if (rc != 0) snprintf(err, err_size, "CUDA driver call %s returned %d", #call, rc); \
        }                                                                                   \
    } while (0)

static void bare_close(bare_chain *b)
{
    if (!b->a.lib) return;
    if (b->stream) b->a.stream_destroy(b->stream);
    for (int k = 0; k < 2; k++)
        if (b->p[k]) b->a.mem_free(b->p[k]);
    if (b->one) b->a.mem_free(b->one);
    if (b->mod) b->a.module_unload(b->mod);
    if (b->ctx) b->a.primary_release(b->dev);
    memset(b, 0, sizeof *b);
}

static bool bare_open(bare_chain *b, int device, char *err, size_t err_size)
{
    memset(b, 0, sizeof *b);
    if (!cu_open(&b->a, err, err_size)) return false;
    cu_res rc = 0;
    CU_STEP(b->a.init(0));
    CU_STEP(b->a.device_get(&b->dev, device));
    CU_STEP(b->a.primary_retain(&b->ctx, b->dev));
    CU_STEP(b->a.ctx_set_current(b->ctx));
    CU_STEP(b->a.module_load_data(&b->mod, bump_ptx));
    CU_STEP(b->a.module_get_function(&b->fn, b->mod, "wk_bump"));
    CU_STEP(b->a.module_get_function(&b->fn5, b->mod, "wk_add5"));
    CU_STEP(b->a.mem_alloc(&b->p[0], 4));
    CU_STEP(b->a.mem_alloc(&b->p[1], 4));
    CU_STEP(b->a.mem_alloc(&b->one, 4));
    CU_STEP(b->a.memset_d32(b->one, 0x3f800000u, 1));   /* 1.0f */
    CU_STEP(b->a.stream_create(&b->stream, 1));   /* non-blocking */
    if (rc != 0) bare_close(b);
    return rc == 0;
}

/* One chain of n launches of the 1-element kernel on one stream: ms, or
 * < 0 with err; *issue_ms: the host's time to issue them (before the
 * final wait). wide: the kernel with wick's signature, adding `one` from
 * one buffer into the other in turn, as wick's chain does; else the
 * 1-parameter kernel in place. *ok tells whether the chain added exactly n. */
static double bare_run(bare_chain *b, int64_t n, bool wide, double *issue_ms, bool *ok, char *err, size_t err_size)
{
    cu_res rc = 0;
    unsigned nn = 1, op = 0;
    void *params[2][5] = { { &b->p[0], &b->one, &b->p[1], &nn, &op }, { &b->p[1], &b->one, &b->p[0], &nn, &op } };
    void *bump[1] = { &b->p[0] };
    CU_STEP(b->a.ctx_set_current(b->ctx));
    CU_STEP(b->a.memset_d32(b->p[0], 0x3f000000u, 1));   /* 0.5f */
    CU_STEP(b->a.stream_sync(NULL));
    CU_STEP(b->a.stream_sync(b->stream));
    double t0 = wk_now_ms();
    for (int64_t i = 0; i < n && rc == 0; i++)
        CU_STEP(b->a.launch(wide ? b->fn5 : b->fn, 1, 1, 1, 1, 1, 1, 0, b->stream, wide ? params[i & 1] : bump, NULL));
    *issue_ms = wk_now_ms() - t0;
    CU_STEP(b->a.stream_sync(b->stream));
    double ms = wk_now_ms() - t0;
    float v = 0;
    CU_STEP(b->a.memcpy_dtoh(&v, b->p[wide ? (n & 1) : 0], 4));
    *ok = rc == 0 && v == 0.5f + (float)n;
    return rc == 0 ? ms : -1;
}
#undef CU_STEP

/* ---- launch chain ------------------------------------------------------------ */

#define CHAINS 9

/* one chain of n dependent adds x = x + one; ms, or < 0; *issue_ms: the
 * host's time to issue them (before the final wait) */
static double wick_chain(run_ctx *r, wk_tensor *one, int64_t n, double *value, double *issue_ms)
{
    wk_tensor *x = wk_full(r->dev, WK_F32, WK_SHAPE(1), 0.5);
    if (!x || wk_device_synchronize(r->dev) != WK_OK) {
        wk_release(x);
        return -1;
    }
    double t0 = wk_now_ms();
    for (int64_t i = 0; i < n; i++) {
        wk_tensor *y = wk_add(x, one);
        wk_release(x);
        x = y;
        if (!x) return -1;
    }
    *issue_ms = wk_now_ms() - t0;
    if (wk_device_synchronize(r->dev) != WK_OK) {
        wk_release(x);
        return -1;
    }
    double ms = wk_now_ms() - t0;
    int64_t at = 0;
    wk_status st = wk_item(x, &at, value);
    wk_release(x);
    return st == WK_OK ? ms : -1;
}

static int device_index(const char *name)
{
    const char *colon = strchr(name, ':');
    return colon ? atoi(colon + 1) : 0;
}

/* wick's chain and the bare chains take turns (CHAINS of each, after one
 * short chain of each to warm up), so all see the same machine state. The
 * bare chain is the reference; the wide bare chain (the kernel with wick's
 * signature, two buffers in turn) and the issue times (host time before
 * the final wait; equal to the chain's time when the host is the limit)
 * say where wick's extra time per op goes. */
static void run_chain(run_ctx *r, const gcase *c, const char *dev_name)
{
    int64_t n = r->sz->chain;
    char err[512] = "";
    bare_chain bare;
    bool have_bare = false;
    if (strncmp(dev_name, "cuda", 4) == 0)
        have_bare = bare_open(&bare, device_index(dev_name), err, sizeof err);
    else
        snprintf(err, sizeof err, "the bare chain needs a cuda device");
    wk_tensor *one = wk_full(r->dev, WK_F32, WK_SHAPE(1), 1.0);
    if (!one) {
        if (have_bare) bare_close(&bare);
        print_error(c, wk_last_error());
        return;
    }
    /* per op, us: [0] wick, [1] bare, [2] bare wide; t: chain, q: issue */
    double value = 0, t[3][CHAINS], q[3][CHAINS];
    bool right = true, bare_right = true;
    for (int i = -1; i < CHAINS; i++) {
        int64_t len = i < 0 ? 100 : n;
        double issue = 0, ms = wick_chain(r, one, len, &value, &issue);
        if (ms < 0) {
            wk_release(one);
            if (have_bare) bare_close(&bare);
            print_error(c, wk_last_error());
            return;
        }
        right = right && value == 0.5 + (double)len;
        if (i >= 0) t[0][i] = ms * 1e3 / (double)n, q[0][i] = issue * 1e3 / (double)n;
        for (int w = 0; w < 2 && have_bare; w++) {
            bool ok = false;
            double bms = bare_run(&bare, len, w == 1, &issue, &ok, err, sizeof err);
            bare_right = bare_right && ok;
            if (bms < 0) {
                bare_close(&bare);
                have_bare = false;
            } else if (i >= 0) {
                t[1 + w][i] = bms * 1e3 / (double)n, q[1 + w][i] = issue * 1e3 / (double)n;
            }
        }
    }
    wk_release(one);
    const double wick_us = wk_median(t[0], CHAINS);   /* sorts: t[0][0] is the minimum */
    printf("{\"case\":");
    json_string(c->name);
    printf(",\"call\":");
    json_string(c->call);
    printf(",\"n\":%lld,\"chains\":%d,\"wick_us_per_op\":%.4f,\"wick_min_us\":%.4f,\"wick_issue_us\":%.4f,"
           "\"wick_check\":%s,\"median_ms\":%.6f",
           (long long)n, CHAINS, wick_us, t[0][0], wk_median(q[0], CHAINS), right ? "true" : "false",
           wick_us * (double)n * 1e-3);
    if (have_bare) {
        const double bare_us = wk_median(t[1], CHAINS);   /* sorts: t[1][0] is the minimum */
        printf(",\"bare_us_per_launch\":%.4f,\"bare_min_us\":%.4f,\"bare_issue_us\":%.4f,"
               "\"bare_wide_us\":%.4f,\"bare_wide_issue_us\":%.4f,\"bare_check\":%s",
               bare_us, t[1][0], wk_median(q[1], CHAINS), wk_median(t[2], CHAINS), wk_median(q[2], CHAINS),
               bare_right ? "true" : "false");
        bare_close(&bare);
    } else {
        printf(",\"bare_error\":");
        json_string(err);
    }
    printf("}\n");
    fflush(stdout);
}

/* ---- host <-> device -------------------------------------------------------- */

/* The medians of `reps` round trips (after one to warm up) of src to the
 * device and back into dst: host clock around each synchronized copy, and
 * device events around each (out[0..4]: round trip, h2d, d2h by the host
 * clock; h2d, d2h by events). *same: the data came back unchanged. False
 * with wk_last_error on failure. */
static bool xfer_reps(run_ctx *r, const void *src, void *dst, size_t bytes, double *t, double out[5], bool *same)
{
    int reps = r->reps;
    double *rt = t, *h2d = t + reps, *d2h = t + 2 * reps, *eh = t + 3 * reps, *ed = t + 4 * reps;
    wk_event *e[3] = { wk_event_new(r->dev), wk_event_new(r->dev), wk_event_new(r->dev) };
    bool ok = e[0] && e[1] && e[2];
    memset(dst, 0, bytes);
    for (int i = -1; i < reps && ok; i++) {   /* rep -1 warms up */
        ok = wk_device_synchronize(r->dev) == WK_OK && wk_event_record(e[0]) == WK_OK;
        double t0 = wk_now_ms();
        wk_tensor *d = ok ? wk_from_host(r->dev, WK_U8, WK_SHAPE((int64_t)bytes), src) : NULL;
        ok = d && wk_device_synchronize(r->dev) == WK_OK;
        double t1 = wk_now_ms();
        ok = ok && wk_event_record(e[1]) == WK_OK && wk_to_host(d, dst, bytes) == WK_OK;
        double t2 = wk_now_ms();
        ok = ok && wk_event_record(e[2]) == WK_OK;
        wk_release(d);
        if (ok && i >= 0) {
            rt[i] = t2 - t0, h2d[i] = t1 - t0, d2h[i] = t2 - t1;
            ok = wk_event_elapsed_ms(e[0], e[1], &eh[i]) == WK_OK && wk_event_elapsed_ms(e[1], e[2], &ed[i]) == WK_OK;
        }
    }
    for (int k = 0; k < 3; k++) wk_event_free(e[k]);
    if (!ok) return false;
    *same = memcmp(src, dst, bytes) == 0;
    out[0] = wk_median(rt, reps), out[1] = wk_median(h2d, reps), out[2] = wk_median(d2h, reps);
    out[3] = wk_median(eh, reps), out[4] = wk_median(ed, reps);
    return true;
}

static void run_xfer(run_ctx *r, const gcase *c)
{
    size_t bytes = (size_t)r->sz->xfer;
    uint64_t *src = wk_host_alloc(r->dev, bytes), *dst = wk_host_alloc(r->dev, bytes);
    uint64_t *psrc = NULL, *pdst = NULL;
    double *t = malloc((size_t)r->reps * 5 * sizeof *t);
    char err[1024] = "";
    double pin[5], pg[5];
    bool same = false, pg_same = false, pg_ok = false;
    if (!src || !dst) {
        snprintf(err, sizeof err, "wk_host_alloc: %s", wk_last_error());
        goto done;
    }
    if (!t) {
        snprintf(err, sizeof err, "out of host memory");
        goto done;
    }
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < bytes / 8; i++) {   /* xorshift64: random bytes */
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        src[i] = s;
    }
    if (!xfer_reps(r, src, dst, bytes, t, pin, &same)) {
        snprintf(err, sizeof err, "%s", wk_last_error());
        goto done;
    }
    /* the same from and to pageable memory, for reference */
    psrc = malloc(bytes), pdst = malloc(bytes);
    if (psrc && pdst) {
        memcpy(psrc, src, bytes);
        pg_ok = xfer_reps(r, psrc, pdst, bytes, t, pg, &pg_same);
    }
    printf("{\"case\":");
    json_string(c->name);
    printf(",\"call\":");
    json_string(c->call);
    printf(",\"reps\":%d,\"bytes\":%.0f,\"timing\":\"host clock around synchronized copies\","
           "\"median_ms\":%.6f,\"h2d_ms\":%.6f,\"d2h_ms\":%.6f,\"event_h2d_ms\":%.6f,\"event_d2h_ms\":%.6f,"
           "\"check\":%s,\"host_memory\":\"pinned (wk_host_alloc)\"",
           r->reps, (double)bytes, pin[0], pin[1], pin[2], pin[3], pin[4], same ? "true" : "false");
    if (pg_ok)
        printf(",\"pageable_median_ms\":%.6f,\"pageable_h2d_ms\":%.6f,\"pageable_d2h_ms\":%.6f,"
               "\"pageable_event_h2d_ms\":%.6f,\"pageable_event_d2h_ms\":%.6f,\"pageable_check\":%s",
               pg[0], pg[1], pg[2], pg[3], pg[4], pg_same ? "true" : "false");
    else {
        printf(",\"pageable_error\":");
        json_string(psrc && pdst ? wk_last_error() : "out of host memory");
    }
    printf("}\n");
    fflush(stdout);
done:
    if (err[0]) print_error(c, err);
    wk_host_free(src);
    wk_host_free(dst);
    free(psrc);
    free(pdst);
    free(t);
    wk_clear_error();
}

/* ---- quantized matmul rows ------------------------------------------------------
 * wk_qmatmul(x [m, k], W [n, k] block-quantized) and, for reference, the
 * dense matvec wk_matmul(x, W^T) with W bf16/f16. W is drawn uniform in
 * [-1, 1] on the device, quantized on the cpu (wk_quantize: llama.cpp's
 * reference quantizers) and moved back; x uniform in [-2, 2]. So that no
 * rep reads W from the L2 cache, the reps take turns over copies of W
 * whose bytes add up to at least 256 MiB. Bytes counted: W's (what the
 * issue measures: weight bytes read per second); prefill rows (m > 8) are
 * scored by FLOPs against PyTorch's dense bf16 matmul on the same shape.
 * Dumped for the check: x, W dequantized to bf16 (the dense W itself for
 * the dense rows), and the output; PyTorch computes x @ W^T in bf16 (f16). */
static void run_q_case(struct run_ctx *r, const gcase *c)
{
    char err[1024] = "";
    const bool up = !strcmp(c->in0, "up"), dense = c->kind == CK_DMV;
    const int64_t n = up ? 14336 : 4096, k = up ? 4096 : 14336, m = c->dim;
    const int64_t sn = r->sz == &small_sizes ? 256 : n, sk = r->sz == &small_sizes ? 512 : k;
    const wk_dtype qt = (wk_dtype)c->op, xdt = dense && qt == WK_F16 ? WK_F16 : WK_BF16;
    enum { NCOPY = 64 };
    wk_tensor *w[NCOPY] = { 0 }, *wt[NCOPY] = { 0 }, *x = NULL, *deq = NULL, *last = NULL;
    wk_device *cpu = NULL;
    double *times = NULL, *ev_times = NULL;
    wk_event **ev = NULL;
    int ncopy = 1;
    x = wk_rand_uniform(r->dev, xdt, WK_SHAPE(m, sk), -2.0, 2.0);
    wk_tensor *wf = x ? wk_rand_uniform(r->dev, WK_F32, WK_SHAPE(sn, sk), -1.0, 1.0) : NULL;
    if (!wf) goto fail_wk;
    if (dense) {
        w[0] = wk_to_dtype(wf, qt);
    } else {
        cpu = wk_device_open("cpu");
        wk_tensor *wc = cpu ? wk_to_device(wf, cpu) : NULL;
        wk_tensor *qc = wc ? wk_quantize(wc, qt) : NULL;
        w[0] = qc ? wk_to_device(qc, r->dev) : NULL;
        wk_release(wc);
        wk_release(qc);
    }
    wk_release(wf);
    if (!w[0]) goto fail_wk;
    {
        const double wb = (double)wk_tensor_nbytes(w[0]);
        ncopy = (int)((256.0 * 1048576.0 + wb - 1) / wb);
        if (ncopy < 1) ncopy = 1;
        if (ncopy > NCOPY) ncopy = NCOPY;
        for (int i = 1; i < ncopy; i++)
            if (!(w[i] = wk_copy(w[0]))) goto fail_wk;
        if (dense)
            for (int i = 0; i < ncopy; i++)
                if (!(wt[i] = wk_transpose(w[i], 0, 1))) goto fail_wk;
    }
    times = malloc((size_t)r->reps * sizeof *times);
    ev_times = malloc((size_t)r->reps * sizeof *ev_times);
    ev = calloc((size_t)r->reps * 2, sizeof *ev);
    if (!times || !ev_times || !ev) {
        snprintf(err, sizeof err, "out of host memory");
        goto fail;
    }
    for (int i = 0; i < 2 * r->reps; i++)
        if (!(ev[i] = wk_event_new(r->dev))) goto fail_wk;
#define Q_CALL(i) (dense ? wk_matmul(x, wt[(i) % ncopy]) : wk_qmatmul(x, w[(i) % ncopy]))
    if (wk_device_synchronize(r->dev) != WK_OK) goto fail_wk;
    for (int i = 0; i < r->warmup; i++) {
        wk_tensor *out = Q_CALL(i);
        if (!out) goto fail_wk;
        wk_release(out);
    }
    for (int i = 0; i < r->reps; i++) {
        if (wk_device_synchronize(r->dev) != WK_OK) goto fail_wk;
        double t0 = wk_now_ms();
        wk_tensor *out = Q_CALL(i);
        if (!out || wk_device_synchronize(r->dev) != WK_OK) {
            wk_release(out);
            goto fail_wk;
        }
        times[i] = wk_now_ms() - t0;
        wk_release(out);
    }
    if (wk_device_synchronize(r->dev) != WK_OK) goto fail_wk;
    double b0 = wk_now_ms();
    for (int i = 0; i < r->reps; i++) {
        wk_tensor *out = Q_CALL(i);
        if (!out) goto fail_wk;
        wk_release(out);
    }
    if (wk_device_synchronize(r->dev) != WK_OK) goto fail_wk;
    double batch_ms = (wk_now_ms() - b0) / r->reps;
    for (int i = 0; i < r->reps; i++) {
        wk_release(last);
        last = NULL;
        if (wk_event_record(ev[2 * i]) != WK_OK) goto fail_wk;
        last = Q_CALL(i);
        if (!last || wk_event_record(ev[2 * i + 1]) != WK_OK) goto fail_wk;
    }
#undef Q_CALL
    if (wk_event_synchronize(ev[2 * r->reps - 1]) != WK_OK) goto fail_wk;
    for (int i = 0; i < r->reps; i++)
        if (wk_event_elapsed_ms(ev[2 * i], ev[2 * i + 1], &ev_times[i]) != WK_OK) goto fail_wk;
    /* the output of the last rep used copy (reps - 1) % ncopy */
    const wk_tensor *wl = w[(r->reps - 1) % ncopy];
    const double bytes = (double)wk_tensor_nbytes(wl), flops = m > 8 ? 2.0 * (double)m * (double)sn * (double)sk : 0;
    char xkey[64], wkey[64];
    snprintf(xkey, sizeof xkey, "%s_x", c->name);    /* each case draws its own x and W */
    snprintf(wkey, sizeof wkey, "%s_w", c->name);
    bool dumped = false;
    if (r->dump_dir) {
        char path[4096];
        deq = dense ? wk_retain((wk_tensor *)wl) : wk_dequantize(wl, WK_BF16);
        if (!deq) goto fail_wk;
        snprintf(path, sizeof path, "%s/%s.bin", r->dump_dir, xkey);
        dumped = write_tensor(path, x, err, sizeof err);
        snprintf(path, sizeof path, "%s/%s.bin", r->dump_dir, wkey);
        if (dumped) dumped = write_tensor(path, deq, err, sizeof err);
        snprintf(path, sizeof path, "%s/%s.out.bin", r->dump_dir, c->name);
        if (dumped) dumped = write_tensor(path, last, err, sizeof err);
    }
    const double med = wk_median(ev_times, r->reps), host_med = wk_median(times, r->reps);
    printf("{\"case\":");
    json_string(c->name);
    printf(",\"call\":");
    json_string(c->call);
    printf(",\"reps\":%d,\"warmup\":%d,\"timing\":\"events\",\"median_ms\":%.6f,\"min_ms\":%.6f,\"max_ms\":%.6f,"
           "\"host_median_ms\":%.6f,\"batch_ms\":%.6f,\"bytes\":%.0f,\"flops\":%.0f,\"w_copies\":%d,"
           "\"qtype\":\"%s\",\"m\":%lld,\"n\":%lld,\"k\":%lld,\"inputs\":[",
           r->reps, r->warmup, med, ev_times[0], ev_times[r->reps - 1], host_med, batch_ms, bytes, flops, ncopy, wk_dtype_name(qt), (long long)m, (long long)sn,
           (long long)sk);
    printf("{\"key\":\"%s\",\"dtype\":\"%s\",\"shape\":[%lld,%lld]},", xkey, wk_dtype_name(xdt), (long long)m,
           (long long)sk);
    printf("{\"key\":\"%s\",\"dtype\":\"%s\",\"shape\":[%lld,%lld]}", wkey, wk_dtype_name(dense ? qt : WK_BF16),
           (long long)sn, (long long)sk);
    printf("],\"output\":{\"dtype\":\"%s\",\"shape\":[%lld,%lld]},\"dumped\":%s", wk_dtype_name(xdt), (long long)m,
           (long long)sn, dumped ? "true" : "false");
    if (r->dump_dir && !dumped) {
        printf(",\"dump_error\":");
        json_string(err);
    }
    printf("}\n");
    fflush(stdout);
    /* WICK_QMV_SWEEP="R:TR,..,f32": the same reps again under each setting
     * of quant.hip's launch knobs (WICK_QMVQ_R, WICK_QMV_TR; 0 = the
     * default; f32 = WICK_QMATVEC=f32, the f32-activation kernel; dense
     * rows: wick's kernel, WICK_MATVEC=wick), one `sweep` line each (event
     * medians), for choosing the defaults */
    const char *sweep = getenv("WICK_QMV_SWEEP");
    if (sweep && *sweep && m <= 8) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s", sweep);
        for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
            int rr = 0, tr = 0;
            const bool f32 = !strcmp(tok, "f32");
            if (!f32 && sscanf(tok, "%d:%d", &rr, &tr) != 2) continue;
            char v1[16], v2[16];
            snprintf(v1, sizeof v1, "%d", rr);
            snprintf(v2, sizeof v2, "%d", tr);
            setenv("WICK_QMVQ_R", v1, 1);
            setenv("WICK_QMV_TR", v2, 1);
            if (f32) setenv("WICK_QMATVEC", "f32", 1);
            if (dense) setenv("WICK_MATVEC", "wick", 1);   /* the knobs are the wick kernel's */
            wk_env_refresh();                               /* the plugin reads its knobs once */
            bool ok = true;
            for (int i = 0; i < r->reps && ok; i++) {
                wk_tensor *out = NULL;
                ok = wk_event_record(ev[2 * i]) == WK_OK &&
                     (out = dense ? wk_matmul(x, wt[i % ncopy]) : wk_qmatmul(x, w[i % ncopy])) != NULL &&
                     wk_event_record(ev[2 * i + 1]) == WK_OK;
                wk_release(out);
            }
            ok = ok && wk_event_synchronize(ev[2 * r->reps - 1]) == WK_OK;
            for (int i = 0; i < r->reps && ok; i++) ok = wk_event_elapsed_ms(ev[2 * i], ev[2 * i + 1], &ev_times[i]) == WK_OK;
            if (ok) printf("sweep %s %s median_us %.2f frac_bytes_per_us %.1f\n", c->name, tok,
                           1e3 * wk_median(ev_times, r->reps), bytes / (1e3 * wk_median(ev_times, r->reps)));
            else printf("sweep %s %s failed: %s\n", c->name, tok, wk_last_error());
            wk_clear_error();
            unsetenv("WICK_QMATVEC");
            if (dense) unsetenv("WICK_MATVEC");
            fflush(stdout);
        }
        unsetenv("WICK_QMVQ_R");
        unsetenv("WICK_QMV_TR");
        wk_env_refresh();
    }
    goto done;
fail_wk:
    snprintf(err, sizeof err, "%s", wk_last_error());
fail:
    (void)wk_device_synchronize(r->dev);
    print_error(c, err[0] ? err : "failed");
    wk_clear_error();
done:
    wk_release(last);
    wk_release(deq);
    wk_release(x);
    for (int i = 0; i < NCOPY; i++) {
        wk_release(wt[i]);
        wk_release(w[i]);
    }
    free_events(ev, ev ? 2 * r->reps : 0);
    free(times);
    free(ev_times);
    if (cpu) wk_device_close(cpu);
}

/* ---- main --------------------------------------------------------------------- */

static void usage(void)
{
    printf("usage: wick-gpu-bench [--device NAME] [--case LIST] [--reps N] [--warmup N]\n"
           "                      [--dump DIR] [--seed N] [--small] [--list]\n"
           "\n"
           "Times wick ops through the public C API for bench/gpu_vs_torch.py: the median\n"
           "of reps each bracketed by two wick events (the headline), the median of reps\n"
           "bracketed by synchronizations on the host clock, and the mean of a batch of\n"
           "back-to-back reps. One JSON object per line per case on stdout.\n"
           "\n"
           "  --device NAME  cuda:N (default cuda:0), rocm:N or cpu\n"
           "  --case LIST    comma-separated case names (default: all)\n"
           "  --reps N       timed reps (default 25); --warmup N untimed (default 3)\n"
           "  --dump DIR     write each input (KEY.bin) and each case's last timed\n"
           "                 output (CASE.out.bin), raw row-major, for checking\n"
           "  --seed N       generator seed (default 42)\n"
           "  --small        small sizes (for tests on the cpu)\n"
           "  --list         print the case names and exit\n");
}

int main(int argc, char **argv)
{
    const char *dev_name = "cuda:0", *list = NULL;
    run_ctx r;
    memset(&r, 0, sizeof r);
    r.sz = &full_sizes;
    r.reps = 25;
    r.warmup = 3;
    unsigned long long seed = 42;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if (!strcmp(a, "--device") && has) dev_name = argv[++i];
        else if (!strcmp(a, "--case") && has) list = argv[++i];
        else if (!strcmp(a, "--reps") && has) r.reps = atoi(argv[++i]);
        else if (!strcmp(a, "--warmup") && has) r.warmup = atoi(argv[++i]);
        else if (!strcmp(a, "--dump") && has) r.dump_dir = argv[++i];
        else if (!strcmp(a, "--seed") && has) seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(a, "--small")) r.sz = &small_sizes;
        else if (!strcmp(a, "--list")) {
            for (int k = 0; k < N_CASES; k++) printf("%s\n", cases[k].name);
            return 0;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage();
            return 0;
        } else {
            fprintf(stderr, "wick-gpu-bench: unknown or incomplete option '%s' (see --help)\n", a);
            return 2;
        }
    }
    if (r.reps < 1 || r.warmup < 0) {
        fprintf(stderr, "wick-gpu-bench: --reps must be >= 1 and --warmup >= 0\n");
        return 2;
    }
    bool selected[N_CASES];
    for (int k = 0; k < N_CASES; k++) selected[k] = list == NULL;
    if (list) {
        char buf[4096];
        snprintf(buf, sizeof buf, "%s", list);
        for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            int k = 0;
            while (k < N_CASES && strcmp(cases[k].name, tok) != 0) k++;
            if (k == N_CASES) {
                fprintf(stderr, "wick-gpu-bench: no case '%s' (see --list)\n", tok);
                return 2;
            }
            selected[k] = true;
        }
    }
    r.dev = wk_device_open(dev_name);
    if (!r.dev) {
        const char *colon = strchr(dev_name, ':');
        char kind[16];
        snprintf(kind, sizeof kind, "%.*s", colon ? (int)(colon - dev_name) : (int)strlen(dev_name), dev_name);
        fprintf(stderr, "wick-gpu-bench: cannot open %s: %s (plugin: %s)\n", dev_name, wk_last_error(),
                wk_plugin_status(kind));
        return 1;
    }
    wk_device_info info;
    if (wk_device_info_get(r.dev, &info) == WK_OK) {
        printf("{\"device\":");
        json_string(info.name);
        printf(",\"model\":");
        json_string(info.model);
        printf(",\"build\":");
        json_string(wk_build_info());
        printf("}\n");
        fflush(stdout);
    }
    if (wk_device_set_seed(r.dev, seed) != WK_OK) {
        fprintf(stderr, "wick-gpu-bench: wk_device_set_seed: %s\n", wk_last_error());
        return 1;
    }
    for (int k = 0; k < N_CASES; k++) {
        if (!selected[k]) continue;
        const gcase *c = &cases[k];
        fprintf(stderr, "wick-gpu-bench: %s\n", c->name);
        if (c->kind == CK_CHAIN) run_chain(&r, c, dev_name);
        else if (c->kind == CK_XFER) run_xfer(&r, c);
        else if (c->kind == CK_QMM || c->kind == CK_DMV) run_q_case(&r, c);
        else run_op_case(&r, c);
    }
    for (int i = 0; i < N_INPUTS; i++) wk_release(r.inputs[i]);
    wk_device_close(r.dev);
    return n_failed ? 1 : 0;
}
