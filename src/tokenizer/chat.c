/* tokenizer_config.json (special tokens, chat template) and chat rendering: the model's own
 * Jinja template through the interpreter (jinja_*.c) with transformers' variables, or, when a
 * family is named, the families written in C ("chatml", "llama3", ...), which a template's
 * markers also name for or1_tokenizer_chat_template. */
#include "tok.h"

#include "or1/core.h"
#include "or1/io.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_CONFIG = 16 << 20, MAX_SYSTEM = 4096 };

const char *const or1_chat_template_names[] = {"deepseek-r1", "deepseek", "chatml", "llama3",
                                               "plain", NULL};

/* Qwen3's empty thinking block, as the generation prompt writes it with enable_thinking false
 * (and as its template source spells it). */
static const char THINK_OFF[] = "<think>\n\n</think>\n\n", THINK_OFF_JINJA[] = "<think>\\n\\n</think>\\n\\n";
static const char DS_BOS[] = "<｜begin▁of▁sentence｜>";
static const char LLAMA3_BOS[] = "<|begin_of_text|>";

/* A token named in tokenizer_config.json: a string, or an object with "content". */
static const char *config_token(const cJSON *cfg, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (cJSON_IsObject(v)) v = cJSON_GetObjectItemCaseSensitive(v, "content");
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The chat template source: a string, or the "default" entry of a list of named ones. */
static const char *config_template(const cJSON *cfg) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, "chat_template"), *e;
    if (cJSON_IsString(v)) return v->valuestring;
    if (!cJSON_IsArray(v)) return NULL;
    cJSON_ArrayForEach(e, v) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
        const cJSON *tpl = cJSON_GetObjectItemCaseSensitive(e, "template");
        if (cJSON_IsString(name) && strcmp(name->valuestring, "default") == 0 && cJSON_IsString(tpl))
            return tpl->valuestring;
    }
    return NULL;
}

/* The default system prompt a ChatML template writes when the conversation has none:
 * "<|im_start|>system\n...<|im_end|>" inside one string literal (no quote in between, so
 * no expression). Jinja escapes \n, \t, \', \" and \\ are undone. NULL when there is none. */
static char *chatml_default_system(const char *tpl) {
    static const char open[] = "<|im_start|>system\\n";
    for (const char *p = strstr(tpl, open); p; p = strstr(p + 1, open)) {
        const char *s = p + strlen(open), *e = strstr(s, "<|im_end|>");
        if (!e || e == s || e - s > MAX_SYSTEM || strcspn(s, "'\"") < (size_t)(e - s)) continue;
        char *out = or1_malloc((size_t)(e - s) + 1), *w = out;
        for (const char *c = s; c < e; c++) {
            if (*c == '\\' && c + 1 < e) {
                c++;
                *w++ = *c == 'n' ? '\n' : *c == 't' ? '\t' : *c;
            } else {
                *w++ = *c;
            }
        }
        *w = '\0';
        return out;
    }
    return NULL;
}

/* Names the template family from markers of its source, or NULL when unknown; also reads
 * how DeepSeek templates treat several system messages (accumulate or keep the last), and
 * for ChatML the default system prompt, whether generation opens with <think> and whether
 * enable_thinking false closes it, for Llama 3 whether the generation prompt is unconditional. */
static const char *recognise(or1_tokenizer *t, const char *tpl) {
    if (strstr(tpl, "<｜Assistant｜>")) {
        t->chat_join_systems = strstr(tpl, "ns.system_prompt = ns.system_prompt +") != NULL;
        return strstr(tpl, "<think>") ? "deepseek-r1" : "deepseek";
    }
    if (strstr(tpl, "<|im_start|>")) {
        t->chat_default_system = chatml_default_system(tpl);
        t->chat_opens_think = strstr(tpl, "<|im_start|>assistant\\n<think>\\n") != NULL;
        t->chat_qwen3_reasoning = strstr(tpl, "reasoning_content") && strstr(tpl, "last_query_index");
        t->chat_thinking_switch = strstr(tpl, "enable_thinking is false") && strstr(tpl, THINK_OFF_JINJA);
        return "chatml";
    }
    if (strstr(tpl, "<|start_header_id|>") && !strstr(tpl, "Cutting Knowledge")) {
        t->chat_gen_always = !strstr(tpl, "add_generation_prompt");
        return "llama3";
    }
    return NULL;
}

