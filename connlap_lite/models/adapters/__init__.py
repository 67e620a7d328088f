"""One adapter per weight layout: how each head's value and output maps sit in a model's weights.

The attention itself needs no code per family: :func:`connlap_lite.attention_walks` reads every layer's
queries and keys as the model made them (after its rotary embedding, QK-norm, soft-capping and
grouped-query layout) and the mask it built, through transformers' attention interface
(:mod:`connlap_lite.models.rebuild`).  What differs from family to family is only where the weights are: a fused
QKV projection, GPT-2's ``Conv1D`` layout, an output projection outside the attention module, biases, the
norm that feeds the attention.  A new family provides that, as a module with the functions of
:class:`Adapter`, and one line in ``FAMILIES``; a layout that differs from another's in a few functions defines
only those, and ``FAMILIES`` takes the rest from the other's module by name (:func:`extend`: Phi-3 is Llama's
layout but for its fused value map).

Families (``model_type``): GPT-2; GPT-NeoX (Pythia); BERT, RoBERTa, XLM-RoBERTa, CamemBERT, ELECTRA;
DistilBERT; Phi-3; the decoders with ``q/k/v/o_proj`` (Llama, Mistral, Qwen2, Qwen3, Qwen2-MoE, Mixtral,
OLMo, OLMo2, OLMoE, Granite, Cohere, StableLM, Starcoder2, SmolLM3, Helium, Phi, gpt-oss, Gemma 2, Gemma 3).
A model type not in ``FAMILIES`` is read through the layout its attention modules have (:func:`by_layout`: Llama's
``q/k/v/o_proj``, as Arcee, Seed-OSS, Qwen3-MoE, EXAONE 4, ERNIE 4.5 and GLM-4 have), checked the first time it is
walked against the model's own attention on a few tokens, with an :class:`UntestedFamily` warning; it is refused
by name when no layout fits or the check fails (:func:`adapter_for`).
:func:`describe` gives a model's shape in one dict; :func:`is_encoder` says from a config alone whether
the model attends both ways (the one rule, which loading uses too). The layouts are transformers' from
:data:`TRANSFORMERS_FLOOR` on: :func:`check_transformers` refuses an older one where a model is first read.

Chapter: *Reading a real transformer as a connection walk*.
"""
from __future__ import annotations

import re
import warnings
from functools import lru_cache, partial
from importlib import metadata
from types import ModuleType, SimpleNamespace
from typing import Protocol

import torch

from . import bert, distilbert, gpt2, gpt_neox, llama, phi3
from .linear import is_encoder


# the floor of transformers in pyproject.toml's `models` extra (tests/contracts/test_deps.py holds the two equal): 4.45 to
# 4.57 misread GPT-2, BERT or Llama layers, 5.0 is the first with transformers.AttentionInterface, 5.0 to 5.3
# build a tied output layer untied on the meta device (connlap_lite.models.footprint's parameter counts), 5.4 cannot
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
# :func:`connlap_lite.measure.rivals.update_maps` reads it.


