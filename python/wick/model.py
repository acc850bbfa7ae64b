"""wick.model — language models and tokenizers (include/wick_llm.h,
include/wick_tokenizer.h): load a GGUF file or a safetensors model, tokenize,
format chats, get logits, and generate text as it comes.

    >>> import wick
    >>> m = wick.load_model("SmolLM2-135M-Instruct.Q4_1.gguf")      # or load_model() for the default model
    >>> for piece in m.generate("What is 2 + 2?", chat=True, max_tokens=64, temperature=0):
    ...     print(piece, end="", flush=True)
    >>> m.tokenize("Hello")                      # ids, BOS as the model says
    >>> m.logits("The capital of France is")     # f32 Tensor [n_vocab]

Generation runs the C library's own loop (sampling, end tokens, stop
strings, whole UTF-8 characters) on a thread of its own without the GIL,
one token ahead of the consumer at most. A model takes one call at a time:
starting another call on it while a generation is unfinished closes that
generation first.

Many sequences at once: the batched engine (include/wick_engine.h) over a
model, requests from any thread or from asyncio, each an iterator of its
text as it comes:

    >>> with wick.Engine(m) as e:
    ...     a = e.submit("Why is the sky blue?", chat=True, max_tokens=64)
    ...     b = e.submit([{"role": "user", "content": "Name a colour."}], temperature=0.8, seed=1)
    ...     for piece in a:
    ...         print(piece, end="")
    ...     b.result(), b.finish_reason, b.tokens
"""
import os

from ._wick import (  # noqa: F401
    Engine,
    EngineRequest,
    Generation,
    Model,
    Tokenizer,
    TokenStream,
    chat_apply,
    chat_format_detect,
)

DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def cache_dir():
    """The folder `wick run` and tools/fetch-default-model.sh keep models in:
    $WICK_CACHE, else $XDG_CACHE_HOME/wick, else ~/.cache/wick."""
    e = os.environ.get("WICK_CACHE")
    if e:
        return e
    e = os.environ.get("XDG_CACHE_HOME")
    if e:
        return os.path.join(e, "wick")
    return os.path.join(os.path.expanduser("~"), ".cache", "wick")


def default_model_path():
    """Where the default model (SmolLM2-135M-Instruct, Q4_1 GGUF) lies in the
    cache, whether or not it is there (tools/fetch-default-model.sh fetches
    it)."""
    return os.path.join(cache_dir(), DEFAULT_MODEL_FILE)


def load_model(path=None, device=None, dtype="f32", *, context=0, prefill_chunk=0, dequantize=False,
               progress=False, comm=None):
    """A Model from a GGUF file or a safetensors model (a .safetensors file or
    index with config.json beside it, or their folder). path None or
    'smollm2': the default model in the cache (as `wick run`). device: 'cpu',
    'cuda:0', 'rocm:0', ...; dtype: the activations and KV cache, 'f32' or
    'bf16'; context: the KV cache's positions (0: the model's, at most 4096);
    dequantize: decode block-quantized weights once at load instead of
    multiplying them as they are; progress: a loading bar on stderr; comm: a
    wick.Comm, to load this rank's share of a model split over its ranks
    (tensor parallel: every rank loads and runs the same calls, each from
    its own thread; device then defaults to the comm's)."""
    if path is None or path == "smollm2":
        path = default_model_path()
        if not os.path.exists(path):
            raise FileNotFoundError(
                "the default model is not at %s: run tools/fetch-default-model.sh from wick's source" % path)
    if device is None and comm is None:
        device = "cpu"
    return Model(os.fspath(path), device=device, dtype=dtype, context=context, prefill_chunk=prefill_chunk,
                 dequantize=dequantize, progress=progress, comm=comm)


async def _engine_anext(request):
    """EngineRequest.__anext__: the next piece of text, waiting in the event
    loop (the request's pipe, readable when text comes or it ends) rather
    than in a thread; one consumer at a time."""
    import asyncio

    loop = asyncio.get_running_loop()
    while True:
        piece = request._poll()
        if piece is None:
            raise StopAsyncIteration
        if piece:
            return piece
        fd = request._fileno()
        woke = loop.create_future()
        loop.add_reader(fd, _wake, woke)
        try:
            await woke
        finally:
            loop.remove_reader(fd)


def _wake(future):
    if not future.done():
        future.set_result(None)


__all__ = ["Model", "Generation", "Engine", "EngineRequest", "Tokenizer", "TokenStream", "load_model", "chat_apply",
           "chat_format_detect", "default_model_path", "cache_dir", "DEFAULT_MODEL_FILE"]
