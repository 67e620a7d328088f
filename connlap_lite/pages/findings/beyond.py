"""*Beyond E1-E3*, in words: the chapter's computed paragraphs (copy scores, the sink, what removing it does,
read-write overlap, one edge up close), from the statistics its cells compute.

:func:`paragraphs` returns every glued text (:data:`KEYS`); :func:`trend_rows` is the chapter's depth trend of a
per-layer metric, trained beside random init. The self-loop's section has its own texts (:data:`SELF_LOOP_KEYS`,
:func:`self_loop_paragraphs`, from :func:`connlap_lite.verdicts.readings.self_loop`) and figure (:func:`self_loop_figure`).

Chapter: *Beyond E1-E3*.
"""
from __future__ import annotations

from ..prose import layers_of, names, span, who
from ...verdicts.record import layer_means
from ...measure.stats import spearman

KEYS = ("beyond_summary", "beyond_copy_take", "beyond_findings", "beyond_threshold_null", "beyond_copy_says",
        "beyond_sink_take", "beyond_sink_says", "beyond_gap_take", "beyond_gap_says", "beyond_overlap_take",
        "beyond_overlap_says", "beyond_bound_take", "beyond_edge_take", "beyond_edge_says")


def trend_rows(reports: dict[str, dict], metric: str) -> dict[str, dict]:
    """Per model: the per-layer mean's first and last value and Spearman's rho against depth (with p), trained and
    for the seed-0 random-init null."""
    rows = {}
    for m, rep in reports.items():
        t, z = layer_means(rep, metric), layer_means(rep, metric, "random0")
        (r, p), (r0, p0) = spearman(range(len(t)), t), spearman(range(len(z)), z)
        rows[m] = dict(first=float(t[0]), last=float(t[-1]), null_first=float(z[0]), null_last=float(z[-1]),
                       rho=r, p=p, null_rho=r0, null_p=p0)
    return rows


def trend_text(rows: dict[str, dict], label: str) -> str:
    """:func:`trend_rows` as a plain-text table."""
    lines = [f"{label}; per-layer mean, trained | random init (seed 0)",
             f"{'model':>19} {'first':>6} {'last':>6} {'rho':>6} {'p':>7} | {'first':>6} {'last':>6} {'rho':>6} {'p':>7}"]
    lines += [f"{m:>19} {r['first']:6.3f} {r['last']:6.3f} {r['rho']:+6.2f} {r['p']:7.1g} | {r['null_first']:6.3f} "
              f"{r['null_last']:6.3f} {r['null_rho']:+6.2f} {r['null_p']:7.1g}" for m, r in rows.items()]
    return "\n".join(lines)


def threshold_null(copy_stats: dict) -> str:
    null_top = max(s["null_max"] for s in copy_stats.values())
    k = int(0.2 / null_top)
    return (f"It is at least {k} times the largest absolute copy score of the random-initialised models below."
            if k >= 2 else
            f"It is barely above the largest absolute copy score of the random-initialised models below "
            f"({null_top:.3f}), so the counts near it mix in noise.")


def copying(reports: dict, copy_stats: dict, copy_rows: dict) -> str:
    """Copying and suppressing heads against the null, and the copy score's depth trend (``beyond_copy_says``)."""
    models = list(reports)
    both = [m for m in models if copy_stats[m]["copying"] >= 1 and copy_stats[m]["suppressing"] >= 1]
    beyond = {m: min(copy_stats[m]["max"], -copy_stats[m]["min"]) / copy_stats[m]["null_max"] for m in both}
    text = (f"Copying heads ($c_h > 0.2$) and suppressing heads ($c_h < -0.2$) both occur in {who(both, models)} "
            "(copying: " + ", ".join(f"{copy_stats[m]['copying']} of {copy_stats[m]['heads']} in {m}" for m in models)
            + "; suppressing: " + ", ".join(f"{copy_stats[m]['suppressing']} in {m}" for m in models) + ")")
    if both:
        text += (f", and where both occur the most extreme head on either side lies "
                 f"{span(beyond.values(), '{:.0f}')} times beyond the random-init null's largest $|c_h|$"
                 + (": copying is learned, not a property of the architecture." if min(beyond.values()) > 5 else "."))
    else:
        text += "."
    top = max(max(s["max"], -s["min"]) for s in copy_stats.values())
    text += (f" The largest $|c_h|$ of any trained head is {top:.2f}, "
             + (f"{'far from' if top < 0.8 else 'short of'} $1$, so no head is (minus) a scaled projection."
                if top < 0.95 else "close to $1$: that head is nearly (minus) a scaled projection."))
    rises = [m for m in models if copy_rows[m]["rho"] > 0 and copy_rows[m]["p"] < 0.01]
    falls = [m for m in models if copy_rows[m]["rho"] < 0 and copy_rows[m]["p"] < 0.01]
    flat = [m for m in models if m not in rises and m not in falls]

    def rho(ms):
        return span([copy_rows[m]["rho"] for m in ms], "{:+.2f}")

    parts = ([f"rises in {names(rises)} ($\\rho$ = {rho(rises)}, $p < 0.01$)"] if rises else []) + \
            ([f"falls in {names(falls)} ($\\rho$ = {rho(falls)}, $p < 0.01$)"] if falls else []) + \
            ([f"shows no such trend in {names(flat)} ($\\rho$ = {rho(flat)})"] if flat else [])
    text += (" Whether the mean copy score changes with depth differs from model to model: it "
             if sum(map(bool, (rises, falls, flat))) > 1 else " With depth, the mean copy score ") + names(parts) + "."
    text += "".join(f" With only {reports[m]['layers']} layers, {m} could show a significant trend only if its "
                    "curve were nearly monotone." for m in models if reports[m]["layers"] <= 8)
    return text


