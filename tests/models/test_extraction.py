"""Streaming extraction on tiny random models of the first six families (built offline), and the batch keys.

Every walk test runs on both sources of the attention: the weights an eager-attention model returns
(``attention="eager"``) and the attention built from the model's queries and keys while it runs SDPA (``"logits"``).
"""
import math

import pytest
import torch
from transformers import (AutoModel, AutoModelForCausalLM, BertConfig, Gemma3TextConfig, GPT2Config,
                          LlamaConfig, MistralConfig, Qwen2Config)

from connlap_lite import ConnectionWalk, attention_walks, head_transports
from connlap_lite.models.adapters import adapter_for

CONFIGS = {
    "gpt2": lambda: GPT2Config(n_layer=2, n_head=4, n_embd=32, vocab_size=100, n_positions=64,
                               bos_token_id=0, eos_token_id=0),
    "bert": lambda: BertConfig(num_hidden_layers=2, num_attention_heads=4, hidden_size=32, intermediate_size=64,
                               vocab_size=100, max_position_embeddings=64),
    "llama-gqa": lambda: LlamaConfig(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                     hidden_size=32, intermediate_size=64, vocab_size=100),
    "qwen2-bias": lambda: Qwen2Config(num_hidden_layers=2, num_attention_heads=6, num_key_value_heads=2,
                                      hidden_size=48, intermediate_size=64, vocab_size=100),
    "mistral-window": lambda: MistralConfig(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1,
                                            hidden_size=32, intermediate_size=64, vocab_size=100, sliding_window=3),
    "gemma3-local-global": lambda: Gemma3TextConfig(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1,
                                                    hidden_size=32, head_dim=16, intermediate_size=64, vocab_size=100,
                                                    sliding_window=3,
                                                    layer_types=["sliding_attention", "full_attention"]),
}


PATHS = {"eager": "eager", "logits": "sdpa"}          # attention source -> the implementation the model runs


def tiny(name, implementation="eager"):
    torch.manual_seed(0)
    auto = AutoModel if name == "bert" else AutoModelForCausalLM
    return auto.from_config(CONFIGS[name](), attn_implementation=implementation).eval()


def unequal_batch():
    ids = torch.randint(1, 100, (3, 8), generator=torch.Generator().manual_seed(1))
    mask = torch.tensor([[1] * 8, [1] * 5 + [0] * 3, [1] * 2 + [0] * 6])
    return {"input_ids": ids, "attention_mask": mask}


def rel(a, b):
    return float(torch.linalg.norm(a - b) / torch.linalg.norm(b))


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("name", list(CONFIGS))
def test_t2_reconstructs_every_layer(name, path):
    model = tiny(name, PATHS[path])
    batch = unequal_batch()
    seen = 0
    for lw in attention_walks(model, batch, progress=False, attention=path):
        for i, length in enumerate(batch["attention_mask"].sum(1).tolist()):
            walk = lw.walk(i)
            assert walk.n == length
            assert rel(walk(lw.section(i)), lw.reference(i)) < 1e-5
            assert torch.allclose(walk.P.sum(1), torch.ones(length), atol=1e-5)
        seen += 1
    assert seen == len(adapter_for(model).layers(model))


@pytest.mark.parametrize("name", ["gpt2", "llama-gqa"])
def test_walk_reads_its_gates_from_the_attention_and_owns_them_once_the_stream_moves_on(name):
    """``lw.walk(i)`` stores no second (H, n, n) array: its gates come from the attention as they are needed,
    the same numbers as ``walk_from_heads`` (bit for bit); asked before the layer's attention, it builds its
    passage's alone, which is its own; a walk kept past its layer holds no more than its own passage's."""
    from connlap_lite import HeadTransports, walk_from_heads

    model = tiny(name, "sdpa")
    batch = unequal_batch()
    kept = []
    for lw in attention_walks(model, batch, progress=False):
        walk = lw.walk(0)
        assert lw._attention is None                                 # the layer's attention is not built for it
        assert walk.transport._weights is None                       # nothing formed yet
        F = torch.randn(walk.n, walk.d, generator=torch.Generator().manual_seed(lw.layer))
        heads = HeadTransports(lw.transports.U, lw.transports.V)
        ref = walk_from_heads(lw.attention[0].clone(), heads, offset=lw.transports.offset)
        assert torch.equal(walk.P, ref.P)
        assert torch.equal(walk.transport.apply(walk.P, F), ref.transport.apply(ref.P, F))
        assert walk.transport._weights is None                       # applying it formed nothing either
        kept.append((walk, ref, F))
        later = lw.walk(1)                                          # read from the layer's attention, built now
        m = later.n                                                 # (passage 1 is right-padded)
        kept.append((later, walk_from_heads(lw.attention[1][:, :m, :m].clone(), heads, offset=lw.transports.offset),
                     F[:m]))
        assert torch.equal(later.P, kept[-1][1].P)
        lw.walk(1)                                                  # a walk dropped at once is left alone
    for walk, ref, F in kept:                                        # each layer's attention is gone by now
        base = walk.transport._base                                  # the gates formed, or the passage's own
        assert base is None or base.untyped_storage().nbytes() <= base[0].numel() * base.shape[0] * base.element_size()
        assert torch.equal(walk.transport.weights, ref.transport.weights)
        assert torch.equal(walk(F), ref(F))


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("name", list(CONFIGS))
def test_t1_head_by_head(name, path):
    model = tiny(name, PATHS[path])
    lw = next(attention_walks(model, unequal_batch(), progress=False, attention=path))
    X = lw.section(0)
    T = lw.transports.dense()
    keep = lw.tokens[0]
    total = sum(ConnectionWalk(lw.attention[0, h][keep][:, keep], T[h])(X) for h in range(T.shape[0]))
    if lw.transports.offset is not None:
        total = total + lw.transports.offset
    assert rel(total, lw.reference(0)) < 1e-5


