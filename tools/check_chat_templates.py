#!/usr/bin/env python3
"""check_chat_templates.py — wick's Jinja interpreter against jinja2.

Every chat template in tests/data/chat_templates/ (the real templates of
SmolLM2, Gemma 3, Llama 3/3.1/3.2, Qwen 2.5/3, Mistral, Phi-3; the README
there says where each comes from) renders a set of conversations twice: by
jinja2, in the environment transformers' apply_chat_template builds
(ImmutableSandboxedEnvironment with trim_blocks and lstrip_blocks, the
loopcontrols extension, its own tojson, raise_exception and strftime_now,
the variables messages, tools=None, documents=None, add_generation_prompt
and the model's special tokens), and by `wick template --template`. The two
texts must be equal byte for byte; a conversation jinja2 refuses (the
template raises) must fail in wick too, with the same message. Then the
small templates of snippets.txt there (one construct or a few each: white
space, operators, filters, tests, methods, scoping, errors) on one set of
variables: the same text, or an error in both.

usage: check_chat_templates.py [--verbose] [--transformers] WICK

--transformers also runs transformers' apply_chat_template on every case
and checks that it gives what this script's jinja2 set-up gives.

Exit status 0 when every case agrees, 1 otherwise. Without jinja2 (pip
install jinja2) it prints a note and exits 0, unless WICK_REQUIRE_JINJA2=1
(CI sets it): `make test` runs it where jinja2 is present, CI always.
"""
import json
import os
import subprocess
import sys
import tempfile
from datetime import datetime

try:
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    if os.environ.get("WICK_REQUIRE_JINJA2", "0") != "0":
        print("chat templates: FAILED: no jinja2 for this python, and WICK_REQUIRE_JINJA2 is set")
        sys.exit(1)
    print("chat templates: skipped (no jinja2 for this python: pip install jinja2)")
    sys.exit(0)

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "tests", "data", "chat_templates")
NOW = 1721995200   # 26 Jul 2024 12:00 UTC, strftime_now's clock on both sides


def environment():
    """jinja2 as transformers' _cached_compile_jinja_template sets it up."""

    class Generation(jinja2.ext.Extension):
        # transformers' AssistantTracker: {% generation %} renders its body
        tags = {"generation"}

        def parse(self, parser):
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
            return jinja2.nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

        def _render(self, caller):
            return caller()

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.fromtimestamp(NOW).strftime(fmt)

    class TemplateNamespace(jinja2.utils.Namespace):
        def __init__(*args, **kwargs):
            self, args = args[0], args[1:]
            attrs = dict(*args, **kwargs)
            for name in attrs:
                if isinstance(name, str) and name.startswith("_"):
                    raise jinja2.exceptions.SecurityError("underscore-prefixed namespace attribute")
            jinja2.utils.Namespace.__init__(self, attrs)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[Generation, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    env.globals["dict"] = dict
    env.globals["namespace"] = TemplateNamespace
    return env


TOOLS = [{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city, now.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city, e.g. \"Zürich\""},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer", "minimum": 1},
            },
            "required": ["city"],
        },
    },
}]


