"""The rival readings' measures against independent computations on tiny models: the ablation cost is the loss
difference of a forward with that layer's output map zeroed (its bias too), the mean ablation that of a forward
whose output map returns the mean update; the update ratio from the stream's own output and the forward's hidden
states; the self-loop share by a loop; each token's own value from the model's value and output maps; the
dominance and the top direction from dense SVDs; and the hooks removed whatever happens."""
from __future__ import annotations

import copy

import pytest
import torch

from connlap_lite.measure import metrics as M
from connlap_lite.measure import rivals as R
from connlap_lite.models.adapters import adapter_for
from connlap_lite.models.extraction import as_batch
from connlap_lite.measure.analysis import edge_values, _own_values, analyze, measure
from connlap_lite.measure.edges import edge_singular_values
from connlap_lite.models.extraction import attention_walks
from connlap_lite.verdicts.record import RIVAL_EDGE_METRICS, RIVAL_HEAD_METRICS, RIVAL_METRICS, Report

from tiny_models import build, make_gpt_neox_folder

FAMILIES = ("gpt_neox", "llama", "qwen2", "bert", "gpt2")
NORMED = ("gemma3", "olmo2")    # the attention's output normalised once more before the residual stream
OUTPUT_MAPS = {"gpt_neox": "gpt_neox.layers.{}.attention.dense", "llama": "model.layers.{}.self_attn.o_proj",
               "qwen2": "model.layers.{}.self_attn.o_proj", "gpt2": "transformer.h.{}.attn.c_proj"}


def _ours(model) -> int:
    """How many of connlap_lite's hooks are on ``model`` (transformers keeps hooks of its own)."""
    return sum(getattr(h, "__module__", "").startswith("connlap_lite") for m in model.modules()
               for h in m._forward_hooks.values())


