/* t_llm_model.c — small random models of every architecture the LLM layer
 * runs, for the model tests (test_llm.c, test_llm_batch.c): the weights
 * (make_model), a float64 reference forward pass written from the papers'
 * equations (ref_forward), and writers of the GGUF and safetensors files
 * wick loads them from. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "test.h"
#include "t_files.h"
#include "t_llm_model.h"

const char *const arch_names[] = { "llama", "qwen2", "qwen3", "gemma3" };

static double *rnd(int64_t n, double scale)
{
    double *p = t_mem((size_t)n * sizeof *p);
    for (int64_t i = 0; i < n; i++) p[i] = t_rng_range(t_r(), -scale, scale);
    return p;
}

static double *rnd_norm(int64_t n)
{
    double *p = t_mem((size_t)n * sizeof *p);
    for (int64_t i = 0; i < n; i++) p[i] = t_rng_range(t_r(), 0.5, 1.5);
    return p;
}

tmodel make_model(tcfg c)
{
    tmodel m = { .c = c };
    const int E = c.E, QD = c.H * c.D, KD = c.Hkv * c.D;
    m.emb = rnd((int64_t)c.V * E, 1.0);
    m.out_norm = rnd_norm(E);
    m.output = c.tied ? NULL : rnd((int64_t)c.V * E, 0.3);
    if (c.freq_factors) {
        m.ff = t_mem((size_t)(c.D / 2) * sizeof *m.ff);
        for (int i = 0; i < c.D / 2; i++) m.ff[i] = (float)(1.0 + 7.0 * i / (c.D / 2 - 1));   /* 1 .. 8, f32 values */
    }
    m.l = t_mem((size_t)c.L * sizeof *m.l);
    for (int i = 0; i < c.L; i++) {
        tlayer *y = &m.l[i];
        y->attn_norm = rnd_norm(E);
        y->wq = rnd((int64_t)QD * E, 0.3);
        y->wk = rnd((int64_t)KD * E, 0.3);
        y->wv = rnd((int64_t)KD * E, 0.3);
        y->wo = rnd((int64_t)E * QD, 0.3);
        if (c.arch == A_QWEN2) {
            y->bq = rnd(QD, 0.5);
            y->bk = rnd(KD, 0.5);
            y->bv = rnd(KD, 0.5);
        }
        if (c.arch == A_QWEN3 || c.arch == A_GEMMA3) {
            y->q_norm = rnd_norm(c.D);
            y->k_norm = rnd_norm(c.D);
        }
        if (c.arch == A_GEMMA3) {
            y->post_attn = rnd_norm(E);
            y->post_ffn = rnd_norm(E);
        }
        y->ffn_norm = rnd_norm(E);
        y->gate = rnd((int64_t)c.F * E, 0.3);
        y->up = rnd((int64_t)c.F * E, 0.3);
        y->down = rnd((int64_t)E * c.F, 0.3);
    }
    return m;
}

bool sliding(const tcfg *c, int l)
{
    return c->arch == A_GEMMA3 && (l + 1) % 6 != 0;
}

/* ---- the reference forward pass ------------------------------------------- */

/* The stored norm weight w is used as (1 + w) by HF gemma files and as w by
 * GGUF (whose converter adds the 1): the reference takes the effective
 * weight, make_model's value, in both, and the writers store w - 1 for HF
 * gemma. */
static void rmsnorm(double *out, const double *x, const double *w, int n, double eps)
{
    double s = 0;
    for (int i = 0; i < n; i++) s += x[i] * x[i];
    double r = 1.0 / sqrt(s / n + eps);
    for (int i = 0; i < n; i++) out[i] = x[i] * r * w[i];
}

static void matvec(double *y, const double *W, const double *x, const double *b, int n, int k)
{
    for (int i = 0; i < n; i++) {
        double s = b ? b[i] : 0;
        for (int j = 0; j < k; j++) s += W[(int64_t)i * k + j] * x[j];
        y[i] = s;
    }
}

static void rope_ref(double *v, int D, int pos, double base, bool interleaved, const double *ff)
{
    for (int i = 0; i < D / 2; i++) {
        double f = pow(base, -2.0 * i / D) / (ff ? ff[i] : 1.0), c = cos(pos * f), s = sin(pos * f);
        int a = interleaved ? 2 * i : i, b = interleaved ? 2 * i + 1 : i + D / 2;
        double x0 = v[a], x1 = v[b];
        v[a] = x0 * c - x1 * s;
        v[b] = x0 * s + x1 * c;
    }
}

