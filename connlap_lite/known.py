"""Known results, reproduced: the book's instruments against five published findings about attention.

Each function below is one published measurement, written as a formula on the walks that
:func:`connlap_lite.attention_walks` streams, so that the chapter and ``python -m connlap_lite
analyze MODEL --json`` (key ``known_results``) compute the same numbers.

=============================  =====================================================================
``first_token_scores(A)``      Gu et al.'s per-head score: mean attention to the first token
``sink_rate(scores, eps)``     share of heads (over all layers) whose score exceeds ``eps``
``random_tokens``,             the two synthetic inputs of Gu et al.: uniformly random tokens, and one
``repeated_tokens``            token repeated at every position
``position_spread(X)``         largest distance of a token's state from the first token's (relative)
``transported(heads, X)``      every head's transported vector ``T_h x_j``
``norm_weighted_walk(A, Y)``   Kobayashi et al.'s reading: edge weight times the norm of what it carries
``rank_one_residual(X)``       Dong et al.'s residual from rank one (relative, Frobenius)
``token_spread(X)``            largest range of a coordinate over the tokens
``column_sum_defect(P)``       distance of a walk from doubly stochastic (Sander et al.)
``head_matched_distance``      Bhojanapalli et al.'s comparison of heads in two layers
``known_results(name)``        everything above on one model and its random-init null (cached JSON)
``verdicts(report)``           the chapter's rule: agree / disagree / not comparable, per statement
=============================  =====================================================================

Chapter: *Known results, reproduced*.
"""
from __future__ import annotations

import hashlib
import json
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

import torch

from . import metrics as M
from ._files import atomic_write_text, read_json
from .adapters import adapter_for
from .extraction import attention_walks
from .models import cache_dir, load_model
from .text import passages as make_passages

# Bump whenever a measurement's definition (not merely its speed) changes: cached reports carry it.
SCHEMA = "2026-11-30.2"
EPS = 0.3                 # Gu et al.'s threshold on a head's mean attention to the first token
INPUTS = ("natural", "random", "repeated")
NULL_SEED = 1000          # the random-init null 'random0' of the empirical chapters: analysis.random_like(model, 1000)
PROPOSITION_TOL = 1e-4    # float32 rounding through a few dozen layers stays far below this (the chapter shows it)
COLLAPSE = 0.1            # "collapsed": the residual from rank one fell below this fraction of the input's
VERDICTS = ("agree", "disagree", "not comparable")
_TINY = 1e-300


# ----------------------------------------------------------------------------- attention sinks
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
    return (X - X[..., :1, :]).norm(dim=-1).amax(-1) / X[..., 0, :].norm(dim=-1).clamp_min(_TINY)


# ----------------------------------------------------------------------- weights and transports
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

    ``N_ij`` is proportional to ``P_ij ||T_ij x_j|| = ||sum_h A^h_ij T_h x_j||`` (the multi-head walk of
    T2: its weight times its edge transport), with ``A (..., H, n, n)`` the heads' attention and
    ``Y = transported(heads, X)`` of shape ``(..., H, n, d)``. The norm is computed from each token's
    ``H x H`` Gram matrix ``<T_h x_j, T_g x_j>``, never from the ``(n, n, d)`` messages.

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
    return W / W.sum(-1, keepdim=True).clamp_min(_TINY)


# ----------------------------------------------------------------------------- rank collapse
def rank_one_residual(X: torch.Tensor) -> torch.Tensor:
    """``||X - 1 xbar^T||_F / ||X||_F`` with ``xbar`` the mean token: ``(..., n, d) -> (...)``.

    The mean token is the best ``1 x^T`` in the Frobenius norm, so this is the relative distance of the
    token states from rank one (of that form); 0 exactly when every token holds the same vector.

    Examples
    --------
    >>> x = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    >>> float(rank_one_residual(torch.ones(6, 1, dtype=torch.float64) * x))
    0.0

    Chapter: *Known results, reproduced*.
    """
    X = X.double()
    return (X - X.mean(-2, keepdim=True)).norm(dim=(-2, -1)) / X.norm(dim=(-2, -1)).clamp_min(_TINY)


