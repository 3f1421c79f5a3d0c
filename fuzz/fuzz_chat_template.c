/* Fuzz target: chat templates. The input is up to three parts separated by NUL bytes:
 * tokenizer_config.json (BOS/EOS and the chat_template to recognise), a JSON list of
 * {"role", "content"} messages, and chat_template.jinja. They go beside the demo model's
 * tokenizer.json; the messages are then rendered with the recognised template and with every
 * named one, and the prompt is encoded. */
#include "fuzz.h"

#include "or1/core.h"
#include "or1/io.h"
#include "or1/tokenizer.h"

#include <cjson/cJSON.h>
#include <stdbool.h>

enum { MAX_MESSAGES = 64 };

/* The i-th NUL-separated part of the input (empty when there are fewer). */
static const uint8_t *part(const uint8_t *data, size_t n, int i, size_t *len) {
    size_t s = 0;
    for (; i > 0 && s <= n; i--) {
        const uint8_t *z = memchr(data + s, 0, n - s);
        s = z ? (size_t)(z - data) + 1 : n + 1;
    }
    if (s > n) return *len = 0, data + n;
    const uint8_t *z = memchr(data + s, 0, n - s);
    *len = z ? (size_t)(z - data) - s : n - s;
    return data + s;
}

/* Copies the demo model's tokenizer.json into the scratch folder (once). */
static void copy_tokenizer(void) {
    static bool done;
    char *text = NULL;
    size_t len;
    if (done) return;
    if (or1_read_file(OR1_FUZZ_ROOT "/models/arith-base/tokenizer.json", 1 << 20, &text, &len)) abort();
    fuzz_file((const uint8_t *)text, len, "tokenizer.json");
    free(text);
    done = true;
}

/* Reads the messages (pointing into j); entries that are not two strings are skipped. */
static size_t messages(const cJSON *j, or1_chat_message *m) {
    size_t k = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, j) {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(e, "role");
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "content");
        if (k < MAX_MESSAGES && cJSON_IsString(r) && cJSON_IsString(c))
            m[k++] = (or1_chat_message){.role = r->valuestring, .content = c->valuestring};
    }
    return k;
}

/* Renders the messages with one template (NULL: the recognised one) and encodes the prompt. */
static void render(const or1_tokenizer *t, const char *name, const or1_chat_message *m, size_t k,
                   const or1_chat_vars *v) {
    char *text = NULL;
    int32_t *ids = NULL;
    size_t n;
    if (or1_tokenizer_chat(t, name, m, k, v, &text) == 0 &&
        or1_tokenizer_encode(t, text, strlen(text), 0, &ids, &n) == 0)
        free(ids);
    free(text);
}

/* Writes the parts, loads the tokenizer folder and renders the messages every way. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    copy_tokenizer();
    size_t len[3];
    const uint8_t *p[3];
    for (int i = 0; i < 3; i++) p[i] = part(data, n, i, &len[i]);
    char jinja[128];
    snprintf(jinja, sizeof jinja, "%s/chat_template.jinja", fuzz_dir());
    if (len[2]) fuzz_file(p[2], len[2], "chat_template.jinja");
    const char *cfg = fuzz_file(p[0], len[0], "tokenizer_config.json");
    or1_tokenizer *t = or1_tokenizer_load(fuzz_dir());
    cJSON *j = t ? or1_json_parse((const char *)p[1], len[1], "messages") : NULL;
    if (t) {
        or1_chat_message m[MAX_MESSAGES];
        size_t k = messages(j, m);
        or1_chat_vars given = or1_chat_vars_default();
        if (cJSON_IsArray(j) && cJSON_IsObject(cJSON_GetArrayItem(j, 0)))
            or1_chat_vars_parse(cJSON_GetObjectItemCaseSensitive(j->child, "chat_template_kwargs"), "fuzz", &given);
        for (int g = 0; g < 8; g++) {
            or1_chat_vars v = {.add_generation_prompt = g & 1, .enable_thinking = (g >> 1) - 1};
            if (g == 7) v = given;
            render(t, NULL, m, k, &v);
            for (int i = 0; or1_chat_template_names[i]; i++) render(t, or1_chat_template_names[i], m, k, &v);
        }
        or1_tokenizer_free(t);
    }
    cJSON_Delete(j);
    unlink(cfg);
    unlink(jinja);
    return 0;
}
