#!/usr/bin/env bash
# test_grammar.sh: one command-line grammar for every subcommand (src/cli/opt.h):
# llama.cpp's short flags, --opt=value, range errors that say why, `typellm help
# CMD`, TYPELLM_MODEL for every command that loads a model, --host localhost,
# the API key from TYPELLM_API_KEY or a file, and decide asking for a model
# instead of downloading one.
set -u
M="$TL_FIXTURES/models/stories260k-f32.gguf"
Q="$TL_FIXTURES/models/qwen3-d64-f16.gguf"
T=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=$((fail+1)); }
expect_usage() { # want-substring args...: exit 2 and the reason on stderr
    local want="$1"; shift
    local err rc
    err=$("$TL_BIN" "$@" 2>&1 >/dev/null); rc=$?
    if [ "$rc" != 2 ] || ! grep -qF -- "$want" <<<"$err"; then bad "typellm $* -> rc=$rc, stderr: $err"; fi
}

# Out-of-range values are rejected with the reason (each used to print bare usage).
expect_usage "-n: -5 is out of range" generate -m "$M" -p Once -n -5
expect_usage "--temperature: 'nan' is not a finite number" generate -m "$M" -p Once --temperature nan
expect_usage "--top-p: 2 is out of range" generate -m "$M" -p Once --top-p 2
expect_usage "--last: 0 is out of range" logits -m "$M" --ids "1 2" --last 0
expect_usage "--port: 70000 is out of range" serve -m "$M" --port 70000
expect_usage "--threshold: 1.5 is out of range" decide -m "$M" --schema x.json --threshold 1.5
expect_usage "unknown option '--bogus'" tokenize -m "$M" --bogus
expect_usage "--json takes no value" generate -m "$M" -p Once --json=yes
# llama.cpp's -ctk / -ctv (one dash, several letters), on the tables decide and serve share with others
expect_usage "-ctk: 'q4': not a KV cache type (allowed: f32, f16, q8_0)" decide -m "$M" --schema x.json -ctk q4
expect_usage "-ctv: 'bf16': not a KV cache type" serve -m "$M" -ctv=bf16
expect_usage "-m needs a value" generate -m
expect_usage "unexpected argument 'extra'" generate -m "$M" -p Once extra

# Short flags and --opt=value mean the same as the long forms.
long=$("$TL_BIN" generate --model "$M" --prompt "Once upon" --n-predict 8 --temperature 0 --threads 1 --json 2>/dev/null)
short=$("$TL_BIN" generate -m "$M" -p "Once upon" -n 8 --temperature=0 -t 1 --json 2>/dev/null)
eq=$("$TL_BIN" generate --model="$M" --prompt="Once upon" --n-predict=8 --temp=0 --threads=1 --json 2>/dev/null)
[ -n "$long" ] && [ "$long" = "$short" ] && [ "$long" = "$eq" ] || bad "short / --opt=value forms differ: '$long' '$short' '$eq'"
printf 'Once upon' >"$T/prompt.txt"
file=$("$TL_BIN" generate -m "$M" -f "$T/prompt.txt" -n 8 --temperature 0 -t 1 --json 2>/dev/null)
old=$("$TL_BIN" generate -m "$M" --prompt-file "$T/prompt.txt" -n 8 --temperature 0 -t 1 --json 2>/dev/null)
[ "$file" = "$long" ] && [ "$old" = "$long" ] || bad "-f / --prompt-file differ from --prompt: '$file' '$old'"
b=$("$TL_BIN" bench -m "$M" -p 16 -n 4 -r 1 -t 1 --json 2>/dev/null) || bad "bench short flags"
grep -q '"prefill_tokens":16' <<<"$b" || bad "bench -p: $b"

# -c/--ctx-size: past the trained context with a warning (stories260k: 512).
ids=$(seq 1 600 | awk '{printf "%d ", $1 % 500}')
out=$("$TL_BIN" logits -m "$M" -c 1024 --ids "$ids" --last 1 -t 1 2>"$T/err") || bad "logits -c 1024 failed: $(cat "$T/err")"
grep -q "warning: --ctx-size 1024 is beyond the 512 tokens" "$T/err" || bad "no -c warning: $(cat "$T/err")"
grep -q '"599"' <<<"$out" || bad "logits -c 1024 did not score position 599"
"$TL_BIN" logits -m "$M" --ids "$ids" --last 1 -t 1 >/dev/null 2>"$T/err" && bad "600 tokens without -c should fail"
grep -q "600 tokens" "$T/err" || bad "context error: $(cat "$T/err")"

