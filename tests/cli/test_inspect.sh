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
  "gemma2-spm-d64-f32 gemma2 2 24 32000 gemma 3 {\"F32\":24}"
  "gemma3-spm-d128-f16 gemma3 6 80 32000 gemma 3 {\"F32\":37,\"F16\":43}"
  "gemma4-spm-d128-bf16 gemma4 6 86 32000 other 3 {\"F32\":44,\"BF16\":42}"
  "gpt-oss-gpt2-d64-mxfp4 gpt-oss 2 41 50257 other 3 {\"F32\":25,\"Q8_0\":10,\"MXFP4\":6}"
  "granite-gpt2-d64-bf16 granite 2 20 50257 other 3 {\"F32\":5,\"BF16\":15}"
  "mistral3-spm-d256-q4_k_m mistral3 2 20 32000 llama2 3 {\"F32\":5,\"Q4_K\":12,\"Q6_K\":3}"
  "olmo2-gpt2-d64-q8_0 olmo2 4 47 50257 none 3 {\"F32\":17,\"Q8_0\":30}"
  "phi3-d64-bf16 phi3 2 17 32064 phi3 3 {\"F32\":7,\"BF16\":10}"
  "qwen35-d64-q8_0 qwen35 8 108 151669 chatml 3 {\"F32\":45,\"Q4_0\":1,\"Q8_0\":62}"
  "qwen3moe-d64-q8_0 qwen3moe 2 26 151669 chatml 3 {\"F32\":11,\"Q4_0\":1,\"Q8_0\":14}"
  "smollm3-gpt2-d64-f16 smollm3 4 38 50257 chatml 3 {\"F32\":9,\"F16\":29}"
  "aeon-tiny-gpt2-q8_0 llama 6 56 50257 none 3 {\"F32\":13,\"Q8_0\":43}"
)
# Weight types of issue 14 still being added: a file the reader refuses for one
# of them is skipped (and counted) until that type lands.
pending_type() { grep -q "ggml type MXFP4 (39) is not supported" "$1"; }
n_pending=0
n_models=$(ls "$FIX"/models/*.gguf | wc -l)
[ "$n_models" -eq "${#facts[@]}" ] || fail "fixture models changed: $n_models files, ${#facts[@]} known"

for row in "${facts[@]}"; do
  read -r name arch layers tensors tokens tpl version types <<<"$row"
  f="$FIX/models/$name.gguf"
  if ! "$BIN" inspect "$f" >"$tmp/out.txt" 2>"$tmp/err.txt"; then
    if pending_type "$tmp/err.txt"; then n_pending=$((n_pending + 1)); continue; fi
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
python3 - "$tmp" "$n_pending" <<'EOF' || fail "--json content"
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
check(rows + int(sys.argv[2]) == 23, "checked %d models" % rows)
# What the engine makes of the architectures.
j = json.load(open(os.path.join(tmp, "gemma2-spm-d64-f32.json")))
fe = j["engine"]["features"]
check(j["engine"]["supported"] and fe["window"] == 16 and fe["window_layers"] == 1 and fe["attn_softcap"] == 10
      and fe["final_softcap"] == 30 and fe["post_norms"] and fe["ffn"] == "geglu", "gemma2 features %s" % fe)
fe = json.load(open(os.path.join(tmp, "phi3-d64-bf16.json")))["engine"]["features"]
check(fe["fused_qkv"] and fe["fused_gate_up"] and fe["longrope"] and fe["window"] == 0, "phi3 features %s" % fe)
fe = json.load(open(os.path.join(tmp, "granite-gpt2-d64-bf16.json")))["engine"]["features"]
check((fe["embedding_scale"], fe["residual_scale"], fe["logit_scale"]) == (1.5, 0.5, 8.0), "granite features %s" % fe)
fe = json.load(open(os.path.join(tmp, "smollm3-gpt2-d64-f16.json")))["engine"]["features"]
check(fe["nope_layers"] == 1 and fe["ffn"] == "swiglu", "smollm3 features %s" % fe)
fe = json.load(open(os.path.join(tmp, "olmo2-gpt2-d64-q8_0.json")))["engine"]["features"]
check(fe["window"] == 8 and fe["window_layers"] == 3 and fe["qk_norm"] and fe["rope_tables"] == 2, "olmo2 %s" % fe)
sys.exit(1 if bad else 0)
EOF
"$BIN" inspect "$FIX/vocab/ggml-vocab-phi-3.gguf" | grep -q "^chat template: *phi3$" || fail "phi-3 template"
# The template's reasoning and how decisions keep answers out of it (text and --json).
check_reasoning() { # MODEL LINE
  "$BIN" inspect "$FIX/models/$1.gguf" | grep -qxF "reasoning:     $2" ||
    fail "$1 reasoning: $("$BIN" inspect "$FIX/models/$1.gguf" | grep '^reasoning')"
}
check_reasoning qwen3-d64-f16 "yes (decisions: enable_thinking=false)"
check_reasoning gpt-oss-gpt2-d64-mxfp4 "yes (decisions: final channel)"
check_reasoning mistral3-spm-d256-q4_k_m "yes (decisions: the prompt asks for [THINK]...[/THINK] first; answered after an empty [THINK][/THINK])"
check_reasoning llama3-d64-bf16 "no"
check_reasoning gemma2-spm-d64-f32 "no"
"$BIN" inspect "$FIX/models/llama-spm-d64-f32.gguf" | grep -q "^reasoning:" && fail "no template, yet a reasoning line"
"$BIN" inspect --json "$FIX/models/qwen3-d64-f16.gguf" | python3 -c 'import json, sys; j = json.load(sys.stdin)
sys.exit(0 if (j["chat_template"], j["chat_template_reasoning"], j["chat_template_thinking"]) ==
         ("chatml", True, "enable_thinking=false") else 1)' || fail "qwen3 --json reasoning fields"
"$BIN" inspect --json "$FIX/models/llama-spm-d64-f32.gguf" | python3 -c 'import json, sys; j = json.load(sys.stdin)
sys.exit(0 if (j["chat_template"], j["chat_template_reasoning"]) == ("none", None) else 1)' ||
  fail "no template --json reasoning fields"
"$BIN" inspect "$FIX/models/gemma3-spm-d128-f16.gguf" >"$tmp/g3.txt"
grep -q "^engine: *runs it (F16)$" "$tmp/g3.txt" || fail "gemma3 engine line"
grep -q "^features: *sliding window 8 on 5 layers, 2 RoPE tables, embedding scale 11.3137, q/k norms, post-norms, GeGLU$" \
  "$tmp/g3.txt" || fail "gemma3 features: $(grep features "$tmp/g3.txt")"
"$BIN" inspect "$FIX/vocab/ggml-vocab-phi-3.gguf" | grep -q "^engine: *cannot run it: .*missing tensor 'token_embd.weight'" ||
  fail "vocab-only engine line"
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
