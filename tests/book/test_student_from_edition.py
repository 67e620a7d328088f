"""The student edition built from the Colab edition (make student --edition): the edition's solutions, closed
<details> with their code folded after them, are left out as the book's are; a graded exercise keeps its stub and
its checker call, graded under the label the edition's heading carries."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import student_edition as SE


def md(text):
    return {"cell_type": "markdown", "metadata": {}, "source": text}


def code(text, tags=(), hidden=False):
    meta = {"tags": list(tags)} if tags else {}
    if hidden:
        meta.update({"cellView": "form", "jupyter": {"source_hidden": True}})
    return {"cell_type": "code", "metadata": meta, "outputs": [], "execution_count": None, "source": text}


EDITION = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
    md("### Exercise 3.1 <a id=\"multi_head_ex1\"></a>\n\n*Level: basic · about 15 minutes*\n\nShow it.\n\n"
       "<details>\n<summary><b>Solution to Exercise 3.1</b></summary>\n\nRow sums are linear.\n\n</details>"),
    code("#@title Solution to Exercise 3.1: the code\nassert 1 + 1 == 2", hidden=True),
    md("<details>\n<summary><b>Solution to Exercise 3.1 (continued)</b></summary>\n\nSo it holds.\n\n</details>\n\n"
       "### Exercise 3.4 <a id=\"multi_head_graded1\"></a>\n\n*Graded, 2 points · level: basic · about 15 minutes*"
       "\n\nWrite `f`.\n\n<details>\n<summary><b>Hint 1: a nudge</b></summary>\n\nThink.\n\n</details>\n\n"
       "<details>\n<summary><b>Solution to Exercise 3.4</b></summary>\n\nThe code cell below works it out.\n\n"
       "</details>"),
    code("#@title Solution to Exercise 3.4: the code\ndef f(x):\n    return 2 * x\n\n\ncheck_f(f)", ["solution"],
         hidden=True),
]}


def test_the_editions_solutions_are_left_out_and_the_graded_one_stubbed():
    out = SE.student_notebook(EDITION)
    text = "\n".join("".join(c["source"]) for c in out["cells"])
    assert "Row sums are linear" not in text and "So it holds" not in text and "assert 1 + 1" not in text
    assert "return 2 * x" not in text and "Hint 1: a nudge" in text, text
    assert text.count(SE.NOTES[False]) == 1 and text.count(SE.NOTES[True]) == 1, text
    stub, check = [c for c in out["cells"] if c["cell_type"] == "code"]
    assert "".join(stub["source"]).startswith("def f(x):") and SE.STUB in "".join(stub["source"])
    assert "cellView" not in stub["metadata"] and "jupyter" not in stub["metadata"], "the answer cell is unfolded"
    assert stub["metadata"]["nbgrader"]["grade_id"] == "multi_head_graded1"
    assert "".join(check["source"]) == "check_f(f)" and check["metadata"]["nbgrader"]["points"] == 2
