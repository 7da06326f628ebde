#!/usr/bin/env bash
# test_examples.sh: `typellm decide` on every example directory (schema.json +
# context.txt) with fixture models, in both renderings, and a check of every
# value against its field's declared type and range: enums, booleans, scores,
# generated integers/numbers (bounds, decimals), open fields (a string of at
# most maxLength characters, marked "open") and x-domain-from fields (a
# declared value or what the open field wrote). Sampled runs (temperature 2,
# several seeds) reach the open fields' free-text path.
set -euo pipefail
EX="$TL_SRC/examples"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

check() { # result.json schema.json label
  python3 - "$1" "$2" "$3" <<'PY'
import json, math, sys
r, s, what = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
def fail(msg): sys.exit(f"FAIL {what}: {msg}")
props = s["properties"]
if list(r["values"]) != list(props): fail("values not in schema order")
for k, p in props.items():
    v, f = r["values"][k], r["fields"][k]
    if v is None:
        fail(f"{k}: no value (no threshold was set)")
    t = p.get("type")
    if p.get("open") or "x-open" in p:
        if f.get("open"):
            if not isinstance(v, str) or len(v) > p.get("maxLength", 256): fail(f"{k}: open value {v!r}")
            if not 0 <= f["probability"] <= 1: fail(f"{k}: probability")
        elif v not in p["enum"]: fail(f"{k}: {v!r} not in enum")
    elif "x-domain-from" in p:
        src = r["fields"][p["x-domain-from"]]
        allowed = list(p["enum"]) + ([src["value"]] if src.get("open") else [])
        if v not in allowed: fail(f"{k}: {v!r} not in {allowed}")
    elif "enum" in p:
        if v not in p["enum"]: fail(f"{k}: {v!r} not in enum")
    elif t == "boolean":
        if not isinstance(v, bool): fail(f"{k}: {v!r} not a boolean")
    elif p.get("format") == "score":
        if not (isinstance(v, float) and abs(v * 10 - round(v * 10)) < 1e-9 and 0 <= v <= 1): fail(f"{k}: score {v!r}")
    elif t in ("integer", "number"):
        if isinstance(v, bool) or not isinstance(v, (int, float)): fail(f"{k}: {v!r} not a number")
        if t == "integer" and not isinstance(v, int): fail(f"{k}: {v!r} not an integer")
        if "minimum" in p and v < p["minimum"]: fail(f"{k}: {v} < minimum")
        if "maximum" in p and v > p["maximum"]: fail(f"{k}: {v} > maximum")
        d = p.get("x-decimals")
        if d is not None and abs(v * 10**d - round(v * 10**d)) > 1e-6: fail(f"{k}: {v} has more than {d} decimals")
        if f["text"] is None or float(f["text"]) != v: fail(f"{k}: text {f['text']!r} vs value {v}")
    else:
        fail(f"{k}: unchecked field kind")
    if "probabilities" in f and abs(sum(f["probabilities"].values()) - 1) > 1e-9: fail(f"{k}: probabilities")
PY
}

n=0
for dir in "$EX"/*/; do
  name=$(basename "$dir")
  [[ -f "$dir/schema.json" && -f "$dir/context.txt" ]] || continue
  for model in qwen2-d64-q8_0 llama-spm-d64-q8_0; do
    M="$TL_FIXTURES/models/$model.gguf"
    for style in chat record; do
      "$TL_BIN" decide --model "$M" --threads 1 --schema "$dir/schema.json" --context "$dir/context.txt" \
        --style "$style" --chat-template chatml > "$T/out.json"
      check "$T/out.json" "$dir/schema.json" "$name $model $style"
      n=$((n + 1))
    done
  done
done

# sampled runs on the open example: some must write a value of their own
opened=0
for seed in 1 2 3; do
  for style in chat record; do
    for mode in sequential batch; do
      "$TL_BIN" decide --model "$TL_FIXTURES/models/qwen2-d64-q8_0.gguf" --threads 1 \
        --schema "$EX/ticket_open/schema.json" --context "$EX/ticket_open/context.txt" --style "$style" \
        --chat-template chatml --mode "$mode" --temperature 2 --seed "$seed" > "$T/out.json"
      check "$T/out.json" "$EX/ticket_open/schema.json" "ticket_open seed $seed $style $mode"
      opened=$((opened + $(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(sum(1 for f in r['fields'].values() if f.get('open')))" "$T/out.json")))
    done
  done
done
[[ $opened -gt 0 ]] || { echo "FAIL: no sampled run picked an open choice" >&2; exit 1; }
echo "ok: $n example runs, 12 sampled runs with $opened open values"
