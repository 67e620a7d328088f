"""Attention built from the queries and keys the model makes (``attention="logits"``) while it runs SDPA through the
registered attention function, against the weights the same model returns under eager attention: padding, windows,
half precision, the offline models, one layer alive, a passage at a time."""
import weakref

import pytest
import torch
from transformers import (AutoModel, AutoModelForCausalLM, BertConfig, Gemma3TextConfig, GPT2Config, LlamaConfig,
                          MistralConfig, Qwen2Config)

from connlap_lite import attention_walks, load_model, walk_from_heads
from connlap_lite.models import rebuild

TOL = 1e-5

CONFIGS = {
    "gpt2": lambda: GPT2Config(n_layer=2, n_head=4, n_embd=32, vocab_size=100, n_positions=64,
                               bos_token_id=0, eos_token_id=0),
    "gpt2-scaled-by-layer": lambda: GPT2Config(n_layer=2, n_head=4, n_embd=32, vocab_size=100, n_positions=64,
                                               bos_token_id=0, eos_token_id=0, scale_attn_by_inverse_layer_idx=True),
    "bert": lambda: BertConfig(num_hidden_layers=2, num_attention_heads=4, hidden_size=32, intermediate_size=64,
                               vocab_size=100, max_position_embeddings=64),
    "llama-gqa": lambda: LlamaConfig(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                     hidden_size=32, intermediate_size=64, vocab_size=100),
    "mistral-window": lambda: MistralConfig(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1,
                                            hidden_size=32, intermediate_size=64, vocab_size=100, sliding_window=3),
    "qwen2-bias": lambda: Qwen2Config(num_hidden_layers=2, num_attention_heads=6, num_key_value_heads=2,
                                      hidden_size=48, intermediate_size=64, vocab_size=100),
    # QK-norm, query_pre_attn_scalar, one sliding and one global layer, and a soft-capping value the module ignores
    "gemma3": lambda: Gemma3TextConfig(num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
                                       hidden_size=32, head_dim=16, intermediate_size=64, vocab_size=100,
                                       sliding_window=3, query_pre_attn_scalar=8, attn_logit_softcapping=0.5,
                                       layer_types=["sliding_attention", "full_attention", "sliding_attention"]),
}


def pair(name):
    """The same random weights under eager and under SDPA attention; biases and norm gains made nonzero."""
    torch.manual_seed(0)
    auto = AutoModel if name == "bert" else AutoModelForCausalLM
    eager = auto.from_config(CONFIGS[name](), attn_implementation="eager").eval()
    with torch.no_grad():
        for key, p in eager.named_parameters():
            if "bias" in key or "norm" in key or key.endswith(("ln_1.weight", "ln_2.weight", "LayerNorm.weight")):
                p.add_(0.5 * torch.randn_like(p))
    sdpa = auto.from_config(CONFIGS[name](), attn_implementation="sdpa").eval()
    sdpa.load_state_dict(eager.state_dict())
    return eager, sdpa


def padded_batch(n=10):
    ids = torch.randint(1, 100, (3, n), generator=torch.Generator().manual_seed(1))
    mask = torch.tensor([[1] * n, [1] * 6 + [0] * (n - 6), [1] * 2 + [0] * (n - 2)])
    return {"input_ids": ids, "attention_mask": mask}


def allowed_pairs(tokens, mask):
    """The test's own reading of which pairs a layer lets attend: padding keys never, causal ``j <= i``, a window
    ``i - j < w``."""
    n = tokens.shape[1]
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    ok = torch.ones(n, n, dtype=torch.bool)
    if mask["causal"]:
        ok &= j <= i
    if mask["window"] is not None:
        ok &= i - j < mask["window"]
    return ok[None, None] & tokens[:, None, None, :]


def real_rows_error(P, E, tokens):
    """max |P - E| over every real query's row (padding queries carry no walk)."""
    return float((P - E).abs().amax((1, 3))[tokens].max())