def sink(reports: dict, sink_stats: dict, sink_rows: dict) -> str:
    """The sink mass against the uniform walk's share, layer by layer (``beyond_sink_says``)."""
    models = list(reports)
    # every null's sink mass is read on the trained model's sink columns (schema 2026-12-02.1): it is 0 only where
    # the trained model has no sink column at all, no factor of u_n, said apart
    sinkless = [m for m in models if sink_stats[m]["null_min"] <= 0]
    spread = {m: max(s["null_max"], 1 / s["null_min"]) for m, s in sink_stats.items() if s["null_min"] > 0}
    widest = max(spread, key=spread.get) if spread else None
    curves = {m: layer_means(rep, "sink") / sink_stats[m]["u"] for m, rep in reports.items()}
    after = [m for m in models if sink_stats[m]["at"] > 0]
    near = [m for m in models if sink_stats[m]["first"] < 3]
    early = [m for m in models if m not in near]
    keep = [m for m in models if sink_stats[m]["last"] > 5 * sink_stats[m]["null_max"]]
    drop = [m for m in models if sink_stats[m]["last"] < 1.5]
    between = [m for m in models if m not in keep and m not in drop]
    strong = [m for m in models if sink_stats[m]["peak"] > 5]
    dips = {m: [l for l in range(len(c)) if c[l] < 2 and (c[:l] > 5).any() and (c[l + 1:] > 5).any()]
            for m, c in curves.items()}
    rising = [m for m in models if sink_rows[m]["rho"] > 0 and sink_rows[m]["p"] < 0.01]
    keeps = [m for m in models if sink_stats[m]["shuffled_rho"] > 0.75]

    def of(ms, key):
        return ", ".join(f"{sink_stats[m][key]:.1f}$u_n$" + (f" in {m}" if len(ms) > 1 else "") for m in ms)

    def verb(ms, one, many):
        return one if len(ms) == 1 else many

    first = []
    if near:
        first.append(f"{names(near)} {verb(near, 'sits', 'sit')} close to the uniform share (below $3u_n$: "
                     f"{of(near, 'first')})")
    if early:
        first.append(f"{names(early)} already {verb(early, 'has', 'have')} a strong sink ({of(early, 'first')})")
    last = []
    if keep:
        last.append(f"{names(keep)} {verb(keep, 'keeps', 'keep')} a strong sink to the last layer, more than five "
                    f"times the nulls' largest value ({of(keep, 'last')}).")
    if drop:
        last.append(f"In {names(drop)} the last layer falls back below $1.5u_n$ ({of(drop, 'last')}).")
    if between:
        last.append(f"In {names(between)} the last layer sits in between ({of(between, 'last')}).")
    shape = ("The sink peaks at " + names([f"layer {sink_stats[m]['at']} of {reports[m]['layers']} in {m}"
                                           for m in models])
             + "." + "".join(f" In {m} the sink all but disappears (below $2u_n$) at {layers_of(ls)}, between "
                             "stronger layers." for m, ls in dips.items() if ls))
    others = [m for m in models if m not in rising]
    shape += (f" A significant rising trend ($p < 0.01$) appears in {who(rising, models)}"
              + (f", with $\\rho$ = {span([sink_rows[m]['rho'] for m in rising], '{:+.2f}')}" if rising else "")
              + (f"; for the others $|\\rho|$ is {span([abs(sink_rows[m]['rho']) for m in others])}"
                 if others and rising else "") + ".")
    nulls = (f"The random-initialised nulls stay within a factor {spread[widest]:.2f} of $u_n$ in every layer of "
             f"{'every model' if not sinkless else who([m for m in models if m not in sinkless], models)} "
             f"(the widest spread is {widest}'s)." if spread else "")
    if sinkless:
        nulls += (f" On {names(sinkless)} the trained walks have no sink column (no column receives more than the "
                  "stated multiple of the uniform share in any layer), so the nulls' sink mass on its sink columns "
                  "is 0; they never exceed "
                  f"{max(sink_stats[m]['null_max'] for m in sinkless):.2f} times $u_n$.")
    text = (nulls.strip() + " The trained sink peaks after the first layer in "
            f"{who(after, models)}, at {span([sink_stats[m]['peak'] for m in models], '{:.1f}')} times $u_n$. "
            f"Model by model:\n\n- In the first layer, {'; '.join(first)}.\n- {' '.join(last)}\n- {shape}\n\n")
    text += ('So "the sink grows with depth" is '
             + ("true in every model here." if len(rising) == len(models) else
                f"true only in a coarse sense: the sink is weak in the first layer of {who(near, models)} and strong "
                f"somewhere above (a peak above $5u_n$) in {who(strong, models)}."))
    text += (f" Shuffling the tokens keeps the shape of the curve in {who(keeps, models)} (Spearman correlation "
             f"{span([sink_stats[m]['shuffled_rho'] for m in models])} between the trained and shuffled per-layer "
             "curves)" + (". This fits a sink that belongs to the first position and the special tokens rather than "
                          "to what the passage says." if len(keeps) == len(models) else "."))
    return text


