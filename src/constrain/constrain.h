/* constrain.h: values that are not one token: numbers generated under a
 * token-level automaton, free text for open fields, and the regexes that ask
 * a remote engine (SGLang) for the same constraints.
 *
 * Why a layer of its own: a categorical decision reads one position, but an
 * integer or number field without an enum is generated token by token after
 * the rendering's answer position, and every step must allow exactly the
 * tokens that keep the text a valid prefix of an in-range number. The
 * decisions layer (src/decide) and the server use this header; nothing here
 * knows about schemas beyond one field's JSON.
 *
 * Numbers. A tl_number_spec holds the allowed set as scaled integers: a value
 * x is allowed when x * 10^decimals is an integer N with lo <= N <= hi and
 * N % step == 0, the integer part has at most max_int_digits digits and the
 * fraction at most `decimals` digits. Accepted text is JSON-number shaped:
 *     -?(0|[1-9][0-9]*)(\.[0-9]+)?      (no '+', no exponent, no leading zeros)
 * "-0" is refused for integers (it prints as 0); for numbers "-0.5" is fine and
 * "-0"/"-0.0" only where negative values are allowed (minimum < 0).
 * The automaton allows a token only when some completion of the text it
 * produces lies in the allowed set, so the range and multipleOf hold during
 * generation, not after.
 *
 * Schema keywords read by tl_number_spec_from_schema (field = one property):
 *   type               "integer" or "number"
 *   minimum, maximum   inclusive bounds
 *   exclusiveMinimum, exclusiveMaximum   numbers (2019+) or booleans (draft 4,
 *                      applying to minimum/maximum)
 *   multipleOf         > 0; for integers an integer; for numbers its decimal
 *                      places set the precision unless x-decimals does
 *   x-decimals         fraction digits of a number (0..12; default 6, or the
 *                      multipleOf's places)
 *   x-max-digits       most digits BEFORE the decimal point (1..19); default:
 *                      enough for the bounds, else 19 for integers and 12 for
 *                      numbers, so generation always ends
 * Bounds are read as exact decimals (0.3 is 3 tenths) and rounded inward to
 * the decimals grid; a bound beyond what max_int_digits can write is clamped
 * to it. Integers are exact int64: a bound outside int64 is a schema error; an
 * unbounded side defaults to INT64_MIN / INT64_MAX. Numbers come out as double.
 * Schema errors (TL_ERR_SCHEMA) name the JSON path: min > max, multipleOf <= 0,
 * non-numeric bounds, a range no value satisfies, `open` on a number field.
 *
 * Closing. The value ends with a terminator: a string (e.g. "\"" in the record
 * rendering) and/or token ids (end of turn in the chat rendering). Closing is
 * allowed only once the text is a complete allowed number. A token that
 * finishes the number and then starts the terminator also closes (e.g. `5"`,
 * `",` for terminator `"`); bytes after the terminator in that token are the
 * result's `tail` (refused when allow_tail is false). A multi-byte terminator
 * may be spread over several tokens.
 *
 * Remote backends (SGLang) run the same automaton client-side: each step
 * asks the server for exactly the allowed tokens' log-probabilities, so
 * ranges and multipleOf hold by construction there too. Only a remote
 * backend without a local vocabulary falls back to tl_number_regex(): it
 * spells exactly the values in [lo, hi] (every spelling with up to `decimals`
 * fraction digits); multipleOf cannot in general be a regex, so that
 * fallback refuses a spec with a step.
 * tl_regex_parse() recognises the regexes built here so typellm's own server
 * can enforce a /generate `regex` with the automaton. */
#ifndef TL_CONSTRAIN_CONSTRAIN_H
#define TL_CONSTRAIN_CONSTRAIN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "typellm/common.h"
#include "util/strbuf.h"

/* ===== number specs ===================================================== */

#define TL_NUMBER_MAX_INT_DIGITS 19 /* int64 has 19 digits */
#define TL_NUMBER_MAX_DECIMALS 12

typedef enum tl_number_kind { TL_NUMBER_INTEGER = 1, TL_NUMBER_DECIMAL = 2 } tl_number_kind;

