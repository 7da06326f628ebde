#!/usr/bin/env bash
# test_inspect.sh: `typellm inspect` on every fixture model (text, --keys, --json
# checked by python3's json parser against facts read with ../shared/tools/gguf.py),
# a truncated and a non-GGUF file (exit 1, message with the offset), usage errors (exit 2).
set -u
BIN=${TL_BIN:?TL_BIN must name the typellm binary}
FIX=${TL_FIXTURES:?TL_FIXTURES must name the fixtures folder}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# file  arch  layers  tensors  tokens  template  version  types(json by_type)
facts=(
  "stories260k-f32 llama 5 48 512 none 3 {\"F32\":48}"
  "stories260k-v1-f32 llama 5 48 512 none 1 {\"F32\":48}"
  "llama-spm-d64-f32 llama 2 21 32000 none 3 {\"F32\":21}"
  "llama-spm-d64-q8_0 llama 2 21 32000 none 3 {\"F32\":5,\"Q8_0\":16}"
  "llama-spm-d256-q4_0 llama 2 21 32000 none 3 {\"F32\":5,\"Q4_0\":15,\"Q6_K\":1}"
  "llama-spm-d256-q4_k_m llama 2 21 32000 none 3 {\"F32\":5,\"Q4_K\":13,\"Q6_K\":3}"
  "llama-spm-d256-q5_k_m llama 2 21 32000 none 3 {\"F32\":5,\"Q5_K\":13,\"Q6_K\":3}"
  "llama-spm-d320-q4_k_m llama 2 21 32000 none 3 {\"F32\":5,\"Q5_0\":13,\"Q8_0\":3}"
  "qwen2-d64-q8_0 qwen2 2 26 151669 chatml 3 {\"F32\":11,\"Q8_0\":15}"
  "qwen3-d64-f16 qwen3 2 24 151669 chatml 3 {\"F32\":9,\"F16\":15}"
  "llama3-d64-bf16 llama 2 20 128256 llama3 3 {\"F32\":5,\"BF16\":15}"
)
n_models=$(ls "$FIX"/models/*.gguf | wc -l)
[ "$n_models" -eq "${#facts[@]}" ] || fail "fixture models changed: $n_models files, ${#facts[@]} known"

for row in "${facts[@]}"; do
  read -r name arch layers tensors tokens tpl version types <<<"$row"
  f="$FIX/models/$name.gguf"
  if ! "$BIN" inspect "$f" >"$tmp/out.txt" 2>"$tmp/err.txt"; then
    fail "$name: inspect exit $? $(cat "$tmp/err.txt")"; continue
  fi
  grep -q "^architecture: *$arch\$" "$tmp/out.txt" || fail "$name: architecture"
  grep -q "^layers: *$layers\$" "$tmp/out.txt" || fail "$name: layers"
  grep -q "^tensors: *$tensors (" "$tmp/out.txt" || fail "$name: tensors"
  grep -q "$tokens tokens" "$tmp/out.txt" || fail "$name: tokens"
  grep -q "^chat template: *$tpl\$" "$tmp/out.txt" || fail "$name: template"
  grep -q "^gguf version: *$version " "$tmp/out.txt" || fail "$name: version"
  size=$(stat -c %s "$f")
  grep -q "^size: *$size bytes" "$tmp/out.txt" || fail "$name: size"

  "$BIN" inspect --keys "$f" >"$tmp/keys.txt" || fail "$name: --keys exit"
  grep -q "^tokenizer.ggml.tokens  *array\[string\]  *$tokens x string: \[" "$tmp/keys.txt" || fail "$name: --keys tokens line"
  grep -q "^general.architecture  *string  *\"$arch\"" "$tmp/keys.txt" || fail "$name: --keys arch line"

  "$BIN" inspect --json --keys "$f" >"$tmp/$name.json" || fail "$name: --json exit"
  echo "$row $size" >>"$tmp/facts.txt"
done
"$BIN" inspect --json "$FIX/models/qwen3-d64-f16.gguf" >"$tmp/qwen3-plain.json" || fail "qwen3 --json exit"

# One python3 run checks every JSON output (python starts slowly on a loaded machine).
python3 - "$tmp" <<'EOF' || fail "--json content"
import json, os, sys
tmp = sys.argv[1]
bad = 0
def check(cond, what):
    global bad
    if not cond:
        print("json check failed:", what, file=sys.stderr)
        bad += 1
for row in open(os.path.join(tmp, "facts.txt")):
    name, arch, layers, tensors, tokens, tpl, version, types, size = row.split()
    try:
        j = json.load(open(os.path.join(tmp, name + ".json")))
    except Exception as e:
        check(False, "%s: not JSON: %s" % (name, e))
        continue
    check(j["architecture"] == arch, name + " architecture")
    check(j["hparams"]["block_count"] == int(layers), name + " block_count")
    check(j["tensors"]["count"] == int(tensors), name + " tensor count")
    check(j["tensors"]["by_type"] == json.loads(types), name + " by_type %s" % j["tensors"]["by_type"])
    check(j["tokenizer"]["n_tokens"] == int(tokens), name + " n_tokens")
    check(j["chat_template"] == tpl, name + " chat_template")
    check(j["version"] == int(version), name + " version")
    check(j["file_size"] == int(size), name + " file_size")
    check(j["parameters"] > 0 and j["hparams"]["head_dim_k"] > 0, name + " parameters/head_dim")
    check(len(j["keys"]) == j["n_kv"], name + " keys")
    toks = [k for k in j["keys"] if k["key"] == "tokenizer.ggml.tokens"][0]
    check(toks["type"] == "array" and toks["elem_type"] == "string" and toks["count"] == int(tokens)
          and len(toks["first"]) == 4, name + " tokens entry")
# Known values on two models.
j = json.load(open(os.path.join(tmp, "qwen3-plain.json")))
h = j["hparams"]
check((h["embedding_length"], h["head_count"], h["head_count_kv"], h["head_dim_k"], h["feed_forward_length"])
      == (64, 4, 2, 32, 192), "qwen3 hparams %s" % h)
check(h["rope_freq_base"] == 1000000.0 and h["context_length"] == 4096, "qwen3 rope/context")
check(j["tokenizer"] == {"kind": "BPE", "model": "gpt2", "pre": "qwen2", "n_tokens": 151669}, "qwen3 tokenizer")
check("keys" not in j, "qwen3 without --keys")
j = json.load(open(os.path.join(tmp, "stories260k-f32.json")))
check(j["hparams"]["rope_freq_base"] is None and j["hparams"]["head_dim_k"] == 8, "stories hparams")
check(j["parameters"] == 292800, "stories parameters %s" % j["parameters"])
check(j["tokenizer"]["kind"] == "SPM" and j["tokenizer"]["pre"] is None, "stories tokenizer")
rows = sum(1 for _ in open(os.path.join(tmp, "facts.txt")))
check(rows == 11, "checked %d models" % rows)
sys.exit(1 if bad else 0)
EOF
"$BIN" inspect "$FIX/vocab/ggml-vocab-phi-3.gguf" | grep -q "^chat template: *phi3$" || fail "phi-3 template"
"$BIN" inspect "$FIX/vocab/ggml-vocab-qwen3.gguf" | grep -q "^tensors: *0$" || fail "vocab-only tensors"

# Bad files: exit 1 with the reader's message naming an offset.
head -c 5000 "$FIX/models/stories260k-f32.gguf" >"$tmp/cut.gguf"
"$BIN" inspect "$tmp/cut.gguf" >/dev/null 2>"$tmp/err.txt"; rc=$?
[ $rc -eq 1 ] || fail "truncated file: exit $rc"
grep -q "cut.gguf: offset [0-9]*: " "$tmp/err.txt" || fail "truncated file message: $(cat "$tmp/err.txt")"
echo "not a model" >"$tmp/text.gguf"
"$BIN" inspect --json "$tmp/text.gguf" >/dev/null 2>"$tmp/err.txt"; rc=$?
[ $rc -eq 1 ] || fail "text file: exit $rc"
grep -q "offset 0: bad magic" "$tmp/err.txt" || fail "text file message: $(cat "$tmp/err.txt")"
"$BIN" inspect "$tmp/missing.gguf" >/dev/null 2>&1; rc=$?
[ $rc -eq 1 ] || fail "missing file: exit $rc"

# Usage errors: exit 2.
"$BIN" inspect >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "no args: exit $rc"
"$BIN" inspect --bogus "$FIX/models/stories260k-f32.gguf" >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "unknown option: exit $rc"
"$BIN" inspect "$FIX/models/stories260k-f32.gguf" "$FIX/models/qwen3-d64-f16.gguf" >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "two files: exit $rc"
"$BIN" inspect --help | grep -q "usage: typellm inspect" || fail "--help"

if [ $fails -ne 0 ]; then
  echo "$fails failures" >&2
  exit 1
fi
echo "inspect: all checks passed"