@pytest.mark.parametrize("name", list(CONFIGS))
def test_rebuilt_attention_is_the_eager_attention(name):
    eager, sdpa = pair(name)
    batch = padded_batch()
    tokens = batch["attention_mask"].bool()
    reference = [lw.attention for lw in attention_walks(eager, batch, progress=False, attention="eager")]
    assert all(E is not None for E in reference)
    for model in (sdpa, eager):                              # from SDPA's inputs, and from eager's own
        rebuilt = list(attention_walks(model, batch, progress=False, attention="logits"))
        assert len(rebuilt) == len(reference)
        for lw, E in zip(rebuilt, reference):
            P = lw.attention
            assert P.dtype == torch.float32 and P.shape == E.shape
            assert real_rows_error(P, E, tokens) <= TOL, (name, lw.layer)
            allowed = allowed_pairs(tokens, lw.mask)
            assert bool((P[~allowed.expand_as(P)] == 0).all())         # masked pairs exactly zero
            empty = ~allowed.any(-1).expand(P.shape[:3])                 # padding queries that see no key
            assert bool((P.sum(-1)[empty] == 0).all())
            assert torch.allclose(P.sum(-1)[~empty], torch.ones(()), atol=1e-6)
    # SDPA returns no attention of its own: auto picks the rebuilt one
    lw = next(attention_walks(sdpa, batch, progress=False))
    assert lw._attention is None and real_rows_error(lw.attention, reference[0], tokens) <= TOL


@pytest.mark.parametrize("name", list(CONFIGS))
def test_attention_is_built_a_passage_at_a_time_into_one_tensor(name, monkeypatch):
    """Each passage's scores are written into its rows of the layer's one attention tensor (one passage's queries
    and keys at a time); the result is the softmax of the whole batch's scores."""
    _, sdpa = pair(name)
    batch = padded_batch()
    real, seen = rebuild.scores, []

    def spying(q, k, scale, out=None):
        seen.append((q.shape[0], out is not None and out._base is not None))
        return real(q, k, scale, out=out)

    monkeypatch.setattr(rebuild, "scores", spying)
    tokens = batch["attention_mask"].bool()
    for lw in attention_walks(sdpa, batch, progress=False):
        A = lw.attention
        assert seen[-3:] == [(1, True)] * 3                      # three passages, each into its rows of A
        assert A._base is None and A.is_contiguous()
        ok = allowed_pairs(tokens, lw.mask)
        assert bool((A[~ok.expand_as(A)] == 0).all())
        assert torch.allclose(A.sum(-1)[ok.any(-1).expand(A.shape[:3])], torch.ones(()), atol=1e-6)


def test_call_reads_every_mask_format_alike():
    """A boolean mask, the same mask as an additive float one, and a causal call without a mask give one attention;
    an additive position bias and soft-capping act on the scores; sink logits leave rows short of 1."""
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 4, 5, 3, generator=g), torch.randn(2, 2, 5, 3, generator=g)
    causal = torch.ones(5, 5, dtype=torch.bool).tril()[None, None].expand(2, 1, 5, 5)
    additive = torch.zeros(2, 1, 5, 5).masked_fill(~causal, torch.finfo(torch.float32).min)
    A = rebuild.Call(q, k, causal, causal=True, scaling=0.5).probabilities()
    assert torch.allclose(A, rebuild.Call(q, k, additive, causal=True, scaling=0.5).probabilities(), atol=1e-7)
    assert torch.equal(A, rebuild.Call(q, k, None, causal=True, scaling=0.5).probabilities())
    s = (q @ k.repeat_interleave(2, 1).transpose(-1, -2)) * 0.5              # key group g serves heads 2g, 2g+1
    bias = torch.randn(1, 4, 5, 5, generator=g)
    capped = rebuild.Call(q, k, causal, causal=True, scaling=0.5, softcap=0.7, bias=bias).probabilities()
    expected = torch.softmax((torch.tanh(s / 0.7) * 0.7 + bias).masked_fill(~causal, float("-inf")), -1)
    assert torch.allclose(capped, expected, atol=1e-6)
    sinks = torch.tensor([0.0, 1.0, -1.0, 2.0])
    sunk = rebuild.Call(q, k, causal, causal=True, scaling=0.5, sinks=sinks).probabilities()
    with_sink = torch.cat([s.masked_fill(~causal, float("-inf")), sinks.reshape(1, 4, 1, 1).expand(2, 4, 5, 1)], -1)
    assert torch.allclose(sunk, torch.softmax(with_sink, -1)[..., :-1], atol=1e-6)
    assert bool((sunk.sum(-1) < 1).all())


