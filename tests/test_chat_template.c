/* test_chat_template.c — wick's Jinja interpreter for chat templates
 * (wk_chat_template_parse / wk_chat_template_render) and the model's chat
 * through it (wk_llm_chat_apply):
 *   chat_template/lex/...       white space as transformers sets jinja2 up
 *                               (trim_blocks, lstrip_blocks, "-", "+"),
 *                               comments, raw, newlines, literals
 *   chat_template/expr/...      Python's operators, precedence, truthiness,
 *                               str() and repr() of values, subscripts
 *   chat_template/stmt/...      if, for and its loop, break/continue, set and
 *                               its scoping, namespace, macros, set blocks,
 *                               filter and with blocks, {% generation %}
 *   chat_template/filter/...    the filters (letter case on all of Unicode)
 *   chat_template/tests/is      the tests
 *   chat_template/methods/...   str, dict and list methods
 *   chat_template/globals/...   range, dict, namespace, strftime_now
 *   chat_template/undefined/... Undefined
 *       each a template and its variables against the text jinja2 gives for
 *       them, written out here by hand
 *   chat_template/errors/...    syntax errors with their line, unsupported
 *                               tags and filters, runtime errors,
 *                               raise_exception (WK_ERR_ARGUMENT), bad calls
 *   chat_template/hostile/...   deep nesting, unterminated tags, huge loops,
 *                               output and memory bombs, runaway macros,
 *                               deep values, stray bytes: an error, never a
 *                               crash or a hang
 *   chat_template/models/<name> the real templates of tests/data/chat_templates
 *                               on a short conversation, against the text
 *                               written out here
 *   chat_template/llm/...       models with a template: wk_llm_chat_apply
 *                               renders it (special tokens from the vocabulary,
 *                               WICK_CHAT_DATE as date_string), a refusal is an
 *                               error, a template wick cannot run falls back to
 *                               the fixed format with the reason in the info,
 *                               no template: plain text; SmolLM2's own file when
 *                               present
 * tools/check_chat_templates.py compares the real templates with jinja2 on
 * many more conversations.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "test.h"
#include "t_llm_model.h"
#include "wick_llm.h"

/* the variables most cases use */
#define VARS "{\"xs\": [3, 1, 2], \"d\": {\"b\": 2, \"a\": 1}, \"s\": \"  Hi There  \", \"n\": null, \"u\": \"héllo wörld\", \"messages\": [{\"role\": \"system\", \"content\": \" Be brief. \"}, {\"role\": \"user\", \"content\": \"2+2?\"}, {\"role\": \"assistant\", \"content\": \"<think>\\nadd\\n</think>\\n\\n4\"}]}"

/* tmpl rendered with vars (a JSON object or NULL); malloc'd or NULL */
static char *render_opts(const char *tmpl, size_t len, const char *vars, wk_chat_template_opts *o)
{
    wk_json *j = NULL;
    if (vars && !(j = wk_json_parse(vars, strlen(vars), "vars", 0))) {
        t_fail("the test's JSON: %s", wk_last_error());
        return NULL;
    }
    wk_chat_template *t = wk_chat_template_parse(tmpl, len);
    char *out = NULL;
    if (t) {
        o->vars = j;
        out = wk_chat_template_render(t, NULL, 0, o);
        o->vars = NULL;
    }
    wk_chat_template_free(t);
    wk_json_free(j);
    return out;
}

static char *render(const char *tmpl, const char *vars)
{
    wk_chat_template_opts o = { .now = 1721995200 };   /* 26 Jul 2024 12:00 UTC */
    return render_opts(tmpl, strlen(tmpl), vars, &o);
}

static void expect(const char *tmpl, const char *vars, const char *want)
{
    char *got = render(tmpl, vars);
    if (!got) t_fail("failed: %s\n template: %s", wk_last_error(), tmpl);
    else T_CHECK(!strcmp(got, want), "\n template '%s'\n got      '%s'\n want     '%s'", tmpl, got, want);
    free(got);
}

/* the template must fail with status st and a message holding what */
static void expect_error(const char *tmpl, size_t len, const char *vars, wk_status st, const char *what)
{
    wk_chat_template_opts o = { 0 };
    char *got = render_opts(tmpl, len ? len : strlen(tmpl), vars, &o);
    if (got) t_fail("no error, the text '%.200s'", got);
    else
        T_CHECK(wk_last_status() == st && strstr(wk_last_error(), what), "want %s with '%s', got %s: %s",
                wk_status_name(st), what, wk_status_name(wk_last_status()), wk_last_error());
    free(got);
}

