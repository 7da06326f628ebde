/* pretok.c: byte-level BPE pre-tokenizers, one regex set per tokenizer.ggml.pre.
 *
 * Exactness means splitting the way the reference (llama.cpp) splits, so this
 * follows its structure: each regex of a set refines the pieces the previous one
 * produced (matches and the gaps between them both become pieces). Three
 * engines do the matching:
 *   - hand-written splitters for the GPT-2 and Llama-3 patterns (the hot ones),
 *     reproducing the reference's own hand-written versions, quirks included;
 *   - PCRE2 on a "collapsed" text for patterns with \p{..}: every codepoint
 *     >= 128 is replaced by one byte naming its category (0xD1 number, 0xD2
 *     letter, 0xD3 punctuation, 0xD4 mark, 0xD5 symbol, 0x0B whitespace, 0xD0
 *     other) and \p{X} by a class of that byte plus its ASCII members, so one
 *     byte = one codepoint and offsets are codepoint counts;
 *   - PCRE2 in UTF mode for patterns written with explicit non-ASCII ranges
 *     (non-ASCII whitespace replaced by \v, as the reference does).
 * Facts (the regexes) come from llama.cpp's llama-vocab.cpp; the code is ours. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "tok/tok_internal.h"
#include "util/error.h"

typedef enum rx_kind {
    RX_END = 0,   /* end of a set */
    RX_GPT2,      /* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S) */
    RX_LLAMA3,    /* (?i:'s|..)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ */
    RX_COLLAPSED, /* PCRE2 on the collapsed text, pattern rewritten */
    RX_UTF        /* PCRE2 UTF mode on the text */
} rx_kind;

typedef struct rx_spec {
    rx_kind kind;
    const char *pattern; /* for RX_COLLAPSED / RX_UTF */
} rx_spec;

#define MAX_RX 6
typedef struct pre_spec {
    const char *names; /* NUL-separated aliases, ending in an empty name */
    rx_spec rx[MAX_RX];
} pre_spec;

/* The patterns, as the reference writes them. */
#define P_QWEN2 "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define P_TEKKEN "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define P_GPT4O "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define P_SEED_CODER "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define P_DEEPSEEK_LLM_LETTERS                                                                               \
    "\\s?[A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}\\x{1C4}-\\x{293}"      \
    "\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}\\x{37F}\\x{386}\\x{388}-\\x{38A}"    \
    "\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}"           \
    "\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}"         \
    "\\x{1D00}-\\x{1D2B}\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}"         \
    "\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}\\x{1F5F}-\\x{1F7D}" \
    "\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}" \
    "\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}"          \
    "\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}\\x{212A}-\\x{212D}"           \
    "\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-\\x{2149}\\x{214E}\\x{2183}\\x{2184}"           \
    "\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}\\x{2CF2}\\x{2CF3}\\x{A640}-\\x{A66D}"          \
    "\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}"         \
    "\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}"       \
    "\\x{104B0}-\\x{104D3}\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}"                    \
    "\\x{118A0}-\\x{118DF}\\x{1E900}-\\x{1E943}]+"
#define P_PORO " ?[^(\\s|.,!?\\x{2026}\\x{3002}\\x{FF0C}\\x{3001}\\x{964}\\x{6D4}\\x{60C})]+"

#define GPT2 {RX_GPT2, NULL}
#define LLAMA3 {RX_LLAMA3, NULL}
#define COLL(p) {RX_COLLAPSED, p}
#define UTF(p) {RX_UTF, p}