def test_scores_out_must_fit():
    from connlap_lite.models.rebuild import scores

    q, k = torch.randn(1, 4, 3, 2), torch.randn(1, 2, 3, 2)
    for bad in (torch.empty(1, 4, 3, 2), torch.empty(1, 4, 3, 6)[..., ::2]):
        with pytest.raises(ValueError, match="out must be a contiguous"):
            scores(q, k, 1.0, out=bad)
    # scores of another precision (autocast's half queries) are made in theirs and copied in
    wide = torch.empty(1, 4, 3, 3, dtype=torch.float64)
    assert scores(q.half(), k.half(), 0.5, out=wide) is wide
    assert torch.equal(wide, scores(q.half(), k.half(), 0.5).double())


@pytest.mark.parametrize("name", ["llama-gqa", "gemma3"])
def test_half_precision_is_upcast_for_the_softmax(name):
    eager, sdpa = (m.to(torch.bfloat16) for m in pair(name))
    batch = padded_batch()
    tokens = batch["attention_mask"].bool()
    for lw, E in zip(attention_walks(sdpa, batch, progress=False),
                     (lw.attention for lw in attention_walks(eager, batch, progress=False))):
        assert lw.attention.dtype == torch.float32 and E.dtype == torch.bfloat16
        assert real_rows_error(lw.attention, E.float(), tokens) < 2e-2      # bfloat16's own rounding of E


def test_only_one_layer_of_attention_is_alive(monkeypatch):
    """In the usual loop no finished layer's attention is alive while the forward runs or the next one is built."""
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(LlamaConfig(num_hidden_layers=4, num_attention_heads=4,
                                                         num_key_value_heads=2, hidden_size=32,
                                                         intermediate_size=64, vocab_size=100),
                                             attn_implementation="sdpa").eval()
    built, at_build, at_forward = [], [], []
    real = rebuild.softmax_

    def alive():
        return sum(r() is not None for r in built)

    def counting(logits, allowed=None, sinks=None):       # called on each passage's rows of the layer's attention
        layer = logits if logits._base is None else logits._base
        if not any(r() is layer for r in built):
            at_build.append(alive())
            built.append(weakref.ref(layer))
        return real(logits, allowed, sinks)

    monkeypatch.setattr(rebuild, "softmax_", counting)
    handles = [m.register_forward_pre_hook(lambda *_: at_forward.append(alive())) for m in model.model.layers]
    try:
        for lw in attention_walks(model, padded_batch(), progress=False):
            lw.walk(0)                                    # the reader still holds lw while the forward runs on
    finally:
        for h in handles:
            h.remove()
    assert at_build == [0, 0, 0, 0] and at_forward == [0, 0, 0, 0]
    # a layer asked for again after the stream moved on is built again, the same
    stream = attention_walks(model, padded_batch(), progress=False)
    first = next(stream)
    A0 = first.attention.clone()
    second = next(stream)
    assert first._attention is None and torch.equal(first.attention, A0) and second.layer == 1
    stream.close()
    # a reader who keeps the tensors keeps them: nothing is taken from under it
    built.clear(), at_build.clear()
    kept = [lw.attention for lw in attention_walks(model, padded_batch(), progress=False)]
    assert [A.shape[0] for A in kept] == [3] * 4 and at_build == [0, 1, 2, 3]


def test_a_layer_the_reader_dropped_is_not_held_while_the_forward_runs_on():
    """The stream keeps no reference of its own to a layer's inputs and output once it has handed them over."""
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(LlamaConfig(num_hidden_layers=3, num_attention_heads=4,
                                                         num_key_value_heads=2, hidden_size=32,
                                                         intermediate_size=64, vocab_size=100),
                                             attn_implementation="sdpa").eval()
    handed, alive = [], []
    handles = [m.register_forward_pre_hook(lambda *_: alive.append([r() is not None for r in handed]))
               for m in model.model.layers[1:]]
    try:
        for lw in attention_walks(model, padded_batch(), progress=False):
            lw.walk(0)
            handed += [weakref.ref(lw.inputs), weakref.ref(lw.output)]
            del lw                                        # this reader keeps nothing of a layer it has read
    finally:
        for h in handles:
            h.remove()
    assert alive == [[False, False], [False] * 4]


