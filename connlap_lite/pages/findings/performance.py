"""*Performance*, in words and tables: every sentence and table of the appendix, from the committed benchmark
records (``benchmarks/results/*.json``: ``extraction``, ``walk_apply``, ``spectra``, ``gpu_8b``, ``book_times``).

:func:`paragraphs` returns every glued text that reads the records alone (:data:`KEYS`); :func:`gpu_estimates`
and :func:`live` write the two that also read what the page computes (the 8B estimates, the live check). The
``*_table`` functions give the plain-text tables the page prints. Nothing here measures: the benchmarks did.

Chapter: *Performance*.
"""
from __future__ import annotations

import html

from ..prose import caches_at_start, measured_at, names, span

NAMES = ("extraction", "walk_apply", "spectra", "gpu_8b", "book_times")     # the records, in the page's order
KEYS = ("perf_summary", "perf_depth_take", "perf_apply_take", "perf_spectra_take", "perf_extraction",
        "perf_memory", "perf_tl", "perf_apply", "perf_spectra", "perf_book", "perf_gpu_status", "perf_missed")
FLAT = 1.1          # a peak that grows by less than this factor from the shallowest to the deepest model is flat
MiB, GiB, TiB = 2**20, 2**30, 2**40


def _bytes(n: float) -> str:
    """A size in the largest binary unit it fills: ``'1.5 TiB'``, ``'12.0 GiB'``, ``'3.0 MiB'``.

    >>> _bytes(1.5 * 2**40), _bytes(12 * 2**30), _bytes(3 * 2**20)
    ('1.5 TiB', '12.0 GiB', '3.0 MiB')
    """
    unit, name = next((u, s) for u, s in ((TiB, "TiB"), (GiB, "GiB"), (MiB, "MiB")) if n >= u or u == MiB)
    return f"{n / unit:.1f} {name}"
TEST_GOAL, BOOK_GOAL = 20 * 60, 60 * 60     # seconds: make test's goal, make book's
NUMBER = ("no", "one", "two", "three", "four", "five", "six")


def _count(k: int) -> str:
    return NUMBER[k] if k < len(NUMBER) else str(k)


def _flat(extraction: dict) -> bool:
    return extraction["growth"]["walks"] < FLAT


def goal_rows(results: dict):
    """``(benchmark, goal)`` for every goal of every record in ``results``, in the order of :data:`NAMES`."""
    for name in NAMES:
        for g in results.get(name, {}).get("goals", []):
            yield name, g


def _what(goal: dict) -> str:
    """A goal's description without its benchmark's prefix."""
    return goal["what"].split(": ", 1)[-1]


def worst_depth(extraction: dict) -> dict:
    """The depth row whose extraction peak (in layers of attention) is the largest."""
    return max(extraction["layers"], key=lambda r: r["peak_in_layers"]["walks"])


def streaming_pays(extraction: dict) -> bool:
    """Whether streaming extraction's peak grows less with depth than the floor's and stays below it at every
    depth after the shallowest."""
    E = extraction
    return E["growth"]["walks"] < E["growth"]["floor"] and all(
        r["memory"]["walks"]["peak_bytes"] < r["memory"]["floor"]["peak_bytes"] for r in E["layers"][1:])


def dense_ratio(walk_apply: dict) -> tuple[int, float]:
    """``(n, ratio)``: the largest ``n`` where the dense product ran, and its time over the factored apply's."""
    last = [r for r in walk_apply["rows"] if "dense/apply" in r["ratio"]][-1]
    return last["n"], last["ratio"]["dense/apply"]


# ----------------------------------------------------------------------- the opening and the captions
def summary(results: dict) -> str:
    """The opening in plain words: what the package costs beside the plainest code, and how many goals are met."""
    E = results["extraction"]
    walks = [r["ratio"]["walks"] for r in E["pretrained"]]
    layers = E["layers"]
    run = [g for _, g in goal_rows(results) if g["met"] is not None]
    met = sum(g["met"] is True for g in run)
    memory = (f"its memory stays flat as the model gets deeper (a factor {E['growth']['walks']:.2f} from "
              f"{layers[0]['n_layer']} to {layers[-1]['n_layer']} layers, against {E['growth']['floor']:.1f} for "
              "that forward pass)" if _flat(E) else
              f"its memory grows by a factor {E['growth']['walks']:.2f} from {layers[0]['n_layer']} to "
              f"{layers[-1]['n_layer']} layers (that forward pass: {E['growth']['floor']:.1f})")
    return ("This appendix measures what the package costs beside the plainest PyTorch code that computes the "
            "same thing, on one machine. Reading every layer's walk of a real model costs "
            f"{span(walks)} times one forward pass that returns every attention matrix, and {memory}. "
            f"Of the {len(run)} performance goals that were run, {met} {'is' if met == 1 else 'are'} met; the "
            "missed ones are listed with their reasons below.")


