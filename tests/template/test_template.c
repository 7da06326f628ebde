/* test_template.c: the renderer on small templates whose Jinja2 output is
 * known (worked out from Jinja's documented semantics), its errors (syntax
 * errors with line:column, runtime errors, raise_exception) and its bounds
 * (work, depth, output, memory) against hostile templates. */
#include <jansson.h>
#include <string.h>

#include "template/template.h"
#include "tl_test.h"

static tl_status render(const char *src, const char *vars_json, const tl_template_limits *lim, tl_strbuf *out,
                        tl_error *err) {
    tl_template *t = NULL;
    tl_status st = tl_template_parse(src, strlen(src), &t, err);
    if (st)
        return st;
    json_t *vars = vars_json ? json_loads(vars_json, 0, NULL) : NULL;
    tl_template_opts opts = {.limits = lim, .fixed_now = true, .now_unix = 1768435200};
    st = tl_template_render(t, vars, &opts, out, err);
    json_decref(vars);
    tl_template_free(t);
    return st;
}

static void expect(const char *src, const char *vars, const char *want) {
    tl_strbuf out = TL_STRBUF_INIT;
    tl_error err = {0};
    tl_status st = render(src, vars, NULL, &out, &err);
    CHECKF(st == TL_OK && !strcmp(tl_strbuf_cstr(&out), want), "%s\n  got:  [%s] %s\n  want: [%s]", src,
           tl_strbuf_cstr(&out), st ? err.msg : "", want);
    tl_strbuf_free(&out);
}

static void expect_error(const char *src, const char *vars, tl_status code, const char *msg_part) {
    tl_strbuf out = TL_STRBUF_INIT;
    tl_error err = {0};
    tl_template_limits lim = {.max_output = 1 << 20, .max_steps = 1000000, .max_memory = 32 << 20, .max_depth = 200};
    tl_status st = render(src, vars, &lim, &out, &err);
    CHECKF(st == code && strstr(err.msg, msg_part), "%s\n  got status %d: %s\n  want %d containing '%s'", src, st,
           err.msg, code, msg_part);
    tl_strbuf_free(&out);
}

