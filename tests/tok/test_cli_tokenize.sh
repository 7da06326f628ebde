# test_cli_tokenize.sh: `typellm tokenize` / `typellm detokenize` end to end.
# Every vocab test vector file is reproduced byte for byte through --test-file,
# the chat fixture tokenizes to the reference ids with --special --bos, ids go
# back to text, and bad invocations exit 2 (usage) or 1 (runtime) with a message.
set -u
F=${TL_FIXTURES:?}
B=${TL_BIN:?}
fail=0
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT

for g in "$F"/vocab/*.gguf; do
  if ! "$B" tokenize --model "$g" --test-file "$g.inp" >"$t/out" 2>"$t/err"; then
    echo "FAIL: tokenize --test-file $(basename "$g"): $(cat "$t/err")"; fail=1
  elif ! cmp -s "$t/out" "$g.out"; then
    echo "FAIL: $(basename "$g"): --test-file output differs from .out"; diff "$t/out" "$g.out" | head -5; fail=1
  fi
done

# chat prompt with parsed specials == reference ids
want=$(python3 -c 'import json,sys; print(" ".join(map(str, json.load(open(sys.argv[1]))["tokens"])))' \
       "$F/ref/qwen3-d64-f16.chat-chatml.json")
got=$("$B" tokenize --model "$F/models/qwen3-d64-f16.gguf" --file "$F/ref/chat-chatml.txt" --special --bos)
[ "$got" = "$want" ] || { echo "FAIL: chat-chatml ids: $got"; fail=1; }
want=$(python3 -c 'import json,sys; print(" ".join(map(str, json.load(open(sys.argv[1]))["tokens"])))' \
       "$F/ref/llama3-d64-bf16.chat-llama3.json")
got=$("$B" tokenize --model "$F/models/llama3-d64-bf16.gguf" --file "$F/ref/chat-llama3.txt" --special --bos)
[ "$got" = "$want" ] || { echo "FAIL: chat-llama3 ids: $got"; fail=1; }

# without --special the control-token text is plain text (more ids, no 151644)
got=$("$B" tokenize --model "$F/models/qwen3-d64-f16.gguf" --text "<|im_start|>user")
case " $got " in *" 151644 "*) echo "FAIL: <|im_start|> parsed without --special: $got"; fail=1;; esac

# ids -> text -> same ids (SPM, with BOS and the space prefix undone)
m="$F/models/llama-spm-d64-f32.gguf"
ids=$("$B" tokenize --model "$m" --text "Hello  world, ünïcödé 🙂" --bos)
text=$("$B" detokenize --model "$m" --ids "$ids")
[ "$text" = "Hello  world, ünïcödé 🙂" ] || { echo "FAIL: detokenize gave '$text'"; fail=1; }
text=$("$B" detokenize --model "$m" --ids "$ids" --special)
[ "$text" = "<s>Hello  world, ünïcödé 🙂" ] || { echo "FAIL: detokenize --special gave '$text'"; fail=1; }

# --pieces: one line per token, id TAB json
got=$("$B" tokenize --model "$F/models/qwen3-d64-f16.gguf" --text "Hello world" --pieces)
[ "$got" = $'9707\t"Hello"\n1879\t" world"' ] || { echo "FAIL: --pieces gave '$got'"; fail=1; }

# error handling
expect_rc() { # want_rc description command...
  local want=$1 what=$2; shift 2
  "$@" >"$t/o" 2>"$t/e"; local rc=$?
  if [ $rc -ne "$want" ] || [ ! -s "$t/e" ]; then echo "FAIL: $what: rc=$rc (want $want), stderr: $(cat "$t/e")"; fail=1; fi
}
expect_rc 2 "no arguments" "$B" tokenize
expect_rc 2 "text and file" "$B" tokenize --model "$m" --text a --file b
expect_rc 2 "unknown option" "$B" tokenize --model "$m" --text a --frobnicate
expect_rc 2 "missing value" "$B" tokenize --model "$m" --text
expect_rc 1 "missing model" "$B" tokenize --model "$t/nope.gguf" --text a
expect_rc 1 "missing input file" "$B" tokenize --model "$m" --file "$t/nope.txt"
printf 'GGUF\3\0\0\0' >"$t/trunc.gguf"
expect_rc 1 "truncated gguf" "$B" tokenize --model "$t/trunc.gguf" --text a
expect_rc 2 "detokenize no ids" "$B" detokenize --model "$m"
expect_rc 2 "detokenize junk ids" "$B" detokenize --model "$m" --ids "1 two 3"
expect_rc 1 "detokenize id out of range" "$B" detokenize --model "$m" --ids "1 99999999"
grep -q "outside the vocabulary" "$t/e" || { echo "FAIL: out-of-range id message: $(cat "$t/e")"; fail=1; }

exit $fail