def depth_take(extraction: dict) -> str:
    """The first sentence of the depth figure's caption."""
    E = extraction
    walks = [r["peak_in_layers"]["walks"] for r in E["layers"]]
    floor = [r["peak_in_layers"]["floor"] for r in E["layers"]]
    if _flat(E):
        return (f"Reading every walk needs about the same memory at every depth ({span(walks)} layers of attention), "
                f"while the forward pass that returns the attention grows from {floor[0]:.1f} to {floor[-1]:.1f} "
                "layers' worth.")
    return (f"Reading every walk needs {span(walks)} layers of attention in memory, growing with depth; the forward "
            f"pass that returns the attention needs {span(floor, '{:.1f}')}.")


def apply_take(walk_apply: dict) -> str:
    """The first sentence of the figure of applying a walk."""
    big = walk_apply["rows"][-1]
    r = big["ratio"]
    return (f"At {big['n']} tokens, applying a built walk takes {r['apply/torch']:.2f} times as long as PyTorch's "
            f"fused attention, and going from the tokens to the output through the walk {r['walk/torch']:.1f} "
            "times.")


def spectra_take(spectra: dict) -> str:
    """The first sentence of the spectra figure's caption."""
    last = spectra["rows"][-1]
    return (f"ARPACK finds the leading eigenvalues of a generator of size $nd = {last['N']:,}$ in "
            f"{last['arpack_seconds']:.0f} s; the dense solver stops at $nd = {spectra['dense_largest_N']:,}$.")


# ----------------------------------------------------------------------- the sections' paragraphs
def extraction(extraction: dict) -> str:
    """What streaming extraction and the chapters' metrics cost against the floor (``perf_extraction``)."""
    pre = {r["model"]: r for r in extraction["pretrained"]}
    eager = [m for m, r in pre.items() if "walks_eager" in r["ratio"]]
    tokens = names(sorted({str(r["n"]) for r in pre.values()}))
    walks = names(f"{r['ratio']['walks']:.2f} times the floor on `{m}`" for m, r in pre.items())
    read_eager = (" (with the model's own eager attention read instead: "
                  + names(f"{pre[m]['ratio']['walks_eager']:.2f}" for m in eager) + ")") if eager else ""
    metrics = names(f"{r['ratio']['metrics']:.1f} times the floor on `{m}`" for m, r in pre.items())
    edges = names(f"{r['ratio']['edges']:.1f}" for r in pre.values())
    return (f"On the {_count(len(pre))} offline models (passages of {tokens} real tokens), building every "
            f"passage's walk in every layer costs {walks}{read_eager}. Every layer runs the model's fused "
            "attention, and a layer read then builds its attention once from the queries and keys the model made, "
            "while the forward waits; the eager path gets it from the forward itself. "
            f"The chapters' metrics cost {metrics}: every singular value of the heaviest edges' gated "
            f"transports, in every layer (the edge defects alone, with the forward, take {edges} times the floor), "
            "every eigenvalue of each passage's symmetrised walk, and E2's Gaussian and rotated copies of every "
            "head: work that no forward pass does. The edge defects need every singular value, so no partial "
            "solve gives the same number.")


