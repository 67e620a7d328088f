"""*E3 on a ladder*, in words: the chapter's computed paragraphs, from the tiny offline ladders it measures and the
Pythia shapes' footprints (:mod:`connlap_lite.measure.ladder`, :mod:`connlap_lite.models.footprint`).

:func:`paragraphs` returns every glued text (:data:`KEYS`); :func:`footprint_rows` the table of what each Pythia
size holds in memory.  No number is typed: the verdicts come from :func:`connlap_lite.measure.ladder.verdicts`, the
memory from :func:`connlap_lite.models.footprint.footprint`, the power from :func:`connlap_lite.measure.ladder.slope_power`.
No GPU time is stated: none was measured for this book.

Chapter: *E3 on a ladder*.
"""
from __future__ import annotations

from ..prose import names

KEYS = ("ladder_summary", "ladder_fig_take", "ladder_verdict", "ladder_footprint", "ladder_power", "ladder_tiny")
GiB, MiB = 2 ** 30, 2 ** 20
METRIC = "head_defect"          # the metric the tiny ladders plant their effect in


def footprint_rows(configs: dict, B: int, n: int) -> list[dict]:
    """One row per model: its parameters, the checkpoint's download (its weights in their own precision) and what
    measuring it holds at once on the device: the weights, one layer's attention, the per-head work, each
    random-init seed's value and output maps."""
    from ...models.footprint import footprint

    rows = []
    for name, config in configs.items():
        f = footprint(config, B, n)
        held = f["weight_bytes"] + f["attention_bytes"] + f["head_bytes"] + f["edge_bytes"] + 3 * f["ov_bytes"]
        rows.append({"model": name, "parameters": f["parameters"], "download": f["weight_bytes"],
                     "attention": f["attention_bytes"], "held": held, "layers": f["layers"]})
    return rows


def _table(rows: list[dict]) -> str:
    head = "| model | parameters | download | one layer's attention | held at once (estimate) |\n|---|---|---|---|---|\n"
    return head + "".join(f"| {r['model'].split('/')[-1]} | {r['parameters'] / 1e6:,.0f}M | "
                          f"{r['download'] / GiB:.2f} GiB | {r['attention'] / MiB:.0f} MiB | "
                          f"{r['held'] / GiB:.2f} GiB |\n" for r in rows)


def _rate(rows: list[str], word: str) -> str:
    return f"{rows.count(word)} of {len(rows)}"


def paragraphs(planted: list[str], none: list[str], rows: list[dict], *, sizes: int, powers: dict,
               bandwidth: float, free_gpu: float, setting: tuple[int, int]) -> dict[str, str]:
    """Every glued text.  ``planted``, ``none``: E3's verdict on :data:`METRIC` for each tiny ladder with and without
    the planted effect; ``rows``: :func:`footprint_rows` of the recipe's ladder; ``sizes``: its number of sizes;
    ``powers``: ``{k: slope_power(k)}``; ``bandwidth``: the download rate assumed for the first-run estimate (bytes
    per second; the reader sets it); ``free_gpu``: the free GPU's memory (bytes); ``setting``: (passages, tokens).

    >>> rows = [{"model": "a/m1", "parameters": 7e7, "download": 1.4e8, "attention": 2e6, "held": 2e8, "layers": 6}]
    >>> out = paragraphs(["holds", "holds"], ["inconclusive", "does not hold"], rows, sizes=5, powers={3: .2, 5: .8},
    ...                  bandwidth=5e7, free_gpu=15 * 2 ** 30, setting=(32, 128))
    >>> sorted(out) == sorted(KEYS), "2 of 2" in out["ladder_verdict"], "0 of 2" in out["ladder_verdict"]
    (True, True, True)
    """
    largest = max(rows, key=lambda r: r["held"])
    total = sum(r["download"] for r in rows)
    fits = largest["held"] < free_gpu
    passages, tokens = setting
    out = {
        "ladder_summary": (
            "One command measures every size of one model family alike and asks E3's question, whether the structure "
            "strengthens with scale, of the family alone. The page runs it here on tiny random GPT-NeoX ladders, with "
            "and without an effect planted in them, and gives the recipe for Pythia's sizes on a free Colab GPU."),
        "ladder_fig_take": (
            f"With the effect planted, the heads' gap to their strongest null falls with size and E3 says "
            f"{'holds' if planted.count('holds') == len(planted) else 'holds in ' + _rate(planted, 'holds')}; without "
            f"it the gap wanders and E3 says holds in {_rate(none, 'holds')} ladders."),
        "ladder_verdict": (
            f"On the tiny offline ladders (random GPT-NeoX models of growing width, {METRIC.replace('_', ' ')}): E3 "
            f"holds in {_rate(planted, 'holds')} ladders with a planted effect and in {_rate(none, 'holds')} without "
            "one. This checks the instrument, not a trained family: no ladder of trained sizes can be measured "
            "offline."),
        "ladder_footprint": (
            f"Measuring {names([r['model'].split('/')[-1] for r in rows])} on {passages} passages of {tokens} tokens "
            f"downloads {total / GiB:.1f} GiB of float16 weights; the largest, {largest['model'].split('/')[-1]}, holds "
            f"about {largest['held'] / GiB:.1f} GiB at once, which "
            f"{'fits' if fits else 'does not fit'} in a free Colab GPU's {free_gpu / GiB:.0f} GiB. At an assumed "
            f"{bandwidth / 1e6:.0f} MB/s the first run spends about {total / bandwidth / 60:.0f} minutes downloading "
            "(set BANDWIDTH to yours); the measurement itself was not timed on a GPU for this book, so the command "
            "prints each model's time as it goes.\n\n" + _table(rows)),
        "ladder_power": (
            f"A model-level slope test over {sizes} sizes has power {powers.get(sizes, float('nan')):.2f} at the "
            f"signal-to-noise ratio the command assumes; "
            + ", ".join(f"{k} sizes {p:.2f}" for k, p in sorted(powers.items()))
            + ". Fewer than three sizes cannot test a slope at all, and three are weak evidence whatever they show."),
        "ladder_tiny": (
            f"Each tiny ladder is measured by the same command a reader runs on Pythia: with the planted effect, E3 "
            f"holds in {_rate(planted, 'holds')}; without it, in {_rate(none, 'holds')}."),
    }
    return out
