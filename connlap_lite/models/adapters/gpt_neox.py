"""GPT-NeoX decoders (Pythia): one fused ``query_key_value``, head by head; partial rotary.

The fused projection's ``3 d`` outputs are laid out head by head: head ``h`` owns rows
``[3 h d_h, 3 (h+1) d_h)``, its query, then its key, then its value (not all queries first,
as GPT-2's ``c_attn``).  So ``W_V`` is the last third of every head's block, and the output
map ``dense`` reads the heads' contexts in head order, as usual.  Plain multi-head attention
(``G = H``), causal.

Pre-norm LayerNorm (``input_layernorm``): its gain is what :func:`norm_gain` returns; its bias
is added after the gain, so it is part of the section the hook sees (every token's input
shifted by the same vector), never of the transport.  Rotary positions (on the first ``rotary_pct``
of each head) act on queries and keys only: they change ``A``, never the transport.
With ``use_parallel_residual`` the MLP reads the same residual stream as the attention (not
its output); either way the attention module's output is ``dense`` of the heads' contexts,
before the residual sum, which is what the walk reproduces.
"""
from __future__ import annotations

def _base(model):
    return getattr(model, "gpt_neox", model)


def layers(model):
    return [layer.attention for layer in _base(model).layers]


def shape(model):
    return model.config.num_attention_heads, model.config.num_attention_heads


def _head_blocks(weight, H: int):
    """``(3 d[, d])`` fused rows as ``(H, 3, d_h[, d])``: head, then query/key/value."""
    return weight.reshape(H, 3, weight.shape[0] // (3 * H), *weight.shape[1:])


def value_output(model, layer):
    a = _base(model).layers[layer].attention
    H = model.config.num_attention_heads
    d = a.dense.weight.shape[0]
    W_v = _head_blocks(a.query_key_value.weight, H)[:, 2].reshape(-1, d)
    b = a.query_key_value.bias
    b_v = None if b is None else _head_blocks(b, H)[:, 2].reshape(-1)
    return W_v, b_v, a.dense.weight, a.dense.bias


def pre_norm(model, layer):
    return _base(model).layers[layer].input_layernorm


def module_output(model, layer, out):
    return out[0]


def norm_gain(model, layer):
    return _base(model).layers[layer].input_layernorm.weight   # LayerNorm: gain * normalised x + bias

