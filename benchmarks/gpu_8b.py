"""Extraction and layer metrics on a Llama-3-8B-shaped model with random weights, on one GPU.

    python benchmarks/gpu_8b.py                       # 8B shape, bf16, cuda, n = 512 2048 8192
    python benchmarks/gpu_8b.py --tiny --device cpu   # the same code on a tiny config (run by the tests)
    python benchmarks/gpu_8b.py --quick               # the same as --tiny --device cpu --dtype float32

The full run writes ``benchmarks/results/gpu_8b.json`` (goal: n = 2048 analysed in under 24 GiB).
Without a CUDA device it says "no GPU here" and leaves any numbers measured on a GPU in place.

No download: the weights are random (the architecture is what costs time and memory).
For each sequence length it prints, per layer, the seconds spent, the peak GPU memory,
the multi-head walk's error against the attention module's output (float32), the attention
sink mass and the mean scaled-isometry defect of the head transports; and writes JSON.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

from connlap_lite import attention_walks, isometry_defect
from connlap_lite.models.footprint import SHAPES

LLAMA3_8B = SHAPES["meta-llama/Meta-Llama-3-8B"][2]      # the published shape (connlap_lite.models.footprint)
TINY = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=3, num_attention_heads=8,
            num_key_value_heads=2, vocab_size=512, max_position_embeddings=512)


def build(shape: dict, device: str, dtype: torch.dtype):
    from transformers import AutoModelForCausalLM, LlamaConfig

    torch.manual_seed(0)
    config = LlamaConfig(**shape)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, attn_implementation="sdpa", dtype=dtype)   # walks rebuilt from Q, K
    return model.eval()


def walk_error(lw) -> float:
    """Relative error of sum_h A^h X T_h^T + c against the module's own output, head by head, float32."""
    X = lw.inputs[0].float()
    U, V = lw.transports.U.float(), lw.transports.V.float()
    Y = torch.zeros_like(X)
    for h in range(U.shape[0]):
        Y += (lw.attention[0, h].float() @ (X @ V[h].T)) @ U[h].T
    if lw.transports.offset is not None:
        Y += lw.transports.offset.float()
    ref = lw.output[0].float()
    return float(torch.linalg.norm(Y - ref) / torch.linalg.norm(ref))


def run(shape: dict, n_tokens: list[int], device: str, dtype: torch.dtype) -> dict:
    model = build(shape, device, dtype)
    params = sum(p.numel() for p in model.parameters())
    cuda = device.startswith("cuda")
    report = {"device": torch.cuda.get_device_name() if cuda else device, "dtype": str(dtype),
              "parameters": params, "shape": shape, "runs": []}
    for n in n_tokens:
        ids = torch.randint(0, shape["vocab_size"], (1, n), generator=torch.Generator().manual_seed(n))
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        start = last = time.perf_counter()
        layers = []
        for lw in attention_walks(model, ids, progress=False):
            metrics = {
                "walk_error": walk_error(lw),
                "sink_mass": float(lw.attention[0, :, 1:, 0].float().mean()),
                "isometry_defect": float(isometry_defect(lw.transports).float().mean()),
            }
            if cuda:
                torch.cuda.synchronize()
            now = time.perf_counter()
            metrics["seconds"] = now - last
            metrics["peak_gib"] = torch.cuda.max_memory_allocated() / 2**30 if cuda else None
            last = now
            layers.append(metrics)
            print(f"n={n:5d} layer {lw.layer:2d}: {metrics['seconds']:.3f} s"
                  + (f", peak {metrics['peak_gib']:.1f} GiB" if cuda else "")
                  + f", walk error {metrics['walk_error']:.1e}, sink {metrics['sink_mass']:.3f},"
                  f" defect {metrics['isometry_defect']:.3f}", flush=True)
            del lw
        total = time.perf_counter() - start
        run = {"n": n, "seconds": total, "tokens_per_second": n / total, "layers": layers,
               "peak_gib": torch.cuda.max_memory_allocated() / 2**30 if cuda else None}
        report["runs"].append(run)
        print(f"n={n}: {total:.1f} s, {n / total:.0f} tokens/s"
              + (f", peak {run['peak_gib']:.1f} GiB" if cuda else ""), flush=True)
    return report


GOAL_GIB = 24.0
REPRODUCE = "python benchmarks/gpu_8b.py   # on a machine with one CUDA GPU of at least 40 GB (bf16 8B weights: 15 GiB)"


def goals(report: dict) -> list[dict]:
    """The goal row: peak GPU memory at n = 2048 (None where that length was not run)."""
    at = {r["n"]: r for r in report.get("runs", [])}
    peak = at[2048]["peak_gib"] if 2048 in at else None
    return [C.goal("gpu 8B: peak memory analysing n = 2048 (bf16)", peak, GOAL_GIB, "GiB",
                   reason="" if peak is not None else report.get("status", "not run"))]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiny", action="store_true", help="a tiny Llama config (CPU test of the same code)")
    ap.add_argument("--quick", action="store_true", help="--tiny --device cpu --dtype float32")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    ap.add_argument("--tokens", type=int, nargs="+", default=None)
    ap.add_argument("--json", default=None, help="write the report here (default for the full run: "
                                                 "benchmarks/results/gpu_8b.json)")
    args = ap.parse_args(argv)
    if args.quick:
        args.tiny, args.device, args.dtype = True, "cpu", "float32"
    target = Path(args.json) if args.json else (None if args.tiny else C.RESULTS / "gpu_8b.json")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        if args.tiny:
            ap.error("--device cuda but no CUDA device is available; use --tiny --device cpu")
        old = json.loads(target.read_text()) if target.exists() else {}
        if old.get("runs"):
            print(f"no GPU here; keeping the numbers measured on {old.get('device')} "
                  f"({old.get('machine', {}).get('date_utc', '?')}) in {target}")
            return old
        report = {"quick": False, "status": "not run: no CUDA device on this machine", "reproduce": REPRODUCE,
                  "shape": LLAMA3_8B, "tokens": args.tokens or [512, 2048, 8192], "runs": []}
        report["goals"] = goals(report)
        C.write("gpu_8b", report, target)
        print(f"no GPU here: wrote {target} saying so; reproduce with: {REPRODUCE}")
        return report
    tokens = args.tokens or ([32, 64] if args.tiny else [512, 2048, 8192])
    report = run(TINY if args.tiny else LLAMA3_8B, tokens, args.device, getattr(torch, args.dtype))
    report.update(quick=args.tiny, status="ran", reproduce=REPRODUCE)
    report["goals"] = goals(report)
    if target is not None:
        C.write("gpu_8b", report, target)
        C.print_goals(report)
    return report


if __name__ == "__main__":
    main()