def token_spread(X: torch.Tensor) -> torch.Tensor:
    """The largest range ``max_i x_ia - min_i x_ia`` of a coordinate ``a`` over the tokens: ``(..., n, d) -> (...)``.

    A row-stochastic walk never increases it (each new token is a convex mix of the old ones).

    Examples
    --------
    >>> X = torch.tensor([[0.0, 1.0], [2.0, 1.5]])
    >>> P = torch.tensor([[0.5, 0.5], [0.25, 0.75]])
    >>> float(token_spread(X)), float(token_spread(P @ X))
    (2.0, 0.5)

    Chapter: *Known results, reproduced*.
    """
    return (X.amax(-2) - X.amin(-2)).amax(-1).double()


# ------------------------------------------------------------------------- doubly stochastic
def column_sum_defect(P: torch.Tensor) -> torch.Tensor:
    """``1/(2n) sum_j |sum_i P_ij - 1|`` of a row-stochastic walk: ``(..., n, n) -> (...)``.

    It is the total-variation distance between the uniform distribution and the distribution of the key
    that a uniformly drawn query picks: 0 for a doubly stochastic walk, ``(n - 1) / n`` when every query
    picks the same key.

    Examples
    --------
    >>> column_sum_defect(torch.full((4, 4), 0.25, dtype=torch.float64))
    tensor(0., dtype=torch.float64)
    >>> P = torch.zeros(4, 4, dtype=torch.float64); P[:, 0] = 1
    >>> column_sum_defect(P)
    tensor(0.7500, dtype=torch.float64)

    Chapter: *Known results, reproduced*.
    """
    n = P.shape[-1]
    return (P.sum(-2) - 1).abs().sum(-1) / (2 * n)