@pytest.fixture(scope="module", params=["minilm-l6", "smollm2-135m"])
def offline(request):
    eager, tok = load_model(request.param, attn_implementation="eager")
    sdpa, _ = load_model(request.param)
    return request.param, eager, sdpa, tok


def test_offline_models_rebuilt_attention_and_walks(offline):
    from connlap_lite import encode

    name, eager, sdpa, tok = offline
    assert sdpa.config._attn_implementation == rebuild.NAME and eager.config._attn_implementation == "eager"
    batch = encode(tok, ["The cat sat on the mat because it was warm there.", "A short one."], max_tokens=16)
    tokens = batch["attention_mask"].bool()
    assert not bool(tokens.all())                                    # the batch has padding
    reference = [lw.attention for lw in attention_walks(eager, batch, progress=False)]
    worst_p, worst_t2 = 0.0, 0.0
    for lw, E in zip(attention_walks(sdpa, batch, progress=False), reference):
        worst_p = max(worst_p, real_rows_error(lw.attention, E, tokens))
        for i in range(2):
            out, ref = lw.walk(i)(lw.section(i)), lw.reference(i)
            worst_t2 = max(worst_t2, float(torch.linalg.norm(out - ref) / torch.linalg.norm(ref)))
            # every token, padding included (as the chapter's exercise does): padding queries see real keys here
            full = walk_from_heads(lw.attention[i], lw.transports, offset=lw.transports.offset)(lw.inputs[i])
            worst_t2 = max(worst_t2, float(torch.linalg.norm(full - lw.output[i]) / torch.linalg.norm(lw.output[i])))
    assert worst_p <= TOL, (name, worst_p)
    assert worst_t2 < 1e-5, (name, worst_t2)


def test_load_model_attention_option(offline):
    with pytest.raises(ValueError, match="attn_implementation must be 'sdpa' .* or 'eager' .*got 'flash'"):
        load_model("minilm-l6", attn_implementation="flash")
    with pytest.raises(ValueError, match="attn_implementation must be"):
        load_model("minilm-l6", attn_implementation=None)



def test_non_finite_rebuilt_attention_is_caught_at_its_layer():
    _, model = pair("llama-gqa")
    with torch.no_grad():
        model.model.layers[1].self_attn.q_proj.weight[0, 0] = float("nan")
    layers = attention_walks(model, padded_batch(), progress=False)
    assert bool(torch.isfinite(next(layers).attention).all())
    second = next(layers)
    with pytest.raises(ValueError, match=r"layer 1 of LlamaForCausalLM: its attention hold \d+ NaN or inf entries in "
                                         r"torch.float32; its weights"):
        second.attention
    layers.close()


@pytest.mark.parametrize("name", list(CONFIGS))
def test_a_layer_asked_for_after_the_stream_moved_on_is_built_again_from_its_module(name):
    """Once the stream has moved on, a layer keeps no queries and keys: asked for again, the module runs once more
    on the inputs it had (no hook fires, no output computed) and gives the same attention, bit for bit."""
    _, sdpa = pair(name)
    stream = attention_walks(sdpa, padded_batch(), progress=False)
    first = next(stream)
    A0 = first.attention.clone()
    calls = []
    handle = rebuild.register()
    from connlap_lite.models.adapters import adapter_for

    hooks = [m.register_forward_pre_hook(lambda *_: calls.append(1)) for m in adapter_for(sdpa).layers(sdpa)]
    try:
        second = next(stream)
        assert first._build.call is None and first._attention is None        # released: nothing of its call kept
        n_forward = len(calls)
        assert torch.equal(first.attention, A0)                              # built again, the same
        assert len(calls) == n_forward                          # no attention module's hook ran for it
        assert second.layer == 1
    finally:
        for h in hooks:
            h.remove()
        stream.close()
    assert handle is None and not rebuild._ROUTES and not rebuild._SWITCHED
    assert sdpa.config._attn_implementation == "sdpa"