def sink_removal(reports: dict, gaps: dict, gap_stats: dict, sink_stats: dict) -> str:
    """How far removing the sink moves two walk metrics, trained against the nulls (``beyond_gap_says``).
    ``gap_stats[m]["null_sinkless"]``: no random-init null of ``m`` has a sink column in any layer, so removing
    its sinks removes nothing (its change is 0 by construction, and no comparison with it is made)."""
    models = list(reports)
    sinkless = [m for m in models if gap_stats[m].get("null_sinkless")]
    compared = [m for m in models if m not in sinkless]
    null_big = {m: max(s["rev"][1], s["tv"][1]) for m, s in gap_stats.items()}
    quiet = [m for m in compared if null_big[m] < 0.01]
    five = [m for m in compared if all(gap_stats[m][k][0] > 5 * gap_stats[m][k][1] for k in ("rev", "tv"))]
    two_signs = [m for m in models if gaps["rev"][m]["trained"][0].min() < 0 < gaps["rev"][m]["trained"][0].max()]
    text = ""
    if sinkless:
        text += (f"The random-init nulls have no sink column in any layer of {who(sinkless, models)}: there removing "
                 "their sinks removes nothing, their $\\Delta$ is 0 by construction, and the grey line is no test. ")
    if compared:
        text += (f"Where a null has sink columns of its own, removing them moves neither metric by more than $0.01$ in "
                 f"{who(quiet, compared)}"
                 + "".join(f"; in {m}, whose random-init sink mass reaches {sink_stats[m]['null_max']:.1f}$u_n$, by "
                           f"up to {null_big[m]:.3f}" for m in compared if m not in quiet)
                 + f", and the trained models' changes are at least five times the nulls' in {who(five, compared)}. ")
    text += (f"For the trained models the largest change is {span([gap_stats[m]['rev'][0] for m in models])} in the "
             f"reversibility defect and {span([gap_stats[m]['tv'][0] for m in models])} in `tv`.")
    big = [m for m in models if min(gap_stats[m]["rev"][0], gap_stats[m]["tv"][0]) > 0.01]
    text += (f" A sink-inclusive curve is therefore partly a curve of the sink in {who(big, models)}." if big else "")
    text += (f" The sign of $\\Delta$ is not fixed: in {who(two_signs, models)} removing the sink makes some layers "
             "look more reversible and others less, so neither convention is \"conservative\" in general, which is "
             "why the book reports both." if two_signs else
             " Here the layer means of $\\Delta$ keep one sign within each model, but nothing forces them to, so "
             "neither convention is \"conservative\" in general, which is why the book reports both.")
    return text


