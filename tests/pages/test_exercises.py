"""Graded exercises (connlap_lite.pages.exercises) and the teacher's kit: every exercise states its level and
minutes, every graded one its points and three hint tiers apart from its solution; every solution in the
book passes its checker, every student stub fails it with a clear message; checkers name common mistakes,
refuse the package's own answer and never spell the solution; the student edition ships without the
teacher's key, opens its own Colab branch, and carries nbgrader metadata that grades a correct and a wrong
submission."""
import hashlib
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
import yaml

import conftest

from connlap_lite.pages import exercises as E
from connlap_lite.pages.exercises import ExerciseFailed

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import student_edition as SE  # (a build tool, tools/student_edition.py)
from student_edition import main as student_main
from student_edition import split_check, stub_source, student_edition, student_notebook

from connlap_lite.pages.exercises import answer_key, _reference

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted(p for p in (ROOT / "book").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
BACK_MATTER = "Back matter"                             # the one part whose pages need no graded exercises


def toc_chapters(toc: dict) -> list[str]:
    """Every page of every part of ``toc`` except the back matter and the root, relative to book/."""
    return [f.removeprefix("book/") for f in conftest.toc_files(toc, skip_parts=(BACK_MATTER,)) if f != toc["root"]]


TOC = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
CHAPTERS = toc_chapters(TOC)


def load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def src(cell):
    return "".join(cell["source"])


def graded_cells(path):
    """(label, source) of every cell tagged ``solution``, the label read from the exercise before it."""
    out, label = [], None
    for cell in load(path)["cells"]:
        if cell["cell_type"] == "markdown":
            found = re.findall(r":label: (\S+)", src(cell))
            label = found[-1] if found else label
        elif "solution" in cell.get("metadata", {}).get("tags", []):
            out.append((label, src(cell)))
    return out


GRADED = [(p, label, code) for p in NOTEBOOKS for label, code in graded_cells(p)]
IDS = [f"{p.stem}-{label}" for p, label, _ in GRADED]


def test_chapters_come_from_the_toc():
    """The list is read from _toc.yml, so a new chapter is graded from the day it is listed."""
    assert BACK_MATTER in [part.get("caption") for part in TOC["parts"]], "the back-matter part was renamed"
    assert {"theory/walks", "models/reading", "interactive/explorers", "empirical/beyond"} <= set(CHAPTERS)
    assert "intro" not in CHAPTERS and "bibliography" not in CHAPTERS
    toc = {"root": "book/intro", "parts": [{"caption": "A", "chapters": [{"file": "book/a/x", "sections": [
        {"file": "book/a/y"}]}]}, {"caption": BACK_MATTER, "chapters": [{"file": "book/z"}]}]}
    assert toc_chapters(toc) == ["a/x", "a/y"]


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_chapter_has_two_graded_exercises(chapter):
    path = ROOT / "book" / f"{chapter}.ipynb"
    cells = load(path)["cells"]
    graded = [k for k, c in enumerate(cells) if "solution" in c.get("metadata", {}).get("tags", [])]
    assert len(graded) >= 2, f"{chapter} has {len(graded)} graded exercises; it needs at least two"
    for k in graded:
        before, cell, after = src(cells[k - 1]), cells[k], src(cells[k + 1])
        assert "```{exercise}" in before and "_graded" in before and "{solution-start}" in before, (chapter, k)
        assert ":class: dropdown" in before and "{solution-end}" in after, (chapter, k)
        assert "hide-input" in cell["metadata"]["tags"] and not cell["outputs"], (chapter, k)
        assert re.search(r"^check_\w+\(\w+\)\s*$", src(cell).strip().splitlines()[-1]), "ends with its checker call"


EXERCISE = re.compile(r"```\{exercise\}[^\n]*\n:label: (?P<label>\S+)\n\n(?P<head>[^\n]*)\n(?P<body>.*?)\n```\n", re.S)
HEADER = re.compile(r"\*(?:Graded, (?P<points>\d+) points? · level|Level): (?P<level>basic|intermediate|advanced) · "
                    r"about (?P<minutes>\d+) minutes\*")


def exercises(path):
    """(label, header match, the markdown after the exercise block up to its solution) of every exercise."""
    text = "\n".join(src(c) for c in load(path)["cells"] if c["cell_type"] == "markdown")
    out = []
    for m in EXERCISE.finditer(text):
        after = text[m.end():text.index("{solution-start}", m.end())]
        out.append((m["label"], HEADER.fullmatch(m["head"]), after))
    return out


EXERCISES = [(p, *x) for p in NOTEBOOKS for x in exercises(p)]


def test_every_exercise_states_its_level_and_minutes():
    assert len(EXERCISES) >= 2 * len(CHAPTERS)
    for path, label, header, _ in EXERCISES:
        assert header, f"{path.name}: exercise {label} must open with *Level: ... · about N minutes*"
        graded = "_graded" in label
        assert (header["points"] is not None) == graded, f"{label}: points go with graded exercises only"
        assert 5 <= int(header["minutes"]) <= 120, label


TIERS = ("Hint 1: a nudge", "Hint 2: the idea", "Hint 3: the formula")


@pytest.mark.parametrize("path, label, code", GRADED, ids=IDS)
def test_graded_exercise_has_three_hint_tiers_apart_from_its_solution(path, label, code):
    after = next(a for p, lab, _, a in EXERCISES if p == path and lab == label)
    found = re.findall(r"```\{admonition\} (Hint \d: [a-z ]+)\n:class: dropdown[^\n]*\n\n(.+?)\n```", after, re.S)
    assert tuple(t for t, _ in found) == TIERS, f"{label}: hints {[t for t, _ in found]}, expected {TIERS}"
    assert all(len(text) > 20 for _, text in found), label
    answer = split_check(code)[0]
    for line in solution_lines(answer):
        assert line not in after, f"{label}: a hint quotes the solution's line {line!r}"


def solution_lines(answer: str) -> list[str]:
    """The lines of a solution's function bodies that say something (no docstrings, comments, loops, returns of
    a name or conversions of an argument)."""
    body = [l.split("#")[0].strip() for l in answer.splitlines() if l.startswith("    ")]
    return [l for l in body if len(l) > 12 and not l.startswith(('"""', "return H", "for "))
            and not re.fullmatch(r"\w+ = np\.asarray\(\w+(, dtype=float)?\)", l)]


def test_every_checker_is_used_by_the_book():
    used = {m for _, _, code in GRADED for m in re.findall(r"\b(check_\w+)\(", code)}
    assert set(E.CHECKERS) <= used, f"checkers no chapter uses: {sorted(set(E.CHECKERS) - used)}"


@pytest.mark.parametrize("path, label, code", GRADED, ids=IDS)
def test_solution_passes_its_checker(path, label, code, capsys):
    exec(compile(code, f"{path.name}:{label}", "exec"), {"__name__": "__graded__"})
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert re.fullmatch(r"check_\w+: (\d+)/\1 cases passed", line), line


@pytest.mark.parametrize("path, label, code", GRADED, ids=IDS)
def test_solution_passes_its_graded_check_on_fresh_draws(path, label, code, capsys):
    """The graded check (nbgrader's hidden test) passes the book's solution on any draw: here three."""
    namespace = {"__name__": "__graded__"}
    answer, call = split_check(code)
    exec(compile(answer, f"{path.name}:{label}", "exec"), namespace)
    for draw in (1, 2, 2**31 + 7):
        exec(call.replace(")", f", graded={draw})"), namespace)
        line = capsys.readouterr().out.strip().splitlines()[-1]
        assert re.fullmatch(rf"check_\w+: (\d+)/\1 cases passed \(graded: cases drawn now, draw {draw}\)", line), line


def lookup(answers_file):
    """The seven-line lookup of issue 33: a reader's function that answers from a shipped answers.npz."""
    with np.load(answers_file) as f:
        key = dict(f)

    def cheat(*args):
        found = [k for k, v in key.items() if k.endswith("/inputs") and str(v) == answer_key.fingerprint(args)]
        return answer_key.stored(key, found[0].replace("/inputs", "/expected")) if found else None
    return cheat


def test_a_lookup_of_the_shipped_answers_fails_every_graded_check(tmp_path, capsys):
    """answers.npz answers the practice cases (the student's own check cell), but no graded check: those cases
    are drawn at check time, and every checker draws at least one case that no shipped file holds."""
    path = answer_key.record(E.CHECKERS, tmp_path / "answers.npz")
    cheat = lookup(path)
    E.check_holonomy(cheat)                                  # the practice check: the lookup passes it ...
    assert "5/5 cases passed" in capsys.readouterr().out
    for name, check in E.CHECKERS.items():
        practice = {answer_key.fingerprint(c.args) for c in check.cases()}
        for draw in (3, 4):
            assert {answer_key.fingerprint(c.args) for c in check.cases(draw)} - practice, f"{name}: draw {draw} is practice"
        with pytest.raises(ExerciseFailed, match=r"(returned None|failed on).*graded draw"):   # ... no graded one
            check(cheat, graded=True)


def test_graded_check_needs_the_teachers_references(monkeypatch):
    """Without exercises._reference (the student edition) a graded check refuses, naming where to grade."""
    monkeypatch.setitem(sys.modules, "connlap_lite.pages.exercises._reference", None)        # import fails
    monkeypatch.delattr(E, "_reference", raising=False)
    with pytest.raises(RuntimeError, match=r"graded=True\) grades on cases drawn now.*nbgrader's autograde"):
        E.check_holonomy(lambda T, cycle: np.eye(T.shape[-1]), graded=True)


def test_a_wrong_answer_shows_none_of_the_runners_frames():
    """The traceback of a failed check holds the reader's cell and their function, not the runner's frames:
    the checker's own frame is marked for IPython (and pytest) to hide, and is the only one of the package."""
    import traceback

    def wrong(P, T, f):
        return P[10]                                          # an IndexError in the reader's own code

    with pytest.raises(ExerciseFailed) as raised:
        E.check_apply_walk(wrong)
    failure = raised.value
    frames = traceback.extract_tb(failure.__traceback__)
    own = traceback.extract_tb(failure.__cause__.__traceback__)
    checker_frame = failure.__traceback__.tb_next.tb_frame
    package = str(ROOT / "connlap_lite")
    assert [f.name for f in frames if f.filename.startswith(package)] == ["check"]
    assert checker_frame.f_locals.get("__tracebackhide__") is True
    assert [f.name for f in own] == ["wrong"]                 # the reader's exception, from their function down
    shown = "\n".join(failure._render_traceback_())          # what IPython, Jupyter and nbgrader show
    assert "connlap_lite" not in shown and "IndexError" in shown and "return P[10]" in shown
    assert shown.endswith("hint: the hints under the exercise go from a nudge to the idea to the formula")
    with pytest.raises(ExerciseFailed) as raised:
        E.check_holonomy(lambda T, cycle: np.eye(T.shape[-1]))
    assert raised.value._render_traceback_()[0] == "ExerciseFailed: check_holonomy failed on case 1 of 5 (cycle [2], d=2)"


@pytest.mark.parametrize("path, label, code", GRADED, ids=IDS)
def test_student_stub_fails_with_a_clear_message(path, label, code):
    stub = stub_source(code)
    assert 'raise NotImplementedError("your code here")' in stub and stub.strip().splitlines()[-1].startswith("check_")
    with pytest.raises(ExerciseFailed, match=r"raised NotImplementedError on case 1 of \d+ \(.+\): fill in the body"):
        exec(compile(stub, f"{path.name}:{label} (stub)", "exec"), {"__name__": "__graded__"})


# ----------------------------------------------------------------- mistakes named, answers refused
def recorded(name, wrong):
    """A reader's function that answers each case with what the key's mistake ``wrong`` gives on it."""
    cases = E.CHECKERS[name].cases()
    _, mistakes = answer_key.computed(name, cases)
    by_case = {answer_key.fingerprint(c.args): r for c, r in zip(cases, mistakes[wrong])}
    return lambda *args: by_case[answer_key.fingerprint(args)]


KEY_MISTAKES = [(name, m) for name, ms in _reference.MISTAKES.items() for m in ms]


def test_every_checker_has_a_reference_and_named_mistakes():
    assert set(_reference.REFERENCES) == set(E.CHECKERS)
    assert all(len(_reference.MISTAKES.get(name, {})) >= 1 for name in E.CHECKERS), \
        [n for n in E.CHECKERS if not _reference.MISTAKES.get(n)]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name, mistake", KEY_MISTAKES, ids=[f"{n}-{m[:40]}" for n, m in KEY_MISTAKES])
def test_checker_names_each_common_mistake(name, mistake):
    with pytest.raises(ExerciseFailed) as failure:
        E.CHECKERS[name](recorded(name, mistake))
    message = str(failure.value)
    assert re.search(rf"{name} failed on case \d+ of \d+ \(.+\)", message), message
    assert "diagnosis: " in message and mistake in message, message
    assert message.endswith(f"hint: {E._runner.HINTS}")


def softmax_rows(S):
    A = np.exp(S - S.max(-1, keepdims=True))
    return A / A.sum(-1, keepdims=True)


def naive_pattern(X, W_q, W_k, causal):                 # no max subtraction: overflows on large scores
    n = X.shape[0]
    S = (X @ W_q.T) @ (X @ W_k.T).T / np.sqrt(W_q.shape[0])
    A = np.exp(np.where(np.tril(np.ones((n, n), bool)) | (not causal), S, -np.inf))
    return A / A.sum(1, keepdims=True)


def gqa_by_modulo(X, W_q, W_k, W_v, W_o, causal):       # head h reads group h % G instead of h // (H / G)
    H, G, n = W_q.shape[0], W_k.shape[0], X.shape[0]
    g = np.arange(H) % G
    S = np.einsum("nd,hde->hne", X, W_q) @ np.einsum("nd,hde->hen", X, W_k[g]) / np.sqrt(W_q.shape[2])
    A = softmax_rows(np.where(np.tril(np.ones((n, n), bool)) | (not causal), S, -np.inf))
    T_h = (W_v[g] @ W_o).transpose(0, 2, 1)
    total = A.sum(0)
    return total / H, H * np.einsum("hij,hab->ijab", A / total, T_h)


def unnormalised_laplacian(w, O):                      # D - S instead of I - D^{-1} S
    n, d = w.shape[0], O.shape[-1]
    S = (w[:, :, None, None] * O).transpose(0, 2, 1, 3).reshape(n * d, n * d)
    return np.diag(np.repeat(w.sum(1), d)) - S


def least_eigenvalue_of_L(P, T):                      # right when L is self-adjoint, wrong without (R) or (M)
    n, d = T.shape[0], T.shape[-1]
    W = (P[:, :, None, None] * T).transpose(0, 2, 1, 3).reshape(n * d, n * d)
    return float(np.linalg.eigvals(np.eye(n * d) - W).real.min())


def bonferroni(p):
    return list(np.minimum(1, len(p) * np.asarray(p)))


# wrong answers written here, independently of the key: (checker, function, the mistake it must be named as)
WRONG = {
    "transport index swapped": (E.check_apply_walk, lambda P, T, f: np.einsum("ij,jiab,jb->ia", P, T, f),
                                "the transport of edge (j, i)"),
    "transport transposed": (E.check_apply_walk, lambda P, T, f: np.einsum("ij,ijba,jb->ia", P, T, f),
                             "each transport transposed"),
    "head transport not transposed": (E.check_head_transport, lambda W_V, W_O: W_V @ W_O, "not transposed"),
    "edge transport without the factor H": (E.check_edge_transport,
                                            lambda A, T, i, j: np.einsum("h,hab->ab", A[:, i, j] / A[:, i, j].sum(), T),
                                            "the factor H left out"),
    "GQA group by modulo": (E.check_mha_walk, gqa_by_modulo, "head h reads group h % G"),
    "Laplacian without D^-1": (E.check_connection_laplacian, unnormalised_laplacian, "D - S"),
    "right eigenvector": (E.check_stationary, lambda P: np.ones(len(P)) / len(P), "the right eigenvector"),
    "softmax without the max": (E.check_attention_pattern, naive_pattern, None),    # nan: no value to match
    "raw distance, not normalised": (E.check_normalised_walk_distance,
                                     lambda P, Q, causal: 0.5 * np.abs(P - Q).sum(1).mean(), "the raw distance"),
    "sink rows included": (E.check_sink_mass, lambda P, sinks: P[:, sinks].sum(1).mean(), "the sink rows"),
    "population std": (E.check_data_isometry_defect, lambda U, V, X: (lambda g: g.std() / g.mean())(
        np.linalg.norm(X @ V.T @ U.T, axis=1) / np.linalg.norm(X @ np.linalg.qr(V.T)[0], axis=1)), "population std"),
    "Pearson instead of Spearman": (E.check_spearman_rho, lambda x, y: np.corrcoef(x, y)[0, 1], "Pearson"),
    "Bonferroni instead of Holm": (E.check_holm, bonferroni, "Bonferroni"),
    "a tie counts as a win": (E.check_p_below_nulls, lambda t, n, idx: (1 + np.sum(
        t[idx].mean(1) - np.stack([x[idx].mean(1) for x in n]).min(0) > 0)) / (len(idx) + 1), "a tie counted"),
    "sqrt(d) instead of sqrt(d_h)": (E.check_copy_score, lambda U, V: np.trace(U @ V) / (np.sqrt(U.shape[0])
                                                                                        * np.linalg.norm(U @ V)),
                                     "sqrt(d) in place of sqrt(d_h)"),
    "overlap without orthonormal bases": (E.check_read_write_overlap,
                                          lambda U, V: np.sum((U.T @ V.T) ** 2) / U.shape[1], "without orthonormal"),
    "slope against params, not log10": (E.check_slope_interval, lambda p, v, idx: (np.polyfit(p, v.mean(1), 1)[0], 0, 0),
                                        None),
    "only angle 0 is flat": (E.check_kernel_dimension, lambda n, angle, tol: 2 if angle == 0 else 0, "only angle 0"),
    "least eigenvalue of L, not of the energy form": (E.check_min_dirichlet_energy, least_eigenvalue_of_L,
                                                      "the least eigenvalue of L"),
}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")       # the wrong answers overflow or divide by 0
@pytest.mark.parametrize("mistake", list(WRONG))
def test_checkers_catch_plausible_mistakes(mistake):
    checker, fn, named = WRONG[mistake]
    with pytest.raises(ExerciseFailed) as failure:
        checker(fn)
    message = str(failure.value)
    assert re.search(rf"{checker.__name__} failed on case \d+ of \d+ \(.+\)", message), message
    assert "\nhint: " in message
    if named:
        assert re.search(rf"^diagnosis: .*{re.escape(named)}", message, re.M), message
    if "expected[" in message:                         # array answers: a slice of each, side by side
        assert "got[" in message and "max abs error" in message


def test_checker_refuses_the_packages_own_answer_and_restores_it():
    from connlap_lite import ConnectionWalk, EdgeTransport, stationary_distribution

    before = sys.gettrace()
    with pytest.raises(ExerciseFailed, match=r"called connlap_lite's ConnectionWalk\.apply, which computes the "
                                             r"answer itself; write it with numpy \(on case 1 of 5"):
        E.check_apply_walk(lambda P, T, f: ConnectionWalk(P, EdgeTransport(T)).apply(f))
    with pytest.raises(ExerciseFailed, match="called connlap_lite's stationary_distribution"):
        E.check_stationary(lambda P: stationary_distribution(P))     # imported by name before the check
    assert sys.gettrace() is before
    P = np.full((2, 2), 0.5)
    assert np.allclose(stationary_distribution(P), 0.5)              # usable again after the check
    assert np.allclose(ConnectionWalk(P, EdgeTransport(np.ones((2, 2, 1, 1)))).apply(np.ones((2, 1))), 1)


@pytest.mark.parametrize("path, label, code", GRADED, ids=IDS)
def test_checker_messages_and_docstrings_do_not_spell_the_solution(path, label, code):
    name = re.findall(r"\b(check_\w+)\(", code)[-1]
    checker = E.CHECKERS[name]
    with pytest.raises(ExerciseFailed) as failure:
        checker(lambda *args: np.zeros(7))
    shipped = str(failure.value) + (checker.__doc__ or "")
    for module in ("_runner", "answer_key", "theory", "real_models", "empirical", "interactive", "__init__"):
        shipped += (ROOT / "connlap_lite" / "pages" / "exercises" / f"{module}.py").read_text(encoding="utf-8")
    for line in solution_lines(split_check(code)[0]):
        assert line not in shipped, f"{label}: the shipped checker code or its message holds {line!r}"


def test_answer_key_refuses_cases_it_was_not_made_for(tmp_path):
    path = answer_key.record({"check_holonomy": E.check_holonomy}, tmp_path / "answers.npz")
    cases = E.check_holonomy.cases()
    expected, mistakes = answer_key.from_file("check_holonomy", cases, path)
    direct, _ = answer_key.computed("check_holonomy", cases)
    assert all(np.allclose(a, b) for a, b in zip(expected, direct)) and set(mistakes) == set(
        _reference.MISTAKES["check_holonomy"])
    moved = [E.Case(c.label, (c.args[0] + 1, c.args[1])) for c in cases]
    with pytest.raises(RuntimeError, match=r"made for other cases of check_holonomy \(case 1 differs"):
        answer_key.from_file("check_holonomy", moved, path)
    with pytest.raises(RuntimeError, match="has no entry for check_holm"):
        answer_key.from_file("check_holm", E.check_holm.cases(), path)


def test_failure_messages_for_crashes_none_and_non_callables():
    def crashes(P, T, f):
        return P[10]

    with pytest.raises(ExerciseFailed, match=r"raised IndexError: .*\n  on case 1 of 5 \(n=1, d=1, one token\)"):
        E.check_apply_walk(crashes)
    with pytest.raises(ExerciseFailed, match="returned None: did it forget to `return`"):
        E.check_holonomy(lambda T, cycle: None)
    with pytest.raises(ExerciseFailed, match=r"has shape \(3,\), expected shape \(2, 2\)"):
        E.check_holonomy(lambda T, cycle: np.zeros(3))
    with pytest.raises(ExerciseFailed, match=r"expected a tuple of 3 values \(slope, lo, hi\), got float"):
        E.check_slope_interval(lambda *numbers: 0.5)
    with pytest.raises(TypeError, match=r"call it as check_holonomy\(my_function\)"):
        E.check_holonomy(3)


def test_checker_passes_on_numpy_and_torch_answers(capsys):
    import torch

    assert E.check_head_transport(lambda W_V, W_O: torch.as_tensor(W_V @ W_O).T) is None       # no cell output
    assert capsys.readouterr().out == "check_head_transport: 5/5 cases passed\n"


def test_slope_reference_is_the_scorecards_bootstrap():
    """The indices handed to the reader replay report.scale_slope's own draws."""
    from connlap_lite.verdicts.history import scale_slope
    from connlap_lite.pages.exercises.empirical import _boot_indices

    rng = np.random.default_rng(0)
    params, values = 10 ** np.array([7.5, 8.1, 8.9]), rng.uniform(size=(3, 6))
    idx = _boot_indices(4, 50, 3, 6)
    reports = [{"parameters": p, "conditions": {"trained": {"m": [list(v)]}}} for p, v in zip(params, values)]
    fit = scale_slope(reports, "m", n_boot=50, seed=4)
    assert np.allclose(_reference.slope_interval(params, values, idx, 4), (fit["slope"], fit["lo"], fit["hi"]),
                       atol=1e-12)


def test_scorecard_exercises_ask_for_the_rules_in_force():
    """Holm's adjustment and the paired p-value against every null are the ones report's rules use."""
    from connlap_lite.measure import stats
    from connlap_lite.measure.stats import unit_draws

    family = [0.04, 0.01, 0.03, 0.2]
    assert _reference.REFERENCES["check_holm"](family) == stats.holm(family)
    rng = np.random.default_rng(3)
    trained, nulls = rng.uniform(size=9), rng.uniform(size=(2, 9))
    idx = unit_draws(9, 100, 0)
    t_b, n_b = trained[idx].mean(1), np.stack([n[idx].mean(1) for n in nulls])
    assert _reference.p_below_nulls(trained, nulls, idx) == stats.p_win(t_b - n_b.min(0))
    text = "\n".join(src(c) for c in load(ROOT / "book" / "empirical" / "scorecard.ipynb")["cells"])
    graded = text[text.index(":label: scorecard_graded1"):]
    assert "rule 1" not in graded and "first rule" not in graded


# --------------------------------------------------------------------------- the student edition
def test_stub_source_keeps_signature_imports_and_call_and_drops_docstrings():
    code = ('import numpy as np\n\n\n@staticmethod\ndef f(a,\n      b=2):\n    """Doc\n    string."""\n'
            '    # a comment\n    def inner():\n        return 1\n    return a + b\n\n\ndef g(x): return x\n\n\n'
            'def h():\n    """Only a docstring."""\n\n\nprint(f(1))\n')
    stub = stub_source(code)
    assert stub == ('import numpy as np\n\n\n@staticmethod\ndef f(a,\n      b=2):\n'
                    '    raise NotImplementedError("your code here")\n\n\n'
                    'def g(x): raise NotImplementedError("your code here")\n\n\n'
                    'def h():\n    raise NotImplementedError("your code here")\n\n\n'
                    'print(f(1))\n')
    namespace = {}
    exec(stub.replace("@staticmethod\n", "").replace("print(f(1))\n", ""), namespace)
    for name, args in (("f", (1,)), ("g", (1,)), ("h", ())):
        with pytest.raises(NotImplementedError):
            namespace[name](*args)
    with pytest.raises(ValueError, match="must end with its checker call"):
        split_check("def f(x):\n    return x\n")


def digest(paths):
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


@pytest.fixture(scope="module")
def student(tmp_path_factory):
    """The student edition of this checkout, and nbgrader's course folder, written once for these tests."""
    out = tmp_path_factory.mktemp("edition")
    before = digest(NOTEBOOKS)
    written = student_edition(ROOT, out / "student")
    course = SE.nbgrader_course(ROOT, out / "course")
    assert digest(NOTEBOOKS) == before, "the student edition modified a source notebook"
    return out / "student", written, course


def student_copy(student, path):
    return load(student / path.relative_to(ROOT))


def test_student_edition_empties_solutions_and_leaves_the_book_alone(student):
    tree, written, _ = student
    assert sorted(p.relative_to(tree) for p in written) == sorted(p.relative_to(ROOT) for p in NOTEBOOKS)
    for path in written:
        nb = load(path)
        text = "\n".join(src(c) for c in nb["cells"])
        assert "{solution-start}" not in text and "{solution-end}" not in text, path
        exercises_part = text[text.rindex("## Exercises"):] if "## Exercises" in text else ""
        stubs = [c for c in nb["cells"] if "solution" in c.get("metadata", {}).get("tags", [])]
        originals = graded_cells(ROOT / path.relative_to(tree))
        assert len(stubs) == len(originals)
        for cell, (label, code) in zip(stubs, originals):
            answer, _ = split_check(code)
            assert src(cell) == stub_source(answer) and "hide-input" not in cell["metadata"]["tags"], label
            assert '"""' not in src(cell), f"{label}: the stub keeps a docstring"
            for line in solution_lines(answer):
                assert line not in exercises_part, f"{path.name}: its exercises hold the solution's line {line!r}"
        for cell in nb["cells"]:
            assert cell["cell_type"] != "code" or (not cell["outputs"] and cell["execution_count"] is None)
    walks = "\n".join(src(c) for c in load(tree / "book" / "theory" / "walks.ipynb")["cells"])
    assert ":label: walks_ex1" in walks and "which has the same characteristic polynomial" not in walks
    assert "Student edition: the worked solution is left out." in walks
    assert all(t in walks for t in TIERS), "the hints stay in the student edition"


def test_student_package_ships_the_answers_not_the_key(student):
    tree, _, _ = student
    package = tree / "connlap_lite" / "pages" / "exercises"
    assert not (package / "_reference.py").exists() and (package / "answers.npz").is_file()
    meta = tomllib.loads((tree / "pyproject.toml").read_text(encoding="utf-8"))
    assert meta["tool"]["setuptools"]["package-data"]["*"] == ["py.typed", "answers.npz"]
    good = "def f(P, T, f):\n    return np.einsum('ij,ijab,jb->ia', P, T, f)\n"
    script = "\n".join([
        "import numpy as np, importlib.util",
        "from connlap_lite.pages.exercises import check_apply_walk, check_holm, ExerciseFailed",
        "assert importlib.util.find_spec('connlap_lite.pages.exercises._reference') is None",
        good, "check_apply_walk(f)",
        "try:\n    check_apply_walk(lambda P, T, f: np.einsum('ij,ijba,jb->ia', P, T, f))\n"
        "except ExerciseFailed as e:\n    print('FAILED', str(e).splitlines()[-2])",
        "from connlap_lite import ConnectionWalk, EdgeTransport",
        "try:\n    check_apply_walk(lambda P, T, f: ConnectionWalk(P, EdgeTransport(T)).apply(f))\n"
        "except ExerciseFailed as e:\n    print('REFUSED', str(e).split(',')[0])",
        "try:\n    check_apply_walk(f, graded=True)\nexcept RuntimeError as e:\n    print('GRADED', str(e)[:60])",
    ])
    env = {**os.environ, "PYTHONPATH": str(tree)}
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=tree, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == [
        "check_apply_walk: 5/5 cases passed",
        "FAILED diagnosis: each transport transposed (the vector multiplied from the left)",
        "REFUSED check_apply_walk: your function called connlap_lite's ConnectionWalk.apply",
        "GRADED check_apply_walk(..., graded=True) grades on cases drawn now"], run.stdout


def test_student_branch_installs_the_answers_without_the_key(student, tmp_path):
    """What Colab's set-up cell installs from the student branch: a wheel of the tree, with answers.npz."""
    import zipfile

    tree, _, _ = student
    run = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                          str(tmp_path), str(tree)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    names = zipfile.ZipFile(next(tmp_path.glob("connlap_lite-*.whl"))).namelist()
    assert "connlap_lite/pages/exercises/answers.npz" in names and "connlap_lite/pages/exercises/theory.py" in names
    assert not any(n.endswith("_reference.py") for n in names)


def test_student_edition_opens_and_installs_its_own_branch(student):
    tree, written, _ = student
    owner_repo = SE.colab_cells.REPO_URL.removeprefix("https://github.com/")
    for path in written:
        nb = load(path)
        first = src(next(c for c in nb["cells"] if c["cell_type"] == "markdown"
                         and "remove-cell" not in c["metadata"].get("tags", [])))   # the title cell
        urls = re.findall(r"\[!\[Open in Colab\]\([^)]+\)\]\(([^)]+)\)", first)
        rel = path.relative_to(tree).as_posix()
        assert urls == [f"https://colab.research.google.com/github/{owner_repo}/blob/{SE.STUDENT_BRANCH}/{rel}"], path
        assert (tree / rel).is_file()
        text = "\n".join(src(c) for c in nb["cells"])
        assert "/blob/main/" not in text, f"{path.name}: a link still opens the book's own edition"
        setup = src(next(c for c in nb["cells"] if c["cell_type"] == "code"))
        assert f'"git+{SE.colab_cells.REPO_URL}@{SE.STUDENT_BRANCH}"' in setup, path
    config = yaml.safe_load((tree / "_config.yml").read_text(encoding="utf-8"))
    assert config["repository"]["branch"] == SE.STUDENT_BRANCH, "the launch buttons of the student site"


def submission(student_nb: dict, book_path: Path, wrong: set = frozenset()) -> dict:
    """``student_nb`` filled in with the book's solutions (a transposed einsum for the labels in ``wrong``)."""
    answers = {label: split_check(code)[0] for label, code in graded_cells(book_path)}
    nb = json.loads(json.dumps(student_nb))
    for cell in nb["cells"]:
        meta = cell["metadata"].get("nbgrader", {})
        if meta.get("solution"):
            answer = answers[meta["grade_id"]]
            cell["source"] = answer.replace('"ij,ijab,jb->ia"', '"ij,ijba,jb->ia"') if meta["grade_id"] in wrong \
                else answer
    return nb


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_nbgrader_metadata_pairs_each_answer_with_its_points(student, path):
    tree, _, _ = student
    nb = student_copy(tree, path)
    graded = [(c, nb["cells"][k + 1]) for k, c in enumerate(nb["cells"]) if c["metadata"].get("nbgrader", {}).get("solution")]
    labels = [label for label, _ in graded_cells(path)]
    assert [a["metadata"]["nbgrader"]["grade_id"] for a, _ in graded] == labels
    stated = {label: int(h["points"]) for p, label, h, _ in EXERCISES if p == path and h["points"]}
    for answer, test in graded:
        a, t = answer["metadata"]["nbgrader"], test["metadata"]["nbgrader"]
        assert (a["solution"], a["grade"], a["locked"], a["schema_version"]) == (True, False, False, 3)
        assert (t["solution"], t["grade"], t["locked"]) == (False, True, True)
        assert t["grade_id"] == f"{a['grade_id']}-check" and t["points"] == stated[a["grade_id"]]
        assert re.fullmatch(r"check_\w+\(\w+\)", src(test))
        assert "graded" not in src(test), "the student edition's check cell holds no hidden test"
    ids = [c["metadata"]["nbgrader"]["grade_id"] for c in nb["cells"] if "nbgrader" in c["metadata"]]
    assert len(ids) == len(set(ids))


def test_grading_scores_a_correct_a_wrong_and_an_empty_submission(student):
    tree, _, _ = student
    book = ROOT / "book" / "theory" / "walks.ipynb"
    nb = student_copy(tree, book)
    full = SE.grade_notebook(submission(nb, book))
    assert full == {"walks_graded1-check": (2.0, 2.0), "walks_graded2-check": (2.0, 2.0)}
    assert SE.grade_notebook(submission(nb, book, wrong={"walks_graded1"})) == {
        "walks_graded1-check": (0.0, 2.0), "walks_graded2-check": (2.0, 2.0)}
    assert SE.grade_notebook(nb) == {"walks_graded1-check": (0.0, 2.0), "walks_graded2-check": (0.0, 2.0)}


def test_every_chapter_grades_full_marks_with_the_books_solutions(student):
    tree, _, _ = student
    for path in NOTEBOOKS:
        scores = SE.grade_notebook(submission(student_copy(tree, path), path))
        assert all(s == p > 0 for s, p in scores.values()), (path.name, scores)
        assert len(scores) == len(graded_cells(path))


def test_grade_command_prints_the_scores(student, tmp_path, capsys):
    tree, _, _ = student
    book = ROOT / "book" / "theory" / "walks.ipynb"
    path = tmp_path / "bob.ipynb"
    path.write_text(json.dumps(submission(student_copy(tree, book), book, wrong={"walks_graded1"})))
    assert student_main(["--grade", str(path)]) == 0
    assert capsys.readouterr().out == f"{path}: 2/4 points walks_graded1-check=0 walks_graded2-check=2\n"


def test_nbgrader_source_releases_the_student_edition(student):
    """nbgrader's generate_assignment replaces each marked region by the configured stub: its release of the
    course folder's source is the student edition (checked here by the same replacement)."""
    tree, _, course = student
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(course[0].parents[2])).load_config()
    assert config.ClearSolutions.code_stub == {"python": SE.STUB} and config.CourseDirectory.root == "."
    for source in course:
        nb = load(source)
        released = [re.sub(r"^( *)### BEGIN SOLUTION\n.*?^ *### END SOLUTION\n", lambda m: f"{m[1]}{SE.STUB}\n",
                           src(c), flags=re.S | re.M)
                    for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("solution")]
        book = next(p for p in NOTEBOOKS if p.name == source.name)
        stubs = [src(c) for c in student_copy(tree, book)["cells"] if c["metadata"].get("nbgrader", {}).get("solution")]
        assert released == stubs, source.name
        # each test cell: the student's practice check, then the graded check as nbgrader's hidden test
        tests = [src(c) for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade")]
        checks = [src(c) for c in student_copy(tree, book)["cells"] if c["metadata"].get("nbgrader", {}).get("grade")]
        assert [re.sub(r"\n### BEGIN HIDDEN TESTS\n.*?\n### END HIDDEN TESTS\Z", "", t, flags=re.S)
                for t in tests] == checks, source.name
        assert all(t.endswith(f"\n### BEGIN HIDDEN TESTS\n{SE.graded_call(c)}\n### END HIDDEN TESTS")
                   for t, c in zip(tests, checks)), source.name


def test_grading_runs_the_graded_check_which_a_lookup_fails(student, tmp_path):
    """A submission that answers from the student edition's answers.npz passes the student's own check cells
    and scores 0 when graded (the hidden test's cases are drawn at grading time)."""
    tree, _, _ = student
    book = ROOT / "book" / "theory" / "walks.ipynb"
    nb = submission(student_copy(tree, book), book)
    for cell in nb["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("solution"):
            name = re.search(r"^def (\w+)", src(cell), re.M)[1]
            cell["source"] = src(cell) + (f"\nimport numpy as np\nfrom connlap_lite.pages.exercises import answer_key\n"
                              f"KEY = dict(np.load({str(tree / SE.KEY)!r}))\n"
                              f"def {name}(*args):\n"
                              f"    hit = [k for k, v in KEY.items() if k.endswith('/inputs') and str(v) == answer_key.fingerprint(args)]\n"
                              f"    return answer_key.stored(KEY, hit[0].replace('/inputs', '/expected')) if hit else None\n")
    namespace = {}
    for cell in nb["cells"]:                                 # the student's own run: every check cell passes
        if cell["metadata"].get("nbgrader"):
            exec(src(cell), namespace)
    assert SE.grade_notebook(nb) == {"walks_graded1-check": (0.0, 2.0), "walks_graded2-check": (0.0, 2.0)}


def test_student_notebook_drops_solution_code_of_ungraded_exercises():
    md = lambda s: {"cell_type": "markdown", "metadata": {}, "source": [s]}  # noqa: E731
    code = lambda s, tags=(): {"cell_type": "code", "metadata": {"tags": list(tags)}, "source": [s],  # noqa: E731
                               "outputs": [{"output_type": "stream", "name": "stdout", "text": ["x"]}],
                               "execution_count": 3}
    nb = {"cells": [md("Intro"), md("```{exercise}\n:label: a\nTask\n```\n\n```{solution-start} a\n:class: dropdown\n```\n"
                                    "Secret prose."), code("secret = 1"), md("```{solution-end}\n```\nAfter."),
                    md("```{exercise}\n:label: x_graded1\n\n*Graded, 3 points · level: basic · about 5 minutes*\n\n"
                       "Write f.\n```\n\n```{solution-start} x_graded1\n:class: dropdown\n```"),
                    code('def f(x):\n    """Twice x."""\n    return 2 * x\n\n\ncheck_f(f)\n', ["solution", "hide-input"]),
                    md("```{solution-end}\n```")],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    out = student_notebook(nb)
    texts = [src(c) for c in out["cells"]]
    assert texts[0] == "Intro" and "Secret" not in "".join(texts) and "secret = 1" not in texts
    assert texts[1].startswith("```{exercise}") and texts[1].endswith("*Student edition: the worked solution is left out.*")
    assert texts[2] == "After."
    assert texts[4] == 'def f(x):\n    raise NotImplementedError("your code here")\n' and texts[5] == "check_f(f)"
    assert out["cells"][4]["metadata"]["tags"] == ["solution"] and out["cells"][5]["metadata"]["nbgrader"]["points"] == 3
    assert out["cells"][4]["outputs"] == [] and len(texts) == 6
    assert nb["cells"][2]["source"] == ["secret = 1"], "the input notebook must not change"
    nb["cells"][4]["source"] = ["```{exercise}\n:label: x_graded1\n\nWrite f.\n```\n\n```{solution-start} x_graded1\n```"]
    with pytest.raises(ValueError, match="graded exercise x_graded1 states no points"):
        student_notebook(nb)


def test_student_edition_refuses_to_write_into_the_book(tmp_path):
    with pytest.raises(ValueError, match="must not be written into the book"):
        student_edition(ROOT, ROOT / "book" / "student")
    assert not (ROOT / "book" / "student").exists()
    with pytest.raises(SystemExit):
        student_main([str(ROOT), str(ROOT / "book")])
    with pytest.raises(SystemExit):
        student_main([str(ROOT), str(tmp_path / "s"), "--course", str(tmp_path / "s" / "course")])
    with pytest.raises(FileNotFoundError, match="root must be the project's folder"):
        student_edition(tmp_path / "missing", tmp_path / "out")


def test_teaching_page_lists_every_exercise_and_the_measured_times():
    """book/teaching.md's two tables are what tools/teaching_tables.py computes from the notebooks and from
    benchmarks/results/book_times.json (run the tool after a change)."""
    sys.path.insert(0, str(ROOT / "tools"))
    import teaching_tables as TT

    page = TT.PAGE.read_text(encoding="utf-8")
    assert TT.render(page) == page, "book/teaching.md's tables are stale: run python tools/teaching_tables.py"
    listed = re.findall(r"\| \{ref\}`(\w+)` \| (\d+ points?|no) \| (\w+) \| (\d+) \|", page)
    assert sorted(label for label, *_ in listed) == sorted(label for _, label, _, _ in EXERCISES)
    with pytest.raises(ValueError, match="one marked block per table"):
        TT.render(page.replace("<!-- teaching_tables: times -->", ""))
    assert TT.duration(59.6) == "1 min 0 s" and TT.duration(0.4) == "0 s"


def test_a_colab_chapter_run_again_says_its_commit(monkeypatch):
    """make colab-again: the Colab column marks a chapter run again after a fix with its commit, and the note
    says what that means; the other chapters' times are the record's."""
    sys.path.insert(0, str(ROOT / "tools"))
    import teaching_tables as TT

    rows = [{"chapter": "book/appendix/ladder.ipynb", "passed": True, "seconds": 20.0, "cache_bytes": 0,
             "installs_bytes": 10, "commit": "abcdef1234"},
            {"chapter": "book/theory/walks.ipynb", "passed": True, "seconds": 5.0, "cache_bytes": 0,
             "installs_bytes": 10, "commit": "0123456789"}]
    colab = {"commit": "0123456789", "date_utc": "2026-12-05T09:00:00Z", "versions": {}, "jobs": 2,
             "chapters": rows, "reruns": [{"chapter": rows[0]["chapter"], "commit": "abcdef1234"}]}
    real = TT._load
    monkeypatch.setattr(TT, "_load", lambda path: colab if path.name == TT.COLAB.name else real(path))
    table = TT.times_table()
    assert "| 20 s (again at abcdef1) |" in table and "| 5 s |" in table
    assert "run again after a fix" in table and "2 chapters at a time" in table