static const pre_spec pre_specs[] = {
    {"default\0\0", {COLL("[\\p{P}\\$\\+<=>\\^~\\|]+"), GPT2, COLL("\\p{N}+"), COLL("[0-9][0-9][0-9]")}},
    {"llama3\0llama-v3\0llama-bpe\0falcon3\0dbrx\0smaug-bpe\0chatglm-bpe\0\0", {LLAMA3}},
    {"gpt-2\0phi-2\0jina-es\0jina-de\0gigachat\0jina-v1-en\0jina-v2-es\0jina-v2-de\0jina-v2-code\0"
     "roberta-bpe\0mpt\0olmo\0jais\0exaone4\0\0",
     {GPT2}},
    {"starcoder\0refact\0command-r\0smollm\0codeshell\0exaone\0minerva-7b\0\0", {COLL("\\p{N}"), GPT2}},
    {"qwen2\0stablelm2\0megrez\0grok-2\0\0", {COLL(P_QWEN2)}},
    {"gpt-4o\0llama4\0\0", {COLL(P_GPT4O)}},
    {"seed-coder\0\0", {COLL(P_SEED_CODER)}},
    {"deepseek-coder\0\0",
     {UTF("[\r\n]"), COLL("\\s?\\p{L}+"), COLL("\\s?\\p{P}+"),
      UTF("[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+"), COLL("\\p{N}")}},
    {"deepseek-llm\0\0",
     {UTF("[\r\n]"), UTF(P_DEEPSEEK_LLM_LETTERS),
      UTF("\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+"),
      UTF("\\s+$"), UTF("[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+"), COLL("\\p{N}+")}},
    {"deepseek-v3\0\0",
     {COLL("\\p{N}{1,3}"), UTF("[\\x{4E00}-\\x{9FA5}\\x{3040}-\\x{309F}\\x{30A0}-\\x{30FF}]+"),
      COLL("[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+"
           "| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+")}},
    {"falcon\0\0", {COLL("[\\p{P}\\$\\+<=>\\^~\\|`]+"), GPT2, COLL("[0-9][0-9][0-9]")}},
    {"poro-chat\0bloom\0gpt3-finnish\0\0", {UTF(P_PORO)}},
    {"viking\0\0", {UTF(P_PORO), COLL("\\p{N}")}},
    {"tekken\0\0", {COLL(P_TEKKEN)}},
    {"chameleon\0\0",
     {UTF("<sentinel:[0-9]+>"), UTF("(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z"), UTF("([\\t\\n]|    |  )"),
      COLL("\\p{N}"), COLL("[\\p{P}!-/:-@\\[-`{-~]"), GPT2}},
};

typedef struct rx_compiled {
    rx_kind kind;
    pcre2_code *code;
} rx_compiled;

struct tl_pretok {
    size_t n_rx;
    rx_compiled rx[MAX_RX];
    bool need_collapsed, need_utf;
};

static const pre_spec *find_spec(const char *name) {
    for (size_t i = 0; i < sizeof pre_specs / sizeof pre_specs[0]; i++)
        for (const char *alias = pre_specs[i].names; *alias; alias += strlen(alias) + 1)
            if (!strcmp(alias, name))
                return &pre_specs[i];
    return NULL;
}

bool tl_pretok_known(const char *pre_name) { return find_spec(pre_name) != NULL; }

const char *tl_pretok_name_at(size_t i) {
    for (size_t k = 0; k < sizeof pre_specs / sizeof pre_specs[0]; k++)
        for (const char *alias = pre_specs[k].names; *alias; alias += strlen(alias) + 1)
            if (i-- == 0)
                return alias;
    return NULL;
}

/* The ASCII members of each category, as the reference lists them. */
static const char *category_ascii(char cat) {
    switch (cat) {
    case 'N': return "0-9";
    case 'L': return "A-Za-z";
    case 'P': return "!-#%-*,-/:-;?-@\\[-\\]_\\{\\}";
    case 'S': return "\\$\\+<->^`\\|";
    default: return ""; /* M has no ASCII members */
    }
}

static unsigned char category_byte(char cat) {
    switch (cat) {
    case 'N': return 0xD1;
    case 'L': return 0xD2;
    case 'P': return 0xD3;
    case 'M': return 0xD4;
    default: return 0xD5; /* S */
    }
}

/* Rewrites \p{N}, \p{L}, \p{Lu}.., \p{P}, \p{M}, \p{S} into byte classes over the
 * collapsed text (wrapped in [] unless already inside a class). */
