/* Stated-CLM's merge on the CPU, float32: the per-element Fisher-weighted average of merging.py's
 * `fisher_average` (eq. 13-14), in one pass over the cache; fisher_average_cpu.py builds and calls it.
 *
 * x and grad [S, L, H, N, d] (S stacked tensors, keys and values; L layers; H key-value heads; N
 * entries), groups [L, N]: each entry's group id, non-decreasing from 0 to G - 1 in steps of 0 or 1,
 * so a group is a run of adjacent entries. Per (s, l): `largest` is the largest |grad| over the
 * entries of runs longer than one (0 when there is none). For a run of one entry the output is the
 * entry; for a longer run, per element, sum_j w_j x_j / sum_j w_j with w_j = (grad_j / largest)^2,
 * or the plain mean where every w_j is 0.
 *
 * Why not ATen on the CPU: it takes three zero-filled sums as large as the merged cache, three
 * scatter-adds and a dozen element-wise passes (about 30 ms a chunk for 8 layers of 2 x 2,048 x 64
 * on 2 cores), where the runs can be read in place once.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && !defined(__clang__)
/* one build for every x86 machine of a cluster: the loader picks the widest vectors at load time */
#define VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define VECTOR_CLONES
#endif

/* the ids must start at 0, step by 0 or 1 and end at G - 1 */
static int valid_groups(const int64_t *ids, int64_t entries, int64_t num_groups) {
    if (entries == 0) return num_groups == 0;
    if (ids[0] != 0 || ids[entries - 1] != num_groups - 1) return 0;
    for (int64_t n = 1; n < entries; n++) {
        int64_t step = ids[n] - ids[n - 1];
        if (step != 0 && step != 1) return 0;
    }
    return 1;
}

/* the end of the run that starts at `start` */
static inline int64_t run_end(const int64_t *ids, int64_t entries, int64_t start) {
    int64_t end = start + 1;
    while (end < entries && ids[end] == ids[start]) end++;
    return end;
}

VECTOR_CLONES
static void average_runs(const float *x, const float *grad, const int64_t *ids, int64_t entries, int64_t dim,
                         float largest, float *out, float *sums) {
    float *weight = sums, *weighted = sums + dim, *plain = sums + 2 * dim;
    for (int64_t start = 0; start < entries;) {
        int64_t end = run_end(ids, entries, start);
        float *row = out + ids[start] * dim;
        if (end - start == 1) {
            memcpy(row, x + start * dim, (size_t)dim * sizeof(float));
            start = end;
            continue;
        }
        memset(sums, 0, (size_t)(3 * dim) * sizeof(float));
        for (int64_t n = start; n < end; n++) {
            const float *xs = x + n * dim, *gs = grad + n * dim;
            for (int64_t e = 0; e < dim; e++) plain[e] += xs[e];
            if (largest > 0.0f) {
                for (int64_t e = 0; e < dim; e++) {
                    float w = gs[e] / largest;
                    w = w * w;
                    weight[e] += w;
                    weighted[e] += w * xs[e];
                }
            }
        }
        float members = (float)(end - start);
        for (int64_t e = 0; e < dim; e++)
            row[e] = weight[e] > 0.0f ? weighted[e] / fmaxf(weight[e], FLT_MIN) : plain[e] / members;
        start = end;
    }
}

/* Returns 0; -1 when scratch memory cannot be had; -2 when a layer's group ids are not runs from 0 to
 * num_groups - 1. */
int fisher_average(const float *x, const float *grad, const int64_t *groups, int64_t stacks, int64_t layers,
                   int64_t heads, int64_t entries, int64_t dim, int64_t num_groups, float *out) {
    for (int64_t l = 0; l < layers; l++)
        if (!valid_groups(groups + l * entries, entries, num_groups)) return -2;
    float *sums = malloc((size_t)(3 * dim + 1) * sizeof(float));
    if (sums == NULL) return -1;
    for (int64_t s = 0; s < stacks; s++) {
        for (int64_t l = 0; l < layers; l++) {
            const int64_t *ids = groups + l * entries;
            int64_t first = (s * layers + l) * heads;
            float largest = 0.0f; /* over the entries of runs longer than one, every head */
            for (int64_t start = 0; start < entries;) {
                int64_t end = run_end(ids, entries, start);
                if (end - start > 1) {
                    for (int64_t h = 0; h < heads; h++) {
                        const float *g = grad + ((first + h) * entries + start) * dim;
                        for (int64_t i = 0; i < (end - start) * dim; i++) largest = fmaxf(largest, fabsf(g[i]));
                    }
                }
                start = end;
            }
            for (int64_t h = 0; h < heads; h++) {
                average_runs(x + (first + h) * entries * dim, grad + (first + h) * entries * dim, ids, entries, dim,
                             largest, out + (first + h) * num_groups * dim, sums);
            }
        }
    }
    free(sums);
    return 0;
}
