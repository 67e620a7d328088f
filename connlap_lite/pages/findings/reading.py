"""*Reading a real transformer as a connection walk*, in words: the chapter's computed paragraphs, from the
numbers its cells measure (each layer's reconstruction errors, one walk, one edge transport, a quantised and
a random-init model, the committed GPU record).

:func:`paragraphs` returns every glued text (:data:`KEYS`); :func:`walk_facts` and :func:`edge_facts` turn
the chapter's walk matrix and edge transport into the numbers the paragraphs state.  Nothing here measures
a model: the chapter does, and hands the numbers over.

Chapter: *Reading a real transformer as a connection walk*.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from ...measure.metrics import first_column_share
from ..prose import names

KEYS = ("reading_summary", "reading_errors_take", "reading_families", "reading_errors", "reading_sink_says",
        "reading_edge_choice", "reading_edge_says", "reading_q4_says", "reading_null_says", "reading_gpu_note",
        "reading_8b_shape")
TOL = 1e-5          # the chapter's tolerance for float32 reconstructions (its note says why)
RECENT = 8          # the recent tokens whose share of a causal row the walk paragraph states
FROM = 16           # ... for queries with at least this many earlier tokens
RUN_8B = "`python benchmarks/gpu_8b.py --json gpu_8b.json`"


def sci(x: float) -> str:
    """A number in LaTeX scientific notation, two significant digits.

    >>> sci(3.14e-7), sci(0.5)
    ('$3.1 \\\\times 10^{-7}$', '$5.0 \\\\times 10^{-1}$')
    """
    mantissa, exponent = f"{x:.1e}".split("e")
    return f"${mantissa} \\times 10^{{{int(exponent)}}}$"


def _all(errors: dict[str, dict[str, list[float]]]) -> list[float]:
    return [e for per in errors.values() for k in ("heads", "walk") for e in per[k]]


def _check_errors(errors) -> None:
    if not errors or any(set(per) != {"heads", "walk"} or len(per["heads"]) != len(per["walk"]) or not per["heads"]
                         for per in errors.values()):
        raise ValueError("errors must map each model to {'heads': [...], 'walk': [...]}, one error per layer in each "
                         "list, as the chapter's reconstruction loop collects them")


def summary(errors: dict[str, dict[str, list[float]]], tol: float = TOL) -> str:
    """The opening in plain words: what the chapter rebuilds, and how close the rebuilt layers come."""
    _check_errors(errors)
    layers = sum(len(per["heads"]) for per in errors.values())
    worst = max(_all(errors))
    close = (f"matches the model's own output to within a relative error of {sci(worst)}, "
             f"{tol / worst:.0f} times inside the tolerance that float32 arithmetic leaves room for"
             if worst <= tol else
             f"should match the model's own output to float32 rounding, but the worst layer misses by {sci(worst)}, "
             f"above the tolerance of {sci(tol)}")
    return (f"A transformer's attention layer can be read as a walk on the tokens that carries each message "
            f"through a learned linear map. This chapter reads all {layers} attention layers of {len(errors)} "
            f"small pretrained models that way, from their own weights, and rebuilds each layer twice: head by "
            f"head, and as one walk whose map changes from edge to edge. Every rebuilt layer {close}.")


def errors_take(errors: dict[str, dict[str, list[float]]], tol: float = TOL) -> str:
    """The main figure's first sentence."""
    _check_errors(errors)
    layers = sum(len(per["heads"]) for per in errors.values())
    miss = sum(max(t1, t2) > tol for per in errors.values() for t1, t2 in zip(per["heads"], per["walk"]))
    if not miss:
        return (f"All {layers} attention layers of the {len(errors)} models are reproduced by their connection "
                f"walks to within the tolerance of {sci(tol)}.")
    return f"{miss} of the {layers} attention layers {'misses' if miss == 1 else 'miss'} the tolerance of {sci(tol)}."


