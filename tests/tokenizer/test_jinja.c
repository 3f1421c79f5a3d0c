/* Unit tests of the Jinja interpreter without Python: error messages name the template and
 * line:column, the limits on untrusted templates hold (recursion, output, range, memory), and a
 * few renders whose text is written out here (the oracle test, jinja_oracle.py, compares
 * everything else with jinja2). */
#include "or1/core.h"
#include "or1/tokenizer.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"

/* Renders src with vars (JSON text); the output, or NULL on error (the message in or1_error()). */
static char *render(const char *src, const char *vars) {
    cJSON *v = cJSON_Parse(vars ? vars : "{}");
    char *out = NULL;
    size_t n;
    int rc = or1_jinja_render(src, strlen(src), v, "t.jinja", &out, &n);
    cJSON_Delete(v);
    return rc == 0 ? out : NULL;
}

/* Checks that src renders to want. */
static void renders(int line, const char *src, const char *vars, const char *want) {
    char *out = render(src, vars);
    check(out && !strcmp(out, want), line, "%s -> \"%s\", want \"%s\"", src, out ? out : or1_error(), want);
    free(out);
}

/* Checks that src fails with a message holding each of the NULL-terminated parts. */
static void fails(int line, const char *src, const char *vars, const char *part1, const char *part2) {
    char *out = render(src, vars);
    const char *e = or1_error();
    check(!out && strstr(e, part1) && (!part2 || strstr(e, part2)), line, "%s -> \"%s\" (error \"%s\"), want an error with \"%s\"",
          src, out ? out : "", e, part1);
    free(out);
}

/* Errors: the template's name, line and column, and what went wrong. */
static void test_errors(void) {
    fails(__LINE__, "a\n{% if x %}b", NULL, "t.jinja:2:", "expected 'endif'");
    fails(__LINE__, "{{ x | nosuch }}", NULL, "t.jinja:1:8: filter 'nosuch' is not supported", NULL);
    fails(__LINE__, "{{ x is nosuch }}", NULL, "t.jinja:1:9: test 'nosuch' is not supported", NULL);
    fails(__LINE__, "\n  {% include 'x' %}", NULL, "t.jinja:2:6: tag 'include' is not supported", NULL);
    fails(__LINE__, "\n\n  {{ raise_exception('boom: ' ~ n) }}", "{\"n\": 3}", "t.jinja:3:", "raise_exception: boom: 3");
    fails(__LINE__, "{{ a.b }}", NULL, "t.jinja:1:", "'a' is undefined");
    fails(__LINE__, "{{ m.x.y }}", "{\"m\": {}}", "'dict object' has no attribute 'x'", NULL);
    fails(__LINE__, "{{ 'a' + 1 }}", NULL, "t.jinja:1:8: unsupported operand type(s) for +: 'str' and 'int'", NULL);
    fails(__LINE__, "{{ 'unterminated }}", NULL, "t.jinja:1:4: unterminated string literal", NULL);
    fails(__LINE__, "{{ 1 }", NULL, "unclosed tag", NULL);
    fails(__LINE__, "{# open", NULL, "t.jinja:1:1: unclosed comment", NULL);
    fails(__LINE__, "{% endfor %}", NULL, "unexpected 'endfor'", NULL);
    fails(__LINE__, "{% break %}", NULL, "'break' outside a loop", NULL);
    fails(__LINE__, "{{ x ? 1 }}", NULL, "t.jinja:1:6: unexpected character '?'", NULL);
    fails(__LINE__, "{{ 99999999999999999999 }}", NULL, "integer literal out of range", NULL);
    fails(__LINE__, "{% set ns = namespace() %}{% set ns._x = 1 %}", NULL, "may not start with '_'", NULL);
    fails(__LINE__, "{% set n = 1 %}{% set n.x = 1 %}", NULL, "non-namespace", NULL);
    fails(__LINE__, "{{ l.append(1) }}", "{\"l\": []}", "list.append() is not supported", NULL);
    fails(__LINE__, "{{ 1 // 0 }}", NULL, "division or modulo by zero", NULL);
    fails(__LINE__, "{{ 9223372036854775807 + 1 }}", NULL, "integer overflow", NULL);
    fails(__LINE__, "{{ x | tojson }}", NULL, "Object of type Undefined is not JSON serializable", NULL);
    fails(__LINE__, "x", "[]", "t.jinja: the template variables must be a JSON object", NULL);
    fails(__LINE__, "\xff", NULL, "not valid UTF-8", NULL);
}

/* Limits: what an untrusted template can make the interpreter do is bounded. */
static void test_limits(void) {
    fails(__LINE__, "{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}", NULL, "recurses too deeply", NULL);
    char deep[4100];
    memset(deep, '(', 2000);
    strcpy(deep + 2000, "1");
    memset(deep + 2001, ')', 2000);
    deep[4001] = '\0';
    char src[4200];
    snprintf(src, sizeof src, "{{ %s }}", deep);
    fails(__LINE__, src, NULL, "nested too deeply", NULL);
    fails(__LINE__, "{{ range(1000000) | length }}", NULL, "range too big", NULL);
    fails(__LINE__, "{% set s = 'x' * 1000 %}{% for i in range(100000) %}{{ s }}{% endfor %}", NULL, "exceeds 64 MiB", NULL);
    fails(__LINE__, "{{ 'x' * 1000000000 }}", NULL, "exceeds 64 MiB", NULL);
    char *out = render("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", NULL);
    CHECK(!out && (strstr(or1_error(), "runs too long") || strstr(or1_error(), "MiB of memory")), "10^10 iterations stopped: %s",
          or1_error());
    free(out);
    fails(__LINE__, "{% set ns = namespace(l=[]) %}{% for i in range(30) %}{% set ns.l = ns.l + ns.l + [i] %}{% endfor %}", NULL,
          "memory", NULL);
}

/* Renders whose text is known: whitespace control, Python printing, tojson, scoping. */
static void test_renders(void) {
    renders(__LINE__, "  {% if true %}\n  x\n  {% endif %}\n", NULL, "  x\n");
    renders(__LINE__, "a  {%- if true -%}  b  {%- endif -%}  c", NULL, "abc");
    renders(__LINE__, "{{ [1.0, 1e20, 0.0001, 1e-05, none, true, 'it\\'s'] }}", NULL, "[1.0, 1e+20, 0.0001, 1e-05, None, True, \"it's\"]");
    renders(__LINE__, "{{ d | tojson }}|{{ d | tojson(indent=2) }}", "{\"d\": {\"b\": [1, 2.5], \"a\": \"é\"}}",
            "{\"b\": [1, 2.5], \"a\": \"é\"}|{\n  \"b\": [\n    1,\n    2.5\n  ],\n  \"a\": \"é\"\n}");
    renders(__LINE__, "{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{% endfor %}{{ x }}", NULL, "1");
    renders(__LINE__, "{% set ns = namespace(x=1) %}{% for i in [1] %}{% set ns.x = 2 %}{% endfor %}{{ ns.x }}", NULL, "2");
    renders(__LINE__, "{{ u }}|{{ u is defined }}|{{ u is not none }}|{{ 'x' in u }}|{% for i in u %}.{% endfor %}", NULL,
            "|False|True|False|");
    renders(__LINE__, "{% generation %}g{% endgeneration %}", NULL, "g");
    renders(__LINE__, "{{ s.split('</think>')[-1].lstrip('\\n') }}", "{\"s\": \"<think>r</think>\\n\\nanswer\"}", "answer");
}

int main(void) {
    test_errors();
    test_limits();
    test_renders();
    return check_report();
}