def overlap(reports: dict, overlap_stats: dict, n_one: int) -> str:
    """Read-write overlap against the random value d_h/d (``beyond_overlap_says``); ``n_one``: heads within
    0.01 of an overlap of one."""
    models = list(reports)
    higher = [m for m in models if overlap_stats[m]["mean"] > overlap_stats[m]["ref"]]
    half = [m for m in models if overlap_stats[m]["max"] > 0.5]
    top = max(s["max"] for s in overlap_stats.values())
    text = (f"The null sits on $d_h/d$ in every model (its mean overlap is "
            f"{span([s['null'] / s['ref'] for s in overlap_stats.values()], '{:.3f}')} times $d_h/d$), as "
            "{prf:ref}`prop-random-overlap` predicts. Trained heads overlap more than that on average in "
            f"{who(higher, models)} (mean " + ", ".join(f"{overlap_stats[m]['mean']:.2f} against "
                                                      f"{overlap_stats[m]['ref']:.2f} in {m}" for m in models) + ")"
            + (f", some heads reach above $0.5$ in {who(half, models)}" if half else "")
            + f", and the largest overlap of any head is {top:.2f}")
    text += (". In the language of {prf:ref}`prop-p3-lowrank`, no head's value sub-bundle is invariant: every "
             "head moves part of each message out of the subspace it read it from, so no head transport is a "
             "connection on a fixed sub-bundle." if n_one == 0 else
             f": {n_one} head{'s come' if n_one > 1 else ' comes'} within $0.01$ of $\\omega_h = 1$, nearly mapping "
             "its value sub-bundle to itself, as the condition of {prf:ref}`prop-p3-lowrank` asks.")
    return text


def edge(e: dict) -> str:
    """One decoder's heaviest edges as operators (``beyond_edge_says``); ``e``: the cell's numbers (``G``,
    ``d_h``, ``d``, ``min_rank``, ``ratio``, ``rho_rg``, ``p_rg``, ``rho_copy``, ``p_copy``, ``rho_gate``,
    ``p_gate``, ``first_c``, ``last_c``, ``layers``: the two figure layers, ``share``: ``{layer: share of
    eigenvalues with a positive real part}``, ``predecessor``)."""
    def lean(s):
        return ("lie on both sides of the imaginary axis" if 0.35 <= s <= 0.65 else
                "lean to the right" if s > 0.65 else "lean to the left") + f" ({s:.0%} with a positive real part)"

    def trend_word(r, p, up, down):
        return up if r > 0 and p < 0.01 else down if r < 0 and p < 0.01 else "shows no clear trend"

    rank = e["G"] * e["d_h"]
    early, late_ = e["layers"]
    text = "First, " + (f"the rank bound is attained: every heaviest edge carries a transport of rank exactly "
                        f"$G d_h = {rank}$, in a stream of $d = {e['d']}$." if e["min_rank"] == rank else
                        f"the rank bound is not always attained: the lowest numerical rank of a heaviest edge is "
                        f"{e['min_rank']}, below $G d_h = {rank}$.")
    text += (f" Second, the edge's top singular value lies {'well ' if e['ratio'] < 0.5 else ''}below the bound of "
             f"item 2 (median ratio {e['ratio']:.2f})")
    text += (". Heads that read different groups do not add up coherently, so mixing lowers the top of the "
             "spectrum relative to the heads that carry the edge; the ratio grows with the largest gate "
             f"($\\rho = {e['rho_rg']:+.2f}$), towards one where a single head takes most of the gate."
             if e["rho_rg"] > 0 and e["p_rg"] < 0.05 else
             f", and the ratio does not grow clearly with the largest gate ($\\rho = {e['rho_rg']:+.2f}$).")
    text += (f" Third, with depth the edge's copy score {trend_word(e['rho_copy'], e['p_copy'], 'rises', 'falls')} "
             f"($\\rho = {e['rho_copy']:+.2f}$): it is {e['first_c']:+.2f} on average in the first third of the "
             f"layers, where the eigenvalues (layer {early} in the figure) {lean(e['share'][early])}, and "
             f"{e['last_c']:+.2f} in the last third, where they (layer {late_}) {lean(e['share'][late_])}. The "
             f"largest gate {trend_word(e['rho_gate'], e['p_gate'], 'grows', 'shrinks')} with depth "
             f"($\\rho = {e['rho_gate']:+.2f}$)"
             + (": fewer heads carry the edge." if e["rho_gate"] > 0 and e["p_gate"] < 0.01 else "."))
    text += (f" In the last third, {e['predecessor']:.0%} of the heaviest edges go from a token to its predecessor"
             + (", so in the late layers of this model the strongest edge brings in the previous token through a "
                "transport that partly copies it." if e["predecessor"] > 0.5 and e["last_c"] > 0.2 else "."))
    return text


