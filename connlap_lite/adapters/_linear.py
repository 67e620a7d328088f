"""Shared by the adapters: per-head transports from ``nn.Linear``-layout value and output maps, the
per-head query-key scores from the attention module's own inputs, and whether a model is an encoder."""
from __future__ import annotations

import torch

from ..transports import HeadTransports


# model types whose attention looks both ways unless configured as a decoder; every other type is causal
ENCODER_TYPES = ("bert", "roberta", "xlm-roberta", "camembert", "distilbert", "electra")


def is_encoder(config) -> bool:
    """Whether a model of this config attends in both directions (an encoder), from its config alone.

    The one rule: :func:`connlap_lite.load_model` picks the model class by it, the encoder adapters'
    ``mask`` and :func:`connlap_lite.adapters.describe` answer by it.  An encoder type configured as a
    decoder (``is_decoder``, as a causal language-model head needs) is causal, as its attention is.

    >>> from transformers import BertConfig, GPT2Config
    >>> is_encoder(BertConfig()), is_encoder(BertConfig(is_decoder=True)), is_encoder(GPT2Config())
    (True, False, False)
    """
    return getattr(config, "model_type", None) in ENCODER_TYPES and not getattr(config, "is_decoder", False)


def head_transports(W_v, b_v, W_o, b_o, H: int, G: int) -> HeadTransports:
    """Factor ``T_h = W_o[:, head h] @ W_v[group g(h)]`` (column convention) for every head.

    ``W_v`` is ``(G*d_h, d)`` and ``W_o`` is ``(d, H*d_h)``, as ``nn.Linear`` stores them.
    The affine part ``c = W_o b_v[g(h)] + b_o`` (T1) is kept as ``.offset``.
    """
    d = W_o.shape[0]
    dh = W_v.shape[0] // G
    if W_v.shape != (G * dh, d) or W_o.shape != (d, H * dh):
        raise ValueError(f"value/output weights of shapes {tuple(W_v.shape)} and {tuple(W_o.shape)} do not fit "
                         f"H={H}, G={G}, d={d}")
    groups = torch.arange(H, device=W_v.device) // (H // G)
    U = W_o.detach().reshape(d, H, dh).permute(1, 0, 2)
    V = W_v.detach().reshape(G, dh, d)[groups]
    offset = None
    if b_v is not None or b_o is not None:
        offset = torch.zeros(d, dtype=W_o.dtype, device=W_o.device)
        if b_v is not None:
            offset = offset + W_o.detach() @ b_v.detach().reshape(G, dh)[groups].reshape(-1)
        if b_o is not None:
            offset = offset + b_o.detach()
    return HeadTransports(U, V, groups=groups, offset=offset)


def argument(args: tuple, kwargs: dict, position: int, name: str):
    """The module's argument ``name`` as its forward hook received it: by keyword, else at ``position``."""
    if name in kwargs:
        return kwargs[name]
    if len(args) > position:
        return args[position]
    raise ValueError(f"the attention module was called without {name!r}; this adapter cannot rebuild its scores")


def split_heads(x: torch.Tensor, head_dim: int) -> torch.Tensor:
    """``(B, n, k * head_dim)`` projections as ``(B, k, n, head_dim)``, one slice per head."""
    return x.view(*x.shape[:-1], -1, head_dim).transpose(1, 2)


def rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary position embedding of ``(B, k, n, d_h)`` queries or keys, the "rotate half" layout.

    ``cos`` and ``sin`` are the model's ``(B, n, r)`` position embeddings; only the first ``r``
    coordinates of each head turn (``r = d_h`` unless the family rotates part of the head).

    >>> x = torch.tensor([[[[1.0, 0.0]]]])               # one head, one token: (1, 0) turned by 90 degrees
    >>> rotary(x, torch.zeros(1, 1, 2), torch.ones(1, 1, 2)).flatten().tolist()
    [0.0, 1.0]
    """
    r = cos.shape[-1]
    turned, kept = x[..., :r], x[..., r:]
    half = r // 2
    rotated = torch.cat((-turned[..., half:], turned[..., :half]), dim=-1)
    turned = turned * cos.unsqueeze(1) + rotated * sin.unsqueeze(1)
    return turned if kept.shape[-1] == 0 else torch.cat((turned, kept), dim=-1)


def scores(q: torch.Tensor, k: torch.Tensor, scale: float, out: torch.Tensor | None = None) -> torch.Tensor:
    """Scaled scores ``scale * q_h k_{g(h)}^T`` of every query head, ``(B, H, n, n)``: a fresh tensor, or ``out``.

    ``q`` is ``(B, H, n, d_h)`` and ``k`` is ``(B, G, n, d_h)``: key group ``g`` serves the query heads
    ``g H/G, ..., (g + 1) H/G - 1`` (grouped-query attention), and no key is copied per head.  ``out``, a
    contiguous ``(B, H, n, n)`` tensor, is written in place of a fresh tensor (how
    :func:`connlap_lite.attention_walks` builds a layer's attention a passage at a time); scores of another
    dtype are made in ``q``'s and copied in.

    >>> q, k = torch.ones(1, 4, 3, 2), torch.ones(1, 2, 3, 2)
    >>> s = scores(q, k, 0.5)
    >>> tuple(s.shape), float(s[0, 3, 2, 1])
    ((1, 4, 3, 3), 1.0)
    >>> out = torch.empty(1, 4, 3, 3)
    >>> scores(q, k, 0.5, out=out) is out, bool(out.eq(s).all())
    (True, True)
    """
    B, H, n, dh = q.shape
    G = k.shape[1]
    if H % G:
        raise ValueError(f"{H} query heads cannot share {G} key groups evenly")
    q, kt = q.reshape(B, G, (H // G) * n, dh), k.transpose(-1, -2)
    if out is None:
        return torch.matmul(q, kt).mul_(scale).view(B, H, n, k.shape[2])
    if out.shape != (B, H, n, k.shape[2]) or not out.is_contiguous():
        raise ValueError(f"out must be a contiguous {(B, H, n, k.shape[2])} tensor, got {tuple(out.shape)}"
                         f"{'' if out.is_contiguous() else ' (not contiguous)'}")
    rows = out.view(B, G, (H // G) * n, k.shape[2])
    if out.dtype != q.dtype:                    # (autocast: half-precision scores into a float32 out)
        rows.copy_(torch.matmul(q, kt).mul_(scale))
        return out
    torch.matmul(q, kt, out=rows)
    return out.mul_(scale)
