"""The same book on every Python: the numbers a reader's runtime must reproduce, computed with whatever
connlap_lite is installed, written as JSON and compared with the golden file.

    python tools/same_numbers.py [--json OUT] [--compare GOLDEN] [--cache DIR]

In ``make test``'s setting (8 passages of 64 tokens, seed 0, the four offline models) it computes

- per model and corpus, the sha256 of the passages' token ids (:func:`connlap_lite.passages`);
- per model, what the chapter *Reading a real transformer* reads off one walk, the middle layer's on the first
  passage, at the chapter's own passages and tokens: the first column's share and the heaviest off-diagonal edge,
  and the heaviest not into token 0 (:func:`connlap_lite.measure.metrics.first_column_share`, :func:`~connlap_lite.measure.metrics.
  heaviest_edge`, which the chapter calls);
- the chapter *E1*'s paragraphs written from the four models' ``analyze`` reports and the rule's rows
  (:func:`connlap_lite.pages.findings.e1.report_paragraphs`; the quantisation's and the long passages' paragraphs read
  measurements of their own and are left out).

It writes them with the versions of Python, torch, transformers and numpy to ``--json``; with ``--compare`` it
exits 1 naming each number that differs from the golden file (a share by more than :data:`TOLERANCE`, anything
else by any difference). ``make floor`` and ``make colab`` run it after their chapters, against the golden
``benchmarks/results/same_numbers.json`` (made with the project's venv: rerun this script with ``--json`` there to
remake it after a change that moves the numbers).

The measurements are made afresh, in an empty temporary measurement cache (``CONNLAP_CACHE``), unless ``--cache``
names one: a cache filled on another Python would hand back that Python's numbers.
"""
from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

from alone import environment  # (tools/alone.py: os.environ set while a block runs, then put back)

from connlap_lite.pages.settings import BOOK

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "benchmarks" / "results" / "same_numbers.json"
# make test's setting of the empirical chapters (connlap_lite.pages.settings.BOOK, which their parameter cells read) and
# the chapter Reading's own (book/models/reading.ipynb's); tests/book/test_same_numbers.py holds them equal to the
# chapters'
MODELS = BOOK.models
(N_PASSAGES, N_TOKENS), SEED = BOOK.sample(full=False), 0
READING_PASSAGES, READING_TOKENS = 2, 64
TOLERANCE = {"first_column_share": 1e-6}      # float32 rounding of another torch build; the page shows a percent
VERSIONS = ("torch", "transformers", "numpy", "scipy", "connlap_lite")


def digest(ids) -> str:
    """The sha256 of a batch of token ids ``(B, n)``, read as int64 row by row.

    >>> import torch
    >>> digest(torch.tensor([[1, 2], [3, 4]])) == digest([[1, 2], [3, 4]]) != digest([[1, 2], [4, 3]])
    True
    """
    import numpy as np

    return hashlib.sha256(np.ascontiguousarray(np.asarray(ids, dtype=np.int64)).tobytes()).hexdigest()


def versions() -> dict:
    """Python's and the libraries' versions, and where connlap_lite was imported from."""
    import connlap_lite

    out = {"python": platform.python_version()}
    for name in VERSIONS:
        out[name] = __import__(name).__version__
    out["connlap_lite_from"] = where(Path(connlap_lite.__file__).parent)
    return out


def where(folder: Path) -> str:
    """Where a package was imported from, without this machine's paths (a committed record carries none): the
    checkout, or the environment's folder relative to its prefix."""
    folder, prefix = folder.resolve(), Path(sys.prefix).resolve()
    if folder.is_relative_to(prefix):                   # (first: a venv may lie inside the checkout)
        return f"the environment ({folder.relative_to(prefix).as_posix()})"
    if folder.is_relative_to(ROOT):
        return f"the checkout ({folder.relative_to(ROOT).as_posix()})"
    return folder.name


def model_numbers(name: str) -> tuple[dict, dict]:
    """Model ``name``'s passage digests on every corpus (make test's setting), and the chapter Reading's look at
    one walk: the middle layer's walk on the first of the chapter's passages, read in float64 as the chapter reads
    it (every layer streamed, the middle one kept)."""
    import gc

    import torch
    from connlap_lite import attention_walks, load_model, passages
    from connlap_lite.measure.metrics import first_column_share, heaviest_edge
    from connlap_lite.models.text import CORPORA

    model, tokenizer = load_model(name, device="cpu")
    digests = {c: digest(passages(tokenizer, N_PASSAGES, N_TOKENS, seed=SEED, corpus=c)["input_ids"])
               for c in CORPORA}
    batch = passages(tokenizer, READING_PASSAGES, READING_TOKENS, seed=SEED)
    middle = model.config.num_hidden_layers // 2
    P = None
    for lw in attention_walks(model, batch, progress=False):
        if lw.layer == middle:
            P = lw.walk(0).to(dtype=torch.float64).P
    del model, lw
    gc.collect()
    share = first_column_share(P)
    return digests, {"passages_sha256": digest(batch["input_ids"]), "layer": middle,
                     "first_column_share": round(share, 9), "first_column_percent": f"{share:.0%}",
                     "heaviest_edge": list(heaviest_edge(P)), "heaviest_edge_not_into_0": list(heaviest_edge(P, skip=[0]))}


