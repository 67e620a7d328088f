"""Gemma 3 text decoders: GQA/MQA, QK-norm, local sliding-window and global layers.

Pre-norm (``input_layernorm``, Gemma's RMSNorm with gain ``1 + w``, often very uneven) and a
post-attention norm applied to the module's output before the residual sum: the walk
reproduces ``self_attn``'s output, before that post-norm.  QK-norm and the query scale act
on scores only: they change ``A``, never the transport.
"""
from __future__ import annotations


def _base(model):
    return getattr(model, "model", model)


def layers(model):
    return [layer.self_attn for layer in _base(model).layers]


def shape(model):
    c = model.config
    return c.num_attention_heads, c.num_key_value_heads


def value_output(model, layer):
    a = _base(model).layers[layer].self_attn
    return a.v_proj.weight, a.v_proj.bias, a.o_proj.weight, a.o_proj.bias


def pre_norm(model, layer):
    return _base(model).layers[layer].input_layernorm


def module_output(model, layer, out):
    return out[0]


def mask(model, layer):
    c = model.config
    sliding = c.layer_types[layer] == "sliding_attention"
    return {"causal": True, "window": c.sliding_window if sliding else None}


def norm_gain(model, layer):
    return 1.0 + _base(model).layers[layer].input_layernorm.weight   # Gemma's RMSNorm scales by 1 + w
