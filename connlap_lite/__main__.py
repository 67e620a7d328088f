"""Command line: ``connlap analyze MODEL [options]``, ``verify MODEL``, ``scorecard REPORT...`` and
``ladder ID ID ...`` (the console script ``connlap``, or ``python -m connlap_lite``; ``--version`` prints the
package's version).

``analyze`` computes the same metrics as the book's empirical chapters (E1-E3) for any supported
model, prints a per-layer summary against the nulls, and optionally writes JSON and figures.
``verify`` checks that the adapter reads the model right: per layer, how far the walk rebuilt
from its attention and head transports misses the attention module's own output (exit status 1
when a layer misses by more than the tolerance, 1e-4 in float32).
The options and output paths are checked before the analysis; every failure ends in one
``error: ...`` line on stderr, which names the option (``--passages``, never a Python parameter), and a
non-zero exit status (2 for bad options, after the sub-command's own usage line; 1 otherwise).
``ladder`` measures one family's sizes alike, one model in memory at a time and resumable from the measurement
cache, and prints E3's model-level verdict with the power that many sizes give (:mod:`connlap_lite.measure.ladder`).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from pathlib import Path

SUMMARY = ["tv_norm", "spec", "cross", "rev", "sink", "head_defect", "head_defect_gain", "data_defect", "edge_defect"]

# `connlap --help`: what the tool is for, in whole sentences
DESCRIPTION = ("Read a transformer's attention as a connection walk and test the claims of the book Attention as a "
               "Connection Walk on it. analyze measures a model's walks and transports layer by layer against "
               "their nulls (the same model at random initialisation, shuffled passages) and states E1's and E2's "
               "verdicts; verify checks that the walks reproduce the model's own attention outputs; scorecard "
               "states the verdicts of E1, E2 and E3 over reports written by analyze --json.")
EPILOG = ("examples:\n  connlap analyze smollm2-135m --json smollm2.json --figures smollm2-figures\n"
          "  connlap verify ./my-model\n  connlap scorecard smollm2.json minilm.json\n"
          "Run `connlap COMMAND --help` for a command's options.")

# the legend printed under the analyze table: each column, condition and metric in words
TABLE_LEGEND = {
    "columns": "first, last: the metric's mean over passages at the first and the last layer (a step l to l+1 for "
               "tv_norm, spec); rho: Spearman's correlation of the layer means with depth, p its p-value (nan: "
               "fewer than three layers)",
    "conditions": "trained: the model as given (random: with --random-init); random0: the same architecture at "
                  "random initialisation, seed 0; shuffled: the trained model on passages with their tokens shuffled",
    "tv_norm": "distance between consecutive layers' walks, over their distance from the uniform walk",
    "spec": "distance between the spectra of consecutive layers' walks",
    "cross": "distance between a layer's spectra on different passages",
    "rev": "how far each layer's walk is from reversible",
    "sink": "share of the attention paid to the sink columns",
    "head_defect": "how far each head's transport is from a scaled isometry",
    "head_defect_gain": "the same, with the heads' norm gains folded in",
    "data_defect": "spread of each head's gains on the passages' own token vectors",
    "edge_defect": "how far the heaviest edges' transports are from a scaled isometry",
}


# the Python parameters that the options set, as errors from inside the package name them
FLAGS = {"n_passages": "--passages", "n_tokens": "--tokens", "random_init": "--random-init"}


class _Usage(Exception):
    """A bad option: reported as the (sub-command's) usage and one ``error:`` line, exit status 2."""

    def __init__(self, message: str, usage: str | None = None):
        super().__init__(message)
        self.usage = usage


class _Parser(argparse.ArgumentParser):
    def error(self, message):                  # argparse's own errors: this (sub-)parser's usage, then one line
        raise _Usage(f"{message} (see {self.prog} --help)", usage=self.format_usage())


def _flags(text: str) -> str:
    """An error's text with the Python parameters named as the options that set them.

    >>> _flags("n_tokens must be at most 64 for 'x' (its positions), got 100")
    "--tokens must be at most 64 for 'x' (its positions), got 100"
    """
    return re.sub(r"\b(" + "|".join(FLAGS) + r")\b", lambda m: FLAGS[m.group(1)], text)


def _prog() -> str:
    return "connlap" if Path(sys.argv[0]).name == "connlap" else "python -m connlap_lite"


def _parser() -> argparse.ArgumentParser:
    from . import __version__

    import textwrap

    ap = _Parser(prog=_prog(), description=textwrap.fill(DESCRIPTION, 79), epilog=EPILOG,
                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--version", action="version", version=f"connlap-lite {__version__}",
                    help="print the version of connlap-lite and exit")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=_Parser,
                            help="one of the three commands below")
    a = sub.add_parser("analyze", help="measure E1/E2 metrics of a model against its nulls")
    from .models.offline import OFFLINE                # the model list, written once (the package imports torch anyway)
    a.add_argument("model", help=f"offline short name ({', '.join(OFFLINE)}), Hugging Face id or local folder")
    a.add_argument("--random-init", action="store_true", help="measure the randomly initialised model instead")
    a.add_argument("--texts", type=Path, help="a UTF-8 text file; blank lines separate texts (default: --corpus)")
    from .models.text import CORPORA
    a.add_argument("--corpus", choices=CORPORA, default="pydoc",
                   help="the book's corpora: technical prose, Python source, narrative (default pydoc)")
    a.add_argument("--passages", type=int, default=16, help="number of passages (default 16)")
    a.add_argument("--tokens", type=int, default=128, help="tokens per passage (default 128)")
    a.add_argument("--seed", type=int, default=0,
                   help="which passages are drawn from the texts (default 0)")
    a.add_argument("--device", default="cpu", help="where the model runs: cpu, cuda, cuda:1, ... (default cpu)")
    a.add_argument("--json", type=Path, help="write the full report here")
    a.add_argument("--figures", type=Path, help="write per-layer figures (PNG) into this folder, one per metric of "
                                                "the table and one of E1's metric against all its nulls")
    a.add_argument("--no-cache", action="store_true", help="recompute, and overwrite the cached report")
    v = sub.add_parser("verify", help="check, layer by layer, that the walk reproduces the attention module's output")
    v.add_argument("model", help=f"offline short name ({', '.join(OFFLINE)}), Hugging Face id or local folder")
    v.add_argument("--passages", type=int, default=4, help="number of passages (default 4)")
    v.add_argument("--tokens", type=int, default=64, help="tokens per passage (default 64)")
    v.add_argument("--seed", type=int, default=0, help="which passages are drawn from the texts (default 0)")
    v.add_argument("--device", default="cpu", help="where the model runs: cpu, cuda, cuda:1, ... (default cpu)")
    v.add_argument("--tol", type=float, help="largest relative error allowed (default 1e-4 in float32)")
    c = sub.add_parser("scorecard", help="the verdicts of E1-E3 over reports written by analyze --json")
    c.add_argument("reports", type=Path, nargs="+", help="JSON reports of trained models (analyze MODEL --json FILE)")
    g = sub.add_parser("ladder", help="E3 on one family's sizes: measure each alike, then the model-level verdict")
    g.add_argument("models", nargs="+", help="hub ids or local folders of one family, smallest first "
                                             "(e.g. EleutherAI/pythia-70m EleutherAI/pythia-160m ...)")
    g.add_argument("--passages", type=int, default=16, help="number of passages (default 16)")
    g.add_argument("--tokens", type=int, default=128, help="tokens per passage (default 128)")
    g.add_argument("--seed", type=int, default=0,
                   help="which passages are drawn from the texts (default 0; the same for every size)")
    g.add_argument("--seeds", type=int, default=5, help="random-init seeds per model (default 5)")
    g.add_argument("--device", default="cpu", help="cpu, cuda, cuda:1, ... (each model in its own precision)")
    g.add_argument("--out", type=Path, help="write the reports, e3.json and e3_ladder.png into this folder")
    g.add_argument("--no-cache", action="store_true", help="recompute every model, and overwrite the cache")
    ap.commands = {"analyze": a, "verify": v, "scorecard": c, "ladder": g}
    return ap


