"""Streaming extraction: a real model's attention layers as connection walks, one layer at a time.

The model runs once, in a worker thread, with a hook on every attention module that hands
the module's inputs (the hidden states after the pre-attention norm) and its output to the
reader and waits until the reader asks for the next layer.  So no module runs twice.  The
hooks and the thread live in a context manager: when the reader stops early or fails, the
forward is stopped at its next attention module, and the hooks are removed, whatever happens.

The attention comes from the model itself, through transformers' attention interface
(:mod:`connlap_lite.models.rebuild`): while the stream runs, the model's attention function is ours.  For the
layers being read it keeps the queries and keys the module made (after its rotary embedding and norms),
the mask the model built and the module's options; every layer's output comes from the model's own SDPA.
The layer's attention is built from what was kept, in float32 (float64 for a float64 model), a passage at a
time, when the reader asks for it, while the forward waits at that layer (only the passage a walk needs, if
the whole layer's is not asked for).  Only one layer's ``(B, H, n, n)`` attention is alive at a time,
even while the reader holds the previous layer's :class:`LayerWalks` (``attention="logits"``).
``attention="eager"`` runs the model's own eager attention function instead and reads the weights the
module returns (the reference the built ones are tested against).  The adapters
(:mod:`connlap_lite.models.adapters`) only say where each head's value and output maps are.

Chapter: *Reading a real transformer as a connection walk*.
"""
from __future__ import annotations

import inspect
import queue
import threading
import weakref
from functools import partial
from collections.abc import Mapping
from contextlib import contextmanager
from typing import Iterator

import torch

from .._backend import check_float_dtype, integer
from .adapters import adapter_for
from .adapters.linear import head_transports as _factor
from ..attention import gated_walk, walk_from_heads
from .memory import check_memory
from .load import check_config
from .rebuild import check_finite, again, not_routed, routed
from ..transports import HeadTransports
from ..walks import ConnectionWalk


def head_transports(model, layer: int) -> HeadTransports:
    """Layer ``layer``'s head transports ``T_h = W_O^h W_V^{g(h)}``, factored.

    ``.dense()`` gives the ``(H, d, d)`` matrices in the book's column convention (``book/theory/walks.ipynb``);
    ``.offset`` is the affine part ``c`` from the value and output biases (or None);
    ``.groups[h]`` is the key/value group ``g(h)``.

    Chapter: *Reading a real transformer as a connection walk*.
    """
    adapter = adapter_for(model, _reproduces)
    check_config(model.config, type(model).__name__)     # a model built elsewhere: its heads and layers
    n_layers = len(adapter.layers(model))
    if integer(layer) is None or not 0 <= integer(layer) < n_layers:     # numpy ints too (operator.index)
        raise ValueError(f"layer must be an int in [0, {n_layers}), got {layer!r}")
    layer = integer(layer)
    H, G = adapter.shape(model)
    return _factor(*adapter.value_output(model, layer), H, G)


class _Stop(Exception):
    """Raised inside the paused forward pass when the reader of the layers has stopped."""


