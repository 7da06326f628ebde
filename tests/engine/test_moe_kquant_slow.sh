#!/usr/bin/env bash
# test_moe_kquant_slow.sh: MoE on K-quant weights. Builds a Qwen3-MoE model (dim 256, 6
# experts, 3 used) with ../shared/tools/mkmodel.py, quantizes it to Q4_K_M and dequantizes
# that back to F32 with `typellm quantize` (the same weights, exactly), and compares the
# quantized forward with the F32 one in typellm and in llama.cpp's server (the peer in
# ../shared/peers), whose own error on the pair is the bar (moe_kquant_check.py).
set -euo pipefail
: "${TL_BIN:?}" "${TL_FIXTURES:?}" "${TL_SRC:?}"
tools="$TL_FIXTURES/../tools" llama="$TL_FIXTURES/../peers/llama.cpp/llama-server"
[ -x "$llama" ] || { echo "FAIL: no llama.cpp peer at $llama"; exit 1; }
/usr/bin/python3 -c "import numpy" || { echo "FAIL: mkmodel.py needs python3-numpy (scripts/setup.sh --test)"; exit 1; }
T=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  rm -rf "$T"
}
trap cleanup EXIT
/usr/bin/python3 "$tools/mkmodel.py" --vocab "$TL_FIXTURES/vocab/ggml-vocab-llama-spm.gguf" --arch qwen3moe \
  --dim 256 --layers 2 --heads 4 --kv-heads 2 --head-dim 64 --experts 6 --experts-used 3 --expert-ff 256 --ff 256 \
  --seed 29 --out "$T/f32.gguf" >/dev/null
"$TL_BIN" quantize "$T/f32.gguf" "$T/q4km.gguf" Q4_K_M -t 2 2>/dev/null
"$TL_BIN" quantize "$T/q4km.gguf" "$T/deq.gguf" F32 -t 2 2>/dev/null
# llama-server on free loopback ports: bind port 0 is not offered, so pick ports the kernel gave us
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
ports=()
for f in q4km deq; do
  port=$(free_port)
  "$llama" -m "$T/$f.gguf" --host 127.0.0.1 --port "$port" -t 1 -c 512 --parallel 1 >"$T/$f.log" 2>&1 &
  PIDS+=($!)
  ports+=("$port")
done
for port in "${ports[@]}"; do
  for _ in $(seq 1 300); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
    sleep 0.1
  done
  curl -sf "http://127.0.0.1:$port/health" >/dev/null || { echo "llama-server on $port did not start"; cat "$T"/*.log; exit 1; }
done
PYTHONPATH="$TL_SRC/tests/server" python3 "$TL_SRC/tests/engine/moe_kquant_check.py" "$T" "${ports[0]}" "${ports[1]}"
echo "test_moe_kquant_slow: ok"