const char *const tok_special_names[TOK_N_SPECIAL] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                                      "pad_token", "cls_token", "mask_token"};

void tok_set_special(or1_tokenizer *t, int i, const char *text) {
    free(t->special[i]);
    t->special[i] = text ? or1_strdup(text) : NULL;
}

int tok_set_chat_source(or1_tokenizer *t, const char *src, size_t len) {
    if (memchr(src, 0, len)) return or1_fail("chat template: holds a NUL byte");
    free(t->chat_source);
    free(t->chat_default_system);
    t->chat_default_system = NULL;
    t->chat_source = or1_malloc(len + 1);
    memcpy(t->chat_source, src, len);
    t->chat_source[len] = '\0';
    t->chat_source_len = len;
    t->chat_name = recognise(t, t->chat_source);
    return 0;
}

/* Takes the template in dir/chat_template.jinja, where newer checkpoints keep it outside
 * tokenizer_config.json; nothing happens when the file is absent. */
static int load_jinja_file(or1_tokenizer *t, const char *dir) {
    char *path = or1_path_join(dir, "chat_template.jinja"), *text = NULL;
    size_t len;
    int rc = 0;
    if (or1_is_file(path) && (rc = or1_read_file(path, MAX_CONFIG, &text, &len)) == 0)
        rc = tok_set_chat_source(t, text, len);
    free(text);
    free(path);
    return rc;
}

/* Applies a tokenizer_config.json object (where names it): the special tokens (BOS/EOS ids) and
 * the chat template; *have_tpl tells whether it held one. */
int tok_apply_config(or1_tokenizer *t, const cJSON *cfg, const char *where, bool *have_tpl) {
    if (!cJSON_IsObject(cfg)) return or1_fail("%s: expected a JSON object", where);
    for (int i = 0; i < TOK_N_SPECIAL; i++) tok_set_special(t, i, config_token(cfg, tok_special_names[i]));
    if (t->special[TOK_BOS]) t->bos_id = or1_tokenizer_token_id(t, t->special[TOK_BOS]);
    if (t->special[TOK_EOS]) t->eos_id = or1_tokenizer_token_id(t, t->special[TOK_EOS]);
    const char *tpl = config_template(cfg);
    *have_tpl = tpl != NULL;
    return tpl ? tok_set_chat_source(t, tpl, strlen(tpl)) : 0;
}

/* Reads tokenizer_config.json in dir when present: the special tokens (BOS/EOS ids) and the
 * chat template (or chat_template.jinja beside it). A NULL dir (a tokenizer from a GGUF file)
 * reads nothing. */
int tok_load_config(or1_tokenizer *t, const char *dir) {
    t->chat_name = "plain";
    t->chat_join_systems = -1;
    if (!dir) return 0;
    char *path = or1_path_join(dir, "tokenizer_config.json"), *text = NULL;
    size_t len;
    int rc = 0;
    bool have_tpl = false;
    if (or1_is_file(path) && (rc = or1_read_file(path, MAX_CONFIG, &text, &len)) == 0) {
        cJSON *cfg = or1_json_parse(text, len, path);
        rc = cfg ? tok_apply_config(t, cfg, path, &have_tpl) : -1;
        cJSON_Delete(cfg);
    }
    free(text);
    free(path);
    if (rc == 0 && !have_tpl) rc = load_jinja_file(t, dir);
    return rc;
}

/* The template family recognised at load. */
const char *or1_tokenizer_chat_template(const or1_tokenizer *t) { return t->chat_name; }

/* A growable string. */
typedef struct {
    char *s;
    size_t n, cap;
} sbuf;

/* Appends a NUL-terminated string. */
static void put(sbuf *b, const char *s) {
    size_t k = strlen(s);
    if (b->n + k + 1 > b->cap) {
        while (b->n + k + 1 > b->cap) b->cap = b->cap ? b->cap * 2 : 256;
        b->s = or1_realloc(b->s, b->cap);
    }
    memcpy(b->s + b->n, s, k + 1);
    b->n += k;
}