static char *collapse_pattern(const char *pat) {
    size_t n = strlen(pat);
    char *out = malloc(n * 24 + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    bool inside = false;
    for (size_t i = 0; i < n; i++) {
        if (pat[i] == '[' && (i == 0 || pat[i - 1] != '\\')) {
            out[o++] = '[';
            inside = true;
            continue;
        }
        if (inside && pat[i] == ']' && pat[i - 1] != '\\') {
            out[o++] = ']';
            inside = false;
            continue;
        }
        if (pat[i] == '\\' && i + 3 < n && pat[i + 1] == 'p' && pat[i + 2] == '{') {
            const char *close = strchr(pat + i + 3, '}');
            size_t name_len = close ? (size_t)(close - (pat + i + 3)) : 0;
            char cat = 0;
            if (name_len == 1 && strchr("NLPMS", pat[i + 3]))
                cat = pat[i + 3];
            else if (name_len == 2 && pat[i + 3] == 'L' && strchr("ultmo", pat[i + 4]))
                cat = 'L';
            if (cat) {
                if (!inside)
                    out[o++] = '[';
                out[o++] = (char)category_byte(cat);
                const char *ascii = category_ascii(cat);
                memcpy(out + o, ascii, strlen(ascii));
                o += strlen(ascii);
                if (!inside)
                    out[o++] = ']';
                i = (size_t)(close - pat);
                continue;
            }
        }
        out[o++] = pat[i];
    }
    out[o] = '\0';
    return out;
}

void tl_pretok_free(tl_pretok *p) {
    if (!p)
        return;
    for (size_t i = 0; i < p->n_rx; i++)
        pcre2_code_free(p->rx[i].code);
    free(p);
}

tl_status tl_pretok_create(const char *pre_name, tl_pretok **out, tl_error *err) {
    *out = NULL;
    const pre_spec *spec = find_spec(pre_name);
    if (!spec)
        return tl_error_set(err, TL_ERR_UNSUPPORTED, "unknown pre-tokenizer '%s' (tokenizer.ggml.pre)", pre_name);
    tl_pretok *p = calloc(1, sizeof *p);
    if (!p)
        return tl_error_set(err, TL_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < MAX_RX && spec->rx[i].kind != RX_END; i++) {
        const rx_spec *rs = &spec->rx[i];
        rx_compiled *rc = &p->rx[p->n_rx];
        rc->kind = rs->kind;
        if (rs->kind == RX_COLLAPSED || rs->kind == RX_UTF) {
            char *pat = rs->kind == RX_COLLAPSED ? collapse_pattern(rs->pattern) : strdup(rs->pattern);
            if (!pat) {
                tl_pretok_free(p);
                return tl_error_set(err, TL_ERR_NOMEM, "out of memory");
            }
            uint32_t opts = PCRE2_DOLLAR_ENDONLY | (rs->kind == RX_UTF ? PCRE2_UTF : 0);
            int ecode;
            PCRE2_SIZE eoff;
            rc->code = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED, opts, &ecode, &eoff, NULL);
            free(pat);
            if (!rc->code) {
                PCRE2_UCHAR msg[256];
                pcre2_get_error_message(ecode, msg, sizeof msg);
                tl_pretok_free(p);
                return tl_error_set(err, TL_ERR_INTERNAL, "pre-tokenizer '%s': regex %zu: offset %zu: %s", pre_name,
                                    i, (size_t)eoff, (const char *)msg);
            }
            pcre2_jit_compile(rc->code, PCRE2_JIT_COMPLETE); /* optional: falls back to the interpreter */
            if (rs->kind == RX_COLLAPSED)
                p->need_collapsed = true;
            else
                p->need_utf = true;
        }
        p->n_rx++;
    }
    *out = p;
    return TL_OK;
}

/* ---- splitting ------------------------------------------------------------ */

typedef struct split_text {
    const uint32_t *cpts;
    size_t n;
    uint8_t *flags;      /* [n] tl_cpt_flags per codepoint */
    char *collapsed;     /* [n] one byte per codepoint (RX_COLLAPSED) */
    char *utf;           /* UTF-8 of the text for RX_UTF (non-ASCII whitespace -> \v) */
    size_t *utf_off;     /* [n + 1] byte offset of each codepoint in utf */
} split_text;