@pytest.mark.parametrize("path", list(PATHS))
def test_masks_are_the_ones_used(path):
    model = tiny("mistral-window", PATHS[path])
    lw = next(attention_walks(model, unequal_batch(), progress=False, attention=path))
    A = lw.attention[0, 0]
    i, j = torch.meshgrid(torch.arange(8), torch.arange(8), indexing="ij")
    allowed = (j <= i) & (i - j < 3)
    assert bool((A[~allowed] == 0).all()) and bool((A[allowed] > 0).all())
    assert lw.mask == {"causal": True, "window": 3}
    layers = list(attention_walks(tiny("gemma3-local-global", PATHS[path]), unequal_batch(), progress=False,
                                  attention=path))
    assert [lw.mask["window"] for lw in layers] == [3, None]
    enc = next(attention_walks(tiny("bert", PATHS[path]), unequal_batch(), progress=False, attention=path))
    assert bool((enc.attention[1, :, :, 5:] == 0).all()) and bool((enc.attention[1, :, :5, :5] > 0).all())


def test_head_transports_from_raw_weights_llama_gqa():
    model = tiny("llama-gqa")
    sd = model.state_dict()
    Wv, Wo = sd["model.layers.1.self_attn.v_proj.weight"], sd["model.layers.1.self_attn.o_proj.weight"]
    heads = head_transports(model, 1)
    for h in range(4):
        g = h // 2
        expected = Wo[:, h * 8:(h + 1) * 8] @ Wv[g * 8:(g + 1) * 8]
        assert rel(heads.dense()[h], expected) < 1e-6
    assert heads.groups.tolist() == [0, 0, 1, 1]


def test_head_transports_from_raw_weights_gpt2_conv1d():
    model = tiny("gpt2")
    with torch.no_grad():
        for p in (model.transformer.h[0].attn.c_attn.bias, model.transformer.h[0].attn.c_proj.bias):
            p.normal_()
    sd = model.state_dict()
    W, b = sd["transformer.h.0.attn.c_attn.weight"], sd["transformer.h.0.attn.c_attn.bias"]
    P, bp = sd["transformer.h.0.attn.c_proj.weight"], sd["transformer.h.0.attn.c_proj.bias"]
    heads = head_transports(model, 0)
    Wv = W[:, 64:96]                        # Conv1D: x @ W, (in, out)
    for h in range(4):
        expected = (Wv[:, h * 8:(h + 1) * 8] @ P[h * 8:(h + 1) * 8]).T
        assert rel(heads.dense()[h], expected) < 1e-6
    assert rel(heads.offset, b[64:96] @ P + bp) < 1e-6


@pytest.mark.parametrize("path", list(PATHS))
def test_attention_from_raw_weights_bert(path):
    model = tiny("bert", PATHS[path])
    batch = unequal_batch()
    lw = next(attention_walks(model, batch, progress=False, attention=path))
    sd = model.state_dict()
    X = lw.inputs[1]
    q = X @ sd["encoder.layer.0.attention.self.query.weight"].T + sd["encoder.layer.0.attention.self.query.bias"]
    k = X @ sd["encoder.layer.0.attention.self.key.weight"].T + sd["encoder.layer.0.attention.self.key.bias"]
    q, k = q.reshape(8, 4, 8).transpose(0, 1), k.reshape(8, 4, 8).transpose(0, 1)
    s = q @ k.transpose(1, 2) / math.sqrt(8)
    s = s.masked_fill(~batch["attention_mask"][1].bool()[None, None], float("-inf"))
    assert rel(lw.attention[1], torch.softmax(s, -1)) < 1e-5


