"""What flows through a model's layers: the residual stream, and the vector each edge of a walk carries.

:func:`residual_stream` collects the states between the blocks while a model runs (hooks in a context
manager); :func:`transported` applies every head's transport to every token, and
:func:`norm_weighted_walk` weights each edge by the norm of what it carries (Kobayashi et al.).

Chapter: *Known results, reproduced*.
"""
from __future__ import annotations

from contextlib import contextmanager

import torch

from ..models.adapters import adapter_for
from .distances import TINY


def _blocks(model, attention_modules) -> list:
    """The transformer blocks: the module list whose k-th entry holds the k-th attention module."""
    for m in model.modules():
        if isinstance(m, torch.nn.ModuleList) and len(m) == len(attention_modules):
            if all(any(s is a for s in block.modules()) for block, a in zip(m, attention_modules)):
                return list(m)
    raise ValueError(f"cannot find the transformer blocks of {type(model).__name__}")


@contextmanager
def residual_stream(model):
    """Collect the residual stream while ``model`` runs: a list whose entry 0 is the input of the first
    block and entry ``l + 1`` the output of block ``l`` (``(B, n, d)`` each). The hooks are removed on exit.

    Examples
    --------
    >>> from transformers import BertConfig, BertModel
    >>> _ = torch.manual_seed(0)
    >>> bert = BertModel(BertConfig(hidden_size=16, num_attention_heads=2, intermediate_size=32,
    ...                             num_hidden_layers=2, vocab_size=50)).eval()
    >>> with torch.no_grad(), residual_stream(bert) as states:
    ...     out = bert(input_ids=torch.tensor([[1, 2, 3]]))
    >>> len(states), bool(torch.equal(states[-1], out.last_hidden_state))
    (3, True)

    Chapter: *Known results, reproduced*.
    """
    blocks = _blocks(model, adapter_for(model).layers(model))
    states: list = [None] * (len(blocks) + 1)

    def first(module, args, kwargs):
        states[0] = (args[0] if args else kwargs["hidden_states"]).detach().clone()

    def after(k):
        def hook(module, args, kwargs, output):
            out = output[0] if isinstance(output, tuple) else output
            states[k + 1] = out.detach().clone()
        return hook

    handles = [blocks[0].register_forward_pre_hook(first, with_kwargs=True)]
    handles += [b.register_forward_hook(after(k), with_kwargs=True) for k, b in enumerate(blocks)]
    try:
        yield states
    finally:
        for h in handles:
            h.remove()


def transported(heads, X: torch.Tensor) -> torch.Tensor:
    """Every head's transport applied to every token, ``T_h x_j``: ``(..., n, d) -> (..., H, n, d)``.

    ``heads`` is a :class:`connlap_lite.HeadTransports` (factors ``U (H, d, r)``, ``V (H, r, d)``); the
    product is taken through the factors.

    Examples
    --------
    >>> from connlap_lite import HeadTransports
    >>> heads = HeadTransports(torch.randn(2, 4, 1, dtype=torch.float64), torch.randn(2, 1, 4, dtype=torch.float64))
    >>> X = torch.randn(3, 4, dtype=torch.float64)
    >>> bool(torch.allclose(transported(heads, X)[1], X @ heads.dense()[1].T))
    True

    Chapter: *Known results, reproduced*.
    """
    U, V = heads.U.to(X.dtype), heads.V.to(X.dtype)
    Z = torch.einsum("hre,...ne->...hnr", V, X)
    return torch.einsum("hdr,...hnr->...hnd", U, Z)


def norm_weighted_walk(A: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    """Each edge weighted by the norm of the vector it carries, rows normalised.

    ``N_ij`` is proportional to ``P_ij ||T_ij x_j|| = ||sum_h A^h_ij T_h x_j||`` (the multi-head walk of the
    chapter *Multi-head attention is one edge-dependent connection walk*: its weight times its edge transport),
    with ``A (..., H, n, n)`` the heads' attention and ``Y = transported(heads, X)`` of shape ``(..., H, n, d)``.
    The norm is computed from each token's ``H x H`` Gram matrix ``<T_h x_j, T_g x_j>``, never from the
    ``(n, n, d)`` messages.

    Examples
    --------
    >>> A = torch.full((1, 2, 2), 0.5)                        # one head, uniform attention
    >>> Y = torch.tensor([[[3.0, 0.0], [0.0, 1.0]]])          # token 0 carries a vector three times longer
    >>> norm_weighted_walk(A, Y)
    tensor([[0.7500, 0.2500],
            [0.7500, 0.2500]])

    Chapter: *Known results, reproduced*.
    """
    G = torch.einsum("...hnd,...gnd->...nhg", Y, Y)
    sq = torch.einsum("...hij,...jhg,...gij->...ij", A.to(Y.dtype), G, A.to(Y.dtype))
    W = sq.clamp_min(0).sqrt()
    return W / W.sum(-1, keepdim=True).clamp_min(TINY)
