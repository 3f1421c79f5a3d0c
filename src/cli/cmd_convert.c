/* or1 convert: a model from one file form to the other. A Hugging Face folder or a GGUF file in;
 * out, a GGUF file (for llama.cpp and ollama, with the tokenizer and chat template in its
 * metadata) or a Hugging Face folder (safetensors, config.json, tokenizer files). */
#include "cli.h"

#include "or1/core.h"
#include "or1/io.h"
#include "or1/io_gguf.h"
#include "or1/model.h"

#include <stdlib.h>
#include <string.h>

/* The flags of `or1 convert`. */
static const cli_flag_spec convert_flags[] = {
    FLAG_NEED("model", "the model: a Hugging Face folder or a GGUF file"),
    FLAG_NEED("out", "a .gguf file, or a folder for a Hugging Face checkpoint"),
    FLAG_STR("type", "f32|bf16|f16|q8_0", "f32", "GGUF matrices' type (vectors stay f32); a folder takes f32 or bf16"),
};

/* The types --type names: GGUF tensor type and safetensors dtype (-1: not for folders). */
static const struct {
    const char *name;
    uint32_t gguf;
    int st;
} TYPES[] = {
    {"f32", OR1_GGML_F32, OR1_F32},
    {"bf16", OR1_GGML_BF16, OR1_BF16},
    {"f16", OR1_GGML_F16, -1},
    {"q8_0", OR1_GGML_Q8_0, -1},
};

/* True if path ends in ".gguf". */
static bool gguf_path(const char *path) {
    size_t n = strlen(path);
    return n > 5 && strcmp(path + n - 5, ".gguf") == 0;
}

/* Writes m (loaded from src) as the GGUF file out, tensors in type, the tokenizer of src. */
static int write_gguf(const or1_model *m, const char *src, const char *out, uint32_t type) {
    or1_gguf_writer *w = or1_gguf_writer_new();
    float *keep = NULL;
    int rc = or1_model_gguf_add(m, w, type, &keep);
    if (rc == 0) rc = or1_tokenizer_gguf_meta(src, w);
    if (rc == 0) rc = or1_gguf_write(w, out);
    or1_gguf_writer_free(w);
    free(keep);
    return rc;
}

/* or1 convert --model SRC --out DST [--type T]. */
static int cmd_convert(cli_args *a) {
    const char *src = cli_str(a, "model"), *out = cli_str(a, "out"), *type = cli_str(a, "type");
    if (cli_check_unused(a)) return 2;
    size_t k = 0;
    while (k < sizeof TYPES / sizeof *TYPES && strcmp(TYPES[k].name, type) != 0) k++;
    if (k == sizeof TYPES / sizeof *TYPES) {
        or1_fail("convert: --type must be f32, bf16, f16 or q8_0, not \"%.32s\"", type);
        return 2;
    }
    bool to_gguf = gguf_path(out);
    if (!to_gguf && TYPES[k].st < 0) {
        or1_fail("convert: --type %s is for GGUF files; a folder takes f32 or bf16", type);
        return 2;
    }
    or1_model m;
    if (or1_model_load(&m, src)) return 1;
    int rc = to_gguf ? write_gguf(&m, src, out, TYPES[k].gguf)
                     : or1_mkdir_p(out) || or1_model_save(&m, out, (or1_dtype)TYPES[k].st, src) ||
                           or1_tokenizer_carry(src, out);
    or1_model_free(&m);
    return rc ? 1 : 0;
}

const cli_command cli_cmd_convert = CLI_COMMAND(
    "convert", cmd_convert, "a model from a Hugging Face folder or a GGUF file to either (GGUF for llama.cpp)",
    convert_flags, "or1 convert --model runs/quickstart/run/checkpoints/latest --out /tmp/model.gguf --type q8_0");