def memory(extraction: dict) -> str:
    """Extraction's peak memory against the floor's as the model gets deeper (``perf_memory``)."""
    E = extraction
    first, deep, worst = E["layers"][0], E["layers"][-1], worst_depth(E)
    peaks = worst["peak_in_layers"]
    floor = [r["memory"]["floor"]["peak_bytes"] for r in E["layers"]]
    grows = all(b > a for a, b in zip(floor, floor[1:]))
    opening = ("Memory is where streaming pays." if streaming_pays(E) else
               "Memory is where streaming should pay; on these numbers it does not beat the floor at every depth.")
    eager = (f" (the eager walks: {peaks['walks_eager']:.2f} layers, because eager attention holds a layer's "
             "scores and their softmax at once)" if "walks_eager" in peaks else "")
    build = (f"; building one layer's attention and walks, with the forward waiting at that layer, peaks at "
             f"{peaks['build']:.2f} layers" if "build" in peaks else "")
    return (f"{opening} The random-init GPT-2-shaped models below have the same width ({first['d']}, "
            f"{first['heads']} heads) and {first['n_layer']} to {deep['n_layer']} layers, on {first['B']} "
            f"passages of {first['n']} tokens, so one layer's attention is "
            f"{first['attention_layer_bytes'] / MiB:.0f} MiB. The floor's peak goes from "
            f"{first['peak_in_layers']['floor']:.1f} to {deep['peak_in_layers']['floor']:.1f} layers of attention"
            + (", growing with every layer, because it returns every layer's attention" if grows else
               " (it returns every layer's attention)")
            + f". Extraction's is {peaks['walks']:.2f} layers at worst and grows by a factor "
            f"{E['growth']['walks']:.2f} from {first['n_layer']} to {deep['n_layer']} layers{eager}. The SDPA "
            f"forward alone peaks at {peaks['forward']:.2f} layers{build}.")


def transformer_lens(extraction: dict) -> str:
    """TransformerLens beside the floor, or why the page has no row for it (``perf_tl``)."""
    tl = extraction.get("transformer_lens", {})
    growth = extraction.get("growth", {})
    said = ("TransformerLens {cite}`nanda2022transformerlens`"
            + (f" (version {tl.get('version')})" if tl.get("available") else "")
            + " caches every hook point, attention scores and patterns included, so its memory grows with depth")
    if tl.get("available"):
        layers = [r["n_layer"] for r in extraction.get("layers", [])]
        return said + (f": by a factor {growth['tl']:.1f} from {min(layers)} to {max(layers)} layers, against "
                       f"{growth['floor']:.1f} for the eager floor." if "tl" in growth and layers else ".")
    said += "."
    return (said + " It was not installed for the run these numbers come from, so this page has no row for it; "
            "`benchmarks/extraction.py --tl-python` measures it where it is.")


def apply(walk_apply: dict) -> str:
    """The factored apply against the dense block matrix and against PyTorch's attention (``perf_apply``)."""
    W = walk_apply
    d = W["settings"]["d"]
    n_dense, ratio = dense_ratio(W)
    big = W["rows"][-1]
    r = big["ratio"]
    slower = (f"is {ratio:.0f} times slower than the factored one" if ratio >= 10 else
              f"is {ratio:.1f} times slower than the factored one" if ratio > 1 else
              f"takes {ratio:.2f} times the factored one's time")
    return ("A multi-head walk is applied through its per-head factors: $O(H n^2 d_h + H n d\\, d_h)$ work, no "
            "$nd \\times nd$ matrix ({ref}`multi-head`). The dense block matrix is $(nd)^2 \\cdot 8$ bytes in "
            f"float64: with $d = {d}$ it is {(64 * d) ** 2 * 8 / GiB:.1f} GiB at $n = 64$ and passes this "
            f"machine's memory at $n = {W['dense_exceeds_machine_memory_n']}$; the benchmark builds it only under "
            f"a cap, so beyond $n = {W['dense_largest_n']}$ the row records why it was skipped. At "
            f"$n = {n_dense}$, the largest $n$ where both run, the dense product {slower}.\n\n"
            "PyTorch's `scaled_dot_product_attention` is the peer. Applying a walk that is already built costs "
            f"{r['apply/torch']:.2f} times SDPA at $n = {big['n']}$; going from $X$ to the output through the walk "
            f"(patterns, gates, apply) costs {r['walk/torch']:.1f} times, because the walk writes out the "
            "$(H, n, n)$ patterns and gates that a fused kernel never forms; against eager attention, which forms "
            f"the patterns too, it is {r['walk/eager']:.2f} times.")


def spectra(spectra: dict) -> str:
    """ARPACK on the walk's operator against the dense eigen-solve (``perf_spectra``)."""
    S = spectra
    last = S["rows"][-1]
    agree = max(r["error_vs_dense"] for r in S["rows"] if "dense_seconds" in r)
    return ("`ConnectionWalk.operator()` hands the walk to ARPACK as a `LinearOperator`: every product is one "
            f"factored apply. The benchmark asks for the {S['settings']['k']} eigenvalues of largest modulus "
            f"(tolerance {S['settings']['tol']:.0e}) of a random-attention walk of width {S['settings']['d']} as "
            f"$nd$ grows to {last['N']:,}. The dense eigen-solve stops after $nd = {S['dense_largest_N']:,}$; "
            f"ARPACK takes {last['arpack_seconds']:.0f} s at $nd = {last['N']:,}$, where the dense matrix alone "
            f"would be {_bytes(last['N'] ** 2 * 8)}. Where both run, they agree to {agree:.0e} or better in "
            "every eigenvalue's modulus.")


