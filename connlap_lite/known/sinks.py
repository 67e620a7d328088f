"""Attention sinks and the inputs that probe them (Gu et al., Clark et al.).

Gu et al.'s per-head score and sink rate, the two synthetic input families (uniformly random tokens,
one token repeated), the spread of the states over positions that their proposition sets to 0, and
the middle layers where Clark et al. report attention on [SEP].

Chapter: *Known results, reproduced*.
"""
from __future__ import annotations

import torch

from .distances import TINY

EPS = 0.3                 # Gu et al.'s threshold on a head's mean attention to the first token
INPUTS = ("natural", "random", "repeated")     # the three input families, in the order of Gu et al.'s ordering


def first_token_scores(A: torch.Tensor, k: int = 0) -> torch.Tensor:
    """Gu et al.'s score of every head: the mean attention paid to token ``k`` by the queries ``i >= k``.

    ``A`` is ``(..., H, n, n)`` (rows are queries); the result is ``(..., H)``.

    Examples
    --------
    >>> A = torch.zeros(1, 3, 3); A[0, :, 1] = 1.0          # one head, every query looks at token 1
    >>> first_token_scores(A, k=1)
    tensor([1.])

    Chapter: *Known results, reproduced*.
    """
    return A[..., k:, k].mean(-1)


def sink_rate(scores: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    """The share of heads, over all layers, whose score exceeds ``eps``: ``(..., L, H) -> (...)``.

    Examples
    --------
    >>> sink_rate(torch.tensor([[0.9, 0.1], [0.5, 0.3]]))     # 2 layers x 2 heads; 0.3 is not above 0.3
    tensor(0.5000, dtype=torch.float64)

    Chapter: *Known results, reproduced*.
    """
    return (scores > eps).double().mean((-2, -1))


def ordinary_ids(tokenizer) -> torch.Tensor:
    """The ids of the tokenizer's base vocabulary that are not special tokens.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> ordinary_ids(SimpleNamespace(all_special_ids=[0, 2], vocab_size=5))
    tensor([1, 3, 4])

    Chapter: *Known results, reproduced*.
    """
    special = set(tokenizer.all_special_ids)
    return torch.tensor([i for i in range(tokenizer.vocab_size) if i not in special])


def random_tokens(tokenizer, batch: dict, seed: int = 0) -> dict:
    """``batch`` with every ordinary token replaced by one drawn uniformly from :func:`ordinary_ids`;
    the special tokens ([CLS], [SEP], <bos>) stay where they are.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> tok = SimpleNamespace(all_special_ids=[0, 1], vocab_size=100)
    >>> ids = random_tokens(tok, {"input_ids": torch.tensor([[0, 7, 8, 9, 1]])})["input_ids"]
    >>> ids[0, 0].item(), ids[0, -1].item(), bool((ids[0, 1:-1] >= 2).all())
    (0, 1, True)

    Chapter: *Known results, reproduced*.
    """
    ids = batch["input_ids"].clone()
    special = torch.isin(ids, torch.tensor(tokenizer.all_special_ids, dtype=ids.dtype))
    pool = ordinary_ids(tokenizer)
    g = torch.Generator().manual_seed(seed)
    draw = pool[torch.randint(len(pool), tuple(ids.shape), generator=g)]
    ids = torch.where(special, ids, draw)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}


def repeated_tokens(tokenizer, n_passages: int, n_tokens: int, seed: int = 0) -> dict:
    """``n_passages`` passages, each one ordinary token (drawn with ``seed``) repeated ``n_tokens`` times,
    with no special token anywhere: every position holds the same token.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> ids = repeated_tokens(SimpleNamespace(all_special_ids=[0], vocab_size=100), 3, 5)["input_ids"]
    >>> ids.shape, bool((ids == ids[:, :1]).all())
    (torch.Size([3, 5]), True)

    Chapter: *Known results, reproduced*.
    """
    pool = ordinary_ids(tokenizer)
    g = torch.Generator().manual_seed(seed)
    pick = pool[torch.randint(len(pool), (n_passages,), generator=g)]
    ids = pick[:, None].expand(n_passages, n_tokens).clone()
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}


def position_spread(X: torch.Tensor) -> torch.Tensor:
    """``max_t ||x_t - x_0|| / ||x_0||`` over the tokens of each passage: ``(..., n, d) -> (...)``.

    0 when every position holds the same state (Gu et al.'s proposition).

    Examples
    --------
    >>> position_spread(torch.ones(2, 5, 3))
    tensor([0., 0.], dtype=torch.float64)

    Chapter: *Known results, reproduced*.
    """
    X = X.double()
    return (X - X[..., :1, :]).norm(dim=-1).amax(-1) / X[..., 0, :].norm(dim=-1).clamp_min(TINY)


def middle_layers(n_layers: int) -> list[int]:
    """The layers at the relative depth of BERT-base's layers 6 to 10 of 12 (0-based ``l / L`` in
    ``[5/12, 9/12]``), where Clark et al. report most attention on [SEP].

    Examples
    --------
    >>> middle_layers(12), middle_layers(6)
    ([5, 6, 7, 8, 9], [3, 4])

    Chapter: *Known results, reproduced*.
    """
    return [l for l in range(n_layers) if 5 / 12 - 1e-12 <= l / n_layers <= 9 / 12 + 1e-12]
