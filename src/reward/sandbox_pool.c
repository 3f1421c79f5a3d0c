/* A pool of worker threads grading code jobs from one queue (one worker per core by default).
 * Each worker runs one sandboxed process at a time, so the pool never oversubscribes the CPUs. */
#include "or1/core.h"
#include "or1/reward_sandbox.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One caller's batch: its jobs, results and completion count. */
typedef struct batch {
    const or1_code_job *jobs;
    or1_code_result *results;
    size_t n, next, done;
    int failed;
    char error[512];
    pthread_cond_t finished;
    struct batch *link;
} batch;

struct or1_sandbox_pool {
    pthread_mutex_t lock;
    pthread_cond_t work;
    batch *head, *tail; /* batches with jobs not yet taken, oldest first */
    bool stopping;
    int n_workers;
    pthread_t *threads;
};

/* Takes the next job under the lock, or NULL when stopping with an empty queue. */
static batch *take(or1_sandbox_pool *p, size_t *index) {
    while (!p->head && !p->stopping) pthread_cond_wait(&p->work, &p->lock);
    batch *b = p->head;
    if (!b) return NULL;
    *index = b->next++;
    if (b->next == b->n) {
        p->head = b->link;
        if (!p->head) p->tail = NULL;
    }
    return b;
}

/* Worker loop: grade jobs until the pool stops. */
static void *worker(void *arg) {
    or1_sandbox_pool *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        size_t i;
        batch *b = take(p, &i);
        if (!b) break;
        pthread_mutex_unlock(&p->lock);
        int rc = or1_code_verify(&b->jobs[i], &b->results[i]);
        pthread_mutex_lock(&p->lock);
        if (rc != 0 && !b->failed) {
            b->failed = 1;
            snprintf(b->error, sizeof b->error, "job %zu: %s", i, or1_error());
        }
        if (++b->done == b->n) pthread_cond_signal(&b->finished);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* See sandbox.h. */
or1_sandbox_pool *or1_sandbox_pool_new(int workers) {
    if (workers <= 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        workers = cores > 0 ? (int)cores : 1;
    }
    if (workers > 1024) { /* one run uid and cgroup slot per concurrent run */
        or1_fail("sandbox pool: %d workers is too many", workers);
        return NULL;
    }
    or1_sandbox_pool *p = or1_calloc(1, sizeof *p);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    p->threads = or1_calloc((size_t)workers, sizeof *p->threads);
    for (int i = 0; i < workers; i++) {
        if (pthread_create(&p->threads[i], NULL, worker, p) != 0) {
            or1_fail("sandbox pool: cannot start worker %d", i);
            p->n_workers = i;
            or1_sandbox_pool_free(p);
            return NULL;
        }
        p->n_workers = i + 1;
    }
    return p;
}

/* Number of worker threads. */
int or1_sandbox_pool_workers(const or1_sandbox_pool *p) { return p->n_workers; }

/* See sandbox.h. */
int or1_sandbox_pool_run(or1_sandbox_pool *p, const or1_code_job *jobs, or1_code_result *results,
                         size_t n) {
    if (n == 0) return 0;
    batch b = {.jobs = jobs, .results = results, .n = n};
    pthread_cond_init(&b.finished, NULL);
    pthread_mutex_lock(&p->lock);
    if (p->tail) p->tail->link = &b;
    else p->head = &b;
    p->tail = &b;
    pthread_cond_broadcast(&p->work);
    while (b.done < b.n) pthread_cond_wait(&b.finished, &p->lock);
    pthread_mutex_unlock(&p->lock);
    pthread_cond_destroy(&b.finished);
    if (b.failed) return or1_fail("sandbox pool: %s", b.error);
    return 0;
}

/* See sandbox.h. */
void or1_sandbox_pool_free(or1_sandbox_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->n_workers; i++) pthread_join(p->threads[i], NULL);
    pthread_cond_destroy(&p->work);
    pthread_mutex_destroy(&p->lock);
    free(p->threads);
    free(p);
}
