/* test_random_schemas_slow.c: the same as test_random_schemas with 2,000
 * schemas over three fixture models (labelled slow: run by hand and in the
 * release stage, not under the sanitizers). */
#define RANDOM_SCHEMAS 2000
#define RANDOM_MODELS {"models/llama-spm-d64-f32.gguf", "models/qwen2-d64-q8_0.gguf", "models/llama3-d64-bf16.gguf"}
#include "test_random_schemas.c"
