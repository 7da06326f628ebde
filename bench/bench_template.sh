#!/usr/bin/env bash
# bench_template.sh [REPS]: builds bench/bench_template.c with -O2 against the
# util, gguf, tok and template sources only and prints the render time of a
# ~4,000-token conversation for every fixture chat template (REPS renders
# each, default 200). Scratch build in a temp dir.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
${CC:-cc} -std=gnu11 -O2 -DNDEBUG -Iinclude -Isrc bench/bench_template.c src/util/*.c src/gguf/*.c src/tok/*.c \
  src/template/*.c $(pkg-config --cflags --libs libpcre2-8 libutf8proc jansson) -lm -o "$out/bench_template"
TL_FIXTURES=${TL_FIXTURES:-../shared/fixtures} "$out/bench_template" "${1:-200}"