def _make_test(mt: dict) -> str:
    if not mt.get("seconds"):
        return "The whole `make test` has not been timed as one run yet."
    timed = mt.get("notebooks") or {}
    slow = max(timed, key=timed.get) if timed else None
    within = (f"; within it the notebooks under nbval took {sum(timed.values()):.0f} s together, the longest "
              f"`{slow}` ({timed[slow]:.0f} s)." if slow else ".")
    return (f"The whole `make test` took {mt['seconds'] / 60:.1f} minutes, {measured_at(mt)}, with "
            f"{caches_at_start(mt)} and make's virtual environment {mt.get('venv_at_start', 'not recorded')} at "
            f"its start (exit status {mt['returncode']}), "
            + ("inside" if mt["seconds"] <= TEST_GOAL else "outside") + f" the 20-minute goal{within}")


def _make_book(mb: dict) -> str:
    if not mb.get("seconds"):
        return " The full `make book` has not been timed yet."
    setting = mb.get("setting")                               # (passages, tokens): most measurements' setting
    timed = mb.get("notebooks") or {}
    slow = max(timed, key=timed.get) if timed else None
    said = (" The full build, `make book` ("
            + (f"{setting[0]} passages of {setting[1]} tokens" if setting else
               "its full setting, not recorded for a build from warm caches")
            + f", the fifth model, every corpus and ablation), took {mb['seconds'] / 60:.1f} minutes, "
            f"{measured_at(mb)}, with {caches_at_start(mb)} at its start (exit status {mb['returncode']}), "
            + ("inside" if mb["seconds"] <= BOOK_GOAL else "outside") + " its 60-minute goal"
            + (f"; {mb['note']}" if mb.get("note") else "")
            + (f"; its longest page was `{slow}` ({timed[slow] / 60:.1f} min)" if slow else "")
            + (". Pages whose notebook failed: " + ", ".join(f"`{f}`" for f in mb["failed"]) + "."
               if mb.get("failed") else "; every page executed."))
    if not mb.get("measurements"):
        return said
    measured = sum(m["seconds"] for m in mb["measurements"])
    said += f" Of that build, the {len(mb['measurements'])} measurements of models took {measured / 60:.1f} minutes"
    if not (setting and setting[0] < 32):
        return said + "."
    # what 32 passages would cost: the measurements' forward passes and per-passage metrics grow with them
    factor = 32 / setting[0]
    scaled = mb["seconds"] + measured * (factor - 1)
    return (said + f"; with 32 passages per setting instead of {setting[0]} they would take about {factor:.1f} "
            f"times as long, and the build about {scaled / 60:.0f} minutes (an estimate from these measured "
            "times), " + ("inside the 60-minute goal, so the book could measure 32 passages." if scaled <= BOOK_GOAL
                          else f"past the 60-minute goal, so this build measures {setting[0]} passages."))


def book(book_times: dict) -> str:
    """How long `make test` and `make book` took, each said with its commit and date (``perf_book``)."""
    B = book_times
    earlier = "".join(f" An earlier record in the JSON ({r['date_utc'][:10]}) is {r['what']}"
                      for r in B.get("earlier", []))
    return _make_test(B.get("make_test") or {}) + earlier + _make_book(B.get("make_book") or {})


def gpu_status(gpu: dict) -> str:
    """Whether the 8B benchmark was run, and where (``perf_gpu_status``)."""
    if gpu.get("runs"):
        where = gpu.get("device") or gpu["machine"].get("cuda") or "a GPU"
        return f"It was run on {where} ({gpu['machine']['date_utc'][:10]}), and the row above gives its peak."
    return f"The committed run recorded *{gpu.get('status', 'not run')}*, so the row above says *not run*."


def missed(results: dict) -> str:
    """Every missed goal with its number (``perf_missed``)."""
    gone = [g for _, g in goal_rows(results) if g["met"] is False]
    if not gone:
        return "Every goal that was run is met."
    return "Missed: " + "; ".join(f"{_what(g)} ({g['measured']:.3f} {g['unit']}, goal {g['op']} {g['goal']:g})"
                                  for g in gone) + "."


