/* Each row's running best k scores of a tile of float32 scores, for the CPU path of
 * kernels/top_keys (scan_top_keys.py builds this file with the system's C compiler and calls it
 * through ctypes).
 *
 * A row keeps its best k (value, key index) pairs, best first, and the scores of its keys come in
 * tiles, in key order. Ties go to the earlier key: a score enters only when it beats the k-th best
 * strictly, and it is placed after the equal ones already kept. So the result is the stable ranking
 * (score descending, then key ascending), whatever the tiling.
 *
 * Why not ATen's topk: it copies every row into a buffer of (value, index) pairs before a partial
 * sort, about 1 ns a score on a 2-core EPYC, as long as the q.k that made the scores. Here a row is
 * read once, 32 scores at a time, to get the maximum of each run of 32; the k-th largest of those
 * maxima is a lower bound of the row's k-th best (k runs, k distinct scores at least that large), so
 * only the runs whose maximum reaches it are read again, one score at a time: about k runs a row.
 *
 * The scores must not be NaN (q.k of finite queries and keys is finite; a hidden key is -inf).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define RUN 32

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && !defined(__clang__)
/* one build for every x86 machine of a cluster: the loader picks the widest vectors at load time */
#define VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define VECTOR_CLONES
#endif

static inline float run_maximum(const float *scores, int64_t length) {
    float best = -INFINITY;
    if (length == RUN) { /* lane-wise maxima of the two halves, then across the lanes: vector code */
        float lanes[RUN / 2];
        for (int t = 0; t < RUN / 2; t++) lanes[t] = scores[t] > scores[t + RUN / 2] ? scores[t] : scores[t + RUN / 2];
        for (int t = 0; t < RUN / 2; t++) best = lanes[t] > best ? lanes[t] : best;
        return best;
    }
    for (int64_t i = 0; i < length; i++) best = scores[i] > best ? scores[i] : best;
    return best;
}

/* keep `value` among the best k (values best first), after equal values already kept */
static inline void keep(float *values, int64_t *keys, int64_t k, float value, int64_t key) {
    int64_t place = k - 1;
    while (place > 0 && values[place - 1] < value) {
        values[place] = values[place - 1];
        keys[place] = keys[place - 1];
        place--;
    }
    values[place] = value;
    keys[place] = key;
}

/* The k-th largest of `maxima` (-inf when there are fewer than k), kept as `keep` keeps scores. */
static float kth_largest(const float *maxima, int64_t count, int64_t k, float *values, int64_t *runs) {
    for (int64_t i = 0; i < k; i++) values[i] = -INFINITY;
    for (int64_t i = 0; i < count; i++) {
        if (maxima[i] > values[k - 1]) keep(values, runs, k, maxima[i], i);
    }
    return values[k - 1];
}

/* rows: how many rows; scores: row r at scores + r * width, the scores of keys first_key ..
 * first_key + width - 1; visible[r % period]: how many keys (from key 0) row r sees, so it reads
 * the tile's first visible - first_key scores (none when that is not positive);
 * best_values [rows, k] and best_keys [rows, k]: each row's running best, updated in place.
 * Returns 0, or -1 when memory for the run maxima cannot be had. */
VECTOR_CLONES
int running_top_keys(const float *scores, int64_t rows, int64_t width, const int64_t *visible, int64_t period,
                     int64_t first_key, int64_t k, float *best_values, int64_t *best_keys) {
    int64_t runs = (width + RUN - 1) / RUN;
    float *maxima = malloc((size_t)(runs + k) * sizeof(float));
    int64_t *scratch_runs = malloc((size_t)k * sizeof(int64_t));
    if (maxima == NULL || scratch_runs == NULL) {
        free(maxima);
        free(scratch_runs);
        return -1;
    }
    float *scratch = maxima + runs;
    for (int64_t r = 0; r < rows; r++) {
        const float *row = scores + r * width;
        int64_t length = visible[r % period] - first_key;
        if (length > width) length = width;
        if (length <= 0) continue;
        float *values = best_values + r * k;
        int64_t *keys = best_keys + r * k;
        int64_t row_runs = (length + RUN - 1) / RUN;
        for (int64_t run = 0; run < row_runs; run++) {
            int64_t start = run * RUN;
            maxima[run] = run_maximum(row + start, length - start < RUN ? length - start : RUN);
        }
        float bound = kth_largest(maxima, row_runs, k, scratch, scratch_runs);
        for (int64_t run = 0; run < row_runs; run++) {
            /* a run below the bound holds no score of the row's best k; one not above the k-th best
               kept so far holds nothing that beats it (equal scores keep the earlier key) */
            if (!(maxima[run] >= bound) || !(maxima[run] > values[k - 1])) continue;
            int64_t start = run * RUN, stop = start + RUN < length ? start + RUN : length;
            for (int64_t i = start; i < stop; i++) {
                if (row[i] > values[k - 1]) keep(values, keys, k, row[i], first_key + i);
            }
        }
    }
    free(maxima);
    free(scratch_runs);
    return 0;
}
