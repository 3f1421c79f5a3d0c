/* or1: the Skywork-OR1 (MAGIC) reinforcement-learning recipe as one C program. */
#include "cli.h"

#include "or1/core.h"
#include "or1/cuda.h"
#include "or1/dist.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Every subcommand, in the order `or1 help` lists them. */
static const cli_command *const commands[] = {
    &cli_cmd_logprobs, &cli_cmd_init,     &cli_cmd_generate,    &cli_cmd_train,    &cli_cmd_eval,
    &cli_cmd_difficulty, &cli_cmd_grad,   &cli_cmd_verify_math, &cli_cmd_verify_code, &cli_cmd_tokenize,
    &cli_cmd_detokenize, &cli_cmd_chat,   &cli_cmd_render_template, &cli_cmd_gen_arith, &cli_cmd_sft,
    &cli_cmd_convert,
};
enum { N_COMMANDS = sizeof commands / sizeof commands[0] };

/* The command called name, or NULL after an error naming it and the closest command. */
static const cli_command *find_command(const char *name) {
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(name, commands[i]->name) == 0) return commands[i];
    const char *names[N_COMMANDS];
    for (size_t i = 0; i < N_COMMANDS; i++) names[i] = commands[i]->name;
    const char *best = or1_closest_name(name, names, N_COMMANDS, sizeof *names);
    if (best) or1_fail("unknown command '%s' (did you mean '%s'?)", name, best);
    else or1_fail("unknown command '%s' ('or1 help' lists the commands)", name);
    return NULL;
}

/* `or1`, `or1 help [CMD]`, `or1 --help`, `or1 --version`: what is asked for, on stdout (the
 * usage goes to stderr when no command was given). Returns the exit status, or -1 when
 * argv names a command to run. */
static int run_info(int argc, char **argv) {
    if (argc < 2) return cli_usage(stderr, commands, N_COMMANDS), 2;
    const char *w = argv[1];
    if (strcmp(w, "--version") == 0) return cli_version(stdout), 0;
    bool help = strcmp(w, "help") == 0 || strcmp(w, "--help") == 0 || strcmp(w, "-h") == 0;
    if (!help) return -1;
    if (argc < 3) return cli_usage(stdout, commands, N_COMMANDS), 0;
    const cli_command *c = find_command(argv[2]);
    if (!c || argc > 3) {
        if (c) or1_fail("help: one command at a time (got '%s' after '%s')", argv[3], argv[2]);
        return fprintf(stderr, "or1: %s\n", or1_error()), 2;
    }
    return cli_help(stdout, c) ? (fprintf(stderr, "or1: %s\n", or1_error()), 1) : 0;
}

/* Parses the command's flags and runs it; a flag error exits 2 before any work. */
static int run_parsed(const cli_command *c, int argc, char **argv) {
    cli_args a;
    int rc = cli_parse(c, argc, argv, &a);
    if (rc == 1) rc = cli_help(stdout, c) ? 1 : 0;
    else if (rc < 0) rc = 2;
    else {
        int64_t threads = 0;
        cli_int(&a, "threads", &threads);
        or1_set_threads((int)threads);
        rc = c->run(&a);
    }
    cli_args_free(&a);
    return rc;
}

/* Dispatches argv[1] to its subcommand with the remaining flags. A command that fails on one
 * rank of several stops them all: the others would otherwise wait forever in a collective. */
static int run_command(int argc, char **argv, const or1_dist *d) {
    int rc = run_info(argc, argv);
    if (rc >= 0) return rc;
    const cli_command *c = find_command(argv[1]);
    rc = c ? run_parsed(c, argc - 2, argv + 2) : 2;
    if (rc != 0 && d->size > 1) or1_dist_abort(d, or1_error());
    if (rc != 0) fprintf(stderr, "or1: %s\n", or1_error());
    return rc;
}

/* Two settings the runtime libraries read before main runs, so the program re-executes itself
 * once where either is missing: OpenMP threads waiting between parallel regions spin 1,000 times
 * and then sleep (GOMP_SPINCOUNT): spinning long burns the cores the working threads need when
 * the machine is shared (a 20x slowdown was measured), while sleeping at once costs a wake-up
 * of an idle core per region (a small model's decode ran 12x slower so); and where OpenBLAS did
 * not recognise the CPU and took kernels without AVX2 (five times slower here),
 * OPENBLAS_CORETYPE names the core the CPU's features support. A wait policy, a spin count or
 * a core set by the user is left as it is. */
static void prepare_runtime(char **argv) {
    bool again = false;
    if (!getenv("OMP_WAIT_POLICY") && !getenv("GOMP_SPINCOUNT")) setenv("GOMP_SPINCOUNT", "1000", 1), again = true;
    const char *set = getenv("OPENBLAS_CORETYPE");
    const char *core = set && *set ? NULL : or1_blas_better_core();
    if (core) setenv("OPENBLAS_CORETYPE", core, 1), again = true;
    if (again) execv("/proc/self/exe", argv);
}

/* Registers the GPU's device name, starts MPI when launched by mpirun, runs the command, ends MPI. */
int main(int argc, char **argv) {
    prepare_runtime(argv);
    or1_cuda_register();
    or1_dist d;
    or1_dist_init(&argc, &argv, &d);
    cli_set_dist(&d);
    int rc = run_command(argc, argv, &d);
    or1_dist_finalize();
    return rc;
}
