#!/usr/bin/env bash
# fuzz.sh SECONDS [JOBS]: runs every libFuzzer target in build-fuzz/fuzz for
# SECONDS each, JOBS targets at a time (default: the number of cores), each
# starting from its corpus in fuzz/corpus/NAME (copied to a scratch dir, so the
# repo is never written). Every target runs even after one fails, so one CI run
# reports every failing target; then it fails if any target crashed, reported
# a sanitizer error, leaked, timed out, or was not built. Inputs that failed
# are kept in build-fuzz/fuzz-artifacts/NAME/.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
jobs=${2:-$(nproc)}
shopt -s nullglob
rm -rf build-fuzz/fuzz-artifacts
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# run_one BIN: one target; its log goes to $scratch/NAME.log, its exit status
# to $scratch/NAME.rc.
run_one() {
  local bin=$1 name work arts rc=0
  name=$(basename "$bin" | sed 's/^fuzz_//')
  work=$scratch/corpus-$name
  arts=build-fuzz/fuzz-artifacts/$name
  mkdir -p "$arts" "$work"
  [ -d "fuzz/corpus/$name" ] && cp -r "fuzz/corpus/$name/." "$work/"
  "$bin" -max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 -timeout=10 \
      -artifact_prefix="$arts/" "$work" >"$scratch/$name.log" 2>&1 || rc=$?
  echo "$rc" >"$scratch/$name.rc"
  rm -rf "$work"
}

names=()
for bin in build-fuzz/fuzz/fuzz_*; do
  [ -x "$bin" ] || continue
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
    wait -n || true
  done
  name=$(basename "$bin" | sed 's/^fuzz_//')
  names+=("$name")
  echo "fuzz: $name for ${secs}s" >&2
  run_one "$bin" &
done
wait

failed=()
for name in "${names[@]}"; do
  rc=$(cat "$scratch/$name.rc" 2>/dev/null || echo missing)
  if [ "$rc" = 0 ]; then
    echo "fuzz: $name: $(tail -1 "$scratch/$name.log")" >&2
  else
    tail -40 "$scratch/$name.log" >&2 || true
    echo "fuzz: $name FAILED (exit $rc; input kept in build-fuzz/fuzz-artifacts/$name/)" >&2
    failed+=("$name")
  fi
done
# Every fuzz/fuzz_NAME.c must have been built and run (a target that did not
# build is a failure, not a skip).
ran=${#names[@]}
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
