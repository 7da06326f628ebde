#!/usr/bin/env bash
# test_pydantic.sh: Pydantic-v2-shaped schemas (tests/decide/data/pydantic:
# nested models through $defs/$ref/allOf, list[Enum], list[Model] (conlist
# max_length: an array of objects), Optional[...] of numbers, strings, models,
# Literal[...], constr(pattern=...), date/time/uuid/email/uri/ipv4 formats,
# x-optional) decided on three fixture models (ChatML, SPM record, Llama 3)
# in every mode, greedy and sampled; every returned "values" object must
# validate against its schema under python3-jsonschema (formats checked).
set -euo pipefail
BIN=${TL_BIN:?}
FIX=${TL_FIXTURES:?}
DATA=${TL_SRC:?}/tests/decide/data/pydantic
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
: > "$OUT/results.jsonl"
n=0
for model in qwen2-d64-q8_0 llama-spm-d64-f32 llama3-d64-bf16; do
  for schema in "$DATA"/*.schema.json; do
    name=$(basename "$schema" .schema.json)
    for mode in sequential batch auto; do
      temps=0
      [ "$model" = qwen2-d64-q8_0 ] && temps="0 1.5"
      for t in $temps; do
        "$BIN" decide --model "$FIX/models/$model.gguf" --schema "$schema" --context "$DATA/$name.context.txt" \
          --mode "$mode" --temperature "$t" --seed 7 --threads 1 --values-only > "$OUT/v.json"
        python3 -c 'import json,sys; print(json.dumps({"name": sys.argv[3], "schema": json.load(open(sys.argv[1])), "values": json.load(open(sys.argv[2]))}))' \
          "$schema" "$OUT/v.json" "$model/$name/$mode/T$t" >> "$OUT/results.jsonl"
        n=$((n + 1))
      done
    done
  done
done
python3 "$TL_SRC/tests/decide/validate_values.py" "$OUT/results.jsonl"
echo "test_pydantic: $n decisions validated"
