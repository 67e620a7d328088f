"""`python -m connlap_lite analyze smollm2-135m --json` against an independent computation from raw weights."""
import json
import subprocess
import sys

import numpy as np
import pytest
import torch


@pytest.fixture(scope="module")
def smollm2_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "out.json"
    r = subprocess.run([sys.executable, "-m", "connlap_lite", "analyze", "smollm2-135m", "--passages", "2",
                        "--tokens", "24", "--json", str(out), "--no-cache"],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(out.read_text())


def test_cli_agrees_with_raw_weights(smollm2_report):
    from connlap_lite import load_model, passages

    rep = smollm2_report
    model, tok = load_model("smollm2-135m", attn_implementation="eager")     # eager: it returns its attention
    sd = {k: v.double().numpy() for k, v in model.state_dict().items() if "self_attn" in k or "input_layernorm" in k}
    H, G, d = model.config.num_attention_heads, model.config.num_key_value_heads, model.config.hidden_size
    dh = d // H
    assert rep["layers"] == model.config.num_hidden_layers and rep["heads"] == H and rep["groups"] == G
    for layer in (0, 14, 29):
        Wv = sd[f"model.layers.{layer}.self_attn.v_proj.weight"]
        Wo = sd[f"model.layers.{layer}.self_attn.o_proj.weight"]
        gain = sd[f"model.layers.{layer}.input_layernorm.weight"]
        for h in range(H):
            g = h // (H // G)
            T = Wo[:, h * dh:(h + 1) * dh] @ Wv[g * dh:(g + 1) * dh]
            for key, M in (("head_defect", T), ("head_defect_gain", T * gain[None, :])):
                s = np.linalg.svd(M, compute_uv=False)[:dh]
                eps = np.sqrt(1 - s.sum() ** 2 / (dh * (s ** 2).sum()))
                assert abs(rep["conditions"]["trained"][key][layer][h] - eps) < 1e-6
    # the sink columns and their mass from Hugging Face's own attention output (output_attentions=True), not our
    # hooks: a sink column receives more than SINK_MULTIPLE / n of the attention, averaged over queries and passages
    batch = passages(tok, 2, 24, seed=0)
    with torch.no_grad():
        att = model(**batch, output_attentions=True).attentions
    n = att[0].shape[-1]
    found = rep["sink_columns"]["trained"]
    for layer in range(len(att)):
        share = att[layer].double().mean(1).mean((0, 1))
        assert found[layer] == torch.nonzero(share > 8.0 / n).flatten().tolist(), layer
    assert any(found), "no layer of SmolLM2 has a sink on 24 tokens: the detection is broken"
    # the sink mass of every layer on the same columns: every column detected in some layer of the trained model
    columns = sorted(set().union(*found))
    assert rep["sink_mass_columns"] == columns
    rows = [i for i in range(n) if i not in columns]
    for layer in (0, 14, 29):
        P = att[layer].double().mean(1)
        sink = P[:, rows][:, :, columns].sum(-1).mean(1).numpy()
        assert np.allclose(rep["conditions"]["trained"]["sink"][layer], sink, atol=1e-5)
    # the nulls on the same columns: a random-init walk has no sink of its own, yet a mass on those tokens
    for cond in ("random0", "shuffled"):
        assert all(np.min(v) > 0 for v in rep["conditions"][cond]["sink"]), cond
    assert not any(rep["sink_columns"]["random0"]), "a random-init SmolLM2 has no sink column on 24 tokens"
    # E2's data null from three seeds' transports on the trained inputs (weights only), one key each
    assert rep["data_null_seeds"] == [0, 1, 2]
    cross = [np.mean(rep["conditions"]["trained"][k]) for k in ("data_defect_cross", "data_defect_cross_2",
                                                                  "data_defect_cross_3")]
    assert len(set(cross)) == 3 and all(np.isfinite(cross))
    # the E1 metric of the scorecard, tv_norm_nosink, by hand from the same attention: both layers' sink columns
    # removed, rows renormalised (a row left empty keeps a self-loop), normalised by the distance of each walk
    # from the causal-uniform walk with the same columns removed

    def drop_sink(A, cols):
        A = A.clone()
        A[..., cols] = 0
        mass = A.sum(-1, keepdim=True)
        return torch.where(mass > 0, A / mass.clamp_min(1e-300), torch.eye(n, dtype=A.dtype))

    def tv(A, B):
        return 0.5 * (A - B).abs().sum(-1).mean(-1)

    uniform = torch.tril(torch.ones(n, n, dtype=torch.float64)) / torch.arange(1, n + 1)[:, None]
    for layer in (0, 14, 28):
        cols = sorted(set(found[layer]) | set(found[layer + 1]))
        A, B = (drop_sink(att[k].double().mean(1), cols) for k in (layer, layer + 1))
        U = drop_sink(uniform, cols)
        by_hand = (tv(A, B) / (0.5 * (tv(A, U) + tv(B, U)))).numpy()
        assert np.allclose(rep["conditions"]["trained"]["tv_norm_nosink"][layer], by_hand, atol=1e-5)
        # the positional null on the same yardstick: the other passage's next layer, over the trained pair's scale
        positional = (tv(A, B.flip(0)) / (0.5 * (tv(A, U) + tv(B, U)))).numpy()
        assert np.allclose(rep["conditions"]["trained"]["positional_tv_norm_nosink"][layer], positional, atol=1e-5)
    assert rep["head_dim"] == dh


def test_the_asked_corpus_bos_and_split_reach_every_measurement(tmp_path, monkeypatch):
    """``analyze_with_known(corpus=..., split=...)``, what ``connlap analyze MODEL --corpus stdlib`` runs: E1, E2 and
    the known results read the same passages (the same windows of the asked corpus and split), and the
    known results are those measured on that corpus alone, not pydoc's (they were, whatever the corpus, before
    2026-12-05)."""
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parents[1]))
    import tiny_models
    from connlap_lite.__main__ import analyze_with_known
    from connlap_lite.known import known_results

    folder = tiny_models.make_folder(tmp_path / "m")
    monkeypatch.setenv("CONNLAP_CACHE", str(tmp_path / "cache"))
    kw = dict(n_passages=2, n_tokens=12, corpus="stdlib", split="confirmation")     # (its tokenizer has no BOS)
    report = analyze_with_known(str(folder), random_seeds=(0,), shuffle=False, rivals=False, **kw)
    known = report["known_results"]
    assert (report["corpus"], known["corpus"]) == ("stdlib", "stdlib")
    assert known["bos"] is report["bos"] is None and known["split"] == report["split"] == "confirmation"
    assert known["windows"] == report["windows"]
    alone = known_results(str(folder), cache=False, **kw)
    assert alone["conditions"] == known["conditions"]
    pydoc = known_results(str(folder), cache=False, **{**kw, "corpus": "pydoc"})
    assert pydoc["windows"] != known["windows"]
    assert pydoc["conditions"]["trained"]["natural"] != known["conditions"]["trained"]["natural"]


