/* Tests of or1/config.h: the YAML tree and typed getters, --set overrides, the schema check
 * (unknown keys, wrong types, ranges), hostile YAML, missing files, the trainer's defaults,
 * and every YAML file under configs/ of the repository loading and surviving a dump/reload.
 * Usage: test_config SCRATCH_DIR CONFIGS_DIR SHARED_DATA_DIR */
#include "or1/io_yaml.h"
#include "or1/train.h"
#include "or1/core.h"
#include "or1/io.h"
#include "or1/reward_math.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"

static const char *scratch;

/* Writes text to SCRATCH/name; returns the path (static buffer, one at a time). */
static const char *put(const char *name, const char *text) {
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", scratch, name);
    if (or1_write_file_atomic(path, text, strlen(text)) != 0) {
        fprintf(stderr, "cannot write %s: %s\n", path, or1_error());
        exit(1);
    }
    return path;
}

/* Writes text to SCRATCH/name without the fsyncs of an atomic write (for the fuzz loop). */
static const char *put_fast(const char *name, const char *text) {
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", scratch, name);
    FILE *f = fopen(path, "wb");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
    return path;
}

/* True if the current error message contains every given fragment (NULL-terminated). */
static int error_has(const char *first, ...) {
    va_list ap;
    va_start(ap, first);
    int ok = 1;
    for (const char *s = first; s; s = va_arg(ap, const char *))
        if (!strstr(or1_error(), s)) ok = 0;
    va_end(ap);
    if (!ok) fprintf(stderr, "  (error was: %s)\n", or1_error());
    return ok;
}

/* Loads a trainer config from text with overrides; returns the load's status. */
static int load_text(const char *text, const char *const *sets, size_t n, or1_train_config *c) {
    const char *p = put("t.yaml", text);
    return or1_train_config_load(p, sets, n, c);
}

static const char *MIN = "model:\n  path: m\ndata:\n  train:\n    - path: d.jsonl\n";

/* The defaults of the recipe's final scripts (or1_scripts/train/ of Skywork-OR1) when
 * only the required keys are given. */
static void test_defaults(void) {
    or1_train_config c;
    CHECK(load_text(MIN, NULL, 0, &c) == 0, "minimal config: %s", or1_error());
    CHECK(!strcmp(c.model.path, "m") && !strcmp(c.model.tokenizer, "") && c.data.n_train == 1 &&
              !strcmp(c.data.train[0].path, "d.jsonl") && c.data.train[0].weight == 1, "model/data");
    CHECK(c.data.max_prompt_length == 2048 && c.data.shuffle && c.data.online_filter && !*c.data.difficulty_model &&
              c.data.difficulty_min == 1 && c.data.difficulty_max == 15 && !c.data.difficulty_keep_missing, "data defaults");
    CHECK(c.rollout.n == 16 && c.rollout.temperature == 1.0 && c.rollout.top_p == 1.0 && c.rollout.top_k == 0 &&
              c.rollout.max_new_tokens == 16384, "rollout defaults");
    CHECK(c.train.prompts_per_step == 256 && c.train.mini_batch == 256 && c.train.epochs == 1 && c.train.lr == 1e-6 &&
              c.train.weight_decay == 0.01 && c.train.beta1 == 0.9 && c.train.beta2 == 0.999 && c.train.adam_eps == 1e-8 &&
              c.train.grad_clip == 1.0 && c.train.clip_low == 0.2 && c.train.clip_high == 0.2 && c.train.micro_tokens == 0,
          "train defaults");
    CHECK(c.entropy.mode == OR1_ENT_ADAPTIVE && c.entropy.target == 0.2 && c.entropy.delta == 1e-4 &&
              c.entropy.c_min == 0 && c.entropy.c_max == 5e-3 && c.entropy.initial == 0 &&
              c.entropy.update == OR1_ENT_PER_STEP, "entropy defaults");
    CHECK(!c.kl.enabled && c.kl.coef == 0.001 && c.kl.estimator.kind == OR1_KL_K3 && !c.kl.estimator.straight_through &&
              c.kl.reset_every == 0 && !c.kl.reset_optimizer,
          "kl defaults");
    CHECK(c.rejection.enabled && !c.rejection.keep_single && c.rejection.max_rounds == 1 && c.advantage.reject &&
              c.advantage.estimator == OR1_ADV_GRPO && c.advantage.eps == 1e-6 && c.advantage.trunc == OR1_TRUNC_NONE,
          "rejection/advantage defaults");
    CHECK(c.n_stages == 1 && c.stages[0].context_length == 16384 && c.stages[0].prompts == 256 &&
              c.stages[0].samples == 16 && c.stages[0].mini_batch == 256 && c.stages[0].steps == 1000,
          "one stage from the top-level keys");
    CHECK(c.loss.agg == OR1_AGG_TOKEN_MEAN && c.loss.scale == 0 && c.loss.mode == OR1_PG_PPO && c.loss.clip_c == 3 &&
              c.loss.gspo_low == 3e-4 && c.loss.gspo_high == 4e-4 && c.loss.cispo_low == 10 && c.loss.cispo_high == 0.2,
          "loss defaults");
    CHECK(c.loss.clip_cov_ratio == 2e-4 && c.loss.clip_cov_lb == 1 && c.loss.clip_cov_ub == 5 &&
              c.loss.kl_cov_ratio == 2e-3 && c.loss.kl_cov_coef == 1 && c.loss.top_entropy == 1,
          "clip-cov / kl-cov / top-entropy defaults");
    CHECK(!c.reward.length.overlong && c.reward.length.overlong_len == 4096 && c.reward.length.overlong_penalty == 1 &&
              c.reward.length.truncation_penalty == 0,
          "length shaping defaults");
    CHECK(!c.reward.opts.strict_box && c.reward.opts.code_timeout == 6, "reward defaults: Math-Verify's reading, 6 s");
    CHECK(c.eval.n_files == 0 && c.eval.every == 20 && c.eval.n == 8 && c.eval.n_temperatures == 2 &&
              c.eval.temperatures[0] == 0.6 && c.eval.temperatures[1] == 1.0, "eval defaults");
    CHECK(c.checkpoint.every == 20 && !strcmp(c.output_dir, "runs/train") && c.seed == 1, "output defaults");
    or1_train_config_free(&c);
}

