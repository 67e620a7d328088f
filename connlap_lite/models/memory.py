"""Memory refused before it is spent: what a forward pass and its walks will hold, against what the machine has.

``peak_bytes(model, B, n)``       an upper bound of the memory that reading ``B`` passages of ``n`` tokens adds to
                                  the loaded model, from its configuration and the batch's size alone, in parts;
``available_bytes(device)``       what the machine has free for it (CPU: ``MemAvailable`` and the cgroup's limit;
                                  CUDA: the device's free memory); None where it cannot be known;
``check_memory(model, B, n)``     refuse, before the forward starts, a batch whose estimate exceeds what is
                                  available, naming the estimate, the memory and the arguments to change.

The estimate is an upper bound of the real peak within a factor :data:`FACTOR` (``tests/contracts/test_faults.py`` measures
the peak of :func:`connlap_lite.measure.analysis.measure` on a tiny model, resident memory over the run, against it).
:mod:`connlap_lite.models.footprint` gives the same sizes for the published shapes, without any weights.

Chapters: *Performance*, *E3* (the large-model path).
"""
from __future__ import annotations

import os

import torch

# The estimate is at most this many times the real peak on the tiny model the tests measure (its attention and
# walks dominate there); on a large model the weights' own activations weigh more and the bound is closer.
FACTOR = 4


def _facts(model) -> dict:
    from .adapters import describe

    facts = describe(model)
    config = getattr(model.config, "text_config", None) or model.config
    inner = next((v for v in (getattr(config, "intermediate_size", None), getattr(config, "n_inner", None))
                  if isinstance(v, int)), None)
    param = next(model.parameters(), None)
    return {**facts, "inner": inner or 4 * facts["d"], "vocab": int(getattr(config, "vocab_size", 0) or 0),
            "itemsize": max(4, param.element_size() if param is not None else 4)}


def peak_bytes(model, B: int, n: int, *, walks: int = 0, models: int = 0) -> dict:
    """What reading ``B`` passages of ``n`` tokens with ``model`` adds to its loaded weights, at most, in bytes:

    ``forward``    the forward pass's activations at one layer and what the reader holds of the previous one (the
                   inputs, queries, keys and values, the output, the MLP's inner width: ``B n (12 d + 3 inner +
                   3 (H + 2 G) d_h)`` numbers) and the last token's logits;
    ``attention``  one layer's ``(B, H, n, n)`` attention, four times over (the scores, their softmax, the fused
                   kernel's own and the previous layer's, in float32 or wider);
    ``walks``      ``walks`` float64 ``(B, n, n)`` arrays alive at once (:func:`connlap_lite.measure.analysis.measure` asks
                   for every layer's walks, kept for the sink mass, and 36 more: the last four layers' for the
                   separations and its metrics' temporaries, as many as its peak on a tiny model needs);
    ``heads``      the per-head work in float64 (the stacked factors and their Gram, the inputs, one per data null);
    ``models``     ``models`` more copies of the weights (random-init nulls built beside the model);
    and ``total``, their sum.

    >>> from transformers import AutoModelForCausalLM, LlamaConfig
    >>> m = AutoModelForCausalLM.from_config(LlamaConfig(num_hidden_layers=2, num_attention_heads=4,
    ...     num_key_value_heads=2, hidden_size=32, intermediate_size=64, vocab_size=100))
    >>> p = peak_bytes(m, 2, 64)
    >>> p["attention"] == 4 * 2 * 4 * 64 * 64 * 4, p["total"] == sum(v for k, v in p.items() if k != "total")
    (True, True)
    """
    f = _facts(model)
    H, G, dh, d, it = f["heads"], f["groups"], f["head_dim"], f["d"], f["itemsize"]
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    parts = {"forward": B * n * it * (12 * d + 3 * f["inner"] + 3 * (H + 2 * G) * dh) + 2 * B * f["vocab"] * 4,
             "attention": 4 * B * H * n * n * it,
             "walks": walks * B * n * n * 8,
             "heads": 8 * (4 * H * dh * max(d, H * dh) + 4 * B * n * d),
             "models": models * weights}
    parts["total"] = sum(parts.values())
    return parts


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cgroup_available() -> int | None:
    """What the process's cgroup (v2) still allows: ``memory.max - memory.current``; None without a limit."""
    try:
        with open("/proc/self/cgroup", encoding="ascii") as f:
            path = next((line.strip().split(":", 2)[2] for line in f if line.startswith("0::")), None)
        if path is None:
            return None
        folder = os.path.join("/sys/fs/cgroup", path.lstrip("/"))
        with open(os.path.join(folder, "memory.max"), encoding="ascii") as f:
            limit = f.read().strip()
        if limit == "max":
            return None
        with open(os.path.join(folder, "memory.current"), encoding="ascii") as f:
            return max(0, int(limit) - int(f.read().strip()))
    except (OSError, ValueError, IndexError):
        return None


def available_bytes(device="cpu") -> int | None:
    """The memory free for a computation on ``device``: a CUDA device's free memory; on the CPU the kernel's
    ``MemAvailable``, or the process's cgroup limit less its use where that is smaller; None where neither can be
    read (another system: then nothing is refused)."""
    device = torch.device(device)
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    if device.type != "cpu":
        return None
    found = [v for v in (_meminfo_available(), _cgroup_available()) if v is not None]
    return min(found) if found else None


class MemoryRefused(MemoryError, ValueError):
    """A batch whose estimated peak does not fit the memory available: refused before the forward starts."""


def _gib(x: int) -> str:
    return f"{x / 2 ** 30:.2f} GiB"


def check_memory(model, B: int, n: int, *, walks: int = 0, models: int = 0, what: str = "model") -> dict:
    """Refuse, before the forward starts, ``B`` passages of ``n`` tokens whose estimated peak
    (:func:`peak_bytes`) exceeds the memory available on the model's device (:func:`available_bytes`); the
    error names the estimate, the memory and the arguments to change.  Returns the estimate.

    >>> from transformers import AutoModelForCausalLM, LlamaConfig
    >>> m = AutoModelForCausalLM.from_config(LlamaConfig(num_hidden_layers=2, num_attention_heads=4,
    ...     num_key_value_heads=2, hidden_size=32, intermediate_size=64, vocab_size=100))
    >>> check_memory(m, 10 ** 6, 10 ** 6)
    Traceback (most recent call last):
    ...
    connlap_lite.models.memory.MemoryRefused: model: 1000000 passages of 1000000 tokens need about ... GiB at the peak beyond the weights (attention ... GiB, forward ... GiB, walks 0.00 GiB), but ... GiB are available on cpu: pass fewer passages or tokens (n_passages or n_tokens)
    """
    parts = peak_bytes(model, B, n, walks=walks, models=models)
    param = next(model.parameters(), None)
    device = param.device if param is not None else torch.device("cpu")
    free = available_bytes(device)
    if free is not None and parts["total"] > free:
        raise MemoryRefused(
            f"{what}: {B} passages of {n} tokens need about {_gib(parts['total'])} at the peak beyond the weights "
            f"(attention {_gib(parts['attention'])}, forward {_gib(parts['forward'])}, walks {_gib(parts['walks'])}"
            + (f", model copies {_gib(parts['models'])}" if models else "")
            + f"), but {_gib(free)} are available on {device}: pass fewer passages or tokens (n_passages or "
            "n_tokens)")
    return parts
