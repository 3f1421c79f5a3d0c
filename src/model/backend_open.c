/* Device names to backends. The CPU is known here; a device beyond it (the GPU of the cuda
 * module) is registered by the program that links it (or1_cuda_register), so that the modules
 * between the backends and the program (rollout, train) open a backend by name without
 * depending on the module that makes it, as llama.cpp's backend registry does. */
#include "or1/core.h"
#include "or1/model.h"

#include <stdio.h>
#include <string.h>

enum { MAX_DEVICES = 8 };

/* The registered devices, in the order of registration. */
static struct {
    const char *name;
    or1_backend_opener open;
} devices[MAX_DEVICES];
static int n_devices;

/* Whether a precision name asks for bf16 matmuls: 1 bf16, 0 fp32, -1 for "auto" or nothing,
 * -2 (with or1_fail) for an unknown name. */
static int wants_bf16(const char *precision) {
    if (!precision || !*precision || strcmp(precision, "auto") == 0) return -1;
    if (strcmp(precision, "bf16") == 0) return 1;
    if (strcmp(precision, "fp32") == 0) return 0;
    or1_fail("unknown precision \"%s\" (auto | fp32 | bf16)", precision);
    return -2;
}

/* Adds (or replaces) a device name. */
int or1_backend_register(const char *name, or1_backend_opener open) {
    for (int i = 0; i < n_devices; i++)
        if (strcmp(devices[i].name, name) == 0) return devices[i].open = open, 0;
    if (n_devices == MAX_DEVICES) return or1_fail("backend registry: more than %d devices", MAX_DEVICES);
    devices[n_devices].name = name, devices[n_devices].open = open;
    n_devices++;
    return 0;
}

/* "cpu" (or nothing) is the CPU backend, fp32 unless bf16 is asked; any other name is looked up
 * among the registered devices, whose opener decides what "auto" means there. */
or1_backend *or1_backend_open(const char *device, const char *precision) {
    int b = wants_bf16(precision);
    if (b == -2) return NULL;
    if (!device || !*device || strcmp(device, "cpu") == 0) return or1_backend_cpu_prec(b == 1);
    for (int i = 0; i < n_devices; i++)
        if (strcmp(devices[i].name, device) == 0) return devices[i].open(b);
    char known[128] = "cpu";
    for (int i = 0; i < n_devices; i++)
        snprintf(known + strlen(known), sizeof known - strlen(known), " | %s", devices[i].name);
    or1_fail("unknown device \"%s\" (%s)", device, known);
    return NULL;
}