def _fail(ap, message: str) -> None:
    raise _Usage(message)


def _check_sizes(args, least: int = 2) -> None:
    """``--passages`` and ``--tokens`` through the package's one check of them (:func:`connlap_lite.models.text.check_sizes`),
    before any model is loaded, its error naming the options."""
    from .models.text import check_sizes

    try:
        check_sizes(args.passages, args.tokens, least=least)
    except ValueError as exc:
        raise _Usage(_flags(str(exc))) from None


def _writable_folder(folder: Path, option: str) -> None:
    """Make ``folder`` (and its parents) and prove a file can be written there, or fail naming ``option``."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".connlap-probe-"):
            pass
    except OSError as exc:
        raise _Usage(f"{option}: cannot write into {folder} ({exc.strerror or exc}); give a writable path") from None


def _is_report(path: Path) -> bool:
    """Whether ``path`` holds a report that ``analyze --json`` wrote (which a new report may replace)."""
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(report, dict) and {"schema", "model", "conditions"} <= set(report)


def _model_folders(model: str) -> list[Path]:
    """The folders that hold ``model``'s own files: a local folder, or an offline model's converted copies."""
    from .models.offline import OFFLINE, cache_dir

    folders = [Path(model).expanduser()] if Path(model).expanduser().is_dir() else []
    if model in OFFLINE:
        folders.append(cache_dir() / "converted")
    return [f.resolve() for f in folders]


def _write_report(path: Path, report: dict) -> None:
    """Write the report to ``--json path`` atomically; a failure names the file (the report was computed, and
    is in the measurement cache unless a warning said otherwise)."""
    from ._files import atomic_write_text

    try:
        atomic_write_text(path, json.dumps(report, indent=1))
    except OSError as exc:
        raise OSError(f"--json {path}: the report could not be written ({exc.strerror or exc}); run again with "
                      "--json on a writable disk with free space (the measurement is in the cache unless a warning "
                      "above said it could not be cached)") from None


def _check_outputs(args, ap) -> None:
    """``--json`` and ``--figures`` checked before the analysis, not after it."""
    if args.json is not None:
        if args.json.is_dir():
            _fail(ap, f"--json {args.json} is a folder; give a file path such as {args.json / 'report.json'}")
        inside = [f for f in _model_folders(args.model) if args.json.resolve().is_relative_to(f)]
        if inside:
            _fail(ap, f"--json {args.json} is inside the model's folder {inside[0]}: a report there would change "
                      "(or overwrite) the model's files; give a path outside it")
        if args.json.exists() and not _is_report(args.json):
            _fail(ap, f"--json {args.json} exists and is not a report written by analyze --json: it is not "
                      "overwritten; give a new path, or remove the file first")
        if args.json.exists() and not os.access(args.json, os.W_OK):
            _fail(ap, f"--json {args.json}: the file is not writable; give another path")
        _writable_folder(args.json.parent, f"--json {args.json}")
    if args.figures is not None:
        if args.figures.exists() and not args.figures.is_dir():
            _fail(ap, f"--figures {args.figures} is a file; give a folder (it is created if missing)")
        inside = [f for f in _model_folders(args.model) if args.figures.resolve().is_relative_to(f)]
        if inside:
            _fail(ap, f"--figures {args.figures} is inside the model's folder {inside[0]}: figures there would "
                      "change the model's files (and its cache identity); give a folder outside it")
        _writable_folder(args.figures, f"--figures {args.figures}")


def main(argv=None) -> int:
    ap = _parser()
    try:
        return _main(ap, argv)
    except SystemExit as exc:                                  # --help, --version
        return exc.code if isinstance(exc.code, int) else 0
    except _Usage as exc:
        print(exc.usage or ap.format_usage(), end="", file=sys.stderr)
        print(f"error: {_flags(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:                                   # every failure: one line, never a traceback
        text = _flags(" ".join(str(exc).split())) or type(exc).__name__
        print(f"error: {text}" if isinstance(exc, (OSError, ValueError, TypeError, ImportError))
              else f"error: {type(exc).__name__}: {text}", file=sys.stderr)
        return 1


def _check_device(device: str) -> None:
    if not re.fullmatch(r"cpu|cuda(:\d+)?|mps", device):
        raise _Usage(f"--device must be cpu, cuda, cuda:N or mps, got {device!r}")
    if device.startswith("cuda"):
        import torch
        if not torch.cuda.is_available():
            raise _Usage(f"--device {device}: CUDA is not available here; use --device cpu")
        if ":" in device and int(device.split(":")[1]) >= torch.cuda.device_count():
            raise _Usage(f"--device {device}: only {torch.cuda.device_count()} CUDA devices here")


def _verify(args, ap) -> int:
    """``verify MODEL``: the per-layer table, and exit status 1 when a layer misses."""
    _check_sizes(args, least=1)
    if args.seed < 0:
        raise _Usage(f"--seed must be a nonnegative int, got {args.seed}")
    if args.tol is not None and not args.tol > 0:
        raise _Usage(f"--tol must be a positive number such as 1e-4, got {args.tol}")
    _check_device(args.device)
    from .models.adapters import describe
    from .models.extraction import max_positions
    from .models.load import load_model
    from .models.text import passages
    from .models.extraction import tolerance
    from .models.verify import short, misses, verify

    model, tok = load_model(args.model, device=args.device)
    limit = max_positions(model)
    if limit is not None and args.tokens > limit:
        raise ValueError(f"--tokens must be at most {limit} for {args.model!r} (its positions), got {args.tokens}")
    batch = passages(tok, args.passages, args.tokens, seed=args.seed)
    facts = describe(model)
    tol = tolerance(model) if args.tol is None else args.tol
    print(f"{args.model}: {facts['family']}, {'encoder' if facts['encoder'] else 'decoder'}, {facts['layers']} "
          f"layers, H={facts['heads']}, G={facts['groups']}, d={facts['d']}, head_dim={facts['head_dim']}; "
          f"{args.passages} passages x {args.tokens} tokens")
    print(f"{'layer':>5}  {'error':>9}  {'passage':>7}")
    rows = verify(model, batch, progress=True)
    for r in rows:
        flag = "" if r["error"] <= tol else "  MISSES"
        print(f"{r['layer']:>5}  {r['error']:9.1e}  {r['passage']:>7}{flag}")
    message = misses(model, rows, tol)
    if message:
        raise ValueError(message)
    print(f"every layer within {short(tol)}: the walk reproduces each attention module's output")
    return 0


def _scorecard(args, ap) -> int:
    """``scorecard REPORT...``: one line per claim and structure, by the rules of :mod:`connlap_lite.verdicts.rules`.

    Each file becomes a :class:`~connlap_lite.verdicts.record.Report` as it is read, so a malformed one is refused with its
    name and its problems (never a later, unnamed error)."""
    from ._files import regular_file
    from .verdicts.scorecard import NEED, one_each, scorecard
    from .verdicts.words import check_report

    reports, seen = [], {}
    for path in args.reports:
        if path.resolve() in seen:
            raise _Usage(f"{path} is given twice (as {seen[path.resolve()]} too): a model counts once; give each "
                         "report once")
        seen[path.resolve()] = path
        if not path.is_file():
            what = "not a regular file (a folder, a FIFO or a device)" if path.exists() else "no such file"
            raise _Usage(f"{path}: {what}; give JSON reports written by `analyze MODEL --json FILE`")
        try:
            report = json.loads(regular_file(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise ValueError(f"{path} cannot be read as JSON ({exc})") from None
        if not isinstance(report, dict) or "conditions" not in report:
            raise ValueError(f"{path} is not a report written by `analyze MODEL --json FILE`")
        try:
            reports.append(check_report(report, str(path), NEED))
        except ValueError as exc:
            raise ValueError(f"{exc}; write it again with `analyze MODEL --json FILE`") from None
    rows = scorecard(one_each(reports, [str(p) for p in args.reports]))
    for row in rows:
        if row["claim"] == "E3":
            what = "; ".join(f"{f}: slope {w['slope']:+.3f} per decade [{w['interval'][0]:+.3f}, {w['interval'][1]:+.3f}]"
                             for f, w in row["within"].items()) or f"{len({m['family'] for m in row['models']})} families, " \
                "no family with three sizes"
            models = [m["model"] for m in row["models"]]
        else:
            what = "; ".join(f"{x['model']}: {x['verdict']}" for x in row["per_model"])
            models = row["models"]
        print(f"{row['claim']} {row['structure']:<8} {row['metric']:<32} {row['verdict']:<14} "
              f"({len(models)} models) {what}")
    bad = sorted({(x["model"], *where) for row in rows for x in row.get("per_model", []) for where in x["nonfinite"]})
    if bad:                                          # a NaN is no verdict: say where, and fail
        print(f"error: {len(bad)} per-layer lists hold NaN or infinite values, so their verdicts are undefined: "
              + "; ".join(f"{m} {c}/{k} layer {layer}" for m, c, k, layer in bad[:10])
              + (" ..." if len(bad) > 10 else ""), file=sys.stderr)
        return 1
    return 0


def _main(ap, argv=None) -> int:
    args, extra = ap.parse_known_args(argv)
    try:
        if extra:                                  # (argparse would report them with the top level's usage)
            raise _Usage(f"unrecognized arguments: {' '.join(extra)} (see {ap.commands[args.command].prog} --help)")
        return {"verify": _verify, "scorecard": _scorecard, "analyze": _analyze,
                "ladder": _ladder}[args.command](args, ap)
    except _Usage as exc:                          # a bad option found after parsing: that sub-command's usage
        exc.usage = exc.usage or ap.commands[args.command].format_usage()
        raise


def _missing(report, claim: str, verdict: dict) -> str:
    """Why a rule answered "insufficient data" on ``report``: what is missing, and the option that raises it.

    >>> print(_missing({"passages": 4, "layers": 12, "conditions": {f"random{s}": {} for s in range(5)}}, "E1", {}))
    4 passages, the rule needs at least 8: run again with --passages 8 or more
    """
    from .verdicts.record import random_nulls
    from .verdicts.words import MIN_PASSAGES, MIN_SEEDS

    why = []
    if report["passages"] < MIN_PASSAGES:
        why.append(f"{report['passages']} passages, the rule needs at least {MIN_PASSAGES}: run again with "
                   f"--passages {MIN_PASSAGES} or more")
    seeds = min(len(random_nulls(report)), verdict.get("data_null_seeds", MIN_SEEDS))
    if seeds < MIN_SEEDS:
        why.append(f"{seeds} random-init seeds, the rule needs {MIN_SEEDS} (analyze measures five): run again with "
                   "--no-cache to measure them afresh")
    if claim == "E1" and report["layers"] < 3:
        why.append(f"{report['layers']} layers, the rule compares the first and the last third of at least 3 "
                   "(a property of the model: no option raises it)")
    return "; ".join(why) or "too few passages, seeds or layers"


def analyze_with_known(name: str, *, n_passages: int = 16, n_tokens: int = 128, seed: int = 0,
                       random_init: bool = False, texts: list[str] | None = None, corpus: str = "pydoc",
                       bos: bool | None = None, split: str = "exploratory", device: str = "cpu",
                       cache: bool = True, refresh: bool = False, progress: bool = True, **analysis):
    """What ``connlap analyze MODEL`` measures: :func:`connlap_lite.measure.analysis.analyze` (E1 to E3's metrics
    against their nulls) and :func:`connlap_lite.known.known_results` (the chapter *Known results, reproduced*)
    on one model loaded once, one batch of passages cut once (the asked corpus, BOS setting and split) and one
    random-init null, ``random_like(model, NULL_SEED)``. Returns the analysis's report with the known results under
    ``"known_results"``. ``analysis``: further arguments of ``analyze`` (``random_seeds``, ``shuffle``, ...), but
    not ``q4``: the known results measure the model as it is.

    Either report may come from the cache: the model is then loaded only for what is not cached.
    """
    from .known.report import known_results
    from .measure.analysis import analyze
    from .models.twins import NULL_SEED, random_like
    from .verdicts.record import Report

    if analysis.get("q4"):
        raise ValueError("q4 must be False here: the known results measure the model as it is; call "
                         "connlap_lite.measure.analysis.analyze(name, q4=True) for the 4-bit ablation alone")
    sizes = dict(n_passages=n_passages, n_tokens=n_tokens, seed=seed, random_init=random_init, texts=texts,
                 corpus=corpus, bos=bos, split=split, device=device)
    held: dict = {}
    report = analyze(name, **sizes, cache=cache, refresh=refresh, progress=progress, keep=held, **analysis)
    load = None
    if "model" in held:                             # measured just now: the same model, batch and twin
        def load():
            model, twin = held.pop("model"), held.pop("twin", None)
            return (model, held.pop("tokenizer"), twin if twin is not None else random_like(model, NULL_SEED),
                    held.pop("passages"))
    known = known_results(name, **sizes, cache=cache and not refresh, _load=load)
    return Report({**report.to_dict(), "known_results": known})


def _analyze(args, ap) -> int:
    """``analyze MODEL``: the per-layer summary against the nulls, the known results, and the outputs."""
    _check_sizes(args)
    texts = None
    if args.texts is not None:
        if not args.texts.is_file():
            _fail(ap, f"--texts {args.texts}: no such file")
        try:
            raw = args.texts.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            _fail(ap, f"--texts {args.texts}: cannot read it as UTF-8 text ({exc})")
        texts = [t.strip() for t in raw.split("\n\n") if t.strip()]
        if not texts:
            _fail(ap, f"--texts {args.texts}: the file holds no text")
    if args.seed < 0:
        _fail(ap, f"--seed must be a nonnegative int, got {args.seed}")
    _check_device(args.device)
    _check_outputs(args, ap)
    from .verdicts.record import depth_trend, layer_means, random_nulls

    report = analyze_with_known(args.model, n_passages=args.passages, n_tokens=args.tokens, seed=args.seed,
                                random_init=args.random_init, texts=texts, corpus=args.corpus, device=args.device,
                                refresh=args.no_cache)                              # a Report, read-only
    main_condition = "random" if args.random_init else "trained"
    print(f"{report['model']}: {report['family']}, {'encoder' if report['encoder'] else 'decoder'}, "
          f"{report['layers']} layers, {report['parameters']:,} parameters, "
          f"{report['passages']} passages x {report['tokens']} tokens")
    print(f"{'metric':<18}{'condition':<10}{'first':>8}{'last':>8}{'rho':>7}{'p':>7}")
    for metric in SUMMARY:
        for cond in (main_condition, "random0", "shuffled"):
            if metric not in report["conditions"].get(cond, {}):
                continue
            means = layer_means(report, metric, cond)
            rho, p = depth_trend(report, metric, cond)
            print(f"{metric:<18}{cond:<10}{means[0]:8.3f}{means[-1]:8.3f}{rho:7.2f}{p:7.3f}")   # undefined: nan
    import textwrap

    wrap = lambda text: textwrap.fill(text, 100, initial_indent="  ", subsequent_indent="    ")   # noqa: E731
    print("\n".join(["legend:", wrap("columns: " + TABLE_LEGEND["columns"]),
                     wrap("conditions: " + TABLE_LEGEND["conditions"]),
                     *(wrap(f"{m}: {TABLE_LEGEND[m]}") for m in SUMMARY)]))
    from .known.statements import STATEMENTS

    print("\nknown results (published statements, as the chapter Known results, reproduced, tests them):")
    for r in report["known_results"]["verdicts"]:
        result, _, _, label = STATEMENTS.get(r["key"], (r["key"], "", "", r["key"]))
        print(f"  {r['verdict']:<18} {result}: {label}")
    verdicts = {}
    if not args.random_init and random_nulls(report):
        from .verdicts.rules import (e1, e2)                  # the rules of E1 and E2 on this model alone (a table of one)
        verdicts = {"E1": e1(report), "E2": e2(report)}
        x, y = verdicts["E1"], verdicts["E2"]
        print(f"\nE1 ({x['metric']}): {x['verdict']} (late {x['late_trained']:.3f} vs strongest null {x['strongest_null']} "
              f"{x['late_nulls'][x['strongest_null']]:.3f}); E2: {y['verdict']} (heads {y['head_defect']:.3f} vs "
              f"{y['head_nulls'][y['strongest_head_null']]:.3f}, data {y['data_defect']:.3f} vs "
              f"{y['data_nulls'][y['strongest_data_null']]:.3f})")
        for claim, v in verdicts.items():
            if v["verdict"] == "insufficient data":
                print(f"{claim}: insufficient data: {_missing(report, claim, v)}")
    if args.json is not None:
        _write_report(args.json, {**report.to_dict(), **({"verdicts": verdicts} if verdicts else {})})
        print(f"wrote {args.json}")
    if args.figures is not None:
        _write_figures(args.figures, report, main_condition)
        print(f"wrote figures to {args.figures}")
    return 0


def _figures(report, main_condition):
    """The figures of ``--figures``, as ``(file name, make)`` pairs: one per summary metric, 880 x 440 px with the
    legend right of the panel (never over the curves), and E1's metric against every null it has."""
    from matplotlib.ticker import MaxNLocator

    from .pages.plots import all_nulls, layer_curves
    from .verdicts.record import random_nulls
    from .verdicts.rules import E1_METRIC

    def curve(metric):
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(8.0, 4.0))
        layer_curves([report], metric, axes=ax)
        ax.set_title(f"{report['model']}: {TABLE_LEGEND[metric]}", fontsize=10)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)
        ax.set_xlabel("layer" if metric not in ("tv_norm", "spec") else "step l to l+1")
        fig.tight_layout()
        return fig

    def e1_nulls():
        fig = all_nulls([report], E1_METRIC, ylabel=E1_METRIC)       # E1's metric against every null it has
        fig.set_size_inches(8.0, 4.4)
        fig.axes[0].set_title(f"{report['model']}: E1's metric, the distance between consecutive layers' walks "
                              "(sinks left out)", fontsize=10)
        fig.axes[0].xaxis.set_major_locator(MaxNLocator(integer=True))
        fig.tight_layout(rect=(0, 0.12, 1, 1))
        return fig

    pairs = [(f"{metric}.png", lambda metric=metric: curve(metric)) for metric in SUMMARY]
    if random_nulls(report) and E1_METRIC in report["conditions"].get(main_condition, {}):
        pairs.append((f"e1_{E1_METRIC}.png", e1_nulls))
    return pairs