@pytest.mark.parametrize("path", list(PATHS))
def test_hooks_removed_even_after_an_error_in_the_loop(path):
    model = tiny("llama-gqa", PATHS[path])
    modules = adapter_for(model).layers(model)
    with pytest.raises(RuntimeError, match="boom"):
        for lw in attention_walks(model, unequal_batch(), progress=False, attention=path):
            raise RuntimeError("boom")
    assert all(not m._forward_pre_hooks and not m._forward_hooks for m in modules)


@pytest.mark.parametrize("path", list(PATHS))
def test_early_stop_and_a_paused_stream_leave_the_model_usable(path):
    model = tiny("llama-gqa", PATHS[path])
    modules = adapter_for(model).layers(model)
    batch = unequal_batch()
    stream = attention_walks(model, batch, progress=False, attention=path)
    first = next(stream)                                  # the forward now waits at layer 1
    with torch.no_grad():                                 # the caller's own forward is not held up by it
        logits = model(**batch).logits
    assert logits.shape[:2] == (3, 8)
    stream.close()                                        # stop early: thread ended, hooks gone
    assert all(not m._forward_pre_hooks and not m._forward_hooks for m in modules)
    again = [lw.layer for lw in attention_walks(model, batch, progress=False, attention=path)]
    assert again == [0, 1] and first.layer == 0
    assert first.attention.shape == (3, 4, 8, 8)          # built after the stream ended, from what it kept


@pytest.mark.parametrize("path", list(PATHS))
def test_each_attention_module_runs_once(path):
    model = tiny("gpt2", PATHS[path])
    modules = adapter_for(model).layers(model)
    calls = []
    handles = [m.register_forward_pre_hook(lambda mod, args, i=i: calls.append(i)) for i, m in enumerate(modules)]
    try:
        layers = [(lw.layer, lw.attention.shape) for lw in attention_walks(model, unequal_batch(), progress=False,
                                                                           attention=path)]
    finally:
        for h in handles:
            h.remove()
    assert [l for l, _ in layers] == [0, 1] and calls == [0, 1]


def test_hooks_removed_when_the_forward_fails():
    model = tiny("gpt2")
    bad = {"input_ids": torch.full((1, 4), 10_000)}          # out of the vocabulary: refused before the forward
    with pytest.raises(ValueError, match=r"input_ids must be token ids in \[0, 100\)"):
        next(attention_walks(model, bad, progress=False))
    # a forward that fails midway: tests/contracts/test_numbers.py::test_forward_failure_mid_stream_leaves_no_hook
    assert all(not m._forward_pre_hooks and not m._forward_hooks for m in adapter_for(model).layers(model))


def test_errors():
    model = tiny("gpt2")
    with pytest.raises(ValueError, match=r"layers must hold indices in \[0, 2\)"):
        next(attention_walks(model, unequal_batch(), layers=[5]))
    with pytest.raises(TypeError, match="batch must be a tensor of token ids"):
        next(attention_walks(model, [1, 2, 3]))
    with pytest.raises(ValueError, match=r"layer must be an int in \[0, 2\)"):
        head_transports(model, 2)

    class Other(torch.nn.Module):
        config = type("C", (), {"model_type": "t5"})()
    with pytest.raises(ValueError, match="unsupported architecture 't5'.*supported families: bert/roberta/.*gpt2"):
        head_transports(Other(), 0)
    sdpa = AutoModelForCausalLM.from_config(CONFIGS["llama-gqa"](), attn_implementation="sdpa").eval()
    for bad in ("sdpa", None, 1):
        with pytest.raises(ValueError, match="attention must be one of 'auto', 'logits', 'eager', got"):
            next(attention_walks(sdpa, unequal_batch(), attention=bad))


def test_numpy_integers_are_indices():
    """Layers, a passage and a head-transport layer given as numpy integers are taken as the ints they are."""
    import numpy as np

    model = tiny("gpt2")
    lw = next(attention_walks(model, unequal_batch(), layers=[np.int64(1)]))
    assert lw.layer == 1 and type(lw.layer) is int
    assert torch.equal(lw.walk(np.int64(0)).P, lw.walk(0).P)
    assert torch.equal(head_transports(model, np.int32(1)).U, head_transports(model, 1).U)
    with pytest.raises(ValueError, match=r"layers must hold indices in \[0, 2\), got 1.0"):
        next(attention_walks(model, unequal_batch(), layers=[1.0]))


def test_eager_source_on_an_sdpa_model_is_its_eager_attention():
    """``attention="eager"`` runs the model's own eager function for the stream, whatever the model was loaded
    with, and gives back the implementation it had."""
    sdpa, eager = tiny("llama-gqa", "sdpa"), tiny("llama-gqa", "eager")
    batch = unequal_batch()
    with torch.no_grad():
        reference = eager(**batch, output_attentions=True).attentions
    for lw in attention_walks(sdpa, batch, progress=False, attention="eager"):
        assert lw._build is None and float((lw.attention - reference[lw.layer]).abs().max()) < 1e-6
    assert sdpa.config._attn_implementation == "sdpa"