def paragraphs(results: dict) -> dict[str, str]:
    """Every glued text that reads the records alone, ``{key: markdown}`` in the order of :data:`KEYS`, from
    ``results`` (``{benchmark name: its JSON record}``, as the appendix loads them)."""
    missing = [k for k in NAMES if k not in results]
    if missing:
        raise ValueError(f"results lacks the benchmark records {names(missing)}: load benchmarks/results/*.json")
    E, W, S, G, B = (results[k] for k in NAMES)
    says = {"perf_summary": summary(results), "perf_depth_take": depth_take(E), "perf_apply_take": apply_take(W),
            "perf_spectra_take": spectra_take(S), "perf_extraction": extraction(E), "perf_memory": memory(E),
            "perf_tl": transformer_lens(E), "perf_apply": apply(W), "perf_spectra": spectra(S), "perf_book": book(B),
            "perf_gpu_status": gpu_status(G), "perf_missed": missed(results)}
    assert tuple(says) == KEYS
    return says


# ----------------------------------------------------------------------- what the page computes, in words
def gpu_estimates(rows: list[tuple], weight_bytes: float, peak_layers: float, flop_rate: float) -> str:
    """The 8B estimates' table and what it assumes (``perf_gpu``), from ``rows`` of ``(tokens, one layer's
    attention in bytes, weights + extraction peak in bytes, seconds of eigen-solves)``.

    >>> print(gpu_estimates([(2048, 2**30, 17 * 2**30, 12.0)], 15 * 2**30, 1.75, 1e12))
    | tokens | one layer's attention | weights + extraction peak | eigen-solves per passage (assumed rate) |
    |---|---|---|---|
    | 2,048 | 1.0 GiB | 17 GiB (estimate) | 12 s (estimate) |
    <BLANKLINE>
    The memory column is the bf16 weights (15 GiB) plus 1.75 layers of attention, the peak measured above; the time column assumes 1e+12 flop/s for the float64 solves.
    """
    head = ["| tokens | one layer's attention | weights + extraction peak | eigen-solves per passage (assumed rate) |",
            "|---|---|---|---|"]
    body = [f"| {n:,} | {a / GiB:.1f} GiB | {m / GiB:.0f} GiB (estimate) | {s:.0f} s (estimate) |"
            for n, a, m, s in rows]
    return "\n".join(head + body) + (
        f"\n\nThe memory column is the bf16 weights ({weight_bytes / GiB:.0f} GiB) plus {peak_layers:.2f} layers of "
        f"attention, the peak measured above; the time column assumes {flop_rate:.0e} flop/s for the float64 "
        "solves.")


def live(agree: float, dense_bytes: int, t_factored: float, t_dense: float, rounds: int) -> str:
    """The live check's paragraph (``perf_live``): the factored and dense applies agree at ``n = 64``, and their
    least times at ``n = 256`` (reported as measured, never asserted: a wall-clock comparison).

    >>> live(3e-16, 4 * MiB, 0.0005, 0.002, 15).endswith("the factored apply is 4.0 times faster.")
    True
    """
    faster = (f"the factored apply is {t_dense / t_factored:.1f} times faster." if t_factored < t_dense else
              "on this run the factored apply was not the faster of the two.")
    return (f"At $n = 64$ the factored apply and the dense block matrix give the same section (relative "
            f"difference {agree:.0e}). At $n = 256$ (with $d = 8$, so the dense matrix is "
            f"{dense_bytes / MiB:.0f} MiB), each timed on one thread by its least time over {rounds} interleaved "
            f"rounds, the factored apply took {t_factored * 1e3:.2f} ms and the dense product "
            f"{t_dense * 1e3:.2f} ms: {faster}")


# ----------------------------------------------------------------------- the tables the page prints
def machine(record: dict) -> str:
    """The machine a record was measured on, in one line."""
    m = record["machine"]
    return (f"{m['processor']}, {m['cpus']} cores, {m['memory_gib']} GiB; Python {m['python']}, torch {m['torch']}, "
            f"transformers {m['transformers']}; {m['omp_num_threads']} thread; measured {m['date_utc']}; load "
            f"average at start {m['load_average_at_start'][0]:.1f}")


