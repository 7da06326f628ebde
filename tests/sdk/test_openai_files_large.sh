#!/usr/bin/env bash
# test_openai_files_large.sh: POST /v1/files takes a file far larger than
# --max-body, streamed to --data-dir under --max-file-mb (files_api.c): with
# --max-body 65536 the official SDK uploads a 48 MiB batch file, the server's
# peak RSS (VmHWM) grows by less than half the file, files.content gives it
# back byte for byte (sent from the file as it is read: the peak RSS still
# grows by less than half the file); a 40 MiB file under --max-file-mb 32 gets
# 413 file_too_large and leaves nothing in the data directory; other routes keep
# --max-body (a 100 KB /v1/decisions body: 413); a client that hangs up
# mid-upload leaves no temporary file.
source "$TL_SRC/tests/server/serve_lib.sh"
sdk="$TL_SRC/tests/sdk"
source "$sdk/npm_install.sh"
sdk_install openai || exit 0
M="$TL_FIXTURES/models/qwen2-d64-q8_0.gguf"
DATA="$SCRATCH/data"
check() { (cd "$sdk" && node openai_batch_check.mjs "http://127.0.0.1:$PORT" files-key "$@"); }
hwm_kb() { sed -n 's/^VmHWM:[^0-9]*\([0-9]*\).*/\1/p' "/proc/$1/status"; }
start_server --model "$M" --threads 1 --api-key files-key --data-dir "$DATA" --max-body 65536 --max-file-mb 64 --quiet
curl -s -o /dev/null -H "Authorization: Bearer files-key" "http://127.0.0.1:$PORT/v1/files"
before=$(hwm_kb "$SERVER_PID")
id=$(check upload 48)
after=$(hwm_kb "$SERVER_PID")
echo "peak RSS before the 48 MiB upload: $((before / 1024)) MiB, after: $((after / 1024)) MiB"
[ $((after - before)) -lt $((24 * 1024)) ] || { echo "FAIL: the upload grew the peak RSS by $(((after - before) / 1024)) MiB"; exit 1; }
check readback "$id" 48
read_hwm=$(hwm_kb "$SERVER_PID")
[ $((read_hwm - before)) -lt $((24 * 1024)) ] || { echo "FAIL: reading it back grew the peak RSS by $(((read_hwm - before) / 1024)) MiB"; exit 1; }
code=$(head -c 100000 /dev/zero | tr '\0' 'x' | curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer files-key" \
  -H "Content-Type: application/json" --data-binary @- "http://127.0.0.1:$PORT/v1/decisions")
[ "$code" = 413 ] || { echo "FAIL: a 100 KB /v1/decisions body got $code, not 413 (--max-body)"; exit 1; }
# a client gone mid-upload: its bytes are not kept
python3 - "$PORT" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"POST /v1/files HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer files-key\r\n"
          b"Content-Type: multipart/form-data; boundary=B\r\nContent-Length: 10000000\r\n\r\n"
          b"--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.jsonl\"\r\n\r\n" + b"x" * 300000)
time.sleep(0.3)
s.close()
PY
stop_server "$SERVER_PID"
left=$(find "$DATA/files" -type f | wc -l)
[ "$left" -eq 0 ] || { echo "FAIL: $left files left in the data directory"; find "$DATA/files" -type f; exit 1; }
start_server --model "$M" --threads 1 --api-key files-key --data-dir "$DATA" --max-body 65536 --max-file-mb 32 --quiet
check toolarge 40
left=$(find "$DATA/files" -type f | wc -l)
[ "$left" -eq 0 ] || { echo "FAIL: a refused upload left $left files"; exit 1; }
stop_server "$SERVER_PID"
echo "test_openai_files_large: ok (peak RSS +$(((after - before) / 1024)) MiB for a 48 MiB upload)"
