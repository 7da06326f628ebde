#!/usr/bin/env bash
# test_synth_tiny.sh: with the trained Aeon model (aeon-tiny), constrained
# `typellm synth` finishes programs of the public task set and of
# examples/synthesis/ within a small budget, and none it returns is ill typed:
# every printed program is re-read by typellm's checker (the program plus a
# probe def with a hole, loaded by `typellm oracle --context`: a def that does
# not type-check is left out of the context, so the synthesized def must be
# listed), and no finished attempt in any report failed the type check.
set -euo pipefail
bin=${TL_BIN:?}
fx=${TL_FIXTURES:?}
src=${TL_SRC:?}
model="$fx/models/aeon-tiny-gpt2-q8_0.gguf"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

tasks=("$fx/aeon-tasks/t05_arith_next_int.ae" "$fx/aeon-tasks/t11_arith_triple.ae" "$fx/aeon-tasks/t23_bool_below.ae"
       "$fx/aeon-tasks/t28_string_concat.ae" "$fx/aeon-tasks/t41_whole_scale_by.ae"
       "$src/examples/synthesis/type_constrained/double.ae" "$src/examples/synthesis/type_constrained/twice.ae")
finished=0
for f in "${tasks[@]}"; do
    name=$(basename "$f" .ae)
    set +e
    "$bin" synth "$f" --model "$model" --seed 0 --attempts 2 --max-tokens 48 --budget 30 --threads 1 \
        --report "$tmp/$name.json" >"$tmp/$name.out" 2>"$tmp/$name.err"
    rc=$?
    set -e
    [ "$rc" = 0 ] || [ "$rc" = 1 ] || fail "$name: exit $rc: $(cat "$tmp/$name.err")"
    python3 - "$tmp/$name.json" "$rc" <<'EOF' || fail "$name: report"
import json, sys
r = json.load(open(sys.argv[1]))
ok = sys.argv[2] == "0"
assert r["unconstrained"] is False
assert (r["status"] == "ok") == ok, r["status"]
for a in r["attempts"]:
    assert a["well_typed"] is not False, ("an ill-typed finished attempt", a["text"])
    assert a["oracle_calls"] > 0 and a["elapsed_s"] >= 0
if not ok:  # an exhaustion report names what ran out or that validation failed
    assert r["budgets_exhausted"] or all(a["end"] == "complete" for a in r["attempts"]), r
EOF
    if [ "$rc" = 0 ]; then
        finished=$((finished + 1))
        def=$(sed -n 's/^def \([A-Za-z_][A-Za-z0-9_]*\).*:= *?[A-Za-z_].*/\1/p' "$f")
        [ -n "$def" ] || fail "$name: no hole def found"
        { cat "$tmp/$name.out"; printf '\ndef zz_probe : Int := ?h;\n'; } >"$tmp/$name.check.ae"
        "$bin" oracle --file "$tmp/$name.check.ae" --prefix 0 --context >"$tmp/$name.ctx" ||
            fail "$name: the printed program does not load: $(cat "$tmp/$name.out")"
        grep -q "^$def : " "$tmp/$name.ctx" || fail "$name: typellm's checker rejects the printed $def: $(cat "$tmp/$name.out")"
        [ "$(grep -c . "$tmp/$name.out")" -ge 1 ] || fail "$name: empty program"
    fi
done
[ "$finished" -ge 1 ] || fail "no task finished a program: $(cat "$tmp"/*.err)"
echo "aeon-tiny: $finished of ${#tasks[@]} programs finished and re-checked"
