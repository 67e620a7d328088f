"""Streaming extraction: a real model's attention layers as connection walks, one layer at a time.

The model runs once with a pre-hook on every attention module that keeps the module's
inputs (the hidden states after the pre-attention norm, the mask, the rotary tables).
The hooks live in a context manager and are gone before the first layer is yielded,
whatever happens.  Each layer's attention module is then run again on its saved
inputs, so only one layer's ``(B, H, n, n)`` attention is alive at a time.

Chapter: *Reading a real transformer as a connection walk*.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

import torch

from .adapters import adapter_for
from .adapters._linear import head_transports as _factor
from .attention import walk_from_heads
from .transports import HeadTransports
from .walks import ConnectionWalk


def head_transports(model, layer: int) -> HeadTransports:
    """Layer ``layer``'s head transports ``T_h = W_O^h W_V^{g(h)}``, factored.

    ``.dense()`` gives the ``(H, d, d)`` matrices in THEORY.md's column convention;
    ``.offset`` is the affine part ``c`` from the value and output biases (or None);
    ``.groups[h]`` is the key/value group ``g(h)``.

    Chapter: *Reading a real transformer as a connection walk*.
    """
    adapter = adapter_for(model)
    n_layers = len(adapter.layers(model))
    if not isinstance(layer, int) or not 0 <= layer < n_layers:
        raise ValueError(f"layer must be an int in [0, {n_layers}), got {layer!r}")
    H, G = adapter.shape(model)
    return _factor(*adapter.value_output(model, layer), H, G)


@contextmanager
def captured_inputs(model, modules):
    """Keep each module's call ``(args, kwargs)`` while the block runs; hooks always removed."""
    saved: dict[int, tuple] = {}

    def hook(index):
        def pre(module, args, kwargs):
            saved[index] = (args, kwargs)
        return pre

    handles = [m.register_forward_pre_hook(hook(i), with_kwargs=True) for i, m in enumerate(modules)]
    try:
        yield saved
    finally:
        for h in handles:
            h.remove()


@dataclass
class LayerWalks:
    """One layer of a batch, read as connection walks.

    Attributes
    ----------
    layer : int
    attention : (B, H, n, n) the heads' attention, as the model computed it
    transports : HeadTransports, the layer's head transports (with ``.offset``)
    inputs : (B, n, d) hidden states entering the attention (after any pre-norm)
    output : (B, n, d) the attention module's own output (what the walk reproduces)
    tokens : (B, n) bool, True for real (non-padding) tokens
    mask : ``{"causal": bool, "window": int | None}`` the mask the model used
    """

    layer: int
    attention: torch.Tensor
    transports: HeadTransports
    inputs: torch.Tensor
    output: torch.Tensor
    tokens: torch.Tensor
    mask: dict = field(default_factory=dict)

    def walk(self, i: int, dtype: torch.dtype | None = None) -> ConnectionWalk:
        """Passage ``i``'s multi-head walk (T2) on its real tokens.

        Half precision is upcast to float32 unless ``dtype`` says otherwise.
        """
        if not 0 <= i < self.attention.shape[0]:
            raise ValueError(f"i must be a passage index in [0, {self.attention.shape[0]}), got {i}")
        keep = self.tokens[i]
        dtype = dtype or (torch.float32 if self.attention.dtype in (torch.float16, torch.bfloat16)
                          else self.attention.dtype)
        A = self.attention[i][:, keep][:, :, keep].to(dtype)
        heads = HeadTransports(self.transports.U.to(dtype), self.transports.V.to(dtype))
        offset = None if self.transports.offset is None else self.transports.offset.to(dtype)
        return walk_from_heads(A, heads, offset=offset)

    def section(self, i: int, dtype: torch.dtype | None = None) -> torch.Tensor:
        """The input section of passage ``i`` on its real tokens, ``(n_i, d)``."""
        x = self.inputs[i][self.tokens[i]]
        return x.to(dtype) if dtype else x

    def reference(self, i: int) -> torch.Tensor:
        """The module's own output for passage ``i`` on its real tokens."""
        return self.output[i][self.tokens[i]]


def _as_batch(batch, device):
    if isinstance(batch, torch.Tensor):
        batch = {"input_ids": batch}
    if not isinstance(batch, dict) or "input_ids" not in batch:
        raise TypeError("batch must be a tensor of token ids or a dict with 'input_ids' "
                        "(and optionally 'attention_mask'), e.g. the output of connlap_lite.passages")
    ids = batch["input_ids"]
    if ids.ndim != 2:
        raise ValueError(f"input_ids must have shape (batch, tokens), got {tuple(ids.shape)}")
    mask = batch.get("attention_mask")
    if mask is None:
        mask = torch.ones_like(ids)
    return {"input_ids": ids.to(device), "attention_mask": mask.to(device)}


def _forward_options(model) -> dict:
    """No key/value cache; and for a language model, logits for the last token only (the LM
    head over the whole passage is wasted work here)."""
    import inspect

    options = {"use_cache": False}
    if "logits_to_keep" in inspect.signature(model.forward).parameters:
        options["logits_to_keep"] = 1
    return options


def _device_of(model):
    return next(model.parameters()).device


def attention_walks(model, batch, *, layers=None, progress: bool = True) -> Iterator[LayerWalks]:
    """Yield every attention layer of ``model`` on ``batch`` as a :class:`LayerWalks`.

    Parameters
    ----------
    model : a supported Hugging Face model (see :mod:`connlap_lite.adapters`), loaded with
        ``attn_implementation="eager"`` (as :func:`connlap_lite.load_model` does).
    batch : token ids ``(B, n)`` or a dict with ``input_ids`` and ``attention_mask``
        (right padding for passages of unequal length).
    layers : iterable of layer indices, default all.
    progress : show a progress bar over layers.

    Memory stays at one layer's attention (plus every layer's ``(B, n, d)`` input).

    Chapter: *Reading a real transformer as a connection walk*.
    """
    adapter = adapter_for(model)
    modules = adapter.layers(model)
    chosen = range(len(modules)) if layers is None else list(layers)
    for l in chosen:
        if not 0 <= l < len(modules):
            raise ValueError(f"layers must hold indices in [0, {len(modules)}), got {l}")
    if getattr(model.config, "_attn_implementation", "eager") != "eager":
        raise ValueError("the model must use eager attention to expose its attention weights; load it with "
                         "attn_implementation='eager' (connlap_lite.load_model does)")
    inputs = _as_batch(batch, _device_of(model))
    H, G = adapter.shape(model)
    with torch.no_grad():
        with captured_inputs(model, modules) as saved:
            model(**inputs, **_forward_options(model))
        saved = {l: saved[l] for l in chosen}
        tokens = inputs["attention_mask"].bool()
        steps = chosen
        if progress:
            from tqdm.auto import tqdm
            steps = tqdm(chosen, desc=f"{type(model).__name__} layers", leave=False)
        for l in steps:
            args, kwargs = saved.pop(l)
            out = modules[l](*args, **kwargs)
            hidden = args[0] if args else kwargs["hidden_states"]
            yield LayerWalks(
                layer=l,
                attention=out[1],
                transports=_factor(*adapter.value_output(model, l), H, G),
                inputs=hidden,
                output=adapter.module_output(model, l, out),
                tokens=tokens,
                mask=adapter.mask(model, l),
            )