/* Appends s[0, k). */
static void put_n(sbuf *b, const char *s, size_t k) {
    char *tmp = or1_malloc(k + 1);
    memcpy(tmp, s, k);
    tmp[k] = '\0';
    put(b, tmp);
    free(tmp);
}

/* Fails unless the role is one of system, user, assistant. */
static int check_role(const or1_chat_message *m, size_t i, const char *tpl) {
    if (!m->role || !m->content) return or1_fail("chat: message %zu lacks a role or content", i);
    if (strcmp(m->role, "system") && strcmp(m->role, "user") && strcmp(m->role, "assistant"))
        return or1_fail("chat: message %zu: role \"%.32s\" is not supported by template %s", i,
                        m->role, tpl);
    return 0;
}

/* DeepSeek: BOS, the system prompt, then <｜User｜>/<｜Assistant｜> turns. Several system
 * messages are joined by blank lines (V3) or the last one is kept (R1), as the template
 * says or else as the named family does. The R1 variant drops the reasoning of earlier
 * assistant turns (up to the last </think>) and opens the generation with <think>\n. */
static void render_deepseek(const or1_tokenizer *t, bool r1, const or1_chat_message *m, size_t n,
                            bool gen, sbuf *b) {
    put(b, t->special[TOK_BOS] ? t->special[TOK_BOS] : DS_BOS);
    bool join = t->chat_join_systems >= 0 ? t->chat_join_systems == 1 : !r1, first = true;
    const char *last = NULL;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(m[i].role, "system") != 0) continue;
        last = m[i].content;
        if (!join) continue;
        if (!first) put(b, "\n\n");
        put(b, m[i].content);
        first = false;
    }
    if (!join && last) put(b, last);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(m[i].role, "user") == 0) {
            put(b, "<｜User｜>");
            put(b, m[i].content);
        } else if (strcmp(m[i].role, "assistant") == 0) {
            const char *c = m[i].content, *k;
            if (r1)
                while ((k = strstr(c, "</think>"))) c = k + strlen("</think>");
            put(b, "<｜Assistant｜>");
            put(b, c);
            put(b, "<｜end▁of▁sentence｜>");
        }
    }
    if (gen) put(b, r1 ? "<｜Assistant｜><think>\n" : "<｜Assistant｜>");
}

/* Appends s[0, k) without the newlines at its start (lead) and at its end (tail). */
static void put_strip_nl(sbuf *b, const char *s, size_t k, bool lead, bool tail) {
    while (lead && k && *s == '\n') s++, k--;
    while (tail && k && s[k - 1] == '\n') k--;
    put_n(b, s, k);
}

/* The index of the last user message that is not a wrapped tool response (Qwen3's
 * last_query_index), or n - 1 when there is none. */
static size_t qwen3_last_query(const or1_chat_message *m, size_t n) {
    static const char open[] = "<tool_response>", close[] = "</tool_response>";
    for (size_t i = n; i-- > 0;) {
        if (strcmp(m[i].role, "user") != 0) continue;
        const char *c = m[i].content;
        size_t k = strlen(c);
        bool wrapped = strncmp(c, open, strlen(open)) == 0 && k >= strlen(close) &&
                       strcmp(c + k - strlen(close), close) == 0;
        if (!wrapped) return i;
    }
    return n ? n - 1 : 0;
}

/* A Qwen3 assistant turn's body: with a </think>, the answer is what follows the last one
 * and the reasoning what precedes the first one, after its last <think>. Turns up to the last
 * user query keep the answer alone; later ones keep the reasoning in a <think> block when
 * they have any or are the conversation's last message. */
