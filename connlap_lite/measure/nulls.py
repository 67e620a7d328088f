"""Nulls: what a head, a model or a passage looks like without training, and the ablations measured beside them.

``rotation_null(heads, seed)``   ``W_O R W_V`` with ``R`` uniform on ``O(d_h)`` per head (each factor kept);
``gaussian_null(heads, seed)``   Gaussian factors of the same shapes (rank ``d_h``);
``q4_roundtrip(W, block)``       a weight matrix through symmetric 4-bit block quantisation and back
                                 (the ablation of the GGUF models' quantisation noise).

And the whole-model nulls and ablations that :func:`connlap_lite.measure.analysis.analyze` measures beside a trained model
(the random-init twins, ``random_like(model, seed)``, are built by :mod:`connlap_lite.models.twins`):

``shuffled(batch, sinks_fixed)`` each passage's tokens permuted (the sink tokens kept in place);
``quantise_q4(model)``           every linear weight of a model through ``q4_roundtrip``, in place.

Chapters: *E1*, *E2*, *Beyond*, *Scorecard*.
"""
from __future__ import annotations


import torch

from .._backend import check_int
from ..transports import HeadTransports, check_heads


def q4_roundtrip(W: torch.Tensor, block: int = 32) -> torch.Tensor:
    """Symmetric 4-bit block quantisation and back (like GGUF's Q4_0): per block of ``block``
    input weights, ``scale = max|w| / 7``, ``q = clip(round(w / scale), -8, 7)``, ``w' = q scale``."""
    if not isinstance(W, torch.Tensor) or W.ndim != 2 or not W.is_floating_point():
        raise ValueError(f"W must be a floating (out, in) weight matrix tensor, got "
                         f"{tuple(W.shape) if isinstance(W, torch.Tensor) else type(W).__name__}")
    check_int(block, "block", low=1)
    out, inp = W.shape
    pad = (-inp) % block
    Wp = torch.nn.functional.pad(W.float(), (0, pad)).reshape(out, -1, block)
    scale = Wp.abs().amax(-1, keepdim=True) / 7
    q = torch.where(scale > 0, Wp / scale.clamp_min(1e-30), torch.zeros_like(Wp)).round().clamp(-8, 7)
    return (q * scale).reshape(out, -1)[:, :inp].to(W.dtype)


def rotation_null(heads: HeadTransports, seed: int = 0) -> HeadTransports:
    """The factor-rotation null: ``W_O R W_V`` with ``R`` uniform on ``O(d_h)`` per head.

    Keeps each factor's own spectrum and breaks only their co-adaptation.  The QR factors of the
    result come from ``heads``' own (:meth:`connlap_lite.HeadTransports.rotated`).
    """
    check_heads(heads)
    check_int(seed, "seed", low=0)
    g = torch.Generator().manual_seed(seed)
    H, d, r = heads.U.shape
    A = torch.randn(H, r, r, generator=g, dtype=torch.float64)
    Q, R = torch.linalg.qr(A)
    Q = (Q * torch.sign(torch.diagonal(R, dim1=-2, dim2=-1))[:, None, :]).to(heads.U.device)
    return heads.rotated(Q)


def gaussian_null(heads: HeadTransports, seed: int = 0) -> HeadTransports:
    """Gaussian factors of the same shapes as ``heads`` (rank ``d_h``)."""
    check_heads(heads)
    check_int(seed, "seed", low=0)
    g = torch.Generator().manual_seed(seed)
    return HeadTransports(torch.randn(heads.U.shape, generator=g, dtype=torch.float64),
                          torch.randn(heads.V.shape, generator=g, dtype=torch.float64))


def shuffled(batch: dict, sinks_fixed: int, seed: int = 0) -> dict:
    """Each passage's tokens permuted, the first ``sinks_fixed`` and special last token kept in place."""
    ids = batch["input_ids"].clone()
    g = torch.Generator().manual_seed(seed)
    lo, hi = sinks_fixed, ids.shape[1] - (1 if sinks_fixed and ids.shape[1] > 2 else 0)
    for row in ids:
        perm = torch.randperm(hi - lo, generator=g) + lo
        row[lo:hi] = row[perm]
    return {"input_ids": ids, "attention_mask": batch["attention_mask"].clone()}


def quantise_q4(model):
    """Round-trip every ``nn.Linear`` weight of ``model`` through 4-bit block quantisation, in place.

    Shows how much GGUF's Q4 quantisation could move a metric (chapter *E2*: does 4-bit quantisation move the defects?).
    """
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.Linear):
                module.weight.copy_(q4_roundtrip(module.weight))
    return model
