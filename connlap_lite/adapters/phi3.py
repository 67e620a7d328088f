"""Phi-3: one fused ``qkv_proj`` (all queries, then all keys, then all values), ``o_proj``, GQA.

Pre-norm RMSNorm (``input_layernorm``); the walk reproduces ``self_attn``'s output.
"""
from __future__ import annotations


def layers(model):
    return [layer.self_attn for layer in getattr(model, "model", model).layers]


def shape(model):
    c = model.config
    return c.num_attention_heads, getattr(c, "num_key_value_heads", None) or c.num_attention_heads


def value_output(model, layer):
    a = getattr(model, "model", model).layers[layer].self_attn
    H, G = shape(model)
    start = (H + G) * a.head_dim                           # the value rows follow every query and key row
    b = a.qkv_proj.bias
    return a.qkv_proj.weight[start:], None if b is None else b[start:], a.o_proj.weight, a.o_proj.bias


def pre_norm(model, layer):
    return getattr(model, "model", model).layers[layer].input_layernorm


def module_output(model, layer, out):
    return out[0]


def norm_gain(model, layer):
    return pre_norm(model, layer).weight
