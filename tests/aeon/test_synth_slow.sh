#!/usr/bin/env bash
# test_synth_slow.sh: `typellm synth` on every example with the trained
# stories260k model and two random fixture models (SPM llama, BPE qwen2) must end with a validated,
# well-typed program (exit 0) or an explicit exhaustion report (exit 1),
# never an ill-typed program and never past the budget. (Slow: 33 runs with
# real forward passes; skipped under the sanitizers.)
set -euo pipefail
bin=${TL_BIN:?}
fx=${TL_FIXTURES:?}
src=${TL_SRC:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

budget=15
for model in stories260k-f32.gguf llama-spm-d64-f32.gguf qwen2-d64-q8_0.gguf; do
  for ae in "$src"/examples/synthesis/type_constrained/*.ae; do
    name=$(basename "$ae" .ae)
    start=$(date +%s.%N)
    set +e
    "$bin" synth "$ae" --model "$fx/models/$model" --max-tokens 10 --attempts 2 --max-probes 2000 \
      --budget "$budget" --threads 1 --report "$tmp/r.json" >"$tmp/out.ae" 2>"$tmp/err"
    rc=$?
    set -e
    end=$(date +%s.%N)
    python3 - "$tmp/r.json" "$rc" "$start" "$end" "$budget" "$tmp/out.ae" <<'PY' || fail "$model $name: $(cat "$tmp/err")"
import json, sys
r = json.load(open(sys.argv[1])); rc = int(sys.argv[2])
start, end, budget = float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
out = open(sys.argv[6]).read()
assert end - start < budget + 5, "ran past the budget"
assert r["attempts"], "no attempts recorded"
for a in r["attempts"]:
    assert a["tokens_committed"] == len(a["tokens"])
    assert a["probes"] >= a["tokens_committed"]
    assert a["end"] in ("complete", "token_limit", "probe_limit", "exhausted", "deadline")
    if "validation" in a:
        assert a["end"] == "complete"
if rc == 0:
    assert r["status"] == "ok" and out.strip() and r["program"] == out.rstrip("\n") or r["program"] == out
    chosen = [a for a in r["attempts"] if a.get("validation", {}).get("typed")]
    assert chosen, "a program was printed without a typed attempt"
else:
    assert rc == 1 and r["status"] in ("exhausted", "deadline") and not out.strip(), "exit %d status %s" % (rc, r["status"])
PY
    echo "$model $name: exit $rc" >&2
    # a printed program must load again as a complete Aeon file (no hole left is an error by design)
    if [ "$rc" = 0 ]; then
      "$bin" oracle --file "$tmp/out.ae" --prefix "" >/dev/null 2>&1 && fail "$name: printed program still has a hole"
    fi
  done
done

echo "synth on every example ok" >&2
