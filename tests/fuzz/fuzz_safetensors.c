/* fuzz_safetensors.c — libFuzzer harness for a safetensors model: the
 * input is up to three parts cut at the line "#WICK-FUZZ#": config.json,
 * then model.safetensors, then (optional) tokenizer_config.json; an input
 * without the separator is the safetensors file alone, with the config
 * "{}". The parts are written into a temporary folder, which is opened as
 * a safetensors file (header, metadata, every tensor info checked to lie
 * inside the file, the tensors of at most 1 MiB loaded onto the cpu), as
 * a model file (config.json read through the config getters) and as a
 * language model (wk_llm_load, 16 positions, two tokens evaluated). Any
 * crash, sanitizer report or broken promise (FZ_CHECK) is a finding;
 * errors are fine. Corpus: tests/fuzz/corpus/safetensors/.
 */
#include <sys/stat.h>
#include "fuzz_util.h"
#include "wick_formats.h"
#include "wick_llm.h"

#define SEP "\n#WICK-FUZZ#\n"

static char dir[256], p_cfg[300], p_st[300], p_tcfg[300];

static void cleanup(void)
{
    unlink(p_cfg), unlink(p_st), unlink(p_tcfg);
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fz_dev();
    struct stat sb;
    const char *base = stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode) ? "/dev/shm" : "/tmp";
    snprintf(dir, sizeof dir, "%s/wick-fuzz-st-XXXXXX", base);
    FZ_CHECK(mkdtemp(dir) != NULL, "mkdtemp %s failed", dir);
    snprintf(p_cfg, sizeof p_cfg, "%s/config.json", dir);
    snprintf(p_st, sizeof p_st, "%s/model.safetensors", dir);
    snprintf(p_tcfg, sizeof p_tcfg, "%s/tokenizer_config.json", dir);
    atexit(cleanup);
    return 0;
}

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    FZ_CHECK(f != NULL, "cannot write %s", path);
    FZ_CHECK(fwrite(p, 1, n, f) == n, "cannot write %s", path);
    fclose(f);
}

static void walk(const wk_safetensors *s)
{
    for (int64_t i = 0; i < wk_safetensors_meta_count(s); i++) {
        const char *k = wk_safetensors_meta_key(s, i), *v = wk_safetensors_meta_value(s, i);
        FZ_CHECK(k && v, "metadata %lld", (long long)i);
        FZ_CHECK(wk_safetensors_meta(s, k) != NULL, "metadata key '%s' not found", k);
    }
    const int64_t n = wk_safetensors_tensor_count(s);
    for (int64_t i = 0; i < n; i++) {
        const wk_file_tensor *t = wk_safetensors_tensor_info(s, i);
        FZ_CHECK(t && t->name && t->file, "tensor info %lld", (long long)i);
        struct stat sb;
        FZ_CHECK(stat(t->file, &sb) == 0, "tensor '%s': its file", t->name);
        const uint64_t fsize = (uint64_t)sb.st_size;
        FZ_CHECK(t->offset <= fsize && t->nbytes <= fsize - t->offset,
                 "tensor '%s': %llu bytes at %llu pass the %llu-byte file", t->name, (unsigned long long)t->nbytes,
                 (unsigned long long)t->offset, (unsigned long long)fsize);
        FZ_CHECK(t->shape.rank >= 0 && t->shape.rank <= WK_MAX_RANK, "tensor '%s': rank %d", t->name, t->shape.rank);
        if (strlen(t->name) && wk_safetensors_tensor_index(s, t->name) >= 0 && t->dtype != WK_DTYPE_COUNT &&
            t->nbytes <= (1u << 20)) {
            wk_clear_error();
            wk_tensor *x = wk_file_tensor_load(t, fz_dev());
            if (x) FZ_CHECK(wk_tensor_nbytes(x) == t->nbytes, "tensor '%s' loaded with another size", t->name);
            else fz_check_error("wk_file_tensor_load");
            wk_release(x);
        }
    }
    FZ_CHECK(wk_safetensors_tensor_info(s, n) == NULL, "a tensor info past the end");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_part parts[3];
    int np = fz_split(data, size, SEP, parts, 3);
    if (np == 1) {
        write_file(p_cfg, "{}", 2);
        write_file(p_st, parts[0].p, parts[0].n);
    } else {
        write_file(p_cfg, parts[0].p, parts[0].n);
        write_file(p_st, parts[1].p, parts[1].n);
    }
    if (np == 3) write_file(p_tcfg, parts[2].p, parts[2].n);
    else unlink(p_tcfg);

    wk_clear_error();
    wk_safetensors *s = wk_safetensors_open(p_st);
    if (!s) {
        fz_check_error("wk_safetensors_open");
        return 0;
    }
    walk(s);
    wk_safetensors_close(s);

    wk_clear_error();
    wk_model_file *mf = wk_model_file_open(dir);
    if (!mf) {
        fz_check_error("wk_model_file_open");
        return 0;
    }
    const wk_json *cfg = wk_model_file_config(mf);
    FZ_CHECK(cfg != NULL && wk_json_kind(cfg) == WK_JSON_OBJECT, "a model file without its config object");
    static const char *const keys[] = { "vocab_size", "hidden_size", "num_hidden_layers", "rope_scaling.factor",
                                        "model_type", "tie_word_embeddings", "torch_dtype" };
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        int64_t iv = 0;
        double dv = 0;
        bool bv = false;
        const char *sv = NULL;
        (void)wk_config_int(cfg, keys[i], false, &iv);
        (void)wk_config_float(cfg, keys[i], false, &dv);
        (void)wk_config_bool(cfg, keys[i], false, &bv);
        (void)wk_config_str(cfg, keys[i], false, &sv);
    }
    (void)wk_model_file_tokenizer_config(mf);
    for (int64_t i = 0; i < wk_model_file_tensor_count(mf); i++) {
        const wk_file_tensor *t = wk_model_file_tensor_info(mf, i);
        FZ_CHECK(t != NULL, "model file tensor %lld", (long long)i);
        (void)wk_model_file_find(mf, t->name);
    }
    wk_model_file_close(mf);

    wk_llm_options o = { .context = 16, .progress = WK_PROGRESS_OFF };
    wk_clear_error();
    wk_llm *m = wk_llm_load(dir, fz_dev(), &o);
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
        if (wk_llm_eval(m, toks, 2, false, logits) != WK_OK) fz_check_error("wk_llm_eval");
        free(logits);
    }
    wk_llm_free(m);
    return 0;
}
