/* quantize.c — `wick quantize [-q] IN OUT TYPE`: a GGUF or safetensors
 * model (one file, an index with its shards, or a folder) written as a
 * GGUF file whose weight matrices are quantized with wk_quantize.
 *
 * TYPE is a GGUF block type (q4_0, q4_1, q5_0, q5_1, q8_0, q8_1, q2_k ..
 * q8_k, iq4_nl, iq4_xs; the other IQ types are refused: no quantizer), a
 * float type (f32, f16, bf16), or q4_k_m: llama.cpp's Q4_K_M mix
 * as its llama_tensor_get_type chooses it for a dense model (no experts):
 *   - output.weight (lm_head.weight), or the token embedding when the
 *     model has no output matrix (tied embeddings): q6_k;
 *   - attn_v (v_proj, attn_qkv) and ffn_down (down_proj) where
 *     use_more_bits(i, n) holds: q6_k, where i is the tensor's place among
 *     those of its kind in llama.cpp's order (by layer number, "blk.N." or
 *     "layers.N.", then by name; for a dense model: its layer), n is their
 *     number, and use_more_bits is i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2;
 *   - every other matrix q4_k.
 * Which tensors are quantized follows llama.cpp too: matrices (2 dims or
 * more) whose name ends in "weight", except norms (_norm.weight,
 * layernorm) and MoE routers (ffn_gate_inp); a matrix whose rows are not
 * whole blocks falls back as llama.cpp does (q4_k -> q5_0, q5_k -> q5_1,
 * q6_k -> q8_0, q2_k/q3_k -> q4_0, q8_k -> q8_0, iq4_xs -> iq4_nl), then to f16 when rows are
 * not a multiple of 32. 1-D float tensors (norms, biases) are written as
 * f32; everything else keeps its type. A tensor already of its target type
 * is copied byte for byte; a block-quantized source is dequantized to f32
 * first.
 *
 * Metadata of a GGUF source is copied (general.file_type and
 * general.quantization_version are set anew); a safetensors source has
 * none to copy (its tensors keep their names). Work runs on the cpu; the
 * output file is written to OUT.tmp and renamed when complete.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "wick.h"
#include "wick_formats.h"
#include "cli.h"

void wick_quantize_usage(void)
{
    printf("usage: wick quantize [-q] IN OUT TYPE\n"
           "\n"
           "Writes the model IN (a .gguf file, a .safetensors file, a\n"
           "model.safetensors.index.json or a folder holding either) as the GGUF file\n"
           "OUT with its weight matrices quantized to TYPE:\n"
           "  q4_k_m                  llama.cpp's Q4_K_M mix (q6_k for the output\n"
           "                          matrix and some attn_v/ffn_down, q4_k elsewhere)\n"
           "  q4_0 q4_1 q5_0 q5_1 q8_0 q8_1 q2_k q3_k q4_k q5_k q6_k q8_k iq4_nl iq4_xs\n"
           "                          every matrix of that GGUF block type\n"
           "  f32 f16 bf16            every matrix in that float type\n"
           "Norms and other 1-D tensors are written as f32.\n"
           "\n"
           "  -q   no line per tensor\n");
}

typedef enum cat { CAT_OTHER, CAT_OUTPUT, CAT_TOKEN_EMBD, CAT_ATTN_V, CAT_FFN_DOWN } cat;

static bool has(const char *s, const char *sub) { return strstr(s, sub) != NULL; }
static bool ends(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

/* GGUF names (llama.cpp's) and Hugging Face names. */
static cat category(const char *n)
{
    if (!strcmp(n, "output.weight") || !strcmp(n, "lm_head.weight")) return CAT_OUTPUT;
    if (!strcmp(n, "token_embd.weight") || !strcmp(n, "per_layer_token_embd.weight") || ends(n, "embed_tokens.weight"))
        return CAT_TOKEN_EMBD;
    if (has(n, "attn_v.weight") || has(n, "attn_qkv.weight") || has(n, "attn_kv_b.weight") || ends(n, ".v_proj.weight") ||
        ends(n, ".qkv_proj.weight"))
        return CAT_ATTN_V;
    if (has(n, "ffn_down") || has(n, ".down_proj.")) return CAT_FFN_DOWN;
    return CAT_OTHER;
}

