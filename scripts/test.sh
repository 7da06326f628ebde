#!/usr/bin/env bash
# test.sh: the whole test suite, as CI runs it (.ci/run calls exactly this).
#   1. set up and build (scripts/setup.sh --test: the build packages plus the
#      test tools), run every CTest test;
#   2. rebuild with -fsanitize=address,undefined into build-asan/ and run the
#      suite again without the slow tests. Every sanitizer report (ASan, UBSan,
#      LeakSanitizer) from any process a test starts, including background
#      servers and expected-failure runs whose exit status a script ignores,
#      is written to build-asan/sanitizer-logs/ and fails this stage;
#   3. build the libFuzzer targets (clang) and run each for a bounded time.
# TL_TEST_QUICK=1 skips stages 2 and 3 (for a fast local loop).
# Each stage prints its wall time; the last line sums them up. The exit status
# is non-zero when any stage fails (set -e; a failed build shows its errors).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

t_start=$SECONDS
t_stage=$SECONDS
times=()
stage_done() {   # stage_done NAME: records NAME's wall time
  times+=("$1 $((SECONDS - t_stage))s")
  echo "== test: $1 took $((SECONDS - t_stage))s" >&2
  t_stage=$SECONDS
}
# build_or_show LOG CMD...: runs a build quietly; on failure prints its errors.
build_or_show() {
  local log=$1; shift
  if ! "$@" >"$log" 2>&1; then
    grep -E -A3 'error:|Error [0-9]+|undefined reference' "$log" | head -120 >&2
    echo "== test: build failed: $* (full log: $log)" >&2
    return 1
  fi
}

echo "== test: setup + release build ($(date -u +%H:%M:%S) UTC)" >&2
scripts/setup.sh --test
stage_done "setup+release build"
echo "== test: release ctest" >&2
(cd build && ctest --output-on-failure -j"$jobs")
stage_done "release ctest"

if [ "${TL_TEST_QUICK:-0}" = 1 ]; then exit 0; fi

echo "== test: address+undefined sanitizer build" >&2
sanlogs="$PWD/build-asan/sanitizer-logs"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS="-O1" -DTL_SANITIZE=ON \
      -DTL_SANITIZER_LOG_DIR="$sanlogs" >/dev/null
build_or_show build-asan/build.log cmake --build build-asan -j"$jobs"
stage_done "sanitizer build"
echo "== test: sanitizer ctest (-LE slow)" >&2
rm -rf "$sanlogs" && mkdir -p "$sanlogs"
ctest_rc=0
(cd build-asan && TL_SANITIZER_RUN=1 ctest --output-on-failure -j"$jobs" -LE slow) || ctest_rc=$?
reports=$(find "$sanlogs" -type f -size +0 | sort)
for r in $reports; do
  echo "== sanitizer report $r:" >&2
  head -60 "$r" >&2
done
# UBSan reports (stderr only) in any test's output, passed or failed.
# (A UBSan line names a C file: "render.c:131:51: runtime error: ..."; aeon's
# own "aeon: 3:4: runtime error: ..." messages are not sanitizer reports.)
san_pat='\.[ch]:[0-9]+:[0-9]+: runtime error: |UndefinedBehaviorSanitizer|ERROR: (Address|Leak)Sanitizer'
ub=$(grep -c -E "$san_pat" build-asan/Testing/Temporary/LastTest.log || true)
if [ -n "$reports" ] || [ "$ub" != 0 ]; then
  grep -E -B2 -A8 "$san_pat" build-asan/Testing/Temporary/LastTest.log | head -80 >&2 || true
  echo "== test: sanitizer reports: $(grep -c . <<<"$reports") in files, $ub in test output" >&2
  exit 1
fi
[ "$ctest_rc" = 0 ] || exit "$ctest_rc"
stage_done "sanitizer ctest"

echo "== test: fuzzers (bounded)" >&2
CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DTL_FUZZ=ON -DTL_WERROR=OFF >/dev/null
# -k: build every target that can be built, so one log lists every failure.
build_or_show build-fuzz/build.log cmake --build build-fuzz -j"$jobs" --target fuzzers -- -k
stage_done "fuzz build"
scripts/fuzz.sh "${TL_FUZZ_SECONDS:-20}"
stage_done "fuzz runs"
echo "== test: all stages passed in $((SECONDS - t_start))s: $(IFS=,; echo "${times[*]}")" >&2
