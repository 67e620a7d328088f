"""The rival readings' forwards: what each layer's attention writes into the residual stream, and what removing
it costs.

The claims E1 and E2 read attention as a walk that settles and transports that become isometries.  Published
readings fit the same data otherwise: layers that write little and can be dropped, a dominant ``W_O W_V``
direction that the states tilt towards (a power iteration), a self-loop.  Their formulas are in
:mod:`connlap_lite.measure.metrics` (``update_ratio``, ``next_token_loss``, ``representation_change``,
``direction_alignment``, ...); the forwards they need are here, outside the walk's stream:

``output_projections(model)``    every layer's attention output map;
``update_maps(model)``           every layer's module whose output is the update added to the residual stream (the
                                 output map, or the norm Gemma 2 and 3 and OLMo2 apply to its output);
``replaced_outputs(model, ...)`` a context manager that replaces layers' updates (zero, a mean) and always
                                 removes its hooks;
``recorded_outputs(model)``      a context manager that keeps every layer's update of the forwards run inside;
``captured(model)``              a context manager that keeps each layer's residual stream (its block's input) and
                                 update from the forward run inside (``analyze`` reads them from the walk's own
                                 forward), read by ``update_measures``;
``layer_updates(model, batch)``  the same from a forward of its own: each layer's update ratio, the alignment of the states after its
                                 update with given directions, and the intact model's loss (decoders) or final
                                 states (encoders);
``kept_blocks(model)``            a context manager that keeps every block's output of the forward run inside;
``skipped_blocks(model, ...)``   a context manager inside which the blocks before a layer return those outputs
                                 instead of running again (a forward that changes layer ``l`` runs ``l`` onwards);
``ablation_costs(...)``          per layer, the cost of zero- and mean-ablating that layer's update.

Decoders' cost is the rise in next-token loss on the same passages (nats); encoders have no loss, so their
stated proxy is the relative change of the final representations (:func:`metrics.representation_change`).
A mean ablation puts the layer's mean update (over every token of every passage) in place of each token's.

Chapters: *E1*, *E2*, *Beyond*.
"""
from __future__ import annotations

from contextlib import contextmanager

import torch

from . import metrics as M
from ..models.adapters import adapter_for
from ..models.extraction import as_batch, device_of, forward_options

LOGIT_BYTES = 2 ** 28     # at most this many bytes of logits alive at once (passages are run in chunks)


def output_projections(model) -> list[torch.nn.Module]:
    """Every layer's attention output map (found by its weight, the adapter's ``W_O``: ``o_proj``, ``dense``,
    ``c_proj``, BERT's ``attention.output.dense``); its output is the update, unless a norm follows it
    (:func:`update_maps`)."""
    adapter = adapter_for(model)
    by_weight = {m.weight.data_ptr(): m for m in model.modules() if isinstance(getattr(m, "weight", None), torch.Tensor)
                 and not isinstance(m, torch.nn.Embedding)}
    out = []
    for layer in range(len(adapter.layers(model))):
        W_o = adapter.value_output(model, layer)[2]
        module = by_weight.get(W_o.data_ptr())
        if module is None:
            raise RuntimeError(f"layer {layer}'s attention output map of {type(model).__name__} is not a module of "
                               "the model: its rival readings cannot be measured")
        out.append(module)
    return out


def update_maps(model) -> list[torch.nn.Module]:
    """Every layer's module whose output is the update the block adds to the residual stream: the attention's
    output map (:func:`output_projections`), or the norm a family applies to that map's output first (Gemma 2 and
    3, OLMo2: the adapter's ``written``).  The rival readings read and replace the update there."""
    adapter, maps = adapter_for(model), output_projections(model)
    written = getattr(adapter, "written", None)
    return [(written(model, layer) if written else None) or m for layer, m in enumerate(maps)]


@contextmanager
def _hooks(modules: dict, make):
    """Forward hooks ``make(layer)`` on ``modules`` (``{layer: module}``), removed on exit whatever happens."""
    handles = []
    try:
        for layer, module in modules.items():
            handles.append(module.register_forward_hook(make(layer)))
        yield
    finally:
        for h in handles:
            h.remove()


@contextmanager
def replaced_outputs(model, replacements: dict):
    """Inside, layer ``l``'s update is ``replacements[l]`` (a tensor broadcast to the update's shape: zeros, a
    mean vector) instead of what its attention computed.

    >>> import torch
    >>> m = torch.nn.Linear(2, 2)
    >>> handles_before = len(m._forward_hooks)
    >>> with _hooks({0: m}, lambda l: lambda mod, args, out: torch.zeros_like(out)):
    ...     m(torch.ones(1, 2)).abs().sum().item()
    0.0
    >>> len(m._forward_hooks) == handles_before
    True
    """
    maps = update_maps(model)

    def make(layer):
        value = replacements[layer]

        def hook(module, args, out):
            return value.to(dtype=out.dtype, device=out.device).expand_as(out).clone()
        return hook

    with _hooks({l: maps[l] for l in replacements}, make):
        yield


