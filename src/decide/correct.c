/* correct.c: debiasing and calibration of a field's label distribution (see correct.h). */
#include "decide/correct.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

static const char *const DEBIAS_NAMES[] = {"none", "permute", "full", "pride"};
static const char *const CALIBRATE_NAMES[] = {"none", "content-free", "pmi"};

bool tl_debias_parse(const char *name, tl_debias *out) {
    for (size_t i = 0; i < sizeof DEBIAS_NAMES / sizeof *DEBIAS_NAMES; i++)
        if (!strcmp(name, DEBIAS_NAMES[i])) {
            *out = (tl_debias)i;
            return true;
        }
    return false;
}

bool tl_calibrate_parse(const char *name, tl_calibrate *out) {
    for (size_t i = 0; i < sizeof CALIBRATE_NAMES / sizeof *CALIBRATE_NAMES; i++)
        if (!strcmp(name, CALIBRATE_NAMES[i])) {
            *out = (tl_calibrate)i;
            return true;
        }
    return false;
}

const char *tl_debias_name(tl_debias m) { return DEBIAS_NAMES[m]; }
const char *tl_calibrate_name(tl_calibrate m) { return CALIBRATE_NAMES[m]; }

/* Next permutation in lexicographic order; false after the last. */
static bool next_permutation(size_t *a, size_t n) {
    if (n < 2)
        return false;
    size_t i = n - 1;
    while (i > 0 && a[i - 1] >= a[i])
        i--;
    if (i == 0)
        return false;
    size_t j = n - 1;
    while (a[j] <= a[i - 1])
        j--;
    size_t t = a[i - 1];
    a[i - 1] = a[j];
    a[j] = t;
    for (size_t l = i, r = n - 1; l < r; l++, r--)
        t = a[l], a[l] = a[r], a[r] = t;
    return true;
}

tl_status tl_debias_orders(tl_debias m, size_t n, size_t k_req, size_t **orders, size_t *k, tl_error *err) {
    *orders = NULL;
    *k = 0;
    if (!n)
        return tl_error_set(err, TL_ERR_INVALID, "decide: debias: a field without values");
    size_t K = 1;
    if (m == TL_DEBIAS_FULL) {
        if (n > TL_DEBIAS_FULL_MAX_VALUES)
            return tl_error_set(err, TL_ERR_INVALID, "decide: debias full: %zu values; at most %d (n! orders)", n,
                                TL_DEBIAS_FULL_MAX_VALUES);
        for (size_t i = 2; i <= n; i++)
            K *= i;
    } else if (m == TL_DEBIAS_PERMUTE || m == TL_DEBIAS_PRIDE) {
        K = k_req ? k_req : (n < TL_DEBIAS_DEFAULT_ORDERS ? n : TL_DEBIAS_DEFAULT_ORDERS);
        if (K > n)
            return tl_error_set(err, TL_ERR_INVALID, "decide: debias: %zu orders of %zu values (at most one per shift)",
                                K, n);
    }
    size_t *o = malloc(K * n * sizeof *o);
    if (!o)
        return tl_error_set(err, TL_ERR_NOMEM, "decide: out of memory");
    for (size_t p = 0; p < n; p++)
        o[p] = p;
    if (m == TL_DEBIAS_FULL) {
        for (size_t r = 1; r < K; r++) {
            memcpy(o + r * n, o + (r - 1) * n, n * sizeof *o);
            next_permutation(o + r * n, n);
        }
    } else {
        for (size_t r = 1; r < K; r++) {
            size_t s = r * n / K; /* distinct shifts, spread over 0..n-1 */
            for (size_t p = 0; p < n; p++)
                o[r * n + p] = (p + s) % n;
        }
    }
    *orders = o;
    *k = K;
    return TL_OK;
}

/* q = softmax(lp) over n (lp finite somewhere). */
static void softmax(const double *lp, size_t n, double *q) {
    double max = -INFINITY, sum = 0;
    for (size_t i = 0; i < n; i++)
        max = lp[i] > max ? lp[i] : max;
    for (size_t i = 0; i < n; i++)
        sum += q[i] = exp(lp[i] - max);
    for (size_t i = 0; i < n; i++)
        q[i] /= sum;
}

static void normalize(double *q, size_t n) {
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += q[i];
    for (size_t i = 0; i < n; i++)
        q[i] = sum > 0 ? q[i] / sum : 1.0 / (double)n;
}

/* Order o's distribution by position, calibrated when cf is given. */
static void order_dist(size_t n, size_t o, const double *lp, const double *cf, double *q, double *c) {
    softmax(lp + o * n, n, q);
    if (!cf)
        return;
    softmax(cf + o * n, n, c);
    for (size_t p = 0; p < n; p++)
        q[p] = c[p] > 0 ? q[p] / c[p] : 0;
    normalize(q, n);
}

void tl_correct_combine(tl_debias m, size_t n, size_t k, const size_t *orders, const double *lp, const double *cf,
                        bool given_prior, double *prior, double *out) {
    double *q = malloc(2 * n * sizeof *q), *c = q ? q + n : NULL;
    if (!q) {
        for (size_t v = 0; v < n; v++)
            out[v] = NAN;
        return;
    }
    if (m == TL_DEBIAS_PRIDE) {
        if (!given_prior) {
            /* log prior(p) = mean over orders of log q_o(p) + const */
            for (size_t p = 0; p < n; p++)
                prior[p] = 0;
            for (size_t o = 0; o < k; o++) {
                order_dist(n, o, lp, cf, q, c);
                for (size_t p = 0; p < n; p++)
                    prior[p] += log(q[p]) / (double)k;
            }
            softmax(prior, n, prior);
        }
        order_dist(n, 0, lp, cf, q, c);
        for (size_t v = 0; v < n; v++)
            out[v] = prior[v] > 0 ? q[v] / prior[v] : 0;
        normalize(out, n);
    } else {
        for (size_t v = 0; v < n; v++)
            out[v] = 0;
        for (size_t o = 0; o < k; o++) {
            order_dist(n, o, lp, cf, q, c);
            for (size_t p = 0; p < n; p++)
                out[orders[o * n + p]] += q[p];
        }
        for (size_t v = 0; v < n; v++)
            out[v] /= (double)k;
    }
    free(q);
}
