/* libFuzzer target: a step batch as asynchronous training sends it and a checkpoint keeps it
 * (src/train/wire.c), read without a dataset to check its prompts against. */
#include "fuzz.h"

#include "../src/train/internal.h"

/* Reads the input as one batch; one that reads is packed again and must give the same bytes. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    step_batch b;
    async_batch a;
    if (train_wire_unpack_batch((const char *)data, n, "fuzz", NULL, 1 << 16, &b, &a) != 0) return 0;
    size_t owned_len;
    char *owned = train_wire_pack_owned(&b, &owned_len);
    if (train_wire_unpack_owned(owned, owned_len, &b, 1 << 16) != 0) abort();
    free(owned);
    train_batch_free(&b);
    free(a.data_state);
    return 0;
}