def goals_table(results: dict) -> str:
    """Every goal at a glance, as an HTML table: benchmark, what, measured, goal, met."""
    def cell(tag, x):
        return f"<{tag}>{x}</{tag}>"

    rows = []
    for name, g in goal_rows(results):
        measured = "not run" if g["measured"] is None else f"{g['measured']:.3g}"
        met = {True: "yes", False: "<b>no</b>", None: "not run"}[g["met"]]
        rows.append([name, html.escape(_what(g)), measured, html.escape(f"{g['op']} {g['goal']:g} {g['unit']}"),
                     met])
    head = "".join(cell("th", h) for h in ("benchmark", "what", "measured", "goal", "met?"))
    body = "".join("<tr>" + "".join(cell("td", x) for x in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def extraction_table(extraction: dict) -> str:
    """Per offline model: each variant's time over the floor's and its peak memory above the weights."""
    return "\n".join(
        f"{r['model']:>13} (B={r['B']}, n={r['n']}, {r['layers']} layers): "
        + ", ".join(f"{k} {v:.2f}x" for k, v in r["ratio"].items()) + " the floor's time; peak above weights "
        + ", ".join(f"{k} {m['peak_bytes'] / MiB:.0f} MiB" for k, m in r["memory"].items())
        for r in extraction["pretrained"])


def depth_table(extraction: dict, variants) -> str:
    """Per depth: each variant's peak in layers of attention."""
    return "\n".join(f"{r['n_layer']:2d} layers: peak in layers of attention: "
                     + ", ".join(f"{v} {r['peak_in_layers'][v]:.2f}" for v in variants)
                     for r in extraction["layers"])


def apply_table(walk_apply: dict) -> str:
    """Per number of tokens: each route's time ratio, and the dense matrix's size."""
    return "\n".join(f"n={r['n']:5d}: " + ", ".join(f"{k} {v:.2f}" for k, v in r["ratio"].items())
                     + f"; dense {r['dense_bytes'] / GiB:.2f} GiB" + (" (skipped)" if "dense_skipped" in r else "")
                     for r in walk_apply["rows"])


def spectra_table(spectra: dict) -> str:
    """Per size ``nd``: ARPACK's time and products, and the dense solve's time or why it was skipped."""
    return "\n".join(f"n*d={r['N']:7d}: ARPACK {r['arpack_seconds']:6.2f} s ({r['matvecs']} products), "
                     + (f"dense {r['dense_seconds']:.2f} s" if "dense_seconds" in r else
                        f"dense skipped: {r['dense_skipped']}")
                     for r in spectra["rows"])


def gpu_table(gpu: dict) -> str:
    """The 8B benchmark's status, how to reproduce it, and its runs."""
    lines = [f"{gpu.get('status')} | {gpu.get('reproduce')}"]
    lines += [f"n={r['n']}: {r['tokens_per_second']:.0f} tokens/s, peak {r['peak_gib']:.1f} GiB"
              for r in gpu.get("runs", [])]
    return "\n".join(lines)


def book_table(book_times: dict) -> str:
    """Each notebook's time under `make test`, and the two whole runs with their commits, dates and caches."""
    B = book_times
    lines = [f"{nb:40s} " + (f"{r['seconds']:7.1f} s {r['status']}" if r.get("seconds") is not None else
                             "not measured yet") for nb, r in B["notebooks"].items()]
    mt = B.get("make_test") or {}
    lines.append("make test: " + ("not measured as one run yet" if not mt.get("seconds") else
                                  f"{mt['seconds'] / 60:.1f} min, exit {mt['returncode']}, {measured_at(mt)}, "
                                  f"{caches_at_start(mt)}"))
    mb = B.get("make_book") or {}
    lines.append("make book: " + ("not measured yet" if not mb.get("seconds") else
                                  f"{mb['seconds'] / 60:.1f} min, exit {mb['returncode']}, {measured_at(mb)}, "
                                  f"{caches_at_start(mb)}, failed {mb['failed'] or 'none'}"))
    lines += [f"  {nb:40s} {s:7.1f} s" for nb, s in (mb.get("notebooks") or {}).items()]
    return "\n".join(lines)


def missed_list(results: dict) -> str:
    """Every missed goal with its number and recorded reason, and every goal not run, one item each."""
    lines = []
    for name, g in goal_rows(results):
        if g["met"] is False:
            lines.append(f"- {name}: {_what(g)}: {g['measured']:.3g} {g['unit']} (goal {g['op']} {g['goal']:g})."
                         + (f"\n    why: {g['reason']}" if g["reason"] else ""))
    lines += [f"- {name}: {_what(g)}: not run. {g['reason']}" for name, g in goal_rows(results) if g["met"] is None]
    return "\n".join(lines)