static const struct {
    const char *name, *tmpl, *vars, *want;
} cases[] = {
    { "lex/trim_blocks",
      "{% if true %}\nA\n{% endif %}\nB",
      NULL,
      "A\nB" },
    { "lex/lstrip_blocks",
      "  {% if true %}\n  x\n  {% endif %}\n",
      NULL,
      "  x\n" },
    { "lex/lstrip_not_variables",
      "  {{ 'v' }}\n  {% set a = 1 %}\nz",
      NULL,
      "  v\nz" },
    { "lex/lstrip_only_leading_space",
      "a {% if true %}b{% endif %}",
      NULL,
      "a b" },
    { "lex/minus",
      "a  {{- 'b' -}}  c|x\n  {%- if true -%}\n  y  \n{%- endif %}",
      NULL,
      "abc|xy" },
    { "lex/minus_unicode_space",
      "a　 {{- 'b' }}",
      NULL,
      "ab" },
    { "lex/plus",
      "  {%+ if true %}x{% endif %}|{% if true +%}\ny{% endif %}",
      NULL,
      "  x|\ny" },
    { "lex/comments",
      "a {# c #} b\n  {# own line #}\nc{#- d -#}  e",
      NULL,
      "a  b\nce" },
    { "lex/raw",
      "{% raw %}{{ x }} {% if %}{% endraw %}|{%- raw -%}  k  {%- endraw %}",
      NULL,
      "{{ x }} {% if %}|k" },
    { "lex/newlines",
      "a\r\nb\rc\n{{ 'd' }}\n",
      NULL,
      "a\nb\nc\nd" },
    { "lex/trailing_newlines",
      "x\n\n",
      NULL,
      "x\n" },
    { "lex/strings",
      "{{ 'a\\tb' }}|{{ \"q\\\"q\" }}|{{ '\\x41\\u00e9\\U0001F600' }}|{{ '\\101' }}|{{ 'a' \"b\" }}|{{ '\\d' }}",
      NULL,
      "a\tb|q\"q|Aé😀|A|ab|\\d" },
    { "lex/numbers",
      "{{ 1_000 }} {{ 0x1F }} {{ 0o17 }} {{ 0b101 }} {{ 1.5e3 }} {{ 2E-3 }}",
      NULL,
      "1000 31 15 5 1500.0 0.002" },
    { "expr/arithmetic",
      "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 1"
      "0 / 5 }} {{ 1.5 + 1 }}",
      NULL,
      "7 9 3 -4 2 3.5 1024 2.0 2.5" },
    { "expr/floats",
      "{{ 0.1 + 0.2 }} {{ 1e16 }} {{ 1e15 }} {{ 1.5e-5 }} {{ 0.0001 }} {{ -0.0 }} {{ 1 / 3 }}",
      NULL,
      "0.30000000000000004 1e+16 1000000000000000.0 1.5e-05 0.0001 -0.0 0.3333333333333333" },
    { "expr/strings",
      "{{ 'a' + 'b' }} {{ 'ab' * 3 }} {{ 'a' ~ 1 ~ none ~ true ~ undefined_name }} {{ [1] + [2] }}",
      NULL,
      "ab ababab a1NoneTrue [1, 2]" },
    { "expr/precedence",
      "{{ 'ab'|upper + 'c' }} {{ xs|length + 1 }} {{ -3|abs }} {{ not 1 == 2 }} {{ 1 if 0 else 2 if 0 else 3 }}",
      VARS,
      "ABc 4 3 True 3" },
    { "expr/compare",
      "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 1 == 1.0 == true }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 'é' > 'z"
      "' }} {{ none == none }} {{ 1 != '1' }}",
      NULL,
      "True False True True True True True True" },
    { "expr/in",
      "{{ 'i T' in s }} {{ 2 in xs }} {{ 'a' in d }} {{ 5 not in xs }} {{ '' in 'x' }} {{ 'x' in undefined_name"
      " }}",
      VARS,
      "True True True True True False" },
    { "expr/logic",
      "{{ 0 or 'b' }}|{{ 'a' and 'b' }}|{{ '' and 'b' }}|{{ none or [] }}|{{ not xs }}|{{ 'y' if n else 'n' }}|"
      "{{ 'x' if false }}|",
      VARS,
      "b|b||[]|False|n||" },
    { "expr/literals",
      "{{ [1, 'a', none, true, 2.5] }} {{ (1, 2) }} {{ (1,) }} {{ () }} {{ {'k': 'v', 1: [2]} }} {{ [1, 2,] }}",
      NULL,
      "[1, 'a', None, True, 2.5] (1, 2) (1,) () {'k': 'v', 1: [2]} [1, 2]" },
    { "expr/repr",
      "{{ [\"it's\", 'q\"', 'a\\nb', 'é', '\\u00a0'] }}",
      NULL,
      "[\"it's\", 'q\"', 'a\\nb', 'é', '\\xa0']" },
    { "expr/subscript",
      "{{ xs[0] }} {{ xs[-1] }} {{ xs[1:] }} {{ xs[::-1] }} {{ xs[:2] }} {{ u[1] }} {{ u[::-1] }} {{ u[-5:] }} "
      "{{ d['a'] }} {{ d.b }} [{{ xs[9] }}]",
      VARS,
      "3 2 [1, 2] [2, 1, 3] [3, 1] é dlröw olléh wörld 1 2 []" },
    { "expr/attributes",
      "{{ messages[0].role }} {{ messages[1]['content'] }} {{ messages|length }} [{{ messages[0].nokey }}] {{ m"
      "essages[0].nokey is defined }}",
      VARS,
      "system 2+2? 3 [] False" },
    { "stmt/if",
      "{% if n %}a{% elif xs|length > 2 %}b{% else %}c{% endif %}{% if false %}x{% endif %}",
      VARS,
      "b" },
    { "stmt/for_loop",
      "{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }"
      "}{{ loop.last }}{{ loop.length }}{{ loop.previtem }}{{ loop.nextitem }};{% endfor %}",
      VARS,
      "1032TrueFalse31;2121FalseFalse332;3210FalseTrue31;" },
    { "stmt/for_dict",
      "{% for k in d %}{{ k }}{% endfor %} {% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %} {% for k, v "
      "in d|items %}{{ v }}{% endfor %}",
      VARS,
      "ba b=2;a=1; 21" },
    { "stmt/for_else_filter",
      "{% for x in xs if x > 1 %}{{ x }}/{{ loop.length }} {% endfor %}{% for x in [] %}a{% else %}empty{% endf"
      "or %}",
      VARS,
      "3/2 2/2 empty" },
    { "stmt/break_continue",
      "{% for x in xs %}{% if x == 1 %}{% continue %}{% endif %}{{ x }}{% if x == 3 %}{% break %}{% endif %}{% "
      "endfor %}|{% for i in [1, 2] %}{% for j in [1, 2] %}{% if j == 2 %}{% break %}{% endif %}{{ i }}{{ j }}{"
      "% endfor %}{% endfor %}",
      VARS,
      "3|1121" },
    { "stmt/set_scoping",
      "{% set a = 1 %}{% for x in xs %}{{ a }}{% set a = x %}{{ a }} {% endfor %}{{ a }}{% if true %}{% set a ="
      " 9 %}{% endif %}{{ a }}",
      VARS,
      "13 11 12 19" },
    { "stmt/namespace",
      "{% set ns = namespace(total=0, seen=[]) %}{% for x in xs %}{% set ns.total = ns.total + x %}{% set ns.se"
      "en = ns.seen + [x] %}{% endfor %}{{ ns.total }} {{ ns.seen }} [{{ ns.missing }}]",
      VARS,
      "6 [3, 1, 2] []" },
    { "stmt/set_tuple",
      "{% set a, b = 1, 'two' %}{{ a }}{{ b }}{% for p, q in [[1, 2], (3, 4)] %}{{ p + q }}{% endfor %}",
      NULL,
      "1two37" },
    { "stmt/set_block",
      "{% set x %}[{{ 1 + 1 }}]{% endset %}{{ x }}{% set y | upper | replace('B', 'b') %}abc{% endset %}{{ y }}",
      NULL,
      "[2]AbC" },
    { "stmt/macro",
      "{% macro m(a, b='d') %}<{{ a }}{{ b }}{{ xs|length }}>{% endmacro %}{{ m(1) }}{{ m(2, 3) }}{{ m(b=4, a=5"
      ") }}{% macro r(k) %}{% if k > 0 %}{{ k }}{{ r(k - 1) }}{% endif %}{% endmacro %}{{ r(3) }}",
      VARS,
      "<1d3><233><543>321" },
    { "stmt/filter_with",
      "{% filter upper %}a{{ 'b' }}{% endfilter %}{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]",
      NULL,
      "AB3[]" },
    { "stmt/generation",
      "{% generation %}kept{% endgeneration %}",
      NULL,
      "kept" },
    { "filter/strings",
      "{{ s|trim }}|{{ s|upper }}|{{ s|lower }}|{{ 'hELLO wORLD'|capitalize }}|{{ 'hello big-world'|title }}|{{"
      " s|replace('i', 'I') }}|{{ 'aaa'|replace('a', 'b', 2) }}|{{ 'x'|center(5) }}|{{ 'a\\nb'|indent(2) }}|{{ "
      "'a\\nb'|indent(2, true) }}",
      VARS,
      "Hi There|  HI THERE  |  hi there  |Hello world|Hello Big-World|  HI There  |bba|  x  |a\n  b|  a\n  b" },
    { "filter/unicode_case",
      "{{ 'héllo ß'|upper }}|{{ 'ÀÉ ΟΔΟΣ'|lower }}|{{ 'élan ǆemal'.title() }}|{{ 'éLAN'|capitalize }}|{{ 'É' is upper }}{{ 'ß' is lower }}",
      NULL,
      "HÉLLO SS|àé οδος|Élan ǅemal|Élan|TrueTrue" },
    { "filter/trim_unicode",
      "[{{ '\\u3000\\u00a0 x\\t\\u2028'|trim }}]{{ 'xxhixx'|trim('x') }}",
      NULL,
      "[x]hi" },
    { "filter/length",
      "{{ xs|length }} {{ u|length }} {{ d|count }} {{ undefined_name|length }}",
      VARS,
      "3 11 2 0" },
    { "filter/lists",
      "{{ xs|first }} {{ xs|last }} {{ xs|sort }} {{ xs|sort(reverse=true) }} {{ xs|reverse|list }} {{ xs|max }"
      "} {{ xs|min }} {{ xs|sum }} {{ [1, 2, 1]|unique|list }} {{ 'ab'|list }} {{ ['b', 'A', 'c']|sort }}",
      VARS,
      "3 2 [1, 2, 3] [3, 2, 1] [2, 1, 3] 3 1 6 [1, 2] ['a', 'b'] ['A', 'b', 'c']" },
    { "filter/join_map_select",
      "{{ xs|join(', ') }} {{ messages|map(attribute='role')|join('/') }} {{ messages|selectattr('role', 'equal"
      "to', 'user')|map(attribute='content')|first }} {{ messages|rejectattr('role', 'in', ['user', 'system'])|"
      "list|length }} {{ xs|select('odd')|list }} {{ xs|reject('odd')|list }} {{ ['a', 'b']|map('upper')|join }"
      "}",
      VARS,
      "3, 1, 2 system/user/assistant 2+2? 1 [3, 1] [2] AB" },
    { "filter/dicts",
      "{{ d|items|list }} {{ d|dictsort }} {{ d|dictsort(by='value', reverse=true) }} {{ d|list }}",
      VARS,
      "[('b', 2), ('a', 1)] [('a', 1), ('b', 2)] [('b', 2), ('a', 1)] ['b', 'a']" },
    { "filter/default",
      "{{ undefined_name|default('x') }} {{ ''|default('y') }} {{ ''|default('z', true) }} {{ n|d('w') }}",
      VARS,
      "x  z None" },
    { "filter/numbers",
      "{{ '42'|int }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(5) }} {{ '3.5'|float }} {{ 3|float }} {{ 4.7|int"
      " }} {{ -4.7|int }} {{ 2.5|round }} {{ 3.5|round }} {{ 3.14159|round(2) }} {{ 3.1|round(0, 'ceil') }} {{ "
      "-3|abs }} {{ '%s=%d'|format('a', 3) }}",
      NULL,
      "42 4 0 5 3.5 3.0 4 -4 2.0 4.0 3.14 4.0 3 a=3" },
    { "filter/tojson",
      "{{ xs|tojson }} {{ d|tojson }} {{ 'é\"\\n'|tojson }} {{ {'a': none, 'b': true, 'c': 1.5}|tojson }} {{ d|"
      "tojson(sort_keys=true) }} {{ xs|tojson(separators=(',', ':')) }} {{ 'é'|tojson(ensure_ascii=true) }}",
      VARS,
      "[3, 1, 2] {\"b\": 2, \"a\": 1} \"é\\\"\\n\" {\"a\": null, \"b\": true, \"c\": 1.5} {\"a\": 1, \"b\": 2} "
      "[3,1,2] \"\\u00e9\"" },
    { "filter/tojson_indent",
      "{{ {'a': [1, {}], 'b': []}|tojson(indent=2) }}",
      NULL,
      "{\n  \"a\": [\n    1,\n    {}\n  ],\n  \"b\": []\n}" },
    { "filter/escape_string",
      "{{ '<a href=\"x\">&\\'</a>'|e }} {{ 12|string }} {{ none|string }}",
      NULL,
      "&lt;a href=&#34;x&#34;&gt;&amp;&#39;&lt;/a&gt; 12 None" },
    { "tests/is",
      "{{ n is none }}{{ n is not none }}{{ undefined_name is defined }}{{ xs is iterable }}{{ s is string }}{{"
      " d is mapping }}{{ 1 is number }}{{ 1.5 is float }}{{ 1 is integer }}{{ true is boolean }}{{ 3 is odd }}"
      "{{ 3 is even }}{{ 9 is divisibleby 3 }}{{ 'ab' is lower }}{{ 'AB' is upper }}{{ 2 is in xs }}{{ 3 is eq "
      "3 }}{{ 3 is gt 2 }}{{ xs is sequence }}{{ true is true }}{{ 'upper' is filter }}{{ 'odd' is test }}",
      VARS,
      "TrueFalseFalseTrueTrueTrueTrueTrueTrueTrueTrueFalseTrueTrueTrueTrueTrueTrueTrueTrueTrueTrue" },
    { "methods/str",
      "{{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}|{{ 'xxhixx'.strip('x') }}|{{ s.upper() }}|{{ 'hello wo"
      "rld'.title() }}|{{ 'hELLO'.capitalize() }}|{{ 'ab'.replace('', '-') }}|{{ 'hello'.find('l') }}{{ 'hello'"
      ".rfind('l') }}{{ 'hello'.count('l') }}|{{ ','.join(['a', 'b']) }}|{{ s.startswith('  H') }}{{ s.endswith"
      "(('x', '  ')) }}",
      VARS,
      "Hi There|Hi There  |  Hi There|hi|  HI THERE  |Hello World|Hello|-a-b-|232|a,b|TrueTrue" },
    { "methods/split",
      "{{ s.split() }} {{ 'a,b,,c'.split(',') }} {{ 'a b c'.split(' ', 1) }} {{ ' a  b '.split(None, 1) }} {{ '"
      "a,b,c'.rsplit(',', 1) }} {{ ' a b c '.rsplit(None, 1) }} {{ 'a\\nb\\r\\nc'.splitlines() }}",
      VARS,
      "['Hi', 'There'] ['a', 'b', '', 'c'] ['a', 'b c'] ['a', 'b '] ['a,b', 'c'] [' a b', 'c'] ['a', 'b', 'c']" },
    { "methods/think",
      "{{ messages[2].content.split('</think>')[-1].lstrip('\\n') }}|{{ messages[2].content.split('</think>')[0"
      "].rstrip('\\n').split('<think>')[-1].lstrip('\\n') }}",
      VARS,
      "4|add" },
    { "methods/dict_list",
      "{{ d.items()|list }} {{ d.keys()|list }} {{ d.values()|list }} {{ d.get('a') }} {{ d.get('z') }} {{ d.ge"
      "t('z', 5) }} {{ xs.index(2) }} {{ xs.count(3) }}",
      VARS,
      "[('b', 2), ('a', 1)] ['b', 'a'] [2, 1] 1 None 5 2 1" },
    { "globals/functions",
      "{{ range(3)|list }} {{ range(1, 10, 3)|list }} {{ range(5, 0, -2)|list }} {{ dict(a=1) }} {{ namespace(x"
      "=2).x }} {{ strftime_now('%d %b %Y') }}",
      NULL,
      "[0, 1, 2] [1, 4, 7] [5, 3, 1] {'a': 1} 2 26 Jul 2024" },
    { "undefined/printing",
      "[{{ undefined_name }}][{{ undefined_name|upper }}][{{ undefined_name|trim }}][{{ undefined_name|join(','"
      ") }}]{% for x in undefined_name %}x{% endfor %}{{ undefined_name == undefined_other }}{{ undefined_name "
      "is iterable }}",
      NULL,
      "[][][][]TrueTrue" },
};

