#!/usr/bin/env bash
# test_llamacpp_slow.sh: every decision of examples/ and of the schema test
# corpus (tests/decide/data/pydantic) over the real llama-server gives the
# embedded engine's values, probabilities within 1e-3 and numbers in domain,
# in all three modes (llama-spm-d64-f32; several minutes on 2 cores).
source "$TL_SRC/tests/server/serve_lib.sh"
source "$TL_SRC/tests/backend/llama_server_lib.sh"
m="$TL_FIXTURES/models/llama-spm-d64-f32.gguf"
start_llama "$m"
runs=0
check() { # label schema context
  for mode in sequential batch auto; do
    "$TL_BIN" decide --model "$m" --threads 1 --schema "$2" --context "$3" --mode "$mode" >"$SCRATCH/local.json"
    "$TL_BIN" decide --server "$LURL" --schema "$2" --context "$3" --mode "$mode" >"$SCRATCH/remote.json"
    same_decision "$SCRATCH/local.json" "$SCRATCH/remote.json" "$1/$mode"
    in_domain "$SCRATCH/remote.json" "$2" "$1/$mode"
    runs=$((runs + 1))
  done
}
for d in "$TL_SRC"/examples/*/; do
  [ -f "$d/schema.json" ] && check "$(basename "$d")" "$d/schema.json" "$d/context.txt"
done
for s in "$TL_SRC"/tests/decide/data/pydantic/*.schema.json; do
  check "$(basename "$s" .schema.json)" "$s" "${s%.schema.json}.context.txt"
done
echo "test_llamacpp_slow: ok ($runs decisions)"
