"""What measuring a model holds in memory, from its configuration alone: no weights, no download.

``SHAPES``                          the published shapes of the models the large-model path names (GPT-2 124M
                                    to 1.5B, BERT base and large, Llama-3-8B): Hugging Face config arguments
                                    and the precision each checkpoint is stored in;
``config_of(name)``                 the Hugging Face config of one of ``SHAPES``;
``footprint(config, B, n)``         its parameters (counted on the meta device), the weights' bytes, one
                                    layer's ``(B, H, n, n)`` attention in float32 and the largest arrays of
                                    the per-head work (float64, from the factors: never a ``d x d`` matrix).

:mod:`connlap_lite.models.memory` bounds the same sizes for a loaded model and a batch, and refuses a batch whose peak does not
fit the machine before the forward starts.

Chapters: *E3* (the large-model path), *Performance*.
"""
from __future__ import annotations

import torch

from .._backend import check_int

# model id: (model_type, the checkpoint's precision, config arguments that differ from the type's defaults)
SHAPES: dict[str, tuple[str, torch.dtype, dict]] = {
    "gpt2": ("gpt2", torch.float32, {}),
    "gpt2-medium": ("gpt2", torch.float32, dict(n_layer=24, n_embd=1024, n_head=16)),
    "gpt2-large": ("gpt2", torch.float32, dict(n_layer=36, n_embd=1280, n_head=20)),
    "gpt2-xl": ("gpt2", torch.float32, dict(n_layer=48, n_embd=1600, n_head=25)),
    "bert-base-uncased": ("bert", torch.float32, {}),
    "bert-large-uncased": ("bert", torch.float32, dict(hidden_size=1024, num_hidden_layers=24,
                                                       num_attention_heads=16, intermediate_size=4096)),
    "meta-llama/Meta-Llama-3-8B": ("llama", torch.bfloat16, dict(
        hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
        num_key_value_heads=8, vocab_size=128256, rope_theta=500000.0, max_position_embeddings=8192)),
}


def config_of(name: str):
    """The Hugging Face config of model ``name`` of :data:`SHAPES`, built here (no download).

    >>> config_of("gpt2-medium").n_layer
    24
    """
    if name not in SHAPES:
        raise ValueError(f"name must be one of {', '.join(SHAPES)} (the shapes known here), got {name!r}")
    from transformers import AutoConfig

    kind, dtype, kw = SHAPES[name]
    return AutoConfig.for_model(kind, dtype=dtype, **kw)


def footprint(config, B: int, n: int) -> dict:
    """Sizes of what measuring a model of ``config`` on ``B`` passages of ``n`` tokens holds, in bytes.

    ``parameters``       every parameter, counted on a model built on the meta device (tied weights once);
    ``weight_bytes``     the weights in the config's precision (float32 where it names none);
    ``attention_bytes``  one layer's attention, ``B H n^2`` float32 numbers (what :func:`connlap_lite.attention_walks`
                         keeps at a time);
    ``head_bytes``       the largest arrays of the per-head work, in float64 from the factors (never a ``d x d``
                         matrix per head): the heads' stacked ``d x H d_h`` factors, their ``H d_h x H d_h`` Gram;
    ``edge_bytes``       the edge transports' cores, one ``G d_h x G d_h`` float64 matrix for each edge that
                         :func:`connlap_lite.measure.analysis.measure` reads at a layer (``record.EDGES`` x ``EDGE_PASSAGES``), in
                         one batch;
    ``ov_bytes``         every layer's value and output maps (``d x G d_h`` and ``H d_h x d``) in the weights'
                         precision: what each random-init seed of E2's data null keeps alive, its head transports
                         being views of those weights, while the trained model is measured;
    and the shape: ``layers``, ``heads``, ``groups``, ``d``, ``head_dim``.

    >>> f = footprint(config_of("gpt2"), 16, 128)
    >>> f["parameters"], f["weight_bytes"] == 4 * f["parameters"], f["attention_bytes"] == 16 * 12 * 128 ** 2 * 4
    (124439808, True, True)
    >>> f["ov_bytes"] == 12 * 2 * 768 * 768 * 4
    True
    """
    check_int(B, "B", low=1)
    check_int(n, "n", low=1)
    from transformers import AutoModel, AutoModelForCausalLM

    from .adapters import describe
    from .adapters.linear import is_encoder
    from ..verdicts.record import EDGE_PASSAGES, EDGES

    auto = AutoModel if is_encoder(config) else AutoModelForCausalLM
    with torch.device("meta"):
        model = auto.from_config(config)
    facts = describe(model)
    H, G, dh, d = facts["heads"], facts["groups"], facts["head_dim"], facts["d"]
    parameters = sum(p.numel() for p in model.parameters())
    dtype = getattr(config, "dtype", None) or torch.float32
    dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
    return {"parameters": parameters, "weight_bytes": parameters * dtype.itemsize,
            "attention_bytes": B * H * n * n * 4, "head_bytes": 8 * H * dh * max(d, H * dh),
            "edge_bytes": 8 * EDGES * min(B, EDGE_PASSAGES) * (G * dh) ** 2,
            "ov_bytes": facts["layers"] * (d * G * dh + H * dh * d) * dtype.itemsize,
            **{k: facts[k] for k in ("layers", "heads", "groups", "d", "head_dim")}}