T_SUITE(chat_template)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (t_case("chat_template/%s", cases[i].name)) expect(cases[i].tmpl, cases[i].vars, cases[i].want);
    if (t_case("chat_template/errors/syntax")) {
        expect_error("{{ x }", 0, NULL, WK_ERR_UNSUPPORTED, "line 1: unexpected '}'");
        expect_error("a\nb\n{% foo %}", 0, NULL, WK_ERR_UNSUPPORTED, "line 3: unknown tag 'foo'");
        expect_error("{% for x in xs %}\n", 0, NULL, WK_ERR_UNSUPPORTED, "expected 'endfor' or 'else'");
        expect_error("{% if %}{% endif %}", 0, NULL, WK_ERR_UNSUPPORTED, "expected an expression");
        expect_error("{% endif %}", 0, NULL, WK_ERR_UNSUPPORTED, "unknown tag 'endif'");
        expect_error("x\n{{ f(1 }}", 0, NULL, WK_ERR_UNSUPPORTED, "line 2: unexpected '}', expected ')'");
        expect_error("{{ 'a' ! 'b' }}", 0, NULL, WK_ERR_UNSUPPORTED, "unexpected char '!'");
        expect_error("{% break %}", 0, NULL, WK_ERR_UNSUPPORTED, "'break' outside a loop");
        expect_error("{% macro m(a=1, b) %}{% endmacro %}", 0, NULL, WK_ERR_UNSUPPORTED, "non-default argument");
    }
    if (t_case("chat_template/errors/unsupported")) {
        expect_error("{% include 'other.jinja' %}", 0, NULL, WK_ERR_UNSUPPORTED, "the 'include' tag is not supported");
        expect_error("{% extends 'base' %}", 0, NULL, WK_ERR_UNSUPPORTED, "the 'extends' tag is not supported");
        expect_error("{% do xs.append(1) %}", 0, NULL, WK_ERR_UNSUPPORTED, "the 'do' tag is not supported");
        expect_error("{{ xs|batch(2) }}", 0, NULL, WK_ERR_UNSUPPORTED, "the filter 'batch' is not supported");
        expect_error("{{ xs|no_such }}", 0, NULL, WK_ERR_UNSUPPORTED, "no filter named 'no_such'");
        expect_error("{{ xs is no_such }}", 0, NULL, WK_ERR_UNSUPPORTED, "no test named 'no_such'");
        expect_error("{% for x in xs recursive %}{% endfor %}", 0, NULL, WK_ERR_UNSUPPORTED, "recursive");
        expect_error("{{ f(*xs) }}", 0, NULL, WK_ERR_UNSUPPORTED, "*args");
    }
    if (t_case("chat_template/errors/runtime")) {
        expect_error("{{ nothing.attr }}", 0, NULL, WK_ERR_UNSUPPORTED, "'nothing' is undefined");
        expect_error("{{ messages[7].role }}", 0, VARS, WK_ERR_UNSUPPORTED, "has no element 7");
        expect_error("{{ 1 / 0 }}", 0, NULL, WK_ERR_UNSUPPORTED, "division by zero");
        expect_error("{{ 'a' + 1 }}", 0, NULL, WK_ERR_UNSUPPORTED, "can only concatenate str");
        expect_error("{{ 'a' < 1 }}", 0, NULL, WK_ERR_UNSUPPORTED, "not supported between");
        expect_error("{{ xs.append(4) }}", 0, VARS, WK_ERR_UNSUPPORTED, "unsafe");
        expect_error("{% set x = 1 %}{% set x.y = 2 %}", 0, NULL, WK_ERR_UNSUPPORTED, "non-namespace");
        expect_error("{% set a, b = [1] %}", 0, NULL, WK_ERR_UNSUPPORTED, "not enough values to unpack");
        expect_error("{{ 9223372036854775807 + 1 }}", 0, NULL, WK_ERR_UNSUPPORTED, "integer overflow");
        expect_error("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}", 0, NULL, WK_ERR_UNSUPPORTED, "takes not more than 1");
        expect_error("{{ 'x'.strip(1) }}", 0, NULL, WK_ERR_UNSUPPORTED, "expected a string");
        expect_error("{{ 3 in 'abc' }}", 0, NULL, WK_ERR_UNSUPPORTED, "requires string as left operand");
    }
    if (t_case("chat_template/errors/raise")) {
        /* a template refusing the conversation: WK_ERR_ARGUMENT, its own words */
        expect_error("{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}",
                     0, VARS, WK_ERR_ARGUMENT, "System role not supported");
    }
    if (t_case("chat_template/errors/api")) {
        T_CHECK(!wk_chat_template_parse(NULL, 0) && wk_last_status() == WK_ERR_ARGUMENT, "NULL text");
        T_CHECK(!wk_chat_template_render(NULL, NULL, 0, NULL) && wk_last_status() == WK_ERR_ARGUMENT, "NULL template");
        wk_chat_template *t = wk_chat_template_parse("{{ messages[0].content }}", 25);
        const wk_chat_message bad[] = { { "user", NULL } }, good[] = { { "user", "fine" } };
        T_CHECK(t && !wk_chat_template_render(t, bad, 1, NULL) && wk_last_status() == WK_ERR_ARGUMENT, "no content");
        T_CHECK(t && !wk_chat_template_render(t, NULL, 2, NULL) && wk_last_status() == WK_ERR_ARGUMENT, "NULL messages");
        wk_json *arr = wk_json_parse("[1]", 3, "vars", 0);
        wk_chat_template_opts o = { .vars = arr };
        T_CHECK(t && !wk_chat_template_render(t, good, 1, &o) && wk_last_status() == WK_ERR_ARGUMENT, "vars not an object");
        wk_json_free(arr);
        char *s = t ? wk_chat_template_render(t, good, 1, NULL) : NULL;
        T_CHECK(s && !strcmp(s, "fine"), "messages from the C API: '%s'", s ? s : wk_last_error());
        free(s);
        wk_chat_template_free(t);
        wk_chat_template_free(NULL);
    }
    if (t_case("chat_template/hostile/nesting")) {
        /* every one an error with a message, none a crash: brackets, blocks,
           `not`, long operator chains, attribute chains */
        enum { N = 20000 };
        char *s = t_mem(8 * N + 64);
        size_t k = 0;
        k += (size_t)sprintf(s + k, "{{ ");
        for (int i = 0; i < N; i++) s[k++] = '(';
        s[k++] = '1';
        for (int i = 0; i < N; i++) s[k++] = ')';
        sprintf(s + k, " }}");
        expect_error(s, 0, NULL, WK_ERR_UNSUPPORTED, "nest");
        k = 0;
        for (int i = 0; i < N / 10; i++) k += (size_t)sprintf(s + k, "{%% if 1 %%}");
        expect_error(s, 0, NULL, WK_ERR_UNSUPPORTED, "nests deeper");
        k = (size_t)sprintf(s, "{{ ");
        for (int i = 0; i < N; i++) k += (size_t)sprintf(s + k, "not ");
        sprintf(s + k, "1 }}");
        expect_error(s, 0, NULL, WK_ERR_UNSUPPORTED, "nests deeper");
        k = (size_t)sprintf(s, "{{ 1");
        for (int i = 0; i < N; i++) k += (size_t)sprintf(s + k, "+1");
        sprintf(s + k, " }}");
        expect_error(s, 0, NULL, WK_ERR_UNSUPPORTED, "nests deeper");
        k = (size_t)sprintf(s, "{{ d");
        for (int i = 0; i < N; i++) k += (size_t)sprintf(s + k, ".a");
        sprintf(s + k, " }}");
        expect_error(s, 0, VARS, WK_ERR_UNSUPPORTED, "");
        k = (size_t)sprintf(s, "{{ s");
        for (int i = 0; i < N; i++) k += (size_t)sprintf(s + k, "|trim");
        sprintf(s + k, " }}");
        expect_error(s, 0, VARS, WK_ERR_UNSUPPORTED, "nests deeper");
    }
    if (t_case("chat_template/hostile/unterminated")) {
        static const char *const bad[] = { "{{ x", "{{ x -", "{% if x", "{% if x %}", "{# x", "{% raw %}x", "{{ 'x", "{{ \"x\\",
                                           "{{ [1, 2", "{{ {'a': 1", "{{ (", "{%", "{{", "{#", "x {{ y }} {% for", "{{ x|", "{{ x is",
                                           "{{ x.", "{{ x[", "{% set %}", "{% macro %}", "{% for in %}{% endfor %}" };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) expect_error(bad[i], 0, NULL, WK_ERR_UNSUPPORTED, "line ");
    }
    if (t_case("chat_template/hostile/loops")) {
        /* 10^10 iterations stop at the step limit, quickly */
        expect_error("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", 0, NULL,
                     WK_ERR_UNSUPPORTED, "steps");
        expect_error("{{ range(1000000)|length }}", 0, NULL, WK_ERR_UNSUPPORTED, "range too big");
        expect_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", 0, NULL, WK_ERR_UNSUPPORTED, "deep");
        expect_error("{% macro a() %}{{ b() }}{% endmacro %}{% macro b() %}{{ a() }}{% endmacro %}{{ a() }}", 0, NULL,
                     WK_ERR_UNSUPPORTED, "deep");
        wk_chat_template_opts o = { .max_steps = 1000 };
        const char *t = "{% for i in range(10000) %}x{% endfor %}";
        char *s = render_opts(t, strlen(t), NULL, &o);
        T_CHECK(!s && strstr(wk_last_error(), "1000 steps"), "max_steps: %s", s ? "rendered" : wk_last_error());
        free(s);
    }
    if (t_case("chat_template/hostile/bombs")) {
        /* output: 10^10 bytes asked, 1 MiB allowed */
        wk_chat_template_opts o = { .max_output = 1 << 20, .max_steps = INT64_MAX };
        const char *t = "{% for i in range(100000) %}{% for j in range(100000) %}xxxxxxxxxx{% endfor %}{% endfor %}";
        char *s = render_opts(t, strlen(t), NULL, &o);
        T_CHECK(!s && strstr(wk_last_error(), "output is longer than 1048576"), "output bomb: %s",
                s ? "rendered" : wk_last_error());
        free(s);
        /* memory: a string doubled 64 times, 8 MiB allowed */
        wk_chat_template_opts m = { .max_memory = 8 << 20 };
        t = "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}";
        s = render_opts(t, strlen(t), NULL, &m);
        T_CHECK(!s && strstr(wk_last_error(), "memory"), "string doubling: %s", s ? "rendered" : wk_last_error());
        free(s);
        expect_error("{{ 'x' * 1000000000000 }}", 0, NULL, WK_ERR_UNSUPPORTED, "repeated");
        expect_error("{{ [1] * 1000000000000 }}", 0, NULL, WK_ERR_UNSUPPORTED, "repeated");
        expect_error("{{ 2 ** 64 }}", 0, NULL, WK_ERR_UNSUPPORTED, "overflow");
        expect_error("{{ 'x'|center(1000000000) }}", 0, NULL, WK_ERR_UNSUPPORTED, "width");
        expect_error("{{ 'x'|indent(1000000000) }}", 0, NULL, WK_ERR_UNSUPPORTED, "width");
    }
    if (t_case("chat_template/hostile/deep_values")) {
        /* [[[...]]] 5000 deep, built in a loop: printing, JSON and == stop at a depth */
        const char *mk = "{% set ns = namespace(v=[]) %}{% for i in range(5000) %}{% set ns.v = [ns.v] %}{% endfor %}";
        char t[512];
        snprintf(t, sizeof t, "%s{{ ns.v }}", mk);
        expect_error(t, 0, NULL, WK_ERR_UNSUPPORTED, "too deep");
        snprintf(t, sizeof t, "%s{{ ns.v|tojson }}", mk);
        expect_error(t, 0, NULL, WK_ERR_UNSUPPORTED, "too deep");
        snprintf(t, sizeof t, "%s{{ ns.v == ns.v + [] }}", mk);
        expect_error(t, 0, NULL, WK_ERR_UNSUPPORTED, "too deep");
    }
    if (t_case("chat_template/hostile/bytes")) {
        /* a NUL and stray UTF-8 bytes in the template and in the data: text like any other */
        static const char tmpl[] = "a\0b\xff\xc3{{ '\xfe' }}{{ s|length }}{{ s[::-1]|length }}{{ s|upper|length }}";
        const char *vars = "{\"s\": \"x\\u00e9\"}";
        wk_chat_template_opts o = { 0 };
        char *s = render_opts(tmpl, sizeof tmpl - 1, vars, &o);
        T_CHECK(s && !memcmp(s, "a\0b\xff\xc3\xfe" "222", 9), "stray bytes: %s", s ? "wrong text" : wk_last_error());
        free(s);
        expect("{{ s|length }}|{{ s[1] }}|{{ s[::-1] }}", "{\"s\": \"a\\u00e9\\ud83d\\ude00\"}", "3|é|😀éa");
    }
}