static bool quantizable(const wk_file_tensor *t)
{
    const char *n = t->name;
    if (t->shape.rank < 2 || !ends(n, "weight")) return false;
    if (has(n, "_norm.weight") || has(n, "layernorm") || has(n, "ffn_gate_inp.weight")) return false;
    if (!strcmp(n, "position_embd.weight") || !strcmp(n, "token_types.weight")) return false;
    return true;
}

static bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

/* The layer number in a tensor's name ("blk.N." or "layers.N."); -1 when none. */
static long layer_of(const char *n)
{
    const char *p = strstr(n, "blk.");
    size_t skip = 4;
    if (!p || p != n) {
        p = strstr(n, "layers.");
        skip = 7;
    }
    if (!p || p[skip] < '0' || p[skip] > '9') return -1;
    return strtol(p + skip, NULL, 10);
}

/* llama.cpp's order of weights: by layer number, then by name. */
static bool before(const char *a, const char *b)
{
    long la = layer_of(a), lb = layer_of(b);
    return la != lb ? la < lb : strcmp(a, b) < 0;
}

/* llama.cpp's fallback for rows that are not whole blocks of the target. */
static wk_dtype fallback(wk_dtype target, int64_t ncols)
{
    size_t bs = wk_dtype_block_size(target);
    if (!wk_dtype_is_quantized(target) || ncols % (int64_t)bs == 0) return target;
    wk_dtype r;
    switch (target) {
    case WK_Q2_K: case WK_Q3_K: r = WK_Q4_0; break;
    case WK_Q4_K: r = WK_Q5_0; break;
    case WK_Q5_K: r = WK_Q5_1; break;
    case WK_Q6_K: case WK_Q8_K: r = WK_Q8_0; break;
    case WK_IQ4_XS: r = WK_IQ4_NL; break;
    default: r = WK_F16; break;
    }
    if (wk_dtype_is_quantized(r) && ncols % (int64_t)wk_dtype_block_size(r) != 0) r = WK_F16;
    return r;
}

/* llama.cpp's general.file_type for a TYPE (-1: none to write). */
static int ftype_of(const char *type)
{
    static const struct { const char *name; int ftype; } m[] = {
        { "f32", 0 }, { "f16", 1 }, { "q4_0", 2 }, { "q4_1", 3 }, { "q8_0", 7 }, { "q5_0", 8 }, { "q5_1", 9 },
        { "q4_k_m", 15 }, { "q6_k", 18 }, { "iq4_nl", 25 }, { "iq4_xs", 30 }, { "bf16", 32 },
    };
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        if (!strcmp(m[i].name, type)) return m[i].ftype;
    return -1;
}

static void shape_str(wk_shape s, char *out, size_t n)
{
    size_t k = (size_t)snprintf(out, n, "[");
    for (int d = 0; d < s.rank && k < n; d++) k += (size_t)snprintf(out + k, n - k, "%s%" PRId64, d ? ", " : "", s.dims[d]);
    if (k < n) snprintf(out + k, n - k, "]");
}

/* The tensor written for t: the source converted to dt (a new reference). */
static wk_tensor *convert(wk_tensor *src, wk_dtype dt)
{
    wk_dtype from = wk_tensor_dtype(src);
    if (from == dt) return wk_retain(src);
    if (wk_dtype_is_quantized(dt)) {
        wk_tensor *f = wk_dtype_is_quantized(from) ? wk_dequantize(src, WK_F32) : wk_to_dtype(src, WK_F32);
        if (!f) return NULL;
        wk_tensor *q = wk_quantize(f, dt);
        wk_release(f);
        return q;
    }
    if (wk_dtype_is_quantized(from)) {
        if (dt == WK_F32 || dt == WK_F16 || dt == WK_BF16) return wk_dequantize(src, dt);
        wk_tensor *f = wk_dequantize(src, WK_F32);
        if (!f) return NULL;
        wk_tensor *r = wk_to_dtype(f, dt);
        wk_release(f);
        return r;
    }
    return wk_to_dtype(src, dt);
}