def families(tested: tuple[str, ...]) -> str:
    """The model types the adapters are tested on (``connlap_lite.models.adapters.TESTED``)."""
    if not tested:
        raise ValueError("tested must name at least one model type (connlap_lite.models.adapters.TESTED)")
    return (f"the {len(tested)} model types of transformers that the package's tests build as tiny random models "
            f"and check layer by layer, the walk against the module: " + names(f"`{t}`" for t in tested))


def errors_paragraph(errors: dict[str, dict[str, list[float]]], tol: float = TOL) -> str:
    """What the errors of every layer say (``reading_errors``)."""
    _check_errors(errors)
    everything = _all(errors)
    lo, hi = min(everything), max(everything)
    pairs = [(t1, t2) for per in errors.values() for t1, t2 in zip(per["heads"], per["walk"])]
    closer = sum(t2 < t1 for t1, t2 in pairs)
    rounding = (", and of the size float32 rounding gives for sums of a few hundred to a thousand terms "
                "(the note above)" if hi <= tol / 2 else "")
    below = (f"the largest is {tol / hi:.0f} times below the tolerance{rounding}" if hi <= tol else
             f"the largest is above the tolerance of {sci(tol)}")
    return (f"All errors lie between {sci(lo)} and {sci(hi)}; {below}. The head-by-head sum and the single walk "
            "are different computations with different rounding: the single walk multiplies in the same order "
            "as the model (values first, then the output map), while our head-by-head code first multiplies out "
            f"each $d \\times d$ matrix $T_h$. The single walk has the smaller error in {closer} of the {len(pairs)} "
            f"layers of the {len(errors)} models.")


def walk_facts(P: torch.Tensor, causal: bool) -> dict:
    """The numbers the walk paragraph states, from a walk matrix ``P`` (n x n): the mean weight on token 0
    (``sink``) and, for a causal walk of more than :data:`FROM` tokens, the share of each row's weight
    beyond token 0 that the :data:`RECENT` most recent tokens take (``recent``), against the share they
    would take if it were spread evenly over the tokens after token 0 (``even``); both None otherwise.

    >>> import torch
    >>> P = torch.tril(torch.ones(20, 20, dtype=torch.float64))
    >>> f = walk_facts(P / P.sum(1, keepdim=True), causal=True)
    >>> round(f["sink"], 3), round(f["recent"], 3) == round(f["even"], 3)
    (0.18, True)
    """
    P = P.detach().to(torch.float64).cpu()
    n = P.shape[0]
    out = {"n": n, "sink": first_column_share(P), "recent": None, "even": None}
    if causal and n > FROM:
        late = [i for i in range(FROM, n) if float(P[i, 0]) < 1]
        if late:
            out["recent"] = float(np.mean([float(P[i, i - RECENT + 1:i + 1].sum() / (1 - P[i, 0])) for i in late]))
            out["even"] = float(np.mean([RECENT / i for i in late]))
    return out


def sink_says(facts: dict, model: str, special: bool = True) -> str:
    """The walk matrix's first column and its causal rows, in words (``reading_sink_says``); ``special``: whether
    the passage's token 0 is one of the tokenizer's special tokens (if not, it is an ordinary word)."""
    sink = facts["sink"]
    text = f"The first column carries {sink:.0%} of all the weight"
    if sink >= 0.3:
        text += ": token 0 is an *attention sink* {cite}`xiao2024efficient`"
        if not special:
            text += (f", although in this passage it is an ordinary word (the tokenizer of `{model}` puts no "
                     "special token in front)")
    text += "."
    if facts.get("recent") is not None:
        recent, even = facts["recent"], facts["even"]
        text += (f" Of the rest of each row (queries from token {FROM} on), the {RECENT} most recent tokens take "
                 f"{recent:.0%}, against {even:.0%} if it were spread evenly over the tokens after token 0"
                 + (": the rest goes mostly to recent tokens." if recent > 0.5 else
                    ": recent tokens get more than an even share." if recent > even else "."))
    return text


