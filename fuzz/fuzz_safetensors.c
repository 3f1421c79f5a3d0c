/* libFuzzer target: the safetensors reader (header length, JSON header, dtypes, shapes and
 * offsets against the file size), then a read of every tensor it accepted. */
#include "fuzz.h"

#include "or1/core.h"
#include "or1/io_safetensors.h"

/* Opens the input as a safetensors file and reads each tensor as fp32. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    const char *path = fuzz_file(data, n, "model.safetensors");
    or1_st_file f;
    if (or1_st_open(&f, path) == 0) {
        for (size_t i = 0; i < f.n; i++) {
            const or1_st_entry *e = &f.entries[i];
            size_t count = 1;
            for (int d = 0; d < e->ndim; d++) count *= (size_t)e->shape[d];
            if (count > (1u << 20)) continue;
            float *buf = malloc((count ? count : 1) * sizeof *buf);
            or1_st_read_f32(&f, e, e->shape, e->ndim, buf);
            free(buf);
        }
        or1_st_close(&f);
    }
    unlink(path);
    return 0;
}