def extend(layout: ModuleType, base: ModuleType) -> SimpleNamespace:
    """The adapter of a layout that is ``base``'s but for the functions its own module ``layout`` defines.

    Each function of :class:`Adapter` is ``layout``'s where that module has it, else ``base``'s; ``__name__`` is
    ``layout``'s (the file :func:`connlap_lite.models.verify.check` names when a reading is wrong).

    >>> from connlap_lite.models.adapters import llama, phi3
    >>> adapter = extend(phi3, llama)
    >>> adapter.value_output is phi3.value_output, adapter.norm_gain is llama.norm_gain, adapter.__name__
    (True, True, 'connlap_lite.models.adapters.phi3')
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
# tests/models/test_families.py asserts that this is exactly what tests/tiny_models.py builds, so the two cannot drift;
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


# The layouts a model type not in FAMILIES may be read through, tried in order: each module's ``matches(model)``
# recognises its layout from the modules alone (no forward), its ``LAYOUT`` says in words what it looks for.
LAYOUTS: dict[str, Adapter] = {"llama": llama}
READ = "_connlap_layout"     # the attribute keeping, on a model of an unlisted type, ``(model_type, checked adapter)``


class UntestedFamily(UserWarning):
    """A model type not among the tested families is read through a known layout, checked on a few tokens only."""


def by_layout(model) -> str | None:
    """The name of the first of :data:`LAYOUTS` that ``model``'s attention modules have, or None.

    >>> from transformers import AutoModelForCausalLM, ArceeConfig, GPTNeoXConfig
    >>> small = dict(num_hidden_layers=1, num_attention_heads=2, hidden_size=16, intermediate_size=32, vocab_size=50)
    >>> [by_layout(AutoModelForCausalLM.from_config(c(**small))) for c in (ArceeConfig, GPTNeoXConfig)]
    ['llama', None]
    """
    return next((name for name, layout in LAYOUTS.items() if layout.matches(model)), None)


def refusal(kind, what: str = "") -> str:
    """Why a model of type ``kind`` (``what``: its class, named beside it) whose attention modules have none of
    :data:`LAYOUTS` is refused, and what to do."""
    tried = "; ".join(f"{name}: {layout.LAYOUT}" for name, layout in LAYOUTS.items())
    return (f"unsupported architecture {kind!r}{what}; supported families: {supported()}; a model type not among "
            f"them is read through a known weight layout, and its attention modules have none ({tried}): add an "
            "adapter for its layout and its type to FAMILIES (connlap_lite/models/adapters), or use a supported family")


def adapter_for(model, check=None) -> Adapter:
    """The adapter for ``model``'s family (its layout's module, or :func:`extend`'s), or a clear error for an
    unsupported family.

    A model type not in ``FAMILIES`` is read through the layout its attention modules have (:func:`by_layout`),
    and refused (ValueError) naming the layouts tried where none fits.  ``check(model, batch)``, the walk's largest
    miss of each attention module on ``batch`` (:mod:`connlap_lite.models.extraction` passes its own, which walks), checks
    that reading once per model: a miss refuses it, else an :class:`UntestedFamily` warning names the type and its
    layout, and the adapter checked is kept on the model.  Without ``check`` the layout is read unchecked (shapes:
    :func:`describe`).
    """
    check_transformers()
    kind = getattr(getattr(model, "config", None), "model_type", None)
    if kind in FAMILIES:
        return FAMILIES[kind]
    kept = getattr(model, READ, None)
    if kept is not None and kept[0] == kind:
        return kept[1]
    name = by_layout(model)
    if name is None:
        raise ValueError(refusal(kind, f" ({type(model).__name__})"))
    if check is None:
        return LAYOUTS[name]
    setattr(model, READ, (kind, LAYOUTS[name]))     # the check walks the model through it
    done = False
    try:
        batch = _probe(model)
        worst = check(model, batch)
        setattr(model, READ, (kind, _with_written(LAYOUTS[name], _written(model, LAYOUTS[name], batch))))
        done = True
    except (ValueError, RuntimeError, TypeError, AttributeError, IndexError, KeyError) as exc:
        raise ValueError(f"model type {kind!r} ({type(model).__name__}) is not among the tested families; its "
                         f"attention modules have the {name} layout (connlap_lite/models/adapters/{name}.py), but its walk "
                         f"read through that layout failed the check against them on a few tokens ({exc}): add an "
                         "adapter for its layout and its type to FAMILIES (connlap_lite/models/adapters), or use a supported "
                         f"family: {supported()}") from exc
    finally:
        if not done:
            delattr(model, READ)
    warnings.warn(f"model type {kind!r} is untested (not among the families the package's tests build): read through "
                  f"the {name} layout (connlap_lite/models/adapters/{name}.py), whose walk reproduces its attention "
                  f"modules on a few tokens (largest miss {worst:.1e}); its norm gain (head_defect_gain) is read by "
                  "that layout's rule, not checked", UntestedFamily, stacklevel=2)
    return getattr(model, READ)[1]


def _probe(model) -> dict:
    """A few tokens to check a layout on: two passages of 8 token ids, the second padded after 5."""
    vocab = getattr(model.config, "vocab_size", None) or model.get_input_embeddings().num_embeddings
    ids = torch.randint(0, vocab, (2, 8), generator=torch.Generator().manual_seed(0))
    return {"input_ids": ids, "attention_mask": torch.tensor([[1] * 8, [1] * 5 + [0] * 3])}


def _written(model, adapter, batch) -> tuple:
    """Per layer, the name of the module the attention's output goes into as it is (the norm EXAONE 4 and GLM-4
    apply to it before the residual sum, as Gemma 2 and OLMo2 do), or None: seen in one forward on ``batch``, as
    a model type's name cannot say it (the adapter's ``written``, which the rival readings replace the update at)."""
    names = {m: n for n, m in model.named_modules()}
    attention = adapter.layers(model)
    outputs, found = {}, [None] * len(attention)

    def keep(l):
        return lambda module, args, out: outputs.__setitem__(l, adapter.module_output(model, l, out))

    def take(l, child):
        def hook(module, args):
            if found[l] is None and args and l in outputs and args[0] is outputs[l]:
                found[l] = names[child]
        return hook

    handles = [a.register_forward_hook(keep(l)) for l, a in enumerate(attention)]
    for l, a in enumerate(attention):
        block = model.get_submodule(names[a].rpartition(".")[0])
        handles += [child.register_forward_pre_hook(take(l, child)) for child in block.children() if child is not a]
    device = model.get_input_embeddings().weight.device
    try:
        with torch.no_grad():
            model(**{k: v.to(device) for k, v in batch.items()})
    finally:
        for h in handles:
            h.remove()
    return tuple(found)


def _with_written(layout, names: tuple) -> SimpleNamespace:
    """``layout``'s adapter whose ``written`` is the module named in ``names`` (a name: a copy of the model reads its
    own module)."""
    return SimpleNamespace(__name__=layout.__name__, **{f: getattr(layout, f) for f in PROTOCOL},
                           written=partial(_named, names))


def _named(names: tuple, model, layer: int):
    return None if names[layer] is None else model.get_submodule(names[layer])


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
