/* test_quant.c: the weight codecs. Dequantization of real fixture tensors is
 * checked against an independent decoder written here element by element (in
 * double, from the format description, not from kernels' loops); quantize ->
 * dequantize round trips must stay within each format's error; half-precision
 * conversion is checked exhaustively. Runs every ISA path the CPU has
 * (dequant must be exact on each). */
#include <math.h>
#include <stdint.h>

#include "gguf/gguf.h"
#include "kernels/kernels.h"
#include "tl_test.h"

/* ---- independent reference decoder ------------------------------------- */

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

/* binary16 -> double by the textbook formula */
static double ref_half(uint16_t h) {
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 0) v = ldexp(m, -24);
    else if (e == 31) v = m ? NAN : INFINITY;
    else v = ldexp(1024 + m, e - 25);
    return s ? -v : v;
}

/* 6-bit scale (which=0) or min (which=1) of sub-block j in a K-quant scales[12] */
static int ref_k_scale(const uint8_t *s, int j, int which) {
    if (j < 4) return s[j + 4 * which] & 63;
    int low = which ? s[j + 4] >> 4 : s[j + 4] & 15;
    int high = s[j - 4 * (1 - which)] >> 6; /* scale: byte j-4, min: byte j */
    return low | high << 4;
}

/* Element k of the block at b, of type t, in double. */
static double ref_elem(tl_ggml_type t, const uint8_t *b, int k) {
    switch (t) {
    case TL_TYPE_F32: { float f; memcpy(&f, b + 4 * k, 4); return f; }
    case TL_TYPE_F16: return ref_half(rd16(b + 2 * k));
    case TL_TYPE_BF16: { uint32_t u = (uint32_t)rd16(b + 2 * k) << 16; float f; memcpy(&f, &u, 4); return f; }
    case TL_TYPE_Q8_0: return ref_half(rd16(b)) * (int8_t)b[2 + k];
    case TL_TYPE_Q4_0: case TL_TYPE_Q4_1: case TL_TYPE_Q5_0: case TL_TYPE_Q5_1: {
        int has_m = t == TL_TYPE_Q4_1 || t == TL_TYPE_Q5_1;
        int five = t == TL_TYPE_Q5_0 || t == TL_TYPE_Q5_1;
        const uint8_t *qh = b + 2 + 2 * has_m;
        const uint8_t *qs = qh + 4 * five;
        int q = k < 16 ? qs[k] & 15 : qs[k - 16] >> 4;
        if (five) q |= ((qh[k / 8] >> (k % 8)) & 1) << 4;
        double d = ref_half(rd16(b));
        if (has_m) return d * q + ref_half(rd16(b + 2));
        return d * (q - (five ? 16 : 8));
    }
    case TL_TYPE_Q4_K: case TL_TYPE_Q5_K: {
        int five = t == TL_TYPE_Q5_K;
        const uint8_t *sc = b + 4, *qh = b + 16, *qs = b + 16 + 32 * five;
        int j = k / 32, c = k / 64, l = k % 32, upper = (k % 64) >= 32;
        int q = upper ? qs[32 * c + l] >> 4 : qs[32 * c + l] & 15;
        if (five) q += ((qh[l] >> (2 * c + upper)) & 1) * 16;
        return ref_half(rd16(b)) * ref_k_scale(sc, j, 0) * q - ref_half(rd16(b + 2)) * ref_k_scale(sc, j, 1);
    }
    case TL_TYPE_Q6_K: {
        const uint8_t *ql = b, *qh = b + 128;
        const int8_t *sc = (const int8_t *)(b + 192);
        int h = k / 128, r = k % 128, quarter = r / 32, l = r % 32;
        int lowbyte = ql[64 * h + l + 32 * (quarter & 1)];
        int q = quarter >= 2 ? lowbyte >> 4 : lowbyte & 15;
        q |= ((qh[32 * h + l] >> (2 * quarter)) & 3) << 4;
        return ref_half(rd16(b + 208)) * sc[8 * h + 2 * quarter + l / 16] * (q - 32);
    }
    case TL_TYPE_MXFP4: {
        /* e2m1 by the OCP MX formula: sign, 2 exponent bits (bias 1), 1 mantissa bit */
        int q = k < 16 ? b[1 + k] & 15 : b[1 + k - 16] >> 4;
        int s = q >> 3, e = (q >> 1) & 3, m = q & 1;
        double v = e == 0 ? 0.5 * m : ldexp(1.0 + 0.5 * m, e - 1);
        return (s ? -v : v) * ldexp(1.0, (int)b[0] - 127);
    }
    default: return NAN;
    }
}