/* logits [T, V] for tokens [T] from position 0 */
double *ref_forward(const tmodel *m, const int32_t *tok, int T)
{
    const tcfg *c = &m->c;
    const int E = c->E, D = c->D, H = c->H, Hkv = c->Hkv, QD = H * D, KD = Hkv * D, F = c->F;
    const bool gemma = c->arch == A_GEMMA3, inter = c->arch == A_LLAMA && !c->hf;
    double *x = t_mem((size_t)T * E * sizeof *x), *h = t_mem((size_t)E * sizeof *h);
    double *q = t_mem((size_t)T * QD * sizeof *q), *k = t_mem((size_t)T * KD * sizeof *k),
           *v = t_mem((size_t)T * KD * sizeof *v), *att = t_mem((size_t)QD * sizeof *att),
           *o = t_mem((size_t)E * sizeof *o), *g = t_mem((size_t)F * sizeof *g), *u = t_mem((size_t)F * sizeof *u),
           *sc = t_mem((size_t)T * sizeof *sc);
    for (int t = 0; t < T; t++)
        for (int i = 0; i < E; i++) x[t * E + i] = m->emb[(int64_t)tok[t] * E + i] * (gemma ? sqrt((double)E) : 1.0);
    for (int l = 0; l < c->L; l++) {
        const tlayer *y = &m->l[l];
        const bool sw = sliding(c, l);
        const double base = sw ? c->base_local : c->base;
        for (int t = 0; t < T; t++) {
            rmsnorm(h, x + t * E, y->attn_norm, E, c->eps);
            matvec(q + t * QD, y->wq, h, y->bq, QD, E);
            matvec(k + t * KD, y->wk, h, y->bk, KD, E);
            matvec(v + t * KD, y->wv, h, y->bv, KD, E);
            for (int hh = 0; hh < H; hh++) {
                if (y->q_norm) rmsnorm(q + t * QD + hh * D, q + t * QD + hh * D, y->q_norm, D, c->eps);
                rope_ref(q + t * QD + hh * D, D, t, base, inter, m->ff);
            }
            for (int hh = 0; hh < Hkv; hh++) {
                if (y->k_norm) rmsnorm(k + t * KD + hh * D, k + t * KD + hh * D, y->k_norm, D, c->eps);
                rope_ref(k + t * KD + hh * D, D, t, base, inter, m->ff);
            }
        }
        const double scale = gemma ? 1.0 / sqrt((double)D) : 1.0 / sqrt((double)D);
        for (int t = 0; t < T; t++) {
            for (int hh = 0; hh < H; hh++) {
                const int kh = hh / (H / Hkv);
                double mx = -INFINITY;
                for (int j = 0; j <= t; j++) {
                    sc[j] = -INFINITY;
                    if (sw && j <= t - c->window) continue;
                    double s = 0;
                    for (int d = 0; d < D; d++) s += q[t * QD + hh * D + d] * k[j * KD + kh * D + d];
                    sc[j] = s * scale;
                    if (sc[j] > mx) mx = sc[j];
                }
                double den = 0;
                for (int j = 0; j <= t; j++) den += sc[j] == -INFINITY ? 0 : exp(sc[j] - mx);
                for (int d = 0; d < D; d++) {
                    double s = 0;
                    for (int j = 0; j <= t; j++)
                        if (sc[j] != -INFINITY) s += exp(sc[j] - mx) / den * v[j * KD + kh * D + d];
                    att[hh * D + d] = s;
                }
            }
            matvec(o, y->wo, att, NULL, E, QD);
            if (y->post_attn) rmsnorm(o, o, y->post_attn, E, c->eps);
            for (int i = 0; i < E; i++) x[t * E + i] += o[i];
        }
        for (int t = 0; t < T; t++) {
            rmsnorm(h, x + t * E, y->ffn_norm, E, c->eps);
            matvec(g, y->gate, h, NULL, F, E);
            matvec(u, y->up, h, NULL, F, E);
            for (int i = 0; i < F; i++) {
                double a = gemma ? 0.5 * g[i] * (1 + tanh(sqrt(2 / M_PI) * (g[i] + 0.044715 * g[i] * g[i] * g[i])))
                                 : g[i] / (1 + exp(-g[i]));
                g[i] = a * u[i];
            }
            matvec(o, y->down, g, NULL, E, F);
            if (y->post_ffn) rmsnorm(o, o, y->post_ffn, E, c->eps);
            for (int i = 0; i < E; i++) x[t * E + i] += o[i];
        }
    }
    double *lg = t_mem((size_t)T * c->V * sizeof *lg);
    for (int t = 0; t < T; t++) {
        rmsnorm(h, x + t * E, m->out_norm, E, c->eps);
        matvec(lg + (int64_t)t * c->V, m->output ? m->output : m->emb, h, NULL, c->V, E);
    }
    return lg;
}

