"""Graded exercises (connlap_lite.exercises): every solution in the book passes its checker, every
student stub fails it with a clear message, checkers catch plausible mistakes, and the student
edition empties the solutions without touching the book."""
import hashlib
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

import conftest

from connlap_lite import exercises as E
from connlap_lite.exercises import ExerciseFailed

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from student_edition import main as student_main  # noqa: E402  (a build tool, tools/student_edition.py)
from student_edition import stub_source, student_edition, student_notebook  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
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


def test_every_checker_is_used_by_the_book():
    used = {m for _, _, code in GRADED for m in re.findall(r"\b(check_\w+)\(", code)}
    assert set(E.CHECKERS) <= used, f"checkers no chapter uses: {sorted(set(E.CHECKERS) - used)}"


@pytest.mark.parametrize("path, label, code", GRADED, ids=IDS)
def test_solution_passes_its_checker(path, label, code, capsys):
    exec(compile(code, f"{path.name}:{label}", "exec"), {"__name__": "__graded__"})
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert re.fullmatch(r"check_\w+: (\d+)/\1 cases passed", line), line


@pytest.mark.parametrize("path, label, code", GRADED, ids=IDS)
def test_student_stub_fails_with_a_clear_message(path, label, code):
    stub = stub_source(code)
    assert 'raise NotImplementedError("your code here")' in stub and stub.strip().splitlines()[-1].startswith("check_")
    with pytest.raises(ExerciseFailed, match=r"raised NotImplementedError on case 1 of \d+ \(.+\): fill in the body"):
        exec(compile(stub, f"{path.name}:{label} (stub)", "exec"), {"__name__": "__graded__"})


# ----------------------------------------------------------------- plausible wrong answers
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


def pearson(x, y):
    return np.corrcoef(x, y)[0, 1]


def least_eigenvalue_of_L(P, T):                      # right when L is self-adjoint, wrong without (R) or (M)
    n, d = T.shape[0], T.shape[-1]
    W = (P[:, :, None, None] * T).transpose(0, 2, 1, 3).reshape(n * d, n * d)
    return float(np.linalg.eigvals(np.eye(n * d) - W).real.min())


WRONG = {
    "transport index swapped": (E.check_apply_walk, lambda P, T, f: np.einsum("ij,jiab,jb->ia", P, T, f)),
    "transport transposed": (E.check_apply_walk, lambda P, T, f: np.einsum("ij,ijba,jb->ia", P, T, f)),
    "head transport not transposed": (E.check_head_transport, lambda W_V, W_O: W_V @ W_O),
    "edge transport without the factor H": (E.check_edge_transport,
                                            lambda A, T, i, j: np.einsum("h,hab->ab", A[:, i, j] / A[:, i, j].sum(), T)),
    "GQA group by modulo": (E.check_mha_walk, gqa_by_modulo),
    "Laplacian without D^-1": (E.check_connection_laplacian, unnormalised_laplacian),
    "right eigenvector": (E.check_stationary, lambda P: np.ones(len(P)) / len(P)),
    "softmax without the max": (E.check_attention_pattern, naive_pattern),
    "raw distance, not normalised": (E.check_normalised_walk_distance,
                                     lambda P, Q, causal: 0.5 * np.abs(P - Q).sum(1).mean()),
    "sink rows included": (E.check_sink_mass, lambda P, sinks: P[:, sinks].sum(1).mean()),
    "population std": (E.check_data_isometry_defect, lambda U, V, X: (lambda g: g.std() / g.mean())(
        np.linalg.norm(X @ V.T @ U.T, axis=1) / np.linalg.norm(X @ np.linalg.qr(V.T)[0], axis=1))),
    "Pearson instead of Spearman": (E.check_spearman_rho, pearson),
    "p <= 0.05 passes": (E.check_e1_verdict, lambda r, p, t, u: ["does not", "partly", "holds"][
        (r < 0 and p <= 0.05) + (t < u)]),
    "sqrt(d) instead of sqrt(d_h)": (E.check_copy_score, lambda U, V: np.trace(U @ V) / (np.sqrt(U.shape[0])
                                                                                        * np.linalg.norm(U @ V))),
    "overlap without orthonormal bases": (E.check_read_write_overlap,
                                          lambda U, V: np.sum((U.T @ V.T) ** 2) / U.shape[1]),
    "slope against params, not log10": (E.check_slope_interval, lambda p, v, idx: (np.polyfit(p, v.mean(1), 1)[0], 0, 0)),
    "only angle 0 is flat": (E.check_kernel_dimension, lambda n, angle, tol: 2 if angle == 0 else 0),
    "least eigenvalue of L, not of the energy form": (E.check_min_dirichlet_energy, least_eigenvalue_of_L),
}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")       # the wrong answers overflow or divide by 0
@pytest.mark.parametrize("mistake", list(WRONG))
def test_checkers_catch_plausible_mistakes(mistake):
    checker, fn = WRONG[mistake]
    with pytest.raises(ExerciseFailed) as failure:
        checker(fn)
    message = str(failure.value)
    assert re.search(rf"{checker.__name__} failed on case \d+ of \d+ \(.+\)", message), message
    assert "\nhint: " in message
    if "expected[" in message:                         # array answers: a slice of each, side by side
        assert "got[" in message and "max abs error" in message


