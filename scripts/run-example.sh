#!/usr/bin/env bash
# run-example.sh: sets up and builds typellm, then runs the main job on a
# fixture model. (Becomes a typed decision once `typellm decide` lands.)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
F=../shared/fixtures
./build/typellm inspect "$F/models/stories260k-f32.gguf"
./build/typellm tokenize --model "$F/models/stories260k-f32.gguf" --text "Once upon a time" --pieces