def conversations():
    """(name, variables) for every case; the special tokens come per template."""
    sys_ = {"role": "system", "content": "You are a terse assistant."}
    u1 = {"role": "user", "content": "What is 2 + 2?"}
    a1 = {"role": "assistant", "content": "4."}
    u2 = {"role": "user", "content": "And times 3?"}
    a2 = {"role": "assistant", "content": "12."}
    cases = [
        ("user", {"messages": [u1]}),
        ("system-user", {"messages": [sys_, u1]}),
        ("multi-turn", {"messages": [sys_, u1, a1, u2]}),
        ("multi-turn-no-system", {"messages": [u1, a1, u2, a2, {"role": "user", "content": "Bye."}]}),
        ("ends-with-assistant", {"messages": [u1, a1]}),
        ("unicode", {"messages": [
            {"role": "system", "content": "Réponds en français — « toujours ». 你好"},
            {"role": "user", "content": "\u00a0 Grüße 👋 \u3000\tnaïve café\u00a0\n"},
            {"role": "assistant", "content": "<think>\nthe user greets\n</think>\n\nSalut ! 😀"},
            {"role": "user", "content": "Ça va ?\r\n"}]}),
        ("empty", {"messages": [{"role": "system", "content": ""}, {"role": "user", "content": ""}]}),
        ("empty-user", {"messages": [{"role": "user", "content": ""}]}),
        ("whitespace", {"messages": [{"role": "user", "content": "  \n padded {{ not a tag }} {% if %}\n\n "},
                                     {"role": "assistant", "content": "\n\n ok \n"},
                                     {"role": "user", "content": "\t"}]}),
        ("thinking", {"messages": [u1, {"role": "assistant", "content": "<think>\nadd them\n</think>\n\n4."}, u2]}),
        ("tools", {"messages": [
            {"role": "system", "content": "Use tools when they help."},
            {"role": "user", "content": "Weather in Zürich?"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function", "function": {
                "name": "get_weather", "arguments": {"city": "Zürich", "days": 2}}}]},
            {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "{\"temp\": 21.5}"},
            {"role": "user", "content": "Thanks"}], "tools": TOOLS}),
    ]
    out = []
    for name, v in cases:
        for gen in (True, False):
            out.append((f"{name}/{'gen' if gen else 'nogen'}", dict(v, add_generation_prompt=gen)))
    out.append(("user/date-string", {"messages": [u1], "add_generation_prompt": True, "date_string": "01 Jan 2030"}))
    out.append(("user/enable-thinking-false", {"messages": [u1], "add_generation_prompt": True, "enable_thinking": False}))
    return out


def transformers_render(text, variables):
    """transformers' own apply_chat_template on the same input (--transformers)."""
    from datetime import datetime as real_datetime
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast
    from transformers.utils import chat_template_utils

    class Fixed(real_datetime):
        @classmethod
        def now(cls, tz=None):
            return real_datetime.fromtimestamp(NOW, tz)

    chat_template_utils.datetime = Fixed
    v = dict(variables)
    special = {k: v.pop(k) for k in ("bos_token", "eos_token", "unk_token", "pad_token") if k in v}
    tok = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.BPE()), **special)
    tok.chat_template = text
    messages, tools = v.pop("messages"), v.pop("tools", None)
    gen = v.pop("add_generation_prompt", False)
    try:
        return tok.apply_chat_template(messages, tools=tools, tokenize=False, add_generation_prompt=gen, **v)
    except jinja2.exceptions.TemplateError as e:
        return ("error", str(e))


def reference(env, text, variables):
    """jinja2's text, or ('error', message) when the template raises."""
    v = dict(variables)
    v.setdefault("tools", None)
    v.setdefault("documents", None)
    try:
        return env.from_string(text).render(**v)
    except jinja2.exceptions.TemplateError as e:
        return ("error", str(e))


SNIPPET_VARS = {
    "messages": [{"role": "system", "content": " Sys "}, {"role": "user", "content": "héllo wörld"},
                 {"role": "assistant", "content": "a<think>x</think>b"}],
    "xs": [3, 1, 2], "d": {"b": 2, "a": 1}, "s": "  Hello World  ", "n": None, "f": 2.5, "i": 7, "t": True,
    "add_generation_prompt": True, "bos_token": "<s>", "tools": None, "nested": {"k": [{"v": 1}, {"v": 2}]},
    "strs": ["b", "A", "c"],
}


