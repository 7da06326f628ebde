#!/usr/bin/env bash
# test_numeric_args.sh: a numeric option that is not a number is a usage
# error (exit 2) naming the option, never a silent 0 (src/cli/opt.c).
set -u
M="$TL_FIXTURES/models/stories260k-f32.gguf"
fail=0
expect_usage() {
    local want="$1"; shift
    local err rc
    err=$("$TL_BIN" "$@" 2>&1 >/dev/null); rc=$?
    if [ "$rc" != 2 ] || ! grep -qF -- "$want" <<<"$err"; then
        echo "FAIL: typellm $* -> rc=$rc, stderr: $err"; fail=$((fail+1))
    fi
}
expect_usage "-n: 'abc' is not an integer" generate --model "$M" --prompt Once -n abc
expect_usage "--top-p: '0.9x' is not a number" generate --model "$M" --prompt Once --top-p 0.9x
expect_usage "--temperature: '' is not a number" generate --model "$M" --prompt Once --temperature ""
expect_usage "--last: 'x' is not an integer" logits --model "$M" --ids "1 2" --last x
expect_usage "-p: 'zz' is not an integer" bench --model "$M" -p zz
expect_usage "--threads: '2x' is not an integer" bench --model "$M" --threads 2x
E="$TL_SRC/examples/synthesis/type_constrained/double.ae"
expect_usage "--top-k: 'abc' is not an integer" synth "$E" --model "$M" --top-k abc
expect_usage "--budget: '5s' is not a number" synth "$E" --model "$M" --budget 5s
AEON_TC_MAX_TOKENS=1x expect_usage "AEON_TC_MAX_TOKENS: '1x' is not an integer" synth "$E" --model "$M"
# Valid values still work.
out=$("$TL_BIN" generate --model "$M" --prompt Once -n 3 --temperature 0 --top-k 5 --top-p 0.9 2>/dev/null) || { echo "FAIL: valid generate"; fail=$((fail+1)); }
[ -n "$out" ] || { echo "FAIL: valid generate printed nothing"; fail=$((fail+1)); }
echo "$((10 - fail)) passed, $fail failed"
[ "$fail" = 0 ]
