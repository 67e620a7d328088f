"""Decoders with separate ``q/k/v_proj`` and an output map in ``self_attn`` (Llama's layout, GQA or not).

Llama, SmolLM2/3, Mistral, Qwen2/3, Qwen2-MoE, Mixtral, OLMo, OLMo2, OLMoE, Granite, Cohere, StableLM,
Starcoder2, Helium, Phi (output map ``dense``), gpt-oss, Gemma 2 and Gemma 3.  Value biases where the family
has them (Qwen2).  The pre-attention norm is ``input_layernorm`` where there is one; its per-coordinate gain
is its weight, ``1 + w`` for Gemma's RMSNorm, none for OLMo's parameter-free LayerNorm; OLMo2 normalises the
attention's output instead (no pre-norm).  The walk reproduces ``self_attn``'s output, before any
post-attention norm.  Mixture-of-experts blocks change the MLP only, never the attention.

:func:`matches` recognises the layout from the modules alone, for a model type not in ``FAMILIES``
(:func:`connlap_lite.models.adapters.by_layout`).
"""
from __future__ import annotations

from torch.nn import Linear

TYPES = ("llama", "mistral", "qwen2", "qwen3", "qwen2_moe", "mixtral", "olmo", "olmo2", "olmoe",
         "granite", "cohere", "stablelm", "starcoder2", "smollm3", "helium", "phi", "gpt_oss", "gemma2",
         "gemma3", "gemma3_text")
PLUS_ONE = ("gemma2", "gemma3", "gemma3_text")         # RMSNorm scaling by 1 + w
# the attention's output normalised once more before it is added to the residual stream (post_attention_layernorm)
NORMED_OUTPUT = ("gemma2", "gemma3", "gemma3_text", "olmo2")
LAYOUT = "layers[i].self_attn with q_proj, k_proj, v_proj and o_proj (or dense) nn.Linear maps"   # matches's


def _layer(model, layer):
    return getattr(model, "model", model).layers[layer]


def layers(model):
    return [layer.self_attn for layer in getattr(model, "model", model).layers]


def matches(model) -> bool:
    """Whether ``model``'s modules have this layout (:data:`LAYOUT`): decoder layers under ``model.model`` (or
    ``model``), each with a ``self_attn`` whose maps are separate ``nn.Linear`` modules.

    >>> from transformers import AutoModelForCausalLM, GPT2Config, LlamaConfig
    >>> small = dict(num_hidden_layers=1, num_attention_heads=2, hidden_size=16, intermediate_size=32, vocab_size=50)
    >>> matches(AutoModelForCausalLM.from_config(LlamaConfig(**small)))
    True
    >>> matches(AutoModelForCausalLM.from_config(GPT2Config(n_layer=1, n_head=2, n_embd=16, vocab_size=50)))
    False
    """
    try:
        attention = layers(model)
    except (AttributeError, TypeError):
        return False
    return bool(attention) and all(
        all(isinstance(getattr(a, p, None), Linear) for p in ("q_proj", "k_proj", "v_proj"))
        and isinstance(getattr(a, "o_proj", getattr(a, "dense", None)), Linear) for a in attention)


def shape(model):
    c = model.config
    return c.num_attention_heads, getattr(c, "num_key_value_heads", None) or c.num_attention_heads


def value_output(model, layer):
    a = _layer(model, layer).self_attn
    o = a.o_proj if hasattr(a, "o_proj") else a.dense
    return a.v_proj.weight, a.v_proj.bias, o.weight, o.bias


def pre_norm(model, layer):
    return getattr(_layer(model, layer), "input_layernorm", None)


def module_output(model, layer, out):
    return out[0]


def norm_gain(model, layer):
    weight = getattr(pre_norm(model, layer), "weight", None)
    if weight is None:
        return None
    return 1.0 + weight if model.config.model_type in PLUS_ONE else weight


def written(model, layer):
    """The module whose output the block adds to the residual stream, where it is not the output map: the norm
    Gemma 2 and 3 and OLMo2 apply to the attention's output (``post_attention_layernorm``); None elsewhere."""
    return _layer(model, layer).post_attention_layernorm if model.config.model_type in NORMED_OUTPUT else None