typedef struct tl_number_spec {
    tl_number_kind kind;
    int decimals;        /* fraction digits allowed; 0 for integers */
    int max_int_digits;  /* digits before the point, 1..TL_NUMBER_MAX_INT_DIGITS */
    /* The allowed set in units of 10^-decimals (exclusive bounds folded in):
     * N in [lo, hi] with N % step == 0. */
    __int128 lo, hi, step;
} tl_number_spec;

/* A parsed value: ival exact for integers (dval = (double)ival too). */
typedef struct tl_number_value {
    bool is_integer;
    int64_t ival;
    double dval;
} tl_number_value;

/* Reads one field's schema object at JSON path `path` (e.g.
 * "/properties/amount"); error messages name path + keyword. */
tl_status tl_number_spec_from_schema(const json_t *field, const char *path, tl_number_spec *out, tl_error *err);
/* The same from JSON text (fuzzing, CLI); a JSON syntax error names line:column. */
tl_status tl_number_spec_from_json(const char *text, size_t len, const char *path, tl_number_spec *out,
                                   tl_error *err);
/* Convenience for callers and tests: an integer spec [lo, hi] with step
 * (>= 1); max_int_digits derived from the bounds. */
tl_status tl_number_spec_integer(int64_t lo, int64_t hi, int64_t step, tl_number_spec *out, tl_error *err);
/* Appends e.g. "integer in [1, 10], multiple of 2" / "number in [-1.5, 2.25] with 2 decimals". */
void tl_number_spec_describe(const tl_number_spec *spec, tl_strbuf *out);
/* Checks a complete number text against the spec (shape, digit limits, range,
 * step); fills *out when non-NULL. The oracle the tests and the remote path use. */
bool tl_number_spec_accepts(const tl_number_spec *spec, const char *text, size_t len, tl_number_value *out);
/* Viability: true when some completion of `prefix` (number characters only,
 * possibly empty) is accepted. The brute-force predicate tests compare masks with. */
bool tl_number_spec_prefix_viable(const tl_number_spec *spec, const char *prefix, size_t len);

/* ===== per-vocabulary token index ======================================= */

/* What every token can contribute to a number, precomputed once per
 * vocabulary (151k Qwen tokens: ~0.1 s) so that a mask costs about a
 * microsecond (bench/bench_numbers.sh). Immutable after creation; shareable
 * across threads; keep one per backend vocabulary. */
typedef struct tl_number_index tl_number_index;

tl_status tl_number_index_new(const tl_vocab *v, tl_number_index **out, tl_error *err);
/* v's one index, built on first use and freed with v (tl_vocab_memo): what
 * decisions use, so records over one model share it. Not freed by the caller. */
tl_status tl_number_index_of(const tl_vocab *v, const tl_number_index **out, tl_error *err);
/* For vocabularies known only through their token bytes (tests, tools). */
typedef size_t (*tl_token_bytes_fn)(void *ctx, int32_t id, char *buf, size_t cap);
tl_status tl_number_index_new_custom(int32_t n_tokens, tl_token_bytes_fn token_bytes, void *ctx,
                                     tl_number_index **out, tl_error *err);
void tl_number_index_free(tl_number_index *idx);
int32_t tl_number_index_n_tokens(const tl_number_index *idx);
/* The token's bytes as indexed (control tokens are empty). */
const char *tl_number_index_token(const tl_number_index *idx, int32_t id, size_t *len);

/* ===== the number automaton ============================================= */

typedef struct tl_number_close {
    const char *terminator;        /* bytes that close the value, e.g. "\""; NULL: none */
    size_t terminator_len;         /* 0 with a non-NULL terminator: strlen */
    const int32_t *terminator_ids; /* tokens that close the value (end of turn); may be NULL */
    size_t n_terminator_ids;
    bool allow_leading_space;      /* one ' ' before the number */
    bool allow_tail;               /* closing token may continue past the terminator (`",`) */
} tl_number_close;

typedef struct tl_number_automaton tl_number_automaton;

