"""Gemma 3 text decoders: GQA/MQA, QK-norm, local sliding-window and global layers.

Pre-norm (``input_layernorm``, Gemma's RMSNorm with gain ``1 + w``, often very uneven) and a
post-attention norm applied to the module's output before the residual sum: the walk
reproduces ``self_attn``'s output, before that post-norm.  QK-norm and the query scale act
on scores only: they change ``A``, never the transport.  The config's ``attn_logit_softcapping``
is not applied: Hugging Face's Gemma 3 attention never passes it on (Gemma 2's does), so
:func:`logits` leaves it out too, as the module does.
"""
from __future__ import annotations

from ._linear import argument, rotary, scores, split_heads


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


def logits(model, layer, args, kwargs, out=None):
    a = _base(model).layers[layer].self_attn
    x = argument(args, kwargs, 0, "hidden_states")
    cos, sin = argument(args, kwargs, 1, "position_embeddings")
    q = rotary(a.q_norm(split_heads(a.q_proj(x), a.head_dim)), cos, sin)       # QK-norm, then rotary
    k = rotary(a.k_norm(split_heads(a.k_proj(x), a.head_dim)), cos, sin)
    return scores(q, k, a.scaling, out=out)