def summary(reports: dict, copy_stats: dict, sink_stats: dict, overlap_stats: dict) -> str:
    """The opening in plain words: the chapter's three model-wide findings, against random init."""
    models = list(reports)
    heads = sum(s["copying"] + s["suppressing"] for s in copy_stats.values())
    total = sum(s["heads"] for s in copy_stats.values())
    higher = [m for m in models if overlap_stats[m]["mean"] > overlap_stats[m]["ref"]]
    return (f"The same measurements show more than the three claims' answers. Across {len(models)} small models, "
            f"{heads} of {total} trained heads clearly copy their input or push it away (a copy score beyond "
            f"±0.2), while no random head's score exceeds {max(s['null_max'] for s in copy_stats.values()):.3f} "
            f"in absolute value; the attention sink peaks at {span([s['peak'] for s in sink_stats.values()], '{:.0f}')} times the "
            f"share a uniform walk gives the same tokens; and the subspaces a head reads from and writes to overlap "
            f"more than random subspaces do in {who(higher, models)}. No verdict on E1-E3 is given here.")


def copy_take(copy_stats: dict) -> str:
    top = max(max(s["max"], -s["min"]) for s in copy_stats.values())
    null = max(s["null_max"] for s in copy_stats.values())
    return (f"Trained heads reach copy scores of {top:.2f} in absolute value, random ones at most {null:.3f}.")


def takes(reports: dict, sink_stats: dict, gap_stats: dict, overlap_stats: dict, bound_gap: dict,
          edges: dict) -> dict[str, str]:
    """The first sentence of each figure's caption, computed: ``beyond_sink_take``, ``beyond_gap_take``,
    ``beyond_overlap_take``, ``beyond_bound_take`` (``bound_gap``: per model the largest ``|c_h| - sqrt(omega_h)``),
    ``beyond_edge_take`` (``edges``: as for :func:`edge`)."""
    models = list(reports)
    high = [m for m in models if sink_stats[m]["peak"] > 5]
    spread = max(max(s["null_max"], 1 / s["null_min"]) if s["null_min"] > 0 else float("inf")
                 for s in sink_stats.values())
    sinkless = [m for m in models if gap_stats[m].get("null_sinkless")]
    higher = [m for m in models if overlap_stats[m]["mean"] > overlap_stats[m]["ref"]]
    inside = [m for m in models if bound_gap[m] <= 1e-9]
    rank = edges["G"] * edges["d_h"]
    return {
        "beyond_sink_take": (f"On each model's sink columns the trained sink rises above five times the uniform walk's "
                             f"share $u_n$ in {who(high, models)}; "
                             + (f"the random-init nulls stay within a factor {spread:.2f} of it." if spread < 1e9 else
                                "in some layers a random-init null puts no mass on them at all.")),
        "beyond_gap_take": (f"Removing the sink changes the trained models' reversibility defect by at most "
                            f"{span([gap_stats[m]['rev'][0] for m in models])} and their `tv` by at most "
                            f"{span([gap_stats[m]['tv'][0] for m in models])} (model by model); the random-init nulls "
                            f"have no sink column to remove in {who(sinkless, models)}, where their change is 0 by "
                            "construction."),
        "beyond_overlap_take": (f"Trained heads overlap more than random subspaces ($d_h/d$) on average in "
                                f"{who(higher, models)}."),
        "beyond_bound_take": (f"Every head lies inside the bound $|c_h| \\le \\sqrt{{\\omega_h}}$ in "
                              f"{who(inside, models)} "
                              f"(the largest $|c_h| - \\sqrt{{\\omega_h}}$ is {max(bound_gap.values()):+.2f})."),
        "beyond_edge_take": (f"Every heaviest edge mixes its heads into one operator of rank $G d_h = {rank}$."
                             if edges["min_rank"] == rank else
                             f"An edge mixes its heads into one operator of rank at most $G d_h = {rank}$; the "
                             f"lowest here is {edges['min_rank']}."),
    }


