/* moe.c — what the mixture-of-experts families (mixtral.c, qwen_moe.c,
 * olmoe.c) share: their layer, which is llama's with the MLP replaced by
 * a mixture of experts (blocks.c blk_moe), and the readers of the
 * experts' hyperparameters from GGUF metadata and config.json:
 *
 *   q, k, v, rope, attention, x += a           as in llama.c (biases, q/k
 *                                              norms: the family's tensors)
 *   h = rms_norm(x)
 *   r = softmax(h Wrouter); the k largest, their weights (renormalized
 *       where the model says so)
 *   x += sum over the chosen experts e of w_e (silu(h Wg_e) * h Wu_e) Wd_e
 *        [+ sigmoid(h Wsg) (silu(h Wsg') * h Wsu) Wsd: a shared expert]
 */
#include <stdio.h>
#include "llm_internal.h"

wk_tensor *llm_moe_layer(llm_pass *p, const llm_layer *y, wk_tensor *h, const wk_tensor *next_norm)
{
    wk_tensor *q = blk_qkv_rope_cache(p, y, h);          /* q; k and v in the cache */
    wk_tensor *a = blk_attention(p, y, q);               /* attention(q, cache) Wo  */
    h = blk_residual_norm(p, a, NULL, y->ffn_norm);      /* x += a; h = norm(x)     */
    wk_tensor *f = blk_moe(p, y, h);                     /* the chosen experts      */
    return blk_residual_norm(p, f, NULL, next_norm);     /* x += f; the next norm   */
}

static wk_status check_counts(llm_config *c, const char *file)
{
    const llm_hparams *hp = &c->hp;
    if (hp->n_expert <= 0 || hp->n_expert > 4096 || hp->n_expert_used <= 0 || hp->n_expert_used > hp->n_expert)
        return wk_error_set(WK_ERR_IO, "%s: %lld experts, %lld of them per token: out of range", file,
                            (long long)hp->n_expert, (long long)hp->n_expert_used);
    if (hp->n_ff_exp <= 0 || hp->n_ff_exp > ((int64_t)1 << 24) || hp->n_ff_shexp < 0 || hp->n_ff_shexp > ((int64_t)1 << 24))
        return wk_error_set(WK_ERR_IO, "%s: the experts' FFN width %lld (shared %lld) is out of range", file,
                            (long long)hp->n_ff_exp, (long long)hp->n_ff_shexp);
    return WK_OK;
}

/* GGUF: {arch}.expert_count and expert_used_count; the experts' FFN
 * width as each architecture of llama.cpp takes it (ff: LLM_MOE_FF_*);
 * the shared expert's (expert_shared_feed_forward_length, else
 * feed_forward_length); whether the weights are renormalized is the
 * architecture's in llama.cpp (src/models/: llama's Mixtral and qwen3moe
 * yes, qwen2moe and olmoe no), not a key. */
wk_status llm_moe_read_gguf(llm_config *c, const llm_gguf_keys *k, int ff, bool shared, bool norm)
{
    llm_hparams *hp = &c->hp;
    wk_status st;
    hp->n_ff_exp = 0;
    if ((st = llm_gguf_int(k->g, k->arch, "expert_count", true, &hp->n_expert)) ||
        (st = llm_gguf_int(k->g, k->arch, "expert_used_count", true, &hp->n_expert_used)) ||
        (ff == LLM_MOE_FF_KEY && (st = llm_gguf_int(k->g, k->arch, "expert_feed_forward_length", false, &hp->n_ff_exp))))
        return st;
    if (hp->n_expert_used <= 0)
        return wk_error_set(WK_ERR_IO, "%s: %s.expert_used_count is %lld", wk_gguf_path(k->g), k->arch,
                            (long long)hp->n_expert_used);
    if (!hp->n_ff_exp) hp->n_ff_exp = ff == LLM_MOE_FF_KEY ? c->info.n_ff / hp->n_expert_used : c->info.n_ff;
    hp->n_ff_shexp = shared ? c->info.n_ff : 0;
    if (shared && (st = llm_gguf_int(k->g, k->arch, "expert_shared_feed_forward_length", false, &hp->n_ff_shexp))) return st;
    hp->moe_norm_topk = norm;
    return check_counts(c, wk_gguf_path(k->g));
}

/* config.json: the experts' count (experts_key, or its alias alias_key:
 * NULL when it has none), experts per token, the
 * experts' width (ff_key), the shared expert's (shared_key, NULL: none)
 * and norm_topk_prob (absent: norm_default; Mixtral has no key and always
 * renormalizes: norm_key NULL). */
wk_status llm_moe_read_hf(llm_config *c, const wk_json *cfg, const char *experts_key, const char *alias_key,
                          const char *ff_key, const char *shared_key, const char *norm_key, bool norm_default)
{
    llm_hparams *hp = &c->hp;
    wk_status st;
    /* the experts' count has two names (transformers' attribute_map: the
       other one an alias); a file that gives both must agree */
    const char *alias = alias_key ? alias_key : experts_key;
    int64_t a = -1;
    if ((st = llm_hf_int(cfg, alias, false, &a))) return st;
    if ((st = llm_hf_int(cfg, experts_key, a < 0, &hp->n_expert))) return st;
    if (a >= 0 && wk_json_get(cfg, experts_key) && a != hp->n_expert)
        return wk_error_set(WK_ERR_IO, "%s: %s is %lld but %s is %lld (one count of experts; transformers reads them as one)",
                            wk_json_doc_name(cfg), experts_key, (long long)hp->n_expert, alias, (long long)a);
    if (a >= 0 && !wk_json_get(cfg, experts_key)) hp->n_expert = a;
    if ((st = llm_hf_int(cfg, "num_experts_per_tok", true, &hp->n_expert_used)) ||
        (st = llm_hf_int(cfg, ff_key, true, &hp->n_ff_exp)) ||
        (shared_key && (st = llm_hf_int(cfg, shared_key, true, &hp->n_ff_shexp))))
        return st;
    hp->moe_norm_topk = norm_default;
    if (norm_key && (st = wk_config_bool(cfg, norm_key, false, &hp->moe_norm_topk))) return st;
    return check_counts(c, wk_json_doc_name(cfg));
}
