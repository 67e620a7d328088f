"""Leading generator eigenvalues: ARPACK on the walk's LinearOperator against a dense eigen-solve.

    python benchmarks/spectra.py            # n*d from 1,024 to 393,216 (about 4 minutes on 2 cores)
    python benchmarks/spectra.py --quick    # tiny sizes (seconds)

A multi-head walk of random attention, width ``d``, ``H`` heads, on ``n`` tokens, has an
``n*d x n*d`` operator.  ``arpack`` asks ``scipy.sparse.linalg.eigs`` for the ``k`` eigenvalues of
``W`` of largest modulus through :meth:`ConnectionWalk.operator` (each product is one factored
apply; the ``(H, n, n)`` gates times ``P`` are formed once) and reports the generator's ``1 - lambda``;
``dense`` is ``numpy.linalg.eigvals`` of the ``n*d x n*d`` generator.  Dense stops where its matrix
would pass ``--dense-cap-gib`` or where its time, predicted from the last size as ``N**3``, would
pass ``--dense-cap-s``; the row records which.

Chapter: *Performance* (``book/appendix/performance.ipynb``).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

FULL = {"n": [4, 8, 16, 32, 64, 128, 256, 512, 1024, 1536], "d": 256, "H": 4, "k": 4, "tol": 1e-8, "ncv": 24,
        "dense_cap_gib": 4.0, "dense_cap_s": 60.0}
QUICK = {"n": [4, 8, 16], "d": 16, "H": 2, "k": 2, "tol": 1e-8, "ncv": 12, "dense_cap_gib": 0.5, "dense_cap_s": 20.0}
GOAL_SECONDS = 60.0


def run(quick: bool, out: str | None = None) -> dict:
    import numpy as np
    import torch
    from scipy.sparse.linalg import LinearOperator, eigs

    from connlap_lite import AttentionWeights, mha_walk

    C.set_threads()
    cfg = QUICK if quick else FULL
    d, H, k = cfg["d"], cfg["H"], cfg["k"]
    w = AttentionWeights.random(d=d, n_heads=H, seed=0)
    rows, last_dense = [], None
    for n in cfg["n"]:
        N = n * d
        X = torch.randn(n, d, dtype=torch.float64, generator=torch.Generator().manual_seed(n))
        start = time.perf_counter()
        walk = mha_walk(X, w)
        build = time.perf_counter() - start
        op = walk.operator()
        count = [0]

        def matvec(v, f=op.matvec):
            count[0] += 1
            return f(v)

        start = time.perf_counter()
        lam = eigs(LinearOperator(op.shape, matvec=matvec, dtype=np.float64), k=k, which="LM", tol=cfg["tol"],
                   ncv=min(cfg["ncv"], N - 1), return_eigenvectors=False)
        arpack = time.perf_counter() - start
        top = np.sort_complex(1 - lam)
        row = {"n": n, "d": d, "H": H, "N": N, "k": k, "build_seconds": build, "arpack_seconds": arpack,
               "matvecs": count[0], "seconds_per_matvec": arpack / count[0],
               "generator_eigenvalues": [[float(z.real), float(z.imag)] for z in top],
               "dense_bytes": N * N * 8}
        predicted = None if last_dense is None else last_dense[1] * (N / last_dense[0]) ** 3
        if N * N * 8 > cfg["dense_cap_gib"] * 2**30:
            row["dense_skipped"] = (f"an {N} x {N} float64 matrix is {N * N * 8 / 2**30:.1f} GiB "
                                    f"> cap {cfg['dense_cap_gib']} GiB")
        elif predicted is not None and predicted > cfg["dense_cap_s"]:
            row["dense_skipped"] = (f"predicted {predicted:.0f} s (N^3 from N={last_dense[0]}) "
                                    f"> cap {cfg['dense_cap_s']:.0f} s")
        else:
            L = np.asarray(walk.generator())
            start = time.perf_counter()
            vals = np.linalg.eigvals(L)
            row["dense_seconds"] = time.perf_counter() - start
            last_dense = (N, row["dense_seconds"])
            lead = vals[np.argsort(np.abs(1 - vals))[::-1][:k]]         # largest |lambda| of W = |1 - mu|
            row["error_vs_dense"] = float(np.abs(np.sort(np.abs(1 - lead)) - np.sort(np.abs(lam))).max())
            row["ratio_dense_over_arpack"] = row["dense_seconds"] / arpack
            del L
        rows.append(row)
        print(f"N={N:7d}: arpack {arpack:.2f} s ({count[0]} products)"
              + (f", dense {row['dense_seconds']:.2f} s" if "dense_seconds" in row else f", dense skipped: "
                 f"{row['dense_skipped']}"), flush=True)
        del walk, op
    dense = [r for r in rows if "dense_seconds" in r]
    report = {"quick": quick, "settings": cfg, "rows": rows,
              "dense_largest_N": dense[-1]["N"] if dense else None,
              "dense_first_skipped_N": next((r["N"] for r in rows if "dense_skipped" in r), None)}
    last = rows[-1]
    where = " (dense cannot run)" if "dense_skipped" in last else ""
    report["goals"] = [C.goal(f"spectra: ARPACK seconds at n*d = {last['N']:,}{where}",
                              last["arpack_seconds"], GOAL_SECONDS, "seconds")]
    if dense:
        report["goals"].append(C.goal(f"spectra: dense / ARPACK time at n*d = {dense[-1]['N']:,}",
                                      dense[-1]["ratio_dense_over_arpack"], 1.0, "x ARPACK", op=">="))
        report["goals"].append(C.goal("spectra: ARPACK agrees with dense (largest error in an eigenvalue's modulus)",
                                      max(max(r["error_vs_dense"] for r in dense), 1e-300), 1e-6, "absolute"))
    return C.finish("spectra", report, out)


def main(argv=None):
    return C.quick_json_main("spectra", run, __doc__, argv)


if __name__ == "__main__":
    main()