def edge_facts(T: torch.Tensor, heaviest: tuple[int, int], edge: tuple[int, int], singular: torch.Tensor,
               groups: int, head_dim: int) -> dict:
    """The numbers the edge paragraphs state: the heaviest off-diagonal edge and the edge shown, the rank of
    the edge transport ``T`` (singular values ``singular`` above 1e-10 of the largest) against its bound,
    and the mean of its diagonal against the mean off it, with the diagonal mean's standard error.

    >>> import torch
    >>> f = edge_facts(torch.eye(4, dtype=torch.float64), (3, 0), (2, 1), torch.ones(4), 2, 1)
    >>> f["rank"], f["bound"], f["diag_mean"], f["off_mean"]
    (4, 2, 1.0, 0.0)
    """
    T = T.detach().to(torch.float64).cpu()
    d = T.shape[0]
    s = singular.detach().to(torch.float64).cpu()
    diag, off = T.diagonal(), T[~torch.eye(d, dtype=torch.bool)]
    return {"heaviest": tuple(heaviest), "edge": tuple(edge), "rank": int((s > 1e-10 * s[0]).sum()), "d": d,
            "groups": groups, "head_dim": head_dim, "bound": min(groups * head_dim, d),
            "diag_mean": float(diag.mean()), "off_mean": float(off.mean()),
            "diag_se": float(diag.std()) / math.sqrt(d)}


def edge_choice(facts: dict) -> str:
    """Which edge the chapter shows, and why (``reading_edge_choice``)."""
    i, j = facts["heaviest"]
    if j == 0:
        return (f"The heaviest off-diagonal edge, ({i}, 0), is a sink edge; we pick instead the heaviest edge that "
                "does not point to token 0.")
    return f"The heaviest off-diagonal edge, ({i}, {j}), does not point to token 0, so it is the edge we pick."


def edge_says(facts: dict) -> str:
    """The edge transport's rank and diagonal, in words (``reading_edge_says``)."""
    rank, d, bound = facts["rank"], facts["d"], facts["bound"]
    i, j = facts["edge"]
    exact = ("exactly the bound $G d_h$" if rank == facts["groups"] * facts["head_dim"] else
             "exactly the bound $d$" if rank == d else f"below the bound $\\min(d, G d_h) = {bound}$")
    says = [f"The edge transport has {rank} singular values above $10^{{-10}}$ times its largest, {exact}"
            + (f"; the other {d - rank} are smaller still and drop out of the plot." if rank < d else ".")]
    says.append("Where the rank comes from: $T_{ij}/H = \\sum_g \\big(\\sum_{h \\in g} \\gamma^h_{ij} U_h\\big) V_g$ "
                "is a sum of $G$ terms of rank at most $d_h$, and the term of group $g$ is scaled by the gates of "
                "its heads on this edge (the group weights are printed above), so a lightly gated group adds a "
                "term of small norm.")
    if rank < d:
        says.append(f"An edge transport of rank {rank} sends a subspace of dimension {d - rank} of $\\R^{{{d}}}$ "
                    "to zero, so it is far from any isometry of $\\R^d$.")
    says.append("The book measures the isometry of edge transports with a rank-free defect, the distance to the "
                "nearest scaled *partial* isometry, rather than the distance to an orthogonal matrix, because an "
                "edge transport's rank is bounded by $G d_h$, which can be below $d$.")
    dm, om, se = facts["diag_mean"], facts["off_mean"], facts["diag_se"]
    stands_out = abs(dm - om) > 3 * se
    says.append(f"The diagonal of $T_{{{i},{j}}}$ averages {dm:.2g}, against {om:.1g} off the diagonal (standard "
                f"error of the diagonal's mean {se:.1g})" + (
                    ": on this edge the transport tends to copy a coordinate of the residual stream to itself, the "
                    "positive diagonal of the block on the left." if stands_out and dm > om else
                    ": on this edge the transport tends to flip the sign of a coordinate of the residual stream."
                    if stands_out else ": within three standard errors, so no diagonal stands out on this edge."))
    return " ".join(says)