int wick_cmd_quantize(int argc, char **argv)
{
    bool quiet = false;
    const char *pos[3];
    int np = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-q")) quiet = true;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            wick_quantize_usage();
            return WICK_EXIT_OK;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "wick quantize: unknown option '%s' (wick quantize --help)\n", argv[i]);
            return WICK_EXIT_USAGE;
        } else if (np == 3) {
            fprintf(stderr, "wick quantize: unexpected argument '%s' (usage: wick quantize [-q] IN OUT TYPE)\n", argv[i]);
            return WICK_EXIT_USAGE;
        } else {
            pos[np++] = argv[i];
        }
    }
    if (np < 3) {
        fprintf(stderr, "wick quantize: %s (usage: wick quantize [-q] IN OUT TYPE)\n",
                np == 0 ? "no input given" : np == 1 ? "no output given" : "no TYPE given");
        return WICK_EXIT_USAGE;
    }
    const char *in = pos[0], *out = pos[1], *type = pos[2];
    bool mix = !strcmp(type, "q4_k_m");
    wk_dtype target = WK_Q4_K;
    if (!mix && (!wk_dtype_from_name(type, &target) ||
                 !(wk_dtype_is_quantized(target) || target == WK_F32 || target == WK_F16 || target == WK_BF16))) {
        fprintf(stderr, "wick quantize: unknown TYPE '%s' (q4_k_m, a GGUF block type such as q4_k or q8_0, "
                        "or f32, f16, bf16)\n", type);
        return WICK_EXIT_USAGE;
    }
    if (!mix && wk_dtype_is_quantized(target)) {
        /* the lattice IQ types (iq3_xxs .. iq1_m) have no quantizer in wick */
        wk_device *c = wk_device_open("cpu");
        const bool ok = c && wk_supports(c, "quantize", target);
        if (c) wk_device_close(c);
        if (!ok) {
            fprintf(stderr, "wick quantize: wick cannot quantize to %s (it reads and runs such files; of the IQ "
                            "types it writes iq4_nl and iq4_xs)\n", type);
            return WICK_EXIT_USAGE;
        }
    }

    wk_gguf *g = NULL;
    wk_safetensors *st = NULL;
    if (wick_cli_is_gguf(in)) g = wk_gguf_open(in);
    else st = wk_safetensors_open(in);
    if (!g && !st) {
        fprintf(stderr, "wick quantize: %s\n", wk_last_error());
        return WICK_EXIT_FAIL;
    }
    int64_t n = g ? wk_gguf_tensor_count(g) : wk_safetensors_tensor_count(st);
    const wk_file_tensor **ts = calloc((size_t)(n ? n : 1), sizeof *ts);
    wk_device *cpu = wk_device_open("cpu");
    wk_gguf_writer *w = wk_gguf_writer_new();
    int rc = WICK_EXIT_FAIL;
    if (!ts || !cpu || !w) {
        fprintf(stderr, "wick quantize: %s\n", !cpu ? wk_last_error() : !w ? wk_last_error() : "out of memory");
        goto done;
    }
    int n_v = 0, n_down = 0;
    bool has_output = false;
    for (int64_t i = 0; i < n; i++) {
        ts[i] = g ? wk_gguf_tensor_info(g, i) : wk_safetensors_tensor_info(st, i);
        cat c = category(ts[i]->name);
        n_v += c == CAT_ATTN_V && quantizable(ts[i]);
        n_down += c == CAT_FFN_DOWN && quantizable(ts[i]);
        has_output |= c == CAT_OUTPUT;
    }
    /* metadata */
    for (int64_t i = 0; g && i < wk_gguf_kv_count(g); i++) {
        const char *k = wk_gguf_kv_key(g, i);
        if (!strcmp(k, "general.file_type") || !strcmp(k, "general.quantization_version")) continue;
        if (wk_gguf_writer_copy_kv(w, g, k) != WK_OK) {
            fprintf(stderr, "wick quantize: %s\n", wk_last_error());
            goto done;
        }
    }
    if (wk_gguf_writer_set_u32(w, "general.quantization_version", 2) != WK_OK ||
        (ftype_of(type) >= 0 && wk_gguf_writer_set_u32(w, "general.file_type", (uint32_t)ftype_of(type)) != WK_OK)) {
        fprintf(stderr, "wick quantize: %s\n", wk_last_error());
        goto done;
    }
    uint64_t bytes_in = 0, bytes_out = 0;
    for (int64_t i = 0; i < n; i++) {
        const wk_file_tensor *t = ts[i];
        if ((unsigned)t->dtype >= WK_DTYPE_COUNT) {
            fprintf(stderr, "wick quantize: %s: tensor '%s' is of type %s, which wick cannot read\n", t->file, t->name,
                    t->type_name);
            goto done;
        }
        wk_dtype dt = t->dtype;
        if (quantizable(t)) {
            cat c = category(t->name);
            dt = target;
            if (mix) {
                /* its place among the tensors of its kind, in llama.cpp's order */
                int place = 0;
                for (int64_t j = 0; (c == CAT_ATTN_V || c == CAT_FFN_DOWN) && j < n; j++)
                    place += j != i && quantizable(ts[j]) && category(ts[j]->name) == c && before(ts[j]->name, t->name);
                if (c == CAT_OUTPUT || (c == CAT_TOKEN_EMBD && !has_output)) dt = WK_Q6_K;
                else if (c == CAT_ATTN_V) dt = use_more_bits(place, n_v) ? WK_Q6_K : WK_Q4_K;
                else if (c == CAT_FFN_DOWN) dt = use_more_bits(place, n_down) ? WK_Q6_K : WK_Q4_K;
                else dt = WK_Q4_K;
                /* llama.cpp: an output matrix whose rows are not whole q6_k blocks is q8_0 */
                if (dt == WK_Q6_K && c != CAT_ATTN_V && c != CAT_FFN_DOWN &&
                    t->shape.dims[t->shape.rank - 1] % 256 != 0)
                    dt = WK_Q8_0;
            }
            dt = fallback(dt, t->shape.dims[t->shape.rank - 1]);
        } else if (t->shape.rank <= 1 && wk_dtype_is_float(dt)) {
            dt = WK_F32;
        } else if (!wk_dtype_ggml_type(dt, NULL)) {
            dt = wk_dtype_is_float(dt) ? WK_F32 : dt;   /* f8e4m3 -> f32; u8/u32 have no GGUF type: refused below */
        }
        wk_tensor *src = wk_file_tensor_load(t, cpu);
        if (!src) {
            fprintf(stderr, "wick quantize: %s\n", wk_last_error());
            goto done;
        }
        wk_clear_error();
        wk_tensor *o = convert(src, dt);
        wk_release(src);
        if (!o) {
            fprintf(stderr, "wick quantize: tensor '%s' (%s) to %s: %s\n", t->name, t->type_name, wk_dtype_name(dt),
                    wk_last_error());
            goto done;
        }
        wk_status s = wk_gguf_writer_add_tensor(w, t->name, o);
        uint64_t nb = wk_tensor_nbytes(o);
        wk_release(o);
        if (s != WK_OK) {
            fprintf(stderr, "wick quantize: %s\n", wk_last_error());
            goto done;
        }
        bytes_in += t->nbytes;
        bytes_out += nb;
        if (!quiet) {
            char sh[96];
            shape_str(t->shape, sh, sizeof sh);
            printf("[%*" PRId64 "/%" PRId64 "] %-40s %-20s %-6s -> %s\n", n > 999 ? 4 : 3, i + 1, n, t->name, sh,
                   wk_dtype_name(t->dtype), wk_dtype_name(dt));
            fflush(stdout);
        }
    }
    if (wk_gguf_writer_write(w, out) != WK_OK) {
        fprintf(stderr, "wick quantize: %s\n", wk_last_error());
        goto done;
    }
    printf("%s: %" PRId64 " tensors, %.2f MB -> %.2f MB (%s)\n", out, n, (double)bytes_in / 1e6,
           (double)bytes_out / 1e6, type);
    rc = WICK_EXIT_OK;
done:
    wk_gguf_writer_free(w);
    free(ts);
    wk_gguf_close(g);
    wk_safetensors_close(st);
    if (cpu) wk_device_close(cpu);
    return rc;
}