def box(headline: dict) -> str:
    """The opening box: the headline numbers, one line per model (``beyond_findings``)."""
    return "\n".join(
        f"- **{m}**: {h['copying']} copying and {h['suppressing']} suppressing heads (random-init |copy score| "
        f"at most {h['null_max_c']}); the sink peaks at {h['sink_peak_over_u']}x the uniform walk's share; "
        f"read/write overlap {h['overlap']} against {h['overlap_ref']} for random subspaces"
        for m, h in headline.items())


def paragraphs(reports: dict, *, copy_stats: dict, copy_rows: dict, sink_stats: dict, sink_rows: dict,
               gaps: dict, gap_stats: dict, overlap_stats: dict, n_one: int, edges: dict,
               headline: dict, bound_gap: dict) -> dict[str, str]:
    """Every glued text of the chapter (:data:`KEYS`), from the statistics its cells compute."""
    out = {"beyond_summary": summary(reports, copy_stats, sink_stats, overlap_stats),
           "beyond_copy_take": copy_take(copy_stats), "beyond_findings": box(headline),
           "beyond_threshold_null": threshold_null(copy_stats),
           "beyond_copy_says": copying(reports, copy_stats, copy_rows),
           "beyond_sink_says": sink(reports, sink_stats, sink_rows),
           "beyond_gap_says": sink_removal(reports, gaps, gap_stats, sink_stats),
           "beyond_overlap_says": overlap(reports, overlap_stats, n_one), "beyond_edge_says": edge(edges),
           **takes(reports, sink_stats, gap_stats, overlap_stats, bound_gap, edges)}
    assert set(out) == set(KEYS)
    return {k: out[k] for k in KEYS}


# ----------------------------------------------------------------------- the tables (plain text, for print)
def copy_table(copy_stats: dict) -> str:
    """Per model: the heads, how many copy and suppress, the largest and smallest copy score, and beside them the
    largest absolute copy score of the random-init nulls and its scale :math:`1/\\sqrt{d\\,d_h}`.

    >>> print(copy_table({"gpt": dict(heads=12, copying=2, suppressing=1, max=0.51, min=-0.3, null_max=0.0042,
    ...                               unit=0.0021)}))
                  model heads  copying  suppr.  max c  min c | null max|c| 1/sqrt(d d_h)
                    gpt    12        2       1   0.51  -0.30 |      0.0042        0.0021
    """
    lines = [f"{'model':>19} {'heads':>5} {'copying':>8} {'suppr.':>7} {'max c':>6} {'min c':>6} | "
             f"{'null max|c|':>11} {'1/sqrt(d d_h)':>13}"]
    lines += [f"{m:>19} {s['heads']:5d} {s['copying']:8d} {s['suppressing']:7d} {s['max']:6.2f} {s['min']:6.2f} | "
              f"{s['null_max']:11.4f} {s['unit']:13.4f}" for m, s in copy_stats.items()]
    return "\n".join(lines)


def sink_table(reports: dict, sink_stats: dict) -> str:
    """Per model: its sink columns and their uniform share :math:`u_n`, the trained sink mass in units of
    :math:`u_n` (first layer, peak and its layer, last layer), the random-init nulls' range in the same units, and
    Spearman's rho of the shuffled passages' curve against the trained one.

    >>> rep = {"gpt": {"sink_mass_columns": [0]}}
    >>> print(sink_table(rep, {"gpt": dict(u=0.05, first=2.0, peak=9.5, at=3, last=7.25, null_min=0.9,
    ...                                    null_max=1.1, shuffled_rho=0.8)}))
    sink mass in units of u_n (the model's sink columns)
    trained first layer, peak (layer), last layer | the nulls' range | shuffled vs trained
                  model  columns    u_n  first   peak  at   last | null min   max |   rho
                    gpt      [0]  0.050    2.0    9.5   3    7.2 |     0.90  1.10 |  0.80
    """
    lines = ["sink mass in units of u_n (the model's sink columns)",
             "trained first layer, peak (layer), last layer | the nulls' range | shuffled vs trained",
             f"{'model':>19} {'columns':>8} {'u_n':>6} {'first':>6} {'peak':>6} {'at':>3} {'last':>6} | "
             f"{'null min':>8} {'max':>5} | {'rho':>5}"]
    lines += [f"{m:>19} {str(reports[m]['sink_mass_columns']):>8} {s['u']:6.3f} {s['first']:6.1f} {s['peak']:6.1f} "
              f"{s['at']:3d} {s['last']:6.1f} | {s['null_min']:8.2f} {s['null_max']:5.2f} | {s['shuffled_rho']:5.2f}"
              for m, s in sink_stats.items()]
    return "\n".join(lines)


