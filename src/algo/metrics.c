/* Statistics of one training step for the metrics row: the batch's (the batch metrics of the
 * recipe's trainer), and the loss statistics that add up over micro-batches and ranks
 * (OR1_LOSS_SUMS). */
#include "internal.h"
#include "or1/algo.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

/* Sample-level means, group-level ratios and the accuracy histogram. */
void or1_batch_stats_compute(const float *scores, const int32_t *group, const int *len, const int *trained,
                             const bool *truncated, const bool *in_loss, size_t n,
                             const or1_rejection *r, or1_batch_stats *st) {
    memset(st, 0, sizeof *st);
    st->samples = n;
    double score_sum = 0.0, len_sum = 0.0;
    size_t correct = 0, trunc = 0, decided = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isnan(scores[i])) score_sum += scores[i], decided++;
        correct += scores[i] >= 1.0f;
        trunc += truncated && truncated[i];
        len_sum += len[i];
        if (len[i] > st->resp_len_max) st->resp_len_max = len[i];
        if (!in_loss || in_loss[i]) {
            st->kept_samples++;
            st->loss_tokens += (size_t)(trained ? trained[i] : len[i]);
        }
    }
    if (decided) {
        st->reward_mean = score_sum / (double)decided;
        st->accuracy = (double)correct / (double)decided;
    }
    if (n) {
        st->resp_len_mean = len_sum / (double)n;
        st->truncated_ratio = (double)trunc / (double)n;
    }
    or1_groups g;
    or1_groups_build(group, n, &g);
    st->groups = g.n_groups;
    for (size_t k = 0; k < g.n_groups; k++) {
        size_t m = 0, c = 0;
        bool any_loss = false;
        for (size_t j = g.start[k]; j < g.start[k + 1]; j++) {
            c += scores[g.idx[j]] >= 1.0f;
            m += !isnan(scores[g.idx[j]]);
            any_loss = any_loss || !in_loss || in_loss[g.idx[j]];
        }
        size_t bin = m ? c * 10 / m : 0;
        if (m) st->acc_hist[bin > 9 ? 9 : bin]++;
        st->kept_groups += any_loss;
    }
    if (r && r->n_groups) {
        st->solve_none_ratio = (double)r->solve_none / (double)r->n_groups;
        st->solve_all_ratio = (double)r->solve_all / (double)r->n_groups;
    }
    or1_groups_free(&g);
}

/* The statistics under the metric names of the trainer's JSONL row. */
void or1_batch_stats_json(const or1_batch_stats *st, cJSON *row) {
    cJSON_AddNumberToObject(row, "samples", (double)st->samples);
    cJSON_AddNumberToObject(row, "groups", (double)st->groups);
    cJSON_AddNumberToObject(row, "reward_mean", st->reward_mean);
    cJSON_AddNumberToObject(row, "accuracy", st->accuracy);
    cJSON_AddNumberToObject(row, "solve_none_ratio", st->solve_none_ratio);
    cJSON_AddNumberToObject(row, "solve_all_ratio", st->solve_all_ratio);
    cJSON_AddNumberToObject(row, "kept_groups", (double)st->kept_groups);
    cJSON_AddNumberToObject(row, "kept_samples", (double)st->kept_samples);
    cJSON_AddNumberToObject(row, "response_length_mean", st->resp_len_mean);
    cJSON_AddNumberToObject(row, "response_length_max", st->resp_len_max);
    cJSON_AddNumberToObject(row, "truncated_ratio", st->truncated_ratio);
    cJSON_AddNumberToObject(row, "loss_tokens", (double)st->loss_tokens);
    cJSON *h = cJSON_AddArrayToObject(row, "accuracy_hist");
    for (int b = 0; b < 10; b++) cJSON_AddItemToArray(h, cJSON_CreateNumber((double)st->acc_hist[b]));
}

/* The summed loss statistics into buf in OR1_LOSS_SUMS order (longs widened exactly). */
void or1_loss_stats_pack(const or1_loss_stats *st, double *buf) {
    size_t i = 0;
#define PACK(f) buf[i++] = (double)st->f;
    OR1_LOSS_SUMS(PACK)
#undef PACK
}

/* buf back into the summed loss statistics, each to its field's type. */
void or1_loss_stats_unpack(const double *buf, or1_loss_stats *st) {
    size_t i = 0;
#define UNPACK(f) st->f = _Generic(st->f, long: (long)buf[i], default: buf[i]), i++;
    OR1_LOSS_SUMS(UNPACK)
#undef UNPACK
}

/* Adds src's summed statistics to dst's. */
void or1_loss_stats_add(or1_loss_stats *dst, const or1_loss_stats *src) {
#define ADD(f) dst->f += src->f;
    OR1_LOSS_SUMS(ADD)
#undef ADD
}
