"""BERT-style encoders (BERT/MiniLM, RoBERTa, XLM-RoBERTa, CamemBERT, ELECTRA): post-norm, separate
``query/key/value`` with biases, bidirectional unless configured as a decoder.

We hook ``attention.self``, whose output is the per-head context ``sum_j A_ij v_j``;
the attention module's output that the walk reproduces is ``attention.output.dense``
of that context (before dropout, the residual and the post-attention LayerNorm).
"""
from __future__ import annotations


def _base(model):
    for name in ("bert", "roberta", "electra"):
        if hasattr(model, name):
            return getattr(model, name)
    return model


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


def norm_gain(model, layer):
    """The gain of the LayerNorm whose output enters the attention: post-norm, that is the previous layer's
    output norm (the embeddings' norm before the first layer; None where ELECTRA projects the embeddings
    after it, as no per-coordinate gain then reaches the attention)."""
    base = _base(model)
    if layer == 0:
        return None if hasattr(base, "embeddings_project") else base.embeddings.LayerNorm.weight
    return base.encoder.layer[layer - 1].output.LayerNorm.weight
