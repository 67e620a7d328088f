"""GPT-2: ``Conv1D`` stores weights as ``(in, out)``; one fused ``c_attn`` holds Q, K, V.

Pre-norm (``ln_1``), causal, plain multi-head attention (``G = H``).
"""
from __future__ import annotations

import torch

from ._linear import argument, scores, split_heads


def _base(model):
    return getattr(model, "transformer", model)


def layers(model):
    return [block.attn for block in _base(model).h]


def shape(model):
    return model.config.n_head, model.config.n_head


def value_output(model, layer):
    attn = _base(model).h[layer].attn
    d = model.config.n_embd
    W_v = attn.c_attn.weight[:, 2 * d:].T          # Conv1D (in, out) -> Linear (out, in)
    b_v = attn.c_attn.bias[2 * d:]
    return W_v, b_v, attn.c_proj.weight.T, attn.c_proj.bias


def pre_norm(model, layer):
    return _base(model).h[layer].ln_1


def module_output(model, layer, out):
    return out[0]


def mask(model, layer):
    return {"causal": True, "window": None}


def norm_gain(model, layer):
    return _base(model).h[layer].ln_1.weight


def logits(model, layer, args, kwargs, out=None):
    attn = _base(model).h[layer].attn
    x = argument(args, kwargs, 0, "hidden_states")
    d = attn.split_size                            # the query and key columns of c_attn only: no values made
    qk = torch.addmm(attn.c_attn.bias[:2 * d], x.reshape(-1, x.shape[-1]), attn.c_attn.weight[:, :2 * d])
    q, k = qk.view(*x.shape[:-1], 2 * d).split(d, dim=2)
    return scores(split_heads(q, attn.head_dim), split_heads(k, attn.head_dim), attn.scaling, out=out)
