"""The attention rebuilt from the queries and keys the model itself made, through transformers' attention interface.

transformers 5 lets a model run an attention function registered under a name
(``transformers.AttentionInterface.register``): every attention module calls it with its queries and keys
*after* its own rotary embedding, QK-norm and scaling choices, in its grouped-query layout, with its values,
the mask the model built (``AttentionMaskInterface``, here SDPA's boolean format) and its options
(``sliding_window``, ``softcap``, learned sink logits ``s_aux``, ...).  :func:`routed` runs a model with
:data:`NAME`'s function while :func:`connlap_lite.attention_walks` streams it.  Every layer's output comes from the
model's own implementation: PyTorch's fused SDPA, or the model's own eager function where SDPA cannot
(soft-capping, sink logits).  For the layers being read, the call's queries, keys, mask and options are kept
(a :class:`Call`), and :meth:`Call.probabilities` turns them into the layer's ``(B, H, n, n)`` attention, in
float32 (float64 for a float64 model), a passage at a time, once the call has returned: not inside the forward,
beside its temporaries, but when the reader asks for it (and only the passage asked for, when only one is).  So
no rotary, norm or mask code of ours stands between the model and its walk.

Rows need not sum to 1: learned sink logits take part of each row's mass, which the walk keeps as it is
(never renormalised; the stochasticity defect reports it).

Chapter: *Reading a real transformer as a connection walk*.
"""
from __future__ import annotations

import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from .._backend import all_finite, compute_dtype

NAME = "connlap_lite"      # the attention implementation a streamed model runs (delegating to SDPA or eager)


@dataclass
class Call:
    """One call of a layer's attention function: what its attention is rebuilt from.

    ``query`` ``(B, H, n, d_h)`` and ``key`` ``(B, G, n, d_h)`` as the module made them; ``mask`` as the
    model built it (boolean, True where a query may attend a key, additive float, or None); ``causal``
    whether a missing mask means a causal one (SDPA's rule); ``scaling``, ``softcap``, ``sinks`` (the
    heads' learned sink logits, ``(H,)``) and ``bias`` (an additive position bias) as passed; ``window``
    the sliding window it was given, if any.
    """
    query: torch.Tensor
    key: torch.Tensor
    mask: torch.Tensor | None
    causal: bool
    scaling: float
    softcap: float | None = None
    sinks: torch.Tensor | None = None
    bias: torch.Tensor | None = None
    window: int | None = None

    def probabilities(self, dtype: torch.dtype | None = None, passage: int | None = None) -> torch.Tensor:
        """The layer's attention ``softmax(q k^T scaling + mask)`` ``(B, H, n, n)``, soft-capped and with sink
        logits where the call had them, built a passage at a time into one tensor (one passage's scores in the
        model's precision alive beside it); or passage ``passage``'s alone, ``(H, n, n)``.  Masked pairs are
        exactly 0; a query that may attend no key gets a row of zeros.

        >>> q = torch.tensor([[[[1.0], [0.0]]]]); k = torch.tensor([[[[0.0], [1.0]]]])
        >>> Call(q, k, None, causal=True, scaling=1.0).probabilities().tolist()
        [[[[1.0, 0.0], [0.5, 0.5]]]]
        >>> Call(q, k, None, causal=True, scaling=1.0).probabilities(passage=0).shape
        torch.Size([1, 2, 2])
        """
        B, H, n, _ = self.query.shape
        m = self.key.shape[2]
        chosen = range(B) if passage is None else [passage]
        A = torch.empty(len(chosen), H, n, m, dtype=dtype or compute_dtype(self.query), device=self.query.device)
        tril = None
        if self.mask is None and self.causal and n > 1:
            tril = torch.ones(n, m, dtype=torch.bool, device=A.device).tril(m - n)
        for row, b in enumerate(chosen):
            rows = A[row:row + 1]
            scores(self.query[b:b + 1], self.key[b:b + 1], self.scaling, out=rows)
            if self.softcap is not None:
                rows.div_(self.softcap).tanh_().mul_(self.softcap)
            if self.bias is not None:
                rows.add_(_row(self.bias, b, B))
            allowed = tril
            if self.mask is not None:
                mask = _row(self.mask, b, B)[..., :m]
                if mask.dtype == torch.bool:
                    allowed = mask
                else:                                   # additive: its -inf pairs are the ones not allowed
                    rows.add_(mask)
                    allowed = mask != float("-inf")
            softmax_(rows, allowed, self.sinks)
        return A if passage is None else A[0]