def gap_table(gap_stats: dict) -> str:
    """Per model: the largest absolute mean change of ``rev`` and of ``tv`` over the layers when the sinks are
    removed, trained beside the larger of the two random-init nulls'.

    >>> print(gap_table({"gpt": dict(rev=(0.12, 0.001), tv=(0.05, 0.0))}))
    largest |mean Delta| over layers, trained | both nulls
                  model    rev   null |     tv   null
                    gpt  0.120  0.001 |  0.050  0.000
    """
    lines = ["largest |mean Delta| over layers, trained | both nulls",
             f"{'model':>19} {'rev':>6} {'null':>6} | {'tv':>6} {'null':>6}"]
    lines += [f"{m:>19} {g['rev'][0]:6.3f} {g['rev'][1]:6.3f} | {g['tv'][0]:6.3f} {g['tv'][1]:6.3f}"
              for m, g in gap_stats.items()]
    return "\n".join(lines)


def overlap_table(overlap_stats: dict) -> str:
    """Per model: the random value :math:`d_h/d`, the nulls' and the trained heads' mean overlap, the largest
    overlap, and the share of heads above twice :math:`d_h/d`.

    >>> print(overlap_table({"gpt": dict(ref=0.111, null=0.112, mean=0.2, max=0.61, above=0.25)}))
                  model  d_h/d null mean trained mean    max heads > 2 d_h/d
                    gpt  0.111     0.112        0.200  0.610             25%
    """
    lines = [f"{'model':>19} {'d_h/d':>6} {'null mean':>9} {'trained mean':>12} {'max':>6} {'heads > 2 d_h/d':>15}"]
    lines += [f"{m:>19} {s['ref']:6.3f} {s['null']:9.3f} {s['mean']:12.3f} {s['max']:6.3f} {s['above']:15.0%}"
              for m, s in overlap_stats.items()]
    return "\n".join(lines)


def edge_rank(e: dict) -> int:
    """The numerical rank of an edge's transport: its singular values ``e["s"]`` (largest first) above
    ``1e-10`` times the largest.

    >>> import numpy as np
    >>> edge_rank({"s": np.array([2.0, 1.0, 1e-12])})
    2
    """
    return int((e["s"] > 1e-10 * e["s"][0]).sum())


def edge_table(edges: list[dict]) -> str:
    """The heaviest edge of the first passage in every layer ``l`` with ``l % 5`` in (0, 4): the edge, its largest
    gate, its top singular value beside the bound of the proposition and the heads' largest, its rank, and its
    copy score beside the same score from the heads' own traces.

    >>> import numpy as np
    >>> e = dict(layer=4, b=0, edge=(9, 8), gate_max=0.5, s=np.array([3.0, 1.0]), bound=3.5, head_max=4.0,
    ...          copy=0.1, from_heads=0.1)
    >>> print(edge_table([e, {**e, "b": 1}, {**e, "layer": 2}]))
    layer      edge max gate  sigma_1   bound max_h s_1  rank edge copy from heads
        4    (9, 8)     0.50     3.00    3.50      4.00     2    +0.100     +0.100
    """
    lines = [f"{'layer':>5} {'edge':>9} {'max gate':>8} {'sigma_1':>8} {'bound':>7} {'max_h s_1':>9} {'rank':>5} "
             f"{'edge copy':>9} {'from heads':>10}"]
    lines += [f"{e['layer']:5d} {str(e['edge']):>9} {e['gate_max']:8.2f} {float(e['s'][0]):8.2f} {e['bound']:7.2f} "
              f"{e['head_max']:9.2f} {edge_rank(e):5d} {e['copy']:+9.3f} {e['from_heads']:+10.3f}"
              for e in edges if e["b"] == 0 and e["layer"] % 5 in (0, 4)]
    return "\n".join(lines)


# ----------------------------------------------------------------------- the rival reading: the self-loop
# (rule "self_loop", connlap_lite.verdicts.readings, registered 2026-12-04; its words are the rule's, never chosen here)
SELF_LOOP_KEYS = ("beyond_self_loop_take", "beyond_self_loop_says")


