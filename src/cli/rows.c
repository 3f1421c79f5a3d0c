/* Reading token ids from input rows, shared by the subcommands that take prompts or examples. */
#include "cli.h"

#include "or1/core.h"
#include "or1/io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "<side>_ids" as given, or "<side>" text through the tokenizer; every id must be below vocab,
 * so a tokenizer larger than the model is caught here and not inside the model. */
int cli_row_ids(const cJSON *row, const char *side, const or1_tokenizer *tok, int vocab, const char *where,
                int32_t **ids, size_t *n) {
    char key[32];
    snprintf(key, sizeof key, "%s_ids", side);
    if (cJSON_GetObjectItemCaseSensitive(row, key)) return or1_json_int_array(row, key, 0, vocab - 1, ids, n, where);
    const char *text = or1_json_str(row, side, where);
    if (!text) return or1_fail_ctx("%s: needs \"%s\" or \"%s\"", where, key, side);
    if (!tok) return or1_fail("%s: \"%s\" text needs a tokenizer (--tokenizer)", where, side);
    if (or1_tokenizer_encode(tok, text, strlen(text), 0, ids, n)) return or1_fail_ctx("%s", where);
    for (size_t i = 0; i < *n; i++)
        if ((*ids)[i] >= vocab) {
            int id = (*ids)[i];
            free(*ids);
            *ids = NULL;
            return or1_fail("%s: token id %d is outside the model's vocabulary of %d", where, id, vocab);
        }
    return 0;
}
