"""Shared by the adapters: per-head transports from ``nn.Linear``-layout value and output maps, and whether a
model is an encoder."""
from __future__ import annotations

from functools import partial

import torch

from ..._backend import all_finite
from ...transports import HeadTransports


# model types whose attention looks both ways unless configured as a decoder; every other type is causal
ENCODER_TYPES = ("bert", "roberta", "xlm-roberta", "camembert", "distilbert", "electra")


def is_encoder(config) -> bool:
    """Whether a model of this config attends in both directions (an encoder), from its config alone.

    The one rule: :func:`connlap_lite.load_model` picks the model class by it and
    :func:`connlap_lite.models.adapters.describe` answers by it.  An encoder type configured as a decoder
    (``is_decoder``, as a causal language-model head needs) is causal, as its attention is.

    >>> from transformers import BertConfig, GPT2Config
    >>> is_encoder(BertConfig()), is_encoder(BertConfig(is_decoder=True)), is_encoder(GPT2Config())
    (True, False, False)
    """
    return getattr(config, "model_type", None) in ENCODER_TYPES and not getattr(config, "is_decoder", False)


def head_transports(W_v, b_v, W_o, b_o, H: int, G: int) -> HeadTransports:
    """Factor ``T_h = W_o[:, head h] @ W_v[group g(h)]`` (column convention) for every head.

    ``W_v`` is ``(G*d_h, d)`` and ``W_o`` is ``(d, H*d_h)``, as ``nn.Linear`` stores them.
    The affine part ``c = W_o b_v[g(h)] + b_o`` (the attention biases) is kept as ``.offset``.  The factors are views of the
    weights where they can be (``U`` always; ``V`` unless key/value groups serve several heads: then it is made
    when first read), checked finite once, as weights.

    >>> W_v, W_o = torch.ones(4, 6), torch.ones(6, 4)
    >>> heads = head_transports(W_v, None, W_o, None, H=2, G=2)
    >>> tuple(heads.U.shape), tuple(heads.V.shape), heads.V.data_ptr() == W_v.data_ptr()
    ((2, 6, 2), (2, 2, 6), True)
    >>> head_transports(W_v, None, W_o * float("nan"), None, H=2, G=2)
    Traceback (most recent call last):
    ...
    ValueError: the attention's output weights W_o hold NaN or inf; check the model's weights (a torn or corrupted file?)
    """
    d = W_o.shape[0]
    dh = W_v.shape[0] // G
    if W_v.shape != (G * dh, d) or W_o.shape != (d, H * dh):
        raise ValueError(f"value/output weights of shapes {tuple(W_v.shape)} and {tuple(W_o.shape)} do not fit "
                         f"H={H}, G={G}, d={d}")
    for what, w in (("value weights W_v", W_v), ("value bias b_v", b_v), ("output weights W_o", W_o),
                    ("output bias b_o", b_o)):
        if w is not None and w.numel() and not all_finite(w.detach()):
            raise ValueError(f"the attention's {what} hold NaN or inf; check the model's weights (a torn or "
                             "corrupted file?)")
    groups = torch.arange(H, device=W_v.device) // (H // G)
    U = W_o.detach().reshape(d, H, dh).permute(1, 0, 2)
    V = W_v.detach().reshape(G, dh, d)
    if G != H:                                   # each head's copy of its group's rows, made when first read
        V = partial(torch.index_select, V, 0, groups)
    offset = None
    if b_v is not None or b_o is not None:
        offset = torch.zeros(d, dtype=W_o.dtype, device=W_o.device)
        if b_v is not None:
            offset = offset + W_o.detach() @ b_v.detach().reshape(G, dh)[groups].reshape(-1)
        if b_o is not None:
            offset = offset + b_o.detach()
    return HeadTransports.unchecked(U, V, groups=groups, offset=offset)