/* ---- writing the model ------------------------------------------------------ */

float *to_f32(const double *p, int64_t n, double add)
{
    float *f = t_mem((size_t)n * sizeof *f);
    for (int64_t i = 0; i < n; i++) f[i] = (float)(p[i] + add);
    return f;
}


int collect(const tmodel *m, tw *out)
{
    const tcfg *c = &m->c;
    const bool hf = c->hf, gemma_hf = hf && c->arch == A_GEMMA3;
    const int E = c->E, QD = c->H * c->D, KD = c->Hkv * c->D;
    int n = 0;
#define PUT(gname, hname, l, ptr, sh, add)                                                        \
    do {                                                                                          \
        snprintf(out[n].name, sizeof out[n].name, hf ? hname : gname, l);                          \
        out[n].shape = sh;                                                                        \
        int64_t cnt_ = 1;                                                                         \
        for (int d_ = 0; d_ < out[n].shape.rank; d_++) cnt_ *= out[n].shape.dims[d_];             \
        out[n].data = to_f32(ptr, cnt_, add);                                                     \
        n++;                                                                                      \
    } while (0)
    const double nadd = gemma_hf ? -1.0 : 0.0;   /* HF gemma stores w - 1 */
    PUT("token_embd.weight%.0d", "model.embed_tokens.weight%.0d", 0, m->emb, WK_SHAPE(c->V, E), 0);
    PUT("output_norm.weight%.0d", "model.norm.weight%.0d", 0, m->out_norm, WK_SHAPE(E), nadd);
    if (m->output) PUT("output.weight%.0d", "lm_head.weight%.0d", 0, m->output, WK_SHAPE(c->V, E), 0);
    for (int l = 0; l < c->L; l++) {
        const tlayer *y = &m->l[l];
        PUT("blk.%d.attn_norm.weight", "model.layers.%d.input_layernorm.weight", l, y->attn_norm, WK_SHAPE(E), nadd);
        PUT("blk.%d.attn_q.weight", "model.layers.%d.self_attn.q_proj.weight", l, y->wq, WK_SHAPE(QD, E), 0);
        PUT("blk.%d.attn_k.weight", "model.layers.%d.self_attn.k_proj.weight", l, y->wk, WK_SHAPE(KD, E), 0);
        PUT("blk.%d.attn_v.weight", "model.layers.%d.self_attn.v_proj.weight", l, y->wv, WK_SHAPE(KD, E), 0);
        PUT("blk.%d.attn_output.weight", "model.layers.%d.self_attn.o_proj.weight", l, y->wo, WK_SHAPE(E, QD), 0);
        if (y->bq) {
            PUT("blk.%d.attn_q.bias", "model.layers.%d.self_attn.q_proj.bias", l, y->bq, WK_SHAPE(QD), 0);
            PUT("blk.%d.attn_k.bias", "model.layers.%d.self_attn.k_proj.bias", l, y->bk, WK_SHAPE(KD), 0);
            PUT("blk.%d.attn_v.bias", "model.layers.%d.self_attn.v_proj.bias", l, y->bv, WK_SHAPE(KD), 0);
        }
        if (y->q_norm) {
            PUT("blk.%d.attn_q_norm.weight", "model.layers.%d.self_attn.q_norm.weight", l, y->q_norm, WK_SHAPE(c->D), nadd);
            PUT("blk.%d.attn_k_norm.weight", "model.layers.%d.self_attn.k_norm.weight", l, y->k_norm, WK_SHAPE(c->D), nadd);
        }
        if (y->post_attn) {
            PUT("blk.%d.post_attention_norm.weight", "model.layers.%d.post_attention_layernorm.weight", l, y->post_attn,
                WK_SHAPE(E), nadd);
            PUT("blk.%d.ffn_norm.weight", "model.layers.%d.pre_feedforward_layernorm.weight", l, y->ffn_norm, WK_SHAPE(E),
                nadd);
            PUT("blk.%d.post_ffw_norm.weight", "model.layers.%d.post_feedforward_layernorm.weight", l, y->post_ffn,
                WK_SHAPE(E), nadd);
        } else {
            PUT("blk.%d.ffn_norm.weight", "model.layers.%d.post_attention_layernorm.weight", l, y->ffn_norm, WK_SHAPE(E),
                0);
        }
        PUT("blk.%d.ffn_gate.weight", "model.layers.%d.mlp.gate_proj.weight", l, y->gate, WK_SHAPE(c->F, E), 0);
        PUT("blk.%d.ffn_up.weight", "model.layers.%d.mlp.up_proj.weight", l, y->up, WK_SHAPE(c->F, E), 0);
        PUT("blk.%d.ffn_down.weight", "model.layers.%d.mlp.down_proj.weight", l, y->down, WK_SHAPE(E, c->F), 0);
    }
#undef PUT
    return n;
}