static void put_qwen3_assistant(sbuf *b, const char *c, bool after_query, bool last) {
    const char *end = strstr(c, "</think>"), *ans = c, *r = c, *k;
    size_t rlen = 0;
    if (end) {
        for (ans = end; (k = strstr(ans, "</think>")); ans = k + strlen("</think>")) {}
        while (*ans == '\n') ans++;
        for (k = c; (k = strstr(k, "<think>")) && k < end; k += strlen("<think>")) r = k + strlen("<think>");
        while (end > r && end[-1] == '\n') end--;
        while (r < end && *r == '\n') r++;
        rlen = (size_t)(end - r);
    }
    if (after_query && (last || rlen)) {
        put(b, "<think>\n");
        put_strip_nl(b, r, rlen, true, true);
        put(b, "\n</think>\n\n");
        put_strip_nl(b, ans, strlen(ans), true, false);
    } else {
        put(b, ans);
    }
}

/* ChatML (Qwen): <|im_start|>role\ncontent<|im_end|>\n per message, after the template's
 * default system prompt when the conversation does not open with one; Qwen3's templates
 * rewrite assistant turns around their reasoning; the generation prompt opens <think> when
 * the template's does, and closes an empty one when enable_thinking is false and the template
 * has that switch. */
static void render_chatml(const or1_tokenizer *t, const or1_chat_message *m, size_t n, const or1_chat_vars *v,
                          sbuf *b) {
    if (t->chat_default_system && (n == 0 || strcmp(m[0].role, "system") != 0)) {
        put(b, "<|im_start|>system\n");
        put(b, t->chat_default_system);
        put(b, "<|im_end|>\n");
    }
    size_t query = qwen3_last_query(m, n);
    for (size_t i = 0; i < n; i++) {
        put(b, "<|im_start|>");
        put(b, m[i].role);
        put(b, "\n");
        if (t->chat_qwen3_reasoning && strcmp(m[i].role, "assistant") == 0)
            put_qwen3_assistant(b, m[i].content, i > query, i + 1 == n);
        else
            put(b, m[i].content);
        put(b, "<|im_end|>\n");
    }
    if (!v->add_generation_prompt) return;
    put(b, t->chat_opens_think ? "<|im_start|>assistant\n<think>\n" : "<|im_start|>assistant\n");
    if (t->chat_thinking_switch && v->enable_thinking == 0) put(b, THINK_OFF);
}

/* True for the whitespace Jinja's trim removes (ASCII). */
static bool trim_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

/* Llama 3: BOS, then a header per message and its trimmed content closed by <|eot_id|>; the
 * assistant header to generate (always, where the template does not test the flag). */
