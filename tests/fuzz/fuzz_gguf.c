/* fuzz_gguf.c — libFuzzer harness for GGUF files: the input is a file.
 * It is opened with wk_gguf_open (through an in-memory file), every
 * metadata value is read back through the public getters (scalars,
 * strings, arrays, arrays of arrays), every tensor info is checked to lie
 * inside the file, the tensors of at most 1 MiB are loaded onto the cpu,
 * a tokenizer is built from tokenizer.ggml.* and run, and the file is
 * loaded as a language model (wk_llm_load, 16 positions) that evaluates
 * two tokens and greedily decodes their text. Any crash, sanitizer report
 * or broken promise (FZ_CHECK) is a finding; errors are fine.
 * Corpus: tests/fuzz/corpus/gguf/.
 */
#include "fuzz_util.h"
#include "wick_formats.h"
#include "wick_llm.h"
#include "wick_tokenizer.h"

static fz_file file;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fz_dev();
    fz_file_init(&file, "fuzz.gguf");
    return 0;
}

/* every element of an array value, arrays of arrays recursively */
static void walk_array(const wk_gguf_value *v, int depth)
{
    const wk_gguf_type et = wk_gguf_array_type(v);
    const uint64_t n = wk_gguf_array_len(v);
    FZ_CHECK(et < WK_GGUF_TYPE_COUNT, "an array value has element type %d", (int)et);
    FZ_CHECK(depth < 64, "arrays nested %d deep", depth);
    for (uint64_t j = 0; j < n && j <= 256; j++) {   /* long arrays: the first 256 and the last */
        const uint64_t i = j < 256 ? j : n - 1;
        int64_t iv;
        uint64_t uv;
        double dv;
        bool bv;
        size_t len = 0;
        switch (et) {
        case WK_GGUF_STRING: {
            const char *s = wk_gguf_array_str(v, i, &len);
            FZ_CHECK(s != NULL && s[len] == 0, "string %llu of an array", (unsigned long long)i);
            break;
        }
        case WK_GGUF_ARRAY: {
            const wk_gguf_value *a = wk_gguf_array_at(v, i);
            FZ_CHECK(a != NULL, "array %llu of an array of arrays", (unsigned long long)i);
            walk_array(a, depth + 1);
            break;
        }
        case WK_GGUF_F32:
        case WK_GGUF_F64: FZ_CHECK(wk_gguf_array_float(v, i, &dv), "float element"); break;
        case WK_GGUF_BOOL: FZ_CHECK(wk_gguf_array_bool(v, i, &bv), "bool element"); break;
        default:
            (void)wk_gguf_array_int(v, i, &iv);
            (void)wk_gguf_array_uint(v, i, &uv);
            (void)wk_gguf_array_float(v, i, &dv);
            break;
        }
    }
    FZ_CHECK(!wk_gguf_array_at(v, n), "an element past the end of an array");
    FZ_CHECK(!wk_gguf_array_str(v, n, NULL), "a string past the end of an array");
    if (n && et != WK_GGUF_STRING && et != WK_GGUF_ARRAY) FZ_CHECK(wk_gguf_array_data(v) != NULL, "array data");
}