static int block_elems(tl_ggml_type t) { return (int)tl_type_block_elems(t); }

/* Max |dequant - reference| over a row, relative to the row's max |reference|. */
static double row_error(tl_ggml_type t, const void *row, int64_t n, const float *got) {
    int be = block_elems(t);
    size_t bb = tl_type_block_bytes(t);
    double max_err = 0;
    for (int64_t i = 0; i < n; i++) {
        double want = ref_elem(t, (const uint8_t *)row + (size_t)(i / be) * bb, (int)(i % be));
        double e = fabs(want - got[i]);
        if (e > max_err) max_err = e;
    }
    return max_err;
}

/* ---- fixtures -------------------------------------------------------------- */

static int seen_type[TL_TYPE_COUNT];

static void check_fixture(const char *rel) {
    tl_gguf *g = NULL;
    tl_error err = {0};
    if (tl_gguf_open(tl_fixture(rel), &g, &err) != TL_OK) {
        CHECKF(0, "open %s: %s", rel, err.msg);
        return;
    }
    for (uint64_t ti = 0; ti < tl_gguf_n_tensors(g); ti++) {
        const tl_gguf_tensor *T = tl_gguf_tensor_at(g, ti);
        if (!tl_kernels_supports(T->type)) continue;
        int64_t n = T->ne[0];
        int64_t rows = T->ne[1] * T->ne[2] * T->ne[3];
        size_t rb = tl_type_row_bytes(T->type, n);
        if (rows > 8) rows = 8; /* a few rows of every tensor keeps it fast */
        float *got = malloc((size_t)n * sizeof *got);
        for (int64_t r = 0; r < rows; r++) {
            const uint8_t *row = (const uint8_t *)T->data + (size_t)r * rb;
            tl_dequant_row(T->type, row, got, n);
            double e = row_error(T->type, row, n, got);
            /* the reference is double; floats of the same products agree to ~1 ulp */
            CHECKF(e < 1e-5, "%s %.*s row %lld: dequant differs from reference by %g", rel,
                   (int)T->name.len, T->name.ptr, (long long)r, e);
        }
        seen_type[T->type]++;
        free(got);
    }
    tl_gguf_close(g);
}

/* ---- round trips ------------------------------------------------------------ */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static double rnd_normal(void) {
    /* xorshift + Box-Muller: reproducible weights without libc's rand */
    double u[2];
    for (int i = 0; i < 2; i++) {
        rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
        u[i] = ((rng_state >> 11) + 0.5) / 9007199254740992.0;
    }
    return sqrt(-2 * log(u[0])) * cos(6.283185307179586 * u[1]);
}

/* Relative RMS error bound of each format on Gaussian rows (measured values
 * are roughly half of these; ggml's own quantizers sit in the same range). */
static double rms_bound(tl_ggml_type t) {
    switch (t) {
    case TL_TYPE_F32: return 0;
    case TL_TYPE_F16: return 5e-4;
    case TL_TYPE_BF16: return 4e-3;
    case TL_TYPE_Q8_0: return 0.012;
    case TL_TYPE_Q6_K: return 0.025;
    case TL_TYPE_Q5_0: case TL_TYPE_Q5_1: case TL_TYPE_Q5_K: return 0.06;
    case TL_TYPE_MXFP4: return 0.2; /* 8 magnitudes on a power-of-two scale */
    default: return 0.12; /* 4-bit */
    }
}

static void check_round_trip(tl_ggml_type t) {
    const int64_t n = 1024;
    float x[1024], y[1024];
    uint8_t buf[4096];
    for (int rep = 0; rep < 4; rep++) {
        double scale = rep == 3 ? 1e-3 : 1.0;
        for (int64_t i = 0; i < n; i++) x[i] = (float)(rnd_normal() * scale + (rep == 2 ? 0.5 : 0));
        size_t nbytes = tl_quantize_row(t, x, buf, n);
        CHECKF(nbytes == tl_type_row_bytes(t, n), "%s: quantize_row wrote %zu bytes", tl_type_name(t), nbytes);
        tl_dequant_row(t, buf, y, n);
        double se = 0, sx = 0;
        for (int64_t i = 0; i < n; i++) { se += (double)(y[i] - x[i]) * (y[i] - x[i]); sx += (double)x[i] * x[i]; }
        double rel = sqrt(se / sx);
        CHECKF(rel <= rms_bound(t), "%s rep %d: relative RMS error %g > %g", tl_type_name(t), rep, rel, rms_bound(t));
        /* what we wrote decodes the same through the reference decoder */
        CHECKF(row_error(t, buf, n, y) < 1e-5 * scale, "%s: dequant vs reference", tl_type_name(t));
    }
    /* an all-zero row stays exactly zero */
    memset(x, 0, sizeof x);
    tl_quantize_row(t, x, buf, n);
    tl_dequant_row(t, buf, y, n);
    int zeros = 1;
    for (int64_t i = 0; i < n; i++) zeros &= y[i] == 0;
    CHECKF(zeros, "%s: zero row does not round-trip", tl_type_name(t));
}

