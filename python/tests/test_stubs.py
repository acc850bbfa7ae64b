# test_stubs.py — the type stubs (.pyi) name every public function of wick,
# wick.nn and wick.model and every public method and property of
# wick.Tensor and of wick.model's classes, and every parameter of the
# functions of wick and wick.nn and of Tensor's methods (read from the
# signature in a C function's docstring); every public function, method
# and property has a docstring.
import ast
import inspect
import os
import re

import wick

HERE = os.path.dirname(os.path.abspath(__file__))


def _stub(name):
    path = os.path.join(os.path.dirname(wick.__file__), name)
    with open(path) as f:
        return ast.parse(f.read())


def _names(tree):
    out = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
        elif isinstance(node, ast.Assign):
            out.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom):
            out.update(a.asname or a.name for a in node.names)
    return out


def test_stubs_cover_the_package():
    tree = _stub("__init__.pyi")
    names = _names(tree)
    public = {n for n in dir(wick) if not n.startswith("_")}
    assert public - names == set()
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Tensor")
    methods = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
    tensor_public = {n for n in dir(wick.Tensor) if not n.startswith("_")}
    assert tensor_public - methods == set()
    nn_names = _names(_stub("nn.pyi"))
    assert set(wick.nn.__all__) - nn_names == set()


def test_docstrings():
    for n in dir(wick):
        obj = getattr(wick, n)
        if callable(obj) and not n.startswith("_"):
            assert obj.__doc__, n
    for n in dir(wick.Tensor):
        if not n.startswith("_"):
            assert getattr(wick.Tensor, n).__doc__, n


def _class_names(tree, name):
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)
    return {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}


def test_model_stubs():
    tree = _stub("model.pyi")
    assert set(wick.model.__all__) - _names(tree) == set()
    for name in ("Model", "Generation", "Tokenizer", "TokenStream", "Engine", "EngineRequest"):
        cls = getattr(wick.model, name)
        public = {n for n in dir(cls) if not n.startswith("_")}
        assert public - _class_names(tree, name) == set(), name
        assert cls.__doc__, name
        for n in public:
            assert getattr(cls, n).__doc__, (name, n)
    for n in wick.model.__all__:
        obj = getattr(wick.model, n)
        if callable(obj):
            assert obj.__doc__, n


def _doc_params(doc, name):
    """The parameter names of a C function's docstring, whose first line is
    its signature, "name(a, b=1, *, c=None) -> ...": [] when it is not.
    Bracketed and parenthesized parts ("x [N, C, H, W]", "[start,] end")
    are left out."""
    first = (doc or "").split("\n")[0]
    if not first.startswith(name + "("):
        return []
    depth, inner = 0, []
    for ch in first[len(name) + 1:]:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0:
            inner.append(ch)
    names = []
    for part in "".join(inner).split(","):
        m = re.match(r"\s*\*{0,2}([A-Za-z_]\w*)", part)
        if m:
            names.append(m.group(1))
    return names


def _stub_params(tree, cls=None):
    """{function name: every parameter name of its stubs (overloads together)}"""
    body = tree.body
    if cls:
        body = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls).body
    out = {}
    for n in body:
        if isinstance(n, ast.FunctionDef):
            a = n.args
            names = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
            names |= {x.arg for x in (a.vararg, a.kwarg) if x}
            out.setdefault(n.name, set()).update(names)
    return out


def test_stubs_name_every_parameter():
    # every function bound from C (its docstring gives the signature) and
    # every Python one (inspect) has each of its parameters in the stubs
    checked = 0
    for mod, stub, cls in ((wick, "__init__.pyi", None), (wick.nn, "nn.pyi", None), (wick, "__init__.pyi", "Tensor")):
        params = _stub_params(_stub(stub), cls)
        owner = wick.Tensor if cls else mod
        names = [n for n in dir(owner) if not n.startswith("_")] if cls else getattr(mod, "__all__", dir(mod))
        for n in names:
            obj = getattr(owner, n, None)
            if not callable(obj) or isinstance(obj, type) or n not in params:
                continue
            try:
                sig = [p for p in inspect.signature(obj).parameters if p != "self"]
            except (TypeError, ValueError):
                sig = _doc_params(obj.__doc__, n)
            missing = set(sig) - params[n]
            assert not missing, "%s%s: the stub lacks %s" % ((cls + ".") if cls else mod.__name__ + ".", n, sorted(missing))
            checked += bool(sig)
    assert checked > 100, checked


def test_doc_params_reads_signatures():
    assert _doc_params("attention(q, k, v, *, scale=None, mask=None, kv_len=None)", "attention") == [
        "q", "k", "v", "scale", "mask", "kv_len"]
    assert _doc_params("arange([start,] end[, step], dtype=None, device='cpu'): i64", "arange") == ["end", "dtype", "device"]
    assert _doc_params("conv1d(x [N,Cin,L], weight, stride=None (the kernel), groups=1)", "conv1d") == [
        "x", "weight", "stride", "groups"]
    assert _doc_params("something else", "f") == []