typedef struct piece_list {
    size_t *len; /* codepoint counts; never more than n pieces */
    size_t n;
} piece_list;

static inline void add_piece(piece_list *out, size_t len) {
    if (len > 0)
        out->len[out->n++] = len;
}

/* Flags at pos, or 0 outside [ini, end) (the reference's "out of range"). */
#define FLAGS_AT(pos) ((pos) >= ini && (pos) < end ? st->flags[pos] : 0u)
#define CPT_AT(pos) ((pos) >= ini && (pos) < end ? st->cpts[pos] : 0xFFFFFFFFu)
#define WLN (TL_CPT_WHITESPACE | TL_CPT_LETTER | TL_CPT_NUMBER)

static void split_gpt2(const split_text *st, size_t ini, size_t end, piece_list *out) {
    size_t prev = ini;
#define EMIT(e) (add_piece(out, (e) - prev), prev = (e))
    for (size_t pos = ini; pos < end;) {
        uint32_t c = st->cpts[pos];
        unsigned f = st->flags[pos];
        if (c == '\'' && pos + 1 < end) {
            uint32_t c1 = st->cpts[pos + 1];
            if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') {
                pos += 2;
                EMIT(pos);
                continue;
            }
            if (pos + 2 < end) {
                uint32_t c2 = st->cpts[pos + 2];
                if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) {
                    pos += 3;
                    EMIT(pos);
                    continue;
                }
            }
        }
        unsigned f2 = c == ' ' ? FLAGS_AT(pos + 1) : f;
        if (f2 & TL_CPT_LETTER) { /* ' ?\p{L}+' */
            pos += c == ' ';
            while (FLAGS_AT(pos) & TL_CPT_LETTER)
                pos++;
            EMIT(pos);
            continue;
        }
        if (f2 & TL_CPT_NUMBER) { /* ' ?\p{N}+' */
            pos += c == ' ';
            while (FLAGS_AT(pos) & TL_CPT_NUMBER)
                pos++;
            EMIT(pos);
            continue;
        }
        if (!(f2 & WLN) && f2) { /* ' ?[^\s\p{L}\p{N}]+' */
            pos += c == ' ';
            for (unsigned g = FLAGS_AT(pos); !(g & WLN) && g; g = FLAGS_AT(pos))
                pos++;
            EMIT(pos);
            continue;
        }
        size_t n_ws = 0;
        while (FLAGS_AT(pos + n_ws) & TL_CPT_WHITESPACE)
            n_ws++;
        if (n_ws > 1 && pos + n_ws < end) { /* '\s+(?!\S)': leave the last space to the next word */
            pos += n_ws - 1;
            EMIT(pos);
            continue;
        }
        if (n_ws > 0) {
            pos += n_ws;
            EMIT(pos);
            continue;
        }
        pos++;
        EMIT(pos);
    }
#undef EMIT
}

