/* The CUDA backend's entry points in a build with nvcc: the backend itself is the shared library
 * libor1_cuda_gpu.so beside the program (the .cu files of src/cuda, linked with the CUDA
 * runtime, cuBLAS and NCCL), loaded the first time a GPU is asked about. Mapping those
 * libraries takes about 0.2 s and 200 MB at every start, which no run on the CPU should pay. */
#include "or1/core.h"
#include "or1/cuda.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define OR1_CUDA_LIBRARY "libor1_cuda_gpu.so"

/* The library's entry points once loaded (all NULL when it could not be), and why not. */
static struct {
    int (*device_count)(void);
    or1_backend *(*open)(or1_cuda_prec);
    const char *(*device)(or1_backend *);
} gpu;
static char why[PATH_MAX + 1024];
static pthread_once_t loaded = PTHREAD_ONCE_INIT;

/* Opens the library beside the program (/proc/self/exe's folder) where it is there, else by
 * name on the library path; NULL with the loader's message in why. */
static void *open_library(void) {
    char exe[PATH_MAX], path[PATH_MAX + sizeof OR1_CUDA_LIBRARY] = OR1_CUDA_LIBRARY;
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash = n > 0 ? (exe[n] = '\0', strrchr(exe, '/')) : NULL;
    if (slash) {
        *slash = '\0';
        snprintf(path, sizeof path, "%s/%s", exe, OR1_CUDA_LIBRARY);
        if (access(path, F_OK) != 0) snprintf(path, sizeof path, "%s", OR1_CUDA_LIBRARY);
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) snprintf(why, sizeof why, "cannot load the CUDA backend %s: %s", path, dlerror());
    return h;
}

/* Loads the library and takes its three entry points (once per process). */
static void load(void) {
    void *h = open_library();
    if (!h) return;
    *(void **)&gpu.device_count = dlsym(h, "or1_cuda_device_count");
    *(void **)&gpu.open = dlsym(h, "or1_backend_cuda");
    *(void **)&gpu.device = dlsym(h, "or1_backend_cuda_device");
    if (!gpu.device_count || !gpu.open || !gpu.device) {
        snprintf(why, sizeof why, "%s lacks the backend's entry points", OR1_CUDA_LIBRARY);
        gpu.device_count = NULL, gpu.open = NULL, gpu.device = NULL;
    }
}

/* See cuda.h: 0 when the library cannot be loaded. */
int or1_cuda_device_count(void) {
    pthread_once(&loaded, load);
    return gpu.device_count ? gpu.device_count() : 0;
}

/* See cuda.h. */
const char *or1_cuda_load_error(void) { return why[0] ? why : NULL; }

/* See cuda.h: fails saying why the library could not be loaded. */
or1_backend *or1_backend_cuda(or1_cuda_prec prec) {
    pthread_once(&loaded, load);
    if (!gpu.open) {
        or1_fail("cuda: %s", why);
        return NULL;
    }
    return gpu.open(prec);
}

/* See cuda.h. */
const char *or1_backend_cuda_device(or1_backend *be) {
    pthread_once(&loaded, load);
    return gpu.device ? gpu.device(be) : "?";
}