def test_failure_messages_for_crashes_none_and_non_callables():
    def crashes(P, T, f):
        return P[10]

    with pytest.raises(ExerciseFailed, match=r"raised IndexError: .*\n  on case 1 of 5 \(n=1, d=1, one token\)"):
        E.check_apply_walk(crashes)
    with pytest.raises(ExerciseFailed, match="returned None: did it forget to `return`"):
        E.check_holonomy(lambda T, cycle: None)
    with pytest.raises(ExerciseFailed, match=r"has shape \(3,\), expected shape \(2, 2\)"):
        E.check_holonomy(lambda T, cycle: np.zeros(3))
    with pytest.raises(ExerciseFailed, match="expected 'holds', got 'yes'"):
        E.check_e1_verdict(lambda *numbers: "yes")
    with pytest.raises(TypeError, match=r"call it as check_holonomy\(my_function\)"):
        E.check_holonomy(3)


def test_checker_passes_on_numpy_and_torch_answers(capsys):
    import torch

    assert E.check_head_transport(lambda W_V, W_O: torch.as_tensor(W_V @ W_O).T) is True
    assert capsys.readouterr().out == "check_head_transport: 5/5 cases passed\n"


def test_slope_reference_is_the_scorecards_bootstrap():
    """The indices handed to the reader replay report.scale_slope's own draws."""
    from connlap_lite.report import scale_slope

    rng = np.random.default_rng(0)
    params, values = 10 ** np.array([7.5, 8.1, 8.9]), rng.uniform(size=(3, 6))
    from connlap_lite.exercises.empirical import _boot_indices

    idx = _boot_indices(4, 50, 3, 6)
    x = np.log10(params)
    boots = [np.polyfit(x, values[np.arange(3)[:, None], b].mean(1), 1)[0] for b in idx]
    reports = [{"parameters": p, "conditions": {"trained": {"m": [list(v)]}}} for p, v in zip(params, values)]
    fit = scale_slope(reports, "m", n_boot=50, seed=4)
    assert np.allclose([fit["lo"], fit["hi"]], np.percentile(boots, [2.5, 97.5]), atol=1e-12)


# --------------------------------------------------------------------------- the student edition
def test_stub_source_keeps_signature_docstring_imports_and_call():
    code = ('import numpy as np\n\n\n@staticmethod\ndef f(a,\n      b=2):\n    """Doc\n    string."""\n'
            '    # a comment\n    def inner():\n        return 1\n    return a + b\n\n\ndef g(x): return x\n\n\n'
            'def h():\n    """Only a docstring."""\n\n\nprint(f(1))\n')
    stub = stub_source(code)
    assert stub == ('import numpy as np\n\n\n@staticmethod\ndef f(a,\n      b=2):\n    """Doc\n    string."""\n'
                    '    raise NotImplementedError("your code here")\n\n\n'
                    'def g(x): raise NotImplementedError("your code here")\n\n\n'
                    'def h():\n    """Only a docstring."""\n    raise NotImplementedError("your code here")\n\n\n'
                    'print(f(1))\n')
    namespace = {}
    exec(stub.replace("@staticmethod\n", "").replace("print(f(1))\n", ""), namespace)
    for name, args in (("f", (1,)), ("g", (1,)), ("h", ())):
        with pytest.raises(NotImplementedError):
            namespace[name](*args)


