"""wick.model — the place for bindings of wick's model layer: model files
(include/wick_model.h: GGUF and safetensors), tokenizers
(include/wick_tokenizer.h) and language models (include/wick_llm.h:
loading, chat formats, sampling, and a generate iterator that yields text
as it comes).

Nothing is bound here yet. Bindings go in this module (Python) and in
python/src/ (C functions calling wick_model.h, registered by _wick.c),
following the conventions of the tensor bindings: errors as exceptions
with the layer's message (wk_model_last_error and its kin), the GIL released during
long calls, tensors returned as wick.Tensor.
"""
__all__ = []
