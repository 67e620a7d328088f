"""Graded exercises: checkers for a reader's own functions, and the student edition of the book.

Every chapter ends with graded exercises. Each asks for one small function and ends with a
call such as ``check_apply_walk(apply_walk)``. The checker calls the function on a handful of
small float64 cases, each with a fixed seed and including edge cases (one token, causal masks,
grouped-query heads, ties, boundary values), and compares the result with the
answer key (:mod:`.answer_key`). If every case agrees it prints one line, ``check_apply_walk: 5/5 cases
passed``, and returns None (a check cell has no output). Otherwise it raises :class:`ExerciseFailed`, an ``AssertionError``, and the
message says which case failed (with its parameters), what was expected and what came back (the
largest error and a small slice), names the common mistake the wrong result matches where it matches
one, and points to the exercise's hints, which never appear in the message. A function that calls the
package's own implementation of the answer is refused.

The key's references and mistakes live in :mod:`._reference`, the teacher's module; the student edition
(``make student``) ships without it and with the practice cases' results in ``answers.npz``. Grading is
``check_apply_walk(apply_walk, graded=True)``: the same kinds of cases drawn afresh at check time, answered by
the references only, so that no file the student edition ships can pass it (nbgrader's hidden tests run it).

The checkers live in one module per part of the book (``theory``, ``real_models``, ``empirical``,
``interactive``) on one runner (``_runner``); all are importable from here. The *student edition*
(``make student``), which empties the graded solutions, is a build tool: ``tools/student_edition.py``.

Examples
--------
>>> import numpy as np
>>> def unfinished(T, cycle):
...     raise NotImplementedError("your code here")
>>> try:
...     check_holonomy(unfinished)
... except ExerciseFailed as failure:
...     print(failure)
check_holonomy: your function raised NotImplementedError on case 1 of 5 (cycle [2], d=2): fill in the body
>>> try:
...     check_holonomy(lambda T, cycle: np.eye(T.shape[-1]))        # the identity: no walk around the cycle
... except ExerciseFailed as failure:
...     print(str(failure).splitlines()[0])
check_holonomy failed on case 1 of 5 (cycle [2], d=2)

Chapters: the ``## Exercises`` section of every chapter.
"""
from ._runner import Case, ExerciseFailed, checker, grade
from .theory import (check_apply_walk, check_holonomy, check_head_transport, check_sha_output, check_edge_transport,
                     check_mha_walk, check_connection_laplacian, check_dirichlet_energy, check_stationary,
                     check_reversibility_defect)
from .real_models import check_ov_transport, check_attention_pattern, check_sink_rate, check_norm_weighted_walk
from .empirical import (check_normalised_walk_distance, check_sink_mass, check_rank_free_defect,
                        check_data_isometry_defect, check_slope_interval, check_spearman_rho, check_holm,
                        check_p_below_nulls, check_read_write_overlap, check_copy_score)
from .interactive import check_kernel_dimension, check_min_dirichlet_energy

CHECKERS = {name: obj for name, obj in globals().items() if name.startswith("check_") and callable(obj)}
__all__ = ["ExerciseFailed", "Case", "checker", "grade", "CHECKERS", *sorted(CHECKERS)]