@contextmanager
def streamed_layers(model, modules, chosen, inputs: dict, *, eager: bool = False):
    """Run ``model(**inputs)`` in a worker thread that pauses after each chosen module.

    Yields an iterator of ``(index, args, kwargs, output, call)``, one per chosen module in the
    model's order, ``call`` the module's attention call (a :class:`connlap_lite.models.rebuild.Call`: its
    queries, keys, mask and options); the forward waits at that module until the iterator is asked
    for the next one, so each module's output is alive only while its reader holds it.  An error
    in the forward is raised by the iterator.  On exit (normal, early or by an error) a
    forward paused at a module is stopped there and the thread is joined.  The hooks are
    removed first, in their own ``finally``: a second interrupt during the join cannot leave
    them on the model (a forward that was computing, not paused, then runs to its end); then the
    model's own attention implementation is put back.
    """
    wanted = set(chosen)
    handoff: queue.Queue = queue.Queue(maxsize=1)
    resume: queue.Queue = queue.Queue()
    go, stop, done = object(), object(), object()

    def hook(index):
        def post(module, args, kwargs, output):
            # only the worker's forward pauses: the caller's own forwards pass straight through
            if index in wanted and threading.current_thread() is thread:
                call = route.take(index)
                if call is None:                        # the module computed its attention some other way
                    raise RuntimeError(not_routed(model))
                handoff.put((index, args, kwargs, output, call))
                call = None
                if resume.get() is stop:
                    raise _Stop
        return post

    def forward():
        try:
            with torch.no_grad():                       # grad mode is per thread
                model(**inputs, **forward_options(model))
            handoff.put(done)
        except _Stop:
            pass
        except BaseException as exc:                    # handed to the reader, raised there
            handoff.put(exc)

    def layers():
        for k in range(len(wanted)):
            if k:
                resume.put(go)
            item = handoff.get()
            if isinstance(item, BaseException):
                raise item
            if item is done:
                raise RuntimeError("the forward pass ended before reaching every chosen attention module")
            yield item
            item = None                                 # hold nothing of this module while the next one runs
        resume.put(go)                                  # let the forward run to its end
        item = handoff.get()
        if isinstance(item, BaseException):
            raise item

    with routed(model, modules, chosen, eager=eager) as route:
        handles = [m.register_forward_hook(hook(i), with_kwargs=True) for i, m in enumerate(modules)]
        thread = threading.Thread(target=forward, name="connlap-forward", daemon=True)
        route.thread = thread
        try:
            thread.start()
            yield layers()
        finally:
            try:
                for h in handles:
                    h.remove()
            finally:
                if thread.is_alive():
                    resume.put(stop)
                thread.join()


