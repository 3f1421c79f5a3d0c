/* Fuzz target: the JSONL rows each command reads. The first byte picks the reader, the rest is
 * the input file: the tokenize, detokenize, chat and verify-math commands themselves; the
 * prompt/response rows of generate and sft (text or ids) and the id, advantage and log-prob
 * fields of logprobs and grad (its response mask too); the dataset rows of train, eval and difficulty (shape check,
 * chat template and prompt-length filter). The tokenizer is the demo model's. */
#include "fuzz.h"

#include "cli.h"
#include "or1/core.h"
#include "or1/data.h"
#include "or1/io.h"

#include <stdbool.h>

#define MODEL_DIR OR1_FUZZ_ROOT "/models/arith-base"

/* Runs one command on the input file through its flag table, as the program does, with
 * --tokenizer when it takes one and up to two more flag words (NULL: none). */
static void run_command(const cli_command *c, const char *input, bool tokenizer, const char *flag,
                        const char *value) {
    char *argv[8];
    int argc = 0;
    if (tokenizer) argv[argc++] = "--tokenizer", argv[argc++] = MODEL_DIR;
    argv[argc++] = "--input", argv[argc++] = (char *)input;
    argv[argc++] = "--output", argv[argc++] = "/dev/null";
    if (flag) argv[argc++] = (char *)flag;
    if (value) argv[argc++] = (char *)value;
    cli_args a;
    if (cli_parse(c, argc, argv, &a) == 0) c->run(&a);
    cli_args_free(&a);
}

/* Reads every row as generate, sft, logprobs and grad read their fields. */
static void model_rows(const char *input, const or1_tokenizer *tok) {
    or1_jsonl_reader r;
    if (or1_jsonl_open(&r, input)) return;
    cJSON *row;
    int vocab = (int)or1_tokenizer_vocab_size(tok);
    while (or1_jsonl_next(&r, &row) == 1) {
        int32_t *ids = NULL;
        size_t n = 0;
        float *lp = NULL;
        double adv;
        if (cli_row_ids(row, "prompt", tok, vocab, r.where, &ids, &n) == 0) free(ids);
        if (cli_row_ids(row, "response", tok, vocab, r.where, &ids, &n) == 0) free(ids);
        if (or1_json_int_array(row, "ids", 0, vocab - 1, &ids, &n, r.where) == 0) free(ids);
        if (or1_json_int_array(row, "response_mask", 0, 1, &ids, &n, r.where) == 0) free(ids);
        if (or1_json_float_array(row, "old_logprobs", &lp, &n, r.where) == 0) free(lp);
        or1_json_num(row, "advantage", &adv, r.where);
        cJSON_Delete(row);
    }
    or1_jsonl_close(&r);
}

/* Loads the input as a dataset file, as train, eval and difficulty do. */
static void dataset_rows(const char *input, const or1_tokenizer *tok, bool filter) {
    or1_data_file file = {.path = (char *)input, .weight = 2};
    or1_data_opts o = {.files = &file, .n_files = 1,
                       .difficulty_model = filter ? "DeepSeek-R1-Distill-Qwen-7B" : NULL, .difficulty_min = 1,
                       .difficulty_max = 15, .keep_missing = !filter, .tok = tok,
                       .chat_template = filter ? "chatml" : NULL,
                       .enable_thinking = filter ? 0 : OR1_CHAT_UNDEFINED,
                       .max_prompt_length = filter ? 64 : 1 << 30, .shuffle = filter, .seed = 7};
    or1_data_free(or1_data_load(&o));
}

/* Dispatches the input to one reader. The tokenizer is loaded for each input, as each
 * command loads its own: one kept across inputs would hold BPE cache entries that the leak
 * checker, run between inputs, cannot see (the cache tags its pointers). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    static bool quiet;
    if (!quiet) {
        if (!freopen("/dev/null", "w", stdout)) abort();
        or1_set_threads(1);
        quiet = true;
    }
    if (n == 0) return 0;
    const char *path = fuzz_file(data + 1, n - 1, "rows.jsonl");
    int kind = data[0] % 8;
    or1_tokenizer *tok = kind >= 4 && kind <= 6 ? or1_tokenizer_load(MODEL_DIR) : NULL;
    if (kind >= 4 && kind <= 6 && !tok) abort(); /* the demo model's tokenizer always loads */
    bool bit = data[0] & 8;
    switch (kind) {
    case 0: run_command(&cli_cmd_tokenize, path, true, bit ? "--add-special" : NULL, NULL); break;
    case 1: run_command(&cli_cmd_detokenize, path, true, bit ? "--skip-special" : NULL, NULL); break;
    case 2: run_command(&cli_cmd_chat, path, true, bit ? "--no-generation-prompt" : NULL, NULL); break;
    case 3: run_command(&cli_cmd_verify_math, path, false, "--time-limit", "1"); break;
    case 4: model_rows(path, tok); break;
    case 5: dataset_rows(path, tok, false); break;
    case 6: dataset_rows(path, tok, true); break;
    default: run_command(&cli_cmd_tokenize, path, true, "--split-special", NULL); break;
    }
    or1_tokenizer_free(tok);
    unlink(path);
    return 0;
}
