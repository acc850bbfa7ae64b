/* tp.h — tensor parallelism for the language models (tp.c): which
 * share of every weight one rank holds, and the reads of those shares from
 * the file's mapping. docs/tensor-parallel.md has the scheme:
 *
 *   q, k, v, gate, up   column-parallel: the rank's rows of W (its query
 *                       heads, its KV heads, its slice of the FFN)
 *   o, down             row-parallel: the rank's columns of W, then one
 *                       all_reduce of the partial sums
 *   experts             each expert's gate/up rows and down columns as a
 *                       dense MLP's (the router whole on every rank, so
 *                       each routes alike); the shared expert likewise;
 *                       the block's partial sums joined by the one
 *                       all_reduce
 *   embedding, output   split by vocabulary rows (the last share padded
 *                       with zero rows so every rank holds as many); the
 *                       lookup sums the ranks' rows (one all_reduce), the
 *                       logits are joined (one all_gather)
 *
 * KV heads are split when the ranks divide them, else each is replicated on
 * the ranks whose query heads read it (ranks a multiple of KV heads).
 * Written against the public headers only (tools/check-layers). */
#ifndef WICK_LLM_TP_H
#define WICK_LLM_TP_H

#include "wick_comm.h"
#include "wick_llm.h"
#include "wick_formats.h"

typedef struct llm_tp {
    wk_comm *comm;           /* NULL: the whole model on this device        */
    int rank, size;
    int64_t head0, n_head;   /* the rank's query heads                      */
    int64_t kv0, n_kv;       /* its KV heads                                */
    int64_t ff0, n_ff;       /* its rows of gate/up, columns of down        */
    int64_t ffx0, n_ffx;     /* the same of each expert (mixtures)          */
    int64_t ffs0, n_ffs;     /* the same of the shared expert               */
    int64_t voc0, n_voc;     /* its vocabulary rows (n_voc the same on every
                                rank; rows past the vocabulary are zeros)   */
} llm_tp;

/* The shares of rank `rank` of `size` for a model of in's shape; a clear
 * error for counts that do not split (query heads, KV heads, FFN rows,
 * the experts' FFN rows f_exp and the shared expert's f_shexp, 0 where
 * the model has none). kv_split: KV heads must split, not be replicated
 * (a norm over all of them, OLMoE's, would count a replicated one twice).
 * size 1 (or comm NULL): the whole model. */
wk_status llm_tp_plan(llm_tp *tp, wk_comm *comm, const wk_llm_info *in, int64_t f_exp, int64_t f_shexp, bool kv_split);

/* A range of rows of a matrix: [r0, r0 + n). */
typedef struct llm_rows {
    int64_t r0, n;
} llm_rows;
#define LLM_TP_MAX_RANGES 3

/* The rows of the nrg ranges rg (1 to LLM_TP_MAX_RANGES, joined in that
 * order: a stacked q/k/v takes three) and columns [c0, c0 + nc) of a
 * matrix in a file (a vector: rank 1, rows only, nc ignored; a stack [X,
 * rows, cols]: those of each of its X matrices, [X, nr, nc]) as a tensor
 * on dev, then nzero rows of zeros (matrices and vectors), gathered on the
 * host from the file's mapping: only the share travels. Rows at or past
 * the file's are zeros too (vocabulary padding). Columns of a block type
 * go in whole blocks: c0 and nc must be multiples of its block (a clear
 * error naming the tensor otherwise). */
wk_tensor *llm_tp_slice(const wk_file_tensor *info, wk_device *dev, const llm_rows *rg, int nrg, int64_t c0, int64_t nc,
                        int64_t nzero);

#endif /* WICK_LLM_TP_H */