static void walk_gguf(const wk_gguf *g)
{
    const uint64_t fsize = wk_gguf_file_size(g);
    const int64_t nkv = wk_gguf_kv_count(g);
    FZ_CHECK(nkv >= 0, "metadata count %lld", (long long)nkv);
    for (int64_t i = 0; i < nkv; i++) {
        const char *k = wk_gguf_kv_key(g, i);
        const wk_gguf_value *v = wk_gguf_kv_value(g, i);
        FZ_CHECK(k && v, "pair %lld", (long long)i);
        (void)wk_gguf_find(g, k);   /* a key with a NUL inside may be another's or none */
        int64_t iv;
        uint64_t uv;
        double dv;
        bool bv;
        size_t len;
        (void)wk_gguf_value_int(v, &iv);
        (void)wk_gguf_value_uint(v, &uv);
        (void)wk_gguf_value_float(v, &dv);
        (void)wk_gguf_value_bool(v, &bv);
        const char *s = wk_gguf_value_str(v, &len);
        if (s) FZ_CHECK(s[len] == 0, "a string value is not NUL-terminated");
        if (wk_gguf_value_type(v) == WK_GGUF_ARRAY) walk_array(v, 0);
        (void)wk_gguf_get_int(g, k, &iv);
        (void)wk_gguf_get_float(g, k, &dv);
        const char *gs;
        (void)wk_gguf_get_str(g, k, &gs, &len);
    }
    const int64_t nt = wk_gguf_tensor_count(g);
    for (int64_t i = 0; i < nt; i++) {
        const wk_file_tensor *t = wk_gguf_tensor_info(g, i);
        FZ_CHECK(t && t->name, "tensor info %lld", (long long)i);
        FZ_CHECK(t->shape.rank >= 0 && t->shape.rank <= 4, "tensor '%s' has rank %d", t->name, t->shape.rank);
        FZ_CHECK(t->offset <= fsize && t->nbytes <= fsize - t->offset,
                 "tensor '%s': %llu bytes at %llu pass the %llu-byte file", t->name, (unsigned long long)t->nbytes,
                 (unsigned long long)t->offset, (unsigned long long)fsize);
        FZ_CHECK(wk_gguf_tensor_index(g, t->name) == i, "tensor '%s' is not found under its name", t->name);
        if (t->dtype != WK_DTYPE_COUNT && t->nbytes <= (1u << 20)) {
            wk_clear_error();
            wk_tensor *x = wk_gguf_tensor(g, t->name, fz_dev());
            if (x) FZ_CHECK(wk_tensor_nbytes(x) == t->nbytes, "tensor '%s' loaded with another size", t->name);
            else fz_check_error("wk_gguf_tensor");
            wk_release(x);
        }
    }
    FZ_CHECK(wk_gguf_tensor_info(g, nt) == NULL, "a tensor info past the end");
}

static void run_tokenizer(const wk_tokenizer *tok)
{
    static const char text[] = "Hello world! <s> 12345 \xe2\x96\x81\xc3\xa9\xf0\x9f\x98\x80 \xff\xfe end\n";
    int32_t *ids = NULL;
    int64_t n = 0;
    if (wk_tokenizer_encode(tok, text, sizeof text - 1, WK_TOK_ADD_SPECIAL | WK_TOK_PARSE_SPECIAL, &ids, &n) == WK_OK) {
        char *out = NULL;
        size_t len = 0;
        if (wk_tokenizer_decode(tok, ids, n, 0, &out, &len) == WK_OK) FZ_CHECK(out && out[len] == 0, "decode");
        free(out);
    }
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fz_file_set(&file, data, size);
    wk_clear_error();
    wk_gguf *g = wk_gguf_open(path);
    if (!g) {
        fz_check_error("wk_gguf_open");
        return 0;
    }
    walk_gguf(g);
    wk_tokenizer *tok = wk_tokenizer_from_gguf(g);
    if (tok) run_tokenizer(tok);
    wk_tokenizer_free(tok);
    wk_gguf_close(g);

    /* the file as a model: small context, two tokens */
    wk_llm_options o = { .context = 16, .progress = WK_PROGRESS_OFF };
    wk_clear_error();
    wk_llm *m = wk_llm_load(path, fz_dev(), &o);
    if (!m) {
        fz_check_error("wk_llm_load");
        return 0;
    }
    const wk_llm_info *info = wk_llm_get_info(m);
    FZ_CHECK(info && info->n_vocab > 0, "a model loaded without a vocabulary");
    if (info->n_vocab <= (1 << 20)) {
        float *logits = malloc((size_t)info->n_vocab * sizeof *logits);
        FZ_CHECK(logits != NULL, "out of memory");
        const int32_t toks[2] = { 0, (int32_t)(info->n_vocab - 1) };
        if (wk_llm_eval(m, toks, 2, false, logits) == WK_OK) {
            size_t len;
            (void)wk_llm_token_text(m, toks[1], &len);
            (void)wk_llm_is_eog(m, toks[1]);
        } else {
            fz_check_error("wk_llm_eval");
        }
        free(logits);
    }
    int32_t *ids = NULL;
    int64_t n = 0;
    if (wk_llm_tokenize(m, "Hi there", 8, true, &ids, &n) == WK_OK) free(ids);
    wk_llm_free(m);
    return 0;
}