/* --set: scalars typed as YAML, flow lists, list indices, new keys, null, errors. */
static void test_overrides(void) {
    const char *text =
        "model: {path: m}\ndata:\n  train: [{path: a.jsonl}]\nstages:\n  - {steps: 3}\n  - {steps: 4, n: 32}\n";
    const char *sets[] = {"train.lr=2e-6", "stages.1.steps=10", "data.train=[{path: b.jsonl, weight: 2}, {path: c.jsonl}]",
                          "entropy.mode=constant", "entropy.update=minibatch", "model.chat_template='plain'", "kl.estimator=low_var_kl+",
                          "rollout.n=8", "data.difficulty.model=DeepSeek-R1-Distill-Qwen-7B", "seed=", "eval.files=[x.jsonl]"};
    or1_train_config c;
    CHECK(load_text(text, sets, sizeof sets / sizeof sets[0], &c) == 0, "overrides: %s", or1_error());
    CHECK(c.train.lr == 2e-6, "train.lr override");
    CHECK(c.n_stages == 2 && c.stages[0].steps == 3 && c.stages[1].steps == 10 && c.stages[1].samples == 32 &&
              c.stages[0].samples == 8, "stage overrides (stage 0 takes rollout.n=8 as its default)");
    CHECK(c.data.n_train == 2 && !strcmp(c.data.train[0].path, "b.jsonl") && c.data.train[0].weight == 2 &&
              c.data.train[1].weight == 1, "flow list override");
    CHECK(c.entropy.mode == OR1_ENT_CONSTANT && c.entropy.update == OR1_ENT_PER_MINIBATCH &&
              !strcmp(c.model.chat_template, "plain"), "string overrides");
    CHECK(c.kl.estimator.kind == OR1_KL_K3 && c.kl.estimator.straight_through, "kl estimator alias with +");
    CHECK(!strcmp(c.data.difficulty_model, "DeepSeek-R1-Distill-Qwen-7B"), "new nested key");
    CHECK(c.seed == 1, "empty override = default");
    CHECK(c.eval.n_files == 1 && !strcmp(c.eval.files[0], "x.jsonl"), "eval.files override");
    or1_train_config_free(&c);
    const char *strict[] = {"reward.strict_box=true", "reward.code_timeout=2"};
    CHECK(load_text(text, strict, 2, &c) == 0 && c.reward.opts.strict_box && c.reward.opts.code_timeout == 2,
          "reward.strict_box and reward.code_timeout overrides: %s", or1_error());
    or1_train_config_free(&c);
    const char *not_bool[] = {"reward.strict_box=1"};
    CHECK(load_text(text, not_bool, 1, &c) != 0 && error_has("reward.strict_box", "true or false", NULL),
          "reward.strict_box=1 refused");

    struct {
        const char *set, *frag1, *frag2;
    } bad[] = {{"train.lrr=1", "--set train.lrr=1", "did you mean \"train.lr\""},
               {"train.lr=fast", "--set train.lr=fast", "expected a number"},
               {"stages.5.steps=1", "--set stages.5.steps=1", "not an index"},
               {"nokey", "--set nokey", "KEY=VALUE"},
               {"train.lr.x=1", "--set train.lr.x=1", "\"train.lr\""},
               {"model.path.x=1", "--set model.path.x=1", "not a mapping"},
               {"rollout.n=[1, 2", "--set rollout.n=[1, 2", "YAML"},
               {"a..b=1", "--set a..b=1", "empty component"},
               {"rollout.top_p=1.5", "rollout.top_p", "outside"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *one[] = {bad[i].set};
        CHECK(load_text(text, one, 1, &c) != 0 && error_has(bad[i].frag1, bad[i].frag2, NULL), "bad --set %s", bad[i].set);
    }
}

/* The loss and advantage variants: each name loads, and the dump loads back to itself. */
static void test_variants(void) {
    static const char *const est[] = {OR1_ADV_ESTIMATORS(OR1_ROW_NAME)};
    static const char *const agg[] = {OR1_LOSS_AGGS(OR1_ROW_NAME)};
    static const char *const mode[] = {OR1_PG_MODES(OR1_ROW_NAME)};
    static const char *const is[] = {OR1_ROLLOUT_IS_MODES(OR1_ROW_NAME)};
    enum { NE = sizeof est / sizeof *est, NA = sizeof agg / sizeof *agg, NM = sizeof mode / sizeof *mode,
           NI = sizeof is / sizeof *is };
    for (int i = 0; i < (NE > NM ? NE : NM); i++) {
        char text[640];
        snprintf(text, sizeof text,
                 "%sadvantage: {estimator: %s}\nloss: {agg: %s, mode: %s, scale: 512, clip_ratio_c: 2.5,"
                 " gspo_clip_low: 0.001, gspo_clip_high: 0.002, cispo_clip_low: 0.5, cispo_clip_high: 4,"
                 " clip_cov_ratio: 0.01, clip_cov_lb: -1, clip_cov_ub: 2, kl_cov_ratio: 0.02, ppo_kl_coef: 0.5,"
                 " top_entropy_quantile: 0.2}\nrollout_correction: {mode: %s, offpolicy_mask: true, offpolicy_delta: 0.05}\n",
                 MIN, est[i % NE], agg[i % NA], mode[(i + 1) % NM], is[i % NI]);
        or1_train_config c, c2;
        if (!CHECK(load_text(text, NULL, 0, &c) == 0, "variant %d: %s", i, or1_error())) continue;
        CHECK(c.advantage.estimator == (or1_adv_estimator)(i % NE) && c.loss.agg == (or1_loss_agg)(i % NA) &&
                  c.loss.mode == (or1_pg_mode)((i + 1) % NM) && c.loss.scale == 512 && c.loss.clip_c == 2.5 &&
                  c.loss.gspo_low == 0.001 && c.loss.gspo_high == 0.002 && c.loss.cispo_low == 0.5 &&
                  c.loss.cispo_high == 4 && c.loss.clip_cov_ratio == 0.01 && c.loss.clip_cov_lb == -1 &&
                  c.loss.clip_cov_ub == 2 && c.loss.kl_cov_ratio == 0.02 && c.loss.kl_cov_coef == 0.5 &&
                  c.loss.top_entropy == 0.2 && c.correction.is == (or1_rollout_is_mode)(i % NI) &&
                  c.correction.offpolicy_mask && c.correction.offpolicy_delta == 0.05,
              "variant %d: values", i);
        char *y1 = or1_train_config_yaml(&c);
        CHECK(strstr(y1, est[i % NE]) && strstr(y1, agg[i % NA]) && strstr(y1, mode[(i + 1) % NM]), "variant %d: dump\n%s",
              i, y1);
        if (CHECK(or1_train_config_load(put("dump.yaml", y1), NULL, 0, &c2) == 0, "variant %d: reload: %s", i,
                  or1_error())) {
            char *y2 = or1_train_config_yaml(&c2);
            CHECK(!strcmp(y1, y2) && c2.advantage.estimator == c.advantage.estimator && c2.loss.agg == c.loss.agg &&
                      c2.loss.mode == c.loss.mode,
                  "variant %d: dump/reload differs", i);
            free(y2);
            or1_train_config_free(&c2);
        }
        free(y1);
        or1_train_config_free(&c);
    }
}

/* Unknown keys, wrong types, bad relations: errors name the file, line and key path. */
static void test_bad_configs(void) {
    struct {
        const char *text, *frag1, *frag2;
    } bad[] = {
        {"model: {path: m}\ndata:\n  train: [{path: a}]\ntrian:\n  lr: 1\n", "t.yaml:4", "unknown key \"trian\""},
        {"model: {path: m}\ndata:\n  train: [{path: a}]\ntrain:\n  lrr: 1\n", "t.yaml:5", "did you mean \"train.lr\""},
        {"model: {path: m}\ndata:\n  train: [{path: a}]\ntrain:\n  lr: abc\n", "t.yaml:5", "key \"train.lr\": expected a number"},
        {"model: {path: m}\ndata:\n  train: [{path: a}]\nrollout:\n  n: 1.5\n", "key \"rollout.n\"", "expected an integer"},
        {"model: {path: m}\ndata:\n  train: [{path: a}]\ndata2: 1\n", "unknown key \"data2\"", "t.yaml:4"},
        {"model: {path: m}\ndata:\n  train: [{path: a}]\n  shuffle: yes\n", "key \"data.shuffle\"", "true or false"},
        {"model: {path: m}\ndata:\n  train: [{path: a, wieght: 2}]\n", "unknown key \"data.train[0].wieght\"",
         "did you mean \"data.train[].weight\""},
        {"model: {path: m}\ndata:\n  train: [{path: a, weight: 0}]\n", "data.train[0].weight", "outside"},
        {"model: {path: m}\ndata:\n  train: a.jsonl\n", "key \"data.train\"", "expected a list"},
        {"model: {path: m}\ndata:\n  train: [a.jsonl]\n", "data.train[0]", "expected a mapping"},
        {"model: {path: m}\ndata:\n  train: [{weight: 2}]\n", "data.train[0]", "needs a \"path\""},
        {"model: {path: m}\ndata:\n  train: [{path: a}]\nstages:\n  - {n: 4}\n", "stages[0]", "needs \"steps\""},
        {"model: {path: m}\ndata:\n  train: [{path: a}]\nstages:\n  - {steps: 1, mini_batch: 3, prompts: 8}\n",
         "mini_batch 3 must divide prompts 8", "t.yaml:5: key \"stages[0]\""},
        {"model: {path: m}\ndata:\n  train: [{path: a}]\nstages: {steps: 1}\n", "key \"stages\"", "expected a list"},
        {"model: {path: m}\ndata:\n  train: [{path: a}]\nentropy: {mode: auto}\n", "key \"entropy.mode\"", "adaptive"},
        {"model: {path: m}\ndata:\n  train: [{path: a}]\nentropy: {update: epoch}\n", "t.yaml:4: key \"entropy.update\"",
         "\"epoch\" is not one of step, minibatch"},
        {"model: {path: m}\ndata:\n  train: [{path: a}]\nkl: {estimator: k4}\n", "key \"kl.estimator\"", "k4"},
        {"model: {path: m}\ndata:\n  train: [{path: a}]\nadvantage: {truncation_mask: middle}\n",
         "key \"advantage.truncation_mask\"", "middle"},
        {"model: {path: m}\ndata:\n  train: [{path: a}]\nadvantage: {estimator: loo}\n", "key \"advantage.estimator\"",
         "\"loo\" is not one of grpo, drgrpo, rloo, reinforce++-baseline, grpo-batch-std"},
        {"model: {path: m}\ndata:\n  train: [{path: a}]\nloss: {agg: seq-mean}\n", "key \"loss.agg\"",
         "\"seq-mean\" is not one of token-mean, seq-mean-token-mean, seq-mean-token-sum, seq-mean-token-sum-norm"},
        {"model: {path: m}\ndata:\n  train: [{path: a}]\nloss:\n  mode: vanilla\n", "t.yaml:5: key \"loss.mode\"",
         "\"vanilla\" is not one of ppo, dual-clip, cispo, gspo"},
        {"model: {path: m}\ndata:\n  train: [{path: a}]\nloss: {clip_ratio_c: 0.5}\n", "key \"loss.clip_ratio_c\"",
         "outside"},
        {"model: {path: m}\ndata:\n  train: [{path: a}]\nloss: {clip_cov_lb: 5}\n", "t.yaml:4: key \"loss.clip_cov_lb\"",
         "lb 5 is not below ub 5"},
        {"model: {path: m}\ndata:\n  train: [{path: a}]\nreward: {overlong_buffer: {enable: true, len: 20000}}\n",
         "key \"reward.overlong_buffer.len\"", "len 20000 is not below stage 0's context length 16384"},
        {"model: {path: m}\ndata:\n  train: [{path: a}]\nrollout_correction: {offpolicy_mask: true}\n",
         "key \"rollout_correction.offpolicy_delta\" (default)", "needs its delta"},
        {"model: {path: m}\ndata:\n  train: [{path: a}]\nrollout_correction: {mode: mis-geo, low: 3}\n",
         "key \"rollout_correction.low\"", "low 3 is above high 2"},
        {"model: {path: m}\ndata:\n  train: [{path: a}]\nkl: {reset_every: -2}\n", "key \"kl.reset_every\"", "outside"},
        {"model: {path: m}\ndata:\n  train: [{path: a}]\nreward: {truncation_penalty: -1}\n",
         "key \"reward.truncation_penalty\"", "outside"},
        {"model: {path: m}\ndata:\n  train: [{path: a}]\nloss: {top_entropy_quantile: 0}\n",
         "key \"loss.top_entropy_quantile\"", "outside"},
        {"model: {path: m}\ndata:\n  train: [{path: a}]\nloss: {kl_cov_ratio: 1.5}\n", "key \"loss.kl_cov_ratio\"",
         "outside"},
        {"model: {path: m}\ndata:\n  train: [{path: a}]\nadvantage: {estimator: grpo-batch-std, eps: 0}\n"
         "rejection: {enabled: false}\n", "key \"advantage.eps\"", "std of 0"},
        {"model: {path: m}\ndata:\n  train: [{path: a}]\nentropy: {c_min: 0.1, c_max: 0.01}\n", "entropy.c_min", "above"},
        {"model: {path: m}\ndata:\n  train: [{path: a}]\neval: {temperatures: [1.0, hot]}\n", "eval.temperatures[1]",
         "expected a number"},
        {"model: {path: m}\ndata:\n  train: [{path: a}]\nmodel: {path: n}\n", "duplicate key \"model\"", "t.yaml:4"},
        {"data:\n  train: [{path: a}]\n", "missing key \"model.path\"", "t.yaml"},
        {"model: {path: m}\n", "missing key \"data.train\"", "t.yaml"},
        {"model: {path: m}\ndata:\n  train: [{path: a}]\ntrain: 5\n", "key \"train\"", "expected a mapping"},
        {"model: {path: m}\ndata:\n  train: [{path: a}]\nseed: -1\n", "key \"seed\"", "outside"},
        {"model: {path: m}\ndata:\n  train: [{path: a}]\ntrain: {adam_eps: 0}\n", "t.yaml:4: key \"train.adam_eps\"",
         "must be above 0"},
        {"model: {path: m}\ndata:\n  train: [{path: a}]\ntrain:\n  beta2: 1\n", "t.yaml:5: key \"train.beta2\"",
         "below 1"},
        {"model: {path: m}\ndata:\n  train: [{path: a}]\nadvantage: {eps: 0}\nrejection: {enabled: false}\n",
         "key \"advantage.eps\"", "std of 0"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        or1_train_config c;
        CHECK(load_text(bad[i].text, NULL, 0, &c) != 0 && error_has(bad[i].frag1, bad[i].frag2, NULL), "bad config %zu",
              i);
    }
}

/* Input the parser must refuse cleanly: YAML errors, aliases, several documents, deep
 * nesting, a top-level list, binary garbage, a missing or oversized file. */
static void test_hostile(void) {
    struct {
        const char *text, *frag;
    } bad[] = {{"a: [1, 2\n", "t.yaml:"},
               {"a: &x 1\nb: *x\n", "anchors"},
               {"a: 1\n---\nb: 2\n", "one YAML document"},
               {"- 1\n- 2\n", "top level"},
               {"a:\n\tb: 1\n", "t.yaml:"},
               {"\"a\nb: 1\n", "t.yaml:"},
               {"? [a, b]\n: 1\n", "mapping key"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        or1_yaml *c = or1_yaml_load(put("t.yaml", bad[i].text));
        CHECK(!c && error_has(bad[i].frag, NULL), "hostile YAML %zu", i);
        or1_yaml_free(c);
    }
    char deep[400] = "";
    for (int i = 0; i < 60; i++) strcat(deep, "[");
    or1_yaml *c = or1_yaml_parse(deep, strlen(deep), "deep.yaml");
    CHECK(!c && error_has("deep.yaml", NULL), "deep nesting");
    or1_yaml_free(c);
    unsigned char junk[512];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (unsigned char)(i * 37 + 11);
    c = or1_yaml_parse((const char *)junk, sizeof junk, "junk.yaml");
    CHECK(!c && error_has("junk.yaml", NULL), "binary garbage");
    or1_yaml_free(c);
    c = or1_yaml_parse("a: \"x\\0y\"\n", 10, "nul.yaml");
    CHECK(!c && error_has("NUL", NULL), "NUL in a value");
    or1_yaml_free(c);
    or1_train_config tc;
    CHECK(or1_train_config_load("/nonexistent/dir/x.yaml", NULL, 0, &tc) != 0 &&
              error_has("/nonexistent/dir/x.yaml", NULL), "missing config file");
    size_t big = (1u << 20) + 10;
    char *huge = or1_malloc(big + 1);
    memset(huge, '#', big);
    huge[big] = 0;
    c = or1_yaml_load(put("huge.yaml", huge));
    CHECK(!c && error_has("huge.yaml", NULL), "oversized config");
    or1_yaml_free(c);
    free(huge);
    c = or1_yaml_load(put("empty.yaml", "# nothing\n"));
    CHECK(c && or1_yaml_root(c) && !or1_yaml_get(or1_yaml_root(c), "a"), "an empty file is an empty mapping");
    or1_yaml_free(c);
}

/* Random damage to a valid config (byte flips, cuts, inserted YAML punctuation), loaded and
 * checked many times: every outcome is a clean success or an error naming the file; the
 * sanitiser build catches any memory fault. */
static void test_fuzz(const char *configs) {
    char path[1024], *base;
    size_t len;
    snprintf(path, sizeof path, "%s/r1-distill-math-7b.yaml", configs);
    if (or1_read_file(path, 1 << 20, &base, &len) != 0) {
        CHECK(0, "fuzz base: %s", or1_error());
        return;
    }
    static const char punct[] = ":-[]{},&*!|>'\"#%@` \n\t";
    char *buf = or1_malloc(len + 64);
    int ok = 0, errors = 0, unnamed = 0;
    for (uint64_t it = 0; it < 3000; it++) {
        memcpy(buf, base, len);
        size_t n = len;
        int edits = 1 + (int)(or1_rand_u64(5, it, 0) % 4);
        for (int e = 0; e < edits; e++) {
            uint64_t r = or1_rand_u64(5, it, 1 + (uint64_t)e);
            size_t at = (size_t)((r >> 8) % n);
            switch (r % 3) {
            case 0: buf[at] = punct[(r >> 40) % (sizeof punct - 1)]; break;
            case 1: n = at + 1; break;
            default:
                if (n + 1 < len + 64) {
                    memmove(buf + at + 1, buf + at, n - at);
                    buf[at] = punct[(r >> 40) % (sizeof punct - 1)];
                    n++;
                }
            }
        }
        buf[n] = '\0';
        or1_train_config c;
        const char *p = put_fast("fuzz.yaml", buf);
        if (or1_train_config_load(p, NULL, 0, &c) == 0) {
            ok++;
            char *y = or1_train_config_yaml(&c);
            free(y);
            or1_train_config_free(&c);
        } else {
            errors++;
            unnamed += !strstr(or1_error(), "fuzz.yaml") && !strstr(or1_error(), "schema default");
        }
    }
    CHECK(unnamed == 0, "fuzz: %d of %d errors do not name the file", unnamed, errors);
    CHECK(ok > 0 && errors > 0, "fuzz: %d loads, %d errors", ok, errors);
    free(buf);
    free(base);
}

/* The generic getters on a tree: types, defaults, ranges, YAML 1.2 scalars. */
static void test_getters(void) {
    const char *text = "i: 42\nh: 0x1F\nneg: -7\nd: 1e-6\ndi: 3\nb: true\nB: False\ns: hello\nq: \"12\"\n"
                       "nul: ~\nl: [a, 'b', 3]\nld: [1, 2.5, -1e3]\nm:\n  - {x: 1}\n  - {x: 2}\nsub: {deep: {k: v}}\n";
    or1_yaml *c = or1_yaml_parse(text, strlen(text), "g.yaml");
    CHECK(c != NULL, "getter tree: %s", or1_error());
    if (!c) return;
    const or1_yaml_node *r = or1_yaml_root(c);
    int64_t i;
    double d;
    bool b;
    const char *s;
    CHECK(or1_yaml_int(r, "i", 0, 100, 0, &i) == 0 && i == 42, "int");
    CHECK(or1_yaml_int(r, "h", 0, 100, 0, &i) == 0 && i == 31, "hex int");
    CHECK(or1_yaml_int(r, "neg", -10, 10, 0, &i) == 0 && i == -7, "negative int");
    CHECK(or1_yaml_int(r, "absent", 0, 100, 5, &i) == 0 && i == 5, "int default");
    CHECK(or1_yaml_int(r, "nul", 0, 100, 6, &i) == 0 && i == 6, "null takes the default");
    CHECK(or1_yaml_int(r, "i", 0, 10, 0, &i) != 0 && error_has("g.yaml:1", "\"i\"", "outside", NULL), "int range");
    CHECK(or1_yaml_int(r, "q", 0, 100, 0, &i) != 0 && error_has("g.yaml:9", "expected an integer", NULL),
          "quoted number is a string");
    CHECK(or1_yaml_int(r, "d", 0, 100, 0, &i) != 0, "float is not an int");
    CHECK(or1_yaml_double(r, "d", 0, 1, 0, &d) == 0 && d == 1e-6, "double");
    CHECK(or1_yaml_double(r, "di", 0, 10, 0, &d) == 0 && d == 3, "int as double");
    CHECK(or1_yaml_double(r, "s", 0, 10, 0, &d) != 0 && error_has("g.yaml:8", "\"s\"", NULL), "string as double");
    CHECK(or1_yaml_bool(r, "b", false, &b) == 0 && b, "bool true");
    CHECK(or1_yaml_bool(r, "B", true, &b) == 0 && !b, "bool False");
    CHECK(or1_yaml_bool(r, "i", true, &b) != 0, "int as bool");
    CHECK(or1_yaml_string(r, "s", NULL, &s) == 0 && !strcmp(s, "hello"), "string");
    CHECK(or1_yaml_string(r, "q", NULL, &s) == 0 && !strcmp(s, "12"), "quoted string");
    CHECK(or1_yaml_string(r, "l", NULL, &s) != 0 && error_has("\"l\"", "expected a string", NULL), "list as string");
    CHECK(or1_yaml_string(r, "sub.deep.k", NULL, &s) == 0 && !strcmp(s, "v"), "dotted path");
    CHECK(or1_yaml_string(r, "m.1.x", NULL, &s) == 0 && !strcmp(s, "2"), "list index in a path");
    char **l;
    size_t n;
    CHECK(or1_yaml_strings(r, "l", &l, &n) == 0 && n == 3 && !strcmp(l[1], "b") && !strcmp(l[2], "3"), "strings");
    for (size_t k = 0; k < n; k++) free(l[k]);
    free(l);
    CHECK(or1_yaml_strings(r, "s", &l, &n) != 0 && error_has("expected a list", NULL), "scalar is not a list");
    double *ld;
    CHECK(or1_yaml_doubles(r, "ld", &ld, &n) == 0 && n == 3 && ld[1] == 2.5 && ld[2] == -1e3, "doubles");
    free(ld);
    CHECK(or1_yaml_doubles(r, "l", &ld, &n) != 0 && error_has("l[0]", NULL), "strings as doubles");
    const or1_yaml_node **items;
    CHECK(or1_yaml_maps(r, "m", &items, &n) == 0 && n == 2 && !strcmp(or1_yaml_node_path(items[1]), "m[1]") &&
              or1_yaml_int(items[1], "x", 0, 9, 0, &i) == 0 && i == 2, "maps");
    free(items);
    CHECK(or1_yaml_maps(r, "l", &items, &n) != 0 && error_has("l[0]", "expected a mapping", NULL), "list of scalars as maps");
    CHECK(or1_yaml_set(c, "sub.deep.k=w") == 0 && or1_yaml_string(r, "sub.deep.k", NULL, &s) == 0 && !strcmp(s, "w"),
          "set existing");
    CHECK(or1_yaml_set(c, "m.0.x=9") == 0 && or1_yaml_int(r, "m.0.x", 0, 99, 0, &i) == 0 && i == 9, "set through a list");
    CHECK(or1_yaml_set(c, "new.a.b=1") == 0 && or1_yaml_int(r, "new.a.b", 0, 9, 0, &i) == 0 && i == 1 &&
              !strcmp(or1_yaml_node_path(or1_yaml_get(r, "new.a.b")), "new.a.b") &&
              !strcmp(or1_yaml_node_where(or1_yaml_get(r, "new.a.b")), "--set new.a.b=1"), "set creates maps");
    CHECK(or1_yaml_set(c, "s.x=1") != 0 && error_has("--set s.x=1", NULL), "set below a scalar");
    or1_yaml_free(c);
}

/* Every file the config names must exist: the error names the key and the file. */
static void test_check_files(const char *data) {
    char text[2048];
    snprintf(text, sizeof text,
             "model: {path: %s}\ndata:\n  train: [{path: %s/aime24.jsonl}, {path: %s/nope.jsonl}]\n", scratch, data, data);
    or1_train_config c;
    CHECK(load_text(text, NULL, 0, &c) == 0, "check_files config: %s", or1_error());
    CHECK(or1_train_config_check_files(&c) != 0 && error_has("data.train[1].path", "nope.jsonl", NULL), "missing data file");
    or1_train_config_free(&c);
    snprintf(text, sizeof text, "model: {path: %s/nomodel}\ndata:\n  train: [{path: %s/aime24.jsonl}]\n", scratch, data);
    CHECK(load_text(text, NULL, 0, &c) == 0 && or1_train_config_check_files(&c) != 0 &&
              error_has("model.path", "nomodel", NULL), "missing model");
    or1_train_config_free(&c);
    snprintf(text, sizeof text, "model: {path: %s}\ndata:\n  train: [{path: %s/aime24.jsonl}]\neval: {files: [%s/x.jsonl]}\n",
             scratch, data, data);
    CHECK(load_text(text, NULL, 0, &c) == 0 && or1_train_config_check_files(&c) != 0 &&
              error_has("eval.files[0]", "x.jsonl", NULL), "missing eval file");
    or1_train_config_free(&c);
    put("config.json", "{\"model_type\": \"qwen2\", \"hidden_size\": 8, \"intermediate_size\": 16, "
                       "\"num_hidden_layers\": 1, \"num_attention_heads\": 2, \"num_key_value_heads\": 1, "
                       "\"vocab_size\": 10, \"max_position_embeddings\": 32768}");
    snprintf(text, sizeof text, "model: {path: %s}\ndata:\n  train: [{path: %s/aime24.jsonl}]\neval: {files: [%s/aime25.jsonl]}\n",
             scratch, data, data);
    CHECK(load_text(text, NULL, 0, &c) == 0 && or1_train_config_check_files(&c) == 0, "all files present: %s", or1_error());
    or1_train_config_free(&c);
    /* the default T of 16384 leaves nothing of a 16384-position model */
    put("config.json", "{\"model_type\": \"qwen2\", \"hidden_size\": 8, \"intermediate_size\": 16, "
                       "\"num_hidden_layers\": 1, \"num_attention_heads\": 2, \"num_key_value_heads\": 1, "
                       "\"vocab_size\": 10, \"max_position_embeddings\": 16384}");
    CHECK(load_text(text, NULL, 0, &c) == 0 && or1_train_config_check_files(&c) != 0 &&
              error_has("context length 16384", "rollout.max_new_tokens", "max_position_embeddings 16384", NULL),
          "a context length the model cannot hold");
    or1_train_config_free(&c);
}

/* Every YAML file under configs/ loads; its dump loads back to the same dump; the recipe stage tables
 * are what the paper's tables say. */
static void test_repo_configs(const char *dir) {
    DIR *d = opendir(dir);
    CHECK(d != NULL, "cannot open %s", dir);
    if (!d) return;
    struct dirent *e;
    int seen = 0;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".yaml") != 0) continue;
        seen++;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        or1_train_config c, c2;
        if (or1_train_config_load(path, NULL, 0, &c) != 0) {
            CHECK(0, "%s: %s", path, or1_error());
            continue;
        }
        char *y1 = or1_train_config_yaml(&c);
        const char *p2 = put("dump.yaml", y1);
        if (CHECK(or1_train_config_load(p2, NULL, 0, &c2) == 0, "%s: dump does not load: %s\n%s", path, or1_error(),
                  y1)) { /* a dump that does not load leaves c2 unset */
            char *y2 = or1_train_config_yaml(&c2);
            CHECK(!strcmp(y1, y2), "%s: dump/reload differs:\n%s\n----\n%s", path, y1, y2);
            free(y2);
            or1_train_config_free(&c2);
        }
        free(y1);
        int total = 0;
        for (size_t i = 0; i < c.n_stages; i++) total += c.stages[i].steps;
        if (!strcmp(e->d_name, "r1-distill-7b.yaml")) {
            long in = -1;
            CHECK(or1_train_total_steps(&c) == 1320 && or1_train_stage_of(&c, 0, &in) == 0 && in == 0 &&
                      or1_train_stage_of(&c, 659, &in) == 0 && in == 659 && or1_train_stage_of(&c, 660, &in) == 1 &&
                      in == 0 && or1_train_stage_of(&c, 1319, &in) == 1 && in == 659 &&
                      or1_train_stage_of(&c, 1320, NULL) == -1 && or1_train_stage_of(&c, -1, NULL) == -1,
                  "7B schedule: stage of a step");
            CHECK(or1_train_micro_tokens(&c, 0) == 2048 + 16384 && or1_train_micro_tokens(&c, 1) == 2048 + 32768,
                  "micro tokens default to prompt + context length");
        }
        if (!strcmp(e->d_name, "quickstart.yaml"))
            CHECK(or1_train_micro_tokens(&c, 0) == 8192 && or1_train_total_steps(&c) == 30 &&
                      !strcmp(c.model.path, "models/arith-base"), "quickstart: the shipped model, micro tokens, steps");
        if (!strcmp(e->d_name, "r1-distill-7b.yaml"))
            CHECK(c.n_stages == 2 && c.stages[0].context_length == 16384 && c.stages[1].context_length == 32768 &&
                      c.stages[1].prompts == 160 && c.stages[1].samples == 32 && total == 1320 &&
                      c.data.train[1].weight == 2, "7B table (Table 11)");
        if (!strcmp(e->d_name, "qwen3-8b.yaml"))
            CHECK(or1_train_enable_thinking(&c) == 1 && c.eval.top_p == 0.95 && total == 1320,
                  "Qwen3-8B: thinking on, the card's top_p, the 7B table");
        if (!strcmp(e->d_name, "r1-distill-32b.yaml"))
            CHECK(c.n_stages == 2 && c.stages[1].context_length == 24576 && total == 1130, "32B table (Table 12)");
        if (!strcmp(e->d_name, "r1-distill-math-7b.yaml"))
            CHECK(c.n_stages == 4 && c.stages[0].mini_batch * 2 == c.stages[0].prompts && c.stages[3].samples == 64 &&
                      total == 2160, "Math-7B table (Table 10)");
        or1_train_config_free(&c);
    }
    closedir(d);
    CHECK(seen >= 4, "only %d configs found in %s", seen, dir);
}

