/* tp.c — tensor parallelism for the language models: the plan of one
 * rank's shares (llm_tp_plan) and the reads of those shares from a file's
 * mapping (llm_tp_slice). See tp.h for the scheme; weights.c loads a
 * rank's shares with them and blocks.c joins the ranks' partial results. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tp.h"
#include "wick_ext.h"
#include "wick_formats.h"

wk_status llm_tp_plan(llm_tp *tp, wk_comm *comm, const wk_llm_info *in, int64_t f_exp, int64_t f_shexp, bool kv_split)
{
    memset(tp, 0, sizeof *tp);
    const int n = comm ? wk_comm_size(comm) : 1, r = comm ? wk_comm_rank(comm) : 0;
    tp->comm = n > 1 ? comm : NULL;
    tp->rank = r, tp->size = n;
    const int64_t H = in->n_head, Hkv = in->n_head_kv, F = in->n_ff, V = in->n_vocab;
    if (H % n)
        return wk_error_set(WK_ERR_ARGUMENT,
                       "tensor parallel over %d ranks: the model's %lld query heads do not split evenly (use a rank "
                       "count that divides %lld)",
                       n, (long long)H, (long long)H);
    if (Hkv % n && kv_split)
        return wk_error_set(WK_ERR_ARGUMENT,
                            "tensor parallel over %d ranks: the model's key norm spans all %lld KV heads, which must "
                            "then split evenly (use a rank count that divides %lld)",
                            n, (long long)Hkv, (long long)Hkv);
    if (Hkv % n && n % Hkv)
        return wk_error_set(WK_ERR_ARGUMENT,
                       "tensor parallel over %d ranks: the model's %lld KV heads neither split evenly nor replicate "
                       "evenly (the ranks must divide %lld or be a multiple of it)",
                       n, (long long)Hkv, (long long)Hkv);
    if (F % n)
        return wk_error_set(WK_ERR_ARGUMENT,
                       "tensor parallel over %d ranks: the feed-forward width %lld does not split evenly", n,
                       (long long)F);
    tp->n_head = H / n;
    tp->head0 = tp->n_head * r;
    if (Hkv % n == 0) {
        tp->n_kv = Hkv / n;
        tp->kv0 = tp->n_kv * r;
    } else {   /* fewer KV heads than ranks: the one this rank's queries read */
        tp->n_kv = 1;
        tp->kv0 = tp->head0 / (H / Hkv);
    }
    tp->n_ff = F / n;
    tp->ff0 = tp->n_ff * r;
    if (f_exp % n || f_shexp % n)
        return wk_error_set(WK_ERR_ARGUMENT,
                            "tensor parallel over %d ranks: the experts' feed-forward width %lld (shared expert: %lld) "
                            "does not split evenly",
                            n, (long long)f_exp, (long long)f_shexp);
    tp->n_ffx = f_exp / n, tp->ffx0 = tp->n_ffx * r;
    tp->n_ffs = f_shexp / n, tp->ffs0 = tp->n_ffs * r;
    tp->n_voc = (V + n - 1) / n;
    tp->voc0 = tp->n_voc * r;
    return WK_OK;
}

wk_tensor *llm_tp_slice(const wk_file_tensor *info, wk_device *dev, const llm_rows *rg, int nrg, int64_t c0, int64_t nc,
                        int64_t nzero)
{
    const wk_dtype dt = info->dtype;
    const int rank = info->shape.rank;
    if (rank < 1 || rank > 3 || (rank == 3 && nzero) || nrg < 1 || nrg > LLM_TP_MAX_RANGES) {
        wk_error_set(WK_ERR_ARGUMENT, "%s: tensor %s has rank %d; shares are taken of vectors, matrices and stacks of them",
                info->file, info->name, rank);
        return NULL;
    }
    const int64_t X = rank == 3 ? info->shape.dims[0] : 1;   /* matrices stacked */
    const int64_t rows = info->shape.dims[rank == 3], cols = rank >= 2 ? info->shape.dims[rank - 1] : 1;
    if (rank == 1) c0 = 0, nc = 1;
    const int64_t bs = (int64_t)wk_dtype_block_size(dt), bb = (int64_t)wk_dtype_block_bytes(dt);
    if (bs <= 0 || bb <= 0) {
        wk_error_set(WK_ERR_UNSUPPORTED, "%s: tensor %s is of type %s, which wick does not have", info->file, info->name,
                info->type_name);
        return NULL;
    }
    int64_t nr = 0;   /* the share's rows, every range's */
    for (int g = 0; g < nrg; g++) {
        if (rg[g].r0 < 0 || rg[g].n < 0 || nzero < 0 || c0 < 0 || nc <= 0 || c0 + nc > cols) {
            wk_error_set(WK_ERR_ARGUMENT,
                    "%s: tensor %s: the share rows [%lld, +%lld) columns [%lld, +%lld) is outside its [%lld, %lld]",
                    info->file, info->name, (long long)rg[g].r0, (long long)rg[g].n, (long long)c0, (long long)nc,
                    (long long)rows, (long long)cols);
            return NULL;
        }
        nr += rg[g].n;
    }
    if (c0 % bs || nc % bs) {
        wk_error_set(WK_ERR_ARGUMENT,
                "%s: tensor %s is %s (blocks of %lld values along a row): a share of columns [%lld, +%lld) cuts "
                "blocks; use fewer ranks or a type with smaller blocks",
                info->file, info->name, wk_dtype_name(dt), (long long)bs, (long long)c0, (long long)nc);
        return NULL;
    }
    const int64_t row_bytes = cols / bs * bb, share_bytes = nc / bs * bb, skip = c0 / bs * bb;
    if ((uint64_t)(X * rows * row_bytes) > info->nbytes) {
        wk_error_set(WK_ERR_IO, "%s: tensor %s holds %llu bytes, less than its shape needs", info->file, info->name,
                (unsigned long long)info->nbytes);
        return NULL;
    }
    const size_t total = (size_t)(X * (nr + nzero) * share_bytes);
    unsigned char *host = malloc(total ? total : 1);
    if (!host) {
        wk_error_set(WK_ERR_MEMORY, "out of host memory for a %zu-byte share of %s", total, info->name);
        return NULL;
    }
    unsigned char *dst = host;
    for (int64_t x = 0; x < X; x++) {
        const unsigned char *src = (const unsigned char *)info->data + x * rows * row_bytes;
        for (int g = 0; g < nrg; g++)
            for (int64_t i = 0; i < rg[g].n; i++, dst += share_bytes) {
                const int64_t r = rg[g].r0 + i;
                if (r < rows) memcpy(dst, src + r * row_bytes + skip, (size_t)share_bytes);
                else memset(dst, 0, (size_t)share_bytes);   /* padding rows: zeros in every type */
            }
        for (int64_t i = 0; i < nzero; i++, dst += share_bytes) memset(dst, 0, (size_t)share_bytes);
    }
    wk_shape s = rank == 3 ? WK_SHAPE(X, nr, nc) : rank == 2 ? WK_SHAPE(nr + nzero, nc) : WK_SHAPE(nr + nzero);
    wk_tensor *t = wk_from_host(dev, dt, s, host);
    free(host);
    if (!t) wk_error_wrap("%s: the share of tensor %s", info->file, info->name);
    return t;
}
