/* llm_config_check.h — the loader's list of every config.json field and
 * GGUF key that changes a model's computation, with what wick does with
 * each: read (hparams.c or the architecture's file implements it), ignored (the reference ignores it
 * too: transformers for config.json, llama.cpp's loader for GGUF), or
 * refused at load with a message naming the file, the key and its value.
 * The readers call these first; docs/model-config.md is the same list in
 * prose. Written against the public headers only (tools/check-layers). */
#ifndef WICK_LLM_CONFIG_CHECK_H
#define WICK_LLM_CONFIG_CHECK_H

#include <stdbool.h>
#include <stdint.h>
#include "wick_llm.h"
#include "wick_formats.h"

/* config.json of a safetensors model whose model_type maps to arch:
 * WK_OK, or the model layer's error naming the key (WK_ERR_UNSUPPORTED
 * for what wick does not run, WK_ERR_IO for what the reference cannot
 * load either). */
wk_status llm_check_config(const wk_json *config, wk_llm_arch arch);

/* The metadata and tensor names of a GGUF file whose
 * general.architecture is arch_name (read as arch); llm_gguf_check.c. */
wk_status llm_check_gguf(const wk_gguf *g, const char *arch_name, wk_llm_arch arch);

/* The message of both: "<file>: <key> is <value>: <why>" (the model
 * layer's error), st returned. */
wk_status llm_check_refuse(wk_status st, const char *file, const char *key, const char *value, const char *why);

/* GGUF gemma3, after llm_check_gguf: whether layer l attends through the
 * window, as llama.cpp's gemma3 reads it (src/models/gemma3.cpp,
 * load_swa_pattern): {arch}.attention.sliding_window_pattern, a bool per
 * layer or a period n (layer l slides when n == 0 or l % n < n - 1; 6
 * when absent). The caller applies it only when the file has a window. */
bool llm_gguf_layer_sliding(const wk_gguf *g, const char *arch_name, int64_t l);

#endif /* WICK_LLM_CONFIG_CHECK_H */
