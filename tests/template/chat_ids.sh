# chat_ids.sh: sourced by tests that check a chat prompt's token ids.
# chat_expect_ids MODEL TEXTFILE prints the ids a rendered chat tokenizes to
# as transformers, SGLang and llama.cpp tokenize it: special tokens parsed,
# BOS first when the model adds one and the rendering did not write it.
chat_expect_ids() {
  local ids bos
  ids=$("$TL_BIN" tokenize -m "$1" -f "$2" --special | xargs)
  bos=$(printf '' | "$TL_BIN" tokenize -m "$1" -f - --bos | xargs)
  if [ -n "$bos" ] && [ "${ids%% *}" != "$bos" ]; then ids="$bos $ids"; fi
  echo "$ids"
}