# ---- every batch key honoured or refused (each against the model's own forward on that batch) ----

def reference_attention(name, batch):
    with torch.no_grad():
        return tiny(name, "eager")(**batch, output_attentions=True).attentions


def test_token_type_ids_reach_the_forward():
    batch = {**unequal_batch(), "token_type_ids": torch.tensor([[0] * 4 + [1] * 4] * 3)}
    reference, plain = reference_attention("bert", batch), reference_attention("bert", unequal_batch())
    tokens = batch["attention_mask"].bool()
    for lw in attention_walks(tiny("bert", "sdpa"), batch, progress=False):
        P = lw.attention
        assert float((P - reference[lw.layer]).abs().amax((1, 3))[tokens].max()) < 1e-5
        assert float((P - plain[lw.layer]).abs().max()) > 1e-3          # the types change what the model attends
        for i in range(3):
            assert rel(lw.walk(i)(lw.section(i)), lw.reference(i)) < 1e-5
    with pytest.raises(ValueError, match=r"token_type_ids must be in \[0, 2\) for this model"):
        next(attention_walks(tiny("bert"), {**batch, "token_type_ids": torch.full((3, 8), 2)}))


@pytest.mark.parametrize("name", ["llama-gqa", "gemma3-local-global", "gpt2"])
def test_position_ids_reach_the_forward_and_the_rotary_positions(name):
    spread = torch.stack([torch.arange(8), 2 * torch.arange(8), torch.tensor([3, 1, 4, 1, 5, 9, 2, 6])])
    batch = {**unequal_batch(), "position_ids": spread}          # not a shift: rotary sees relative positions
    reference, plain = reference_attention(name, batch), reference_attention(name, unequal_batch())
    tokens = batch["attention_mask"].bool()
    moved = 0.0
    for lw in attention_walks(tiny(name, "sdpa"), batch, progress=False):
        P = lw.attention
        assert float((P - reference[lw.layer]).abs().amax((1, 3))[tokens].max()) < 1e-5
        moved = max(moved, float((P[1:] - plain[lw.layer][1:]).abs().max()))
        for i in range(3):
            assert rel(lw.walk(i)(lw.section(i)), lw.reference(i)) < 1e-5
    assert moved > 1e-3                                                 # the positions changed the attention


@pytest.mark.parametrize("key, value, message", [
    ("labels", torch.zeros(3, 8, dtype=torch.long), "batch key 'labels' is refused: attention_walks computes no loss"),
    ("past_key_values", None, "batch key 'past_key_values' is refused: .*without a key/value cache"),
    ("inputs_embeds", torch.zeros(3, 8, 32), "batch key 'inputs_embeds' is refused: the stream reads token ids"),
    ("pixel_values", torch.zeros(3, 8), r"batch key 'pixel_values' is not an input of LlamaForCausalLM.forward "
                                        r"\(it takes input_ids, attention_mask, position_ids"),
    ("position_ids", torch.zeros(3, 7, dtype=torch.long), r"position_ids must be an integer tensor of the shape of "
                                                          r"input_ids \(3, 8\), got \(3, 7\)"),
    ("position_ids", torch.zeros(3, 8), r"position_ids must be an integer tensor .* of torch.float32"),
])
def test_other_batch_keys_are_refused_by_name(key, value, message):
    model = tiny("llama-gqa", "sdpa")
    with pytest.raises(ValueError, match=message):
        next(attention_walks(model, {**unequal_batch(), key: value}, progress=False))
    assert all(not m._forward_hooks for m in model.modules()) and model.config._attn_implementation == "sdpa"


def test_a_tokenizers_batch_encoding_is_a_batch():
    from transformers import BatchEncoding

    batch = BatchEncoding({**unequal_batch(), "token_type_ids": torch.zeros(3, 8, dtype=torch.long)})
    layers = [lw.layer for lw in attention_walks(tiny("bert", "sdpa"), batch, progress=False)]
    assert layers == [0, 1]


def test_gpu_8b_benchmark_runs_tiny_on_cpu(tmp_path):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_8b.py"
    spec = importlib.util.spec_from_file_location("gpu_8b", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    report = bench.main(["--tiny", "--device", "cpu", "--dtype", "float32", "--tokens", "16",
                         "--json", str(tmp_path / "r.json")])
    layers = report["runs"][0]["layers"]
    assert len(layers) == 3
    assert all(m["walk_error"] < 1e-5 for m in layers)
    assert (tmp_path / "r.json").exists()
