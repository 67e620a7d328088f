"""BERT-style encoders (MiniLM): post-norm, bidirectional, padding mask only.

We hook ``attention.self``, whose output is the per-head context ``sum_j A_ij v_j``;
the attention module's output that the walk reproduces is ``attention.output.dense``
of that context (before dropout, the residual and the post-attention LayerNorm).
"""
from __future__ import annotations

from ._linear import argument, is_encoder, scores, split_heads


def _base(model):
    return getattr(model, "bert", model)


def layers(model):
    return [layer.attention.self for layer in _base(model).encoder.layer]


def shape(model):
    return model.config.num_attention_heads, model.config.num_attention_heads


def value_output(model, layer):
    att = _base(model).encoder.layer[layer].attention
    return att.self.value.weight, att.self.value.bias, att.output.dense.weight, att.output.dense.bias


def pre_norm(model, layer):
    return None   # post-norm: the LayerNorm comes after the residual sum


def module_output(model, layer, out):
    return _base(model).encoder.layer[layer].attention.output.dense(out[0])


def mask(model, layer):
    return {"causal": not is_encoder(model.config), "window": None}


def norm_gain(model, layer):
    """The gain of the LayerNorm whose output enters the attention: post-norm, that is the previous layer's
    output norm (the embeddings' norm before the first layer)."""
    base = _base(model)
    norm = base.embeddings.LayerNorm if layer == 0 else base.encoder.layer[layer - 1].output.LayerNorm
    return norm.weight


def logits(model, layer, args, kwargs, out=None):
    att = _base(model).encoder.layer[layer].attention.self
    x = argument(args, kwargs, 0, "hidden_states")
    dh = att.attention_head_size
    return scores(split_heads(att.query(x), dh), split_heads(att.key(x), dh), att.scaling, out=out)
