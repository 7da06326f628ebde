#!/usr/bin/env bash
# synth_eval.sh: type-constrained vs unconstrained synthesis over a folder of
# Aeon tasks (NAME.ae with one hole and @examples; NAME.solution.ae is not
# read), both rows from the same `typellm synth` (same sampler, prompt, seeds
# and budgets; --unconstrained turns the oracle off), as in Mündler et al.,
# PLDI 2025. Prints a Markdown table:
#   well-typed   tasks whose chosen program passed typellm's checker
#   examples     tasks whose chosen program passes every @example
#   ill-typed    finished texts the checker rejected (constrained must be 0)
#   tokens/s     mean tokens and seconds per task (all attempts)
#   oracle       oracle calls per generated token, mean call, share of time
# When Aeon itself is installed (`python3 -c 'import aeon'`), every returned
# program is checked by Aeon's own checker too (column aeon-rejected).
#
#   bench/synth_eval.sh [--tasks DIR] [--model M.gguf] [--seeds "0 1"] \
#       [--attempts N] [--max-tokens N] [--budget S] [--threads N] [--out DIR] [--limit N]
#
# Environment: TL_BIN (default build/typellm). Reports go to --out (a temp
# folder by default), one JSON per task, mode and seed.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
bin=${TL_BIN:-$here/build/typellm}
tasks=$here/../shared/fixtures/aeon-tasks
model=$here/../shared/fixtures/models/aeon-tiny-gpt2-q8_0.gguf
seeds="0"
attempts=4
max_tokens=96
budget=30
threads=2
out=""
limit=0
while [ $# -gt 0 ]; do
    case "$1" in
    --tasks) tasks=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --attempts) attempts=$2; shift 2 ;;
    --max-tokens) max_tokens=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "synth_eval.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
[ -x "$bin" ] || { echo "synth_eval.sh: no typellm binary at $bin (set TL_BIN)" >&2; exit 2; }
[ -d "$tasks" ] || { echo "synth_eval.sh: no task folder $tasks" >&2; exit 2; }
[ -f "$model" ] || { echo "synth_eval.sh: no model $model" >&2; exit 2; }
if [ -z "$out" ]; then
    out=$(mktemp -d)
fi
mkdir -p "$out"

files=()
for f in "$tasks"/*.ae; do
    case "$f" in *.solution.ae) continue ;; esac
    files+=("$f")
done
if [ "$limit" -gt 0 ] && [ "${#files[@]}" -gt "$limit" ]; then
    files=("${files[@]:0:$limit}")
fi
[ "${#files[@]}" -gt 0 ] || { echo "synth_eval.sh: no tasks in $tasks" >&2; exit 2; }

for seed in $seeds; do
    for mode in constrained unconstrained; do
        flag=""
        [ "$mode" = unconstrained ] && flag=--unconstrained
        for f in "${files[@]}"; do
            name=$(basename "$f" .ae)
            rep="$out/$name.$mode.s$seed.json"
            # exit 1 is exhaustion (the report says it), not a failure of the harness
            "$bin" synth "$f" --model "$model" --seed "$seed" --attempts "$attempts" --max-tokens "$max_tokens" \
                --budget "$budget" --threads "$threads" $flag --report "$rep" >/dev/null 2>"$out/$name.$mode.s$seed.err" || true
            [ -s "$rep" ] || { echo "synth_eval.sh: $name ($mode, seed $seed): no report; see $out/$name.$mode.s$seed.err" >&2; exit 1; }
        done
    done
done

aeon_check=0
if python3 -c 'import aeon' 2>/dev/null; then
    aeon_check=1
fi

python3 - "$out" "$aeon_check" "$seeds" "${#files[@]}" <<'EOF'
import glob, json, os, subprocess, sys, tempfile
out, aeon_check, seeds, n_tasks = sys.argv[1], sys.argv[2] == "1", sys.argv[3].split(), int(sys.argv[4])

def aeon_rejects(program):
    with tempfile.NamedTemporaryFile("w", suffix=".ae", delete=False) as f:
        f.write(program)
    try:
        r = subprocess.run([sys.executable, "-m", "aeon", f.name], capture_output=True, text=True, timeout=120)
        return r.returncode != 0
    finally:
        os.unlink(f.name)

rows = []
for mode in ("constrained", "unconstrained"):
    reps = [json.load(open(p)) for s in seeds for p in sorted(glob.glob(f"{out}/*.{mode}.s{s}.json"))]
    n = len(reps)
    typed = examples = ill = finished = tokens = calls = aeon_bad = 0
    secs = oracle_s = 0.0
    for r in reps:
        secs += r["elapsed_s"]
        for a in r["attempts"]:
            tokens += a["tokens_committed"]
            calls += a.get("oracle_calls", 0)
            oracle_s += a["oracle_s"]
            if a["end"] == "complete":
                finished += 1
                if a.get("well_typed") is False:
                    ill += 1
        c = r["chosen_attempt"]
        if c >= 0:
            v = r["attempts"][c]["validation"]
            typed += v["typed"]
            examples += v["typed"] and v["examples_failed"] == 0
            if aeon_check and aeon_rejects(r["program"]):
                aeon_bad += 1
    rows.append((mode, n, typed, examples, finished, ill, tokens, secs, calls, oracle_s, aeon_bad))

print(f"{n_tasks} tasks x {len(seeds)} seed(s) ({' '.join(seeds)}); Aeon's checker: "
      + ("run on every returned program" if aeon_check else "not installed here, typellm's checker only"))
print()
print("| decoding | runs | well-typed | passes @examples | finished attempts | ill-typed finished | "
      "tokens / task | s / task | oracle calls / token | mean oracle call | oracle share of time |"
      + (" Aeon rejects |" if aeon_check else ""))
print("|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if aeon_check else ""))
for mode, n, typed, examples, finished, ill, tokens, secs, calls, oracle_s, aeon_bad in rows:
    pct = lambda k: f"{k}/{n} ({100.0 * k / n:.0f}%)" if n else "-"
    per_call = f"{1e6 * oracle_s / calls:.1f} us" if calls else "-"
    print(f"| {mode} | {n} | {pct(typed)} | {pct(examples)} | {finished} | {ill} | {tokens / n:.1f} | "
          f"{secs / n:.2f} | {calls / tokens if tokens else 0:.2f} | {per_call} | "
          f"{100.0 * oracle_s / secs if secs else 0:.1f}% |" + (f" {aeon_bad} |" if aeon_check else ""))
EOF
echo "reports: $out" >&2
