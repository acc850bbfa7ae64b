/* arch.c — the registry of architectures: each one's descriptor (its
 * names in files, its defaults, its hyperparameter readers, its table of
 * layer tensors and its layer function) lives in its own file (llama.c,
 * qwen.c, gemma3.c, phi3.c, mixtral.c, qwen_moe.c, olmoe.c); this file finds one by the name a file gives.
 * Adding an architecture: its file, one line in `archs` below, one
 * wk_llm_arch value (include/wick_llm.h) and its tests
 * (docs/architecture.md). */
#include <stdio.h>
#include "llm_internal.h"

static const llm_arch_desc *const archs[] = { &llm_llama,   &llm_qwen2,    &llm_qwen3,    &llm_gemma3, &llm_phi3,
                                              &llm_mixtral, &llm_qwen2moe, &llm_qwen3moe, &llm_olmoe };
_Static_assert(sizeof archs / sizeof archs[0] == WK_LLM_ARCH_COUNT, "one descriptor per wk_llm_arch");

const char *wk_llm_arch_name(wk_llm_arch a)
{
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (archs[i]->arch == a) return archs[i]->name;
    return "?";
}

static const llm_arch_desc *by_name(const char *name, bool hf)
{
    for (size_t i = 0; name && i < sizeof archs / sizeof archs[0]; i++)
        for (const char *const *n = hf ? archs[i]->hf_types : archs[i]->gguf_archs; *n; n++)
            if (!strcmp(*n, name)) return archs[i];
    return NULL;
}

const llm_arch_desc *llm_arch_by_gguf(const char *name) { return by_name(name, false); }
const llm_arch_desc *llm_arch_by_hf(const char *model_type) { return by_name(model_type, true); }

const char *llm_arch_list(bool hf)
{
    static _Thread_local char buf[256];
    int k = 0;
    buf[0] = 0;
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        for (const char *const *n = hf ? archs[i]->hf_types : archs[i]->gguf_archs; *n && k >= 0 && k < (int)sizeof buf;
             n++)
            k += snprintf(buf + k, sizeof buf - (size_t)k, "%s%s", k ? ", " : "", *n);
    return buf;
}