static void render_llama3(const or1_tokenizer *t, const or1_chat_message *m, size_t n, bool gen,
                          sbuf *b) {
    put(b, t->special[TOK_BOS] ? t->special[TOK_BOS] : LLAMA3_BOS);
    for (size_t i = 0; i < n; i++) {
        put(b, "<|start_header_id|>");
        put(b, m[i].role);
        put(b, "<|end_header_id|>\n\n");
        const char *s = m[i].content, *e = s + strlen(s);
        while (s < e && trim_space(*s)) s++;
        while (e > s && trim_space(e[-1])) e--;
        put_n(b, s, (size_t)(e - s));
        put(b, "<|eot_id|>");
    }
    if (gen || t->chat_gen_always) put(b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

/* Plain text for small demo models without special tokens: the system prompt, then
 * "User: ..." / "Assistant: ..." lines, and "Assistant:" to generate. */
static void render_plain(const or1_chat_message *m, size_t n, bool gen, sbuf *b) {
    for (size_t i = 0; i < n; i++) {
        if (strcmp(m[i].role, "system") == 0) {
            put(b, m[i].content);
            put(b, "\n\n");
        } else {
            put(b, strcmp(m[i].role, "user") == 0 ? "User: " : "Assistant: ");
            put(b, m[i].content);
            put(b, "\n");
        }
    }
    if (gen) put(b, "Assistant:");
}

or1_chat_vars or1_chat_vars_default(void) { return (or1_chat_vars){.add_generation_prompt = true,
                                                                   .enable_thinking = OR1_CHAT_UNDEFINED}; }

/* The one variable the templates we render read (add_generation_prompt is the caller's flag,
 * as in transformers); anything else would be dropped without effect, so it is refused. */
int or1_chat_vars_parse(const cJSON *kwargs, const char *where, or1_chat_vars *v) {
    if (!kwargs || cJSON_IsNull(kwargs)) return 0;
    if (!cJSON_IsObject(kwargs)) return or1_fail("%s: chat_template_kwargs must be an object", where);
    for (const cJSON *e = kwargs->child; e; e = e->next) {
        const char *name = e->string ? e->string : "";
        if (strcmp(name, "enable_thinking") != 0)
            return or1_fail("%s: chat_template_kwargs: unknown key \"%.64s\" (known: enable_thinking)", where, name);
        if (!cJSON_IsBool(e)) return or1_fail("%s: chat_template_kwargs.enable_thinking must be true or false", where);
        v->enable_thinking = cJSON_IsTrue(e);
    }
    return 0;
}

/* The variables transformers' apply_chat_template hands a template: messages, tools and
 * documents (None), add_generation_prompt, enable_thinking when set, the special tokens. */
static cJSON *template_vars(const or1_tokenizer *t, const or1_chat_message *msgs, size_t n, const or1_chat_vars *v) {
    cJSON *vars = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(vars, "messages");
    for (size_t i = 0; i < n; i++) {
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", msgs[i].role);
        cJSON_AddStringToObject(m, "content", msgs[i].content);
        cJSON_AddItemToArray(list, m);
    }
    cJSON_AddNullToObject(vars, "tools");
    cJSON_AddNullToObject(vars, "documents");
    cJSON_AddBoolToObject(vars, "add_generation_prompt", v->add_generation_prompt);
    for (int i = 0; i < TOK_N_SPECIAL; i++)
        if (t->special[i]) cJSON_AddStringToObject(vars, tok_special_names[i], t->special[i]);
    if (v->enable_thinking != OR1_CHAT_UNDEFINED) cJSON_AddBoolToObject(vars, "enable_thinking", v->enable_thinking);
    return vars;
}

/* Renders the conversation with the tokenizer's own Jinja template. */
static int render_source(const or1_tokenizer *t, const or1_chat_message *msgs, size_t n, const or1_chat_vars *v,
                         char **text) {
    for (size_t i = 0; i < n; i++)
        if (!msgs[i].role || !msgs[i].content) return or1_fail("chat: message %zu lacks a role or content", i);
    cJSON *vars = template_vars(t, msgs, n, v);
    size_t len;
    int rc = or1_jinja_render(t->chat_source, t->chat_source_len, vars, "chat template", text, &len);
    cJSON_Delete(vars);
    if (rc == 0 && strlen(*text) != len) {
        free(*text);
        *text = NULL;
        rc = or1_fail("chat template: the prompt holds a NUL character");
    }
    return rc;
}

/* Renders the conversation with the named family, or else the tokenizer's own template (or
 * plain text when it has none). */
int or1_tokenizer_chat(const or1_tokenizer *t, const char *name, const or1_chat_message *msgs, size_t n,
                       const or1_chat_vars *vars, char **text) {
    bool gen = vars->add_generation_prompt;
    *text = NULL;
    if (!name && t->chat_source) return render_source(t, msgs, n, vars, text);
    if (!name) name = t->chat_name ? t->chat_name : "plain";
    int k = -1;
    for (int i = 0; or1_chat_template_names[i]; i++)
        if (strcmp(name, or1_chat_template_names[i]) == 0) k = i;
    if (k < 0)
        return or1_fail("chat: unknown template \"%.64s\" (known: deepseek-r1, deepseek, chatml, "
                        "llama3, plain)", name);
    for (size_t i = 0; i < n; i++)
        if (check_role(&msgs[i], i, name) != 0) return -1;
    sbuf b = {0};
    put(&b, "");
    switch (k) {
    case 0:
    case 1: render_deepseek(t, k == 0, msgs, n, gen, &b); break;
    case 2: render_chatml(t, msgs, n, vars, &b); break;
    case 3: render_llama3(t, msgs, n, gen, &b); break;
    default: render_plain(msgs, n, gen, &b); break;
    }
    *text = b.s;
    return 0;
}
