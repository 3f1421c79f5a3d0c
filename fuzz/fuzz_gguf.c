/* libFuzzer target: the GGUF reader (header, counts and lengths against the file size, every
 * value type, tensor infos, alignment, offsets, overlaps), then every getter on every key and a
 * dequantization of every tensor it accepted. */
#include "fuzz.h"

#include "or1/core.h"
#include "or1/io_gguf.h"

/* Reads one key through every getter and, for an array, through the element accessors. */
static void read_key(const or1_gguf_file *f, const or1_gguf_kv *kv) {
    int64_t i;
    double d;
    bool b;
    const char *s;
    size_t len;
    or1_gguf_get_int(f, kv->key, &i);
    or1_gguf_get_float(f, kv->key, &d);
    or1_gguf_get_bool(f, kv->key, &b);
    or1_gguf_get_str(f, kv->key, &s, &len);
    const or1_gguf_kv *a;
    if (or1_gguf_get_array(f, kv->key, 's', &a) == 0)
        for (uint64_t k = 0; k < a->n; k++) or1_gguf_array_str(a, k, &s, &len);
    if (or1_gguf_get_array(f, kv->key, 'i', &a) == 0)
        for (uint64_t k = 0; k < a->n; k++) or1_gguf_array_int(a, k);
    if (or1_gguf_get_array(f, kv->key, 'f', &a) == 0)
        for (uint64_t k = 0; k < a->n; k++) or1_gguf_array_float(a, k);
}

/* Opens the input as a GGUF file, reads its keys and dequantizes every tensor of at most 2^20 values. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    const char *path = fuzz_file(data, n, "model.gguf");
    or1_gguf_file f;
    if (or1_gguf_open(&f, path) == 0) {
        /* lookups by name are linear (files hold hundreds of keys and tensors): the first
         * thousand of each, so that a file of 10^5 records stays linear here too */
        for (size_t k = 0; k < f.n_kv && k < 1000; k++) read_key(&f, &f.kv[k]);
        for (size_t t = 0; t < f.n_tensors; t++) {
            const or1_gguf_tensor *e = &f.tensors[t];
            if (t < 1000 && or1_gguf_tensor_find(&f, e->name) != e) abort();
            if (e->numel > (1u << 20)) continue;
            float *buf = malloc((e->numel ? e->numel : 1) * sizeof *buf);
            or1_gguf_read_f32(&f, e, buf);
            free(buf);
        }
        or1_gguf_close(&f);
    }
    unlink(path);
    return 0;
}
