"""One adapter per weight layout: how each head's value and output maps sit in a model's weights.

The attention itself needs no code per family: :func:`connlap_lite.attention_walks` reads every layer's
queries and keys as the model made them (after its rotary embedding, QK-norm, soft-capping and
grouped-query layout) and the mask it built, through transformers' attention interface
(:mod:`connlap_lite.rebuild`).  What differs from family to family is only where the weights are: a fused
QKV projection, GPT-2's ``Conv1D`` layout, an output projection outside the attention module, biases, the
norm that feeds the attention.  A new family provides that, as a module with the functions of
:class:`Adapter`, and one line in ``FAMILIES``; a layout that differs from another's in a few functions defines
only those, and ``FAMILIES`` takes the rest from the other's module by name (:func:`extend`: Phi-3 is Llama's
layout but for its fused value map).

Families (``model_type``): GPT-2; GPT-NeoX (Pythia); BERT, RoBERTa, XLM-RoBERTa, CamemBERT, ELECTRA;
DistilBERT; Phi-3; the decoders with ``q/k/v/o_proj`` (Llama, Mistral, Qwen2, Qwen3, Qwen2-MoE, Mixtral,
OLMo, OLMo2, OLMoE, Granite, Cohere, StableLM, Starcoder2, SmolLM3, Helium, Phi, gpt-oss, Gemma 2, Gemma 3).
:func:`describe` gives a model's shape in one dict; :func:`is_encoder` says from a config alone whether
the model attends both ways (the one rule, which loading uses too). The layouts are transformers' from
:data:`TRANSFORMERS_FLOOR` on: :func:`check_transformers` refuses an older one where a model is first read.

Chapter: *Reading a real transformer as a connection walk*.
"""
from __future__ import annotations

import re
from functools import lru_cache
from importlib import metadata
from types import ModuleType, SimpleNamespace
from typing import Protocol

import torch

from . import bert, distilbert, gpt2, gpt_neox, llama, phi3
from ._linear import is_encoder


# the floor of transformers in pyproject.toml's `models` extra (tests/test_deps.py holds the two equal): 4.45 to
# 4.57 misread GPT-2, BERT or Llama layers, 5.0 is the first with transformers.AttentionInterface, 5.0 to 5.3
# build a tied output layer untied on the meta device (connlap_lite.footprint's parameter counts), 5.4 cannot
# build the OLMo families' configurations with huggingface_hub 1.33 (a field typed int whose default is False), and
# up to 5.22 the Gemma-3 GGUF tokenizer is read without its BOS token (5.18-5.22) or with other tokens (5.17 and
# older), so that the book's Gemma-3 passages and numbers would differ from one transformers to the next
TRANSFORMERS_FLOOR = (5, 23, 0)


def at_floor(version: str) -> bool:
    """Whether a transformers version (its release numbers) is :data:`TRANSFORMERS_FLOOR` or later.

    >>> at_floor("5.23.0"), at_floor("5.24.0.dev0"), at_floor("5.15.1"), at_floor("4.57.6"), at_floor("")
    (True, True, False, False, False)
    """
    release = re.match(r"(\d+)(?:\.(\d+))?(?:\.(\d+))?", version)
    return release is not None and tuple(int(p or 0) for p in release.groups()) >= TRANSFORMERS_FLOOR


@lru_cache(maxsize=1)
def check_transformers() -> None:
    """Refuse, in one line with the fix, an installed transformers below :data:`TRANSFORMERS_FLOOR`.

    Checked where a model is first read (:func:`adapter_for`, :func:`connlap_lite.load_model`), from the
    installed version alone, and not on ``import connlap_lite``: the theory needs no transformers, and a runtime
    may hold an older one (Colab's) that only the ``models`` extra upgrades.

    >>> check_transformers()                # (this environment's transformers is at the floor or later)
    """
    try:
        found = metadata.version("transformers")
    except metadata.PackageNotFoundError:
        raise ImportError("connlap_lite reads models with transformers, which is not installed: run `%pip install "
                          "connlap-lite[models]` (pip install outside a notebook)") from None
    if not at_floor(found):
        need = ".".join(map(str, TRANSFORMERS_FLOOR))
        raise ImportError(f"connlap_lite needs transformers>={need}, found {found}: run `%pip install -U "
                          f"transformers` (pip install -U transformers outside a notebook), then restart the runtime")


class Adapter(Protocol):
    """What an adapter module provides (``model`` is the loaded Hugging Face model, ``layer`` an index)."""

    def layers(self, model) -> list[torch.nn.Module]:
        """The attention modules, one per layer: the modules that call transformers' attention interface."""

    def shape(self, model) -> tuple[int, int]:
        """``(H, G)``: query heads and key/value groups."""

    def value_output(self, model, layer: int) -> tuple:
        """``(W_v, b_v, W_o, b_o)`` as ``nn.Linear`` weights ``(out, in)`` (biases None where absent)."""

    def pre_norm(self, model, layer: int) -> torch.nn.Module | None:
        """The norm applied to the residual stream before the attention, or None (post-norm, or none)."""

    def norm_gain(self, model, layer: int) -> torch.Tensor | None:
        """The per-coordinate gain of the norm whose output enters the attention (the pre-norm; post-norm,
        the previous layer's output norm), or None."""

    def module_output(self, model, layer: int, out) -> torch.Tensor:
        """The attention module's output that the walk reproduces, from what the module returned (``out``)."""