def q4_says(matrix: float, spectrum: float) -> str:
    """How far a 4-bit round trip moves the head transports and their singular values (``reading_q4_says``)."""
    if not (matrix > 0 and spectrum > 0):
        raise ValueError(f"matrix and spectrum must be positive relative changes, got {matrix!r} and {spectrum!r}")
    if spectrum < matrix:
        return (f"The round trip moves the head transports by {matrix:.1%} as matrices, yet moves their singular "
                f"values by {spectrum:.1%}, {matrix / spectrum:.0f} times less.")
    return (f"The round trip moves the head transports by {matrix:.1%} as matrices and their singular values by "
            f"{spectrum:.1%}: here the spectrum moves no less than the matrix.")


def null_says(model: str, null: float, trained: float | None) -> str:
    """How much closer to uniform the random-init model's walks are (``reading_null_says``): ``null`` and
    ``trained`` are the mean distances of the walks from the uniform walk (``trained`` None if not measured)."""
    if trained is None:
        return f"The trained `{model}` is not in `MODELS` for this run, so there is no trained distance to compare."
    ratio = trained / null
    if ratio <= 1:
        return (f"The null's walks are not closer to uniform than the trained ones: the trained walks' mean "
                f"distance is {ratio:.2f} times the null's.")
    return ((f"The null's walks are {ratio:.0f} times closer to uniform than the trained ones." if ratio >= 10 else
             f"The null's walks are {ratio:.1f} times closer to uniform than the trained ones.")
            + " Any comparison of trained walks with the null has to account for this: a distance between two "
            "layers' walks that is small for the null merely because its attention ignores content says little "
            "about stability.")


def gpu_note(record: dict | None) -> str:
    """What the committed GPU benchmark record (``benchmarks/results/gpu_8b.json``) says (``reading_gpu_note``)."""
    if record is None:
        return f"This copy of the book has no `benchmarks/results/gpu_8b.json`: run {RUN_8B} on a CUDA machine."
    if record.get("runs"):
        where = record.get("device") or record.get("machine", {}).get("cuda") or "a GPU"
        return (f"The 8B numbers were measured on {where} ({record['machine']['date_utc'][:10]}); the appendix on "
                "performance shows them.")
    return (f"The committed benchmark record says *{record.get('status', 'not run')}*, so the 8B numbers are not "
            f"yet in this book: run {RUN_8B} on a CUDA machine to produce them.")


def shape_8b(shape: dict) -> str:
    """Llama-3-8B's shape, from its published configuration (``reading_8b_shape``)."""
    return (f"{shape['layers']} layers, {shape['heads']} heads, {shape['groups']} key/value groups, "
            f"width {shape['d']}")


def paragraphs(errors: dict[str, dict[str, list[float]]], *, tested: tuple[str, ...], walk: dict, walk_model: str,
               special: bool, edge: dict, q4: tuple[float, float], null: tuple[str, float, float | None],
               gpu: dict | None, shape: dict) -> dict[str, str]:
    """Every glued text of the chapter, ``{key: markdown}`` in the order of :data:`KEYS`.

    ``errors``: ``{model: {"heads": [...], "walk": [...]}}``, each layer's worst-passage relative error;
    ``tested``: the model types the adapters are tested on; ``walk``: :func:`walk_facts` of the layer shown,
    of model ``walk_model`` (``special``: whether the passage's token 0 is a special token); ``edge``:
    :func:`edge_facts`; ``q4``: the relative change of the transports and of their singular values under a
    4-bit round trip; ``null``: ``(model, its random-init walks' mean distance from uniform, the trained
    one's or None)``; ``gpu``: the committed GPU record or None; ``shape``: Llama-3-8B's shape
    (:func:`connlap_lite.models.footprint.footprint`).
    """
    says = {
        "reading_summary": summary(errors),
        "reading_errors_take": errors_take(errors),
        "reading_families": families(tested),
        "reading_errors": errors_paragraph(errors),
        "reading_sink_says": sink_says(walk, walk_model, special),
        "reading_edge_choice": edge_choice(edge),
        "reading_edge_says": edge_says(edge),
        "reading_q4_says": q4_says(*q4),
        "reading_null_says": null_says(*null),
        "reading_gpu_note": gpu_note(gpu),
        "reading_8b_shape": shape_8b(shape),
    }
    assert tuple(says) == KEYS
    return says
