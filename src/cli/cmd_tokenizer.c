/* or1 tokenize / detokenize / chat: JSONL in, JSONL out, through the tokenizer library. */
#include "cli.h"

#include "or1/core.h"
#include "or1/io.h"
#include "or1/tokenizer.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* Writes len bytes of UTF-8 as a JSON string literal; unlike a C string it may hold NUL
 * (a token can stand for byte 0). */
static void write_text(FILE *f, const char *s, size_t len) {
    fputc('"', f);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c == '\n') fputs("\\n", f);
        else if (c == '\r') fputs("\\r", f);
        else if (c == '\t') fputs("\\t", f);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

/* The flags the three commands share. */
#define TOKENIZER_IO_FLAGS                                                                                    \
    FLAG_NEED("tokenizer", "tokenizer.json or its folder (with tokenizer_config.json)"),                     \
        FLAG_PATH("input", "-", "JSONL input; -: stdin"), FLAG_PATH("output", "-", "JSONL output; -: stdout")

/* Opens --tokenizer and the --input / --output streams shared by the three commands. */
static int open_io(cli_args *a, or1_tokenizer **t, or1_jsonl_reader *r, FILE **out) {
    const char *path = cli_str(a, "tokenizer"), *in = cli_str(a, "input"), *outp = cli_str(a, "output");
    *t = or1_tokenizer_load(path);
    if (!*t) return -1;
    if (or1_jsonl_open(r, in) != 0) {
        or1_tokenizer_free(*t);
        return -1;
    }
    *out = strcmp(outp, "-") != 0 ? fopen(outp, "w") : stdout;
    if (!*out) {
        or1_jsonl_close(r);
        or1_tokenizer_free(*t);
        return or1_fail("%s: cannot open for writing", outp);
    }
    return 0;
}

/* Closes what open_io opened; a write error turns into a failure. */
static int close_io(or1_tokenizer *t, or1_jsonl_reader *r, FILE *out, int rc) {
    or1_jsonl_close(r);
    or1_tokenizer_free(t);
    if (fflush(out) != 0 && rc == 0) rc = or1_fail("write error on the output");
    if (out != stdout) fclose(out);
    return rc == 0 ? 0 : 1;
}

/* The flags of `or1 tokenize`. */
static const cli_flag_spec tokenize_flags[] = {
    TOKENIZER_IO_FLAGS,
    FLAG_SWITCH("add-special", "add the tokenizer's BOS/EOS as its post-processor says"),
    FLAG_SWITCH("split-special", "read special-token text in the input as those tokens"),
};

/* {"text": "..."} -> {"ids": [...]} per line; the text may hold U+0000 (a \u0000 escape). */
static int cmd_tokenize(cli_args *a) {
    bool add = cli_flag(a, "add-special"), split = cli_flag(a, "split-special");
    or1_tokenizer *t;
    or1_jsonl_reader r;
    FILE *out;
    if (open_io(a, &t, &r, &out) != 0) return 1;
    if (cli_check_unused(a) != 0) return close_io(t, &r, out, -1);
    unsigned flags = (add ? OR1_TOK_ADD_SPECIAL : 0) | (split ? OR1_TOK_SPLIT_SPECIAL : 0);
    char *text;
    size_t len;
    int got;
    while ((got = or1_tokenizer_read_text(&r, "text", &text, &len)) == 1) {
        int32_t *ids = NULL;
        size_t n = 0;
        int rc = or1_tokenizer_encode(t, text, len, flags, &ids, &n);
        free(text);
        if (rc != 0) {
            or1_fail_ctx("%s", r.where);
            return close_io(t, &r, out, -1);
        }
        fputs("{\"ids\": ", out);
        or1_json_write_ints(out, ids, n);
        fputs("}\n", out);
        free(ids);
    }
    return close_io(t, &r, out, got);
}

const cli_command cli_cmd_tokenize = CLI_COMMAND(
    "tokenize", cmd_tokenize, "JSONL {\"text\"} -> {\"ids\"} with a tokenizer.json", tokenize_flags,
    "or1 tokenize --tokenizer models/arith-base --input texts.jsonl --output ids.jsonl");

/* The flags of `or1 detokenize`. */
static const cli_flag_spec detokenize_flags[] = {
    TOKENIZER_IO_FLAGS,
    FLAG_SWITCH("skip-special", "leave special tokens out of the text"),
};

/* {"ids": [...]} -> {"text": "..."} per line. */
static int cmd_detokenize(cli_args *a) {
    bool skip = cli_flag(a, "skip-special");
    or1_tokenizer *t;
    or1_jsonl_reader r;
    FILE *out;
    if (open_io(a, &t, &r, &out) != 0) return 1;
    if (cli_check_unused(a) != 0) return close_io(t, &r, out, -1);
    cJSON *row;
    int got;
    while ((got = or1_jsonl_next(&r, &row)) == 1) {
        const char *where = r.where;
        int32_t *ids = NULL;
        size_t n = 0, len = 0;
        char *text = NULL;
        int rc = or1_json_int_array(row, "ids", 0, INT32_MAX, &ids, &n, where);
        if (rc == 0 && (rc = or1_tokenizer_decode(t, ids, n, skip, &text, &len)) != 0)
            or1_fail_ctx("%s", where);
        cJSON_Delete(row);
        free(ids);
        if (rc != 0) return close_io(t, &r, out, -1);
        fputs("{\"text\": ", out);
        write_text(out, text, len);
        fputs("}\n", out);
        free(text);
    }
    return close_io(t, &r, out, got);
}