def digest(paths):
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


def test_student_edition_empties_solutions_and_leaves_the_book_alone(tmp_path):
    before = digest(NOTEBOOKS)
    written = student_edition(ROOT / "book", tmp_path / "student")
    assert digest(NOTEBOOKS) == before, "the student edition modified a source notebook"
    assert sorted(p.relative_to(tmp_path / "student") for p in written) == \
        sorted(p.relative_to(ROOT / "book") for p in NOTEBOOKS)
    for path in written:
        nb = load(path)
        text = "\n".join(src(c) for c in nb["cells"])
        assert "{solution-start}" not in text and "{solution-end}" not in text, path
        stubs = [c for c in nb["cells"] if "solution" in c.get("metadata", {}).get("tags", [])]
        originals = graded_cells(ROOT / "book" / path.relative_to(tmp_path / "student"))
        assert len(stubs) == len(originals)
        for cell, (label, code) in zip(stubs, originals):
            assert src(cell) == stub_source(code) and "hide-input" not in cell["metadata"]["tags"], label
            assert src(cell) != code
        for cell in nb["cells"]:
            assert cell["cell_type"] != "code" or (not cell["outputs"] and cell["execution_count"] is None)
    # the solution prose of a theory exercise is gone, the exercise itself stays
    walks = "\n".join(src(c) for c in load(tmp_path / "student" / "theory" / "walks.ipynb")["cells"])
    assert ":label: walks_ex1" in walks and "which has the same characteristic polynomial" not in walks
    assert "Student edition: the worked solution is left out." in walks


def test_student_notebook_drops_solution_code_of_ungraded_exercises():
    md = lambda s: {"cell_type": "markdown", "metadata": {}, "source": [s]}
    code = lambda s, tags=(): {"cell_type": "code", "metadata": {"tags": list(tags)}, "source": [s],
                               "outputs": [{"output_type": "stream", "name": "stdout", "text": ["x"]}],
                               "execution_count": 3}
    nb = {"cells": [md("Intro"), md("```{exercise}\n:label: a\nTask\n```\n\n```{solution-start} a\n:class: dropdown\n```\n"
                                    "Secret prose."), code("secret = 1"), md("```{solution-end}\n```\nAfter."),
                    code("def f(x):\n    return x\n\ncheck(f)\n", ["solution", "hide-input"])],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    out = student_notebook(nb)
    texts = [src(c) for c in out["cells"]]
    assert texts[0] == "Intro" and "Secret" not in "".join(texts) and "secret = 1" not in texts
    assert texts[1].startswith("```{exercise}") and texts[1].endswith("*Student edition: the worked solution is left out.*")
    assert texts[2] == "After."
    assert texts[3] == 'def f(x):\n    raise NotImplementedError("your code here")\n\ncheck(f)\n'
    assert out["cells"][3]["outputs"] == [] and out["cells"][3]["metadata"]["tags"] == ["solution"]
    assert nb["cells"][2]["source"] == ["secret = 1"], "the input notebook must not change"


def test_student_edition_refuses_to_write_into_the_book(tmp_path):
    with pytest.raises(ValueError, match="must not be written into the book"):
        student_edition(ROOT / "book", ROOT / "book" / "student")
    assert not (ROOT / "book" / "student").exists()
    with pytest.raises(SystemExit):
        student_main([str(ROOT / "book"), str(ROOT / "book")])
    with pytest.raises(FileNotFoundError, match="src must be the book's folder"):
        student_edition(tmp_path / "missing", tmp_path / "out")