@contextmanager
def recorded_outputs(model):
    """Yields a dict that, inside, gets every layer's update ``(B, n, d)`` of the forwards run (the last one's)."""
    kept: dict = {}

    def make(layer):
        def hook(module, args, out):
            kept[layer] = out.detach()
        return hook

    with _hooks(dict(enumerate(update_maps(model))), make):
        yield kept


def _blocks(model) -> list[torch.nn.Module]:
    """Every layer's block: the module whose direct child is the adapter's attention module (its input is the
    residual stream the attention's update is added to)."""
    parents = {id(child): module for module in model.modules() for child in module.children()}
    return [parents[id(a)] for a in adapter_for(model).layers(model)]


@contextmanager
def captured(model):
    """Yields ``(residuals, updates)``, two dicts that, inside, get every layer's block input (the residual stream)
    and attention update ``(B, n, d)`` of the forward run (the last one's; also from the stream's own forward in its
    worker thread, so no second forward is needed); the hooks are removed on exit whatever happens."""
    residuals: dict = {}
    updates: dict = {}

    def pre(layer):
        def hook(module, args, kwargs):
            residuals[layer] = (args[0] if args else kwargs["hidden_states"]).detach()
        return hook

    def post(layer):
        def hook(module, args, out):
            updates[layer] = out.detach()
        return hook

    handles = []
    try:
        for layer, block in enumerate(_blocks(model)):
            handles.append(block.register_forward_pre_hook(pre(layer), with_kwargs=True))
        for layer, proj in enumerate(update_maps(model)):
            handles.append(proj.register_forward_hook(post(layer)))
        yield residuals, updates
    finally:
        for h in handles:
            h.remove()


def update_measures(residuals: dict, updates: dict, *, directions: dict | None = None, rows: list | None = None) -> dict:
    """From :func:`captured`'s dicts: per layer and passage ``"update_ratio"`` and each ``directions[key]``'s
    alignment (as :func:`layer_updates`), and ``"mean_updates"``; each layer's tensors dropped once read."""
    directions = directions or {}
    out: dict = {"update_ratio": [], "mean_updates": [], **{k: [] for k in directions}}
    for layer in range(len(updates)):
        update, residual = updates.pop(layer).double(), residuals.pop(layer).double()
        _read_layer(out, layer, update, residual, directions, rows)
        del update, residual
    return out


