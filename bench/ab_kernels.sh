#!/usr/bin/env bash
# ab_kernels.sh: the matmul kernels of two git revisions side by side, for a
# change too small to see through one machine's run-to-run noise (on the
# shared virtual machines these run on, a core's speed moves by 10-30% from
# minute to minute, more than most kernel changes are worth).
#
#   bench/ab_kernels.sh [--types "Q8_0 Q4_K_M"] [--prefill 256] [--decode 8] [--runs 6] REV_A [REV_B]
#
# REV_B defaults to the working tree. Builds bench_kernels.c of each revision
# against that revision's kernels (in scratch worktrees under bench/out/ab/,
# git-ignored), then runs A and B alternately, one thread each, --runs times
# per type, and prints the best process CPU time per token of each side and
# their ratio. Best-of-N alternated runs cancel most of the drift; CPU time
# (not wall time) keeps other processes' load out of it. Kernels only: for the
# whole engine compare `typellm bench` or bench/compare_llamacpp.sh runs.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
types="Q8_0 Q4_K_M" prefill=256 decode=8 runs=6
while [ $# -gt 0 ]; do
    case "$1" in
        --types) types=$2; shift 2 ;;
        --prefill) prefill=$2; shift 2 ;;
        --decode) decode=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        -*) echo "usage: $0 [--types T] [--prefill P] [--decode D] [--runs N] REV_A [REV_B]" >&2; exit 2 ;;
        *) break ;;
    esac
done
[ $# -ge 1 ] || { echo "usage: $0 [--types T] [--prefill P] [--decode D] [--runs N] REV_A [REV_B]" >&2; exit 2; }
rev_a=$1 rev_b=${2:-}
scratch=$root/bench/out/ab
mkdir -p "$scratch"

# bench_kernels for one source tree, linked against the kernels as the
# project's own build makes them (its flags, its per-file options)
build_side() { # SRC_DIR BUILD_DIR OUT_BINARY
    local src=$1 build=$2 bin=$3
    cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build "$build" -j"$(nproc)" --target tl_kernels tl_gguf tl_util >/dev/null
    cc -O2 -I"$src/include" -I"$src/src" "$src/bench/bench_kernels.c" "$build/libtl_kernels.a" \
        "$build/libtl_gguf.a" "$build/libtl_util.a" $(pkg-config --libs jansson) -lm -lpthread -o "$bin"
}

checkout() { # REV DIR
    rm -rf "$2"
    git worktree remove --force "$2" 2>/dev/null || true
    git worktree add --detach -q "$2" "$1"
}

echo "== build A ($rev_a)" >&2
checkout "$rev_a" "$scratch/a"
build_side "$scratch/a" "$scratch/a/build" "$scratch/bench_a"
if [ -n "$rev_b" ]; then
    echo "== build B ($rev_b)" >&2
    checkout "$rev_b" "$scratch/b"
    build_side "$scratch/b" "$scratch/b/build" "$scratch/bench_b"
else
    echo "== build B (working tree)" >&2
    build_side "$root" "$scratch/build-tree" "$scratch/bench_b"
fi
git worktree remove --force "$scratch/a" 2>/dev/null || true
[ -z "$rev_b" ] || git worktree remove --force "$scratch/b" 2>/dev/null || true

results=$scratch/ab-$(date +%Y%m%d-%H%M%S).jsonl
: >"$results"
for t in $types; do
    for r in $(seq 1 "$runs"); do
        for side in a b; do
            "$scratch/bench_$side" --type "$t" --threads 1 --prefill "$prefill" --decode "$decode" --json |
                sed "s|^{|{\"side\":\"$side\",\"run\":$r,|" >>"$results"
        done
    done
done
python3 - "$results" "$rev_a" "${rev_b:-working tree}" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(f"A = {sys.argv[2]}, B = {sys.argv[3]}; best process CPU time per token of {max(r['run'] for r in rows)} "
      "alternated one-thread runs (lower is better)\n")
print("| type | A prefill ms/tok | B prefill ms/tok | B/A | A decode ms/tok | B decode ms/tok | B/A |")
print("|---|---:|---:|---:|---:|---:|---:|")
for t in dict.fromkeys(r["type"] for r in rows):
    best = {}
    for s in "ab":
        rs = [r for r in rows if r["type"] == t and r["side"] == s]
        pre = min(r["prefill_cpu_s"] / r["prefill"] for r in rs) * 1e3 if rs[0]["prefill"] else float("nan")
        dec = min(r["decode_cpu_s"] for r in rs) * 1e3
        best[s] = (pre, dec)
    (pa, da), (pb, db) = best["a"], best["b"]
    print(f"| {t} | {pa:.2f} | {pb:.2f} | {pb / pa:.3f} | {da:.1f} | {db:.1f} | {db / da:.3f} |")
print(f"\nraw results: {sys.argv[1]}")
PY
