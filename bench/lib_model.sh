# lib_model.sh: sourced by bench scripts. bench_qwen2_model TYPELLM TYPE THREADS
# prints the path of the Qwen2.5-0.5B-shaped model of weight TYPE in bench/out/,
# making it as bench/compare_llamacpp.sh does (F32 from ../shared/tools/mkmodel.py,
# reused if present, then `typellm quantize`).
bench_qwen2_model() {
    local tl=$1 type=$2 threads=$3 out f32 m
    out=$(pwd)/bench/out
    mkdir -p "$out"
    f32=$out/bench-qwen2-0.5b-f32.gguf
    [ -f "$f32" ] || [ ! -f /tmp/bench-qwen2-0.5b-f32.gguf ] || f32=/tmp/bench-qwen2-0.5b-f32.gguf
    m=$out/qwen2-0.5b-$type.gguf
    if [ ! -f "$m" ]; then
        if [ ! -f "$f32" ]; then
            echo "== make the Qwen2.5-0.5B-shaped model" >&2
            /usr/bin/python3 ../shared/tools/mkmodel.py --vocab ../shared/fixtures/vocab/ggml-vocab-qwen3.gguf \
                --arch qwen2 --dim 896 --layers 24 --heads 14 --kv-heads 2 --ff 4864 --tied \
                --rope-base 1000000 --seed 21 --out "$f32" >&2
        fi
        echo "== quantize $type" >&2
        "$tl" quantize "$f32" "$m" "$type" --threads "$threads" >&2
    fi
    echo "$m"
}