def test_analyze_with_known_results_loads_the_model_and_builds_its_null_once(tmp_path, monkeypatch):
    """``analyze_with_known`` (what the command line runs) loads the model once and builds the random-init null
    ``random_like(model, 1000)`` once for both chapters, and its known results are those measured on their own."""
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parents[1]))
    import tiny_models
    from connlap_lite.__main__ import analyze_with_known
    from connlap_lite.measure import analysis
    from connlap_lite.models import load as models
    from connlap_lite.models import twins
    from connlap_lite.known import known_results
    from connlap_lite.known import report as known_report

    folder = tiny_models.make_folder(tmp_path / "m")
    monkeypatch.setenv("CONNLAP_CACHE", str(tmp_path / "cache"))
    loads, nulls_built = [], []
    real_load, real_like = models.load_model, twins.random_like

    def load(*a, **kw):
        loads.append(a)
        return real_load(*a, **kw)

    def like(model, seed):
        nulls_built.append(seed)
        return real_like(model, seed)
    for module in (analysis, known_report):
        monkeypatch.setattr(module, "load_model", load)
    monkeypatch.setattr(analysis, "random_like", like)
    monkeypatch.setattr(twins, "random_like", like)
    kw = dict(n_passages=2, n_tokens=12, texts=["a walk on tokens. " * 40])
    report = analyze_with_known(str(folder), random_seeds=(0, 1), shuffle=False, **kw)
    # (seed 1's twin is built for its transports, E2's data null, and again for its own condition)
    assert len(loads) == 1 and nulls_built == [1000, 1001, 1001]
    alone = known_results(str(folder), cache=False, **kw)
    assert report["known_results"]["conditions"] == alone["conditions"]
    assert report["known_results"]["verdicts"] == alone["verdicts"]
    assert "known_results" not in json.loads(next((tmp_path / "cache" / "measurements").glob("*.json")).read_text())
    loads.clear()
    again = analyze_with_known(str(folder), random_seeds=(0, 1), shuffle=False, **kw)   # both cached
    assert loads == [] and again["known_results"]["conditions"] == alone["conditions"]
