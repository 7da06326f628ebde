/* typellm/typellm.h: the public C API of libtypellm (prefix tl_; the Aeon
 * synthesis layer's calls are tl_aeon_*). Include this one header, link with
 * `pkg-config --cflags --libs typellm`; docs/api.md is the guide.
 *
 * typellm turns an open autoregressive language model (llama / qwen2 / qwen3
 * GGUF) into a source of typed decisions and type-correct code. The CLI
 * (src/cli), the server and the examples are built on these headers only.
 *
 *   common.h        version, status codes, tl_error, tl_usage, tl_free; the API's conventions
 *   util.h          tl_strbuf, whole-file reads, a monotonic clock
 *   gguf.h          the GGUF reader (metadata, tensor table, ggml type names)
 *   vocab.h         tokenizers (SPM, byte-level BPE) that match the reference ids
 *   model.h         models, sessions (KV prefix cache, batched evaluation), model resolution
 *   kernels.h       the kernels' instruction set, whole-model type conversion
 *   backend.h       local / SGLang / shared (thread-safe, batching) backends
 *   decide.h        schemas, tl_decide, tl_decision and its typed accessors
 *   template.h      chat templates: a Jinja2 renderer (tl_template_render_chat)
 *   aeon.h, aeon_oracle.h, aeon_sampler.h, aeon_synth.h   Aeon type-constrained synthesis
 *   server.h        the HTTP server (SGLang API, /v1/systemone, /v1/decide) */
#ifndef TYPELLM_TYPELLM_H
#define TYPELLM_TYPELLM_H

#include "common.h"
#include "util.h"
#include "gguf.h"
#include "vocab.h"
#include "model.h"
#include "kernels.h"
#include "backend.h"
#include "decide.h"
#include "batch.h"
#include "template.h"
#include "aeon.h"
#include "aeon_oracle.h"
#include "aeon_sampler.h"
#include "aeon_synth.h"
#include "server.h"

#endif