/* ---- the real templates --------------------------------------------------------------- */

static char *read_template(const char *name)
{
    static const char *const dirs[] = { "tests/data/chat_templates", "../tests/data/chat_templates", "data/chat_templates" };
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", dirs[i], name);
        FILE *f = fopen(p, "rb");
        if (!f) continue;
        char *buf = t_mem(1 << 16);
        size_t n = fread(buf, 1, (1 << 16) - 1, f);
        fclose(f);
        buf[n] = 0;
        return buf;
    }
    t_fail("cannot read tests/data/chat_templates/%s (run from the repository root)", name);
    return NULL;
}

static void model_check(const char *file, const char *bos, const char *eos, const wk_chat_message *msgs, int n,
                        const char *want)
{
    const char *text = read_template(file);
    if (!text) return;
    wk_chat_template *t = wk_chat_template_parse(text, strlen(text));
    wk_chat_template_opts o = { .add_generation_prompt = true, .bos_token = bos, .eos_token = eos, .now = 1721995200 };
    char *got = t ? wk_chat_template_render(t, msgs, n, &o) : NULL;
    if (!got) t_fail("%s: %s", file, wk_last_error());
    else T_CHECK(!strcmp(got, want), "%s:\n got  '%s'\n want '%s'", file, got, want);
    free(got);
    wk_chat_template_free(t);
}

