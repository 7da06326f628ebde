#!/usr/bin/env bash
# test_ui.sh: the playground page (GET /) in a real headless Chromium, driven
# through the DevTools protocol (ui_check.mjs): the receipt example's bars
# equal the API's probabilities, the trace shows the scored token, a bad
# schema shows the server's message with its JSON path, compare and the form
# mode work, also on a decision front end (serve --upstream), and with
# --api-key the page asks for the key once. --no-ui
# turns the page off. Needs chromium and node (scripts/setup.sh --test).
source "$(dirname "$0")/serve_lib.sh"
command -v chromium >/dev/null || { echo "test_ui: chromium is missing (scripts/setup.sh --test installs it)"; exit 1; }
MODEL="$TL_FIXTURES/models/qwen2-d64-q8_0.gguf"

start_server --model "$MODEL" --threads 1 --quiet
node "$TL_SRC/tests/server/ui_check.mjs" open "$PORT" ${TL_UI_SCREENSHOT:+"$TL_UI_SCREENSHOT"}
stop_server "$SERVER_PID"

# the same page on a decision front end (serve --upstream, the GGUF's tokenizer here for the trace's token texts)
start_server --model "$MODEL" --threads 1 --quiet
ENGINE_PID=$SERVER_PID
start_server --upstream "http://127.0.0.1:$PORT" --tokenizer "$MODEL" --quiet
node "$TL_SRC/tests/server/ui_check.mjs" open "$PORT"
stop_server "$SERVER_PID"
stop_server "$ENGINE_PID"

start_server --model "$MODEL" --threads 1 --quiet --api-key s3cret-k3y
# the page and its files need no key; the API does
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/")" = 200 ]
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/ui/app.js")" = 200 ]
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/v1/models")" = 403 ]
node "$TL_SRC/tests/server/ui_check.mjs" key "$PORT" s3cret-k3y
stop_server "$SERVER_PID"

start_server --model "$MODEL" --threads 1 --quiet --no-ui
for path in / /ui/app.js /ui/examples.json; do
  code=$(curl -s -o "$SCRATCH/noui" -w '%{http_code}' "http://127.0.0.1:$PORT$path")
  [ "$code" = 404 ] || { echo "--no-ui: GET $path answered $code"; exit 1; }
done
grep -q -- "--no-ui" "$SCRATCH/noui"
stop_server "$SERVER_PID"
echo "test_ui: ok"