PROTOCOL = ("layers", "shape", "value_output", "pre_norm", "norm_gain", "module_output")   # :class:`Adapter`'s
# An adapter may also define ``written(model, layer)``: the module whose output the block adds to the residual
# stream where that is not the output map (a norm applied to the attention's output), else None;
# :func:`connlap_lite.rivals.update_maps` reads it.


def extend(layout: ModuleType, base: ModuleType) -> SimpleNamespace:
    """The adapter of a layout that is ``base``'s but for the functions its own module ``layout`` defines.

    Each function of :class:`Adapter` is ``layout``'s where that module has it, else ``base``'s; ``__name__`` is
    ``layout``'s (the file :func:`connlap_lite.verify.check` names when a reading is wrong).

    >>> from connlap_lite.adapters import llama, phi3
    >>> adapter = extend(phi3, llama)
    >>> adapter.value_output is phi3.value_output, adapter.norm_gain is llama.norm_gain, adapter.__name__
    (True, True, 'connlap_lite.adapters.phi3')
    """
    own = vars(layout)
    return SimpleNamespace(__name__=layout.__name__, **{f: own[f] if f in own else getattr(base, f) for f in PROTOCOL})


FAMILIES: dict[str, Adapter] = {
    "gpt2": gpt2,
    "gpt_neox": gpt_neox,
    "bert": bert, "roberta": bert, "xlm-roberta": bert, "camembert": bert, "electra": bert,
    "distilbert": distilbert,
    "phi3": extend(phi3, llama),
    **{kind: llama for kind in llama.TYPES},
}

# The model types the package's tests build as tiny random models and check layer by layer (walk against the
# module's own output, every attention implementation, ``verify``): the families the book calls *tested*.
# tests/test_families.py asserts that this is exactly what tests/tiny_models.py builds, so the two cannot drift;
# FAMILIES may map more types (the same weight layout under another name) than are tested.
TESTED = ("gpt2", "bert", "roberta", "gpt_neox", "llama", "mistral", "qwen2", "gemma3_text", "qwen3", "olmo2",
          "olmo", "cohere", "stablelm", "phi", "phi3", "granite", "starcoder2", "helium", "smollm3", "gemma2",
          "mixtral", "qwen2_moe", "olmoe", "gpt_oss", "distilbert", "electra")


def supported() -> str:
    """The supported model types, one group per adapter (its types joined by "/")."""
    groups: dict[str, list[str]] = {}
    for kind, adapter in FAMILIES.items():
        groups.setdefault(adapter.__name__, []).append(kind)
    return ", ".join(sorted("/".join(kinds) for kinds in groups.values()))


def adapter_for(model) -> Adapter:
    """The adapter for ``model``'s family (its layout's module, or :func:`extend`'s), or a clear error for an
    unsupported family."""
    check_transformers()
    kind = getattr(getattr(model, "config", None), "model_type", None)
    if kind not in FAMILIES:
        raise ValueError(f"unsupported architecture {kind!r} ({type(model).__name__}); "
                         f"supported families: {supported()}")
    return FAMILIES[kind]


def describe(model) -> dict:
    """A model's shape as the adapters read it, in one dict.

    Keys: ``family`` (the config's ``model_type``), ``layers``, ``heads`` (``H``, query
    heads), ``groups`` (``G``, key/value groups), ``d`` (residual width), ``head_dim``
    (each head's value width) and ``encoder`` (True for bidirectional attention: :func:`is_encoder`, the
    rule :func:`connlap_lite.load_model` also loads by).

    >>> from transformers import GPTNeoXConfig, AutoModelForCausalLM
    >>> config = GPTNeoXConfig(num_hidden_layers=2, num_attention_heads=4, hidden_size=32,
    ...                        intermediate_size=64, vocab_size=100)
    >>> describe(AutoModelForCausalLM.from_config(config))
    {'family': 'gpt_neox', 'layers': 2, 'heads': 4, 'groups': 4, 'd': 32, 'head_dim': 8, 'encoder': False}
    """
    adapter = adapter_for(model)
    H, G = adapter.shape(model)
    W_v, _, W_o, _ = adapter.value_output(model, 0)
    return {"family": model.config.model_type, "layers": len(adapter.layers(model)), "heads": int(H),
            "groups": int(G), "d": int(W_o.shape[0]), "head_dim": int(W_v.shape[0] // G),
            "encoder": is_encoder(model.config)}