def self_loop_take(rows: dict[str, dict]) -> str:
    """The first sentence of the figure's caption (``beyond_self_loop_take``): in how many models the registered
    rule (``rows``: ``{model: readings.self_loop(report)}``) finds the self-loop above the uniform walk and random
    init and growing with depth (*holds*).

    >>> self_loop_take({"a": {"verdict": "holds"}, "b": {"verdict": "partly"}})[-38:]
    '(the rule holds) in 1 of 2 models (a).'
    """
    models = list(rows)
    return (f"The self-loop share lies above the uniform walk and random init and grows with depth (the rule holds) "
            f"in {who([m for m in models if rows[m]['verdict'] == 'holds'], models)}.")


def _first_last(rep: dict, metric: str, cond: str = "trained") -> tuple[float, float]:
    """The per-layer mean of ``metric`` over the first and over the last third of the layers."""
    from ...verdicts.record import third

    y = layer_means(rep, metric, cond)
    k = third(len(y))
    return float(y[:k].mean()), float(y[-k:].mean())


def _level(row: dict) -> str:
    """The rule's level condition, in words (its Holm-corrected p-values)."""
    from ..prose import pvalue

    if row["level"] is None:
        return "undefined"
    where = "above both" if row["level"] else "not above both"
    return f"{where} ({pvalue(row['p_uniform'])} against the uniform walk, {pvalue(row['p_seeds'])} against the seeds)"


def self_loop_says(reports: dict[str, dict], rows: dict[str, dict]) -> str:
    """``beyond_self_loop_says``: per model, the late self-loop share against the uniform walk's and the random-init
    seeds', its margin over the uniform walk early and late, the rule's verdict (``rows``:
    ``{model: readings.self_loop(report)}``), and the published measure beside it: each output's alignment with its
    own value, early and late, against uniform attention's."""
    from ..prose import pvalue

    lines = []
    for m, rep in reports.items():
        row = rows[m]
        if "late" not in row:
            lines.append(f"- **{m}**: the rule gives *{row['verdict']}*.")
            continue
        a0, a1 = _first_last(rep, "self_alignment")
        u0, u1 = _first_last(rep, "self_alignment_uniform")
        grows = "larger" if row["late_margin"] > row["early_margin"] else "not larger"
        side = ("below uniform attention's in both thirds" if a0 < u0 and a1 < u1 else
                "above uniform attention's in both thirds" if a0 > u0 and a1 > u1 else
                "on either side of uniform attention's")
        lines.append(
            f"- **{m}**: over the last third of the layers a token keeps {row['late']:.3f} of its attention for "
            f"itself (sinks set aside), against {row['uniform']:.3f} under the uniform walk and "
            f"{span(row['seeds'], '{:.3f}')} at random init: {_level(row)}. Its margin over the uniform walk is "
            f"{row['early_margin']:+.3f} over the first third and {row['late_margin']:+.3f} over the last, {grows} "
            f"late ({pvalue(row['p_growth'])}, Holm-corrected): the rule says *{row['verdict']}*. Each output's "
            f"alignment with its own value is {a0:.3f} over the first third and {a1:.3f} over the last, "
            f"{side} ({u0:.3f} and {u1:.3f}).")
    return "\n".join(lines)


def self_loop_paragraphs(reports: dict[str, dict], rows: dict[str, dict]) -> dict[str, str]:
    """The section's glued texts, ``{key: markdown}`` (:data:`SELF_LOOP_KEYS`)."""
    return {"beyond_self_loop_take": self_loop_take(rows), "beyond_self_loop_says": self_loop_says(reports, rows)}


def self_loop_figure(reports: dict[str, dict], n_boot: int = 1000):
    """One column per model: the self-loop share (sinks set aside) against the uniform walk's and random-init seed
    0's (top), and each output's alignment with its own value against uniform attention's and seed 0's (bottom).
    Returns the figure."""
    from .. import plots

    null = ("random0", "random init (seed 0)", plots.STYLE["random0"])
    return plots.curve_grid(list(reports.values()), [
        [("self_loop_nosink", "trained", "trained", plots.STYLE["trained"]),
         ("self_loop_uniform", "trained", "uniform", dict(color="C1", ls=":")), ("self_loop_nosink", *null)],
        [("self_alignment", "trained", "trained", plots.STYLE["trained"]),
         ("self_alignment_uniform", "trained", "uniform", dict(color="C1", ls=":")), ("self_alignment", *null)]],
        ylabels=["self-loop share", "output-value alignment"], n_boot=n_boot)