/* GGUF llama stores Q and K rows permuted for the interleaved rope: the
 * writer applies llama.cpp's permutation to the HF-layout rows, and the
 * reference uses the interleaved rope on the permuted weights directly, so
 * nothing is permuted here; the file is what a converted file is. */
const char *tmp_path(const char *what)
{
    static _Thread_local char buf[4][256];
    static _Thread_local int k;
    char *p = buf[k++ & 3];
    snprintf(p, 256, "%s/wick-test-llm-%d-%s", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid(), what);
    return p;
}

/* One tensor of a GGUF written in another dtype than the rest (NULL:
 * none): write_gguf_mixed. */
const char *mixed_name;
wk_dtype mixed_dt;
const char *const *gguf_tokens;
int gguf_context;

bool write_gguf(const tmodel *m, const char *path, wk_dtype wdt)
{
    const tcfg *c = &m->c;
    const char *arch = arch_names[c->arch];
    char k[128];
    wk_gguf_writer *w = wk_gguf_writer_new();
    if (!w) return false;
    bool ok = wk_gguf_writer_set_str(w, "general.architecture", arch) == WK_OK;
#define KEY(s) (snprintf(k, sizeof k, "%s.%s", arch, s), k)
    ok = ok && !wk_gguf_writer_set_u32(w, KEY("context_length"), gguf_context ? (uint32_t)gguf_context : 64);
    ok = ok && !wk_gguf_writer_set_u32(w, KEY("embedding_length"), (uint32_t)c->E);
    ok = ok && !wk_gguf_writer_set_u32(w, KEY("block_count"), (uint32_t)c->L);
    ok = ok && !wk_gguf_writer_set_u32(w, KEY("feed_forward_length"), (uint32_t)c->F);
    ok = ok && !wk_gguf_writer_set_u32(w, KEY("attention.head_count"), (uint32_t)c->H);
    ok = ok && !wk_gguf_writer_set_u32(w, KEY("attention.head_count_kv"), (uint32_t)c->Hkv);
    ok = ok && !wk_gguf_writer_set_u32(w, KEY("attention.key_length"), (uint32_t)c->D);
    ok = ok && !wk_gguf_writer_set_f32(w, KEY("attention.layer_norm_rms_epsilon"), (float)c->eps);
    ok = ok && !wk_gguf_writer_set_f32(w, KEY("rope.freq_base"), (float)c->base);
    if (c->arch == A_GEMMA3) ok = ok && !wk_gguf_writer_set_u32(w, KEY("attention.sliding_window"), (uint32_t)c->window);
#undef KEY
    ok = ok && !wk_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 2);
    if (gguf_tokens) ok = ok && !wk_gguf_writer_set_array(w, "tokenizer.ggml.tokens", WK_GGUF_STRING, gguf_tokens, (uint64_t)c->V);
    tw *ts = t_mem(512 * sizeof *ts);
    int n = collect(m, ts);
    if (m->ff) {
        snprintf(ts[n].name, sizeof ts[n].name, "rope_freqs.weight");
        ts[n].shape = WK_SHAPE(c->D / 2);
        ts[n].data = to_f32(m->ff, c->D / 2, 0);
        n++;
    }
    for (int i = 0; ok && i < n; i++) {
        const wk_dtype dt = mixed_name && !strcmp(ts[i].name, mixed_name) ? mixed_dt : wdt;
        if (dt != WK_F32 && ts[i].shape.rank == 2) {
            wk_tensor *f = wk_from_host(t_dev(), WK_F32, ts[i].shape, ts[i].data);
            wk_tensor *q = !f ? NULL : wk_dtype_is_quantized(dt) ? wk_quantize(f, dt) : wk_to_dtype(f, dt);
            ok = q && !wk_gguf_writer_add_tensor(w, ts[i].name, q);
            wk_release(f);
            wk_release(q);
        } else {
            ok = !wk_gguf_writer_add_data(w, ts[i].name, WK_F32, ts[i].shape, ts[i].data);
        }
    }
    ok = ok && !wk_gguf_writer_write(w, path);
    if (!ok) t_fail("writing %s: %s / %s", path, wk_last_error(), wk_last_error());
    wk_gguf_writer_free(w);
    return ok;
}