def e1_paragraphs() -> dict:
    """The chapter E1's paragraphs from the four models' reports, as the chapter writes them."""
    from connlap_lite.verdicts import scorecard
    from connlap_lite.measure.analysis import analyze
    from connlap_lite.pages.findings import e1 as F1

    reports = [analyze(m, n_passages=N_PASSAGES, n_tokens=N_TOKENS, seed=SEED, device="cpu") for m in MODELS]
    rows = scorecard.scorecard(reports)
    return F1.report_paragraphs(reports, rows, F1.ten_metrics(reports, rows))


def numbers(progress=print) -> dict:
    """Every number compared, ``{"passages": ..., "reading": ..., "e1": ...}``."""
    out = {"passages": {}, "reading": {}}
    for name in MODELS:
        progress(f"{name}: passages and the reading chapter's walk")
        out["passages"][name], out["reading"][name] = model_numbers(name)
    progress(f"E1: analyze on {', '.join(MODELS)} ({N_PASSAGES} passages x {N_TOKENS} tokens)")
    out["e1"] = e1_paragraphs()
    return out


def compare(new: dict, golden: dict, path: str = "") -> list[str]:
    """Every difference between two ``numbers`` records, one line each naming where it is; a share within
    :data:`TOLERANCE` is the same.

    >>> compare({"r": {"m": {"first_column_share": 0.5, "heaviest_edge": [3, 1]}}},
    ...         {"r": {"m": {"first_column_share": 0.5000004, "heaviest_edge": [3, 2]}}})
    ['r/m/heaviest_edge: [3, 1] here, [3, 2] in the golden file']
    """
    diffs = []
    for key in sorted(set(new) | set(golden)):
        where = f"{path}/{key}" if path else key
        if key not in golden:
            diffs.append(f"{where}: here only, not in the golden file")
        elif key not in new:
            diffs.append(f"{where}: in the golden file only, not computed here")
        elif isinstance(new[key], dict) and isinstance(golden[key], dict):
            diffs += compare(new[key], golden[key], where)
        elif key in TOLERANCE and all(isinstance(v, (int, float)) for v in (new[key], golden[key])):
            if abs(new[key] - golden[key]) > TOLERANCE[key]:
                diffs.append(f"{where}: {new[key]!r} here, {golden[key]!r} in the golden file "
                             f"(more than {TOLERANCE[key]:g} apart)")
        elif new[key] != golden[key]:
            diffs.append(f"{where}: {short(new[key])} here, {short(golden[key])} in the golden file")
    return diffs


def short(value, width: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= width else text[:width] + f"... ({len(text)} characters)"


def _commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def record(nums: dict, cache: str) -> dict:
    """``nums`` with what they were computed with: versions, setting, commit, date, cache."""
    return {"what": "tools/same_numbers.py", "commit": _commit(),
            "date_utc": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "versions": versions(), "cache": cache, "tolerance": TOLERANCE,
            "setting": {"models": list(MODELS), "passages": N_PASSAGES, "tokens": N_TOKENS, "seed": SEED,
                        "reading_passages": READING_PASSAGES, "reading_tokens": READING_TOKENS},
            "numbers": nums}


def check_against(rec: dict, golden_path: Path) -> list[str]:
    """The differences of record ``rec`` from the golden file's numbers (and from its setting, if that differs)."""
    golden = json.loads(golden_path.read_text(encoding="utf-8"))
    if rec["setting"] != golden.get("setting"):
        return [f"setting: {rec['setting']} here, {golden.get('setting')} in the golden file: remake it"]
    return compare(rec["numbers"], golden["numbers"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, help="write the numbers here (JSON)")
    ap.add_argument("--compare", type=Path, metavar="GOLDEN", help="exit 1 naming each difference from this file")
    ap.add_argument("--cache", type=Path, help="the measurement cache to use (default: a fresh, empty one)")
    args = ap.parse_args(argv)
    if args.compare and not args.compare.is_file():
        ap.error(f"--compare {args.compare}: no such file (the golden file is {GOLDEN.relative_to(ROOT)})")
    # the caller's cache again afterwards, before the folder goes: nothing later may write into the removed folder
    with tempfile.TemporaryDirectory(prefix="same-numbers-") as tmp, \
            environment(CONNLAP_CACHE=str(args.cache.resolve() if args.cache else tmp)):
        rec = record(numbers(progress=lambda s: print(s, flush=True)),
                     "fresh (empty at the start)" if args.cache is None else "given (--cache)")
    if args.compare:
        diffs = check_against(rec, args.compare)
        golden = args.compare.resolve()
        rec["compared_with"] = {"golden": golden.relative_to(ROOT).as_posix() if golden.is_relative_to(ROOT)
                                else golden.name, "same": not diffs, "differences": diffs}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rec, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    else:
        print(json.dumps(rec, indent=1, ensure_ascii=False))
    if args.compare:
        v = rec["versions"]
        print(f"Python {v['python']}, torch {v['torch']}, transformers {v['transformers']}, numpy {v['numpy']}: ", end="")
        if diffs:
            print(f"{len(diffs)} differences from {args.compare}:\n" + "\n".join(f"  {d}" for d in diffs))
            return 1
        print(f"the same numbers as {args.compare}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
