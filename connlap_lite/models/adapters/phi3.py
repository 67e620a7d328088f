"""Phi-3: one fused ``qkv_proj`` (all queries, then all keys, then all values), ``o_proj``, GQA.

Pre-norm RMSNorm (``input_layernorm``); the walk reproduces ``self_attn``'s output. Everything but the value
map's place in the weights is the Llama layout's (:mod:`connlap_lite.models.adapters.llama`): this module defines only
:func:`value_output`, and ``FAMILIES`` (:mod:`connlap_lite.models.adapters`) takes the other functions from Llama's.
"""
from __future__ import annotations

from .llama import layers, shape


def value_output(model, layer):
    a = layers(model)[layer]
    H, G = shape(model)
    start = (H + G) * a.head_dim                           # the value rows follow every query and key row
    b = a.qkv_proj.bias
    return a.qkv_proj.weight[start:], None if b is None else b[start:], a.o_proj.weight, a.o_proj.bias
