#!/usr/bin/env bash
# run-example.sh: sets up and builds typellm, then runs its main job: a typed
# decision (examples/receipt: a receipt -> expense type, reimbursable, receipt
# quality score), printed as JSON with each value's probabilities.
# The model is $TYPELLM_MODEL when set (e.g. a Qwen2.5-0.5B-Instruct GGUF, for
# meaningful answers), else a fixture model with random weights: the answers
# are then arbitrary, but every value is still typed and inside the schema.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
F=../shared/fixtures
MODEL="${TYPELLM_MODEL:-$F/models/qwen2-d64-q8_0.gguf}"
./build/typellm inspect "$MODEL"
echo
echo "== typellm decide: examples/receipt (sequential: each decision sees the ones before it)"
./build/typellm decide --model "$MODEL" --schema examples/receipt/schema.json \
  --context examples/receipt/context.txt --mode sequential
echo
echo "== typellm decide: examples/ticket (auto: waves by depends_on), values only"
./build/typellm decide --model "$MODEL" --schema examples/ticket/schema.json \
  --context examples/ticket/context.txt --values-only
echo
echo "== typellm decide: examples/receipt_numbers (an amount and a quantity generated under the number automaton)"
./build/typellm decide --model "$MODEL" --schema examples/receipt_numbers/schema.json \
  --context examples/receipt_numbers/context.txt --values-only
echo
echo "== Python: the seed's two examples through the typellm package"
python3 - "$MODEL" <<'PY'
import sys
import typellm
with typellm.Client(model=sys.argv[1]) as client:
    print(client.generate(context="Calculate the requested value accurately.",
                          schema={"type": "object", "properties": {"answer": {
                              "type": "number", "question": "What is 17.5 multiplied by 4?"}}, "required": ["answer"]}))
    r = client.generate(context="Dinner at Luigi's, 2 people, $84.20, client meeting.",
                        schema={"type": "object", "properties": {
                            "expense_type": {"type": "string", "enum": ["meal", "travel", "lodging", "equipment"]},
                            "reimbursable": {"type": "boolean"}}})
    print(r, r.probabilities["expense_type"])
PY
