#!/usr/bin/env python3
"""gen_model_files.py — the model-file fixtures of tests/test_model_files.c,
made by the formats' own Python packages, and the check of wick's GGUF
writer against the gguf package.

  python3 tools/gen_model_files.py            writes tests/data/model_files/
                                              and tests/data/model_files_expect.h
  python3 tools/gen_model_files.py --check-writer build/wick-tests [build/wick]
                                              runs wick's writer cases, which
                                              keep their files, and reads them
                                              back with the gguf package

Fixtures (small; every byte of tensor data is random from fixed seeds):
  types.gguf        GGUF v3 written by gguf.GGUFWriter: a value of every
                    metadata type, arrays of every element type, arrays of
                    arrays (strings and three deep), alignment 64, tensors of
                    every dense type GGUF has (I8 is one wick lacks), every
                    GGUF block type of wick's wk_dtype but Q8_1 (the gguf
                    package sizes its blocks at 40 bytes, ggml at 36) and two
                    types wick lacks (IQ2_XXS, IQ4_NL)
  small.gguf        a small v3 file, default alignment (truncation, flips)
  small_v2.gguf     the same bytes with version 2 (v2 and v3 differ only
                    in the number for little-endian files)
  mix.gguf          8 llama-named f16 layers for `wick quantize ... q4_k_m`
                    (tests/cli/test_cli.sh)
  types.safetensors every safetensors dtype, a scalar, an empty tensor and
                    __metadata__, written by safetensors.serialize_file
  sharded/          model-0000{1,2}-of-00002.safetensors, the index and a
                    config.json (NaN in it, as Python's json writes)
  folder/           model.safetensors alone

model_files_expect.h holds what the packages read back (GGUFReader;
safetensors.safe_open and deserialize): per tensor its name, type, shape,
absolute data offset, byte count and the FNV-1a 64 hash of its bytes.
Needs numpy, gguf (0.19) and safetensors.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import gguf
from gguf import GGUFWriter, GGUFReader, GGUFValueType as VT, GGMLQuantizationType as QT
import safetensors

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "model_files")
HDR = os.path.join(ROOT, "tests", "data", "model_files_expect.h")


def fnv64(b):
    h = 0xcbf29ce484222325
    for x in bytes(b):
        h ^= x
        h = (h * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


# ---- GGUF ---------------------------------------------------------------------

# the metadata of types.gguf; tests/test_model_files.c checks the same values
def add_all_values(w):
    w.add_uint8("test.u8", 200)
    w.add_int8("test.i8", -100)
    w.add_uint16("test.u16", 60000)
    w.add_int16("test.i16", -30000)
    w.add_uint32("test.u32", 4000000000)
    w.add_int32("test.i32", -2000000000)
    w.add_float32("test.f32", 0.15625)
    w.add_float32("test.f32_inexact", 1.1)
    w.add_bool("test.bool", True)
    w.add_bool("test.bool_false", False)
    w.add_string("test.string", "h\u00e9llo w\u00f6rld \u2713")
    w.add_key_value("test.string_empty", "", VT.STRING)   # add_string skips empty strings
    w.add_key_value("test.string_nul", "a\x00b", VT.STRING)
    w.add_uint64("test.u64", 2**64 - 1)
    w.add_int64("test.i64", -2**63)
    w.add_float64("test.f64", 3.141592653589793)
    w.add_key_value("test.arr.u8", [0, 1, 255], VT.ARRAY, VT.UINT8)
    w.add_key_value("test.arr.i8", [-128, 0, 127], VT.ARRAY, VT.INT8)
    w.add_key_value("test.arr.u16", [0, 65535], VT.ARRAY, VT.UINT16)
    w.add_key_value("test.arr.i16", [-32768, 32767], VT.ARRAY, VT.INT16)
    w.add_key_value("test.arr.u32", [0, 4294967295], VT.ARRAY, VT.UINT32)
    w.add_key_value("test.arr.i32", [-2147483648, 2147483647], VT.ARRAY, VT.INT32)
    w.add_key_value("test.arr.f32", [0.5, -2.25, float("inf")], VT.ARRAY, VT.FLOAT32)
    w.add_key_value("test.arr.bool", [True, False, True], VT.ARRAY, VT.BOOL)
    w.add_key_value("test.arr.str", ["a", "", "\u00fcn\u00ef", "x y"], VT.ARRAY, VT.STRING)
    w.add_key_value("test.arr.u64", [0, 2**64 - 1], VT.ARRAY, VT.UINT64)
    w.add_key_value("test.arr.i64", [-2**63, 2**63 - 1], VT.ARRAY, VT.INT64)
    w.add_key_value("test.arr.f64", [1e300, -0.0], VT.ARRAY, VT.FLOAT64)
    w.add_key_value("test.arr.nested", [[1, 2, 3], [4]], VT.ARRAY)
    w.add_key_value("test.arr.nested_str", [["a", "b"], ["c"]], VT.ARRAY)
    w.add_key_value("test.arr.nested3", [[[1], [2, 3]], [[4]]], VT.ARRAY)


DENSE = [  # name, numpy dtype or (raw type, bytes per element), shape
    ("t.f32", np.float32, (3, 5)),
    ("t.f16", np.float16, (2, 3, 4)),
    ("t.bf16", (QT.BF16, 2), (7,)),
    ("t.f64", np.float64, (2, 2)),
    ("t.i8", np.int8, (5,)),
    ("t.i16", np.int16, (3,)),
    ("t.i32", np.int32, (4,)),
    ("t.i64", np.int64, (2,)),
    ("t.f32_4d", np.float32, (2, 1, 3, 2)),
]
BLOCKS = [QT.Q4_0, QT.Q4_1, QT.Q5_0, QT.Q5_1, QT.Q8_0, QT.Q2_K, QT.Q3_K, QT.Q4_K, QT.Q5_K, QT.Q6_K, QT.Q8_K,
          QT.IQ2_XXS, QT.IQ4_NL, QT.IQ4_XS, QT.IQ3_XXS, QT.IQ3_S, QT.IQ2_XS, QT.IQ2_S, QT.IQ1_S, QT.IQ1_M]


def random_array(rng, dt, shape):
    if isinstance(dt, tuple):
        n = int(np.prod(shape)) * dt[1]
        return rng.integers(0, 256, size=shape[:-1] + (shape[-1] * dt[1],), dtype=np.uint8), dt[0]
    if np.issubdtype(dt, np.floating):
        return rng.standard_normal(shape).astype(dt), None
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True), None


def write_types_gguf(path):
    rng = np.random.default_rng(1401)
    w = GGUFWriter(path, "llama")
    w.add_name("wick test fixture")
    w.add_custom_alignment(64)
    add_all_values(w)
    for name, dt, shape in DENSE:
        a, raw = random_array(rng, dt, shape)
        w.add_tensor(name, a, raw_dtype=raw)
    for qt in BLOCKS:
        block, nbytes = gguf.constants.GGML_QUANT_SIZES[qt]
        rows = 2 if block == 256 else 3
        cols = block * (1 if block == 256 else 2)
        a = rng.integers(0, 256, size=(rows, cols // block * nbytes), dtype=np.uint8)
        w.add_tensor("t." + qt.name.lower(), a, raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_small_gguf(path):
    rng = np.random.default_rng(1402)
    w = GGUFWriter(path, "llama")
    w.add_uint32("llama.context_length", 2048)
    w.add_key_value("tokenizer.ggml.tokens", ["<s>", "</s>", "hi"], VT.ARRAY, VT.STRING)
    w.add_key_value("tokenizer.ggml.scores", [0.0, -1.5, 2.0], VT.ARRAY, VT.FLOAT32)
    w.add_key_value("test.nested", [[1, 2], [3]], VT.ARRAY)
    w.add_tensor("a.f32", rng.standard_normal((2, 3)).astype(np.float32))
    w.add_tensor("b.q4_0", rng.integers(0, 256, size=(1, 18), dtype=np.uint8), raw_dtype=QT.Q4_0)
    w.add_tensor("c.f16", rng.standard_normal((4,)).astype(np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_mix_gguf(path):
    """8 llama-named layers (stored in name order) for the q4_k_m mix of wick quantize."""
    rng = np.random.default_rng(1408)
    w = GGUFWriter(path, "llama")
    w.add_uint32("llama.block_count", 8)
    w.add_tensor("token_embd.weight", rng.standard_normal((4, 256)).astype(np.float16))
    for i in sorted(range(8), key=str):
        w.add_tensor(f"blk.{i}.attn_norm.weight", rng.standard_normal(256).astype(np.float16))
        w.add_tensor(f"blk.{i}.attn_v.weight", rng.standard_normal((1, 256)).astype(np.float16))
        w.add_tensor(f"blk.{i}.ffn_down.weight", rng.standard_normal((1, 256)).astype(np.float16))
    w.add_tensor("output.weight", rng.standard_normal((4, 256)).astype(np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def gguf_expect(path):
    r = GGUFReader(path)
    out = []
    for t in r.tensors:
        ne = [int(x) for x in t.shape]     # innermost first
        data = bytes(np.asarray(t.data).tobytes())
        out.append(dict(name=t.name, type=int(t.tensor_type), dims=list(reversed(ne)), offset=int(t.data_offset),
                        nbytes=int(t.n_bytes), hash=fnv64(data)))
        assert len(data) == t.n_bytes
    return dict(alignment=int(r.alignment), data_offset=int(r.data_offset), n_kv=len(r.fields), tensors=out)


# ---- safetensors ----------------------------------------------------------------

ST_DTYPES = [  # dtype, bytes, shape
    ("BOOL", 1, [5]), ("U8", 1, [3, 2]), ("I8", 1, [4]), ("I16", 2, [2, 2]), ("U16", 2, [3]), ("I32", 4, [3]),
    ("U32", 4, [2]), ("I64", 8, [2]), ("U64", 8, [2]), ("F16", 2, [2, 3]), ("BF16", 2, [3]), ("F32", 4, [2, 2, 2]),
    ("F64", 8, [2]), ("F8_E4M3", 1, [4]), ("F8_E5M2", 1, [4]),
]


ST_NAMES = {"BOOL": "bool", "U8": "uint8", "I8": "int8", "I16": "int16", "U16": "uint16", "I32": "int32",
            "U32": "uint32", "I64": "int64", "U64": "uint64", "F16": "float16", "BF16": "bfloat16", "F32": "float32",
            "F64": "float64", "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2"}


def st_tensor(rng, dtype, size, shape):
    n = int(np.prod(shape)) if shape else 1
    if dtype == "BOOL":
        data = rng.integers(0, 2, size=n, dtype=np.uint8).tobytes()
    else:
        data = rng.integers(0, 256, size=n * size, dtype=np.uint8).tobytes()
    return {"dtype": dtype, "shape": shape, "data": data}


def st_write(tensors, path, metadata=None):
    """safetensors.serialize_file of raw bytes (TensorSpec points at them)."""
    keep, specs = [], {}
    for k, v in tensors.items():
        buf = np.frombuffer(v["data"], dtype=np.uint8).copy() if v["data"] else np.zeros(1, np.uint8)
        keep.append(buf)
        specs[k] = safetensors.TensorSpec(dtype=ST_NAMES[v["dtype"]], shape=list(v["shape"]), data_ptr=buf.ctypes.data,
                                          data_len=len(v["data"]))
    safetensors.serialize_file(specs, path, metadata=metadata)
    os.chmod(path, 0o644)


def write_types_st(path):
    rng = np.random.default_rng(1403)
    t = {}
    for dt, size, shape in ST_DTYPES:
        t["st." + dt.lower()] = st_tensor(rng, dt, size, shape)
    t["st.scalar"] = st_tensor(rng, "F32", 4, [])
    t["st.empty"] = {"dtype": "F32", "shape": [0, 3], "data": b""}
    st_write(t, path, metadata={"format": "pt", "note": "h\u00e9llo"})


def write_sharded(folder):
    rng = np.random.default_rng(1404)
    os.makedirs(folder, exist_ok=True)
    shards = {
        "model-00001-of-00002.safetensors": {
            "model.embed.weight": st_tensor(rng, "BF16", 2, [4, 8]),
            "model.norm.weight": st_tensor(rng, "F32", 4, [8]),
        },
        "model-00002-of-00002.safetensors": {
            "lm_head.weight": st_tensor(rng, "F16", 2, [4, 8]),
        },
    }
    weight_map = {}
    total = 0
    for fn, ts in shards.items():
        st_write(ts, os.path.join(folder, fn), metadata={"format": "pt"})
        for k, v in ts.items():
            weight_map[k] = fn
            total += len(v["data"])
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}, f, indent=2)
    cfg = {"architectures": ["LlamaForCausalLM"], "hidden_size": 8, "num_hidden_layers": 1, "rms_norm_eps": 1e-05,
           "rope_scaling": {"factor": 8.0, "rope_type": "llama3"}, "tie_word_embeddings": False,
           "torch_dtype": "bfloat16", "max_position_embeddings": 131072, "attn_logit_softcapping": None,
           "initializer_range": float("nan")}
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)   # Python writes NaN as NaN


def write_folder(folder):
    rng = np.random.default_rng(1405)
    os.makedirs(folder, exist_ok=True)
    st_write({"w": st_tensor(rng, "F32", 4, [2, 2])}, os.path.join(folder, "model.safetensors"))


def st_expect(paths):
    out = []
    for p in paths:
        raw = open(p, "rb").read()
        n = int.from_bytes(raw[:8], "little")
        hdr = json.loads(raw[8:8 + n])
        got = dict(safetensors.deserialize(raw))
        items = sorted(((k, v) for k, v in hdr.items() if k != "__metadata__"), key=lambda kv: kv[1]["data_offsets"][0])
        for k, v in items:
            data = bytes(got[k]["data"])
            assert got[k]["dtype"].upper() == v["dtype"] or got[k]["dtype"] == v["dtype"].lower(), (got[k], v)
            b, e = v["data_offsets"]
            assert raw[8 + n + b:8 + n + e] == data
            out.append(dict(file=os.path.relpath(p, OUT), name=k, type=v["dtype"], dims=v["shape"], offset=8 + n + b,
                            nbytes=e - b, hash=fnv64(data)))
    return out


# ---- the header -------------------------------------------------------------------

def c_str(s):
    out = '"'
    for ch in s.encode():
        if ch in (0x22, 0x5c):
            out += "\\" + chr(ch)
        elif 0x20 <= ch < 0x7f:
            out += chr(ch)
        else:
            out += "\\%03o" % ch
    return out + '"'


def emit_tensors(lines, cname, ts, with_file):
    lines.append(f"static const mf_tensor {cname}[] = {{")
    for t in ts:
        dims = ", ".join(str(d) for d in t["dims"]) or "0"
        ty = c_str(t["type"]) if isinstance(t["type"], str) else str(t["type"])
        f = c_str(t["file"]) if with_file else "NULL"
        lines.append(f"    {{ {f}, {c_str(t['name'])}, {ty if isinstance(t['type'], str) else 'NULL'}, "
                     f"{t['type'] if not isinstance(t['type'], str) else 0xFFFFFFFF}u, {len(t['dims'])}, {{ {dims} }}, "
                     f"{t['offset']}ull, {t['nbytes']}ull, 0x{t['hash']:016x}ull }},")
    lines.append("};")


def generate():
    os.makedirs(OUT, exist_ok=True)
    types_gguf = os.path.join(OUT, "types.gguf")
    small = os.path.join(OUT, "small.gguf")
    write_types_gguf(types_gguf)
    write_small_gguf(small)
    write_mix_gguf(os.path.join(OUT, "mix.gguf"))
    b = bytearray(open(small, "rb").read())
    assert b[4:8] == (3).to_bytes(4, "little")
    b[4:8] = (2).to_bytes(4, "little")
    open(os.path.join(OUT, "small_v2.gguf"), "wb").write(b)
    write_types_st(os.path.join(OUT, "types.safetensors"))
    write_sharded(os.path.join(OUT, "sharded"))
    write_folder(os.path.join(OUT, "folder"))

    eg = gguf_expect(types_gguf)
    es = gguf_expect(small)
    est = st_expect([os.path.join(OUT, "types.safetensors")])
    esh = st_expect([os.path.join(OUT, "sharded", f) for f in ("model-00001-of-00002.safetensors",
                                                             "model-00002-of-00002.safetensors")])
    L = ["/* model_files_expect.h — written by tools/gen_model_files.py (gguf %s, safetensors %s): the"
         % (gguf_version(), safetensors.__version__),
         " * fixtures of tests/data/model_files/ as the gguf and safetensors packages read them. */",
         "typedef struct mf_tensor {",
         "    const char *file, *name, *type_name; /* type_name: safetensors */",
         "    uint32_t ggml_type;                  /* GGUF */",
         "    int rank;",
         "    int64_t dims[8];",
         "    uint64_t offset, nbytes, fnv;",
         "} mf_tensor;",
         f"#define MF_TYPES_ALIGNMENT {eg['alignment']}",
         f"#define MF_TYPES_DATA_OFFSET {eg['data_offset']}ull",
         f"#define MF_TYPES_N_KV {eg['n_kv'] - 3}  /* GGUFReader counts the header's three fields */",
         f"#define MF_SMALL_ALIGNMENT {es['alignment']}",
         f"#define MF_SMALL_DATA_OFFSET {es['data_offset']}ull",
         f"#define MF_SMALL_N_KV {es['n_kv'] - 3}"]
    emit_tensors(L, "mf_types_gguf", eg["tensors"], False)
    emit_tensors(L, "mf_small_gguf", es["tensors"], False)
    emit_tensors(L, "mf_types_st", est, True)
    emit_tensors(L, "mf_sharded_st", esh, True)
    open(HDR, "w").write("\n".join(L) + "\n")
    print("wrote", OUT, "and", HDR)


def gguf_version():
    try:
        from importlib.metadata import version
        return version("gguf")
    except Exception:
        return "?"


# ---- wick's writer, read back by the gguf package ------------------------------------

def check_writer(tests_bin, wick_bin=None):
    """The wick-tests case model_files/writer/roundtrip writes every value type
    and tensor type it can; with WICK_MODEL_FILES_KEEP it keeps the file.
    Every value is checked here as the gguf package reads it."""
    fails = 0
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "written.gguf")
        env = dict(os.environ, WICK_MODEL_FILES_KEEP=path)
        subprocess.run([tests_bin, "--filter", "model_files/writer/roundtrip"], check=True, env=env,
                       stdout=subprocess.DEVNULL)
        r = GGUFReader(path)
        f = r.fields

        def val(k):
            fl = f[k]
            if fl.types[0] == VT.ARRAY:
                return fl.contents()
            return fl.contents()

        expect = {
            "w.u8": 250, "w.i8": -7, "w.u16": 65535, "w.i16": -32768, "w.u32": 4294967295, "w.i32": -5,
            "w.u64": 2**64 - 1, "w.i64": -2**63, "w.f32": 0.25, "w.f64": -1.5, "w.bool": True,
            "w.str": "\u00e9t\u00e9", "w.arr.i32": [1, -2, 3], "w.arr.str": ["x", "", "yz"],
            "w.arr.bool": [True, False], "w.arr.f64": [0.5, -0.25], "w.arr.u8": [1, 2, 255], "w.arr.empty": [],
            "general.alignment": 128, "w.replaced": 2, "test.string_nul": "a\x00b",
            # the gguf reader's contents() flattens arrays of arrays; their types are checked below
            "test.arr.nested3": [1, 2, 3, 4], "test.arr.nested_str": ["a", "b", "c"],
        }
        for k, want in expect.items():
            if k not in f:
                print("FAIL writer: key", k, "missing")
                fails += 1
                continue
            got = val(k)
            if got != want:
                print("FAIL writer: key", k, "is", repr(got), "expected", repr(want))
                fails += 1
        types = {"w.u8": [VT.UINT8], "w.arr.i32": [VT.ARRAY, VT.INT32], "test.arr.nested3": [VT.ARRAY, VT.ARRAY, VT.ARRAY, VT.INT32],
                 "test.arr.nested_str": [VT.ARRAY, VT.ARRAY, VT.STRING], "w.f32": [VT.FLOAT32], "w.i64": [VT.INT64]}
        for k, want in types.items():
            if k in f and f[k].types[:len(want)] != want:
                print("FAIL writer: key", k, "has types", f[k].types, "expected", want)
                fails += 1
        # an empty array: the reader lists no element type; its parts hold it (key length, key, type, element type, count)
        pe = f["w.arr.empty"].parts
        if int(pe[2][0]) != VT.ARRAY or int(pe[3][0]) != VT.UINT32 or int(pe[4][0]) != 0:
            print("FAIL writer: the empty array reads as", [p.tolist() for p in pe])
            fails += 1
        if r.alignment != 128:
            print("FAIL writer: alignment", r.alignment)
            fails += 1
        # tensors: w.<dtype> of shape [3, block*2] (dense [2, 3, 5]) filled with bytes i*7+k mod 256 by the case
        n = 0
        for t in r.tensors:
            if t.data_offset % 128:
                print("FAIL writer: tensor", t.name, "at unaligned offset", t.data_offset)
                fails += 1
            data = np.asarray(t.data).tobytes()
            if len(data) != t.n_bytes:
                print("FAIL writer:", t.name, "bytes", len(data), t.n_bytes)
                fails += 1
            want = bytes((i * 7 + 3) & 255 for i in range(t.n_bytes))
            # Q8_1: the gguf package sizes its blocks at 40 bytes, ggml (and wick) at 36
            if t.name.startswith("w.") and t.name != "w.q8_1" and data != want:
                print("FAIL writer: tensor", t.name, "bytes differ")
                fails += 1
            n += 1
        print(f"writer: {len(expect)} keys and {n} tensors read back by gguf {gguf_version()}: "
              f"{'ok' if not fails else str(fails) + ' failures'}")
        if wick_bin:
            fails += check_quantize(wick_bin, d)
    return fails


def check_quantize(wick_bin, d):
    """wick quantize of a small llama-shaped safetensors model to q4_k_m: the gguf
    package reads the file; types follow the mix; values dequantize close to the input."""
    from gguf.quants import dequantize
    rng = np.random.default_rng(1406)
    src = os.path.join(d, "tiny.safetensors")
    t = {}
    ref = {}
    shapes = {"model.embed_tokens.weight": (16, 256), "model.norm.weight": (256,), "lm_head.weight": (16, 256)}
    for l in range(2):
        for k, s in (("self_attn.q_proj", (256, 256)), ("self_attn.k_proj", (256, 256)), ("self_attn.v_proj", (256, 256)),
                     ("self_attn.o_proj", (256, 256)), ("mlp.gate_proj", (256, 256)), ("mlp.up_proj", (256, 256)),
                     ("mlp.down_proj", (256, 256))):
            shapes[f"model.layers.{l}.{k}.weight"] = s
        shapes[f"model.layers.{l}.input_layernorm.weight"] = (256,)
    for k, s in shapes.items():
        a = rng.standard_normal(s).astype(np.float32)
        ref[k] = a
        t[k] = {"dtype": "F32", "shape": list(s), "data": a.tobytes()}
    st_write(t, src)
    out = os.path.join(d, "tiny.q4_k_m.gguf")
    subprocess.run([wick_bin, "quantize", src, out, "q4_k_m"], check=True, stdout=subprocess.DEVNULL)
    fails = check_mix(wick_bin, d)
    r = GGUFReader(out)
    types = {tt.name: tt.tensor_type.name for tt in r.tensors}
    print("quantize q4_k_m:", ", ".join(f"{k}={v}" for k, v in sorted(types.items())))
    for tt in r.tensors:
        key = [k for k in shapes if k == tt.name]
        if not key:
            continue
        x = ref[key[0]]
        y = dequantize(tt.data, tt.tensor_type).reshape(x.shape)
        err = float(np.sqrt(np.mean((x - y) ** 2)) / np.sqrt(np.mean(x ** 2)))
        print(f"  {tt.name}: {tt.tensor_type.name}, relative RMS error {err:.4f}")
        if err > 0.1:
            print("FAIL quantize:", tt.name, tt.tensor_type.name, "relative error", err)
            fails += 1
    return fails


def check_mix(wick_bin, d):
    """wick quantize q4_k_m of a 16-layer GGUF with llama.cpp's names, its layers in
    name order: every tensor's type as llama.cpp's llama_tensor_get_type picks it
    for Q4_K_M (written out here; llama.cpp counts attn_v and ffn_down by layer)."""
    rng = np.random.default_rng(1407)
    src = os.path.join(d, "mix.gguf")
    w = GGUFWriter(src, "llama")
    w.add_uint32("llama.block_count", 16)
    expect = {"token_embd.weight": "Q4_K", "output.weight": "Q6_K", "output_norm.weight": "F32"}

    def more_bits(i, n):
        return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2

    w.add_tensor("token_embd.weight", rng.standard_normal((8, 256)).astype(np.float32))
    for i in sorted(range(16), key=str):   # blk.0, blk.1, blk.10, ..: the order of llama.cpp-written files
        w.add_tensor(f"blk.{i}.attn_norm.weight", rng.standard_normal(256).astype(np.float32))
        w.add_tensor(f"blk.{i}.attn_q.weight", rng.standard_normal((8, 96)).astype(np.float16))   # rows of 96: q5_0
        w.add_tensor(f"blk.{i}.attn_v.weight", rng.standard_normal((8, 256)).astype(np.float32))
        w.add_tensor(f"blk.{i}.ffn_down.weight", rng.standard_normal((8, 256)).astype(np.float32))
        expect[f"blk.{i}.attn_norm.weight"] = "F32"
        expect[f"blk.{i}.attn_q.weight"] = "Q5_0"
        expect[f"blk.{i}.attn_v.weight"] = "Q6_K" if more_bits(i, 16) else "Q4_K"
        expect[f"blk.{i}.ffn_down.weight"] = "Q6_K" if more_bits(i, 16) else "Q4_K"
    w.add_tensor("output_norm.weight", rng.standard_normal(256).astype(np.float32))
    w.add_tensor("output.weight", rng.standard_normal((8, 256)).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    out = os.path.join(d, "mix.q4_k_m.gguf")
    subprocess.run([wick_bin, "quantize", "-q", src, out, "q4_k_m"], check=True, stdout=subprocess.DEVNULL)
    r = GGUFReader(out)
    fails = 0
    got = {t.name: t.tensor_type.name for t in r.tensors}
    for k, v in expect.items():
        if got.get(k) != v:
            print("FAIL q4_k_m mix:", k, "is", got.get(k), "expected", v)
            fails += 1
    ft = r.fields["general.file_type"].contents()
    if ft != 15 or r.fields["llama.block_count"].contents() != 16:
        print("FAIL q4_k_m mix: general.file_type", ft)
        fails += 1
    print(f"q4_k_m mix of a 16-layer GGUF: {len(expect)} tensor types as llama.cpp picks them: "
          f"{'ok' if not fails else str(fails) + ' failures'}")
    return fails


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--check-writer":
        sys.exit(1 if check_writer(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None) else 0)
    generate()
