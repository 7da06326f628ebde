/* sample.c: see sample.h. */
#define _GNU_SOURCE /* qsort_r */
#include "util/sample.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

static const double band_lo[TL_SAMPLE_N_BANDS] = {1e-2, 1e-5, 1e-10, 0.0};

static int cmp_desc(const void *a, const void *b, void *ctx) {
    const double *w = ctx;
    int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
    if (w[i] != w[j])
        return w[i] < w[j] ? 1 : -1;
    return i < j ? -1 : i > j;
}

size_t tl_sample_band(const double *w, int32_t n, int band, int32_t *out) {
    if (band < 0 || band >= TL_SAMPLE_N_BANDS)
        return 0;
    double lo = band_lo[band], hi = band ? band_lo[band - 1] : INFINITY;
    size_t m = 0;
    for (int32_t i = 0; i < n; i++)
        if (w[i] >= lo && w[i] < hi && w[i] > 0)
            out[m++] = i;
    qsort_r(out, m, sizeof *out, cmp_desc, (void *)w);
    return m;
}

/* The draw: the first kept index whose running weight exceeds u * total. */
static int32_t draw(const double *w, const int32_t *idx, size_t m, double u) {
    double total = 0;
    for (size_t i = 0; i < m; i++)
        total += w[idx ? idx[i] : (int32_t)i];
    if (!(total > 0))
        return -1;
    double r = u * total, acc = 0;
    int32_t last = -1;
    for (size_t i = 0; i < m; i++) {
        int32_t k = idx ? idx[i] : (int32_t)i;
        if (!(w[k] > 0))
            continue;
        last = k;
        acc += w[k];
        if (r < acc)
            return k;
    }
    return last; /* rounding: u * total at or past the sum */
}

int32_t tl_sample_weights(const double *w, int32_t n, const tl_sample_filter *f, double u, int32_t *order) {
    if (n <= 0)
        return -1;
    bool need_sort = f && (f->top_k > 0 || f->top_p < 1);
    bool need_min = f && f->min_p > 0;
    if (!need_sort && !need_min)
        return draw(w, NULL, (size_t)n, u);
    double wmax = 0, total = 0;
    for (int32_t i = 0; i < n; i++) {
        total += w[i];
        if (w[i] > wmax)
            wmax = w[i];
    }
    if (!(wmax > 0))
        return -1;
    size_t m = 0;
    if (need_sort) {
        /* Sorted head, band by band: enough indexes for top_k and enough mass
         * for top_p. Bands are relative to the heaviest weight. */
        double mass = 0;
        for (int b = 0; b < TL_SAMPLE_N_BANDS; b++) {
            double lo = band_lo[b] * wmax, hi = b ? band_lo[b - 1] * wmax : INFINITY;
            size_t add = 0;
            for (int32_t i = 0; i < n; i++)
                if (w[i] >= lo && w[i] < hi && w[i] > 0)
                    order[m + add++] = i;
            qsort_r(order + m, add, sizeof *order, cmp_desc, (void *)w);
            for (size_t i = 0; i < add; i++)
                mass += w[order[m + i]];
            m += add;
            bool k_ok = f->top_k <= 0 || m >= (size_t)f->top_k;
            bool p_ok = f->top_p >= 1 || mass >= f->top_p * total * (1 - 1e-12);
            if (k_ok && p_ok)
                break;
        }
        if (f->top_k > 0 && m > (size_t)f->top_k)
            m = (size_t)f->top_k;
        if (f->top_p < 1) {
            double kept = 0, run = 0;
            for (size_t i = 0; i < m; i++)
                kept += w[order[i]];
            for (size_t i = 0; i < m; i++) {
                run += w[order[i]];
                if (run >= f->top_p * kept) {
                    m = i + 1;
                    break;
                }
            }
        }
    } else {
        for (int32_t i = 0; i < n; i++)
            if (w[i] > 0)
                order[m++] = i;
    }
    if (need_min) { /* always keeps the heaviest */
        size_t kept = 0;
        for (size_t i = 0; i < m; i++)
            if (w[order[i]] >= f->min_p * wmax)
                order[kept++] = order[i];
        m = kept;
    }
    return draw(w, order, m, u);
}

int32_t tl_argmax_f(const float *x, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

double tl_logsumexp_f(const float *x, size_t n) {
    float mx = -INFINITY;
    for (size_t i = 0; i < n; i++)
        if (x[i] > mx)
            mx = x[i];
    if (!isfinite(mx))
        return mx;
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += exp((double)x[i] - mx);
    return mx + log(s);
}

double tl_logsumexp_ids(const float *logits, const int32_t *ids, size_t n) {
    float mx = -INFINITY;
    for (size_t i = 0; i < n; i++)
        if (logits[ids[i]] > mx)
            mx = logits[ids[i]];
    if (!isfinite(mx))
        return mx;
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += exp((double)logits[ids[i]] - mx);
    return mx + log(s);
}
