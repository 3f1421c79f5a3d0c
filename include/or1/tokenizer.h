/* or1 tokenizer: byte-level BPE from a Hugging Face tokenizer.json (Qwen2/2.5/3,
 * DeepSeek-R1-Distill-Qwen, Llama-3, GPT-2), added and special tokens, and the chat
 * templates our users train with.
 *
 * A loaded tokenizer is read-only apart from its BPE cache, which tolerates concurrent
 * encodes: any number of threads may call the encode/decode/chat functions on one
 * tokenizer at once. Loading and freeing are not concurrent with anything. */
#ifndef OR1_TOKENIZER_H
#define OR1_TOKENIZER_H

#include "or1/io.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cJSON cJSON;

typedef struct or1_tokenizer or1_tokenizer;

/* Encode flags. */
enum {
    /* Treat added tokens marked "special" as plain text (non-special added tokens still
     * match), like Hugging Face's split_special_tokens. */
    OR1_TOK_SPLIT_SPECIAL = 1u << 0,
    /* Apply the post-processor's single-sequence template (e.g. a leading BOS), like
     * Hugging Face's add_special_tokens=True. */
    OR1_TOK_ADD_SPECIAL = 1u << 1,
};

/* Loads tokenizer.json from path (the file, or a directory holding it); also reads
 * tokenizer_config.json beside it when present (chat template, BOS/EOS). A GGUF file gives the
 * tokenizer of its metadata (tokenizer.ggml.*, tokenizer.chat_template). NULL on error. */
or1_tokenizer *or1_tokenizer_load(const char *path);

/* Puts the tokenizer files of src into folder dir: tokenizer.json and tokenizer_config.json
 * written from a GGUF file's metadata, or copied from another folder (those it has; the folder
 * of a tokenizer.json path). */
int or1_tokenizer_carry(const char *src, const char *dir);

typedef struct or1_gguf_writer or1_gguf_writer;
/* Adds the tokenizer of src (a folder or a GGUF file) to a GGUF writer, as llama.cpp reads it;
 * a pre-tokenizer llama.cpp has no name for is an error. */
int or1_tokenizer_gguf_meta(const char *src, or1_gguf_writer *w);
void or1_tokenizer_free(or1_tokenizer *t);

/* Encodes len bytes of UTF-8 text into a new array *ids (free with free()) of *n ids.
 * Fails on invalid UTF-8, naming the byte offset. */
int or1_tokenizer_encode(const or1_tokenizer *t, const char *text, size_t len, unsigned flags,
                         int32_t **ids, size_t *n);

/* Reads the next non-blank row of r, a JSON object, and gives its string key as *len bytes of
 * UTF-8 in new *text (free()), NUL-terminated. A \u0000 escape is kept as U+0000, as Python's
 * json reads it (cJSON's strings would end there). 1 for a row, 0 at the end of the input, -1
 * on an error naming r->where: malformed JSON (a lone surrogate escape among it), a raw NUL
 * byte, a missing or non-string key. Invalid UTF-8 is left for or1_tokenizer_encode to refuse. */
int or1_tokenizer_read_text(or1_jsonl_reader *r, const char *key, char **text, size_t *len);

/* Decodes ids into new NUL-terminated UTF-8 *text (free with free()) of *len bytes; bytes
 * of a character split across tokens are joined, and byte sequences that stay invalid
 * become U+FFFD. Special tokens are dropped when skip_special. Fails on an id out of range. */
int or1_tokenizer_decode(const or1_tokenizer *t, const int32_t *ids, size_t n, bool skip_special,
                         char **text, size_t *len);

/* A new NUL-terminated copy of n bytes with every ill-formed UTF-8 sequence replaced by U+FFFD
 * (as decode repairs its output), its length in *out_len: text from outside (a tool's output)
 * made fit to encode. */
char *or1_utf8_lossy(const char *b, size_t n, size_t *out_len);

/* The raw bytes one token stands for (not NUL-terminated; may be part of a character), or
 * NULL for an id out of range. For streaming detokenization. */
const char *or1_tokenizer_token_bytes(const or1_tokenizer *t, int32_t id, size_t *len);

/* Id of a token given as written in tokenizer.json (e.g. "<|im_end|>", "Ġthe"), or -1. */
int32_t or1_tokenizer_token_id(const or1_tokenizer *t, const char *token);
/* True if id is an added token marked special. */
bool or1_tokenizer_is_special(const or1_tokenizer *t, int32_t id);
/* One past the largest token id (vocabulary plus added tokens). */
size_t or1_tokenizer_vocab_size(const or1_tokenizer *t);
/* BOS / EOS ids from tokenizer_config.json, or -1 when it names none. */
int32_t or1_tokenizer_bos_id(const or1_tokenizer *t);
int32_t or1_tokenizer_eos_id(const or1_tokenizer *t);

/* One chat message: role ("system", "user", "assistant"; the model's own template may take
 * others, such as "tool") and content. */
typedef struct {
    const char *role;
    const char *content;
} or1_chat_message;

/* Names of the chat templates: "deepseek-r1", "deepseek", "chatml", "llama3", "plain". */
extern const char *const or1_chat_template_names[];

/* The C family the tokenizer's template is recognised as ("plain" when it has none), or NULL
 * when it is of no family we know (or1_tokenizer_chat renders it all the same). */
const char *or1_tokenizer_chat_template(const or1_tokenizer *t);

/* The variables a chat template reads besides the messages, as transformers'
 * apply_chat_template takes them (a row's chat_template_kwargs). enable_thinking is tri-state
 * because templates test whether it is defined: Qwen3's closes an empty <think> block in the
 * generation prompt only when it is defined and false. */
typedef struct {
    bool add_generation_prompt;
    int enable_thinking; /* OR1_CHAT_UNDEFINED, 0 or 1 */
} or1_chat_vars;

enum { OR1_CHAT_UNDEFINED = -1 };

/* The defaults: a generation prompt, enable_thinking undefined. */
or1_chat_vars or1_chat_vars_default(void);

/* Sets the variables given in a chat_template_kwargs object (a JSON object; NULL or null: none)
 * over *v; an unknown key or a wrong type is an error naming where and the key. */
int or1_chat_vars_parse(const cJSON *kwargs, const char *where, or1_chat_vars *v);

/* Renders messages into new *text (free()): with the named C family, or with NULL the
 * tokenizer's own Jinja template (transformers' variables: messages, tools and documents None,
 * add_generation_prompt, enable_thinking when set, the special tokens the config names), or
 * plain text when it has none. */
int or1_tokenizer_chat(const or1_tokenizer *t, const char *template_name, const or1_chat_message *msgs, size_t n,
                       const or1_chat_vars *vars, char **text);

/* Renders a Jinja chat template as transformers does (trim_blocks, lstrip_blocks, loop
 * controls, its tojson, raise_exception, strftime_now, namespace; the final newline of the
 * source dropped) with the variables of vars, a JSON object (messages, tools,
 * add_generation_prompt, bos_token, ...), into new *out (free()) of *out_len bytes. A construct
 * outside the supported subset, or an error the template raises, fails naming
 * where:line:column. strftime_now reads the clock, or the epoch seconds in OR1_JINJA_NOW. */
int or1_jinja_render(const char *src, size_t len, const cJSON *vars, const char *where, char **out, size_t *out_len);

#endif