/* idx and spec are borrowed (must outlive the automaton); close is copied.
 * TL_ERR_INVALID when no way to close exists (no terminator token). */
tl_status tl_number_automaton_new(const tl_number_index *idx, const tl_number_spec *spec,
                                  const tl_number_close *close, tl_number_automaton **out, tl_error *err);
void tl_number_automaton_free(tl_number_automaton *a);
void tl_number_automaton_reset(tl_number_automaton *a);
/* The allowed next tokens, in no particular order; out has room for
 * tl_number_index_n_tokens() ids. Returns how many (0 once done). */
size_t tl_number_automaton_allowed(const tl_number_automaton *a, int32_t *out);
/* The same as a bitset: mask has (n_tokens + 63) / 64 words; bit id set = allowed. */
void tl_number_automaton_mask(const tl_number_automaton *a, uint64_t *mask);
/* Advances by one token; TL_ERR_INVALID (nothing changed) when not allowed. */
tl_status tl_number_automaton_accept(tl_number_automaton *a, int32_t id, tl_error *err);
bool tl_number_automaton_done(const tl_number_automaton *a);
/* Done by a terminator id (else by the terminator string). */
bool tl_number_automaton_closed_by_id(const tl_number_automaton *a);
/* The number text so far (no leading space, no terminator). */
const char *tl_number_automaton_text(const tl_number_automaton *a, size_t *len);
/* Bytes after the terminator in the closing token (empty unless allow_tail). */
const char *tl_number_automaton_tail(const tl_number_automaton *a, size_t *len);
/* The value once done (TL_ERR_INVALID before). */
tl_status tl_number_automaton_value(const tl_number_automaton *a, tl_number_value *out, tl_error *err);

/* ===== generation ======================================================= */

typedef struct tl_sample_params {
    double temperature; /* <= 0: greedy (argmax over the allowed tokens) */
    uint64_t seed;      /* sampling is deterministic per seed */
    int max_tokens;     /* safety cap; <= 0: a default large enough for the spec */
} tl_sample_params;

typedef struct tl_number_result {
    tl_number_value value;
    char *text;              /* the number's text (malloc'd, NUL-terminated) */
    char *tail;              /* bytes after the terminator (malloc'd, may be "") */
    int32_t *ids;            /* tokens generated, closing token included (malloc'd) */
    size_t n_ids;
    /* Per generated token (NULL on the remote regex fallback, whose sums are NaN):
     * logprob_full: log-softmax over the whole vocabulary (temperature 1);
     * logprob_allowed: the same renormalised over that step's allowed tokens. */
    double *logprob_full;
    double *logprob_allowed;
    double sum_logprob_full, sum_logprob_allowed;
    bool closed_by_id;       /* ended with a terminator id (else the terminator string) */
    tl_usage usage;
} tl_number_result;

/* Generates one number after ids[0..n). idx: the backend vocabulary's index
 * (NULL makes one, costing a pass over the vocab); a remote backend without a
 * vocabulary uses tl_number_regex (see above). */
tl_status tl_number_generate(tl_backend *b, const tl_number_index *idx, const tl_number_spec *spec,
                             const tl_number_close *close, const int32_t *ids, size_t n,
                             const tl_sample_params *sp, tl_number_result *out, tl_error *err);
void tl_number_result_free(tl_number_result *r);

/* ===== free text for open fields ========================================
 * Record rendering (json_escapes = true): the value sits inside a "..."
 * literal and is written as a JSON string body: `"` -> `\"`, `\` -> `\\`,
 * control characters as \n \t \r \b \f \u00XX. While generating, an
 * unescaped `"` (the terminator) ends the value and escapes are undone, so
 * the value may contain quotes. An unknown escape `\q` keeps both bytes.
 * Chat rendering (json_escapes = false): raw text until a terminator id or
 * the terminator string. Control tokens other than terminator ids are never
 * allowed; end-of-generation tokens end the value. The value is valid UTF-8
 * (invalid bytes become U+FFFD) of at most max_chars code points: generation
 * stops there and `truncated` says so. */