class LayerWalks:
    """One layer of a batch, read as connection walks.

    Attributes
    ----------
    layer : int
    attention : (B, H, n, n) the heads' attention probabilities; built from the queries, keys and mask the
        layer's module made (see below), or as the model's eager attention returned them
    transports : HeadTransports, the layer's head transports (with ``.offset``)
    inputs : (B, n, d) hidden states entering the attention (after any pre-norm)
    output : (B, n, d) the attention module's own output (what the walk reproduces)
    tokens : (B, n) bool, True for real (non-padding) tokens
    mask : ``{"causal": bool, "window": int | None}`` the mask the model used
    gain : (d,) the per-coordinate gain of the norm whose output enters the attention, or None
        (what E2 folds into the heads: ``metrics.fold_gain(transports, gain)``)
    value_bias : where the attention's rows may sum to less than 1 (learned sink logits) and the values have
        biases, ``(b (H, d), b_o)`` with ``b[h] = W_o^h b_v^{g(h)}``: a row of mass ``m`` carries ``m b[h]``, so
        :meth:`walk`'s offset is then one per token, not ``transports.offset``

    ``attention`` and ``output`` may each be given as a tensor or as a function of no argument that builds it
    when first asked for.  While the layer's queries and keys are kept (the stream paused at this layer),
    :meth:`walk` builds only its passage's attention, unless the whole layer's is built already.  Built, it is
    kept until :func:`attention_walks` moves on to the next layer, which drops it from here (a reference
    you took to it lives on) so that the forward never runs beside a finished layer's attention; asked
    for again, it is built again by the module run once more on its inputs, which are kept (small), for its
    queries and keys only (the layer's own queries and keys are dropped when the stream moves on).
    """

    def __init__(self, layer: int, attention, transports: HeadTransports, inputs: torch.Tensor,
                 output: torch.Tensor, tokens: torch.Tensor, mask: dict | None = None, gain=None,
                 value_bias: tuple | None = None):
        self.layer = layer
        self._attention = attention if isinstance(attention, torch.Tensor) else None
        self._build = None if isinstance(attention, torch.Tensor) else attention
        self.transports = transports
        self.inputs = inputs
        self._output = output if isinstance(output, torch.Tensor) else None
        self._form = None if isinstance(output, torch.Tensor) else output
        self.tokens = tokens
        self.mask = {} if mask is None else mask
        self.gain = gain
        self._value_bias = value_bias     # (per head W_o^h b_v^g(h), b_o) where rows may sum to less than 1
        self._lazy: list = []         # the walks' transports that read their gates from the attention
        self._heads: dict = {}        # the heads (no offset) in each dtype a walk asked for, checked once
        self._sound: bool | None = None   # whether the attention is finite and nonnegative (checked once)

    @property
    def attention(self) -> torch.Tensor:
        if self._attention is None:
            self._attention = self._build()
        return self._attention

    @property
    def output(self) -> torch.Tensor:
        if self._output is None:
            self._output, self._form = self._form(), None
        return self._output

    def _release(self) -> None:
        """Drop the built attention if it can be built again (nothing is lost; memory is freed); the walks
        still alive that read their gates from it form their own first."""
        for ref in self._lazy:
            transport = ref()
            if transport is not None:
                transport.keep_weights()
        self._lazy = []
        if self._build is not None:
            self._attention = None
            forget = getattr(self._build, "forget", None)
            if forget is not None:              # keep no queries and keys while the forward runs on
                forget()

    def __repr__(self) -> str:
        B, n = self.tokens.shape
        state = "built" if self._attention is not None else "not built yet"
        return f"LayerWalks(layer={self.layer}, passages={B}, tokens={n}, heads={self.transports.n_heads}, " \
               f"attention {state})"

    def walk(self, i: int, dtype: torch.dtype | None = None) -> ConnectionWalk:
        """Passage ``i``'s multi-head walk on its real tokens.

        Its attention is the layer's (``self.attention[i]``) if that is built; else, while the stream is
        paused at this layer, the passage's alone is built for it (the same numbers, ``(H, n, n)``, not
        ``(B, H, n, n)``) and belongs to the walk.  Half precision is upcast to float32 unless ``dtype`` says otherwise.  The walk's gates
        (``walk.transport.weights``) are not stored beside the attention: they are read from it as the
        walk is applied, the same numbers, and formed in full only when asked for or when
        :func:`attention_walks` moves on to the next layer while the walk is still alive.
        """
        i = self._passage(i)
        check_float_dtype(dtype)
        keep = self.tokens[i]
        alone = self._attention is None and isinstance(self._build, _Builder) and self._build.call is not None
        A = self._build.passage(i) if alone else self.attention[i]
        dtype = dtype or (torch.float32 if A.dtype in (torch.float16, torch.bfloat16) else A.dtype)
        m = int(keep.sum())
        if bool(keep[:m].all()):                        # right padding (or none): the real tokens come first
            A = A[:, :m, :m]
        else:
            A = A[:, keep][:, :, keep]
        A = A.to(dtype)
        if dtype not in self._heads:                   # V read from the layer's when first needed
            self._heads[dtype] = HeadTransports.unchecked(self.transports.U.to(dtype),
                                                         partial(_read_factors, self.transports, dtype))
        heads = self._heads[dtype]
        offset = None if self.transports.offset is None else self.transports.offset.to(dtype)
        if self._value_bias is not None:    # rows short of 1 (sink logits) carry only their mass of each value bias
            per_head, b_o = self._value_bias
            offset = torch.einsum("hn,hd->nd", A.sum(-1), per_head.to(dtype))
            offset = offset if b_o is None else offset + b_o.to(dtype)
        if not self._checked():
            return walk_from_heads(A, heads, offset=offset)          # its checks name what is wrong
        # the gates are read from the attention as the walk needs them (no second (H, n, n) array); when
        # the stream moves on, a walk still alive that reads the layer's attention forms and keeps its own
        # (see _release); one built for this passage alone is the walk's own
        walk = gated_walk(A, heads, offset, False, lazy=True)
        if not alone:
            self._lazy.append(weakref.ref(walk.transport))
        return walk

    def _checked(self) -> bool:
        """Whether the attention is finite and nonnegative: so by construction where :class:`_Builder` builds it
        (softmax of scores it checked finite), else checked once over the layer."""
        if isinstance(self._build, _Builder):
            return True
        if self._sound is None:
            A = self.attention
            lo, hi = torch.aminmax(A) if A.numel() else (torch.zeros(()), torch.zeros(()))
            self._sound = bool(torch.isfinite(lo) & torch.isfinite(hi)) and float(lo) >= 0
        return self._sound

    def section(self, i: int, dtype: torch.dtype | None = None) -> torch.Tensor:
        """The input section of passage ``i`` on its real tokens, ``(n_i, d)``."""
        i = self._passage(i)
        check_float_dtype(dtype)
        x = self.inputs[i][self.tokens[i]]
        return x.to(dtype) if dtype else x

    def reference(self, i: int) -> torch.Tensor:
        """The module's own output for passage ``i`` on its real tokens."""
        i = self._passage(i)
        return self.output[i][self.tokens[i]]

    def miss(self, i: int) -> tuple[float, str | None]:
        """How far the walk misses the module's own output on passage ``i``: ``||walk_i(X_i) - out_i|| / ||out_i||``
        on its real tokens (float32 for half precision), and which of the layer's input, the module's output and
        the walk first holds NaN or inf (None when all are finite: a forward that overflowed, which no adapter can
        reproduce). The one measure of :func:`connlap_lite.models.verify.verify` and of the check of a model type read
        through a known layout (:func:`connlap_lite.models.adapters.adapter_for`)."""
        X = self.section(i)
        dtype = torch.float64 if X.dtype == torch.float64 else torch.float32
        reference = self.reference(i).to(dtype)
        walked = self.walk(i, dtype)(X.to(dtype))
        broken = next((what for what, t in (("the layer's input", X), ("the module's output", reference),
                                            ("the walk", walked)) if not bool(torch.isfinite(t).all())), None)
        miss = float(torch.linalg.norm(walked - reference))
        scale = float(torch.linalg.norm(reference))
        return (miss / scale if scale > 0 else miss), broken

    def _passage(self, i) -> int:
        B = self.tokens.shape[0]
        if integer(i) is None or not 0 <= integer(i) < B:                  # numpy ints too (operator.index)
            raise ValueError(f"i must be a passage index, an int in [0, {B}), got {i!r}")
        return integer(i)