static inline uint32_t ascii_lower(uint32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

static void split_llama3(const split_text *st, size_t ini, size_t end, piece_list *out) {
    size_t prev = ini;
#define EMIT(e) (add_piece(out, (e) - prev), prev = (e))
    for (size_t pos = ini; pos < end;) {
        uint32_t c = st->cpts[pos];
        unsigned f = st->flags[pos];
        if (c == '\'' && pos + 1 < end) { /* (?i:'s|'t|'re|'ve|'m|'ll|'d) */
            uint32_t c1 = ascii_lower(st->cpts[pos + 1]);
            if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') {
                pos += 2;
                EMIT(pos);
                continue;
            }
            if (pos + 2 < end) {
                uint32_t c2 = ascii_lower(st->cpts[pos + 2]);
                if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) {
                    pos += 3;
                    EMIT(pos);
                    continue;
                }
            }
        }
        /* [^\r\n\p{L}\p{N}]?\p{L}+ */
        if (!(c == '\r' || c == '\n' || (f & TL_CPT_NUMBER))) {
            if ((f & TL_CPT_LETTER) || (FLAGS_AT(pos + 1) & TL_CPT_LETTER)) {
                pos++;
                while (FLAGS_AT(pos) & TL_CPT_LETTER)
                    pos++;
                EMIT(pos);
                continue;
            }
        }
        if (f & TL_CPT_NUMBER) { /* \p{N}{1,3} */
            size_t run_start = pos;
            while (FLAGS_AT(pos) & TL_CPT_NUMBER) {
                if (++pos - run_start >= 3) {
                    EMIT(pos);
                    run_start = pos;
                }
            }
            EMIT(pos);
            continue;
        }
        /* ' ?[^\s\p{L}\p{N}]+[\r\n]*' (the reference tests f, not f2, for "in range") */
        unsigned f2 = c == ' ' ? FLAGS_AT(pos + 1) : f;
        if (!(f2 & WLN) && f) {
            pos += c == ' ';
            for (unsigned g = FLAGS_AT(pos); !(g & WLN) && g; g = FLAGS_AT(pos))
                pos++;
            for (uint32_t c2 = CPT_AT(pos); c2 == '\r' || c2 == '\n'; c2 = CPT_AT(pos))
                pos++;
            EMIT(pos);
            continue;
        }
        size_t n_ws = 0, last_newline_end = 0;
        while (FLAGS_AT(pos + n_ws) & TL_CPT_WHITESPACE) {
            uint32_t c2 = st->cpts[pos + n_ws];
            if (c2 == '\r' || c2 == '\n')
                last_newline_end = pos + n_ws + 1;
            n_ws++;
        }
        if (last_newline_end > 0) { /* \s*[\r\n]+ */
            pos = last_newline_end;
            EMIT(pos);
            continue;
        }
        if (n_ws > 1 && pos + n_ws < end) { /* \s+(?!\S) */
            pos += n_ws - 1;
            EMIT(pos);
            continue;
        }
        if (n_ws > 0) {
            pos += n_ws;
            EMIT(pos);
            continue;
        }
        pos++;
        EMIT(pos);
    }
#undef EMIT
}