const cli_command cli_cmd_detokenize = CLI_COMMAND(
    "detokenize", cmd_detokenize, "JSONL {\"ids\"} -> {\"text\"} (--skip-special)", detokenize_flags,
    "or1 detokenize --tokenizer models/arith-base --input ids.jsonl --skip-special");

/* The flags of `or1 chat`. */
static const cli_flag_spec chat_flags[] = {
    TOKENIZER_IO_FLAGS,
    FLAG_STR("template", "NAME", NULL, "deepseek-r1 | deepseek | chatml | llama3 | plain; default: the tokenizer's"),
    FLAG_SWITCH("no-generation-prompt", "end after the last message (no assistant turn opened)"),
    FLAG_CHAT_KWARGS,
};

/* {"messages": [...], "chat_template_kwargs": {...}} -> {"text": prompt, "ids": [...]} per line. */
static int cmd_chat(cli_args *a) {
    const char *tpl = cli_str(a, "template");
    or1_chat_vars vars;
    if (cli_chat_vars(a, &vars) != 0) return 1;
    vars.add_generation_prompt = !cli_flag(a, "no-generation-prompt");
    or1_tokenizer *t;
    or1_jsonl_reader r;
    FILE *out;
    if (open_io(a, &t, &r, &out) != 0) return 1;
    if (cli_check_unused(a) != 0) return close_io(t, &r, out, -1);
    cJSON *row;
    int got;
    while ((got = or1_jsonl_next(&r, &row)) == 1) {
        const char *where = r.where;
        size_t nid = 0;
        char *text = NULL;
        int32_t *ids = NULL;
        int rc = cli_row_chat(row, where, t, tpl, &vars, &text);
        if (rc == 0 && (rc = or1_tokenizer_encode(t, text, strlen(text), 0, &ids, &nid)) != 0) or1_fail_ctx("%s", where);
        cJSON_Delete(row);
        if (rc != 0) {
            free(text);
            return close_io(t, &r, out, -1);
        }
        fputs("{\"text\": ", out);
        or1_json_write_string(out, text);
        fputs(", \"ids\": ", out);
        or1_json_write_ints(out, ids, nid);
        fputs("}\n", out);
        free(text);
        free(ids);
    }
    return close_io(t, &r, out, got);
}

const cli_command cli_cmd_chat = CLI_COMMAND(
    "chat", cmd_chat, "JSONL {\"messages\"} -> chat-template prompt {\"text\", \"ids\"}", chat_flags,
    "or1 chat --tokenizer models/arith-base --template chatml --input messages.jsonl");

/* The flags of `or1 render-template`. */
static const cli_flag_spec render_flags[] = {
    FLAG_NEED("template", "a Jinja chat template file (chat_template.jinja)"),
    FLAG_PATH("input", "-", "JSONL of template variables ({\"messages\": [...], \"tools\": ...}); -: stdin"),
    FLAG_PATH("output", "-", "JSONL output; -: stdout"),
};

/* Each line's variables -> {"text": rendered} or {"error": message}: a row the template
 * refuses (raise_exception, an undefined value) is reported on its line, and the command
 * then exits 1 after the other rows. */
static int cmd_render_template(cli_args *a) {
    const char *path = cli_str(a, "template"), *in = cli_str(a, "input"), *outp = cli_str(a, "output");
    char *src = NULL;
    size_t len;
    or1_jsonl_reader r;
    if (cli_check_unused(a) != 0 || or1_read_file(path, 16 << 20, &src, &len) != 0) return 1;
    if (or1_jsonl_open(&r, in) != 0) return free(src), 1;
    FILE *out = strcmp(outp, "-") != 0 ? fopen(outp, "w") : stdout;
    if (!out) {
        free(src);
        or1_jsonl_close(&r);
        or1_fail("%s: cannot open for writing", outp);
        return 1;
    }
    cJSON *row;
    int got, failed = 0;
    while ((got = or1_jsonl_next(&r, &row)) == 1) {
        char *text;
        size_t n;
        int rc = or1_jinja_render(src, len, row, path, &text, &n);
        cJSON_Delete(row);
        fputs(rc == 0 ? "{\"text\": " : "{\"error\": ", out);
        if (rc == 0) write_text(out, text, n);
        else or1_json_write_string(out, or1_error());
        fputs("}\n", out);
        free(text);
        failed |= rc != 0;
    }
    or1_jsonl_close(&r);
    free(src);
    if (fflush(out) != 0 && got == 0) got = or1_fail("write error on the output");
    if (out != stdout) fclose(out);
    if (got == 0 && failed) or1_fail("some rows were refused by the template (their \"error\")");
    return got != 0 || failed;
}

const cli_command cli_cmd_render_template = CLI_COMMAND(
    "render-template", cmd_render_template, "JSONL template variables -> {\"text\"} rendered by a Jinja chat template",
    render_flags, "or1 render-template --template chat_template.jinja --input vars.jsonl");