/* Every binary16 value converts exactly, and f32 -> f16 rounds to nearest. */
static void check_half_exhaustive(void) {
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        uint16_t hv = (uint16_t)h;
        float f;
        tl_dequant_row(TL_TYPE_F16, &hv, &f, 1);
        double want = ref_half(hv);
        if (isnan(want) ? !isnan(f) : (double)f != want) bad++;
        if (isnan(want)) continue;
        uint16_t back;
        tl_quantize_row(TL_TYPE_F16, &f, &back, 1);
        if (back != hv && !(want == 0 && (back & 0x7fff) == 0)) bad++;
    }
    CHECKF(bad == 0, "%d binary16 values convert wrongly", bad);
    /* rounding: 1 + 2^-11 is a tie between 1 and 1+2^-10: goes to the even 1 */
    float v[3] = {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 70000.f};
    uint16_t h[3];
    tl_quantize_row(TL_TYPE_F16, v, h, 3);
    CHECK(h[0] == 0x3c00);
    CHECK(h[1] == 0x3c02);
    CHECK(h[2] == 0x7c00);
}

int main(void) {
    static const char *isas[] = {"scalar", "avx2", "avx512"};
    static const tl_ggml_type types[] = {TL_TYPE_F32, TL_TYPE_F16, TL_TYPE_BF16, TL_TYPE_Q8_0,
                                         TL_TYPE_Q4_0, TL_TYPE_Q4_1, TL_TYPE_Q5_0, TL_TYPE_Q5_1,
                                         TL_TYPE_Q4_K, TL_TYPE_Q5_K, TL_TYPE_Q6_K, TL_TYPE_MXFP4};
    for (int k = 0; k < 3; k++) {
        if (!tl_kernels_force_isa(isas[k])) {
            fprintf(stderr, "ISA %s not available here: skipped\n", isas[k]);
            continue;
        }
        fprintf(stderr, "ISA %s\n", tl_kernels_isa());
        memset(seen_type, 0, sizeof seen_type);
        check_half_exhaustive();
        for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) check_round_trip(types[i]);
        check_fixture("models/llama-spm-d256-q4_k_m.gguf");
        check_fixture("models/llama-spm-d256-q5_k_m.gguf");
        check_fixture("models/llama-spm-d320-q4_k_m.gguf");
        check_fixture("models/llama-spm-d256-q4_0.gguf");
        check_fixture("models/llama-spm-d64-q8_0.gguf");
        check_fixture("models/qwen3-d64-f16.gguf");
        check_fixture("models/llama3-d64-bf16.gguf");
        check_fixture("models/gpt-oss-gpt2-d64-mxfp4.gguf");
        /* the fixtures really cover the formats they are meant to */
        static const tl_ggml_type expect[] = {TL_TYPE_Q4_K, TL_TYPE_Q5_K, TL_TYPE_Q6_K, TL_TYPE_Q5_0,
                                              TL_TYPE_Q8_0, TL_TYPE_Q4_0, TL_TYPE_F16, TL_TYPE_BF16,
                                              TL_TYPE_MXFP4};
        for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++) {
            CHECKF(seen_type[expect[i]] > 0, "no fixture tensor of type %s", tl_type_name(expect[i]));
        }
    }
    /* unsupported types and bad lengths are refused, not written */
    float x[32] = {0};
    uint8_t buf[64];
    CHECK(tl_quantize_row(TL_TYPE_Q2_K, x, buf, 256) == 0);
    CHECK(tl_quantize_row(TL_TYPE_Q8_0, x, buf, 31) == 0);
    CHECK(!tl_kernels_supports(TL_TYPE_I32));
    return TEST_DONE();
}
