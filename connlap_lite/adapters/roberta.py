"""RoBERTa-style encoders (RoBERTa, XLM-RoBERTa, CamemBERT): BERT's layout under ``roberta``.

Post-norm, bidirectional, padding mask only, separate ``query/key/value`` with biases.  As
for BERT we hook ``attention.self``, whose output is the per-head context
``sum_j A_ij v_j``; the module output the walk reproduces is ``attention.output.dense`` of
it (before dropout, the residual and the post-attention LayerNorm).  RoBERTa's positions
start after the padding index: they enter the embeddings only, never the attention module.
A RoBERTa configured as a decoder (``is_decoder``) is causal.
"""
from __future__ import annotations

from ._linear import is_encoder, scores


def _base(model):
    return getattr(model, "roberta", model)


def _layer(model, layer):
    return _base(model).encoder.layer[layer]


def layers(model):
    return [layer.attention.self for layer in _base(model).encoder.layer]


def shape(model):
    return model.config.num_attention_heads, model.config.num_attention_heads


def value_output(model, layer):
    att = _layer(model, layer).attention
    return att.self.value.weight, att.self.value.bias, att.output.dense.weight, att.output.dense.bias


def pre_norm(model, layer):
    return None   # post-norm: the LayerNorm comes after the residual sum


def norm_gain(model, layer):
    """The gain of the LayerNorm whose output enters the attention (post-norm: the previous layer's output
    norm, the embeddings' norm before the first layer)."""
    base = _base(model)
    norm = base.embeddings.LayerNorm if layer == 0 else base.encoder.layer[layer - 1].output.LayerNorm
    return norm.weight


def module_output(model, layer, out):
    return _layer(model, layer).attention.output.dense(out[0])


def mask(model, layer):
    return {"causal": not is_encoder(model.config), "window": None}


def logits(model, layer, args, kwargs, out=None):
    """Every head's scaled query-key scores ``(B, H, n, n)`` from the module's own inputs, before any mask."""
    a = _layer(model, layer).attention.self
    hidden = args[0] if args else kwargs["hidden_states"]
    B, n, _ = hidden.shape
    H = model.config.num_attention_heads
    q = a.query(hidden).reshape(B, n, H, -1).transpose(1, 2)
    k = a.key(hidden).reshape(B, n, H, -1).transpose(1, 2)
    return scores(q, k, a.scaling, out=out)