def max_positions(model) -> int | None:
    """The most tokens a passage may have: the model's learned or trained positions (None: no limit known)."""
    config = model.config
    for key in ("n_positions", "max_position_embeddings"):
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


# batch keys that would change what the stream computes, and why they are refused
REFUSED = {
    "inputs_embeds": "the stream reads token ids; pass input_ids",
    "labels": "attention_walks computes no loss; drop labels from the batch",
    "past_key_values": "the stream runs whole passages without a key/value cache; drop past_key_values",
    "use_cache": "the stream runs without a key/value cache; drop use_cache",
    "cache_position": "the stream runs whole passages from position 0; use position_ids for other positions",
    "output_attentions": "attention_walks reads the attention itself; drop output_attentions",
    "output_hidden_states": "drop output_hidden_states (lw.inputs holds what enters each attention)",
    "return_dict": "drop return_dict",
    "logits_to_keep": "drop logits_to_keep (the stream keeps only the last token's logits)",
}
PER_TOKEN = ("token_type_ids", "position_ids")      # (B, n) integer keys, checked like input_ids


def as_batch(batch, device, model=None):
    """The batch on ``device``: ``input_ids``, ``attention_mask`` and every other key the model's forward
    takes (``token_type_ids``, ``position_ids``, ...), each checked; a key it does not take, or one that would
    change what the stream computes, refused by name."""
    if isinstance(batch, torch.Tensor):
        batch = {"input_ids": batch}
    if not isinstance(batch, Mapping) or "input_ids" not in batch:
        raise TypeError("batch must be a tensor of token ids or a dict with 'input_ids' "
                        "(and optionally 'attention_mask'), e.g. the output of connlap_lite.passages")
    ids = batch["input_ids"]
    if not isinstance(ids, torch.Tensor):
        raise TypeError(f"input_ids must be a torch tensor of token ids, got {type(ids).__name__}; "
                        "use connlap_lite.passages or the tokenizer with return_tensors='pt'")
    if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
        raise TypeError(f"input_ids must hold integer token ids, got dtype {ids.dtype}")
    if ids.ndim != 2 or 0 in ids.shape:
        raise ValueError(f"input_ids must have shape (batch, tokens), both at least 1, got {tuple(ids.shape)}")
    mask = batch.get("attention_mask")
    if mask is None:
        mask = torch.ones_like(ids)
    if not isinstance(mask, torch.Tensor) or tuple(mask.shape) != tuple(ids.shape):
        raise ValueError(f"attention_mask must be a tensor of the shape of input_ids {tuple(ids.shape)}, got "
                         f"{tuple(mask.shape) if isinstance(mask, torch.Tensor) else type(mask).__name__}")
    if mask.is_floating_point() or not bool(((mask == 0) | (mask == 1)).all()):
        raise ValueError("attention_mask must hold integers 0 (padding) and 1 (real token)")
    empty = torch.nonzero(mask.sum(1) == 0).flatten().tolist()
    if empty:
        raise ValueError(f"attention_mask leaves passage {empty[0]} without any real token; drop that passage or "
                         "mark its tokens 1")
    if model is not None:
        vocab = getattr(model.config, "vocab_size", None)
        lo, hi = int(ids.min()), int(ids.max())
        if lo < 0 or (isinstance(vocab, int) and hi >= vocab):
            raise ValueError(f"input_ids must be token ids in [0, {vocab}) for this model, got ids from {lo} to "
                             f"{hi}; tokenise with the model's own tokenizer")
        limit = max_positions(model)
        if limit is not None and ids.shape[1] > limit:
            raise ValueError(f"input_ids have {ids.shape[1]} tokens per passage, more than the {limit} positions "
                             f"of {type(model).__name__}; use at most {limit} tokens (n_tokens <= {limit})")
    inputs = {"input_ids": ids.to(device), "attention_mask": mask.to(device)}
    extra = {k: v for k, v in batch.items() if k not in inputs}
    if extra and model is not None:
        takes = [k for k, p in inspect.signature(model.forward).parameters.items()
                 if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
    for key, value in extra.items():
        if key in REFUSED:
            raise ValueError(f"batch key {key!r} is refused: {REFUSED[key]}")
        if model is not None and key not in takes:
            raise ValueError(f"batch key {key!r} is not an input of {type(model).__name__}.forward (it takes "
                             f"{', '.join(k for k in takes if k not in REFUSED)}); remove it from the batch")
        if value is None:
            continue
        if key in PER_TOKEN:
            if not isinstance(value, torch.Tensor) or tuple(value.shape) != tuple(ids.shape) \
                    or value.is_floating_point() or value.dtype == torch.bool:
                raise ValueError(f"{key} must be an integer tensor of the shape of input_ids {tuple(ids.shape)}, got "
                                 f"{tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__}"
                                 f"{'' if not isinstance(value, torch.Tensor) else f' of {value.dtype}'}")
            if key == "token_type_ids" and model is not None:
                types = getattr(model.config, "type_vocab_size", None)
                if isinstance(types, int) and (int(value.min()) < 0 or int(value.max()) >= types):
                    raise ValueError(f"token_type_ids must be in [0, {types}) for this model, got values from "
                                     f"{int(value.min())} to {int(value.max())}")
        inputs[key] = value.to(device) if isinstance(value, torch.Tensor) else value
    return inputs


def forward_options(model) -> dict:
    """No key/value cache; and for a language model, logits for the last token only (the LM
    head over the whole passage is wasted work here)."""
    import inspect

    options = {"use_cache": False}
    if "logits_to_keep" in inspect.signature(model.forward).parameters:
        options["logits_to_keep"] = 1
    return options


def device_of(model):
    """The device of ``model``'s first parameter: where its inputs are sent."""
    return next(model.parameters()).device


ATTENTION = ("auto", "logits", "eager")


def attention_walks(model, batch, *, layers=None, progress: bool = True,
                    attention: str = "auto") -> Iterator[LayerWalks]:
    """Yield every attention layer of ``model`` on ``batch`` as a :class:`LayerWalks`.

    Parameters
    ----------
    model : a supported Hugging Face model (see :mod:`connlap_lite.models.adapters`) whose attention goes through
        transformers' attention interface, with any attention implementation (:func:`connlap_lite.load_model`
        loads PyTorch's fused SDPA); it runs with :mod:`connlap_lite.models.rebuild`'s attention function while the
        stream runs, and with its own again afterwards.
    batch : token ids ``(B, n)`` or a dict with ``input_ids`` and ``attention_mask`` (right padding for
        passages of unequal length), and any other input the model's forward takes (``token_type_ids``,
        ``position_ids``: passed to the forward, so the attention is the model's on them).
    layers : iterable of layer indices, default all; yielded in the model's order.
    progress : show a progress bar over layers.
    attention : where ``lw.attention`` comes from.  ``"logits"``: built from the queries, keys and mask the
        layer's module made, one layer at a time, when asked for (every layer's output computed by SDPA).  ``"eager"``: the weights the model's own eager attention function returns (the reference).
        ``"auto"`` (default): ``"eager"`` for a model loaded with eager attention, ``"logits"`` otherwise.

    The model runs once (in a worker thread, paused at each chosen layer until the next one is
    asked for), so every module runs once and, with ``"logits"``, memory stays at the weights, the forward's own
    activations and one layer's attention (and, while the reader still holds the previous layer, its inputs and
    output; with ``"eager"``, its attention too).  Rows of ``lw.attention`` sum to 1 except
    where the model's attention itself does not (learned sink logits, as in gpt-oss): the walk keeps the row
    mass the model has (its stochasticity defect says how far).

    Chapter: *Reading a real transformer as a connection walk*.
    """
    if not isinstance(model, torch.nn.Module) or not hasattr(model, "config"):
        raise ValueError(f"model must be a Hugging Face model (e.g. from connlap_lite.load_model), "
                         f"got {type(model).__name__}")
    if not isinstance(attention, str) or attention not in ATTENTION:
        raise ValueError(f"attention must be one of {', '.join(map(repr, ATTENTION))}, got {attention!r}: "
                         "'logits' builds the attention from the queries and keys the model makes (any attention "
                         "implementation), 'eager' reads the weights of the model's eager attention")
    adapter = adapter_for(model, _reproduces)
    check_config(model.config, type(model).__name__)     # a model built elsewhere: its heads and layers
    modules = adapter.layers(model)
    if layers is not None and (isinstance(layers, (str, bytes, int)) or not hasattr(layers, "__iter__")):
        raise TypeError(f"layers must be an iterable of layer indices such as [0, 3], got {layers!r}")
    chosen = range(len(modules)) if layers is None else list(layers)
    for l in chosen:
        if integer(l) is None or not 0 <= integer(l) < len(modules):      # numpy ints too (operator.index)
            raise ValueError(f"layers must hold indices in [0, {len(modules)}), got {l!r}")
    chosen = [integer(l) for l in chosen]
    if attention == "auto":
        attention = "eager" if getattr(model.config, "_attn_implementation", None) == "eager" else "logits"
    if model.training:
        raise ValueError("model is in training mode (dropout is active); call model.eval() first "
                         "(connlap_lite.load_model returns it in eval mode)")
    inputs = as_batch(batch, device_of(model), model)
    check_memory(model, *inputs["input_ids"].shape, what=type(model).__name__)     # before the forward starts
    H, G = adapter.shape(model)
    tokens = inputs["attention_mask"].bool()
    eager = attention == "eager"
    with torch.no_grad(), streamed_layers(model, modules, chosen, inputs, eager=eager) as stream:
        if progress:
            from tqdm.auto import tqdm
            stream = tqdm(stream, total=len(set(chosen)), desc=f"{type(model).__name__} layers", leave=False)
        for l, args, kwargs, out, call in stream:
            hidden = args[0] if args else kwargs["hidden_states"]
            check_finite(model, l, "inputs", hidden)
            if eager:
                weights = out[1]                        # what the module returns of its eager attention
                check_finite(model, l, "attention", weights)
            else:
                weights = _Builder(model, l, modules[l], call, args, kwargs)
            # formed when first asked for (BERT's needs its output projection, which the forward applies after
            # the pause): until then the module's result is kept, no larger
            output = partial(_module_output, adapter, model, l, out)
            del out
            maps = adapter.value_output(model, l)
            current = LayerWalks(layer=l, attention=weights, transports=_factor(*maps, H, G),
                                 inputs=hidden, output=output, tokens=tokens,
                                 mask={"causal": call.causal, "window": call.window},
                                 gain=adapter.norm_gain(model, l),
                                 value_bias=None if call.sinks is None else _value_bias(*maps, H, G))
            weights = args = kwargs = hidden = output = call = None   # current holds them, while its reader does
            yield current
            current._release()                          # the forward runs on: only one layer's attention alive
            current = None


TOL = 1e-4   # float32 walks reproduce the module to about 1e-7; a misread adapter misses by 1e-1 and more


def tolerance(model) -> float:
    """How far a walk may miss its module's output (:meth:`LayerWalks.miss`): ``1e-4`` for float32 and float64
    weights.

    In half precision the module's own output is rounded to its dtype (relative error about
    ``eps / 2``; measured 2e-3 to 3e-3 in bfloat16, 3e-4 to 4e-4 in float16 on tiny models), so the
    tolerance there is ``4 * eps`` of that dtype: 3.1e-2 for bfloat16, 3.9e-3 for float16, still
    well below what a misread adapter misses by.

    >>> import torch
    >>> tolerance(torch.nn.Linear(2, 2)), tolerance(torch.nn.Linear(2, 2).to(torch.bfloat16))
    (0.0001, 0.03125)
    """
    dtype = next(model.parameters()).dtype
    if dtype in (torch.float16, torch.bfloat16):
        return 4 * torch.finfo(dtype).eps
    return TOL


def _reproduces(model, batch) -> float:
    """The walk's largest miss (:meth:`LayerWalks.miss`) over every layer and passage of ``batch``, or a ValueError
    naming the first layer that misses by more than :func:`tolerance`: how :func:`connlap_lite.models.adapters.adapter_for`
    checks a model type read through a known layout the first time it is walked."""
    tol, worst = tolerance(model), 0.0
    for lw in attention_walks(model, batch, progress=False):
        for i in range(lw.tokens.shape[0]):
            miss, _ = lw.miss(i)
            if not miss <= tol:                     # NaN misses too
                raise ValueError(f"layer {lw.layer}: the walk misses the module's output by {miss:.1e} (> {tol:.0e})")
            worst = max(worst, miss)
    return worst


def _read_factors(heads: HeadTransports, dtype: torch.dtype) -> torch.Tensor:
    return heads.V.to(dtype)


def _module_output(adapter, model, layer: int, out) -> torch.Tensor:
    """The adapter's module output from what the module returned, without gradients (asked from any thread)."""
    with torch.no_grad():
        return adapter.module_output(model, layer, out)


def _value_bias(W_v, b_v, W_o, b_o, H: int, G: int):
    """``(b, b_o)`` with ``b[h] = W_o^h b_v^{g(h)}`` ``(H, d)``, or None when the values have no bias (then the
    constant ``b_o`` offset stays right whatever the rows sum to)."""
    if b_v is None:
        return None
    d, dh = W_o.shape[0], W_v.shape[0] // G
    per_group = b_v.detach().reshape(G, dh)[torch.arange(H, device=b_v.device) // (H // G)]
    return torch.einsum("dhe,he->hd", W_o.detach().reshape(d, H, dh), per_group), b_o


class _Builder:
    """Builds layer ``layer``'s attention (checked finite) from its attention call, all of it or one passage's;
    once the stream has moved on (:meth:`forget`), from the module run again on the inputs it had, for its queries
    and keys only: so a layer the reader still holds keeps its inputs and output while the forward runs on, not
    its queries and keys."""

    def __init__(self, model, layer: int, module, call, args, kwargs):
        self.model, self.layer, self.module = model, layer, module
        self.call, self.args, self.kwargs = call, args, kwargs

    def __call__(self) -> torch.Tensor:
        call = self.call or again(self.model, self.module, self.args, self.kwargs)
        A = call.probabilities()
        check_finite(self.model, self.layer, "attention", A)
        return A

    def passage(self, i: int) -> torch.Tensor | None:
        """Passage ``i``'s attention ``(H, n, n)`` alone, while the call is kept (else None)."""
        if self.call is None:
            return None
        A = self.call.probabilities(passage=i)
        check_finite(self.model, self.layer, "attention", A)
        return A

    def forget(self) -> None:
        self.call = None
