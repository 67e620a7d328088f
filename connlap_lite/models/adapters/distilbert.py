"""DistilBERT: post-norm encoder, ``q_lin/k_lin/v_lin/out_lin`` inside the attention module.

The attention module's output (``out_lin`` of the heads' contexts, before the residual and
``sa_layer_norm``) is what the walk reproduces.
"""
from __future__ import annotations


def _base(model):
    return getattr(model, "distilbert", model)


def layers(model):
    return [layer.attention for layer in _base(model).transformer.layer]


def shape(model):
    return model.config.n_heads, model.config.n_heads


def value_output(model, layer):
    a = _base(model).transformer.layer[layer].attention
    return a.v_lin.weight, a.v_lin.bias, a.out_lin.weight, a.out_lin.bias


def pre_norm(model, layer):
    return None   # post-norm


def module_output(model, layer, out):
    return out[0]


def norm_gain(model, layer):
    """Post-norm: the previous layer's output LayerNorm (the embeddings' before the first layer)."""
    base = _base(model)
    return base.embeddings.LayerNorm.weight if layer == 0 else base.transformer.layer[layer - 1].output_layer_norm.weight
