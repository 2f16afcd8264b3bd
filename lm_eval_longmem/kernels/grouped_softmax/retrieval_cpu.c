/* Landmark Attention's retrieval attention on the CPU, float32, forward only: the C counterpart of
 * the Triton kernel (retrieval_triton.py), built and called by retrieval_cpu.py.
 *
 * Each (query head, query) reads its chosen blocks where they lie in the block store, its window's
 * earlier blocks, and its own block up to itself, under one grouped softmax. As in the Triton
 * kernel, the grouped softmax is one flat softmax over items, merged online:
 *   - a key of the query's own block (not a landmark, not after the query): logit s_j, value v_j;
 *   - an earlier block (retrieved, or of the window): logit s_l, its landmark's score, and value
 *     sum_j softmax_j(s_j) v_j over the block's members (the landmark's own value is never read).
 * A score is soft_cap(q.k * scaling), soft_cap(x) = cap * tanh(x / cap) when cap > 0.
 *
 * Why not ATen: every query picks its own blocks, so ATen needs a gather of k blocks' keys and
 * values per query and head and batched products of one row each; both cost many times the
 * arithmetic on a CPU. Here a block is read in place, once per query that chose it.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && !defined(__clang__)
/* one build for every x86 machine of a cluster: the loader picks the widest vectors at load time */
#define VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define VECTOR_CLONES
#endif

#define LANES 16

typedef struct {
    const float *slot_queries;   /* [H, N, K, D] */
    const float *window_queries; /* [H, N, D] */
    const float *window_keys;    /* [Hkv, first_place + N, D] */
    const float *window_values;  /* [Hkv, first_place + N, D] */
    const float *store_keys;     /* [Hkv, blocks, B, D] */
    const float *store_values;   /* [Hkv, blocks, B, D] */
    const int64_t *chosen;       /* [H, N, K] */
    const uint8_t *slot_valid;   /* [H, N, K] */
    float *out;                  /* [H, N, D] */
    int64_t heads, kv_heads, length, slots, dim, blocks, block_size, window, first_place;
    float scaling, softcap;
    int64_t first_row, last_row; /* rows h * N + n of this worker */
    int status;                  /* 0, or -2: a chosen block outside the store */
} Work;

/* the online softmax of one query: running maximum, total weight, weighted sum of values */
typedef struct {
    float maximum, total;
    float *sum;
} Merge;

static inline float dot(const float *a, const float *b, int64_t dim) {
    float lanes[LANES] = {0};
    int64_t d = 0;
    for (; d + LANES <= dim; d += LANES) /* LANES independent sums: one vector of them */
        for (int l = 0; l < LANES; l++) lanes[l] += a[d + l] * b[d + l];
    float total = 0.0f;
    for (; d < dim; d++) total += a[d] * b[d];
    for (int l = 0; l < LANES; l++) total += lanes[l];
    return total;
}

static inline float score(const Work *w, const float *query, const float *key) {
    float s = dot(query, key, w->dim) * w->scaling;
    return w->softcap > 0.0f ? w->softcap * tanhf(s / w->softcap) : s;
}

/* add an item of logit `logit` and value `weight_inside * value` to the merge */
static inline void merge_item(Merge *m, int64_t dim, float logit, const float *value, float weight_inside) {
    if (logit == -INFINITY) return; /* a closed gate: no weight */
    if (logit > m->maximum) {
        float keep = expf(m->maximum - logit); /* 0 while the merge is empty (maximum -inf) */
        for (int64_t d = 0; d < dim; d++) m->sum[d] *= keep;
        m->total *= keep;
        m->maximum = logit;
    }
    float add = expf(logit - m->maximum);
    m->total += add;
    add *= weight_inside;
    for (int64_t d = 0; d < dim; d++) m->sum[d] += add * value[d];
}

/* an earlier block as one item: its landmark's score gates its members' own softmax */
static inline void merge_block(const Work *w, Merge *m, const float *query, const float *keys, const float *values,
                               float *scores, float *inside) {
    int64_t B = w->block_size, D = w->dim;
    float top = -INFINITY;
    for (int64_t j = 0; j < B; j++) {
        scores[j] = score(w, query, keys + j * D);
        if (j < B - 1 && scores[j] > top) top = scores[j];
    }
    float landmark = scores[B - 1];
    if (landmark == -INFINITY) return;
    memset(inside, 0, (size_t)D * sizeof(float));
    float members = 0.0f;
    for (int64_t j = 0; j < B - 1; j++) {
        float e = expf(scores[j] - top);
        members += e;
        const float *value = values + j * D;
        for (int64_t d = 0; d < D; d++) inside[d] += e * value[d];
    }
    merge_item(m, D, landmark, inside, 1.0f / members);
}

