#!/usr/bin/env bash
# bench_oracle.sh: builds bench/bench_oracle.c with the aeon front end and
# oracle (-O2, straight from the sources: no engine needed) into build-bench/
# and runs it on examples/synthesis/type_constrained. Usage: bench/bench_oracle.sh
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p build-bench
cc -std=gnu11 -O2 -Wall -Wextra -Werror -Wno-unused-parameter -Iinclude -Isrc bench/bench_oracle.c \
  src/aeon/syntax.c src/aeon/check.c src/aeon/eval.c src/aeon/oracle.c src/aeon/validate.c \
  src/util/arena.c src/util/error.c src/util/strbuf.c src/util/fileio.c src/util/utf8.c -lm -o build-bench/bench_oracle
build-bench/bench_oracle examples/synthesis/type_constrained