typedef struct tl_freetext_params {
    const char *terminator;        /* e.g. "\""; NULL: none */
    const int32_t *terminator_ids; /* e.g. end of turn; may be NULL */
    size_t n_terminator_ids;
    bool json_escapes;
    size_t max_chars;              /* maxLength in code points; 0: 4096 */
    tl_sample_params sample;       /* max_tokens <= 0: 4 * max_chars + 16 */
} tl_freetext_params;

typedef struct tl_freetext_result {
    char *value;        /* unescaped value, valid UTF-8 (malloc'd, NUL-terminated) */
    size_t value_len;   /* bytes */
    size_t n_chars;     /* code points, <= max_chars */
    bool closed;        /* ended by the terminator (string or id), not a limit */
    bool truncated;     /* stopped at max_chars or max_tokens */
    int32_t *ids;       /* generated tokens (malloc'd) */
    size_t n_ids;
    double *logprob_full; /* per token, log-softmax over the vocabulary (NULL remote) */
    tl_usage usage;
} tl_freetext_result;

tl_status tl_freetext_generate(tl_backend *b, const int32_t *ids, size_t n, const tl_freetext_params *p,
                               tl_freetext_result *out, tl_error *err);
void tl_freetext_result_free(tl_freetext_result *r);
/* k generations at once (params p[i] after ids[i][0..n[i])): on a local
 * engine each step evaluates every unfinished sequence in one batched pass,
 * and each out[i] is what tl_freetext_generate gives it alone, bit for bit
 * (the engine's logits do not depend on the batch); remote backends run them
 * one after another. The evaluation's token counts go to usage (optional);
 * out[i].usage has its output tokens. */
tl_status tl_freetext_generate_batch(tl_backend *b, size_t k, const int32_t *const *ids, const size_t *n,
                                     const tl_freetext_params *p, tl_freetext_result *out, tl_usage *usage,
                                     tl_error *err);
/* Appends s as a record-rendering string body (the escapes above, no quotes). */
bool tl_freetext_escape(tl_strbuf *out, const char *s, size_t len);
/* The reverse, on raw model text: appends the value's bytes (escapes undone
 * when json_escapes) to *value up to the first unescaped terminator; returns
 * the bytes consumed, the terminator included when *closed. Bytes that may
 * still become a terminator or an escape at the end are not consumed. */
size_t tl_freetext_unescape(const char *raw, size_t n, const char *terminator, bool json_escapes, tl_strbuf *value,
                            bool *closed);

/* ===== patterned strings (pattern.c) ====================================
 * A JSON Schema `pattern` (ECMA/PCRE subset: literals, ., classes, \d \w \s
 * and their negations, groups, |, * + ? {n,m}, ^ and $ at the ends of
 * top-level alternatives; an unanchored end continues with any text, an
 * unanchored start is generated as if anchored: the value begins with the
 * match, so it matches under search semantics) compiled to a DFA
 * over code points. TL_ERR_UNSUPPORTED with the byte offset for what it does
 * not read (backreferences, lookaround, \b, flags). Generated values are
 * JSON string bodies written literally: never '"', '\\', control characters
 * or surrogates. */
typedef struct tl_pattern tl_pattern;
tl_status tl_pattern_compile(const char *src, size_t len, tl_pattern **out, tl_error *err);
void tl_pattern_free(tl_pattern *p);
/* Whether s is a value typellm may generate: it begins with a match (and
 * ends with one where the pattern says `$`), within the literal-safe
 * characters. Every such value matches the pattern under search semantics. */
bool tl_pattern_matches(const tl_pattern *p, const char *s, size_t len);
/* Some matching value has min_len..max_len code points. */
bool tl_pattern_viable_length(tl_pattern *p, size_t min_len, size_t max_len);
int32_t tl_pattern_start(const tl_pattern *p);
int32_t tl_pattern_step(const tl_pattern *p, int32_t state, uint32_t cp); /* -1: dead */
bool tl_pattern_accepting(const tl_pattern *p, int32_t state);

