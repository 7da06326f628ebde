#!/usr/bin/env bash
# test_cli.sh: `typellm oracle` verdicts, witnesses and exit codes, and the
# capability/usage errors of `typellm synth` and `typellm oracle`.
set -euo pipefail
bin=${TL_BIN:?}
fx=${TL_FIXTURES:?}
src=${TL_SRC:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# The oracle CLI: verdicts, witnesses, exit codes.
ex="$src/examples/synthesis/type_constrained"
out=$("$bin" oracle --file "$ex/clamp.ae" --prefix "if n < 10 then n el") || fail "oracle LIVE exit"
grep -q '^LIVE$' <<<"$out" || fail "oracle verdict: $out"
grep -q '^witness: if n < 10 then n else 0$' <<<"$out" || fail "oracle witness: $out"
set +e
"$bin" oracle --file "$ex/clamp.ae" --prefix "n <" >"$tmp/o" ; rc=$?
set -e
[ "$rc" = 3 ] && grep -q '^DEAD$' "$tmp/o" || fail "oracle DEAD exit $rc"
set +e
"$bin" oracle --file "$ex/clamp.ae" --prefix "if n < 1 then" --max-states 2 >"$tmp/o"; rc=$?
set -e
[ "$rc" = 4 ] && grep -q '^UNKNOWN$' "$tmp/o" || fail "oracle UNKNOWN exit $rc"

# Capability and usage errors.
set +e
AEON_TC_DEVICE=cuda "$bin" synth "$ex/clamp.ae" --model "$fx/models/stories260k-f32.gguf" 2>"$tmp/err"; rc=$?
set -e
[ "$rc" = 1 ] && grep -q "not supported" "$tmp/err" || fail "device capability error: $rc $(cat "$tmp/err")"
printf 'type T;\ndef f : Int := ?h;\n' >"$tmp/adt.ae"
set +e
"$bin" oracle --file "$tmp/adt.ae" --prefix "" 2>"$tmp/err"; rc=$?
set -e
[ "$rc" = 1 ] && grep -q "1:1: an algebraic data type" "$tmp/err" || fail "ADT capability error: $(cat "$tmp/err")"
set +e
"$bin" synth "$ex/clamp.ae" 2>/dev/null; rc=$?
set -e
[ "$rc" = 2 ] || fail "synth without a model: exit $rc"
echo "synth/oracle CLI ok" >&2