/* Codepoint index of byte offset b (a sequence boundary) within [lo, hi]. */
static size_t cpt_of_byte(const split_text *st, size_t lo, size_t hi, size_t b) {
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (st->utf_off[mid] < b)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Runs a PCRE2 pattern over the segment [ini, end) like std::regex_iterator:
 * matches and the gaps before them become pieces, then the tail. */
static tl_status split_pcre(const split_text *st, const rx_compiled *rc, pcre2_match_data *md, size_t ini,
                            size_t end, piece_list *out, tl_error *err) {
    bool utf = rc->kind == RX_UTF;
    const char *subject = utf ? st->utf + st->utf_off[ini] : st->collapsed + ini;
    size_t subject_len = utf ? st->utf_off[end] - st->utf_off[ini] : end - ini;
    size_t at = 0, prev_cpt = ini;
    while (at <= subject_len) {
        uint32_t opts = utf ? PCRE2_NO_UTF_CHECK : 0;
        int rc_m = pcre2_match(rc->code, (PCRE2_SPTR)subject, subject_len, at, opts, md, NULL);
        if (rc_m == PCRE2_ERROR_JIT_STACKLIMIT) /* deep backtracking: the interpreter keeps its stack on the heap */
            rc_m = pcre2_match(rc->code, (PCRE2_SPTR)subject, subject_len, at, opts | PCRE2_NO_JIT, md, NULL);
        if (rc_m == PCRE2_ERROR_NOMATCH)
            break;
        if (rc_m < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(rc_m, msg, sizeof msg);
            return tl_error_set(err, TL_ERR_LIMIT, "pre-tokenizer regex failed: %s", (const char *)msg);
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t m_start = ov[0], m_end = ov[1];
        size_t c_start = utf ? cpt_of_byte(st, ini, end, st->utf_off[ini] + m_start) : ini + m_start;
        size_t c_end = utf ? cpt_of_byte(st, ini, end, st->utf_off[ini] + m_end) : ini + m_end;
        if (c_end == c_start) { /* empty match: step over one codepoint */
            if (c_start >= end)
                break;
            at = utf ? st->utf_off[c_start + 1] - st->utf_off[ini] : c_start + 1 - ini;
            continue;
        }
        add_piece(out, c_start - prev_cpt);
        add_piece(out, c_end - c_start);
        prev_cpt = c_end;
        at = m_end;
    }
    add_piece(out, end - prev_cpt);
    return TL_OK;
}

static void collapse_text(split_text *st) {
    for (size_t i = 0; i < st->n; i++) {
        uint32_t c = st->cpts[i];
        unsigned f = st->flags[i];
        char b;
        if (c < 128)
            b = (char)c;
        else if (f & TL_CPT_WHITESPACE)
            b = 0x0B;
        else if (f & TL_CPT_NUMBER)
            b = (char)0xD1;
        else if (f & TL_CPT_LETTER)
            b = (char)0xD2;
        else if (f & TL_CPT_PUNCT)
            b = (char)0xD3;
        else if (f & TL_CPT_MARK)
            b = (char)0xD4;
        else if (f & TL_CPT_SYMBOL)
            b = (char)0xD5;
        else
            b = (char)0xD0;
        st->collapsed[i] = b;
    }
}

static void utf_text(split_text *st) {
    size_t o = 0;
    for (size_t i = 0; i < st->n; i++) {
        uint32_t c = st->cpts[i];
        st->utf_off[i] = o;
        if (c > 0x7F && (st->flags[i] & TL_CPT_WHITESPACE))
            c = 0x0B;
        else if (c >= 0xD800 && c <= 0xDFFF)
            c = 0xFFFD; /* PCRE2's UTF mode cannot hold surrogates; no pattern class tells them apart */
        o += tl_utf8_encode(c, st->utf + o);
    }
    st->utf_off[st->n] = o;
}

tl_status tl_pretok_split(const tl_pretok *p, const uint32_t *cpts, size_t n, size_t **word_lens, size_t *n_words,
                          tl_error *err) {
    *word_lens = NULL;
    *n_words = 0;
    tl_status s = TL_OK;
    split_text st = {cpts, n, NULL, NULL, NULL, NULL};
    piece_list a = {NULL, 0}, b = {NULL, 0};
    pcre2_match_data *md = NULL;
    if (n == 0)
        return TL_OK;
    st.flags = malloc(n);
    a.len = malloc(n * sizeof *a.len);
    b.len = malloc(n * sizeof *b.len);
    if (p->need_collapsed)
        st.collapsed = malloc(n);
    if (p->need_utf) {
        st.utf = malloc(n * 4 + 1);
        st.utf_off = malloc((n + 1) * sizeof *st.utf_off);
    }
    md = pcre2_match_data_create(4, NULL);
    if (!st.flags || !a.len || !b.len || (p->need_collapsed && !st.collapsed) ||
        (p->need_utf && (!st.utf || !st.utf_off)) || !md) {
        s = tl_error_set(err, TL_ERR_NOMEM, "out of memory splitting %zu codepoints", n);
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        st.flags[i] = (uint8_t)tl_cpt_flags(cpts[i]);
    if (p->need_collapsed)
        collapse_text(&st);
    if (p->need_utf)
        utf_text(&st);

    a.len[0] = n;
    a.n = 1;
    for (size_t r = 0; r < p->n_rx; r++) {
        b.n = 0;
        size_t start = 0;
        for (size_t k = 0; k < a.n; k++) {
            size_t ini = start, end = start + a.len[k];
            start = end;
            switch (p->rx[r].kind) {
            case RX_GPT2: split_gpt2(&st, ini, end, &b); break;
            case RX_LLAMA3: split_llama3(&st, ini, end, &b); break;
            default:
                s = split_pcre(&st, &p->rx[r], md, ini, end, &b, err);
                if (s != TL_OK)
                    goto done;
                break;
            }
        }
        piece_list t = a;
        a = b;
        b = t;
    }
    *word_lens = a.len;
    *n_words = a.n;
    a.len = NULL;
done:
    pcre2_match_data_free(md);
    free(st.flags);
    free(st.collapsed);
    free(st.utf);
    free(st.utf_off);
    free(a.len);
    free(b.len);
    return s;
}
