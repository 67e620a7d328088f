"""GPT-2: ``Conv1D`` stores weights as ``(in, out)``; one fused ``c_attn`` holds Q, K, V.

Pre-norm (``ln_1``), causal, plain multi-head attention (``G = H``).
"""
from __future__ import annotations


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


def norm_gain(model, layer):
    return _base(model).h[layer].ln_1.weight

