#!/usr/bin/env bash
# test.sh: the whole test suite, as CI runs it (.ci/run calls exactly this).
#   1. set up and build (scripts/setup.sh), run every CTest test;
#   2. rebuild with -fsanitize=address,undefined into build-asan/ and run the
#      suite again (any sanitizer report fails the test that triggered it);
#   3. build the libFuzzer targets and run each for a bounded time.
# TL_TEST_QUICK=1 skips stages 2 and 3 (for a fast local loop).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

scripts/setup.sh
echo "== test: release build" >&2
(cd build && ctest --output-on-failure -j"$jobs")

if [ "${TL_TEST_QUICK:-0}" = 1 ]; then exit 0; fi

echo "== test: address+undefined sanitizer build" >&2
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS="-O1" -DTL_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$jobs" >/dev/null
(cd build-asan && TL_SANITIZER_RUN=1 ctest --output-on-failure -j"$jobs" -LE slow)

echo "== test: fuzzers (bounded)" >&2
CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DTL_FUZZ=ON -DTL_WERROR=OFF >/dev/null
cmake --build build-fuzz -j"$jobs" --target fuzzers >/dev/null
scripts/fuzz.sh "${TL_FUZZ_SECONDS:-20}"