def _batch(vocab=100, B=3, n=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    return {"input_ids": torch.randint(1, vocab, (B, n), generator=g), "attention_mask": torch.ones(B, n, dtype=torch.long)}


def _loss(model, batch):
    """Per passage next-token loss by torch's own cross-entropy (not metrics.next_token_loss)."""
    with torch.no_grad():
        z = model(**batch, use_cache=False).logits
    ids = batch["input_ids"]
    return torch.stack([torch.nn.functional.cross_entropy(z[b, :-1].double(), ids[b, 1:]) for b in range(len(ids))])


class _Constant(torch.nn.Module):
    """A module that returns ``value`` in the shape of its input (a norm replaced by a mean update)."""

    def __init__(self, value):
        super().__init__()
        self.value = value

    def forward(self, x):
        return self.value.to(x.dtype).expand_as(x).clone()


@pytest.mark.parametrize("family", ["gpt_neox", "llama", "qwen2", "gpt2", "gemma3"])
def test_ablation_cost_is_the_loss_difference_with_the_output_map_zeroed(family):
    model, batch = build(family), _batch()
    updates = R.layer_updates(model, batch, encoder=False)
    assert torch.allclose(updates["base"], _loss(model, batch), atol=1e-5)
    costs = R.ablation_costs(model, batch, encoder=False, base=updates["base"], mean_updates=updates["mean_updates"])
    for layer in range(2):
        zeroed, meaned = copy.deepcopy(model), copy.deepcopy(model)
        if family in NORMED:     # zero in, zero out of the RMSNorm; the mean update is what comes out of the norm
            zeroed.get_submodule(f"{OUTPUT_MAPS['llama'].format(layer)}").weight.data.zero_()
            meaned.model.layers[layer].post_attention_layernorm = _Constant(updates["mean_updates"][layer])
            assert torch.allclose(costs["ablation_zero"][layer], _loss(zeroed, batch) - _loss(model, batch), atol=1e-5)
            assert torch.allclose(costs["ablation_mean"][layer], _loss(meaned, batch) - _loss(model, batch), atol=1e-5)
            continue
        for twin, bias in ((zeroed, 0.0), (meaned, updates["mean_updates"][layer])):
            proj = twin.get_submodule(OUTPUT_MAPS[family].format(layer))
            with torch.no_grad():
                proj.weight.zero_()
                if proj.bias is None:
                    proj.bias = torch.nn.Parameter(torch.zeros(32))
                proj.bias.copy_(torch.as_tensor(bias, dtype=proj.bias.dtype))
        assert torch.allclose(costs["ablation_zero"][layer], _loss(zeroed, batch) - _loss(model, batch), atol=1e-5)
        assert torch.allclose(costs["ablation_mean"][layer], _loss(meaned, batch) - _loss(model, batch), atol=1e-5)
    assert _ours(model) == 0          # every hook removed


@pytest.mark.parametrize("family", FAMILIES + NORMED)
def test_ablations_skip_the_blocks_before_the_layer_and_agree_with_whole_forwards(family):
    """The blocks before the ablated layer are not run again (their outputs are the intact forward's), and the
    costs are those of whole forwards, to float rounding; every block's own ``forward`` is back afterwards."""
    model, batch = build(family), _batch()
    encoder = family == "bert"
    blocks = R._stack(model)
    assert blocks is not None and len(blocks) == len(R.output_projections(model))
    calls = []                               # each block's attention runs only where its block runs
    handles = [a.register_forward_pre_hook(lambda m, a, l=l: calls.append(l))
               for l, a in enumerate(adapter_for(model).layers(model))]
    updates = R.layer_updates(model, batch, encoder=encoder)
    calls.clear()
    costs = R.ablation_costs(model, batch, encoder=encoder, mean_updates=updates["mean_updates"])
    for h in handles:
        h.remove()
    L = len(blocks)
    # the intact forward runs every block; ablating layer l runs l .. L-1, twice (zero, mean)
    assert sorted(calls) == sorted(list(range(L)) + [l for layer in range(L) for l in range(layer, L)] * 2)
    assert all("forward" not in b.__dict__ for b in blocks) and _ours(model) == 0
    for layer, mean in enumerate(updates["mean_updates"]):
        for key, value in (("ablation_zero", torch.zeros_like(mean)), ("ablation_mean", mean)):
            with R.replaced_outputs(model, {layer: value}):
                whole = R._readout(model, as_batch(batch, "cpu", model), encoder)
            want = M.representation_change(whole, updates["base"]) if encoder else whole - updates["base"]
            assert torch.allclose(costs[key][layer], want, atol=1e-6), (family, key, layer)


def test_an_encoders_ablation_cost_is_the_change_of_its_final_states():
    model, batch = build("bert"), _batch()
    updates = R.layer_updates(model, batch, encoder=True)
    costs = R.ablation_costs(model, batch, encoder=True, base=updates["base"], mean_updates=updates["mean_updates"])
    twin = copy.deepcopy(model)
    dense = twin.encoder.layer[1].attention.output.dense
    with torch.no_grad():
        dense.weight.zero_()
        dense.bias.zero_()
        h, h0 = twin(**batch).last_hidden_state.double(), model(**batch).last_hidden_state.double()
    want = ((h - h0).norm(dim=-1) / h0.norm(dim=-1)).mean(-1)
    assert torch.allclose(costs["ablation_zero"][1], want, atol=1e-6)
    assert (costs["ablation_zero"][0] > 0).all()


@pytest.mark.parametrize("family", FAMILIES + NORMED)
def test_update_ratio_and_own_values_agree_with_the_stream_and_the_weights(family):
    model, batch = build(family), _batch()
    encoder = family == "bert"
    with torch.no_grad():
        hidden = model(**batch, output_hidden_states=True).hidden_states
    got = R.layer_updates(model, batch, encoder=encoder)["update_ratio"]
    for lw in attention_walks(model, batch, progress=False):
        a, r = lw.output.double(), hidden[lw.layer].double()
        if family in NORMED:            # what the block adds: the attention's output through its own norm
            with torch.no_grad():
                a = model.model.layers[lw.layer].post_attention_layernorm(lw.output).double()
        want = torch.tensor([sum(float(a[b, i].norm() / r[b, i].norm()) for i in range(a.shape[1])) / a.shape[1]
                             for b in range(a.shape[0])], dtype=torch.float64)
        assert torch.allclose(got[lw.layer], want, rtol=1e-4)
        output, values = _own_values(lw)
        dense = lw.transports.dense().double().sum(0)                   # sum_h T_h, then applied to each token
        assert torch.allclose(values, lw.inputs.double() @ dense.T, atol=1e-8)
        # the output is the walk's mixture of the values: with the attention's own rows, A^h_ij T_h x_j summed
        mix = torch.einsum("bhij,hde,bje->bid", lw.attention.double(), lw.transports.dense().double(),
                           lw.inputs.double())
        assert torch.allclose(output, mix, atol=1e-4)


def test_self_loop_share_and_alignment_by_a_loop():
    g = torch.Generator().manual_seed(1)
    P = torch.rand(2, 5, 5, generator=g, dtype=torch.float64).tril()
    P /= P.sum(-1, keepdim=True)
    sinks = [0]
    want = []
    for b in range(2):
        diag = []
        for i in range(1, 5):
            row = P[b, i].clone()
            row[0] = 0
            diag.append(float(row[i] / row.sum()))
        want.append(sum(diag) / len(diag))
    assert torch.allclose(M.self_loop_share(P, sinks), torch.tensor(want, dtype=torch.float64))
    assert M.uniform_self_loop(5, True, sinks) == pytest.approx(sum(1 / i for i in range(1, 5)) / 4)
    o, v = torch.randn(2, 5, 3, generator=g), torch.randn(2, 5, 3, generator=g)
    cos = [[float(o[b, i] @ v[b, i] / (o[b, i].norm() * v[b, i].norm())) for i in range(5)] for b in range(2)]
    assert torch.allclose(M.self_alignment(o, v), torch.tensor(cos, dtype=torch.float64).mean(-1), atol=1e-6)


@pytest.mark.parametrize("family", ["llama", "bert"])
def test_dominance_and_top_direction_agree_with_dense_svds(family):
    model, batch = build(family), _batch()
    for lw in attention_walks(model, batch, progress=False):
        heads = lw.transports
        s = torch.linalg.svdvals(heads.dense().double())
        assert torch.allclose(M.head_dominance(heads), s[:, 0] ** 2 / (s ** 2).sum(-1), atol=1e-10)
        U, S, _ = torch.linalg.svd(heads.sum().double())
        assert abs(float(M.top_direction(heads) @ U[:, 0])) == pytest.approx(1.0, abs=1e-8)
        # one edge's gated transport, dense: H sum_h gamma^h T_h
        A = lw.attention.double()
        i, j = 5, 2
        gamma = A[0, :, i, j] / A[0, :, i, j].sum()
        T = heads.n_heads * torch.einsum("h,hde->de", gamma, heads.dense().double())
        s_edge = edge_singular_values(A[0], heads, torch.tensor([i]), torch.tensor([j]))[0]
        want = torch.linalg.svdvals(T)
        assert float(M.spectral_dominance(s_edge)) == pytest.approx(float(want[0] ** 2 / (want ** 2).sum()), rel=1e-6)
        values = edge_values(lw, A.mean(1), [0], {"rotation": heads})
        assert torch.allclose(values["edge_dominance"], values["edge_dominance_rotation"])   # the same heads


def test_hooks_are_removed_when_the_forward_fails():
    model, batch = build("llama"), _batch()
    with pytest.raises(RuntimeError, match="planted"):
        with R.replaced_outputs(model, {0: torch.zeros(32)}):
            assert _ours(model) == 1
            raise RuntimeError("planted")
    with pytest.raises(RuntimeError, match="planted"):
        with R.recorded_outputs(model) as kept:
            model(**batch)
            assert sorted(kept) == [0, 1] and _ours(model) == 2
            raise RuntimeError("planted")
    assert _ours(model) == 0


def test_measure_and_analyze_record_the_rivals(tmp_path, monkeypatch):
    monkeypatch.setenv("CONNLAP_CACHE", str(tmp_path / "cache"))
    folder = make_gpt_neox_folder(tmp_path / "neox")
    report = analyze(str(folder), n_passages=3, n_tokens=12, random_seeds=(0, 1), data_seeds=(0,))
    assert isinstance(report, Report)
    trained, first, second = (report["conditions"][c] for c in ("trained", "random0", "random1"))
    for key in RIVAL_METRICS + RIVAL_HEAD_METRICS + RIVAL_EDGE_METRICS:
        assert len(trained[key]) == report["layers"], key
    assert "ablation_zero" not in first and "ablation_zero" not in second    # the trained model's alone
    assert all(len(v) == 2 for v in trained["ablation_zero"])             # (its first ABLATION_PASSAGES of 3)
    assert "head_dominance" in second and "head_dominance_gaussian" not in second
    assert set(report["rival_seconds"]) == {"trained", "random0", "random1", "shuffled"}
    assert report["rival_seconds"]["trained"]["ablation"] > 0
    # off: none of the rival keys, and no hook left behind
    model = build("gpt_neox")
    plain = measure(model, _batch(), encoder=False, rival=False)
    assert not set(plain) & set(RIVAL_METRICS + RIVAL_HEAD_METRICS + RIVAL_EDGE_METRICS)
    assert _ours(model) == 0
    # analyze(rivals=False): the same walks' numbers, none of the rival keys, a cache entry of its own
    bare = analyze(str(folder), n_passages=3, n_tokens=12, random_seeds=(0, 1), data_seeds=(0,), rivals=False)
    assert bare["rivals"] is False and "rivals" not in report
    for cond in ("trained", "random0", "shuffled"):
        assert not set(bare["conditions"][cond]) & set(RIVAL_METRICS + RIVAL_HEAD_METRICS + RIVAL_EDGE_METRICS)
        for key in ("tv_norm_nosink", "head_defect", "sink"):
            if key in report["conditions"][cond]:
                assert bare["conditions"][cond][key] == report["conditions"][cond][key], (cond, key)
    assert not any(bare["rival_seconds"].values())
    again = analyze(str(folder), n_passages=3, n_tokens=12, random_seeds=(0, 1), data_seeds=(0,))
    assert "ablation_zero" in again["conditions"]["trained"]                 # (not the bare report, cached)
    with pytest.raises(TypeError, match="rivals must be True or False"):
        analyze(str(folder), n_passages=3, n_tokens=12, rivals="no")


def test_passages_in_chunks_give_the_same_numbers(monkeypatch):
    model, batch = build("llama"), _batch(B=5)
    whole = R.layer_updates(model, batch, encoder=False, directions={"u": [torch.ones(32)] * 2})
    whole_costs = R.ablation_costs(model, batch, encoder=False, base=whole["base"], mean_updates=whole["mean_updates"])
    monkeypatch.setattr(R, "LOGIT_BYTES", 2 * 12 * 100 * 4)              # two passages' logits at a time
    parts = R.layer_updates(model, batch, encoder=False, directions={"u": [torch.ones(32)] * 2})
    costs = R.ablation_costs(model, batch, encoder=False, base=parts["base"], mean_updates=parts["mean_updates"])
    for key in ("update_ratio", "u", "mean_updates"):
        assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(whole[key], parts[key])), key
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(whole_costs["ablation_mean"], costs["ablation_mean"]))


@pytest.mark.parametrize("family", ["gpt_neox", "bert", "qwen2"])
def test_measure_reads_the_updates_from_the_streams_own_forward(family):
    """measure keeps each layer's residual and update from the stream's forward (hooks in its worker thread, and
    BERT's output map run again by the reader): the same update ratios as a forward of their own."""
    model, batch = build(family), _batch()
    encoder = family == "bert"
    got = measure(model, batch, encoder=encoder)["update_ratio"]
    want = R.layer_updates(model, batch, encoder=encoder)["update_ratio"]
    assert all(torch.allclose(torch.tensor(a, dtype=torch.float64), b, atol=1e-6) for a, b in zip(got, want))
    assert _ours(model) == 0
