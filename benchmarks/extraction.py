"""Extraction of every layer's walks (and the chapters' metrics) against a plain forward pass.

    python benchmarks/extraction.py            # the committed numbers (about 5 minutes on 2 cores)
    python benchmarks/extraction.py --quick    # tiny random models, seconds (the tests run this)

Variants, each on the same model and batch (the model is loaded as the chapters load it, with
PyTorch's fused SDPA attention, and switched to eager attention where a variant needs it):

``floor``        ``model(**batch, output_attentions=True)`` under eager attention: one forward that
                 returns every layer's attention (the cheapest way Hugging Face gives them);
``forward``      the SDPA forward without returning attention (the model's own memory floor);
``walks``        :func:`connlap_lite.attention_walks` over all layers (one SDPA forward through the
                 package's registered attention function, paused at each attention module, each layer's
                 attention built from the queries and keys the module made, while the forward waits),
                 building ``lw.walk(i)`` (a multi-head walk) per passage: what a reader of the book does to get the walks;
``build``        (memory only) ``walks``, its peak reset at each layer's hook: the most that building one
                 layer's attention and walks adds, the forward waiting at that layer;
``walks_eager``  the same with ``attention="eager"`` under eager attention: the attention as the
                 model's eager function returns it (the reference the built one is tested against);
``metrics``      :func:`connlap_lite.measure.analysis.measure`: the walks plus every per-layer metric the
                 empirical chapters compute (dense eigen-solves of each passage's walk included);
``edges``        the layers' attention and only the edge-transport defects ``measure`` computes
                 (:func:`connlap_lite.measure.edges.edge_defects` on each layer's heaviest edges): the part of
                 ``metrics`` that needs a full symmetric eigen-solve per edge;
``tl``           TransformerLens ``run_with_cache`` on a bridge around the same GPT-2-shaped model,
                 under eager attention (only where ``transformer_lens`` imports; see ``--tl-python``: its
                 version, Python, torch and transformers, and whether it is another environment than this
                 one's, are recorded).

Times: interleaved rounds in one process, the median of the per-round ratios to ``floor``.
Memory: a fresh subprocess per variant, the peak resident set above the resident set after
loading (see ``_common.peak_rss_delta``), in units of one layer's attention, ``B*H*n*n*4`` bytes.
Both forward-style variants use the options extraction uses (no KV cache, logits of the last
token only), so the comparison is of the same work.

Chapter: *Performance* (``book/appendix/performance.ipynb``).
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

SCRIPT = Path(__file__).resolve()
FULL = {"pretrained": [("minilm-l6", 4, 128, 9, 2), ("smollm2-135m", 2, 128, 7, 1)],  # name, B, n, rounds, metric rounds
        "width": dict(n_embd=256, n_head=8), "layers": [2, 4, 8, 16], "B": 2, "n": 512, "rounds": 5}
QUICK = {"pretrained": [], "width": dict(n_embd=32, n_head=4), "layers": [1, 2], "B": 1, "n": 32, "rounds": 2}
GOAL_TIME, GOAL_METRICS, GOAL_MEMORY, GOAL_HELD, GOAL_TL = 1.15, 2.0, 1.5, 0.15, 1.0
MEMORY_METHOD = ("fresh subprocess per variant, after one run on a 16-token slice; peak VmHWM (reset via "
                 "/proc/self/clear_refs) minus VmRSS just before the run; MALLOC_MMAP_THRESHOLD_=65536")
MEMORY_QUICK = "in this process (--quick is a smoke test: its memory numbers mean nothing)"


# ------------------------------------------------------------------ worker side
def _gpt2(spec: dict):
    import torch
    from transformers import AutoModelForCausalLM, GPT2Config

    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=spec["n_layer"], n_embd=spec["n_embd"], n_head=spec["n_head"], vocab_size=1000,
                     n_positions=max(1024, spec["n"]), bos_token_id=0, eos_token_id=0)
    return AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa").eval()


def _setup(spec: dict):
    """Model, batch, encoder flag and facts for a worker."""
    import torch

    from connlap_lite import load_model, passages
    from connlap_lite.models.adapters import adapter_for
    from connlap_lite.models.adapters.linear import is_encoder

    if "name" in spec:
        model, tok = load_model(spec["name"])
        batch = passages(tok, spec["B"], spec["n"])
    else:
        model = _gpt2(spec)
        ids = torch.randint(1, 1000, (spec["B"], spec["n"]), generator=torch.Generator().manual_seed(0))
        batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    adapter = adapter_for(model)
    H, _ = adapter.shape(model)
    facts = {"layers": len(adapter.layers(model)), "heads": H, "d": model.config.hidden_size,
             "weight_bytes": sum(p.numel() * p.element_size() for p in model.parameters()),
             "attention_layer_bytes": spec["B"] * H * spec["n"] ** 2 * 4}
    return model, batch, is_encoder(model.config), facts


def _tl_bridge(model):
    from transformer_lens.model_bridge import TransformerBridge
    from transformers import AutoTokenizer

    from connlap_lite.models.load import offline_source

    tok = AutoTokenizer.from_pretrained(offline_source("minilm-l6")[0])     # any offline tokenizer: ids are given
    return TransformerBridge.boot_transformers("gpt2", hf_model=model, tokenizer=tok, device="cpu")


def _variants(names, model, batch, encoder, bridge=None):
    from connlap_lite import attention_walks
    from connlap_lite.measure.analysis import measure
    from connlap_lite.models.extraction import forward_options

    opts = forward_options(model)
    B = batch["input_ids"].shape[0]

    def edges():
        from connlap_lite.measure import metrics as M
        from connlap_lite.measure.analysis import edge_values

        sinks = M.sink_columns(batch["input_ids"].shape[1], encoder)
        for lw in attention_walks(model, batch, progress=False):
            edge_values(lw, lw.attention.double().mean(1), sinks)

    def walks(attention="logits"):
        for lw in attention_walks(model, batch, progress=False, attention=attention):
            for i in range(B):
                lw.walk(i)

    def build():
        """``walks``, returning the highest peak above the resident set before it that building one layer's
        attention and walks reached (the peak reset at each layer's hook, where the forward waits)."""
        import gc

        gc.collect()
        before, top = C.resident(), 0
        for lw in attention_walks(model, batch, progress=False):
            C.reset_peak()
            for i in range(B):
                lw.walk(i)
            top = max(top, C.peak() - before)
        return top

    table = {"floor": (EAGER, lambda: model(**batch, output_attentions=True, **opts)),
             "forward": (SDPA, lambda: model(**batch, **opts)),
             "walks": (SDPA, walks),
             "build": (SDPA, build),
             "walks_eager": (EAGER, lambda: walks("eager")),
             "metrics": (SDPA, lambda: measure(model, batch, encoder=encoder)),
             "edges": (SDPA, edges)}
    if "tl" in names:
        table["tl"] = (EAGER, lambda: bridge.run_with_cache(batch["input_ids"]))
    return {k: (lambda impl=table[k][0], f=table[k][1]: _run(model, impl, f)) for k in names}


EAGER, SDPA = "eager", "sdpa"


def _run(model, implementation: str, f):
    """``f()`` without gradients, the model running ``implementation`` attention (switching costs ~0.5 ms)."""
    import torch

    if model.config._attn_implementation != implementation:
        model.set_attn_implementation(implementation)
    with torch.no_grad():
        return f()


def worker(job: dict) -> dict:
    """One job: ``kind`` "time" (interleaved rounds of ``variants``) or "memory" (one variant, first run).

    Before a memory run the variant runs once on a 16-token slice of one passage, so that lazy
    one-time allocations (kernels, tables) are not counted as the variant's peak.
    """
    C.set_threads()
    model, batch, encoder, facts = _setup(job["model"])
    # the bridge takes over the model it wraps (its attention no longer goes through transformers' interface), so
    # it wraps a copy: the same weights
    bridge = _run(model, EAGER, lambda: _tl_bridge(copy.deepcopy(model))) if "tl" in job["variants"] else None
    fns = _variants(job["variants"], model, batch, encoder, bridge)
    if job["kind"] == "memory":
        (name,) = job["variants"]
        small = {k: v[:1, :16] for k, v in batch.items()}
        _variants([name], model, small, encoder, bridge)[name]()
        if name == "build":                         # its own peak, layer by layer
            return {**facts, "peak_bytes": max(fns[name](), C.PAGE)}
        return {**facts, **C.peak_rss_delta(fns[name])}
    return {**facts, "seconds": C.interleaved(fns, job["rounds"], warmup=1)}


def _job(job: dict, python: str | None, quick: bool) -> dict:
    """A worker job in a fresh subprocess; with ``quick``, in this process (a smoke test only)."""
    if quick:
        return json.loads(json.dumps(worker(job)))
    return C.in_subprocess(SCRIPT, [json.dumps(job)], python=python)


# ------------------------------------------------------------------ driver side
def tl_status(python: str) -> dict:
    """Whether ``transformer_lens`` imports under ``python``: its version, the versions it runs with (Python, torch,
    transformers) and its environment (the folder name only; ``own_environment`` when it is not this one's), or
    the error."""
    code = ("import json, platform, sys, importlib.metadata as m; import transformer_lens; print(json.dumps({"
            "'version': m.version('transformer-lens'), 'python_version': platform.python_version(), "
            "'torch': m.version('torch'), 'transformers': m.version('transformers'), 'prefix': sys.prefix}))")
    env = {**os.environ, **C.WORKER_ENV, "PYTHONPATH": str(C.ROOT)}
    p = subprocess.run([python, "-c", code], capture_output=True, text=True, env=env)
    if p.returncode == 0:
        found = json.loads(p.stdout.strip().splitlines()[-1])
        prefix = found.pop("prefix")
        return {"available": True, **found, "python": python, "environment": C.portable(prefix),
                "own_environment": os.path.realpath(prefix) != os.path.realpath(sys.prefix)}
    return {"available": False, "python": python, "error": (p.stderr.strip().splitlines() or ["?"])[-1]}


def held_share(row: dict) -> float:
    """One layer's inputs and output, ``2 B n d`` float32 numbers, in layers of attention (``B H n n`` of them)."""
    return 2 * row["B"] * row["n"] * row["d"] * 4 / row["attention_layer_bytes"]


def metrics_reason(row: dict) -> str:
    """Why ``measure`` stays above its goal, with the share of it measured on ``row`` (the ``edges`` variant)."""
    return (f"the edge-transport defects alone (with the forward and the attention) take {row['ratio']['edges']:.1f}x "
            "the floor: each of the 4 heaviest edges of each of up to 4 passages per layer needs every singular "
            "value of its d x d gated transport, a full symmetric eigen-solve of a core of side min(d, G d_h) "
            "(384 on minilm-l6, 192 on smollm2-135m) after two products of that size, kept in float64 so that "
            "the defect agrees with the dense SVD's to 1e-9; besides, the spectral metrics need every eigenvalue "
            "of each passage's symmetrised n x n walk, and E2's nulls measure Gaussian and rotated copies of "
            "every head: work a forward pass never does")


def walks_reason(row: dict) -> str:
    """What the walks add to the floor, from ``row``'s own ratios."""
    return (f"the SDPA forward alone is {row['ratio']['forward']:.2f}x the floor and the walks "
            f"{row['ratio']['walks']:.2f}x: every layer runs SDPA, and each layer read then computes its scores and "
            "softmax once, in float32 and a passage at a time, while the forward waits, and every passage's walk; the "
            "forward runs in a worker thread, whose allocations glibc serves from fresh mappings (the benchmark's "
            "64 KiB mmap threshold) where the floor, in the main thread, reuses its heap; this ratio moves by a few "
            "hundredths from run to run")


def goals_of(report: dict) -> list[dict]:
    """The goal rows of an extraction report (its rows, its settings and its TransformerLens status)."""
    goals = []
    rows = report["pretrained"] or report["layers"]
    for row in rows:
        label = row.get("model", f"GPT-2 shape, {row.get('n_layer')} layers")
        goals.append(C.goal(f"extraction: walks time / floor ({label})", row["ratio"]["walks"], GOAL_TIME, "x floor",
                            reason=walks_reason(row)))
    for row in report["pretrained"]:
        goals.append(C.goal(f"extraction: walks + chapter metrics / floor ({row['model']})", row["ratio"]["metrics"],
                            GOAL_METRICS, "x floor",
                            reason=metrics_reason(row)))
    worst = max(report["layers"], key=lambda r: r["peak_in_layers"]["walks"])
    forward, held = worst["peak_in_layers"]["forward"], held_share(worst)
    why = (f"the SDPA forward alone, its own activations, peaks at {forward:.2f} layers, and while it runs on from one "
           "attention module to the next the reader still holds the previous layer's inputs and output "
           f"({held:.3f} layers here: 2 B n d float32 numbers), {forward + held:.2f} layers together; a layer read "
           "builds its attention at the pause, after its attention call, from the queries and keys kept, a passage "
           "at a time for the walks: the attention and walks, built there, peak at "
           f"{worst['peak_in_layers']['build']:.2f} layers. The eager walks peak at "
           f"{worst['peak_in_layers']['walks_eager']:.2f} layers")
    goals.append(C.goal(f"extraction: peak memory above weights, worst of {report['settings']['layers']} layers",
                        worst["peak_in_layers"]["walks"], GOAL_MEMORY, "layers of attention", reason=why))
    above = max(report["layers"], key=lambda r: r["peak_in_layers"]["walks"] - r["peak_in_layers"]["forward"])
    goals.append(C.goal(f"extraction: walks' peak memory within the SDPA forward's + {GOAL_HELD} layers, worst of "
                        f"{report['settings']['layers']} layers ({above['n_layer']})",
                        above["peak_in_layers"]["walks"], above["peak_in_layers"]["forward"] + GOAL_HELD,
                        "layers of attention", reason=why))
    first, last = report["layers"][0], report["layers"][-1]
    goals.append(C.goal(f"extraction: peak growth from {first['n_layer']} to {last['n_layer']} layers",
                        report["growth"]["walks"], 1.5, "x (flat = 1)",
                        reason="something other than one layer's attention grows with depth"))
    if report["transformer_lens"].get("available"):
        goals.append(C.goal(f"extraction: walks time / TransformerLens run_with_cache ({last['n_layer']} layers)",
                            C.ratio(last["seconds"], "walks", "tl"), GOAL_TL, "x TransformerLens"))
    return goals


def run(quick: bool, tl_python: str | None = None, out: str | None = None) -> dict:
    cfg = QUICK if quick else FULL
    tl = {"available": False, "skipped": "--quick"} if quick else tl_status(tl_python or sys.executable)
    # the report names the interpreter by its file name only (no path of this machine)
    shown = {**tl, "python": C.portable(tl["python"])} if "python" in tl else tl
    # the machine's facts as the run starts (its load average above all), not as the report is written
    report = {"machine": C.machine(), "quick": quick, "settings": {k: v for k, v in cfg.items()},
              "transformer_lens": shown,
              "time_method": "interleaved rounds in one process (order rotated), median of per-round ratios",
              "memory_method": MEMORY_QUICK if quick else MEMORY_METHOD,
              "pretrained": [], "layers": []}
    for name, B, n, rounds, mrounds in cfg["pretrained"]:
        spec = {"name": name, "B": B, "n": n}
        t = _job({"kind": "time", "model": spec, "rounds": rounds,
                  "variants": ["floor", "forward", "walks", "walks_eager"]}, None, quick)
        tm = _job({"kind": "time", "model": spec, "rounds": mrounds, "variants": ["floor", "metrics", "edges"]},
                  None, quick)
        mem = {v: _job({"kind": "memory", "model": spec, "variants": [v]}, None, quick)
               for v in ("floor", "forward", "walks", "walks_eager", "metrics")}
        row = {"model": name, "B": B, "n": n, **{k: t[k] for k in ("layers", "heads", "d", "weight_bytes",
                                                                   "attention_layer_bytes")},
               "seconds": t["seconds"], "seconds_metrics_rounds": tm["seconds"],
               "ratio": {"forward": C.ratio(t["seconds"], "forward", "floor"),
                         "walks": C.ratio(t["seconds"], "walks", "floor"),
                         "walks_eager": C.ratio(t["seconds"], "walks_eager", "floor"),
                         "metrics": C.ratio(tm["seconds"], "metrics", "floor"),
                         "edges": C.ratio(tm["seconds"], "edges", "floor")},
               "memory": mem,
               "peak_in_layers": {v: m["peak_bytes"] / t["attention_layer_bytes"] for v, m in mem.items()}}
        report["pretrained"].append(row)
        print(f"{name}: walks {row['ratio']['walks']:.2f}x floor (eager walks {row['ratio']['walks_eager']:.2f}x), "
              f"metrics {row['ratio']['metrics']:.1f}x; "
              f"peak (layers of attention) {', '.join(f'{k} {v:.2f}' for k, v in row['peak_in_layers'].items())}",
              flush=True)
    variants = ["floor", "forward", "walks", "walks_eager"] + (["tl"] if tl["available"] else [])
    python = tl["python"] if tl["available"] else sys.executable
    for L in cfg["layers"]:
        spec = {"n_layer": L, **cfg["width"], "B": cfg["B"], "n": cfg["n"]}
        t = _job({"kind": "time", "model": spec, "rounds": cfg["rounds"], "variants": variants}, python, quick)
        mem = {v: _job({"kind": "memory", "model": spec, "variants": [v]}, python, quick) for v in variants + ["build"]}
        row = {"n_layer": L, **spec, **{k: t[k] for k in ("heads", "d", "weight_bytes", "attention_layer_bytes")},
               "seconds": t["seconds"], "ratio": {v: C.ratio(t["seconds"], v, "floor") for v in variants[1:]},
               "memory": mem, "peak_in_layers": {v: m["peak_bytes"] / t["attention_layer_bytes"] for v, m in mem.items()}}
        report["layers"].append(row)
        print(f"GPT-2 shape, {L} layers: " + ", ".join(f"{v} {r:.2f}x" for v, r in row["ratio"].items())
              + "; peak (layers of attention) " + ", ".join(f"{k} {v:.2f}" for k, v in row["peak_in_layers"].items()),
              flush=True)
    first, last = report["layers"][0], report["layers"][-1]
    report["growth"] = {v: last["memory"][v]["peak_bytes"] / first["memory"][v]["peak_bytes"] for v in variants}
    report["goals"] = goals_of(report)
    return C.finish("extraction", report, out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny random models only (seconds)")
    ap.add_argument("--tl-python", default=os.environ.get("CONNLAP_BENCH_TL_PYTHON"),
                    help="a Python where transformer_lens imports (default: this one, or $CONNLAP_BENCH_TL_PYTHON)")
    ap.add_argument("--json", default=None, help="where to write (default benchmarks/results/extraction.json)")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return None
    return run(args.quick, args.tl_python, args.json)


if __name__ == "__main__":
    main()