def _chunks(batch: dict, model, n: int) -> list[dict]:
    vocab = int(getattr(model.config, "vocab_size", 1) or 1)
    size = max(1, LOGIT_BYTES // max(1, n * vocab * 4))
    B = batch["input_ids"].shape[0]
    return [{k: v[i:i + size] if isinstance(v, torch.Tensor) else v for k, v in batch.items()}
            for i in range(0, B, size)]


def _readout(model, inputs: dict, encoder: bool) -> torch.Tensor:
    """Per passage loss (decoders) or the final states ``(B, n, d)`` (encoders), passages in chunks."""
    out = []
    with torch.no_grad():
        for part in _chunks(inputs, model, inputs["input_ids"].shape[1]):
            res = model(**part, use_cache=False) if not encoder else model(**part)
            if encoder:
                out.append(res.last_hidden_state.double())
            else:
                out.append(M.next_token_loss(res.logits, part["input_ids"]))
    return torch.cat(out)


def layer_updates(model, batch: dict, *, encoder: bool, directions: dict | None = None,
                  rows: list | None = None, base: bool = True) -> dict:
    """One forward of ``model`` on ``batch``: per layer and passage ``"update_ratio"`` (:func:`metrics.update_ratio`
    of the attention's output over the residual stream it is added to, the layer's block input) and, for each
    ``directions[key]`` (one ``(d,)`` direction per layer), ``key``: :func:`metrics.direction_alignment` of the
    stream right after the update (``residual + update``, before any norm) on the tokens ``rows[layer]`` (default
    all); and ``"mean_updates"`` (each layer's mean update ``(d,)`` over every token of every passage) and
    ``"base"``, the intact model's per-passage loss (decoders) or final states (encoders); with ``base=False`` a
    decoder's logits are made for the last token only and ``"base"`` is None.  Each layer's values
    are computed and its tensors dropped before the next (the forward's own hidden states aside)."""
    inputs = as_batch(batch, device_of(model), model)
    directions = directions or {}
    want, updates, hidden, base = base, [], [], []
    parts = _chunks(inputs, model, inputs["input_ids"].shape[1]) if want and not encoder else [inputs]
    for part in parts:                                             # (a decoder's logits: a chunk at a time)
        with torch.no_grad(), recorded_outputs(model) as kept:
            if encoder:
                res = model(**part, output_hidden_states=True)
                base.append(res.last_hidden_state.double())
            elif want:
                res = model(**part, use_cache=False, output_hidden_states=True)
                base.append(M.next_token_loss(res.logits, part["input_ids"]))
            else:
                res = model(**part, **forward_options(model), output_hidden_states=True)
            hidden.append(res.hidden_states)
            updates.append(dict(kept))
            del res
    base = torch.cat(base) if base and want else None
    out: dict = {"update_ratio": [], "mean_updates": [], "base": base, **{k: [] for k in directions}}
    for layer in range(len(updates[0])):
        update = torch.cat([u.pop(layer) for u in updates]).double()
        residual = torch.cat([h[layer] for h in hidden]).double()
        _read_layer(out, layer, update, residual, directions, rows)
        del update, residual
    return out


def _stack(model) -> list[torch.nn.Module] | None:
    """Every layer's whole block as the model runs it: the element of the ``ModuleList`` that holds the adapter's
    attention module (``model.layers[l]``, BERT's ``encoder.layer[l]``, GPT-2's ``h[l]``), or None where the
    blocks are not such a list (then nothing is skipped)."""
    parents = {id(child): module for module in model.modules() for child in module.children()}
    out = []
    for attention in adapter_for(model).layers(model):
        module = attention
        while id(module) in parents and not isinstance(parents[id(module)], torch.nn.ModuleList):
            module = parents[id(module)]
        if id(module) not in parents:
            return None
        out.append(module)
    return out if len({id(m) for m in out}) == len(out) else None


def _copied(out):
    """A block's output (a tensor, or a tuple of them and Nones) copied, so that no later forward can change it."""
    if isinstance(out, torch.Tensor):
        return out.clone()
    return type(out)(_copied(o) for o in out) if isinstance(out, tuple) else out


@contextmanager
def kept_blocks(model):
    """Yields a dict that, inside, gets every block's output (:func:`_stack`) of the forward run (the last one's)."""
    kept: dict = {}
    blocks = _stack(model) or []

    def make(layer):
        def hook(module, args, out):
            kept[layer] = _copied(out)
        return hook

    with _hooks(dict(enumerate(blocks)), make):
        yield kept


@contextmanager
def skipped_blocks(model, outputs: dict, upto: int):
    """Inside, blocks ``0 .. upto - 1`` return ``outputs[l]`` (what they returned in a forward on the same inputs,
    :func:`kept_blocks`) instead of computing it again: a forward that changes only layer ``upto`` onwards runs
    those layers alone.  Nothing is skipped where the blocks are not a list or an output is missing; a block's own
    ``forward`` attribute (accelerate's device hooks set one) is put back on exit, whatever happens."""
    blocks = _stack(model)
    if blocks is None or any(l not in outputs for l in range(upto)):
        yield
        return
    saved: dict = {}
    try:
        for layer in range(upto):
            saved[layer] = blocks[layer].__dict__.get("forward")
            blocks[layer].forward = (lambda out: lambda *args, **kwargs: _copied(out))(outputs[layer])
        yield
    finally:
        for layer, own in saved.items():
            if own is None:
                blocks[layer].__dict__.pop("forward", None)
            else:
                blocks[layer].forward = own


def ablation_costs(model, batch: dict, *, encoder: bool, mean_updates: list, base: torch.Tensor | None = None) -> dict:
    """Per layer and passage, the cost of replacing that layer's update (one layer at a time) by zero
    (``"ablation_zero"``) and by its mean update (``"ablation_mean"``): the next-token loss minus ``base``
    (decoders, nats), or :func:`metrics.representation_change` of the final states from ``base`` (encoders);
    ``base`` (the intact model's, on ``batch``) is measured here where not given.  The blocks before the ablated
    layer are not run again: their outputs are the intact forward's (:func:`skipped_blocks`), about half the work."""
    inputs = as_batch(batch, device_of(model), model)
    parts = _chunks(inputs, model, inputs["input_ids"].shape[1])
    intact, kept = [], []
    for part in parts:
        with kept_blocks(model) as blocks:
            intact.append(_readout(model, part, encoder))
        kept.append(dict(blocks))
    base = torch.cat(intact) if base is None else base
    out: dict = {"ablation_zero": [], "ablation_mean": []}
    for layer, mean in enumerate(mean_updates):
        for key, value in (("ablation_zero", torch.zeros_like(mean)), ("ablation_mean", mean)):
            got = []
            for part, blocks in zip(parts, kept):
                with replaced_outputs(model, {layer: value}), skipped_blocks(model, blocks, layer):
                    got.append(_readout(model, part, encoder))
            got = torch.cat(got)
            out[key].append(M.representation_change(got, base) if encoder else got - base)
    return out


def _read_layer(out: dict, layer: int, update, residual, directions: dict, rows) -> None:
    """One layer's update ratio, mean update and the states' alignment with each direction, appended to ``out``."""
    out["update_ratio"].append(M.update_ratio(update, residual))
    out["mean_updates"].append(update.mean((0, 1)))
    state = residual + update
    for key, per_layer in directions.items():
        out[key].append(M.direction_alignment(state, per_layer[layer], None if rows is None else rows[layer]))
