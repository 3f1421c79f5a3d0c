/* Packing variable-length sequences into one batch without padding. */
#include "or1/core.h"
#include "or1/model.h"

#include <stdlib.h>
#include <string.h>

/* Concatenates the sequences, records starts and positions, and lists scored positions. */
void or1_batch_pack(or1_batch *b, const or1_seq *seqs, int n) {
    memset(b, 0, sizeof *b);
    int T = 0, S = 0;
    for (int i = 0; i < n; i++) {
        T += seqs[i].n;
        S += seqs[i].n - seqs[i].n_prompt;
        if (seqs[i].n > b->max_len) b->max_len = seqs[i].n;
    }
    b->ids = or1_malloc((size_t)T * sizeof *b->ids);
    b->pos = or1_malloc((size_t)T * sizeof *b->pos);
    b->seq_start = or1_malloc((size_t)(n + 1) * sizeof *b->seq_start);
    b->sc_pos = or1_malloc((size_t)S * sizeof *b->sc_pos);
    b->sc_tgt = or1_malloc((size_t)S * sizeof *b->sc_tgt);
    for (int i = 0; i < n; i++) {
        const or1_seq *q = &seqs[i];
        b->seq_start[i] = b->n_tokens;
        memcpy(b->ids + b->n_tokens, q->ids, (size_t)q->n * sizeof *b->ids);
        for (int t = 0; t < q->n; t++) b->pos[b->n_tokens + t] = t;
        for (int t = q->n_prompt - 1; t < q->n - 1; t++) {
            b->sc_pos[b->n_scored] = b->n_tokens + t;
            b->sc_tgt[b->n_scored++] = q->ids[t + 1];
        }
        b->n_tokens += q->n;
    }
    b->seq_start[n] = b->n_tokens;
    b->n_seqs = n;
}

void or1_batch_free(or1_batch *b) {
    free(b->ids);
    free(b->pos);
    free(b->seq_start);
    free(b->sc_pos);
    free(b->sc_tgt);
    memset(b, 0, sizeof *b);
}
