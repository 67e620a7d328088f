"""Draw the README's figure: generator spectra of three connection walks (writes book/_static/hero.png)."""
from pathlib import Path

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import torch

from connlap_lite import AttentionWeights, ConnectionWalk, generator_spectrum, sha_walk

rng = np.random.default_rng(0)
n, d = 60, 2


def rot(a):
    return np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])


# A ring of tokens, each linked to its 3 nearest neighbours on either side.
gap = np.abs(np.subtract.outer(np.arange(n), np.arange(n)))
gap = np.minimum(gap, n - gap)
w = np.where((gap > 0) & (gap <= 3), np.exp(-gap), 0.0)
P = w / w.sum(1, keepdims=True)
angle = rng.uniform(-0.4, 0.4, (n, n))
angle = np.triu(angle, 1) - np.triu(angle, 1).T              # antisymmetric: O_ji = O_ij^T
O = np.stack([[rot(angle[i, j]) for j in range(n)] for i in range(n)])
scale = np.exp(rng.normal(0, 0.7, (n, n)))                   # not symmetric, not 1
causal_w = AttentionWeights(torch.randn(1, d, d, dtype=torch.float64) * 2, torch.randn(1, d, d, dtype=torch.float64) * 2,
                            torch.eye(d, dtype=torch.float64)[None], torch.as_tensor(rot(-2.0))[None])  # T = W_o^T = rot(2)
walks = {
    "reversible, orthogonal (S, R, M)": ConnectionWalk(P, O),
    "causal attention, rotation transport": sha_walk(torch.randn(n, d, dtype=torch.float64), causal_w, causal=True),
    "reversible, non-isometric transports": ConnectionWalk(P, O * scale[:, :, None, None]),
}
fig, axes = plt.subplots(1, 3, figsize=(12, 3.6), sharey=True)
for ax, (name, walk) in zip(axes, walks.items()):
    ev = generator_spectrum(walk)
    ax.axvspan(0, 2, color="0.93", zorder=0)
    ax.scatter(ev.real, ev.imag, s=9, color="C0")
    ax.axhline(0, color="0.6", lw=0.6)
    ax.set(title=name, xlabel="Re λ(L)")
axes[0].set_ylabel("Im λ(L)")
fig.suptitle("Spectra of the generator L = I − W (shaded: [0, 2])")
fig.tight_layout()
out = Path(__file__).resolve().parents[1] / "book" / "_static" / "hero.png"
fig.savefig(out, dpi=130)
print(out)