# TYPELLM_MODEL is honoured by every command that loads a model.
export TYPELLM_MODEL="$M"
"$TL_BIN" generate -p Once -n 2 --temperature 0 -t 1 >/dev/null 2>&1 || bad "generate with TYPELLM_MODEL"
"$TL_BIN" logits --ids "1 2" --last 1 -t 1 >/dev/null 2>&1 || bad "logits with TYPELLM_MODEL"
"$TL_BIN" bench -p 8 -n 2 -t 1 >/dev/null 2>&1 || bad "bench with TYPELLM_MODEL"
"$TL_BIN" tokenize -p Once >/dev/null 2>&1 || bad "tokenize with TYPELLM_MODEL"
"$TL_BIN" detokenize --ids "1 2" >/dev/null 2>&1 || bad "detokenize with TYPELLM_MODEL"
"$TL_BIN" inspect >/dev/null 2>&1 || bad "inspect with TYPELLM_MODEL"
printf '{"type":"object","properties":{"ok":{"type":"boolean"}}}' >"$T/s.json"
"$TL_BIN" decide --schema "$T/s.json" -p "yes" -t 1 >/dev/null 2>&1 || bad "decide with TYPELLM_MODEL"
printf 'def f : Int := ?h;\n' >"$T/f.ae"
AEON_TC_MODEL= "$TL_BIN" synth "$T/f.ae" --attempts 1 --max-tokens 4 --budget 20 -t 1 >/dev/null 2>"$T/err"
grep -q "no model" "$T/err" && bad "synth ignored TYPELLM_MODEL: $(cat "$T/err")"
unset TYPELLM_MODEL

# typellm help CMD is typellm CMD --help.
for c in generate logits bench tokenize detokenize inspect quantize decide serve synth oracle; do
    a=$("$TL_BIN" help "$c"); b=$("$TL_BIN" "$c" --help)
    [ -n "$a" ] && [ "$a" = "$b" ] || bad "help $c differs from $c --help"
    grep -q "^usage: typellm $c" <<<"$a" || bad "help $c: no usage line"
done
expect_usage "unknown command 'nope'" help nope

# decide with no model asks for one instead of downloading a default.
err=$(env -u TYPELLM_MODEL TYPELLM_CACHE="$T/cache" TYPELLM_HF_ENDPOINT=http://127.0.0.1:9 \
      "$TL_BIN" decide --schema "$T/s.json" -p yes 2>&1 >/dev/null); rc=$?
[ "$rc" = 2 ] && grep -q "give a model" <<<"$err" || bad "decide without a model: rc=$rc $err"
[ ! -e "$T/cache" ] || bad "decide without a model touched the download cache"
"$TL_BIN" decide --help | grep -q "nothing is downloaded unless --hf" || bad "decide --help does not say when it downloads"

# serve: --host localhost, the API key from TYPELLM_API_KEY or --api-key-file.
serve() { # args...: starts a server, sets PORT
    "$TL_BIN" serve --port 0 --quiet -t 1 "$@" >"$T/serve.out" 2>"$T/serve.err" &
    pids+=($!)
    for _ in $(seq 1 300); do grep -q "listening on" "$T/serve.out" 2>/dev/null && break; sleep 0.1; done
    PORT=$(sed -n 's/^listening on http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$T/serve.out")
}
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
stop() { kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null; }
serve -m "$M" --host localhost
[ -n "$PORT" ] || bad "serve --host localhost did not start: $(cat "$T/serve.err")"
[ "$(code "http://127.0.0.1:$PORT/health")" = 200 ] || bad "localhost server not on 127.0.0.1"
stop
export TYPELLM_API_KEY=envkey
serve -m "$M"
unset TYPELLM_API_KEY
[ "$(code "http://127.0.0.1:$PORT/model_info")" != 200 ] || bad "TYPELLM_API_KEY not required"
[ "$(code -H 'Authorization: Bearer envkey' "http://127.0.0.1:$PORT/model_info")" = 200 ] || bad "TYPELLM_API_KEY not accepted"
stop
printf 'filekey\n' >"$T/key"
serve -m "$M" --api-key-file "$T/key"
[ "$(code -H "Authorization: Bearer envkey" "http://127.0.0.1:$PORT/model_info")" != 200 ] || bad "wrong key accepted"
[ "$(code -H 'Authorization: Bearer filekey' "http://127.0.0.1:$PORT/model_info")" = 200 ] || bad "--api-key-file not used"
stop
: >"$T/empty"
expect_usage "the API key file is empty" serve -m "$M" --api-key-file "$T/empty"

[ $fail -eq 0 ] && echo "test_grammar: ok"
exit $((fail > 0))