/* The token-level automaton of one string value: the body of a JSON string
 * literal whose opening quote is already written, closed by a token ending
 * in '"' (the quote must be the token's last byte). A token is allowed only
 * if the text stays a prefix of a value of min_len..max_len code points that
 * matches the pattern (NULL: any text). Remote backends that only score
 * candidate tokens use tl_string_automaton_allowed as the mask. */
typedef struct tl_string_automaton tl_string_automaton;
tl_status tl_string_automaton_new(const tl_number_index *idx, const char *pattern, size_t min_len, size_t max_len,
                                  tl_string_automaton **out, tl_error *err);
void tl_string_automaton_free(tl_string_automaton *a);
void tl_string_automaton_reset(tl_string_automaton *a);
size_t tl_string_automaton_allowed(const tl_string_automaton *a, int32_t *out);
tl_status tl_string_automaton_accept(tl_string_automaton *a, int32_t id, tl_error *err);
bool tl_string_automaton_done(const tl_string_automaton *a);
const char *tl_string_automaton_text(const tl_string_automaton *a, size_t *len); /* the value so far, no quote */
size_t tl_string_automaton_chars(const tl_string_automaton *a);

typedef struct tl_string_result {
    char *value;          /* the value (valid UTF-8, no quotes) */
    size_t value_len, n_chars;
    int32_t *ids;         /* generated tokens, the closing one included */
    size_t n_ids;
    double sum_logprob_full, sum_logprob_allowed;
    tl_usage usage;
} tl_string_result;

/* Generates one string value after ids[0..n) (which end with the opening quote). */
tl_status tl_string_generate(tl_backend *b, const tl_number_index *idx, const char *pattern, size_t min_len,
                             size_t max_len, const int32_t *ids, size_t n, const tl_sample_params *sp,
                             tl_string_result *out, tl_error *err);
void tl_string_result_free(tl_string_result *r);

/* ===== regexes for remote engines ======================================= */

/* SGLang-compatible (Python re / outlines syntax) regexes, optionally led by
 * " ?" (allow_leading_space) and ended by TERM, the escaped terminator.
 * Numbers: exactly the range, e.g. integer [0, 100] -> ([0-9]|[1-9][0-9]|100)TERM;
 * number [0, 1] with 1 decimal -> (([0-1])|((0\.[0-9]|1\.0)))TERM. */
tl_status tl_number_regex(const tl_number_spec *spec, const tl_number_close *close, tl_strbuf *out,
                          tl_error *err);
/* (v1|v2|...)TERM with each value escaped literally; n >= 1. */
tl_status tl_enum_regex(const char *const *values, size_t n_values, const char *terminator, tl_strbuf *out,
                        tl_error *err);
/* Free text of at most max_chars characters then TERM; with json_escapes the
 * characters are JSON string-body characters or escapes. */
tl_status tl_freetext_regex(size_t max_chars, bool json_escapes, const char *terminator, tl_strbuf *out,
                            tl_error *err);

typedef enum tl_regex_kind { TL_REGEX_NUMBER = 1, TL_REGEX_ENUM = 2, TL_REGEX_FREETEXT = 3 } tl_regex_kind;

typedef struct tl_regex_info {
    tl_regex_kind kind;
    char *terminator;        /* unescaped (malloc'd, may be "") */
    size_t terminator_len;
    /* NUMBER: sign and digit limits as the regex says (range: what those allow) */
    tl_number_spec number;
    bool leading_space;
    /* ENUM */
    char **values;           /* unescaped, malloc'd */
    size_t *value_lens;
    size_t n_values;
    /* FREETEXT */
    size_t max_chars;
    bool json_escapes;
} tl_regex_info;

/* Recognises a regex built by the functions above (byte-exact shapes; an
 * integer range by regenerating it from the bounds it spells); an enum of one
 * integer, e.g. ("5"), reads as that integer range. TL_ERR_UNSUPPORTED for any
 * other regex. */
tl_status tl_regex_parse(const char *regex, size_t len, tl_regex_info *out, tl_error *err);
void tl_regex_info_free(tl_regex_info *info);

#endif
