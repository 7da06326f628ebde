#!/usr/bin/env bash
# fuzz.sh SECONDS: runs every libFuzzer target in build-fuzz/fuzz for SECONDS
# each, starting from its corpus in fuzz/corpus/NAME (copied to a scratch dir,
# so the repo is never written). Every target runs even after one fails, so one
# CI run reports every failing target; then it fails if any target crashed,
# reported a sanitizer error, leaked, timed out, or was not built. Inputs that
# failed are kept in build-fuzz/fuzz-artifacts/NAME/ (and printed in base64).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
shopt -s nullglob
ran=0
failed=()
rm -rf build-fuzz/fuzz-artifacts
for bin in build-fuzz/fuzz/fuzz_*; do
  [ -x "$bin" ] || continue
  name=$(basename "$bin" | sed 's/^fuzz_//')
  work=$(mktemp -d)
  arts="build-fuzz/fuzz-artifacts/$name"
  mkdir -p "$arts"
  [ -d "fuzz/corpus/$name" ] && cp -r "fuzz/corpus/$name/." "$work/"
  echo "fuzz: $name for ${secs}s" >&2
  if "$bin" -max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 -timeout=10 \
         -artifact_prefix="$arts/" "$work" >"$work.log" 2>&1; then
    tail -1 "$work.log" >&2
  else
    tail -40 "$work.log" >&2
    echo "fuzz: $name FAILED (input kept in $arts/)" >&2
    failed+=("$name")
  fi
  rm -rf "$work" "$work.log"
  ran=$((ran+1))
done
# Every fuzz/fuzz_NAME.c must have been built and run (a target that did not
# build is a failure, not a skip).
want=$(ls fuzz/fuzz_*.c | wc -l)
if [ "$ran" -ne "$want" ]; then
  echo "fuzz: only $ran of $want targets were built and run" >&2
  exit 1
fi
if ((${#failed[@]})); then
  echo "fuzz: ${#failed[@]} of $ran targets FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: $ran targets clean" >&2
