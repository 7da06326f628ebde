#!/usr/bin/python3
"""forward64.py: an independent float64 forward pass (numpy) of an F32 llama
GGUF, used to judge the engine's generations exactly: the llama.cpp
references carry llama.cpp's own rounding (about 3e-3 in the logprobs of the
stories260k greedy runs), while an exact engine should agree with float64 to
about 1e-5.

usage: forward64.py MODEL.gguf GENERATION.json
  GENERATION.json: {"prompt":[ids],"generated":[ids],"logprobs":[...]} as
  `typellm generate --json` prints. Prints the largest |logprob - float64|.
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.environ.get('TL_FIXTURES', '../shared/fixtures'), '..', 'tools'))
import gguf as G  # noqa: E402  (../shared/tools/gguf.py: reads F32/F16 tensors)

model, gen_path = sys.argv[1], sys.argv[2]
r = G.Reader(model)
index = {t[0]: i for i, t in enumerate(r.tensors)}
kv = {k: v[1] for k, v in r.kv.items()}
assert kv['general.architecture'] == 'llama', 'forward64.py handles llama only'


def weight(name):
    return r.array(index[name]).astype(np.float64)


E, L = kv['llama.embedding_length'], kv['llama.block_count']
H = kv['llama.attention.head_count']
HK = kv.get('llama.attention.head_count_kv', H)
eps = kv['llama.attention.layer_norm_rms_epsilon']
base = kv.get('llama.rope.freq_base', 10000.0)
hd = E // H

gen = json.load(open(gen_path))
ids = gen['prompt'] + gen['generated']
n = len(ids)


def rms(x, w):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


# RoPE, adjacent pairs (x[2i], x[2i+1]) turned by pos * base^(-2i/hd)
angle = np.arange(n)[:, None] * (base ** (-np.arange(0, hd, 2) / hd))[None, :]
cos, sin = np.cos(angle)[:, None, :], np.sin(angle)[:, None, :]


def rope(q):
    a, b = q[..., 0::2], q[..., 1::2]
    out = np.empty_like(q)
    out[..., 0::2] = a * cos - b * sin
    out[..., 1::2] = a * sin + b * cos
    return out


causal = np.triu(np.full((n, n), -np.inf), 1)
x = weight('token_embd.weight')[ids]
for layer in range(L):
    p = f'blk.{layer}.'
    h = rms(x, weight(p + 'attn_norm.weight'))
    q = rope((h @ weight(p + 'attn_q.weight').T).reshape(n, H, hd))
    k = rope((h @ weight(p + 'attn_k.weight').T).reshape(n, HK, hd))
    v = (h @ weight(p + 'attn_v.weight').T).reshape(n, HK, hd)
    att = np.zeros((n, H, hd))
    for head in range(H):
        g = head // (H // HK)
        s = q[:, head] @ k[:, g].T / np.sqrt(hd) + causal
        s = np.exp(s - s.max(-1, keepdims=True))
        att[:, head] = (s / s.sum(-1, keepdims=True)) @ v[:, g]
    x = x + att.reshape(n, -1) @ weight(p + 'attn_output.weight').T
    h = rms(x, weight(p + 'ffn_norm.weight'))
    gate, up = h @ weight(p + 'ffn_gate.weight').T, h @ weight(p + 'ffn_up.weight').T
    x = x + (gate / (1 + np.exp(-gate)) * up) @ weight(p + 'ffn_down.weight').T
out = weight('output.weight') if 'output.weight' in index else weight('token_embd.weight')
logits = rms(x, weight('output_norm.weight')) @ out.T
lse = logits.max(-1) + np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1))
P = len(gen['prompt'])
exact = [logits[P - 1 + i, t] - lse[P - 1 + i] for i, t in enumerate(gen['generated'])]
print('%.3g' % max(abs(a - b) for a, b in zip(exact, gen['logprobs'])))