def _write_figures(folder: Path, report, main_condition) -> None:
    """The figures of :func:`_figures` into ``--figures folder``, each written whole (a temporary name, renamed); a
    failure names the file, ``--figures`` and the figures already written."""
    import matplotlib.pyplot as plt

    from ._files import temporary

    written = []
    for name, make in _figures(report, main_condition):
        path = folder / name
        tmp = temporary(path)
        fig = make()
        try:
            fig.savefig(tmp, dpi=110, format="png")
            os.replace(tmp, path)
        except OSError as exc:
            done = ", ".join(p.name for p in written) or "none"
            raise OSError(f"--figures {folder}: the figure {path} could not be written ({exc.strerror or exc}); "
                          f"written before it: {done}; run again with --figures on a writable disk with free space "
                          "(the report is in the measurement cache unless a warning above said otherwise)") from None
        finally:
            plt.close(fig)
            if tmp.exists():
                tmp.unlink()
        written.append(path)


def _ladder(args, ap) -> int:
    """``ladder ID ID ...``: each model measured alike (resumable from the cache), E3's verdicts and their power."""
    _check_sizes(args)
    if args.seed < 0:
        _fail(ap, f"--seed must be a nonnegative int, got {args.seed}")
    if args.seeds < 1:
        _fail(ap, f"--seeds must be at least 1 (three or more for a verdict), got {args.seeds}")
    _check_device(args.device)
    if args.out is not None:
        if args.out.exists() and not args.out.is_dir():
            _fail(ap, f"--out {args.out} is a file; give a folder (it is created if missing)")
        inside = [f for m in args.models for f in _model_folders(m) if args.out.resolve().is_relative_to(f)]
        if inside:
            _fail(ap, f"--out {args.out} is inside the model folder {inside[0]}; give a folder outside it")
        _writable_folder(args.out, f"--out {args.out}")
    from .measure.ladder import check_ladder, measure_ladder, summary, verdicts, write

    try:
        check_ladder(args.models)
    except ValueError as exc:
        raise _Usage(str(exc)) from None
    reports = measure_ladder(args.models, n_passages=args.passages, n_tokens=args.tokens, seed=args.seed,
                             random_seeds=tuple(range(args.seeds)), device=args.device, refresh=args.no_cache,
                             progress=True, log=print)
    rows = verdicts(reports)
    for line in summary(rows, len(reports)):
        print(line)
    if args.out is not None:
        written = write(reports, rows, args.out)
        print(f"wrote {len(written) - 2} reports, e3.json and e3_ladder.png to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
