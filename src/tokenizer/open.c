/* Opening a tokenizer from whichever form its path names: a GGUF file's metadata, or a
 * tokenizer.json (file or folder). */
#include "tok.h"

#include "or1/io_gguf.h"

/* Loads tokenizer.json (and tokenizer_config.json beside it), or the tokenizer a GGUF file's
 * metadata holds. */
or1_tokenizer *or1_tokenizer_load(const char *path) {
    if (or1_gguf_is_gguf(path)) return tok_load_gguf(path);
    return tok_load_json(path);
}