def _row(t: torch.Tensor, b: int, B: int) -> torch.Tensor:
    """Passage ``b``'s rows of a ``(B or 1, ...)`` tensor."""
    return t[b:b + 1] if t.shape[0] == B else t


def scores(q: torch.Tensor, k: torch.Tensor, scale: float, out: torch.Tensor | None = None) -> torch.Tensor:
    """Scaled scores ``scale * q_h k_{g(h)}^T`` of every query head, ``(B, H, n, m)``: a fresh tensor, or ``out``.

    ``q`` is ``(B, H, n, d_h)`` and ``k`` is ``(B, G, m, d_h)``: key group ``g`` serves the query heads
    ``g H/G, ..., (g + 1) H/G - 1`` (grouped-query attention), and no key is copied per head.  ``out``, a
    contiguous ``(B, H, n, m)`` tensor, is written in place of a fresh tensor; scores of another dtype are
    made in ``q``'s and copied in.

    >>> q, k = torch.ones(1, 4, 3, 2), torch.ones(1, 2, 3, 2)
    >>> s = scores(q, k, 0.5)
    >>> tuple(s.shape), float(s[0, 3, 2, 1])
    ((1, 4, 3, 3), 1.0)
    >>> out = torch.empty(1, 4, 3, 3)
    >>> scores(q, k, 0.5, out=out) is out, bool(out.eq(s).all())
    (True, True)
    """
    B, H, n, dh = q.shape
    G, m = k.shape[1], k.shape[2]
    if H % G:
        raise ValueError(f"{H} query heads cannot share {G} key groups evenly")
    q, kt = q.reshape(B, G, (H // G) * n, dh), k.transpose(-1, -2)
    if out is None:
        return torch.matmul(q, kt).mul_(scale).view(B, H, n, m)
    if out.shape != (B, H, n, m) or not out.is_contiguous():
        raise ValueError(f"out must be a contiguous {(B, H, n, m)} tensor, got {tuple(out.shape)}"
                         f"{'' if out.is_contiguous() else ' (not contiguous)'}")
    rows = out.view(B, G, (H // G) * n, m)
    if out.dtype != q.dtype:                    # half-precision scores into a float32 out
        rows.copy_(torch.matmul(q, kt).mul_(scale))
        return out
    torch.matmul(q, kt, out=rows)
    return out.mul_(scale)


def softmax_(x: torch.Tensor, allowed: torch.Tensor | None = None, sinks: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax over the last axis of ``(B, H, n, m)`` scores, in place: pairs not ``allowed`` exactly 0, a row with
    no allowed key all 0.  ``sinks`` ``(H,)`` are each head's learned sink logits: they take part in every row's
    normalisation but get no column, so those rows sum to less than 1 (what the model's own attention does).
    Without sinks it is PyTorch's own softmax (the one eager attention calls), written over the scores.

    >>> s = torch.zeros(1, 1, 2, 2)
    >>> softmax_(s.clone(), torch.tensor([[True, False], [True, True]])).tolist()
    [[[[1.0, 0.0], [0.5, 0.5]]]]
    >>> softmax_(s.clone(), torch.tensor([[False, False], [True, True]])).tolist()   # a query with no key
    [[[[0.0, 0.0], [0.5, 0.5]]]]
    >>> softmax_(s.clone(), sinks=torch.zeros(1)).tolist()            # one sink logit as large as the scores
    [[[[0.3333333432674408, 0.3333333432674408], [0.3333333432674408, 0.3333333432674408]]]]
    """
    if allowed is not None:
        x.masked_fill_(~allowed, float("-inf"))
    if sinks is None:
        torch.softmax(x, -1, out=x)
        if allowed is not None:                         # rows with no allowed key: softmax's NaN, made 0
            empty = ~allowed.any(-1, keepdim=True)
            if bool(empty.any()):
                x.masked_fill_(empty, 0.0)
        return x
    top = x.amax(-1, keepdim=True)
    sink = sinks.to(x.dtype).reshape(1, -1, 1, 1)
    top = torch.maximum(top, sink)
    top.masked_fill_(top == float("-inf"), 0.0)
    x.sub_(top).exp_()
    total = x.sum(-1, keepdim=True).add_((sink - top).exp_())
    return x.div_(total.clamp_min_(torch.finfo(x.dtype).tiny))


class _Route:
    """What a streamed model's attention calls do: which thread's calls are kept, for which modules, and how
    the module's output is computed (``eager``: the model's own eager function, whose weights the module returns)."""

    def __init__(self, modules, chosen, eager: bool, dry: bool = False):
        self.thread: threading.Thread | None = None
        self.layer = {id(m): i for i, m in enumerate(modules)}
        self.chosen = set(chosen)
        self.eager = eager
        self.dry = dry                  # keep the call only, computing no output (a module run again for its keys)
        self.calls: dict[int, Call] = {}

    def take(self, index: int) -> Call | None:
        return self.calls.pop(index, None)


_ROUTES: list[_Route] = []              # the streams running now (the attention function finds its own)
_LOCK = threading.Lock()


def attention_function(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
    """The attention function registered as :data:`NAME`: the module's output by the model's own implementation
    (SDPA; its eager function where SDPA cannot: soft-capping, sink logits, or a stream reading eager weights),
    and, inside a stream, the call kept for the layers being read (their attention is built from it later)."""
    route = next((r for r in tuple(_ROUTES) if r.thread is threading.current_thread() and id(module) in r.layer), None)
    softcap, sinks = kwargs.get("softcap"), kwargs.get("s_aux")
    if scaling is None:
        scaling = query.shape[-1] ** -0.5
    causal = kwargs.get("is_causal")
    causal = getattr(module, "is_causal", True) if causal is None else causal
    layer = None if route is None else route.layer[id(module)]
    call = None
    if layer in route.chosen if route is not None else False:
        call = Call(query=query, key=key, mask=attention_mask, causal=bool(causal), scaling=float(scaling),
                    softcap=softcap, sinks=None if sinks is None else sinks.detach(), bias=kwargs.get("position_bias"),
                    window=kwargs.get("sliding_window"))
        route.calls[layer] = call
    if route is not None and route.dry:
        out, weights = query.new_zeros(query.shape[0], query.shape[2], query.shape[1], value.shape[-1]), None
    elif (route is not None and route.eager) or softcap is not None or sinks is not None:
        out, weights = _eager(module)(module, query, key, value, _additive(attention_mask, causal, query, key),
                                      dropout=dropout, scaling=scaling, **kwargs)
    else:
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        out, weights = sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout,
                                              scaling=scaling, **kwargs)
    return out, weights


def _eager(module):
    """The model's own eager attention function (its modeling file's ``eager_attention_forward``)."""
    fn = getattr(sys.modules.get(type(module).__module__), "eager_attention_forward", None)
    if fn is None:
        raise ValueError(f"{type(module).__name__} has no eager attention function of its own "
                         "(eager_attention_forward in its modeling file), which soft-capping, sink logits and "
                         "attention='eager' need; use attention='logits' with an SDPA-capable model")
    return fn


def _additive(mask, causal: bool, query, key):
    """The model's mask as the additive float mask eager functions add to their scores (0 or the dtype's
    minimum; a missing causal mask made explicit, as eager attention never skips it)."""
    n, m = query.shape[2], key.shape[2]
    if mask is None:
        if not (causal and n > 1):
            return None
        mask = torch.ones(n, m, dtype=torch.bool, device=query.device).tril(m - n)[None, None]
    if mask.dtype != torch.bool:
        return mask
    low = torch.finfo(query.dtype).min
    return torch.zeros(mask.shape, dtype=query.dtype, device=mask.device).masked_fill_(~mask, low)


def register() -> None:
    """Register :data:`NAME` with transformers' attention and mask interfaces (idempotent); the mask the model
    builds for it is SDPA's (boolean, or None where SDPA's causal skip applies)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(NAME, attention_function)
    AttentionMaskInterface.register(NAME, sdpa_mask)


def again(model, module, args, kwargs) -> Call:
    """The call of ``module``'s attention on the inputs it had (``args``, ``kwargs``), the module run once more
    with our function computing no output: its queries and keys again, by the model's own code."""
    with routed(model, [module], [0], dry=True) as route:
        route.thread = threading.current_thread()
        with torch.no_grad():
            module.forward(*args, **kwargs)             # not module(...): no hook of anyone's runs again
    return route.take(0)


@contextmanager
def routed(model, modules, chosen, *, eager: bool = False, dry: bool = False):
    """Run ``model`` with :data:`NAME`'s attention while the block runs; yields the :class:`_Route` whose
    ``thread`` the caller sets to the thread whose calls are kept.  The model's own implementation is put back
    on exit, whatever happens.  A model that cannot switch (its attention does not go through transformers'
    interface) is refused, naming its type."""
    register()
    route = _Route(modules, chosen, eager, dry)
    with _LOCK:
        entry = _SWITCHED.get(id(model))
        if entry is None:
            before = getattr(model.config, "_attn_implementation", None)
            if before != NAME:
                _switch(model, NAME)
            entry = _SWITCHED[id(model)] = [0, before]
        entry[0] += 1
        _ROUTES.append(route)
    try:
        yield route
    finally:
        with _LOCK:
            _ROUTES.remove(route)
            entry[0] -= 1
            if entry[0] == 0:                           # the last stream on this model puts its implementation back
                del _SWITCHED[id(model)]
                if entry[1] != NAME:
                    _switch(model, entry[1])


_SWITCHED: dict[int, list] = {}         # id(model) -> [streams running on it, the implementation it had]


def _switch(model, implementation) -> None:
    import logging

    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity(logging.ERROR)            # a model that cannot switch says so below, in our words
    try:
        model.set_attn_implementation(implementation)
    finally:
        hf_logging.set_verbosity(level)
    if model.config._attn_implementation != implementation:
        raise ValueError(not_routed(model))


def not_routed(model) -> str:
    """Why a model cannot be streamed: its attention does not go through transformers' attention interface."""
    from .adapters import supported

    return (f"{type(model).__name__} (model type {getattr(model.config, 'model_type', None)!r}) does not route its "
            "attention through transformers' AttentionInterface, which attention_walks reads the queries and keys "
            f"from; supported families: {supported()}")


def check_finite(model, layer: int, what: str, t: torch.Tensor) -> None:
    """Stop where NaN or inf arises (half precision overflowing), naming the layer and the dtype."""
    if t is None:
        raise RuntimeError(f"layer {layer} of {type(model).__name__} returned no attention weights; "
                           "attention='eager' needs the model's eager attention function")
    if t.numel() and not all_finite(t):                # one reduction, no tensor of t's size
        bad = int((~torch.isfinite(t)).sum())
        if t.dtype in (torch.float16, torch.bfloat16) or getattr(model, "dtype", None) in (torch.float16,
                                                                                             torch.bfloat16):
            why = ("the activations overflow this precision; load the model with dtype=torch.bfloat16 "
                   "(float32's range) or dtype=torch.float32")
        else:
            why = "its weights or the batch give non-finite activations; check the weights (a torn or corrupted file?)"
        raise ValueError(f"layer {layer} of {type(model).__name__}: its {what} hold {bad} NaN or inf entries in "
                         f"{t.dtype}; {why}")