def check_snippets(env, wick, tmp, verbose):
    """tests/data/chat_templates/snippets.txt: small templates, one construct
    or a few each, separated by lines "----": the same text as jinja2, or an
    error where jinja2 fails. (passed, failed)"""
    with open(os.path.join(DATA, "snippets.txt"), encoding="utf-8", newline="") as f:
        text = f.read()
    if text.endswith("\n"):
        text = text[:-1]
    ok = bad = 0
    vars_path = os.path.join(tmp, "snippet_vars.json")
    with open(vars_path, "w", encoding="utf-8") as f:
        json.dump(SNIPPET_VARS, f, ensure_ascii=False)
    for k, src in enumerate(text.split("\n----\n")):
        try:
            want = env.from_string(src).render(**SNIPPET_VARS).encode("utf-8")
        except Exception as e:   # any error: wick must fail too
            want = ("error", f"{type(e).__name__}: {e}")
        path = os.path.join(tmp, "snippet.jinja")
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(src)
        p = subprocess.run([wick, "template", "--template", path, "--now", str(NOW), vars_path], capture_output=True)
        if isinstance(want, tuple):
            good = p.returncode != 0
        else:
            good = p.returncode == 0 and p.stdout == want
        if good:
            ok += 1
            if verbose:
                print(f"ok    snippet {k + 1}")
        else:
            bad += 1
            got = p.stdout if p.returncode == 0 else p.stderr.decode("utf-8", "replace").strip()
            print(f"FAIL  snippet {k + 1} {src!r}:\n      jinja2 {want!r}\n      wick   {got!r}")
    print(f"chat templates: snippets: {ok}/{ok + bad} equal to jinja2")
    return ok, bad


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    verbose = "--verbose" in sys.argv
    with_transformers = "--transformers" in sys.argv
    if len(args) != 1:
        print(__doc__.strip().split("\n\n")[2], file=sys.stderr)
        return 2
    wick = args[0]
    with open(os.path.join(DATA, "templates.json"), encoding="utf-8") as f:
        templates = json.load(f)
    env = environment()
    failed = passed = 0
    per_template = {}
    with tempfile.TemporaryDirectory() as tmp:
        for t in templates:
            path = os.path.join(DATA, t["file"])
            with open(path, encoding="utf-8", newline="") as f:
                text = f.read()
            ok = 0
            cases = conversations()
            for name, variables in cases:
                v = dict(variables)
                for k in ("bos_token", "eos_token", "unk_token", "pad_token"):
                    if t.get(k) is not None:
                        v[k] = t[k]
                want = reference(env, text, v)
                if with_transformers:
                    hf = transformers_render(text, v)
                    if hf != want:
                        failed += 1
                        print(f"FAIL  {t['file']} {name}: this script's jinja2 differs from transformers: "
                              f"{want!r} != {hf!r}")
                        continue
                vars_path = os.path.join(tmp, "vars.json")
                with open(vars_path, "w", encoding="utf-8") as f:
                    json.dump(v, f, ensure_ascii=False)
                p = subprocess.run([wick, "template", "--template", path, "--now", str(NOW), vars_path],
                                   capture_output=True)
                label = f"{t['file']} {name}"
                if isinstance(want, tuple):
                    err = p.stderr.decode("utf-8", "replace")
                    if p.returncode != 0 and want[1] in err:
                        ok += 1
                        if verbose:
                            print(f"ok    {label}: both refuse: {want[1]}")
                    else:
                        failed += 1
                        print(f"FAIL  {label}: jinja2 raised {want[1]!r}; wick: exit {p.returncode} {err.strip()!r}")
                    continue
                got = p.stdout
                if p.returncode == 0 and got == want.encode("utf-8"):
                    ok += 1
                    if verbose:
                        print(f"ok    {label}: {len(got)} bytes")
                    continue
                failed += 1
                if p.returncode != 0:
                    print(f"FAIL  {label}: wick failed: {p.stderr.decode('utf-8', 'replace').strip()}")
                else:
                    w = want.encode("utf-8")
                    i = next((k for k in range(min(len(w), len(got))) if w[k] != got[k]), min(len(w), len(got)))
                    print(f"FAIL  {label}: first difference at byte {i}: jinja2 {w[max(0, i - 20):i + 40]!r}"
                          f" wick {got[max(0, i - 20):i + 40]!r}")
            passed += ok
            per_template[t["file"]] = (ok, len(cases))
        ok, bad = check_snippets(env, wick, tmp, verbose)
        passed += ok
        failed += bad
    for f, (ok, n) in per_template.items():
        print(f"chat templates: {f}: {ok}/{n} equal to jinja2")
    print(f"chat templates: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