VECTOR_CLONES
static void attend_rows(Work *w, float *scratch) {
    int64_t H = w->heads, N = w->length, K = w->slots, D = w->dim, B = w->block_size, W = w->window;
    int64_t group = H / w->kv_heads, key_rows = w->first_place + N;
    float *scores = scratch, *inside = scratch + B, *sum = inside + D;
    for (int64_t row = w->first_row; row < w->last_row; row++) {
        int64_t h = row / N, n = row % N, kv = h / group;
        int64_t key = w->first_place + n; /* the query's own key row */
        int64_t place = key % W, window_start = key - place, own = place / B;
        Merge m = {-INFINITY, 0.0f, sum};
        memset(sum, 0, (size_t)D * sizeof(float));
        const float *query = w->window_queries + row * D;
        const float *keys = w->window_keys + (kv * key_rows + window_start) * D;
        const float *values = w->window_values + (kv * key_rows + window_start) * D;
        /* the own block first, so the maximum is finite before a gate that may be -inf */
        for (int64_t j = own * B; j <= place; j++) {
            if (j % B == B - 1) continue; /* a landmark: its value is never read */
            merge_item(&m, D, score(w, query, keys + j * D), values + j * D, 1.0f);
        }
        for (int64_t b = 0; b < own; b++)
            merge_block(w, &m, query, keys + b * B * D, values + b * B * D, scores, inside);
        for (int64_t s = 0; s < K; s++) {
            int64_t at = row * K + s;
            if (!w->slot_valid[at]) continue;
            int64_t block = w->chosen[at];
            if (block < 0 || block >= w->blocks) {
                w->status = -2;
                return;
            }
            int64_t first = (kv * w->blocks + block) * B * D;
            merge_block(w, &m, w->slot_queries + at * D, w->store_keys + first, w->store_values + first, scores,
                        inside);
        }
        float *out = w->out + row * D;
        for (int64_t d = 0; d < D; d++) out[d] = sum[d] / m.total;
    }
}

static void *run_worker(void *argument) {
    Work *w = argument;
    float *scratch = malloc((size_t)(w->block_size + 2 * w->dim) * sizeof(float));
    if (scratch == NULL) {
        w->status = -1;
        return NULL;
    }
    attend_rows(w, scratch);
    free(scratch);
    return NULL;
}

/* Every row h * N + n, split into `threads` runs, one per thread (this one included). Query n's own
 * key is window key row first_place + n: 0 when the queries are whole windows of a row (each its
 * window's keys), the window's fill before them when they are a piece of one window (decoding).
 * Returns 0; -1 when memory (or no thread at all) could be had; -2 for a chosen block outside the
 * store. The tensors are contiguous, laid out as in Work. */
int retrieval_attention(const float *slot_queries, const float *window_queries, const float *window_keys,
                        const float *window_values, const float *store_keys, const float *store_values,
                        const int64_t *chosen, const uint8_t *slot_valid, float *out, int64_t heads,
                        int64_t kv_heads, int64_t length, int64_t slots, int64_t dim, int64_t blocks,
                        int64_t block_size, int64_t window, int64_t first_place, float scaling, float softcap,
                        int64_t threads) {
    int64_t rows = heads * length;
    if (threads < 1) threads = 1;
    if (threads > rows) threads = rows > 0 ? rows : 1;
    Work *work = calloc((size_t)threads, sizeof(Work));
    pthread_t *ids = calloc((size_t)threads, sizeof(pthread_t));
    int *started = calloc((size_t)threads, sizeof(int));
    if (work == NULL || ids == NULL || started == NULL) {
        free(work);
        free(ids);
        free(started);
        return -1;
    }
    for (int64_t t = 0; t < threads; t++) {
        work[t] = (Work){slot_queries, window_queries, window_keys, window_values, store_keys, store_values,
                         chosen,       slot_valid,     out,         heads,         kv_heads,   length,
                         slots,        dim,            blocks,      block_size,    window,     first_place,
                         scaling,      softcap,        rows * t / threads, rows * (t + 1) / threads, 0};
    }
    for (int64_t t = 1; t < threads; t++) started[t] = pthread_create(&ids[t], NULL, run_worker, &work[t]) == 0;
    run_worker(&work[0]);
    for (int64_t t = 1; t < threads; t++) { /* a thread that did not start: its rows run here */
        if (started[t])
            pthread_join(ids[t], NULL);
        else
            run_worker(&work[t]);
    }
    int status = 0;
    for (int64_t t = 0; t < threads; t++)
        if (work[t].status && !status) status = work[t].status;
    free(work);
    free(ids);
    free(started);
    return status;
}
