#!/usr/bin/env bash
# bench_tokenize.sh [REPS]: builds bench/bench_tokenize.c with -O2 against the
# util, gguf and tok sources only (so it runs even while other layers are
# mid-change) and prints tokens/second per fixture vocabulary for REPS
# (default 1000) tokenizations of ref/long.txt. Scratch build in a temp dir.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
${CC:-cc} -std=gnu11 -O2 -DNDEBUG -Iinclude -Isrc bench/bench_tokenize.c src/util/*.c src/gguf/*.c src/tok/*.c \
  $(pkg-config --cflags --libs libpcre2-8 libutf8proc jansson) -lm -o "$out/bench_tokenize"
TL_FIXTURES=${TL_FIXTURES:-../shared/fixtures} "$out/bench_tokenize" "${1:-1000}"
