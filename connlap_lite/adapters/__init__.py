"""One adapter per architecture family: each maps a model's own layout to ours.

An adapter is a small module with these functions (``model`` is the loaded Hugging Face model):

``layers(model)``                the attention modules we hook, one per layer;
``shape(model)``                 ``(H, G)``: query heads and key/value groups;
``value_output(model, layer)``   ``(W_v, b_v, W_o, b_o)`` as ``nn.Linear`` weights ``(out, in)``;
``pre_norm(model, layer)``       the norm applied to the residual stream before attention, or None;
``norm_gain(model, layer)``      the per-coordinate gain of the norm whose output enters the attention
                                 (the pre-norm; post-norm, the previous layer's output norm), or None;
``module_output(model, layer, out)``  the attention module's output that the walk reproduces;
``mask(model, layer)``           ``{"causal": bool, "window": int | None}``;
``logits(model, layer, args, kwargs, out=None)``  the scaled query-key scores ``(B, H, n, n)`` of every
                                 query head, before any mask, from the attention module's inputs exactly as
                                 its forward hook receives them (``args``, ``kwargs``; the caller may cut
                                 them to one passage): after the family's rotary embedding, QK-norm and
                                 score soft-capping where the module applies them, each key/value group's
                                 keys shared by its query heads.  A fresh tensor in the module's dtype, which
                                 the caller may overwrite, or ``out`` where given (``_linear.scores``).

:func:`connlap_lite.attention_walks` turns ``logits`` plus ``mask`` and the batch's padding into the
attention probabilities one layer at a time, so the model itself may run any attention
implementation (PyTorch's fused SDPA included) and never has to return its attention.

Families: GPT-2; BERT; RoBERTa, XLM-RoBERTa, CamemBERT; Llama, Mistral, Qwen2; Gemma 3;
GPT-NeoX (Pythia).  :func:`describe` gives a model's shape in one dict; :func:`is_encoder` says from a
config alone whether the model attends both ways (the one rule, which loading uses too).
Adding a family means adding one file here and one line to ``FAMILIES``.
Chapter: *Reading a real transformer as a connection walk*.
"""
from __future__ import annotations

from types import ModuleType

from . import bert, gemma3, gpt2, gpt_neox, llama, roberta
from ._linear import is_encoder

FAMILIES: dict[str, ModuleType] = {
    "gpt2": gpt2,
    "bert": bert,
    "roberta": roberta, "xlm-roberta": roberta, "camembert": roberta,
    "llama": llama, "mistral": llama, "qwen2": llama,
    "gemma3_text": gemma3, "gemma3": gemma3,
    "gpt_neox": gpt_neox,
}

# what adapter_for's error lists: one entry per adapter, its model types joined by "/"
_FAMILY_NAMES = ("bert", "gemma3", "gpt2", "gpt_neox", "llama/mistral/qwen2", "roberta/xlm-roberta/camembert")


def adapter_for(model) -> ModuleType:
    """The adapter module for ``model``'s family; a clear error for an unsupported one."""
    kind = getattr(getattr(model, "config", None), "model_type", None)
    if kind not in FAMILIES:
        raise ValueError(f"unsupported architecture {kind!r} ({type(model).__name__}); "
                         f"supported families: {', '.join(_FAMILY_NAMES)}")
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