bool write_hf(const tmodel *m, const char *dir)
{
    const tcfg *c = &m->c;
    char path[300];
    snprintf(path, sizeof path, "mkdir -p '%s'", dir);
    if (system(path) != 0) return false;
    tw *ts = t_mem(512 * sizeof *ts);
    int n = collect(m, ts);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (!t_write_safetensors(path, ts, n)) return false;
    static const char *const mt[] = { "llama", "qwen2", "qwen3", "gemma3_text" };
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    if (!f) return false;
    fprintf(f, "{\"model_type\":\"%s\",\"vocab_size\":%d,\"hidden_size\":%d,\"num_hidden_layers\":%d,"
               "\"num_attention_heads\":%d,\"num_key_value_heads\":%d,\"head_dim\":%d,\"intermediate_size\":%d,"
               "\"max_position_embeddings\":64,\"rms_norm_eps\":%.17g,\"tie_word_embeddings\":%s,\"eos_token_id\":[2,3],",
            mt[c->arch], c->V, c->E, c->L, c->H, c->Hkv, c->D, c->F, c->eps, c->tied ? "true" : "false");
    if (c->arch == A_GEMMA3) {
        fprintf(f, "\"query_pre_attn_scalar\":%d,\"sliding_window\":%d,\"hidden_activation\":\"gelu_pytorch_tanh\",",
                c->D, c->window);
        if (c->hf_v5) {
            fprintf(f, "\"layer_types\":[");
            for (int l = 0; l < c->L; l++)
                fprintf(f, "%s\"%s\"", l ? "," : "", sliding(c, l) ? "sliding_attention" : "full_attention");
            fprintf(f, "],\"rope_parameters\":{\"full_attention\":{\"rope_theta\":%.17g,\"rope_type\":\"default\"},"
                       "\"sliding_attention\":{\"rope_theta\":%.17g,\"rope_type\":\"default\"}}",
                    c->base, c->base_local);
        } else {
            fprintf(f, "\"sliding_window_pattern\":6,\"rope_theta\":%.17g,\"rope_local_base_freq\":%.17g,\"rope_scaling\":null",
                    c->base, c->base_local);
        }
    } else if (c->hf_v5) {
        fprintf(f, "\"hidden_act\":\"silu\",\"rope_parameters\":{\"rope_theta\":%.17g,\"rope_type\":\"default\"}", c->base);
    } else {
        fprintf(f, "\"hidden_act\":\"silu\",\"rope_theta\":%.17g,\"rope_scaling\":null", c->base);
    }
    fprintf(f, "}\n");
    fclose(f);
    return true;
}

void rm_model(const char *path)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0) t_fail("could not remove %s", path);
}

tcfg cfg_of(int arch, bool hf)
{
    tcfg c = { .arch = arch, .hf = hf, .V = 61, .E = 32, .L = 2, .H = 4, .Hkv = 2, .D = 8, .F = 40, .window = 3,
               .base = 10000.0, .base_local = 10000.0, .eps = 1e-5, .tied = false };
    if (arch == A_QWEN2) c.base = 1e6, c.tied = true;
    if (arch == A_QWEN3) c.Hkv = 1, c.D = 16;
    if (arch == A_GEMMA3) c.L = 7, c.E = 24, c.H = 2, c.Hkv = 1, c.D = 16, c.base = 1e6, c.tied = true, c.eps = 1e-6;
    return c;
}

double rel_err(const float *a, const double *b, int64_t n)
{
    double e = 0, s = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(a[i])) return INFINITY;
        e = fmax(e, fabs(a[i] - b[i]));
        s = fmax(s, fabs(b[i]));
    }
    return e / (s > 0 ? s : 1);
}
