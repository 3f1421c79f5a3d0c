/* Fuzz target: a checkpoint's checksums.json, checked against a scratch folder holding one file
 * the record may name (weights), as a resume or a --model load checks a checkpoint. */
#include "fuzz.h"

#include "or1/core.h"
#include "or1/io.h"

/* The file the seeds' records describe (fuzz/make_seeds.py writes the same bytes). */
static const char WEIGHTS[] = "0123456789abcdef0123456789abcdef";

/* Writes the input as checksums.json beside weights and checks every file it names. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    fuzz_file((const uint8_t *)WEIGHTS, sizeof WEIGHTS - 1, "weights");
    const char *path = fuzz_file(data, n, "checksums.json");
    or1_checksums_check(fuzz_dir(), NULL);
    unlink(path);
    return 0;
}
