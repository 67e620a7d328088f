"""Does the adapter read this model right?  The walk against the module's own output, layer by layer.

Every metric of the book reads a layer through its adapter: the attention the model computed,
and head transports the adapter factors out of the model's weights.  If the adapter misreads
an architecture (a fused projection split the wrong way, an output map taken from the wrong
module), the walk rebuilt from them stops reproducing what the attention module computed.
:func:`verify` measures that per layer; :func:`check` refuses a model whose walk misses, before
any metric is computed on it.

Chapter: *Reading a real transformer as a connection walk*.
"""
from __future__ import annotations

import torch

from .adapters import adapter_for
from .extraction import attention_walks, tolerance
from .load import check_model

def verify(model, batch, *, layers=None, progress: bool = False) -> list[dict]:
    """Per layer, how far the walk rebuilt by the adapter misses the attention module's own output.

    Returns one dict per layer, in the model's order: ``{"layer": l, "error": e, "passage": i}``,
    where ``e = max_i ||walk_i(X_i) - out_i|| / ||out_i||`` over the batch's passages ``i``
    (on their real tokens), ``X_i`` the section entering the attention, ``out_i`` the module's
    output, ``"passage"`` the passage of the largest error, and ``"nonfinite"`` which of ``X_i``, ``out_i``
    and the walk first held NaN or inf (None when all are finite).  Non-finite weights are refused first,
    by name, and so are the meta device and a head layout that does not divide
    (:func:`connlap_lite.models.load.check_model`).  ``batch`` and ``layers`` are as
    for :func:`connlap_lite.attention_walks`.  Half-precision layers are compared in float32.

    >>> import torch
    >>> from transformers import GPT2Config, AutoModelForCausalLM
    >>> _ = torch.manual_seed(0)
    >>> config = GPT2Config(n_layer=2, n_head=4, n_embd=32, vocab_size=100, n_positions=64)
    >>> model = AutoModelForCausalLM.from_config(config, attn_implementation="eager").eval()
    >>> rows = verify(model, torch.randint(0, 100, (2, 10)))
    >>> [r["layer"] for r in rows], all(r["error"] < 1e-5 and r["nonfinite"] is None for r in rows)
    ([0, 1], True)
    """
    check_model(model, batch)
    rows = []
    for lw in attention_walks(model, batch, layers=layers, progress=progress):
        worst, where, broken = 0.0, 0, None
        for i in range(lw.tokens.shape[0]):
            error, nonfinite = lw.miss(i)
            broken = broken or nonfinite
            if not error <= worst:               # a NaN error is kept: it is the worst
                worst, where = error, i
        rows.append({"layer": lw.layer, "error": worst, "passage": where, "nonfinite": broken})
    return rows


def check(model, batch, tol: float | None = None, *, layers=None, progress: bool = False) -> list[dict]:
    """:func:`verify`, raising a ValueError that names every layer whose walk misses by more than ``tol``.

    ``tol`` defaults to :func:`connlap_lite.models.extraction.tolerance` (``1e-4`` in float32).  Returns :func:`verify`'s rows
    when every layer is within ``tol``.

    >>> import torch
    >>> from transformers import GPT2Config, AutoModelForCausalLM
    >>> config = GPT2Config(n_layer=1, n_head=2, n_embd=16, vocab_size=50, n_positions=32)
    >>> model = AutoModelForCausalLM.from_config(config, attn_implementation="eager").eval()
    >>> len(check(model, torch.randint(0, 50, (2, 6))))
    1
    >>> check(model, torch.randint(0, 50, (2, 6)), tol=0)
    Traceback (most recent call last):
    ...
    ValueError: tol must be a positive number such as 1e-4, got 0
    """
    if tol is None:
        tol = tolerance(model)
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not tol > 0:
        raise ValueError(f"tol must be a positive number such as 1e-4, got {tol!r}")
    rows = verify(model, batch, layers=layers, progress=progress)
    message = misses(model, rows, tol)
    if message:
        raise ValueError(message)
    return rows


def misses(model, rows: list[dict], tol: float) -> str | None:
    """The message naming every row of :func:`verify` above ``tol``, or None when all are within it."""
    bad = [r for r in rows if not r["error"] <= tol]
    if not bad:
        return None
    family = getattr(model.config, "model_type", type(model).__name__)
    broken = [r for r in bad if r.get("nonfinite")]
    if broken:
        dtype = next(model.parameters()).dtype
        each = "; ".join(f"layer {r['layer']} of {family}: {r['nonfinite']} holds NaN or inf (passage {r['passage']})"
                         for r in broken)
        fix = ("load the model with dtype=torch.float32" if dtype in (torch.float16, torch.bfloat16)
               else "check the scale of its weights and inputs")
        return (f"{each}: the forward pass overflows in {str(dtype).removeprefix('torch.')} or its inputs are not "
                f"finite, so nothing can be measured (this is not the adapter's error): {fix}")
    adapter = adapter_for(model).__name__.rsplit(".", 1)[-1]
    each = "; ".join(f"layer {r['layer']} of {family}: the walk misses the module's output by "
                     f"{short(r['error'])} (> {short(tol)})" for r in bad)
    return (f"{each}; the adapter misreads this architecture (connlap_lite/models/adapters/{adapter}.py: its "
            "value/output maps, module output or layers), so no metric of it can be trusted. "
            "Fix the adapter, or check the model's weights and precision")


def short(x: float) -> str:
    """``2.1e-2`` rather than ``2.1e-02``."""
    return f"{x:.1e}".replace("e-0", "e-").replace("e+0", "e+").replace(".0e", "e")
