/* or1: the Skywork-OR1 (MAGIC) reinforcement-learning recipe as one C program. */
#include "cli.h"

#include "or1/core.h"
#include "or1/dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    const char *name;
    int (*run)(cli_args *a);
    const char *help;
} command;

/* Every subcommand, in the order `or1 help` lists them. */
static const command commands[] = {
    {"logprobs", cmd_logprobs, "per-token log-probs and entropies of id sequences"},
    {"init", cmd_init, "a checkpoint with random weights for a config.json"},
    {"generate", cmd_generate, "sample M responses per prompt with a KV cache (continuous batching)"},
    {"train", cmd_train, "run the MAGIC recipe: --config FILE.yaml [--set k=v ...] [--resume DIR]"},
    {"eval", cmd_eval, "avg@k and pass@k of a model on a dataset"},
    {"difficulty", cmd_difficulty, "write each row's correct-sample count to extra_info.model_difficulty"},
    {"grad", cmd_grad, "gradient of the MAGIC loss (eq. 3.1) on a batch; --step takes an AdamW step"},
    {"verify-math", cmd_verify_math, "JSONL {\"response\", \"gold\"} -> math verdicts {\"correct\", \"extracted\"}"},
    {"verify-code", cmd_verify_code, "JSONL {\"response\", \"tests\"} -> sandboxed code verdicts"},
    {"tokenize", cmd_tokenize, "JSONL {\"text\"} -> {\"ids\"} with a tokenizer.json"},
    {"detokenize", cmd_detokenize, "JSONL {\"ids\"} -> {\"text\"} (--skip-special)"},
    {"chat", cmd_chat, "JSONL {\"messages\"} -> chat-template prompt {\"text\", \"ids\"}"},
    {"gen-arith", cmd_gen_arith, "the demo task: arithmetic rows (--traces: SFT traces with a tokenizer)"},
    {"sft", cmd_sft, "supervised fine-tuning on prompt/response rows (NLL of the response)"},
};

/* Prints the command list. */
static void usage(FILE *f) {
    fprintf(f, "usage: or1 <command> [--flag value ...]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-14s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "\ncommon flags: --threads N\n");
}

/* Dispatches argv[1] to its subcommand with the remaining flags. A command that fails on one
 * rank of several stops them all: the others would otherwise wait forever in a collective. */
static int run_command(int argc, char **argv, const or1_dist *d) {
    if (argc < 2 || strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (!commands[i].run || strcmp(argv[1], commands[i].name) != 0) continue;
        cli_args a = {argv[1], argc - 2, argv + 2, calloc((size_t)argc, sizeof(bool))};
        int64_t threads = 0;
        int rc;
        if (cli_int(&a, "threads", 1, 1024, &threads) != 0) rc = 2;
        else {
            or1_set_threads((int)threads);
            rc = commands[i].run(&a);
        }
        if (rc != 0 && d->size > 1) or1_dist_abort(d, or1_error());
        if (rc != 0) fprintf(stderr, "or1: %s\n", or1_error());
        free(a.used);
        return rc;
    }
    fprintf(stderr, "or1: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}

/* OpenMP threads that spin at barriers burn the cores the working threads need whenever the
 * machine is shared (a 20x slowdown was measured here); libgomp reads its wait policy before
 * main runs, so without an explicit OMP_WAIT_POLICY the program re-executes itself once with
 * the passive policy. */
static void prefer_passive_wait(char **argv) {
    if (getenv("OMP_WAIT_POLICY")) return;
    setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
    execv("/proc/self/exe", argv);
}

/* Starts MPI when launched by mpirun, runs the command, ends MPI. */
int main(int argc, char **argv) {
    prefer_passive_wait(argv);
    or1_dist d;
    or1_dist_init(&argc, &argv, &d);
    cli_set_dist(&d);
    int rc = run_command(argc, argv, &d);
    or1_dist_finalize();
    return rc;
}