# --------------------------------------------------------------------- consecutive layers
def head_matched_distance(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """Mean over the heads of ``B`` of the walk distance to the closest head of ``A``.

    ``A``, ``B`` are ``(..., H, n, n)`` (two layers' heads on the same tokens); the walk distance is
    :func:`connlap_lite.metrics.walk_distance`, the mean total-variation distance between rows.

    Examples
    --------
    >>> I, U = torch.eye(3), torch.full((3, 3), 1 / 3)
    >>> float(head_matched_distance(torch.stack([I, U]), torch.stack([U, U])))   # each head of B finds U in A
    0.0

    Chapter: *Known results, reproduced*.
    """
    closest = [M.walk_distance(A, B[..., h:h + 1, :, :]).amin(-1) for h in range(B.shape[-3])]   # one head of B
    return torch.stack(closest, -1).mean(-1)                                              # at a time: small memory


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


# ------------------------------------------------------------------------------ measurement
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


def _lists(x: torch.Tensor) -> list:
    return x.detach().cpu().double().tolist()


def _sink_pass(model, batch: dict, spread: bool) -> dict:
    """First-token scores (and the spread of the residual stream over positions) on one input."""
    scores = []
    with residual_stream(model) as states:
        for lw in attention_walks(model, batch, progress=False):
            scores.append(first_token_scores(lw.attention.double()))
    S = torch.stack(scores, 1)                                             # (B, L, H)
    out = {"rate": _lists(sink_rate(S)), "score": _lists(S.mean(0))}
    if spread:
        out["spread"] = [_lists(position_spread(h)) for h in states]
    return out


def _natural_pass(model, batch: dict, encoder: bool) -> dict:
    """Every measurement on natural text, layer by layer."""
    res = {k: [] for k in ("mass_first", "mass_last", "mass_sinks", "norm_first", "norm_last", "norm_sinks",
                           "column_defect", "column_defect_nosink")}
    scores, walks, heads = [], [], []                   # heads: the last two layers' attention only
    for tag in ("", "2"):
        res["head_tv" + tag] = []
    with residual_stream(model) as states:
        for lw in attention_walks(model, batch, progress=False):
            A = lw.attention.double()                                      # (B, H, n, n)
            n = A.shape[-1]
            sinks = M.sink_columns(n, encoder)
            P = A.mean(1)
            N = norm_weighted_walk(A, transported(lw.transports, lw.inputs.float()))   # norms: float32 is plenty
            for name, W in (("mass", P), ("norm", N)):
                res[f"{name}_first"].append(_lists(M.sink_mass(W, [0])))
                res[f"{name}_last"].append(_lists(M.sink_mass(W, [n - 1])))
                res[f"{name}_sinks"].append(_lists(M.sink_mass(W, sinks)))
            res["column_defect"].append(_lists(column_sum_defect(P)))
            res["column_defect_nosink"].append(_lists(column_sum_defect(M.without_sinks(P, sinks))))
            scores.append(first_token_scores(A))
            walks.append(P)
            current = lw.attention.float()
            for back, tag in ((1, ""), (2, "2")):        # the head-matched distance to one and two layers back
                if len(heads) >= back:
                    res["head_tv" + tag].append(_lists(head_matched_distance(heads[-back], current)))
            heads = (heads + [current])[-2:]
    S = torch.stack(scores, 1)
    res["rate"], res["score"] = _lists(sink_rate(S)), _lists(S.mean(0))
    # rank collapse: (a) the layers' walks composed, with no skip path, on the embeddings; (b) the model's states
    Z = states[0].double()
    res["walk_residual"], res["walk_spread"] = [_lists(rank_one_residual(Z))], [_lists(token_spread(Z))]
    for P in walks:
        Z = (P / P.sum(-1, keepdim=True)) @ Z          # rows summed to 1 in float64, not float32's 1 +- 1e-7
        res["walk_residual"].append(_lists(rank_one_residual(Z)))
        res["walk_spread"].append(_lists(token_spread(Z)))
    res["state_residual"] = [_lists(rank_one_residual(h)) for h in states]
    # consecutive layers (step 1) and layers two apart (step 2): the E1 distances and the head-matched one
    causal = not encoder
    for step, tag in ((1, ""), (2, "2")):
        pairs = list(zip(range(len(walks) - step), range(step, len(walks))))
        res["tv" + tag] = [_lists(M.walk_distance(walks[a], walks[b])) for a, b in pairs]
        res["tv_norm" + tag] = [_lists(M.normalised_walk_distance(walks[a], walks[b], causal)) for a, b in pairs]
    return res


def measure(model, tokenizer, n_passages: int, n_tokens: int, *, seed: int = 0, texts=None) -> dict:
    """Every measurement of the chapter on ``model``: natural passages (as the empirical chapters read
    them), random tokens and one repeated token. Per-layer lists of per-passage values.

    Returns ``{"natural": {...}, "random": {"rate", "score"}, "repeated": {"rate", "score", "spread"}}``;
    the natural text adds the sink masses (``mass_*``, ``norm_*``), ``column_defect(_nosink)``,
    ``walk_residual``, ``walk_spread``, ``state_residual``, ``tv``, ``tv_norm``, ``head_tv`` (adjacent
    layers) and the same three with suffix ``2`` (layers two apart). :func:`known_results` calls it for
    the model and its null; the tests run it on tiny random models.

    Chapter: *Known results, reproduced*.
    """
    encoder = not adapter_for(model).mask(model, 0)["causal"]
    natural = make_passages(tokenizer, n_passages, n_tokens, seed=seed, texts=texts)
    out = {"natural": _natural_pass(model, natural, encoder)}
    out["random"] = _sink_pass(model, random_tokens(tokenizer, natural, seed), spread=False)
    out["repeated"] = _sink_pass(model, repeated_tokens(tokenizer, n_passages, n_tokens, seed), spread=True)
    return out


def absolute_positions(model) -> bool:
    """True if the model adds learned absolute position embeddings to its tokens (BERT, GPT-2).

    Examples
    --------
    >>> from transformers import BertConfig, BertModel
    >>> absolute_positions(BertModel(BertConfig(hidden_size=8, num_attention_heads=2, intermediate_size=8,
    ...                                         num_hidden_layers=1, vocab_size=10)))
    True

    Chapter: *Known results, reproduced*.
    """
    return any("position_embeddings" in name or name.endswith("wpe.weight") for name, _ in model.named_parameters())


def _key(name: str, **kw) -> str:
    blob = json.dumps({"name": name, "schema": SCHEMA, **kw}, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def _cached(path: Path, name: str, random_init: bool) -> dict | None:
    """The cached report at ``path``, or None (absent, unreadable or of another shape: a warning says which, and
    the caller measures again), as ``analysis`` treats its own cache."""
    report = read_json(path)
    if report is None:
        return None
    main = "random" if random_init else "trained"
    ok = (isinstance(report, dict) and report.get("schema") == SCHEMA and report.get("model") == name
          and isinstance(report.get("conditions"), dict) and {main, "random0"} <= set(report["conditions"])
          and isinstance(report.get("sink_rate"), dict))
    if not ok:
        warnings.warn(f"the cached measurement {path} is not a {SCHEMA} report on {name!r}; recomputing it",
                      stacklevel=3)
        return None
    return report


def known_results(name: str, *, n_passages: int = 8, n_tokens: int = 64, seed: int = 0, random_init: bool = False,
                  texts: list[str] | None = None, device: str = "cpu", cache: bool = True) -> dict:
    """The chapter's measurements on model ``name`` and on its random-init null, with the verdicts.

    Returns a JSON-able dict: model facts, ``sink_rate`` (``{condition: {input: mean rate}}`` for the
    conditions ``trained`` (or ``random`` with ``random_init``) and ``random0``, inputs ``natural``,
    ``random``, ``repeated``), ``conditions`` (every measurement, per layer and passage) and ``verdicts``
    (:func:`verdicts`). Cached as JSON in ``cache_dir() / "known"``, keyed by the arguments and
    :data:`SCHEMA`; the verdicts are recomputed on every call.

    Chapter: *Known results, reproduced*.
    """
    from .analysis import random_like

    args = dict(n_passages=n_passages, n_tokens=n_tokens, seed=seed, random_init=random_init, texts=texts,
                eps=EPS, null_seed=NULL_SEED)
    path = cache_dir() / "known" / f"{name.replace('/', '_')}-{_key(name, **args)}.json"
    report = _cached(path, name, random_init) if cache else None
    if report is not None:
        report["verdicts"] = verdicts(report)
        return report
    start = time.perf_counter()
    model, tok = load_model(name, device=device, random_init=random_init, seed=seed)
    adapter = adapter_for(model)
    H, G = adapter.shape(model)
    main = "random" if random_init else "trained"
    report = {"schema": SCHEMA, "model": name, "family": model.config.model_type,
              "encoder": not adapter.mask(model, 0)["causal"], "absolute_positions": absolute_positions(model),
              "layers": len(adapter.layers(model)), "heads": H, "passages": n_passages, "tokens": n_tokens,
              "seed": seed, "eps": EPS, "main": main, "conditions": {}}
    report["conditions"][main] = measure(model, tok, n_passages, n_tokens, seed=seed, texts=texts)
    null = random_like(model, NULL_SEED)
    del model
    report["conditions"]["random0"] = measure(null, tok, n_passages, n_tokens, seed=seed, texts=texts)
    del null
    report["sink_rate"] = {c: {i: float(torch.tensor(v[i]["rate"]).mean()) for i in INPUTS}
                           for c, v in report["conditions"].items()}
    report["seconds"] = time.perf_counter() - start
    if cache:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(report))
    report["verdicts"] = verdicts(report)
    return report


# --------------------------------------------------------------------------------- verdicts
def _mean(values) -> float:
    return float(torch.tensor(values, dtype=torch.float64).mean())


def _passages(values, layers=None) -> torch.Tensor:
    """Per-passage values ``(B,)``: a list of per-passage values, or per-layer lists averaged over ``layers``."""
    v = torch.tensor(values, dtype=torch.float64)
    if v.ndim == 1:
        return v
    return (v if layers is None else v[list(layers)]).mean(0)


def interval(diff: torch.Tensor, n_boot: int = 1000) -> tuple[float, float, float]:
    """Mean of per-passage values and its 95% percentile bootstrap interval (passages resampled).

    Examples
    --------
    >>> m, lo, hi = interval(torch.tensor([0.1, 0.2, 0.3, 0.4]))
    >>> lo <= m <= hi
    True

    Chapter: *Known results, reproduced*.
    """
    m, lo, hi = M.bootstrap_ci(diff, n_boot=n_boot)
    return float(m), float(lo), float(hi)


STATEMENTS = {   # key: (result, bibliography key, the published statement, a short label for the table)
    "sink_order": ("Attention sinks", "gu2025when",
                   "sink rate on natural text >= on random tokens >= on one repeated token, in every model",
                   "sink rate: natural >= random >= repeated"),
    "sink_repeated": ("Attention sinks", "gu2025when",
                      "sink rate 0 on one repeated token in models with rotary positions",
                      "sink rate 0 on one repeated token (rotary)"),
    "proposition": ("Attention sinks", "gu2025when",
                    "identical tokens, no absolute positions: every layer's states are equal at every position",
                    "one repeated token: equal states at every position"),
    "clark_sep": ("Special tokens", "clark2019what",
                  "more than half of the attention in the middle layers goes to [SEP]",
                  "over half of middle-layer attention on [SEP]"),
    "kobayashi_norm": ("Special tokens", "kobayashi2020attention",
                       "weighting each edge by the norm of the vector it carries removes most of the sink mass",
                       "norm weighting removes most sink mass"),
    "dong_walks": ("Rank collapse", "dong2021attention",
                   "attention alone, composed over the layers, drives the tokens to rank one",
                   "walks alone collapse to rank one"),
    "dong_skip": ("Rank collapse", "dong2021attention", "with the skip connections, the token states do not collapse",
                  "states with skips do not collapse"),
    "sinkformer": ("Doubly stochastic", "sander2022sinkformers",
                   "training brings attention closer to doubly stochastic",
                   "training approaches doubly stochastic"),
    "reuse": ("Consecutive layers", "bhojanapalli2021leveraging",
              "adjacent layers attend alike: more than layers two apart, and more than without training on language",
              "adjacent layers most alike, more than untrained"),
}


def _row(report, key, verdict, trained, null, tested=None) -> dict:
    result, cite, statement, _ = STATEMENTS[key]
    if verdict not in VERDICTS:
        raise ValueError(f"verdict must be one of {VERDICTS}, got {verdict!r}")
    return {"key": key, "result": result, "cite": cite, "statement": statement, "model": report["model"],
            "trained": trained, "null": null, "tested": tested or [], "verdict": verdict}


def _above(diff: torch.Tensor) -> tuple[bool, list]:
    """Whether the 95% interval of the mean of ``diff`` lies above 0, and ``[mean, lo, hi]``."""
    m, lo, hi = interval(diff)
    return lo > 0, [m, lo, hi]


def verdicts(report: dict) -> list[dict]:
    """The rule of the chapter, applied to one model's :func:`known_results` report.

    Every comparison is made passage by passage: the rule looks at the mean over passages of a
    per-passage difference and its 95% bootstrap interval (:func:`interval`). A published statement that
    one quantity exceeds another (or a threshold) **agrees** when that interval lies entirely on the
    published side of 0, and **disagrees** otherwise; Gu et al.'s ordering allows ties (>=), so it
    agrees unless one of its steps is reversed beyond the noise (an interval entirely below 0). A
    statement is **not comparable** where the model lacks what it is about. The statements:

    - ``sink_order``: natural - random and random - repeated sink rates (ordering, ties allowed);
    - ``sink_repeated``: agree if the repeated-token sink rate is 0 in every passage (exact); not
      comparable with absolute positions;
    - ``proposition``: agree if every layer's states differ across positions by at most
      :data:`PROPOSITION_TOL` (relative; exact up to float rounding); not comparable with absolute positions;
    - ``clark_sep``: the attention to the last token ([SEP]), averaged over :func:`middle_layers`, minus 1/2;
      not comparable in a decoder (it has no [SEP]);
    - ``kobayashi_norm``: half the attention-weighted sink mass minus the norm-weighted one, averaged over
      layers (sinks: [CLS] and [SEP] in an encoder, the first token in a decoder);
    - ``dong_walks``: :data:`COLLAPSE` times the embeddings' residual from rank one minus that of the
      composed walks' output; ``dong_skip``: the last states' residual minus ``COLLAPSE`` times the
      embeddings';
    - ``sinkformer``: the null's column-sum defect minus the trained one, averaged over layers; not
      comparable in a decoder (a causal walk is doubly stochastic only if it is the identity);
    - ``reuse``: both the head-matched distance of layers two apart minus that of adjacent layers, and the
      null's normalised walk distance of adjacent layers minus the trained one.

    Each row is ``{"key", "result", "cite", "statement", "model", "trained", "null", "tested", "verdict"}``:
    the numbers compared for the model (as trained, or the random model with ``random_init``) and for its
    random-init null, and ``[mean, lo, hi]`` of each difference tested.

    Examples
    --------
    >>> rows = verdicts(toy_report())
    >>> [(r["key"], r["verdict"]) for r in rows][:4]
    [('sink_order', 'agree'), ('sink_repeated', 'agree'), ('proposition', 'agree'), ('clark_sep', 'agree')]

    Chapter: *Known results, reproduced*.
    """
    main = report.get("main", "trained")
    c, z = report["conditions"][main], report["conditions"]["random0"]
    nat, rnd = c["natural"], z["natural"]
    absolute, encoder, L = report["absolute_positions"], report["encoder"], report["layers"]
    rows = []

    rate = {i: _passages(c[i]["rate"]) for i in INPUTS}
    rate0 = [_mean(z[i]["rate"]) for i in INPUTS]
    steps = [interval(rate["natural"] - rate["random"]), interval(rate["random"] - rate["repeated"])]
    reversed_ = any(hi < 0 for _, _, hi in steps)
    rows.append(_row(report, "sink_order", "disagree" if reversed_ else "agree",
                     [float(rate[i].mean()) for i in INPUTS], rate0, [list(s) for s in steps]))
    zero = bool((rate["repeated"] == 0).all())
    rows.append(_row(report, "sink_repeated", "not comparable" if absolute else ("agree" if zero else "disagree"),
                     float(rate["repeated"].mean()), rate0[2]))
    spread = max(max(v) for v in c["repeated"]["spread"])
    spread0 = max(max(v) for v in z["repeated"]["spread"])
    rows.append(_row(report, "proposition", "not comparable" if absolute else
                     ("agree" if spread <= PROPOSITION_TOL else "disagree"), spread, spread0))

    if encoder:
        mid = middle_layers(L)
        sep, sep0 = _passages(nat["mass_last"], mid), _passages(rnd["mass_last"], mid)
        ok, tested = _above(sep - 0.5)
        rows.append(_row(report, "clark_sep", "agree" if ok else "disagree", float(sep.mean()), float(sep0.mean()),
                         [tested]))
    else:
        rows.append(_row(report, "clark_sep", "not comparable", None, None))
    weight, norm = _passages(nat["mass_sinks"]), _passages(nat["norm_sinks"])
    ok, tested = _above(0.5 * weight - norm)
    rows.append(_row(report, "kobayashi_norm", "agree" if ok else "disagree",
                     [float(weight.mean()), float(norm.mean())], [_mean(rnd["mass_sinks"]), _mean(rnd["norm_sinks"])],
                     [tested]))

    walk, state = torch.tensor(nat["walk_residual"]), torch.tensor(nat["state_residual"])
    walk0, state0 = torch.tensor(rnd["walk_residual"]), torch.tensor(rnd["state_residual"])
    ok, tested = _above(COLLAPSE * walk[0] - walk[-1])
    rows.append(_row(report, "dong_walks", "agree" if ok else "disagree", [float(walk[0].mean()), float(walk[-1].mean())],
                     [float(walk0[0].mean()), float(walk0[-1].mean())], [tested]))
    ok, tested = _above(state[-1] - COLLAPSE * state[0])
    rows.append(_row(report, "dong_skip", "agree" if ok else "disagree", [float(state[0].mean()), float(state[-1].mean())],
                     [float(state0[0].mean()), float(state0[-1].mean())], [tested]))

    col, col0 = _passages(nat["column_defect"]), _passages(rnd["column_defect"])
    ok, tested = _above(col0 - col)
    rows.append(_row(report, "sinkformer", "not comparable" if not encoder else ("agree" if ok else "disagree"),
                     float(col.mean()), float(col0.mean()), [tested]))

    if not nat["head_tv2"]:                                   # fewer than three layers: no pair two apart
        rows.append(_row(report, "reuse", "not comparable", None, None))
        return rows
    adj, two = _passages(nat["head_tv"]), _passages(nat["head_tv2"])
    tvn, tvn0 = _passages(nat["tv_norm"]), _passages(rnd["tv_norm"])
    ok_a, tested_a = _above(two - adj)
    ok_b, tested_b = _above(tvn0 - tvn)
    rows.append(_row(report, "reuse", "agree" if ok_a and ok_b else "disagree",
                     [float(adj.mean()), float(two.mean()), float(tvn.mean())],
                     [_mean(rnd["head_tv"]), _mean(rnd["head_tv2"]), float(tvn0.mean())], [tested_a, tested_b]))
    return rows


def toy_report(n_layers: int = 3, n_passages: int = 3) -> dict:
    """A small report of the shape :func:`known_results` returns, with made-up numbers, for examples and tests.

    Each per-passage value is its base number times ``1 + 0.01 b`` for passage ``b``.

    Examples
    --------
    >>> rep = toy_report(n_layers=4)
    >>> rep["layers"], len(rep["conditions"]["trained"]["natural"]["walk_residual"])
    (4, 5)

    Chapter: *Known results, reproduced*.
    """
    L, B = n_layers, n_passages

    def pp(x):
        return [x * (1 + 0.01 * b) for b in range(B)]

    def cond(scale):
        zeros = [[0.0] * B for _ in range(L + 1)]
        nat = {"rate": pp(0.5 * scale), "mass_first": [pp(0.3 * scale)] * L, "mass_last": [pp(0.6 * scale)] * L,
               "mass_sinks": [pp(0.8 * scale)] * L, "norm_first": [pp(0.1)] * L, "norm_last": [pp(0.1)] * L,
               "norm_sinks": [pp(0.2)] * L, "column_defect": [pp(0.4 * scale)] * L,
               "column_defect_nosink": [pp(0.1)] * L,
               "walk_residual": [pp(1.0 / 10 ** k) for k in range(L + 1)], "state_residual": [pp(0.9)] * (L + 1),
               "walk_spread": zeros, "tv": [pp(0.1)] * (L - 1), "tv_norm": [pp(0.5 / scale)] * (L - 1),
               "head_tv": [pp(0.1)] * (L - 1), "tv2": [pp(0.2)] * (L - 2), "tv_norm2": [pp(0.7)] * (L - 2),
               "head_tv2": [pp(0.2)] * (L - 2)}
        return {"natural": nat, "random": {"rate": pp(0.25 * scale)},
                "repeated": {"rate": [0.0] * B, "spread": zeros}}

    return {"model": "toy", "encoder": True, "absolute_positions": False, "layers": L, "main": "trained",
            "conditions": {"trained": cond(1.0), "random0": cond(0.1)}}


def _fmt(x) -> str:
    if x is None:
        return "-"
    if isinstance(x, (list, tuple)):
        return " / ".join(_fmt(v) for v in x)
    if x == 0:
        return "0"
    return f"{x:.2g}" if abs(x) < 0.01 else f"{x:.2f}"


def verdict_table(reports: list[dict]) -> str:
    """The chapter's table in Markdown: one row per published statement, one column per model; each cell
    gives the verdict, the model's number(s) and, below them, the random-init null's.

    Examples
    --------
    >>> print(verdict_table([toy_report()]).splitlines()[2])
    | sink rate: natural >= random >= repeated {cite}`gu2025when` | **agree**<br>0.51 / 0.25 / 0<br>null 0.05 / 0.03 / 0 |

    Chapter: *Known results, reproduced*.
    """
    rows = {r["model"]: {x["key"]: x for x in verdicts(r)} for r in reports}
    models = [r["model"] for r in reports]
    lines = ["| published | " + " | ".join(f"`{m}`" for m in models) + " |", "|---|" + "---|" * len(models)]
    for key, (result, cite, statement, short) in STATEMENTS.items():
        cells = []
        for m in models:
            x = rows[m][key]
            numbers = "" if x["trained"] is None else f"<br>{_fmt(x['trained'])}<br>null {_fmt(x['null'])}"
            cells.append(f"**{x['verdict']}**{numbers}")
        lines.append(f"| {short} {{cite}}`{cite}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def verdict_counts(reports: list[dict]) -> str:
    """The opening box's Markdown: per published result, how many statement-model pairs got each verdict,
    and which ones disagree.

    Examples
    --------
    >>> print(verdict_counts([toy_report()]))
    - **Attention sinks** (3 statement-model pairs): *agree* 3
    - **Special tokens** (2 statement-model pairs): *agree* 2
    - **Rank collapse** (2 statement-model pairs): *agree* 2
    - **Doubly stochastic** (1 statement-model pairs): *disagree* 1
    - **Consecutive layers** (1 statement-model pairs): *agree* 1
    - **all** (9): *agree* 8, *disagree* 1, *not comparable* 0
    - *disagree*: `toy` (training approaches doubly stochastic)

    Chapter: *Known results, reproduced*.
    """
    counts: dict[str, dict[str, int]] = {}
    against: dict[str, list[str]] = {}
    for r in reports:
        for x in verdicts(r):
            c = counts.setdefault(x["result"], {})
            c[x["verdict"]] = c.get(x["verdict"], 0) + 1
            if x["verdict"] == "disagree":
                against.setdefault(r["model"], []).append(STATEMENTS[x["key"]][3])
    lines = []
    for result, c in counts.items():
        lines.append(f"- **{result}** ({sum(c.values())} statement-model pairs): "
                     + ", ".join(f"*{v}* {c[v]}" for v in VERDICTS if v in c))
    total = {v: sum(c.get(v, 0) for c in counts.values()) for v in VERDICTS}
    lines.append(f"- **all** ({sum(total.values())}): " + ", ".join(f"*{v}* {total[v]}" for v in VERDICTS))
    if against:
        lines.append("- *disagree*: " + "; ".join(f"`{m}` ({', '.join(k)})" for m, k in against.items()))
    return "\n".join(lines)
