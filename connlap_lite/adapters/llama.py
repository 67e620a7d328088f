"""Llama-style decoders (Llama, SmolLM2, Mistral, Qwen2): separate ``q/k/v/o_proj``, GQA.

Pre-norm RMSNorm (``input_layernorm``), causal, rotary positions on Q and K only (so
they change ``A``, never the transport); Qwen2 has value biases.  A sliding window
applies where the config enables one.
"""
from __future__ import annotations

from ._linear import argument, rotary, scores, split_heads


def layers(model):
    return [layer.self_attn for layer in model.model.layers]


def shape(model):
    c = model.config
    return c.num_attention_heads, getattr(c, "num_key_value_heads", None) or c.num_attention_heads


def value_output(model, layer):
    a = model.model.layers[layer].self_attn
    return a.v_proj.weight, a.v_proj.bias, a.o_proj.weight, a.o_proj.bias


def pre_norm(model, layer):
    return model.model.layers[layer].input_layernorm


def module_output(model, layer, out):
    return out[0]


def mask(model, layer):
    c = model.config
    window = getattr(c, "sliding_window", None)
    types = getattr(c, "layer_types", None)
    if types is not None:
        window = window if types[layer] == "sliding_attention" else None
    elif not getattr(c, "use_sliding_window", True):
        window = None
    return {"causal": True, "window": window}


def norm_gain(model, layer):
    return model.model.layers[layer].input_layernorm.weight


def logits(model, layer, args, kwargs, out=None):
    a = model.model.layers[layer].self_attn
    x = argument(args, kwargs, 0, "hidden_states")
    cos, sin = argument(args, kwargs, 1, "position_embeddings")
    q = rotary(split_heads(a.q_proj(x), a.head_dim), cos, sin)
    k = rotary(split_heads(a.k_proj(x), a.head_dim), cos, sin)
    return scores(q, k, a.scaling, out=out)
