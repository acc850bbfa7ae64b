# test_stubs.py — the type stubs (.pyi) name every public function of wick,
# wick.nn and wick.model and every public method and property of
# wick.Tensor and of wick.model's classes, and every public function,
# method and property has a docstring.
import ast
import os

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
