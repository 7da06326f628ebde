#!/usr/bin/env bash
# bench_numbers.sh: builds the constrain layer (RelWithDebInfo, -O2) into
# build-bench/ and bench/bench_numbers.c against it, then runs the benchmark:
# per-step cost of a number mask on the qwen3 (151k), llama3 (128k) and
# llama-spm (32k) vocabularies.   Usage: bench/bench_numbers.sh [FIXTURES_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
fixtures="${1:-$(pwd)/../shared/fixtures}"
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-bench -j2 --target tl_constrain >/dev/null
libs=()
for l in constrain backend engine kernels tok gguf util; do
  libs+=("build-bench/libtl_$l.a")
done
cc -std=gnu11 -O2 -Wall -Wextra -Werror -Wno-unused-parameter -Iinclude -Isrc bench/bench_numbers.c \
  "${libs[@]}" $(pkg-config --libs jansson libpcre2-8 libutf8proc libcurl) -lpthread -lm -o build-bench/bench_numbers
build-bench/bench_numbers "$fixtures"