int main(void) {
    /* whitespace: trim_blocks, lstrip_blocks, '-' and '+' */
    expect("a\n  {% if true %}\n  b\n  {% endif %}\nc", NULL, "a\n  b\nc");
    expect("a  {%- if true -%}  b  {%- endif %}\n", NULL, "ab");
    expect("x\n    {%+ if true %}y{% endif %}", NULL, "x\n    y");
    expect("{# c #}\n  {{- 'v' }}  \n", NULL, "v  ");
    expect("{% raw %}{{ x }}{% endraw %}", NULL, "{{ x }}");
    /* expressions */
    expect("{{ 1 + 2 * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 7 / 2 }}", NULL,
           "7 3 -4 1 2 1024 3.5");
    expect("{{ 0.1 + 0.2 }} {{ 1e20 }} {{ 1.0 }} {{ 1e-5 }} {{ 3.14 }}", NULL,
           "0.30000000000000004 1e+20 1.0 1e-05 3.14");
    expect("{{ [1, 'a', none, true, {'k': (1,)}] }}", NULL, "[1, 'a', None, True, {'k': (1,)}]");
    expect("{{ \"it's\" }} {{ ['it\\'s'] }}", NULL, "it's [\"it's\"]");
    expect("{{ 'abc'[::-1] }}{{ 'héllo'[1:3] }}{{ [1,2,3][-1] }}{{ 'x' ~ 1 ~ none }}", NULL, "cbaél3x1None");
    /* slice bounds past either end, negative steps (Python's adjustment; values from jinja2) */
    expect("{{ 'abcdef'[-1:-10:-1] }}|{{ 'abcdef'[10:2:-2] }}|{{ [1,2,3][-5:] }}|{{ 'abcdef'[-2:1:-1] }}|"
           "{{ 'abcdef'[1:-1] }}",
           NULL, "fedcba|fd|[1, 2, 3]|edc|bcde");
    expect("{{ 1 < 2 < 3 }} {{ 'b' in 'abc' }} {{ 2 not in [1] }} {{ 'a' if false }}|", NULL, "True True True |");
    expect("{{ x.y is defined }} {{ x is mapping }} {{ x.z | default('d') }} {{ u | length }}", "{\"x\":{\"y\":1}}",
           "True True d 0");
    expect("{{ '  a b  '.strip() }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'a-b-c'.rsplit('-', 1) }}",
           NULL, "a b|['a', 'b', '', 'c']|['a', 'b']|['a-b', 'c']");
    expect("{{ '%s=%d' % ('n', 3) }} {{ '{} {x}'.format(1, x=2) }}", NULL, "n=3 1 2");
    /* filters */
    /* jinja2's select/reject/map family: a false input (none, undefined, '', [], {})
     * is an empty sequence, so a template filters tools without tools given */
    expect("{% set tools = none %}{{ tools | selectattr('type', 'equalto', 'x') | list | length }}|"
           "{{ u | map(attribute='a') | list }}|{{ '' | reject | list }}|{{ {} | select | list }}",
           NULL, "0|[]|[]|[]");
    expect("{{ '' is lower }}{{ 'a1' is lower }}{{ '12' is upper }}{{ u is callable }}", NULL, "FalseTrueFalseTrue");
    expect_error("{{ none | indent(2) }}", NULL, TL_ERR_INVALID, "indent filter input must be a string, not NoneType");
    expect_error("{{ u | int }}", NULL, TL_ERR_INVALID, "undefined");
    expect_error("{{ 'a' | round }}", NULL, TL_ERR_INVALID, "__round__");
    expect_error("{{ [] is in({}) }}", NULL, TL_ERR_INVALID, "unhashable type");
    expect("{{ {'b': 1, 'a': [1, 'é']} | tojson }}", NULL, "{\"b\": 1, \"a\": [1, \"é\"]}");
    expect("{{ {'a': [1]} | tojson(indent=2) }}", NULL, "{\n  \"a\": [\n    1\n  ]\n}");
    expect("{{ 'é<' | tojson(ensure_ascii=true) }}", NULL, "\"\\u00e9<\"");
    expect("{{ [3, 1, 2] | sort | join(',') }} {{ ['b', 'A'] | sort | first }} {{ [1, 2, 1] | unique | list }}", NULL,
           "1,2,3 A [1, 2]");
    expect("{{ m | selectattr('r', 'equalto', 'u') | map(attribute='c') | join }}",
           "{\"m\":[{\"r\":\"u\",\"c\":\"x\"},{\"r\":\"a\",\"c\":\"y\"},{\"r\":\"u\",\"c\":\"z\"}]}", "xz");
    expect("{{ d | dictsort }} {{ d | items | list }}", "{\"d\":{\"b\":2,\"a\":1}}",
           "[('a', 1), ('b', 2)] [('b', 2), ('a', 1)]");
    expect("{{ 'a\nb\n\nc' | indent(2) }}|{{ 'HeLLo wOrld' | title }}|{{ ' x ' | trim | upper }}", NULL,
           "a\n  b\n\n  c|Hello World|X");
    /* wordcount counts runs of \w as Jinja does: punctuation and combining marks split words */
    expect("{{ 'it\\'s a-b, c_d  e\u0301f 42 你好' | wordcount }}", NULL, "9");
    /* statements */
    expect("{% for k, v in d.items() %}{{ loop.index }}{{ k }}{{ v }}{% if not loop.last %},{% endif %}{% endfor %}",
           "{\"d\":{\"a\":1,\"b\":2}}", "1a1,2b2");
    expect("{% for x in [1,2,3,4] if x is odd %}{{ loop.length }}{{ x }}{% else %}none{% endfor %}", NULL, "2123");
    expect("{% for x in [] %}x{% else %}empty{% endfor %}", NULL, "empty");
    expect("{% for x in [1,2,3] %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 3 %}{% break %}{% endif %}{{ x }}"
           "{% endfor %}",
           NULL, "1");
    expect("{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{% endfor %}{{ x }}", NULL, "1");
    expect("{% set ns = namespace(x=1) %}{% for i in [1, 2] %}{% set ns.x = ns.x + i %}{% endfor %}{{ ns.x }}", NULL,
           "4");
    expect("{% set a, b = [1, 2] %}{{ b }}{% set c %}<{{ a }}>{% endset %}{{ c }}", NULL, "2<1>");
    expect("{% macro m(a, b=a ~ '!') %}[{{ a }}{{ b }}{{ caller() if caller is defined }}]{% endmacro %}"
           "{{ m(1) }}{% call m('x', b='y') %}c{% endcall %}",
           NULL, "[11!][xyc]");
    expect("{% filter upper %}ab{% endfilter %}{% generation %}g{% endgeneration %}", NULL, "ABg");
    expect("{% for n in tree recursive %}{{ n.v }}{% if n.c %}({{ loop(n.c) }}){% endif %}{% endfor %}",
           "{\"tree\":[{\"v\":1,\"c\":[{\"v\":2}]},{\"v\":3}]}", "1(2)3");
    expect("{{ strftime_now('%d %b %Y') }} {{ strftime_now('%B %d, %Y') }}", NULL, "15 Jan 2026 January 15, 2026");
    expect("{{ range(3) | list }} {{ range(5, 0, -2) | join(' ') }}", NULL, "[0, 1, 2] 5 3 1");

    /* syntax errors name line:column */
    expect_error("a\n{% if x %}\nb", NULL, TL_ERR_FORMAT, "template:3:2: unexpected end of template");
    expect_error("{{ 1 + }}", NULL, TL_ERR_FORMAT, "template:1:8:");
    expect_error("x\n  {% frob %}", NULL, TL_ERR_FORMAT, "template:2:6: unknown or unsupported statement 'frob'");
    expect_error("{{ 'abc }}", NULL, TL_ERR_FORMAT, "template:1:4: unterminated string");
    expect_error("{% for %}", NULL, TL_ERR_FORMAT, "template:1:8: expected a name");
    expect_error("{% endif %}", NULL, TL_ERR_FORMAT, "template:1:4: unexpected 'endif'");
    /* runtime errors */
    expect_error("{{ raise_exception('Bad role: ' ~ r) }}", "{\"r\":\"x\"}", TL_ERR_INVALID, "Bad role: x");
    expect_error("{{ x.y.z }}", NULL, TL_ERR_INVALID, "template:1:");
    expect_error("{% for m in none %}{% endfor %}", NULL, TL_ERR_INVALID, "'NoneType' object is not iterable");
    expect_error("{{ [1].append(2) }}", NULL, TL_ERR_INVALID, "SecurityError");
    expect_error("{{ 1 / 0 }}", NULL, TL_ERR_INVALID, "division by zero");
    /* bounds: nothing a template does can hang or exhaust memory */
    expect_error("{% for i in range(1000000000) %}{% endfor %}", NULL, TL_ERR_LIMIT, "work limit");
    expect_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", NULL, TL_ERR_LIMIT, "deeper than");
    expect_error("{{ 'x' * 100000000 }}", NULL, TL_ERR_LIMIT, "longer than");
    expect_error("{% set ns = namespace(s='xxxxxxxxxxxxxxxx') %}{% for i in range(30) %}{% set ns.s = ns.s ~ ns.s %}"
                 "{% endfor %}",
                 NULL, TL_ERR_LIMIT, "template:");
    expect_error("{% for i in range(100) %}{% for j in range(100) %}{{ 'x' * 1000 }}{% endfor %}{% endfor %}", NULL,
                 TL_ERR_LIMIT, "output larger");
    {
        /* nesting deeper than the parser allows is a syntax error, not a stack overflow */
        tl_strbuf deep = TL_STRBUF_INIT;
        tl_strbuf_puts(&deep, "{{ ");
        for (int i = 0; i < 5000; i++)
            tl_strbuf_putc(&deep, '(');
        tl_strbuf_puts(&deep, "1");
        for (int i = 0; i < 5000; i++)
            tl_strbuf_putc(&deep, ')');
        tl_strbuf_puts(&deep, " }}");
        expect_error(tl_strbuf_cstr(&deep), NULL, TL_ERR_FORMAT, "nested too deeply");
        tl_strbuf_clear(&deep);
        for (int i = 0; i < 5000; i++)
            tl_strbuf_puts(&deep, "{% if true %}");
        expect_error(tl_strbuf_cstr(&deep), NULL, TL_ERR_FORMAT, "nested too deeply");
        tl_strbuf_free(&deep);
    }
    return TEST_DONE();
}