T_SUITE(chat_template_models)
{
    const wk_chat_message su[] = { { "system", "Be brief." }, { "user", "Hi" } }, u[] = { { "user", "Hi" } };
    const wk_chat_message turns[] = { { "user", "Hi" }, { "assistant", "<think>\nx\n</think>\n\nHello" }, { "user", "Again" } };
    if (t_case("chat_template/models/smollm2"))
        model_check("smollm2.jinja", "<|im_start|>", "<|im_end|>", su, 2,
                    "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    if (t_case("chat_template/models/gemma3"))
        model_check("gemma3.jinja", "<bos>", "<eos>", su, 2,
                    "<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n");
    if (t_case("chat_template/models/llama3"))
        model_check("llama3.jinja", "<|begin_of_text|>", "<|eot_id|>", su, 2,
                    "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>"
                    "user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
    if (t_case("chat_template/models/llama3.1"))
        model_check("llama3.1.jinja", "<|begin_of_text|>", "<|eot_id|>", su, 2,
                    "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n"
                    "Today Date: 26 Jul 2024\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
                    "<|start_header_id|>assistant<|end_header_id|>\n\n");
    if (t_case("chat_template/models/llama3.2"))   /* strftime_now("%d %b %Y") at 26 Jul 2024 12:00 UTC */
        model_check("llama3.2.jinja", "<|begin_of_text|>", "<|eot_id|>", u, 1,
                    "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n"
                    "Today Date: 26 Jul 2024\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
                    "<|start_header_id|>assistant<|end_header_id|>\n\n");
    if (t_case("chat_template/models/qwen2.5"))
        model_check("qwen2.5.jinja", NULL, "<|im_end|>", u, 1,
                    "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
                    "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    if (t_case("chat_template/models/qwen3"))   /* the reasoning of earlier turns is dropped */
        model_check("qwen3.jinja", NULL, "<|im_end|>", turns, 3,
                    "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello<|im_end|>\n<|im_start|>user\nAgain"
                    "<|im_end|>\n<|im_start|>assistant\n");
    if (t_case("chat_template/models/mistral-v0.1")) {
        const wk_chat_message m[] = { { "user", "Hi" }, { "assistant", "Hello" }, { "user", "Again" } };
        model_check("mistral-v0.1.jinja", "<s>", "</s>", m, 3, "<s>[INST] Hi [/INST]Hello</s> [INST] Again [/INST]");
    }
    if (t_case("chat_template/models/mistral-v0.3"))   /* this template leaves system messages out */
        model_check("mistral-v0.3.jinja", "<s>", "</s>", su, 2, "<s> [INST] Hi [/INST]");
    if (t_case("chat_template/models/phi3"))
        model_check("phi3.jinja", "<s>", "<|endoftext|>", su, 2,
                    "<|system|>\nBe brief.<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\n");
}

/* ---- models with a template -------------------------------------------------------------- */

/* a small llama GGUF with a vocabulary of 61 tokens (1 "<s>", 2 "</s>"), and
   tmpl as its chat template (NULL: none); false after a failure */
static bool write_chat_model(const char *path, const char *tmpl)
{
    tcfg c = cfg_of(A_LLAMA, false);
    tmodel tm = make_model(c);
    const char *raw = tmp_path("chat_raw.gguf");
    if (!write_gguf(&tm, raw, WK_F32)) return false;
    wk_gguf *g = wk_gguf_open(raw);
    wk_gguf_writer *w = wk_gguf_writer_new();
    const char *toks[61];
    char buf[61][8];
    int32_t types[61];
    for (int i = 0; i < 61; i++) {
        snprintf(buf[i], sizeof buf[i], "%c", 'A' + i % 58);
        toks[i] = buf[i];
        types[i] = i == 1 || i == 2 ? 3 : 1;
    }
    toks[1] = "<s>";
    toks[2] = "</s>";
    bool ok = g && w;
    for (int64_t i = 0; ok && i < wk_gguf_kv_count(g); i++)
        if (strcmp(wk_gguf_kv_key(g, i), "general.alignment") && strncmp(wk_gguf_kv_key(g, i), "tokenizer.", 10))
            ok = !wk_gguf_writer_copy_kv(w, g, wk_gguf_kv_key(g, i));
    ok = ok && !wk_gguf_writer_set_str(w, "tokenizer.ggml.model", "llama");
    ok = ok && !wk_gguf_writer_set_array(w, "tokenizer.ggml.tokens", WK_GGUF_STRING, toks, 61);
    ok = ok && !wk_gguf_writer_set_array(w, "tokenizer.ggml.token_type", WK_GGUF_I32, types, 61);
    ok = ok && !wk_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 1);
    ok = ok && !wk_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 2);
    if (tmpl) ok = ok && !wk_gguf_writer_set_str(w, "tokenizer.chat_template", tmpl);
    for (int64_t i = 0; ok && i < wk_gguf_tensor_count(g); i++) {
        const wk_file_tensor *ti = wk_gguf_tensor_info(g, i);
        ok = !wk_gguf_writer_add_data(w, ti->name, ti->dtype, ti->shape, ti->data);
    }
    ok = ok && !wk_gguf_writer_write(w, path);
    if (!ok) t_fail("writing a model with a chat template: %s", wk_last_error());
    wk_gguf_writer_free(w);
    wk_gguf_close(g);
    rm_model(raw);
    return ok;
}

/* the chat of a model with template tmpl (NULL: none), check()ed after
   loading; NULL after a failure */
static char *model_chat(const char *tmpl, const wk_chat_message *msgs, int n, bool (*check)(const wk_llm *m))
{
    const char *path = tmp_path("chat.gguf");
    if (!write_chat_model(path, tmpl)) return NULL;
    wk_llm_options lo = { .progress = WK_PROGRESS_OFF, .context = 16 };
    wk_llm *m = wk_llm_load(path, t_dev(), &lo);
    char *out = NULL;
    if (!m) t_fail("load: %s", wk_last_error());
    else {
        if (check && !check(m)) t_fail("the model's chat state is not as it should be");
        out = wk_llm_chat_apply(m, msgs, n, true);
    }
    wk_llm_free(m);
    rm_model(path);
    return out;
}

static bool renders(const wk_llm *m)
{
    const wk_llm_info *in = wk_llm_get_info(m);
    return in->chat_template && !in->chat_template_error && wk_llm_chat_formatted(m);
}

static bool falls_back(const wk_llm *m)
{
    const wk_llm_info *in = wk_llm_get_info(m);
    return in->chat_template && in->chat_template_error && strstr(in->chat_template_error, "include") &&
           in->chat == WK_CHAT_CHATML && wk_llm_chat_formatted(m);
}

static bool plain(const wk_llm *m)
{
    const wk_llm_info *in = wk_llm_get_info(m);
    return !in->chat_template && !in->chat_template_error && !wk_llm_chat_formatted(m);
}

T_SUITE(chat_template_llm)
{
    const wk_chat_message su[] = { { "system", "S" }, { "user", "U" } };
    if (t_case("chat_template/llm/renders")) {
        /* a template of no known family: rendered, with the vocabulary's special tokens */
        const char *t = "{{ bos_token }}{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}"
                        "{% if add_generation_prompt %}[assistant:{% endif %}{{ eos_token }}";
        char *s = model_chat(t, su, 2, renders);
        T_CHECK(s && !strcmp(s, "<s>[system:S][user:U][assistant:</s>"), "rendered: '%s'", s ? s : wk_last_error());
        free(s);
    }
    if (t_case("chat_template/llm/date")) {
        char *old = getenv("WICK_CHAT_DATE") ? strdup(getenv("WICK_CHAT_DATE")) : NULL;
        setenv("WICK_CHAT_DATE", "02 Jan \"2031\"", 1);
        char *s = model_chat("{% if date_string is defined %}{{ date_string }}{% endif %}", su, 2, renders);
        T_CHECK(s && !strcmp(s, "02 Jan \"2031\""), "WICK_CHAT_DATE: '%s'", s ? s : wk_last_error());
        free(s);
        if (old) setenv("WICK_CHAT_DATE", old, 1);
        else unsetenv("WICK_CHAT_DATE");
        free(old);
    }
    if (t_case("chat_template/llm/refused")) {
        /* a ChatML template that refuses system messages: an error, not the fixed format */
        const char *t = "{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('no system role') }}"
                        "{% endif %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}";
        char *s = model_chat(t, su, 2, renders);
        T_CHECK(!s && wk_last_status() == WK_ERR_ARGUMENT && strstr(wk_last_error(), "no system role"), "refused: %s",
                s ? s : wk_last_error());
        free(s);
    }
    if (t_case("chat_template/llm/fails_then_fixed")) {
        /* a ChatML template that fails on a system message: the fixed ChatML format */
        const char *t = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content if m.role != 'system' else "
                        "m.content.no_such_method() }}<|im_end|>\n{% endfor %}";
        char *s = model_chat(t, su, 2, renders);
        T_CHECK(s && !strcmp(s, "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"),
                "fixed format: '%s'", s ? s : wk_last_error());
        free(s);
    }
    if (t_case("chat_template/llm/unsupported")) {
        char *s = model_chat("{% include 'x' %}<|im_start|>", su, 2, falls_back);
        T_CHECK(s && !strcmp(s, "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"),
                "fixed format: '%s'", s ? s : wk_last_error());
        free(s);
    }
    if (t_case("chat_template/llm/none")) {
        char *s = model_chat(NULL, su, 2, plain);
        T_CHECK(s && !strcmp(s, "S\nU"), "plain text: '%s'", s ? s : wk_last_error());
        free(s);
    }
    if (t_case("chat_template/llm/smollm2")) {
        /* the real file: its template, rendered */
        char path[1024];
        if (!t_model_path("WICK_SMOLLM2", "SmolLM2-135M-Instruct.Q4_1.gguf", path, sizeof path)) {
            if (getenv("WICK_REQUIRE_MODEL") && strcmp(getenv("WICK_REQUIRE_MODEL"), "0"))
                t_fail("SmolLM2-135M-Instruct.Q4_1.gguf not found (WICK_REQUIRE_MODEL)");
            else printf("  note: chat_template/llm/smollm2: SmolLM2-135M-Instruct.Q4_1.gguf not found, skipped\n");
            return;
        }
        wk_llm_options lo = { .progress = WK_PROGRESS_OFF, .context = 16 };
        wk_llm *m = wk_llm_load(path, t_dev(), &lo);
        if (!m) {
            t_fail("load: %s", wk_last_error());
            return;
        }
        T_CHECK(renders(m), "SmolLM2's template renders: %s", wk_llm_get_info(m)->chat_template_error);
        const wk_chat_message one[] = { { "user", "Hi" } };
        char *s = wk_llm_chat_apply(m, one, 1, true);
        T_CHECK(s && !strcmp(s, "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
                                "Face<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"),
                "SmolLM2: '%s'", s ? s : wk_last_error());
        free(s);
        wk_llm_free(m);
    }
}
