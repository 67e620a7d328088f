"""The attention rebuilt from a layer's query-key scores, as the model's own softmax computes it.

:func:`connlap_lite.attention_walks` (``attention="logits"``) never asks the model for its attention: the
family's adapter gives the layer's scaled scores from the attention module's inputs, :func:`allowed_pairs`
says which query-key pairs the layer lets attend (causal, sliding-window and padding masks), and
:func:`probabilities` takes the softmax in place, in float32 (float64 for a float64 model).  So only one
``(B, H, n, n)`` tensor is written per layer, a passage at a time (one passage's queries and keys alive
beside it), and only when a reader first asks for ``lw.attention``.

Chapter: *Reading a real transformer as a connection walk*.
"""
from __future__ import annotations

import torch

from ._backend import _all_finite, compute_dtype


def allowed_pairs(tokens: torch.Tensor, mask: dict) -> torch.Tensor:
    """Which query-key pairs a layer lets attend: ``(B, 1, n, n)`` bool.

    ``tokens`` is the batch's ``(B, n)`` real-token mask (padding keys are never attended);
    ``mask`` is the adapter's ``{"causal": bool, "window": int | None}``: causal keeps keys
    ``j <= i``; a window ``w`` keeps keys fewer than ``w`` positions from the query
    (``i - j < w``, as Hugging Face's sliding-window layers do).

    >>> tokens = torch.tensor([[True, True, True, False]])
    >>> allowed_pairs(tokens, {"causal": True, "window": 2})[0, 0].int().tolist()
    [[1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 0]]
    """
    n = tokens.shape[1]
    i = torch.arange(n, device=tokens.device)[:, None]
    j = torch.arange(n, device=tokens.device)[None, :]
    ok = torch.ones(n, n, dtype=torch.bool, device=tokens.device)
    if mask.get("causal"):
        ok &= j <= i
    window = mask.get("window")
    if window is not None:
        ok &= (i - j < window) if mask.get("causal") else ((i - j).abs() < window)
    return ok[None, None] & tokens.bool()[:, None, None, :]


def probabilities(logits: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """Softmax over keys of the masked ``logits``, in float32 (float64 kept), overwriting ``logits`` when it
    already has that dtype: one ``(B, H, n, n)`` tensor, masked pairs exactly 0.

    A query with no allowed key (a padding query before any real token) gets a row of zeros.

    >>> s = torch.tensor([[[[0.0, 0.0], [1.0, 1.0]]]])
    >>> probabilities(s, allowed_pairs(torch.tensor([[True, True]]), {"causal": True})).tolist()
    [[[[1.0, 0.0], [0.5, 0.5]]]]
    """
    x = logits if logits.dtype in (torch.float32, torch.float64) else logits.float()
    x.masked_fill_(~allowed, float("-inf"))
    top = x.amax(-1, keepdim=True)
    top.masked_fill_(top == float("-inf"), 0.0)
    x.sub_(top).exp_()
    return x.div_(x.sum(-1, keepdim=True).clamp_min_(torch.finfo(x.dtype).tiny))


def _rebuild(model, adapter, layer: int, args, kwargs, tokens, mask):
    """A function of no argument that builds layer ``layer``'s attention from the module's inputs.

    One passage at a time: its queries and keys, its scores written into its slice of the one
    ``(B, H, n, n)`` tensor, its softmax taken there in place.  So beside the attention only one
    passage's queries and keys are ever alive, never the whole batch's (and, for a half-precision
    model, its scores in that precision before they are copied in)."""
    def build() -> torch.Tensor:
        hidden = args[0] if args else kwargs["hidden_states"]
        B, n = tokens.shape
        A = torch.empty(B, adapter.shape(model)[0], n, n, dtype=compute_dtype(hidden), device=hidden.device)
        with torch.no_grad():
            for b in range(B):
                rows = A[b:b + 1]
                s = adapter.logits(model, layer, *_passage(args, kwargs, b, B), out=rows)
                if s.data_ptr() != rows.data_ptr():     # an adapter that made a tensor of its own
                    rows.copy_(s)
                s = None
                probabilities(rows, allowed_pairs(tokens[b:b + 1], mask))
        _check_finite(model, layer, "attention", A)
        return A
    return build


def _passage(args: tuple, kwargs: dict, b: int, B: int) -> tuple[tuple, dict]:
    """The module's inputs for passage ``b`` alone: every tensor with the batch's ``B`` rows first (hidden
    states, position embeddings, masks) cut to row ``b``; the rest (rows shared by the batch) as they are."""
    if B == 1:
        return args, kwargs

    def cut(v):
        if isinstance(v, torch.Tensor) and v.ndim >= 2 and v.shape[0] == B:
            return v[b:b + 1]
        if isinstance(v, tuple) and any(isinstance(x, torch.Tensor) for x in v):
            return tuple(cut(x) for x in v)
        return v
    return tuple(cut(v) for v in args), {k: cut(v) for k, v in kwargs.items()}


def _check_finite(model, layer: int, what: str, t: torch.Tensor) -> None:
    """Stop where NaN or inf arises (half precision overflowing), naming the layer and the dtype."""
    if t is None:
        raise RuntimeError(f"layer {layer} of {type(model).__name__} returned no attention weights; "
                           "attention='eager' needs the model loaded with attn_implementation='eager' "
                           "(connlap_lite.load_model(name, attn_implementation='eager'))")
    if t.numel() and not _all_finite(t):                # one reduction, no tensor of t's size
        bad = int((~torch.isfinite(t)).sum())
        if t.dtype in (torch.float16, torch.bfloat16) or getattr(model, "dtype", None) in (torch.float16,
                                                                                             torch.bfloat16):
            why = ("the activations overflow this precision; load the model with dtype=torch.bfloat16 "
                   "(float32's range) or dtype=torch.float32")
        else:
            why = "its weights or the batch give non-finite activations; check the weights (a torn or corrupted file?)"
        raise ValueError(f"layer {layer} of {type(model).__name__}: its {what} hold {bad} NaN or inf entries in "
                         f"{t.dtype}; {why}")