/* Runs every group of checks; fails if any check failed. */
/* Reads SCRATCH/name as JSONL: the status of each of its first rows, the last row kept. */
static void jsonl_statuses(const char *name, int *rc, size_t n, cJSON **last) {
    or1_jsonl_reader r;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", scratch, name);
    *last = NULL;
    if (or1_jsonl_open(&r, path) != 0) return;
    for (size_t i = 0; i < n; i++) {
        cJSON *row = NULL;
        rc[i] = or1_jsonl_next(&r, &row);
        if (rc[i] == 1) cJSON_Delete(*last), *last = row;
        if (rc[i] != 1) break;
    }
    or1_jsonl_close(&r);
}

/* U+0000 never truncates a string silently: a \u0000 escape or a NUL byte refuses the row
 * with its place, while an escaped backslash before "u0000" is ordinary text. */
static void test_json_nul(void) {
    put("nul.jsonl", "{\"text\": \"ok\"}\n{\"text\": \"a\\u0000b\"}\n");
    int rc[2] = {0, 0};
    cJSON *last;
    jsonl_statuses("nul.jsonl", rc, 2, &last);
    CHECK(rc[0] == 1 && rc[1] == -1, "a \\u0000 row: statuses %d %d", rc[0], rc[1]);
    CHECK(error_has("nul.jsonl:2", "U+0000", "byte 11", NULL), "the error names the row and the byte");
    cJSON_Delete(last);
    put("esc.jsonl", "{\"text\": \"a\\\\u0000b\"}\n");
    jsonl_statuses("esc.jsonl", rc, 1, &last);
    const cJSON *t = last ? cJSON_GetObjectItemCaseSensitive(last, "text") : NULL;
    CHECK(rc[0] == 1 && t && strcmp(t->valuestring, "a\\u0000b") == 0, "an escaped backslash is kept as text");
    cJSON_Delete(last);
    char raw[] = "{\"text\": \"a?b\"}";
    raw[11] = '\0';
    CHECK(or1_json_parse(raw, sizeof raw - 1, "raw") == NULL && error_has("raw", "NUL byte at byte 11", NULL),
          "a NUL byte inside the text is refused");
    CHECK(or1_json_nul_at("\"\\u0001\" \"\\u0000\"", 17) == 10, "the second string's escape is found");
    CHECK(or1_json_nul_at("\"\\u000", 6) == -1, "a cut escape is not read past the end");
    or1_math_result mr;
    CHECK(or1_math_verify_json("\\boxed{a}", "[\"a\\u0000b\"]", NULL, &mr) == -1 && error_has("U+0000", NULL),
          "a gold answer holding U+0000 is an error, not the answer \"a\"");
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: test_config SCRATCH_DIR CONFIGS_DIR SHARED_DATA_DIR\n");
        return 2;
    }
    scratch = argv[1];
    if (or1_mkdir_p(scratch) != 0) {
        fprintf(stderr, "%s\n", or1_error());
        return 1;
    }
    test_defaults();
    test_overrides();
    test_variants();
    test_bad_configs();
    test_hostile();
    test_getters();
    test_json_nul();
    test_check_files(argv[3]);
    test_repo_configs(argv[2]);
    test_fuzz(argv[2]);
    return check_report();
}
